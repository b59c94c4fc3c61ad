/* SPDX-License-Identifier: MIT */
/* The handshake conversation of spec/WIRE.md as two state machines with no
 * I/O inside: they consume received bytes and produce bytes to send.  A
 * driver (src/rail/) runs them over a socket; tests script the peer byte by
 * byte and pin the exact transcript.
 *
 * Driving loop, either side:
 *   while state is not DONE/FAILED/REJECTED:
 *     if pending(&p) > 0: send p, then sent(n)
 *     else if state wants bytes: recv, then feed(buf, len) (0 bytes at EOF: eof())
 *     else act on NEED_* (give local ids / params / decision)
 */
#ifndef RW_WIRE_HANDSHAKE_H
#define RW_WIRE_HANDSHAKE_H

#include "wire/wire.h"

enum rw_hs_state {
    RW_HS_SEND,          /* bytes are pending: call *_pending / *_sent */
    RW_HS_RECV,          /* waiting for peer bytes: call *_feed (or *_eof) */
    RW_HS_NEED_LOCAL,    /* client: params received, give local QP ids */
    RW_HS_NEED_PARAMS,   /* server: request received, give params or reject */
    RW_HS_NEED_DECISION, /* server: client ids received, accept or refuse */
    RW_HS_DONE,          /* conversation complete (client: ack OK; server: ack sent) */
    RW_HS_REJECTED,      /* server: close the connection now (reject before params) */
    RW_HS_FAILED,        /* error; *_error() says which class */
};

/* ------------------------------------------------------------------ client */
struct rw_hs_client {
    enum rw_hs_state state;
    enum railwire_dialect dialect;
    unsigned n_rails;
    int error;                     /* RAILWIRE_E_* once FAILED */
    int refused_status;            /* the ack byte when refused */
    struct rw_server_reply reply;  /* owned; valid from NEED_LOCAL on */
    uint8_t *rx;                   /* reassembly buffer (owned), bounded */
    size_t rx_len, rx_cap;
    size_t rx_total;               /* bytes received in the current message */
    uint8_t *tx;                   /* pending output (owned) */
    size_t tx_len, tx_off;
    int stage;                     /* internal */
    struct rw_frame frame;         /* internal: framing of the reply being received */
};

/* Starts a client asking for `n_rails` (1..255; RO: 1..8) in `dialect`.  The
 * request byte is pending afterwards.  Returns 0 or RAILWIRE_E_INVALID /
 * RAILWIRE_E_NOMEM.  Release with rw_hs_client_fini() in every case. */
int rw_hs_client_init(struct rw_hs_client *c, enum railwire_dialect dialect, unsigned n_rails);
/* Sets *data to the bytes to send now and returns their count (0: none). */
size_t rw_hs_client_pending(const struct rw_hs_client *c, const uint8_t **data);
/* Marks `n` pending bytes as sent. */
void rw_hs_client_sent(struct rw_hs_client *c, size_t n);
/* Consumes received bytes.  Returns how many were used (it stops at the end
 * of the message it waits for) or a RAILWIRE_E_* class error (state FAILED). */
ssize_t rw_hs_client_feed(struct rw_hs_client *c, const uint8_t *buf, size_t len);
/* The peer closed the stream.  Returns the class error (peer-rejected before
 * the first byte of the reply, truncated later) and enters FAILED; returns 0
 * if the conversation was already DONE, and the first error if already FAILED. */
int rw_hs_client_eof(struct rw_hs_client *c);
/* Gives the client's n_rails QP identities (state NEED_LOCAL); the second
 * message becomes pending.  Returns 0, RAILWIRE_E_STATE or RAILWIRE_E_INVALID. */
int rw_hs_client_set_local(struct rw_hs_client *c, const struct rw_qp_id *ids, unsigned n);
/* The decoded server params (valid from NEED_LOCAL on; owned by c). */
const struct rw_server_reply *rw_hs_client_reply(const struct rw_hs_client *c);
/* How many more bytes the message being received needs at least (0 unless
 * state RECV).  A driver may read exactly this many so it never reads past
 * the message; feeding more is also fine (feed stops at the message's end). */
size_t rw_hs_client_need(const struct rw_hs_client *c);
/* Frees everything c owns. */
void rw_hs_client_fini(struct rw_hs_client *c);

/* ------------------------------------------------------------------ server */
struct rw_hs_server {
    enum rw_hs_state state;
    enum railwire_dialect dialect;
    unsigned n_rails;              /* what the client asked for (valid from NEED_PARAMS) */
    int error;
    struct rw_qp_id ids[RW_MAX_RW_RAILS]; /* client ids (valid from NEED_DECISION) */
    uint8_t *rx;
    size_t rx_len, rx_cap;
    uint8_t *tx;
    size_t tx_len, tx_off;
    int stage;
    struct rw_frame frame;         /* internal: framing of the ids being received */
};

/* Starts a server side in `dialect`, waiting for the request byte.  Returns
 * 0 or RAILWIRE_E_INVALID.  Release with rw_hs_server_fini() in every case. */
int rw_hs_server_init(struct rw_hs_server *s, enum railwire_dialect dialect);
/* Sets *data to the bytes to send now and returns their count (0: none). */
size_t rw_hs_server_pending(const struct rw_hs_server *s, const uint8_t **data);
/* Marks `n` pending bytes as sent. */
void rw_hs_server_sent(struct rw_hs_server *s, size_t n);
/* Consumes received bytes: the request byte (then NEED_PARAMS), later the
 * client's ids (then NEED_DECISION).  Returns how many were used or a
 * RAILWIRE_E_* class error (state FAILED). */
ssize_t rw_hs_server_feed(struct rw_hs_server *s, const uint8_t *buf, size_t len);
/* The client closed: truncated, state FAILED (0 if DONE or REJECTED; the
 * first error if already FAILED). */
int rw_hs_server_eof(struct rw_hs_server *s);
/* NEED_PARAMS: grant s->n_rails rails with these params (n must equal
 * s->n_rails; copied).  Returns 0, RAILWIRE_E_INVALID (e.g. 0 layers,
 * RO count > 8) or RAILWIRE_E_STATE. */
int rw_hs_server_set_ro_params(struct rw_hs_server *s, const struct rw_ro_params *p, unsigned n);
int rw_hs_server_set_rw_params(struct rw_hs_server *s, const struct rw_rw_params *p, unsigned n);
/* NEED_PARAMS: reject the client; state REJECTED (the caller closes). */
int rw_hs_server_reject(struct rw_hs_server *s);
/* NEED_DECISION: queue the ack (accept: STATUS_OK, else STATUS_ERR); DONE
 * once it is sent. */
int rw_hs_server_decide(struct rw_hs_server *s, int accept);
/* Like rw_hs_client_need(): bytes the message being received still needs. */
size_t rw_hs_server_need(const struct rw_hs_server *s);
/* Frees everything s owns. */
void rw_hs_server_fini(struct rw_hs_server *s);

#endif
