/* SPDX-License-Identifier: MIT */
/* The server side of the handshake conversation: request, params (or a
 * rejection by closing), ids, ack. */
#include "wire/handshake.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "wire/hs_buf.h"

enum {
    ST_REQUEST,  /* receiving the request byte */
    ST_PARAMS,   /* waiting for the caller's params or rejection */
    ST_REPLY,    /* the params are pending */
    ST_IDS,      /* receiving the client's ids */
    ST_DECISION, /* waiting for the caller's accept/refuse */
    ST_ACK,      /* the ack is pending */
    ST_END,      /* DONE, REJECTED or FAILED */
};

static const char *dialect_name(enum railwire_dialect d)
{
    return d == RAILWIRE_DIALECT_RO ? "RO" : "RW";
}

static int fail(struct rw_hs_server *s, int err)
{
    rw_warn_rl("handshake server (%s, client asked for %u rails): %s: %s", dialect_name(s->dialect),
            s->n_rails, railwire_error_class(err), railwire_strerror(err));
    s->state = RW_HS_FAILED;
    s->stage = ST_END;
    s->error = err;
    return err;
}

static void free_rx(struct rw_hs_server *s)
{
    free(s->rx);
    s->rx = NULL;
    s->rx_len = s->rx_cap = 0;
}

int rw_hs_server_init(struct rw_hs_server *s, enum railwire_dialect dialect)
{
    memset(s, 0, sizeof(*s));
    s->dialect = dialect;
    if (dialect != RAILWIRE_DIALECT_RO && dialect != RAILWIRE_DIALECT_RW) {
        rw_err("handshake server: unknown dialect %d", (int)dialect);
        s->state = RW_HS_FAILED;
        s->stage = ST_END;
        return s->error = RAILWIRE_E_INVALID;
    }
    s->state = RW_HS_RECV;
    s->stage = ST_REQUEST;
    return 0;
}

size_t rw_hs_server_pending(const struct rw_hs_server *s, const uint8_t **data)
{
    if (s->state != RW_HS_SEND || !s->tx) {
        *data = NULL;
        return 0;
    }
    *data = s->tx + s->tx_off;
    return s->tx_len - s->tx_off;
}

void rw_hs_server_sent(struct rw_hs_server *s, size_t n)
{
    if (s->state != RW_HS_SEND || !rw_hs_tx_sent(&s->tx, &s->tx_len, &s->tx_off, n))
        return;
    if (s->stage == ST_REPLY) {
        s->state = RW_HS_RECV;
        s->stage = ST_IDS;
        rw_frame_init(&s->frame, RW_FRAME_CLIENT_IDS, s->n_rails);
    } else {
        s->state = RW_HS_DONE;
        s->stage = ST_END;
    }
}

ssize_t rw_hs_server_feed(struct rw_hs_server *s, const uint8_t *buf, size_t len)
{
    int complete;
    ssize_t used, rc;

    if (len == 0)
        return 0;
    if (!buf)
        return RAILWIRE_E_INVALID;
    if (s->state != RW_HS_RECV)
        return RAILWIRE_E_STATE;
    if (s->stage == ST_REQUEST) {
        s->n_rails = buf[0];
        s->state = RW_HS_NEED_PARAMS;
        s->stage = ST_PARAMS;
        return 1;
    }
    used = rw_hs_reassemble(&s->frame, &s->rx, &s->rx_len, &s->rx_cap, buf, len, &complete);
    if (used < 0)
        return fail(s, (int)used);
    if (!complete)
        return used;
    rc = rw_decode_client_ids(s->rx, s->rx_len, s->n_rails, s->ids);
    if (rc < 0)
        return fail(s, (int)rc);
    free_rx(s);
    s->state = RW_HS_NEED_DECISION;
    s->stage = ST_DECISION;
    return used;
}

int rw_hs_server_eof(struct rw_hs_server *s)
{
    switch (s->state) {
    case RW_HS_DONE:
    case RW_HS_REJECTED:
        return 0;
    case RW_HS_FAILED:
        return s->error;
    default:
        return fail(s, rw_eof_error(0, s->rx_len));
    }
}

/* Queues the reply (already validated: `size` bytes) for the dialect. */
static int queue_reply(struct rw_hs_server *s, size_t size, const void *p, unsigned n)
{
    uint8_t *out = rw_hs_tx_alloc(&s->tx, &s->tx_len, &s->tx_off, size);

    if (!out)
        return fail(s, RAILWIRE_E_NOMEM);
    if (s->dialect == RAILWIRE_DIALECT_RO)
        rw_encode_ro_reply(out, size, p, n);
    else
        rw_encode_rw_reply(out, size, p, n);
    s->state = RW_HS_SEND;
    s->stage = ST_REPLY;
    return 0;
}

static int check_params(const struct rw_hs_server *s, enum railwire_dialect d, unsigned n)
{
    if (s->state != RW_HS_NEED_PARAMS)
        return RAILWIRE_E_STATE;
    if (s->dialect != d) {
        rw_err("handshake server: %s params given on a %s port", dialect_name(d),
               dialect_name(s->dialect));
        return RAILWIRE_E_INVALID;
    }
    if (n != s->n_rails) {
        rw_err("handshake server: params for %u rails given, the client asked for %u", n,
               s->n_rails);
        return RAILWIRE_E_INVALID;
    }
    return 0;
}

int rw_hs_server_set_ro_params(struct rw_hs_server *s, const struct rw_ro_params *p, unsigned n)
{
    int rc = check_params(s, RAILWIRE_DIALECT_RO, n);
    size_t size;

    if (rc)
        return rc;
    size = rw_ro_reply_size(p, n);
    if (!size) {
        rw_err("handshake server: RO params for %u rails cannot be sent (rails 1..%d, "
               "layers 1..%d each): reject the client instead", n, RW_MAX_RO_RAILS, RW_MAX_LAYERS);
        return RAILWIRE_E_INVALID;
    }
    return queue_reply(s, size, p, n);
}

int rw_hs_server_set_rw_params(struct rw_hs_server *s, const struct rw_rw_params *p, unsigned n)
{
    int rc = check_params(s, RAILWIRE_DIALECT_RW, n);

    if (rc)
        return rc;
    if (!p && n)
        return RAILWIRE_E_INVALID;
    return queue_reply(s, 1 + (size_t)n * RW_RW_PARAMS_SIZE, p, n);
}

int rw_hs_server_reject(struct rw_hs_server *s)
{
    if (s->state != RW_HS_NEED_PARAMS)
        return RAILWIRE_E_STATE;
    rw_info("handshake server (%s): rejecting a client that asked for %u rails: closing",
            dialect_name(s->dialect), s->n_rails);
    s->state = RW_HS_REJECTED;
    s->stage = ST_END;
    return 0;
}

int rw_hs_server_decide(struct rw_hs_server *s, int accept)
{
    uint8_t *out;

    if (s->state != RW_HS_NEED_DECISION)
        return RAILWIRE_E_STATE;
    out = rw_hs_tx_alloc(&s->tx, &s->tx_len, &s->tx_off, 1);
    if (!out)
        return fail(s, RAILWIRE_E_NOMEM);
    rw_encode_ack(out, 1, accept ? RW_STATUS_OK : RW_STATUS_ERR);
    s->state = RW_HS_SEND;
    s->stage = ST_ACK;
    return 0;
}

size_t rw_hs_server_need(const struct rw_hs_server *s)
{
    if (s->state != RW_HS_RECV)
        return 0;
    if (s->stage == ST_REQUEST)
        return 1;
    return s->frame.need - s->rx_len;
}

void rw_hs_server_fini(struct rw_hs_server *s)
{
    free_rx(s);
    free(s->tx);
    s->tx = NULL;
    s->tx_len = s->tx_off = 0;
}
