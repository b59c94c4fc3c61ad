/* SPDX-License-Identifier: MIT */
#include "golden/support/drive.h"

#include <stdlib.h>
#include <string.h>

void drv_bytes_free(struct drv_bytes *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

int drv_bytes_add(struct drv_bytes *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        uint8_t *np;
        while (cap < b->len + n)
            cap *= 2;
        np = realloc(b->p, cap);
        if (!np)
            return -1;
        b->p = np;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

size_t drv_client_flush(struct rw_hs_client *c, struct drv_bytes *out, size_t chunk)
{
    const uint8_t *d;
    size_t n, total = 0;

    while ((n = rw_hs_client_pending(c, &d)) > 0) {
        if (chunk && n > chunk)
            n = chunk;
        if (out)
            drv_bytes_add(out, d, n);
        rw_hs_client_sent(c, n);
        total += n;
    }
    return total;
}

size_t drv_server_flush(struct rw_hs_server *s, struct drv_bytes *out, size_t chunk)
{
    const uint8_t *d;
    size_t n, total = 0;

    while ((n = rw_hs_server_pending(s, &d)) > 0) {
        if (chunk && n > chunk)
            n = chunk;
        if (out)
            drv_bytes_add(out, d, n);
        rw_hs_server_sent(s, n);
        total += n;
    }
    return total;
}

int drv_client_feed(struct rw_hs_client *c, const uint8_t *msg, size_t len, size_t chunk, int eof,
                    size_t *used)
{
    *used = 0;
    while (c->state == RW_HS_RECV && *used < len) {
        size_t n = len - *used;
        ssize_t rc;
        if (chunk && n > chunk)
            n = chunk;
        rc = rw_hs_client_feed(c, msg + *used, n);
        if (rc < 0)
            return (int)rc;
        *used += (size_t)rc;
        if ((size_t)rc < n && c->state == RW_HS_RECV)
            return RAILWIRE_E_INVALID; /* stopped early while still receiving: a bug */
    }
    if (c->state != RW_HS_RECV)
        return 0;
    return eof ? rw_hs_client_eof(c) : RAILWIRE_E_NEED_MORE;
}

int drv_server_feed(struct rw_hs_server *s, const uint8_t *msg, size_t len, size_t chunk, int eof,
                    size_t *used)
{
    *used = 0;
    while (s->state == RW_HS_RECV && *used < len) {
        size_t n = len - *used;
        ssize_t rc;
        if (chunk && n > chunk)
            n = chunk;
        rc = rw_hs_server_feed(s, msg + *used, n);
        if (rc < 0)
            return (int)rc;
        *used += (size_t)rc;
        if ((size_t)rc < n && s->state == RW_HS_RECV)
            return RAILWIRE_E_INVALID;
    }
    if (s->state != RW_HS_RECV)
        return 0;
    return eof ? rw_hs_server_eof(s) : RAILWIRE_E_NEED_MORE;
}

static uint32_t mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

static void sample_qp(struct rw_qp_id *id, uint32_t seed)
{
    id->qpn = mix(seed * 3 + 1);
    id->psn = mix(seed * 3 + 2);
    for (int b = 0; b < 16; b++)
        id->gid[b] = (uint8_t)mix(seed * 17 + (uint32_t)b + 5);
}

void drv_sample_ro(struct rw_ro_params *p, struct rw_mr_desc *layers, unsigned n, uint32_t n_layers,
                   uint32_t seed)
{
    for (unsigned i = 0; i < n; i++) {
        sample_qp(&p[i].qp, seed + i * 101);
        p[i].n_layers = n_layers;
        p[i].layers = layers + (size_t)i * n_layers;
        for (uint32_t l = 0; l < n_layers; l++) {
            p[i].layers[l].base_addr = (uint64_t)mix(seed + i * 7 + l) << 32 | mix(seed ^ l);
            p[i].layers[l].rkey = mix(seed + l * 13 + i);
        }
    }
}

void drv_sample_rw(struct rw_rw_params *p, unsigned n, uint32_t seed)
{
    for (unsigned i = 0; i < n; i++) {
        sample_qp(&p[i].qp, seed + i * 101);
        p[i].arena.base_addr = (uint64_t)mix(seed + i) << 32 | mix(seed + i + 1000);
        p[i].arena.rkey = mix(seed + i + 2000);
    }
}

void drv_sample_ids(struct rw_qp_id *ids, unsigned n, uint32_t seed)
{
    for (unsigned i = 0; i < n; i++)
        sample_qp(&ids[i], seed + i * 31);
}

static void read_reply(enum railwire_dialect d, unsigned want, const uint8_t *msg, size_t len,
                       size_t chunk, struct drv_outcome *o)
{
    struct rw_hs_client c;

    if (rw_hs_client_init(&c, d, want)) {
        o->skipped = 1;
        rw_hs_client_fini(&c);
        return;
    }
    drv_client_flush(&c, NULL, 0);
    o->rc = drv_client_feed(&c, msg, len, chunk, 1, &o->used);
    if (o->rc == 0) {
        o->reply = c.reply; /* take ownership */
        memset(&c.reply, 0, sizeof(c.reply));
    }
    rw_hs_client_fini(&c);
}

static void read_ack(const uint8_t *msg, size_t len, size_t chunk, struct drv_outcome *o)
{
    struct rw_hs_client c;
    struct rw_rw_params p;
    struct rw_qp_id id;
    uint8_t reply[1 + RW_RW_PARAMS_SIZE];
    size_t used;

    drv_sample_rw(&p, 1, 7);
    drv_sample_ids(&id, 1, 9);
    rw_encode_rw_reply(reply, sizeof(reply), &p, 1);
    if (rw_hs_client_init(&c, RAILWIRE_DIALECT_RW, 1) ||
        (drv_client_flush(&c, NULL, 0), drv_client_feed(&c, reply, sizeof(reply), 0, 0, &used)) ||
        rw_hs_client_set_local(&c, &id, 1)) {
        o->rc = RAILWIRE_E_INVALID;
        rw_hs_client_fini(&c);
        return;
    }
    drv_client_flush(&c, NULL, 0);
    o->rc = drv_client_feed(&c, msg, len, chunk, 1, &o->used);
    if (o->rc == 0 || o->rc == RAILWIRE_E_REFUSED)
        o->ack = o->rc == 0 ? 0 : (uint8_t)c.refused_status;
    if (o->rc == 0 && c.state != RW_HS_DONE)
        o->rc = RAILWIRE_E_INVALID;
    rw_hs_client_fini(&c);
}

static void read_client_stream(unsigned want, const uint8_t *msg, size_t len, size_t chunk,
                               struct drv_outcome *o)
{
    struct rw_hs_server s;
    struct rw_rw_params *p = NULL;
    size_t used = 0, more = 0;

    rw_hs_server_init(&s, RAILWIRE_DIALECT_RW);
    o->rc = drv_server_feed(&s, msg, len, chunk, 1, &used);
    if (o->rc)
        goto out;
    /* The request byte must be the count the client asked for. */
    if (s.n_rails != want) {
        o->rc = RAILWIRE_E_RAIL_COUNT_MISMATCH;
        goto out;
    }
    p = calloc(want + 1, sizeof(*p));
    drv_sample_rw(p, want, 3);
    if (!p || rw_hs_server_set_rw_params(&s, p, want)) {
        o->rc = RAILWIRE_E_INVALID;
        goto out;
    }
    drv_server_flush(&s, NULL, 0);
    o->rc = drv_server_feed(&s, msg + used, len - used, chunk, 1, &more);
    used += more;
    if (o->rc == 0) {
        memcpy(o->ids, s.ids, want * sizeof(s.ids[0]));
        o->n_ids = want;
    }
out:
    o->used = used;
    free(p);
    rw_hs_server_fini(&s);
}

void drv_read_message(enum tv_kind kind, unsigned want, const uint8_t *msg, size_t len, size_t chunk,
                      struct drv_outcome *o)
{
    memset(o, 0, sizeof(*o));
    switch (kind) {
    case TV_RO_SERVER: read_reply(RAILWIRE_DIALECT_RO, want, msg, len, chunk, o); break;
    case TV_RW_SERVER: read_reply(RAILWIRE_DIALECT_RW, want, msg, len, chunk, o); break;
    case TV_CLIENT: read_client_stream(want, msg, len, chunk, o); break;
    case TV_ACK: read_ack(msg, len, chunk, o); break;
    }
}

void drv_outcome_free(struct drv_outcome *o)
{
    rw_server_reply_free(&o->reply);
}

void drv_decode_message(enum tv_kind kind, unsigned want, const uint8_t *msg, size_t len,
                        struct drv_outcome *o)
{
    ssize_t rc = RAILWIRE_E_INVALID;

    memset(o, 0, sizeof(*o));
    switch (kind) {
    case TV_RO_SERVER: rc = rw_decode_ro_reply(msg, len, want, &o->reply); break;
    case TV_RW_SERVER: rc = rw_decode_rw_reply(msg, len, want, &o->reply); break;
    case TV_CLIENT:
        rc = rw_decode_client_stream(msg, len, want, o->ids);
        if (rc > 0)
            o->n_ids = want;
        break;
    case TV_ACK: rc = rw_decode_ack(msg, len, &o->ack); break;
    }
    if (rc == RAILWIRE_E_NEED_MORE)
        rc = rw_eof_error(kind == TV_RO_SERVER || kind == TV_RW_SERVER, len);
    o->rc = rc < 0 ? (int)rc : 0;
    o->used = rc > 0 ? (size_t)rc : 0;
}
