/* SPDX-License-Identifier: MIT */
/* The client's messages: the request byte and u8 n | n x QP identity. */
#include "wire/wire.h"

#include "common/log.h"

ssize_t rw_encode_request(uint8_t *out, size_t cap, unsigned n_rails)
{
    if (n_rails > RW_MAX_RW_RAILS) {
        rw_debug("request: refusing to encode %u rails (a u8)", n_rails);
        return RAILWIRE_E_INVALID;
    }
    if (cap < 1)
        return RAILWIRE_E_NOSPACE;
    if (!out)
        return RAILWIRE_E_INVALID;
    out[0] = (uint8_t)n_rails;
    return 1;
}

ssize_t rw_encode_client_ids(uint8_t *out, size_t cap, const struct rw_qp_id *ids, unsigned n)
{
    size_t size = 1 + (size_t)n * RW_QP_ID_SIZE;
    uint8_t *o = out;

    if (n > RW_MAX_RW_RAILS || (!ids && n)) {
        rw_debug("client ids: refusing to encode %u rails (a u8)", n);
        return RAILWIRE_E_INVALID;
    }
    if (cap < size)
        return RAILWIRE_E_NOSPACE;
    if (!out)
        return RAILWIRE_E_INVALID;
    *o++ = (uint8_t)n;
    for (unsigned i = 0; i < n; i++)
        o += rw_encode_qp_id(o, RW_QP_ID_SIZE, &ids[i]);
    return (ssize_t)size;
}

/* Frames a whole message of `kind`, then reads its ids (they start at `off`). */
static ssize_t decode_ids(enum rw_frame_kind kind, size_t off, const uint8_t *buf, size_t len,
                          unsigned want, struct rw_qp_id *ids)
{
    struct rw_frame f;
    ssize_t size;

    if ((!buf && len) || (!ids && want))
        return RAILWIRE_E_INVALID;
    rw_frame_init(&f, kind, want);
    size = rw_frame_scan(&f, buf, len);
    if (size < 0)
        return size;
    /* Framing checked the count equals want: ids has room for every entry. */
    for (unsigned i = 0; i < f.rails; i++)
        rw_decode_qp_id(buf + off + (size_t)i * RW_QP_ID_SIZE, RW_QP_ID_SIZE, &ids[i]);
    return size;
}

ssize_t rw_decode_client_ids(const uint8_t *buf, size_t len, unsigned want, struct rw_qp_id *ids)
{
    return decode_ids(RW_FRAME_CLIENT_IDS, 1, buf, len, want, ids);
}

ssize_t rw_decode_client_stream(const uint8_t *buf, size_t len, unsigned want, struct rw_qp_id *ids)
{
    return decode_ids(RW_FRAME_CLIENT_STREAM, 2, buf, len, want, ids);
}
