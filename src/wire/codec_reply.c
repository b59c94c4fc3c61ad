/* SPDX-License-Identifier: MIT */
/* The server replies of both dialects: u8 n | n x (RO | RW) server params. */
#include "wire/wire.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"

/* ------------------------------------------------------------------ encode */

size_t rw_ro_reply_size(const struct rw_ro_params *p, unsigned n_rails)
{
    size_t size = 1;

    if (!p || n_rails == 0 || n_rails > RW_MAX_RO_RAILS)
        return 0;
    for (unsigned i = 0; i < n_rails; i++) {
        if (p[i].n_layers == 0 || p[i].n_layers > RW_MAX_LAYERS || !p[i].layers)
            return 0;
        size += RW_RO_PARAMS_SIZE(p[i].n_layers);
    }
    return size;
}

ssize_t rw_encode_ro_reply(uint8_t *out, size_t cap, const struct rw_ro_params *p, unsigned n_rails)
{
    size_t size = rw_ro_reply_size(p, n_rails);
    uint8_t *o = out;

    if (size == 0) {
        rw_debug("RO reply: refusing to encode %u rails (rails must be 1..%d, layers 1..%d)",
                 n_rails, RW_MAX_RO_RAILS, RW_MAX_LAYERS);
        return RAILWIRE_E_INVALID;
    }
    if (cap < size)
        return RAILWIRE_E_NOSPACE;
    if (!out)
        return RAILWIRE_E_INVALID;
    *o++ = (uint8_t)n_rails;
    for (unsigned i = 0; i < n_rails; i++) {
        o += rw_encode_qp_id(o, RW_QP_ID_SIZE, &p[i].qp);
        o = rw_put_le32(o, p[i].n_layers);
        for (uint32_t l = 0; l < p[i].n_layers; l++) {
            o = rw_put_le64(o, p[i].layers[l].base_addr);
            o = rw_put_le32(o, p[i].layers[l].rkey);
        }
    }
    return (ssize_t)size;
}

ssize_t rw_encode_rw_reply(uint8_t *out, size_t cap, const struct rw_rw_params *p, unsigned n_rails)
{
    size_t size = 1 + (size_t)n_rails * RW_RW_PARAMS_SIZE;
    uint8_t *o = out;

    if (n_rails > RW_MAX_RW_RAILS || (!p && n_rails)) {
        rw_debug("RW reply: refusing to encode %u rails (at most %d)", n_rails, RW_MAX_RW_RAILS);
        return RAILWIRE_E_INVALID;
    }
    if (cap < size)
        return RAILWIRE_E_NOSPACE;
    if (!out)
        return RAILWIRE_E_INVALID;
    *o++ = (uint8_t)n_rails;
    for (unsigned i = 0; i < n_rails; i++) {
        o += rw_encode_qp_id(o, RW_QP_ID_SIZE, &p[i].qp);
        o = rw_put_le64(o, p[i].arena.base_addr);
        o = rw_put_le32(o, p[i].arena.rkey);
    }
    return (ssize_t)size;
}

/* ------------------------------------------------------------------ decode */

/* Frames buf as a whole message of `kind`; on success returns its size. */
static ssize_t frame_whole(enum rw_frame_kind kind, const uint8_t *buf, size_t len, unsigned want,
                           struct rw_server_reply *out)
{
    struct rw_frame f;

    if (!out || (!buf && len))
        return RAILWIRE_E_INVALID;
    memset(out, 0, sizeof(*out));
    rw_frame_init(&f, kind, want);
    return rw_frame_scan(&f, buf, len);
}

ssize_t rw_decode_ro_reply(const uint8_t *buf, size_t len, unsigned want, struct rw_server_reply *out)
{
    ssize_t size = frame_whole(RW_FRAME_RO_REPLY, buf, len, want, out);
    const uint8_t *p = buf + 1;
    struct rw_ro_params *ro;
    unsigned n;

    if (size < 0)
        return size;
    /* Framing bounded every count: n is 1..8 and each n_layers 1..4096. */
    n = buf[0];
    ro = calloc(n, sizeof(*ro));
    if (!ro)
        goto nomem;
    out->dialect = RAILWIRE_DIALECT_RO;
    out->n_rails = n;
    out->ro = ro;
    for (unsigned i = 0; i < n; i++) {
        p += rw_decode_qp_id(p, RW_QP_ID_SIZE, &ro[i].qp);
        p = rw_get_le32(&ro[i].n_layers, p);
        ro[i].layers = calloc(ro[i].n_layers, sizeof(*ro[i].layers));
        if (!ro[i].layers)
            goto nomem;
        for (uint32_t l = 0; l < ro[i].n_layers; l++) {
            p = rw_get_le64(&ro[i].layers[l].base_addr, p);
            p = rw_get_le32(&ro[i].layers[l].rkey, p);
        }
    }
    return size;

nomem:
    rw_err("RO reply: out of memory decoding %u rails", n);
    rw_server_reply_free(out);
    return RAILWIRE_E_NOMEM;
}

ssize_t rw_decode_rw_reply(const uint8_t *buf, size_t len, unsigned want, struct rw_server_reply *out)
{
    ssize_t size = frame_whole(RW_FRAME_RW_REPLY, buf, len, want, out);
    const uint8_t *p = buf + 1;
    struct rw_rw_params *rw = NULL;
    unsigned n;

    if (size < 0)
        return size;
    n = buf[0]; /* a u8: at most 255 entries */
    if (n) {
        rw = calloc(n, sizeof(*rw));
        if (!rw) {
            rw_err("RW reply: out of memory decoding %u rails", n);
            return RAILWIRE_E_NOMEM;
        }
    }
    out->dialect = RAILWIRE_DIALECT_RW;
    out->n_rails = n;
    out->rw = rw;
    for (unsigned i = 0; i < n; i++) {
        p += rw_decode_qp_id(p, RW_QP_ID_SIZE, &rw[i].qp);
        p = rw_get_le64(&rw[i].arena.base_addr, p);
        p = rw_get_le32(&rw[i].arena.rkey, p);
    }
    return size;
}
