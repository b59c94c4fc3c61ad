/* SPDX-License-Identifier: MIT */
/* The client side of the handshake conversation: request, reply, ids, ack. */
#include "wire/handshake.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "wire/hs_buf.h"

enum {
    ST_REQUEST, /* the request byte is pending */
    ST_REPLY,   /* receiving the server's params */
    ST_LOCAL,   /* waiting for the local QP ids */
    ST_IDS,     /* the ids are pending */
    ST_ACK,     /* receiving the ack */
    ST_END,     /* DONE or FAILED */
};

static const char *dialect_name(enum railwire_dialect d)
{
    return d == RAILWIRE_DIALECT_RO ? "RO" : "RW";
}

static int fail(struct rw_hs_client *c, int err)
{
    if (err == RAILWIRE_E_PEER_REJECTED)
        rw_warn("handshake (%s, %u rails): the server closed the connection before replying: "
                "it rejected this client; the reason is in the server's log",
                dialect_name(c->dialect), c->n_rails);
    else
        rw_warn("handshake (%s, %u rails): %s: %s", dialect_name(c->dialect), c->n_rails,
                railwire_error_class(err), railwire_strerror(err));
    c->state = RW_HS_FAILED;
    c->stage = ST_END;
    c->error = err;
    return err;
}

static void free_rx(struct rw_hs_client *c)
{
    free(c->rx);
    c->rx = NULL;
    c->rx_len = c->rx_cap = c->rx_total = 0;
}

int rw_hs_client_init(struct rw_hs_client *c, enum railwire_dialect dialect, unsigned n_rails)
{
    unsigned max = dialect == RAILWIRE_DIALECT_RO ? RW_MAX_RO_RAILS : RW_MAX_RW_RAILS;
    uint8_t *p;

    memset(c, 0, sizeof(*c));
    c->dialect = dialect;
    c->n_rails = n_rails;
    c->stage = ST_END;
    c->state = RW_HS_FAILED;
    c->error = RAILWIRE_E_INVALID;
    if ((dialect != RAILWIRE_DIALECT_RO && dialect != RAILWIRE_DIALECT_RW) || n_rails == 0 ||
        n_rails > max) {
        rw_err("handshake: cannot ask for %u rails in the %s dialect (1..%u)", n_rails,
               dialect_name(dialect), max);
        return RAILWIRE_E_INVALID;
    }
    p = rw_hs_tx_alloc(&c->tx, &c->tx_len, &c->tx_off, 1);
    if (!p)
        return c->error = RAILWIRE_E_NOMEM;
    rw_encode_request(p, 1, n_rails);
    c->error = 0;
    c->state = RW_HS_SEND;
    c->stage = ST_REQUEST;
    return 0;
}

size_t rw_hs_client_pending(const struct rw_hs_client *c, const uint8_t **data)
{
    if (c->state != RW_HS_SEND || !c->tx) {
        *data = NULL;
        return 0;
    }
    *data = c->tx + c->tx_off;
    return c->tx_len - c->tx_off;
}

void rw_hs_client_sent(struct rw_hs_client *c, size_t n)
{
    if (c->state != RW_HS_SEND || !rw_hs_tx_sent(&c->tx, &c->tx_len, &c->tx_off, n))
        return;
    c->state = RW_HS_RECV;
    if (c->stage == ST_REQUEST) {
        c->stage = ST_REPLY;
        rw_frame_init(&c->frame,
                      c->dialect == RAILWIRE_DIALECT_RO ? RW_FRAME_RO_REPLY : RW_FRAME_RW_REPLY,
                      c->n_rails);
    } else {
        c->stage = ST_ACK;
    }
}

static ssize_t feed_reply(struct rw_hs_client *c, const uint8_t *buf, size_t len)
{
    int complete;
    ssize_t used = rw_hs_reassemble(&c->frame, &c->rx, &c->rx_len, &c->rx_cap, buf, len, &complete);
    ssize_t rc;

    if (used < 0)
        return fail(c, (int)used);
    c->rx_total = c->rx_len;
    if (!complete)
        return used;
    if (c->dialect == RAILWIRE_DIALECT_RO)
        rc = rw_decode_ro_reply(c->rx, c->rx_len, c->n_rails, &c->reply);
    else
        rc = rw_decode_rw_reply(c->rx, c->rx_len, c->n_rails, &c->reply);
    if (rc < 0)
        return fail(c, (int)rc);
    free_rx(c);
    c->state = RW_HS_NEED_LOCAL;
    c->stage = ST_LOCAL;
    return used;
}

ssize_t rw_hs_client_feed(struct rw_hs_client *c, const uint8_t *buf, size_t len)
{
    uint8_t status = 0;
    ssize_t rc;

    if (len == 0)
        return 0;
    if (!buf)
        return RAILWIRE_E_INVALID;
    if (c->state != RW_HS_RECV)
        return RAILWIRE_E_STATE;
    if (c->stage == ST_REPLY)
        return feed_reply(c, buf, len);
    rc = rw_decode_ack(buf, 1, &status);
    if (rc < 0) {
        c->refused_status = status;
        return fail(c, (int)rc);
    }
    c->state = RW_HS_DONE;
    c->stage = ST_END;
    return 1;
}

int rw_hs_client_eof(struct rw_hs_client *c)
{
    switch (c->state) {
    case RW_HS_DONE:
        return 0;
    case RW_HS_FAILED:
        return c->error;
    default:
        break;
    }
    if (c->stage == ST_REQUEST || c->stage == ST_REPLY)
        return fail(c, rw_eof_error(1, c->rx_len));
    return fail(c, rw_eof_error(0, c->rx_len));
}

int rw_hs_client_set_local(struct rw_hs_client *c, const struct rw_qp_id *ids, unsigned n)
{
    size_t size = 1 + (size_t)n * RW_QP_ID_SIZE;
    uint8_t *p;

    if (c->state != RW_HS_NEED_LOCAL)
        return RAILWIRE_E_STATE;
    if (!ids || n != c->n_rails) {
        rw_err("handshake: %u local QP ids given (%s) for %u rails", n, ids ? "an array" : "NULL",
               c->n_rails);
        return RAILWIRE_E_INVALID;
    }
    p = rw_hs_tx_alloc(&c->tx, &c->tx_len, &c->tx_off, size);
    if (!p)
        return fail(c, RAILWIRE_E_NOMEM);
    rw_encode_client_ids(p, size, ids, n);
    c->state = RW_HS_SEND;
    c->stage = ST_IDS;
    return 0;
}

const struct rw_server_reply *rw_hs_client_reply(const struct rw_hs_client *c)
{
    return c->reply.n_rails ? &c->reply : NULL;
}

size_t rw_hs_client_need(const struct rw_hs_client *c)
{
    if (c->state != RW_HS_RECV)
        return 0;
    if (c->stage == ST_REPLY)
        return c->frame.need - c->rx_len;
    return 1;
}

void rw_hs_client_fini(struct rw_hs_client *c)
{
    free_rx(c);
    free(c->tx);
    c->tx = NULL;
    c->tx_len = c->tx_off = 0;
    rw_server_reply_free(&c->reply);
}
