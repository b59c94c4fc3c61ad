/* SPDX-License-Identifier: MIT */
/* The frozen handshake codec of spec/WIRE.md.  Pure functions over byte
 * buffers: no I/O, no verbs, no sockets.
 *
 * Decoders check the length before every read and return the number of bytes
 * consumed (> 0), RAILWIRE_E_NEED_MORE when the buffer is a valid prefix that
 * ends early, or a wire class error (RAILWIRE_E_BAD_RAIL_COUNT, ...).  A
 * field is validated as soon as it is complete, so "09" as an RO reply is
 * bad-rail-count, not need-more.  They never allocate from a count before
 * bounding it.
 *
 * Encoders compute their size first and return RAILWIRE_E_NOSPACE without
 * writing when `cap` is too small, RAILWIRE_E_INVALID for what a reader would
 * reject (an RO layer count of 0 or > 4096, an RO rail count of 0 or > 8, an
 * ack that is not a single byte), else the number of bytes written. */
#ifndef RW_WIRE_WIRE_H
#define RW_WIRE_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <railwire/error.h>
#include <railwire/types.h>

#define RW_STATUS_OK 0
#define RW_STATUS_ERR 1
#define RW_MODE_TCP 0
#define RW_MODE_VERBS 1
#define RW_MAX_RO_RAILS 8
#define RW_MAX_LAYERS 4096
#define RW_MAX_RW_RAILS 255 /* a u8 count; the RW reader does not bound it to 8 */

#define RW_QP_ID_SIZE 24u
#define RW_RW_PARAMS_SIZE 36u
#define RW_RO_PARAMS_SIZE(n_layers) (28u + 12u * (size_t)(n_layers))

/* QP identity: what each side says about one rail. */
struct rw_qp_id {
    uint32_t qpn;
    uint32_t psn;
    uint8_t gid[16];
};

/* One published memory region as the peer addresses it. */
struct rw_mr_desc {
    uint64_t base_addr;
    uint32_t rkey;
};

/* RO server params of one rail.  `layers` has `n_layers` entries; who owns it
 * is said where the struct is produced. */
struct rw_ro_params {
    struct rw_qp_id qp;
    uint32_t n_layers;
    struct rw_mr_desc *layers;
};

/* RW server params of one rail. */
struct rw_rw_params {
    struct rw_qp_id qp;
    struct rw_mr_desc arena;
};

/* A decoded server reply of either dialect.  Owns `ro` (and each entry's
 * `layers`) or `rw`; release with rw_server_reply_free(). */
struct rw_server_reply {
    enum railwire_dialect dialect;
    unsigned n_rails;
    struct rw_ro_params *ro; /* n_rails entries when dialect == RO, else NULL */
    struct rw_rw_params *rw; /* n_rails entries when dialect == RW, else NULL */
};

/* Frees what a reply owns and zeroes it.  Safe on a zeroed reply. */
void rw_server_reply_free(struct rw_server_reply *r);

/* --- little-endian helpers: write/read at p, return the advanced pointer --- */
static inline uint8_t *rw_put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
    return p + 4;
}
static inline uint8_t *rw_put_le64(uint8_t *p, uint64_t v)
{
    rw_put_le32(p, (uint32_t)v);
    return rw_put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline const uint8_t *rw_get_le32(uint32_t *v, const uint8_t *p)
{
    *v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return p + 4;
}
static inline const uint8_t *rw_get_le64(uint64_t *v, const uint8_t *p)
{
    uint32_t lo, hi;
    rw_get_le32(&lo, p);
    rw_get_le32(&hi, p + 4);
    *v = (uint64_t)hi << 32 | lo;
    return p + 8;
}

/* --- incremental framing (used by the decoders and the state machines) ---
 * A frame tracks how many bytes the message needs from the fields seen so
 * far and validates each field once, as soon as it is complete, so feeding a
 * message in pieces of any size costs time linear in its length. */
enum rw_frame_kind {
    RW_FRAME_RO_REPLY,      /* u8 n (1..8, == want) | n x RO server params */
    RW_FRAME_RW_REPLY,      /* u8 n (== want) | n x RW server params */
    RW_FRAME_CLIENT_IDS,    /* u8 n (== want) | n x QP identity */
    RW_FRAME_CLIENT_STREAM, /* u8 request (== want) | u8 n (== want) | n x QP identity */
};

struct rw_frame {
    enum rw_frame_kind kind;
    unsigned want;   /* the rail count the client asked for */
    size_t need;     /* bytes the message needs, as far as its fields say so far */
    size_t pos;      /* internal: start of the record being framed */
    unsigned rails;  /* the framed rail count (valid once the header is checked) */
    unsigned rail;   /* internal: rails framed so far */
    int phase;       /* internal */
    int error;       /* the sticky class error once one was found, else 0 */
};

/* Starts framing one message of `kind` from a client that asked for `want`
 * rails.  No allocation; nothing to release. */
void rw_frame_init(struct rw_frame *f, enum rw_frame_kind kind, unsigned want);
/* Validates the fields of buf[0..len) not seen before.  `buf` holds the
 * message from its first byte and extends what earlier calls saw.  Returns
 * the whole message's size once len >= that size (extra bytes are not
 * looked at), RAILWIRE_E_NEED_MORE while it is incomplete (f->need then says
 * how many bytes to have before calling again), or the class error (sticky). */
ssize_t rw_frame_scan(struct rw_frame *f, const uint8_t *buf, size_t len);
/* The size of the largest legal message of `kind` (any want). */
size_t rw_frame_max_size(enum rw_frame_kind kind);

/* --- records --- */
/* Writes one 24-byte QP identity; returns 24, NOSPACE or INVALID (NULL id). */
ssize_t rw_encode_qp_id(uint8_t *out, size_t cap, const struct rw_qp_id *id);
/* Reads one QP identity into *id; returns 24 or NEED_MORE (len < 24). */
ssize_t rw_decode_qp_id(const uint8_t *buf, size_t len, struct rw_qp_id *id);

/* --- server replies (u8 n | n x params) --- */
/* Size of an RO reply for these params, or 0 when it is unencodable. */
size_t rw_ro_reply_size(const struct rw_ro_params *p, unsigned n_rails);
/* Writes u8 n_rails | n_rails x RO params (p has n_rails entries, read only).
 * Returns the size, INVALID (rails not 1..8, layers not 1..4096, NULL
 * arrays) or NOSPACE; nothing is written on failure. */
ssize_t rw_encode_ro_reply(uint8_t *out, size_t cap, const struct rw_ro_params *p, unsigned n_rails);
/* Writes u8 n_rails | n_rails x RW params (n_rails 0..255; the RW reader
 * does not bound it to 8).  Returns the size, INVALID or NOSPACE. */
ssize_t rw_encode_rw_reply(uint8_t *out, size_t cap, const struct rw_rw_params *p, unsigned n_rails);
/* Decode a whole reply from a client that asked for `want` rails.  On success
 * *out owns its arrays; on any failure *out is left zeroed. */
ssize_t rw_decode_ro_reply(const uint8_t *buf, size_t len, unsigned want, struct rw_server_reply *out);
ssize_t rw_decode_rw_reply(const uint8_t *buf, size_t len, unsigned want, struct rw_server_reply *out);

/* --- client messages --- */
/* The request: one byte n_rails (0..255).  Returns 1, INVALID or NOSPACE. */
ssize_t rw_encode_request(uint8_t *out, size_t cap, unsigned n_rails);
/* The second message: u8 n | n x QP identity.  Encoding returns the size
 * (1 + 24n), INVALID (n > 255, NULL ids) or NOSPACE.  Decoding checks
 * n == want (rail-count-mismatch); `ids` (caller-owned) must have room for
 * `want` entries; returns the size consumed, NEED_MORE or the class. */
ssize_t rw_encode_client_ids(uint8_t *out, size_t cap, const struct rw_qp_id *ids, unsigned n);
ssize_t rw_decode_client_ids(const uint8_t *buf, size_t len, unsigned want, struct rw_qp_id *ids);
/* The client's whole emitted stream (request byte, then the second message),
 * as in the vectors' `client` kind.  The request byte must equal `want`. */
ssize_t rw_decode_client_stream(const uint8_t *buf, size_t len, unsigned want, struct rw_qp_id *ids);

/* --- ack --- */
/* Writes the status byte; returns 1 or NOSPACE. */
ssize_t rw_encode_ack(uint8_t *out, size_t cap, uint8_t status);
/* Returns 1 for STATUS_OK, RAILWIRE_E_REFUSED for any other byte,
 * RAILWIRE_E_NEED_MORE for an empty buffer.  *status gets the byte. */
ssize_t rw_decode_ack(const uint8_t *buf, size_t len, uint8_t *status);

/* What a stream that ended after `got` bytes of a message means:
 * RAILWIRE_E_PEER_REJECTED for 0 bytes of a server reply (is_server_reply),
 * RAILWIRE_E_TRUNCATED otherwise. */
int rw_eof_error(int is_server_reply, size_t got);

#endif
