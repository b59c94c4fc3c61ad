/* SPDX-License-Identifier: MIT */
/* rw_session_open: the control connection, the handshake and the rails of
 * one session, brought up together or not at all. */
#include "rail/client/session_open.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "rail/session/device_spec.h"
#include "rail/session/handshake_drive.h"
#include "common/parallel.h"
#include "rail/client/railset_internal.h"
#include "common/sock.h"
#include "common/time.h"
#if RAILWIRE_HAVE_TLS
#include "tls/tls_conn.h"
#endif

/* Opens rail i's domain and creates its ep. */
static int open_rail(const struct rw_session_spec *sp, struct rw_session_out *out, unsigned i)
{
    struct rw_domain_cfg dc = {.role = RW_ROLE_CLIENT, .gid_index = sp->gid_index,
                               .mtu_cap = sp->mtu, .io_timeout_ms = sp->io_timeout_ms,
                               .tls_client = sp->tls, .tls_host = sp->host};
    struct rw_domain_place place;
    rw_domain_place_fill(&dc, &place, sp->ops, sp->local_addr[i], sp->device[i], i);
    int rc = sp->ops->domain_open(&dc, &out->dom[i]);
    if (rc < 0) {
        rw_err("connect: rail %u: cannot open the local %s domain %s (%s)", i, sp->ops->name,
               dc.device ? dc.device : "(default)", railwire_error_class(rc));
        out->dom[i] = NULL;
        return rc;
    }
    unsigned depth = rw_rail_depth(sp->queue_depth, out->dom[i]);
    /* Not lazy: the server acks without waiting for our rail connections
     * (a WIRE.md-only peer must see STATUS_OK), so each ep_connect waits
     * for the server's verdict on its rail and a session is only handed
     * out once every rail it needs is confirmed. */
    struct rw_ep_cfg ec = {.depth = depth, .lazy_verdict = 0, .busy_poll_us = sp->busy_poll_us,
                           .set_rails = sp->n_rails};
    rc = sp->ops->ep_create(out->dom[i], &ec, &out->ep[i]);
    if (rc < 0) {
        rw_err("connect: rail %u (%s): cannot create an endpoint (%s)", i, out->dom[i]->name,
               railwire_error_class(rc));
        out->ep[i] = NULL;
        return rc;
    }
    return 0;
}

struct rail_connect_ctx {
    const struct rw_session_spec *sp;
    struct rw_session_out *out;
};

/* rw_parallel_for body: connects rail i to the server's side of it. */
static int connect_rail(void *arg, unsigned i)
{
    struct rail_connect_ctx *r = arg;
    int to = r->sp->io_timeout_ms > 0 ? r->sp->io_timeout_ms : RW_DEFAULT_IO_TIMEOUT_MS;
    int rc = r->sp->ops->ep_connect(r->out->ep[i], &r->out->peer[i], to);

    if (rc < 0) {
        rw_err("connect: rail %u (%s): connecting to the server's rail failed (%s)", i,
               r->out->dom[i]->name, railwire_error_class(rc));
        if (r->sp->need) {
            /* Partial mode: drop this rail, keep the others. */
            r->sp->ops->ep_destroy(r->out->ep[i]);
            r->out->ep[i] = NULL;
            return 0;
        }
    }
    return rc;
}

/* Copies what the server published for each rail into *out. */
static int take_reply(const struct rw_session_spec *sp, const struct rw_server_reply *rep,
                      struct rw_session_out *out)
{
    unsigned n = sp->n_rails;
    if (sp->dialect == RAILWIRE_DIALECT_RO) {
        for (unsigned i = 1; i < n; i++) {
            if (rep->ro[i].n_layers != rep->ro[0].n_layers) {
                rw_err("connect: the server published %u layers on rail %u but %u on rail 0; "
                       "every rail must carry the same layers", rep->ro[i].n_layers, i,
                       rep->ro[0].n_layers);
                return RAILWIRE_E_PROTOCOL;
            }
        }
        if (sp->expect_layers && rep->ro[0].n_layers != sp->expect_layers) {
            rw_err("connect: the server now publishes %u layer(s) but this railset was opened "
                   "with %u; a railset only heals onto the same layers (reconnect to use the new "
                   "ones)", rep->ro[0].n_layers, sp->expect_layers);
            return RAILWIRE_E_PROTOCOL;
        }
        out->n_remote = rep->ro[0].n_layers;
    } else {
        out->n_remote = 1;
    }
    for (unsigned i = 0; i < n; i++) {
        out->remote[i] = calloc(out->n_remote, sizeof(*out->remote[i]));
        if (!out->remote[i]) {
            rw_err("connect: out of memory");
            return RAILWIRE_E_NOMEM;
        }
        if (sp->dialect == RAILWIRE_DIALECT_RO) {
            memcpy(out->remote[i], rep->ro[i].layers, out->n_remote * sizeof(*out->remote[i]));
            out->peer[i] = rep->ro[i].qp;
        } else {
            out->remote[i][0] = rep->rw[i].arena;
            out->peer[i] = rep->rw[i].qp;
        }
    }
    return 0;
}

/* Frees the control connection's TLS state (the socket stays open). */
static void tls_done(struct rw_tls_conn *t)
{
#if RAILWIRE_HAVE_TLS
    rw_tls_conn_free(t);
#else
    (void)t;
#endif
}

/* TLS on the control connection when sp->tls is set: the handshake runs
 * within the io timeout, before WIRE.md's first byte.  Returns 0 and *out
 * (NULL when plain; free with rw_tls_conn_free once the handshake is over:
 * the socket stays the session's liveness signal), or the error (logged). */
static int control_tls(const struct rw_session_spec *sp, int fd, struct rw_tls_conn **out)
{
    *out = NULL;
    if (!sp->tls)
        return 0;
#if RAILWIRE_HAVE_TLS
    int to = sp->io_timeout_ms > 0 ? sp->io_timeout_ms : RW_DEFAULT_IO_TIMEOUT_MS;
    int rc = rw_tls_conn_new(sp->tls, fd, sp->host, out);
    if (rc < 0) {
        *out = NULL;
        rw_err("connect: cannot start TLS to %s (%s)", sp->host, railwire_error_class(rc));
        return rc;
    }
    rc = rw_tls_conn_handshake(*out, rw_now_ms() + to);
    if (rc < 0) {
        rw_err("connect: %s%s", rw_tls_conn_error(*out),
               strstr(rw_tls_conn_error(*out), "protocol version")
                   ? " (a plain railwire listener answers a TLS client with this alert: check "
                     "that the server runs with TLS options)"
                   : "");
        rw_tls_conn_free(*out);
        *out = NULL;
        return rc;
    }
    rw_debug("connect: TLS to %s:%s (%s, %s)", sp->host, sp->port, rw_tls_conn_cipher(*out),
             rw_tls_conn_mode(*out));
    return 0;
#else
    (void)fd;
    rw_err("connect: TLS asked for, but this railwire was built without TLS");
    return RAILWIRE_E_INVALID;
#endif
}

/* The handshake's conversation over io: the params in, a local ep per
 * rail, our ids out, the ack in.  Returns 0 or an error (logged). */
static int converse(const struct rw_session_spec *sp, struct rw_hs_io *io,
                    struct rw_hs_client *hs, struct rw_session_out *out)
{
    int rc = rw_hs_client_drive(io, hs);
    if (rc < 0)
        return rc;
    if (hs->state != RW_HS_NEED_LOCAL) {
        rw_err("connect: handshake ended before the params");
        return RAILWIRE_E_PROTOCOL;
    }
    rc = take_reply(sp, rw_hs_client_reply(hs), out);
    if (rc < 0)
        return rc;

    struct rw_qp_id ids[RAILWIRE_MAX_RAILS];
    for (unsigned i = 0; i < sp->n_rails; i++) {
        rc = open_rail(sp, out, i);
        if (rc < 0)
            return rc;
        ids[i] = out->ep[i]->local;
    }
    rc = rw_hs_client_set_local(hs, ids, sp->n_rails);
    if (rc < 0) {
        rw_err("connect: the handshake refused our ids (%s)", railwire_error_class(rc));
        return rc;
    }
    /* The whole conversation first: our ids out, the ack in.  The server
     * acks once its side of every rail is ready (verbs: RTR/RTS; tcp:
     * expecting our connections), so a refusal is reported as `refused`
     * before any rail is dialled, against any peer that speaks WIRE.md. */
    rc = rw_hs_client_drive(io, hs);
    if (rc < 0)
        return rc;
    if (hs->state != RW_HS_DONE) {
        rw_err("connect: handshake did not finish");
        return RAILWIRE_E_PROTOCOL;
    }
    return 0;
}

/* Then the rails.  Each rail's connect waits for its own round trips (tcp:
 * connect, hello, verdict); run them side by side so n rails cost about
 * one.  Returns 0, or an error when one failed or none of the rails the
 * session was opened for (sp->need) came up. */
static int connect_rails(const struct rw_session_spec *sp, struct rw_session_out *out)
{
    struct rail_connect_ctx rcx = {sp, out};
    int rc = rw_parallel_for(sp->n_rails, sp->n_rails > 1, connect_rail, &rcx);
    if (rc < 0)
        return rc;
    if (sp->need) {
        unsigned up = 0;
        for (unsigned i = 0; i < sp->n_rails; i++)
            up += sp->need[i] && out->ep[i];
        if (up == 0) {
            rw_warn("connect: none of the rails this session was opened for came up");
            return RAILWIRE_E_CONNECT;
        }
    }
    return 0;
}

int rw_session_open(const struct rw_session_spec *sp, struct rw_session_out *out)
{
    memset(out, 0, sizeof(*out));
    out->fd = -1;
    if (!sp || !sp->ops || !sp->host || !sp->port || sp->n_rails == 0 ||
        sp->n_rails > (sp->dialect == RAILWIRE_DIALECT_RO ? RAILWIRE_MAX_RO_RAILS
                                                          : RAILWIRE_MAX_RAILS)) {
        rw_err("connect: invalid session spec");
        return RAILWIRE_E_INVALID;
    }
    out->n_rails = sp->n_rails;
    int fd = -1;
    int rc = rw_sock_connect(sp->host, sp->port, sp->connect_timeout_ms, &fd);
    if (rc < 0)
        return rc;
    /* The control connection is one liveness signal of the session: a server
     * that vanished without a FIN must still show as ended in the stats. */
    rw_sock_keepalive(fd, sp->io_timeout_ms > 0 ? sp->io_timeout_ms : RW_DEFAULT_IO_TIMEOUT_MS);
    struct rw_hs_client hs;
    rc = rw_hs_client_init(&hs, sp->dialect, sp->n_rails);
    if (rc < 0) {
        rw_err("connect: cannot start the handshake (%s)", railwire_error_class(rc));
        close(fd);
        return rc;
    }
    struct rw_hs_io *io = malloc(sizeof(*io));
    if (!io) {
        rc = RAILWIRE_E_NOMEM;
        rw_err("connect: out of memory");
        goto out_hs;
    }
    rw_hs_io_init(io, fd, sp->io_timeout_ms);
    struct rw_tls_conn *tls = NULL;
    rc = control_tls(sp, fd, &tls);
    if (rc < 0)
        goto out_io;
    io->tls = tls;

    rc = converse(sp, io, &hs, out);
    if (rc == 0)
        rc = connect_rails(sp, out);
    if (rc < 0)
        goto out_io;
    tls_done(io->tls);
    free(io);
    rw_hs_client_fini(&hs);
    out->fd = fd;
    return 0;

out_io:
    tls_done(io->tls);
    free(io);
out_hs:
    rw_hs_client_fini(&hs);
    close(fd);
    rw_session_close(sp->ops, out);
    return rc;
}
