/* SPDX-License-Identifier: MIT */
/* railwire_railset_connect: the control connection, the handshake and the
 * rails, brought up together or not at all. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "rail/device_spec.h"
#include "rail/handshake_drive.h"
#include "rail/parallel.h"
#include "rail/railset_internal.h"
#include "rail/sock.h"
#include "rail/transport_select.h"

struct connect_ctx {
    const struct rw_transport_ops *ops;
    unsigned n;
    struct rw_domain *dom[RAILWIRE_MAX_RAILS];
    struct rw_ep *ep[RAILWIRE_MAX_RAILS];
};

static void teardown(struct connect_ctx *cx)
{
    for (unsigned i = cx->n; i-- > 0;) {
        if (cx->ep[i])
            cx->ops->ep_destroy(cx->ep[i]);
        if (cx->dom[i])
            cx->ops->domain_close(cx->dom[i]);
        cx->ep[i] = NULL;
        cx->dom[i] = NULL;
    }
}

/* Opens rail i's domain and creates its ep. */
static int open_rail(struct connect_ctx *cx, const railwire_railset_opts *o, unsigned i)
{
    struct rw_domain_cfg dc = {.role = RW_ROLE_CLIENT, .gid_index = o->gid_index,
                               .mtu_cap = o->mtu, .io_timeout_ms = o->io_timeout_ms};
    struct rw_domain_place place;
    rw_domain_place_fill(&dc, &place, cx->ops->name, o->local_addrs ? o->local_addrs[i] : NULL,
                         o->devices ? o->devices[i] : NULL, i);
    int rc = cx->ops->domain_open(&dc, &cx->dom[i]);
    if (rc < 0) {
        rw_err("connect: rail %u: cannot open the local %s domain %s (%s)", i, cx->ops->name,
               dc.device ? dc.device : "(default)", railwire_error_class(rc));
        cx->dom[i] = NULL;
        return rc;
    }
    unsigned depth = o->queue_depth ? o->queue_depth : RW_DEFAULT_QUEUE_DEPTH;
    if (cx->dom[i]->max_qp_wr && depth > cx->dom[i]->max_qp_wr)
        depth = cx->dom[i]->max_qp_wr;
    /* Not lazy: the server acks without waiting for our rail connections
     * (a WIRE.md-only peer must see STATUS_OK), so each ep_connect waits
     * for the server's verdict on its rail and the railset is only handed
     * out once every rail is confirmed. */
    struct rw_ep_cfg ec = {.depth = depth, .lazy_verdict = 0};
    rc = cx->ops->ep_create(cx->dom[i], &ec, &cx->ep[i]);
    if (rc < 0) {
        rw_err("connect: rail %u (%s): cannot create an endpoint (%s)", i, cx->dom[i]->name,
               railwire_error_class(rc));
        cx->ep[i] = NULL;
        return rc;
    }
    return 0;
}

struct rail_connect_ctx {
    struct connect_ctx *cx;
    const railwire_railset_opts *o;
    const struct rw_server_reply *rep;
};

/* rw_parallel_for body: connects rail i to the server's side of it. */
static int connect_rail(void *arg, unsigned i)
{
    struct rail_connect_ctx *r = arg;
    const struct rw_qp_id *rid = r->o->dialect == RAILWIRE_DIALECT_RO ? &r->rep->ro[i].qp
                                                                      : &r->rep->rw[i].qp;
    int to = r->o->io_timeout_ms > 0 ? r->o->io_timeout_ms : RW_DEFAULT_IO_TIMEOUT_MS;
    int rc = r->cx->ops->ep_connect(r->cx->ep[i], rid, to);

    if (rc < 0)
        rw_err("connect: rail %u (%s): connecting to the server's rail failed (%s)", i,
               r->cx->dom[i]->name, railwire_error_class(rc));
    return rc;
}

int railwire_railset_connect(const char *host, const char *port, const railwire_railset_opts *o,
                             railwire_railset **out)
{
    railwire_railset_opts defaults;
    if (!o) {
        railwire_railset_opts_init(&defaults);
        o = &defaults;
    }
    if (!host || !port || !out) {
        rw_err("connect: NULL host, port or out");
        return RAILWIRE_E_INVALID;
    }
    if (o->n_rails == 0 || o->n_rails > RAILWIRE_MAX_RAILS) {
        rw_err("connect: rail count %u is not 1..%d", o->n_rails, RAILWIRE_MAX_RAILS);
        return RAILWIRE_E_INVALID;
    }
    if (o->dialect != RAILWIRE_DIALECT_RO && o->dialect != RAILWIRE_DIALECT_RW) {
        rw_err("connect: unknown dialect %d", (int)o->dialect);
        return RAILWIRE_E_INVALID;
    }
    struct connect_ctx cx = {.n = o->n_rails};
    int rc = rw_transport_select(o->transport, &cx.ops);
    if (rc < 0)
        return rc;

    int fd = -1;
    rc = rw_sock_connect(host, port, o->connect_timeout_ms, &fd);
    if (rc < 0)
        return rc;
    struct rw_hs_client hs;
    rc = rw_hs_client_init(&hs, o->dialect, o->n_rails);
    if (rc < 0) {
        rw_err("connect: cannot start the handshake (%s)", railwire_error_class(rc));
        goto out_fd;
    }
    struct rw_hs_io *io = malloc(sizeof(*io));
    if (!io) {
        rc = RAILWIRE_E_NOMEM;
        rw_err("connect: out of memory");
        goto out_hs;
    }
    rw_hs_io_init(io, fd, o->io_timeout_ms);

    rc = rw_hs_client_drive(io, &hs);
    if (rc < 0)
        goto out_io;
    if (hs.state != RW_HS_NEED_LOCAL) {
        rw_err("connect: handshake ended before the params");
        rc = RAILWIRE_E_PROTOCOL;
        goto out_io;
    }
    const struct rw_server_reply *rep = rw_hs_client_reply(&hs);
    if (o->dialect == RAILWIRE_DIALECT_RO) {
        for (unsigned i = 1; i < o->n_rails; i++) {
            if (rep->ro[i].n_layers != rep->ro[0].n_layers) {
                rw_err("connect: the server published %u layers on rail %u but %u on rail 0; "
                       "every rail must carry the same layers", rep->ro[i].n_layers, i,
                       rep->ro[0].n_layers);
                rc = RAILWIRE_E_PROTOCOL;
                goto out_io;
            }
        }
    }

    struct rw_qp_id ids[RAILWIRE_MAX_RAILS];
    for (unsigned i = 0; i < cx.n; i++) {
        rc = open_rail(&cx, o, i);
        if (rc < 0)
            goto out_rails;
        ids[i] = cx.ep[i]->local;
    }
    rc = rw_hs_client_set_local(&hs, ids, cx.n);
    if (rc < 0) {
        rw_err("connect: the handshake refused our ids (%s)", railwire_error_class(rc));
        goto out_rails;
    }
    /* The whole conversation first: our ids out, the ack in.  The server
     * acks once its side of every rail is ready (verbs: RTR/RTS; tcp:
     * expecting our connections), so a refusal is reported as `refused`
     * before any rail is dialled, against any peer that speaks WIRE.md. */
    rc = rw_hs_client_drive(io, &hs);
    if (rc < 0)
        goto out_rails;
    if (hs.state != RW_HS_DONE) {
        rw_err("connect: handshake did not finish");
        rc = RAILWIRE_E_PROTOCOL;
        goto out_rails;
    }
    /* Then the rails.  Each rail's connect waits for its own round trips
     * (tcp: connect, hello, verdict); run them side by side so n rails cost
     * about one. */
    struct rail_connect_ctx rcx = {&cx, o, rep};
    rc = rw_parallel_for(cx.n, cx.n > 1, connect_rail, &rcx);
    if (rc < 0)
        goto out_rails;

    struct rw_rail_init init[RAILWIRE_MAX_RAILS];
    struct rw_mr_desc arena[RAILWIRE_MAX_RAILS];
    for (unsigned i = 0; i < cx.n; i++) {
        init[i].dom = cx.dom[i];
        init[i].ep = cx.ep[i];
        if (o->dialect == RAILWIRE_DIALECT_RO) {
            init[i].remote = rep->ro[i].layers;
            init[i].n_remote = rep->ro[i].n_layers;
        } else {
            arena[i] = rep->rw[i].arena;
            init[i].remote = &arena[i];
            init[i].n_remote = 1;
        }
    }
    railwire_railset *rs;
    rc = rw_railset_create_local(cx.ops, o, init, cx.n, &rs);
    if (rc < 0)
        goto out_rails;
    rs->ctrl_fd = fd;
    free(io);
    rw_hs_client_fini(&hs);
    rw_info("connect: %u %s rail(s) up to %s port %s (%u layer(s))", cx.n, cx.ops->name, host,
            port, rs->n_layers);
    *out = rs;
    return 0;

out_rails:
    teardown(&cx);
out_io:
    free(io);
out_hs:
    rw_hs_client_fini(&hs);
out_fd:
    close(fd);
    return rc;
}
