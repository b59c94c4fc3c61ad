/* SPDX-License-Identifier: MIT */
/* railwire_railset_connect: the first session (control connection,
 * handshake, every rail) brought up together or not at all, then healing
 * turned on with what later sessions need. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/busy_poll.h"
#include "common/log.h"
#include "rail/client/heal.h"
#include "rail/client/near_place.h"
#include "rail/client/railset_internal.h"
#include "rail/client/railset_opts.h"
#include "rail/client/session_open.h"
#if RAILWIRE_HAVE_TLS
#include "tls/tls_creds.h"
#endif
#include "transport/select.h"

/* Copies a borrowed array of nv strings to n entries, entry i from
 * v[i mod nv] (NULL entries kept); NULL for none or when out of memory
 * (*oom set). */
static char **copy_strings(const char *const *v, unsigned nv, unsigned n, int *oom)
{
    if (!v || !nv)
        return NULL;
    char **c = calloc(n, sizeof(*c));
    if (!c) {
        *oom = 1;
        return NULL;
    }
    for (unsigned i = 0; i < n; i++)
        if (v[i % nv] && !(c[i] = strdup(v[i % nv])))
            *oom = 1;
    return c;
}

/* Copies what a heal needs from the options (whose pointers are borrowed).
 * Returns 0 or RAILWIRE_E_NOMEM. */
static int heal_cfg(struct rw_heal_cfg *c, const struct rw_transport_ops *ops, const char *port,
                    const railwire_railset_opts *o, unsigned n_layers)
{
    int oom = 0;
    memset(c, 0, sizeof(*c));
    c->ops = ops;
    c->dialect = o->dialect;
    snprintf(c->port, sizeof(c->port), "%s", port);
    c->n_rails = o->n_rails;
    c->local_addr = copy_strings(o->local_addrs, o->n_local_addrs, o->n_rails, &oom);
    c->device = copy_strings(o->devices, o->n_devices, o->n_rails, &oom);
    c->gid_index = o->gid_index;
    c->mtu = o->mtu;
    c->queue_depth = o->queue_depth;
    c->connect_timeout_ms = o->connect_timeout_ms;
    c->io_timeout_ms = o->io_timeout_ms;
    c->busy_poll_us = o->busy_poll_us;
    c->op_timeout_ms = o->op_timeout_ms > 0 ? o->op_timeout_ms : RW_DEFAULT_OP_TIMEOUT_MS;
    c->n_layers = n_layers;
    c->backoff_min_ms = o->heal_backoff_min_ms;
    c->backoff_max_ms = o->heal_backoff_max_ms;
    c->stable_ms = o->heal_stable_ms;
    return oom ? RAILWIRE_E_NOMEM : 0;
}

/* The railset's TLS client credentials from o->tls (NULL without).
 * Returns 0 or the error (logged with the file and what to check). */
static int tls_creds_make(const railwire_railset_opts *o, struct rw_tls_creds **out)
{
    *out = NULL;
    if (!o->tls)
        return 0;
#if RAILWIRE_HAVE_TLS
    return rw_tls_creds_new(o->tls, RW_TLS_CLIENT, out);
#else
    rw_err("connect: TLS options given, but this railwire was built without TLS (OpenSSL 3 "
           "was not found: install libssl-dev and rebuild)");
    return RAILWIRE_E_INVALID;
#endif
}

/* Releases a reference to what tls_creds_make made: the railset's
 * (net_ctx) or the healer's. */
static void tls_creds_free(void *creds)
{
#if RAILWIRE_HAVE_TLS
    rw_tls_creds_unref(creds);
#else
    (void)creds;
#endif
}

/* Another reference to creds (NULL stays NULL), for the healer: its worker
 * may still be in a handshake after the railset has closed. */
static struct rw_tls_creds *tls_creds_ref(struct rw_tls_creds *creds)
{
#if RAILWIRE_HAVE_TLS
    return creds ? rw_tls_creds_ref(creds) : NULL;
#else
    return creds;
#endif
}

static int check_opts(const char *host, const char *port, const railwire_railset_opts *o,
                      railwire_railset **out)
{
    if (!host || !port || !out) {
        rw_err("connect: NULL host, port or out");
        return RAILWIRE_E_INVALID;
    }
    unsigned max = o->dialect == RAILWIRE_DIALECT_RO ? RAILWIRE_MAX_RO_RAILS : RAILWIRE_MAX_RAILS;
    if (o->n_rails == 0 || o->n_rails > max) {
        rw_err("connect: rail count %u is not 1..%u (%s dialect%s)", o->n_rails, max,
               o->dialect == RAILWIRE_DIALECT_RO ? "RO" : "RW",
               o->dialect == RAILWIRE_DIALECT_RO ? ": its framing allows 8; RW allows 255" : "");
        return RAILWIRE_E_INVALID;
    }
    if (o->dialect != RAILWIRE_DIALECT_RO && o->dialect != RAILWIRE_DIALECT_RW) {
        rw_err("connect: unknown dialect %d", (int)o->dialect);
        return RAILWIRE_E_INVALID;
    }
    if (o->heal < 0 || o->heal > 1 || o->heal_backoff_min_ms < 0 || o->heal_backoff_max_ms < 0 ||
        o->heal_stable_ms < 0 || o->all_down_timeout_ms < 0) {
        rw_err("connect: heal must be 0 or 1 and the heal/all-down times >= 0");
        return RAILWIRE_E_INVALID;
    }
    return rw_busy_poll_check("connect", o->busy_poll_us);
}

/* Builds the railset over the rails of opened session `so` (session 0,
 * with so's control connection).  Returns 0 and *out, or an error; so is
 * closed either way (what the railset took over is no longer in it). */
static int railset_of_session(const struct rw_transport_ops *ops, const railwire_railset_opts *o,
                              struct rw_session_out *so, railwire_railset **out)
{
    struct rw_rail_init *init = calloc(so->n_rails, sizeof(*init));
    if (!init) {
        rw_session_close(ops, so);
        rw_err("connect: out of memory");
        return RAILWIRE_E_NOMEM;
    }
    for (unsigned i = 0; i < so->n_rails; i++) {
        init[i].dom = so->dom[i];
        init[i].ep = so->ep[i];
        init[i].remote = so->remote[i];
        init[i].n_remote = so->n_remote;
        init[i].peer = so->peer[i];
    }
    railwire_railset *rs;
    int rc = rw_railset_create_local(ops, o, init, so->n_rails, &rs);
    free(init);
    if (rc < 0) {
        rw_session_close(ops, so);
        return rc;
    }
    /* The railset owns the domains and eps now; the copies of the remote
     * regions are its own. */
    for (unsigned i = 0; i < so->n_rails; i++) {
        so->dom[i] = NULL;
        so->ep[i] = NULL;
    }
    struct rw_rsess *s0 = rs->sessions;
    s0->fd = so->fd;
    s0->had_ctrl = s0->ctrl_up = 1;
    for (unsigned i = 0; i < so->n_rails; i++)
        rs->rails[i].stats.control_up = 1;
    so->fd = -1;
    rw_session_close(ops, so);
    *out = rs;
    return 0;
}

/* Turns healing on for rs with o's healing options.  Returns 0 or an
 * error (logged). */
static int enable_healing(railwire_railset *rs, const char *host, const char *port,
                          const railwire_railset_opts *o, struct rw_tls_creds *tls)
{
    struct rw_heal_cfg hc;
    int rc = heal_cfg(&hc, rs->ops, port, o, rs->n_layers);
    if (rc == 0)
        return rw_heal_enable(rs, host, &hc, rw_heal_open_network, tls_creds_ref(tls),
                              tls ? tls_creds_free : NULL);
    for (unsigned i = 0; i < hc.n_rails; i++) {
        free(hc.local_addr ? hc.local_addr[i] : NULL);
        free(hc.device ? hc.device[i] : NULL);
    }
    free(hc.local_addr);
    free(hc.device);
    rw_err("connect: out of memory");
    return rc;
}

int railwire_railset_connect(const char *host, const char *port, const railwire_railset_opts *o,
                             railwire_railset **out)
{
    railwire_railset_opts mine; /* the caller's options read through struct_size */
    int rc = rw_railset_opts_take(o, &mine);
    if (rc < 0)
        return rc;
    o = &mine;
    rc = check_opts(host, port, o, out);
    if (rc < 0)
        return rc;
    struct rw_session_spec sp = {
        .dialect = o->dialect,
        .host = host,
        .port = port,
        .n_rails = o->n_rails,
        .gid_index = o->gid_index,
        .mtu = o->mtu,
        .queue_depth = o->queue_depth,
        .connect_timeout_ms = o->connect_timeout_ms,
        .io_timeout_ms = o->io_timeout_ms,
        .busy_poll_us = o->busy_poll_us,
    };
    rc = rw_transport_select(o->transport, &sp.ops);
    if (rc < 0)
        return rc;
    /* One set of credentials for the railset: every rail and every heal. */
    rc = tls_creds_make(o, &sp.tls);
    if (rc < 0)
        return rc;
    /* near: the rails' devices or local addresses, nearest the memory
     * (mine then points at plan's strings, for the session and the heals). */
    struct rw_near_plan plan;
    rc = rw_near_plan_make(host, sp.ops, &mine, &plan);
    if (rc < 0) {
        tls_creds_free(sp.tls);
        return rc;
    }
    for (unsigned i = 0; i < o->n_rails; i++) {
        sp.local_addr[i] = o->n_local_addrs ? o->local_addrs[i % o->n_local_addrs] : NULL;
        sp.device[i] = o->n_devices ? o->devices[i % o->n_devices] : NULL;
    }
    struct rw_session_out so;
    rc = rw_session_open(&sp, &so);
    if (rc < 0) {
        rw_near_plan_free(&plan);
        tls_creds_free(sp.tls);
        return rc;
    }

    railwire_railset *rs;
    rc = railset_of_session(sp.ops, o, &so, &rs);
    if (rc < 0) {
        rw_near_plan_free(&plan);
        tls_creds_free(sp.tls);
        return rc;
    }
    rs->near_target = plan.target;
    rs->near_auto = plan.is_auto && plan.target.kind != RW_NEAR_NONE;
    rs->net_ctx = sp.tls;
    rs->net_ctx_free = sp.tls ? tls_creds_free : NULL;
    if (o->heal) {
        rc = enable_healing(rs, host, port, o, sp.tls);
        if (rc < 0) {
            rw_near_plan_free(&plan);
            railwire_railset_close(rs);
            return rc;
        }
    }
    rw_near_plan_free(&plan); /* heal_cfg copied what it needs */
    rw_info("connect: %u %s rail(s) up to %s port %s (%u layer(s)%s)", rs->n_rails, sp.ops->name,
            host, port, rs->n_layers, o->heal ? ", healing on" : "");
    *out = rs;
    return 0;
}
