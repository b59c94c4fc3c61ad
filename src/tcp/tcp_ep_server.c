/* SPDX-License-Identifier: MIT */
/* Server endpoints: identity (a random slot, a random psn), matching a
 * client's connection to the ep, and lifetime.  The data path is in
 * tcp_serve.c, run by the event loops of tcp_loop.c. */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "tcp/tcp_addr.h"
#include "tcp/tcp_budget.h"
#include "tcp/tcp_cc.h"
#include "tcp/tcp_guard.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_loop.h"
#include "tcp/tcp_sock.h"
#include "tcp/tcp_stage.h"

void rw_tcp_refuse(int fd, struct rw_tls_conn *tls)
{
    /* Best effort: the socket is fresh, one byte always fits. */
    if (rw_tcp_send_verdict(fd, tls, RW_TCP_VERDICT_REFUSE) < 0)
        rw_debug("tcp: could not send the refusal verdict: %s", strerror(errno));
    rw_tcp_tls_close(fd, tls);
}

static int key_cmp(const void *a, const void *b)
{
    uint32_t x = ((const struct rw_tcp_key *)a)->rkey, y = ((const struct rw_tcp_key *)b)->rkey;
    return x < y ? -1 : x > y;
}

static int build_keys(struct rw_tcp_srv_ep *ep, const struct rw_ep_cfg *cfg)
{
    size_t i;

    if (!cfg->n_exposed)
        return 0;
    if (!cfg->exposed) {
        rw_err("tcp: ep_create: n_exposed is %zu but exposed is NULL", cfg->n_exposed);
        return RAILWIRE_E_INVALID;
    }
    ep->keys = calloc(cfg->n_exposed, sizeof(*ep->keys));
    if (!ep->keys)
        return RAILWIRE_E_NOMEM;
    for (i = 0; i < cfg->n_exposed; i++) {
        const struct rw_mr *mr = cfg->exposed[i];
        if (!mr || mr->dom != &ep->dom->base) {
            rw_err("tcp: ep_create: exposed region %zu is %s; expose MRs registered on "
                   "this ep's domain (%s)", i, mr ? "registered on another domain" : "NULL",
                   ep->dom->base.name);
            return RAILWIRE_E_INVALID;
        }
        ep->keys[i] = (struct rw_tcp_key){.rkey = mr->rkey, .access = mr->access,
                                          .base = mr->remote_base, .len = mr->len,
                                          .addr = mr->addr, .stage_dev = -1};
        rw_tcp_stage_mr_info(mr, &ep->keys[i].stage_pool, &ep->keys[i].stage_dev);
    }
    ep->n_keys = cfg->n_exposed;
    qsort(ep->keys, ep->n_keys, sizeof(*ep->keys), key_cmp);
    return 0;
}

/* The GID clients connect to: the listener's address, or the advertised
 * one when the listener is a wildcard. */
static void set_gid(struct rw_tcp_srv_ep *ep, const struct rw_ep_cfg *cfg)
{
    struct rw_tcp_domain *d = ep->dom;
    struct sockaddr_storage a = d->local;

    if (rw_tcp_addr_is_any(&d->local)) {
        if (cfg->advertise && (cfg->advertise->ss_family == AF_INET ||
                               cfg->advertise->ss_family == AF_INET6)) {
            a = *cfg->advertise;
            if (a.ss_family == AF_INET6 && d->local.ss_family == AF_INET)
                rw_warn_rl("tcp: %s listens on IPv4 only but the advertised address is IPv6; "
                        "clients will not reach it: listen on :: or a specific address",
                        d->base.name);
        } else {
            struct sockaddr_in *sin = (struct sockaddr_in *)&a;
            rw_warn_rl("tcp: %s listens on a wildcard address and no address to advertise was "
                    "given; advertising 127.0.0.1 (only local clients can connect)", d->base.name);
            memset(&a, 0, sizeof(a));
            sin->sin_family = AF_INET;
            sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        }
    }
    rw_tcp_addr_to_gid(&a, ep->base.local.gid);
}

/* Picks a random free slot (1..65535) with dom->lock held; 0 if none. */
static unsigned pick_slot_locked(struct rw_tcp_domain *d)
{
    unsigned start, i;

    for (i = 0; i < 64; i++) {
        unsigned s = 1 + rw_tcp_random32(0) % (RW_TCP_MAX_SLOTS - 1);
        if (!d->slots[s])
            return s;
    }
    /* nearly full: a linear probe from a random point */
    start = rw_tcp_random32(0) % (RW_TCP_MAX_SLOTS - 1);
    for (i = 0; i < RW_TCP_MAX_SLOTS - 1; i++) {
        unsigned s = 1 + (start + i) % (RW_TCP_MAX_SLOTS - 1);
        if (!d->slots[s])
            return s;
    }
    return 0;
}

int rw_tcp_srv_ep_create(struct rw_tcp_domain *d, const struct rw_ep_cfg *cfg, struct rw_ep **out)
{
    struct rw_tcp_srv_ep *ep;
    unsigned slot;
    int rc, i;

    ep = calloc(1, sizeof(*ep));
    if (!ep)
        return RAILWIRE_E_NOMEM;
    ep->base.dom = &d->base;
    ep->dom = d;
    ep->max_msg = d->base.max_msg;
    ep->io_timeout_ms = d->io_timeout_ms;
    ep->set_rails = cfg->set_rails;
    ep->conn.fd = -1;
    for (i = 0; i < RW_TCP_MAX_PARKED; i++)
        ep->parked_fd[i] = -1;
    rc = build_keys(ep, cfg);
    if (rc)
        goto fail_ep;
    if (cfg->same_session) {
        const struct rw_ep *o = cfg->same_session;
        if (rw_tcp_dom(o->dom)->role != RW_ROLE_SERVER) { /* a tcp ep: tcp_ops.c checked */
            rw_err("tcp: ep_create: same_session names an ep that is not a tcp server ep");
            rc = RAILWIRE_E_INVALID;
            goto fail_ep;
        }
        ep->sess = rw_container_of(o, struct rw_tcp_srv_ep, base)->sess;
        rw_tcp_sess_join(ep->sess);
    } else {
        ep->sess = rw_tcp_sess_new();
        if (!ep->sess) {
            rc = RAILWIRE_E_NOMEM;
            goto fail_ep;
        }
    }
    ep->loop_place = rw_tcp_sess_place(ep->sess);
    rc = rw_tcp_cond_init(&ep->cond);
    if (rc)
        goto fail_sess;
    set_gid(ep, cfg);
    ep->base.local.psn = rw_tcp_random32(0);

    pthread_mutex_lock(&d->lock);
    slot = pick_slot_locked(d);
    if (slot) {
        d->slots[slot] = ep;
        d->n_eps++;
    }
    pthread_mutex_unlock(&d->lock);
    if (!slot) {
        rw_err("tcp: %s has %u endpoints already; no slot left", d->base.name, RW_TCP_MAX_SLOTS - 1);
        rc = RAILWIRE_E_LIMIT;
        goto fail_cond;
    }
    ep->slot = slot;
    ep->base.local.qpn = (uint32_t)slot << 16 | rw_tcp_addr_port(&d->local);
    *out = &ep->base;
    return 0;

fail_cond:
    pthread_cond_destroy(&ep->cond);
fail_sess:
    rw_tcp_sess_leave(ep->sess);
fail_ep:
    free(ep->keys);
    free(ep);
    return rc;
}

/* The whole secret check, in constant time: the hello names this ep's psn
 * and the client identity of the handshake. */
static int hello_matches(const struct rw_tcp_srv_ep *ep, const struct rw_tcp_hello *h)
{
    uint32_t want[3] = {ep->base.local.psn, ep->remote.qpn, ep->remote.psn};
    uint32_t got[3] = {h->srv_psn, h->cli_qpn, h->cli_psn};
    return rw_tcp_ct_equal(want, got, 3);
}

/* With dom->lock held: accepts fd as this ep's rail connection and hands
 * it to an event loop. */
static int attach_locked(struct rw_tcp_srv_ep *ep, int fd, struct rw_tls_conn *tls)
{
    rw_tcp_conn_size_rcvbuf(fd, ep->sess);
    if (rw_tcp_send_verdict(fd, tls, RW_TCP_VERDICT_OK) < 0) {
        rw_warn_rl("tcp: qpn 0x%08x: could not answer the client's hello: %s",
                   (unsigned)ep->base.local.qpn, strerror(errno));
        rw_tcp_tls_close(fd, tls);
        return RAILWIRE_E_IO;
    }
    rw_tcp_tune(fd, ep->io_timeout_ms, 0);
    rw_tcp_pick_server_congestion(fd, ep->set_rails);
    rw_tcp_conn_init(&ep->conn, ep, fd);
    ep->conn.tls = tls;
    if (rw_tcp_loop_add(&ep->conn, &rw_tcp_serve_ops, ep->loop_place)) {
        rw_err("tcp: qpn 0x%08x: no event loop to serve the rail", (unsigned)ep->base.local.qpn);
        rw_tcp_budget_conn_del();
        rw_tcp_tls_close(fd, tls);
        ep->conn.tls = NULL;
        ep->conn.fd = -1;
        return RAILWIRE_E_SYSTEM;
    }
    ep->attached = 1;
    pthread_cond_broadcast(&ep->cond);
    return 0;
}

/* With dom->lock held: refuses a connection whose hello was checked, and
 * counts it against its peer. */
static void refuse_checked(struct rw_tcp_srv_ep *ep, int fd, struct rw_tls_conn *tls,
                           const char *why)
{
    char peer[64];
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
        ss.ss_family = AF_UNSPEC;
    rw_tcp_addr_format(&ss, 1, peer, sizeof(peer));
    rw_warn_rl("tcp: qpn 0x%08x: rail connection from %s refused: %s",
               (unsigned)ep->base.local.qpn, peer, why);
    if (ss.ss_family != AF_UNSPEC && rw_tcp_guard_fail(&ss, rw_now_ms()))
        rw_warn_rl("tcp: %s sent %d refused rail hellos; its rail connections are refused for "
                   "%d s", peer, RW_TCP_LOCKOUT_FAILS, RW_TCP_LOCKOUT_MS / 1000);
    rw_tcp_refuse(fd, tls);
}

int rw_tcp_srv_offer_locked(struct rw_tcp_domain *d, int fd, struct rw_tls_conn *tls,
                            const struct rw_tcp_hello *h)
{
    unsigned slot = h->srv_qpn >> 16;
    struct rw_tcp_srv_ep *ep = slot < RW_TCP_MAX_SLOTS ? d->slots[slot] : NULL;

    /* Nothing below depends on the psn until the client's identity is
     * known: before ep_connect every well-formed hello naming a live ep is
     * parked, right psn or not, and judged only by ep_connect. */
    if (!ep || ep->killed || ep->attached) {
        rw_tcp_refuse(fd, tls);
        return 0;
    }
    if (ep->have_remote) {
        if (!hello_matches(ep, h)) {
            refuse_checked(ep, fd, tls, "wrong psn, or not the client identity of the handshake");
            return 1; /* counted by refuse_checked */
        }
        return attach_locked(ep, fd, tls) == 0;
    }
    if (ep->n_parked == RW_TCP_MAX_PARKED) {
        rw_tcp_refuse(fd, tls);
        return 0;
    }
    ep->parked_fd[ep->n_parked] = fd;
    ep->parked_tls[ep->n_parked] = tls;
    ep->parked[ep->n_parked] = *h;
    ep->n_parked++;
    return 1;
}

int rw_tcp_srv_ep_connect(struct rw_tcp_srv_ep *ep, const struct rw_qp_id *remote, int timeout_ms)
{
    struct rw_tcp_domain *d = ep->dom;
    int64_t deadline = rw_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    int rc = 0, i;

    pthread_mutex_lock(&d->lock);
    if (ep->killed) {
        rc = RAILWIRE_E_STATE;
        rw_err("tcp: qpn 0x%08x: ep_connect on a killed endpoint", (unsigned)ep->base.local.qpn);
        goto out;
    }
    if (ep->attached) {
        if (ep->remote.qpn != remote->qpn || ep->remote.psn != remote->psn) {
            rw_err("tcp: qpn 0x%08x: already connected to another client identity",
                   (unsigned)ep->base.local.qpn);
            rc = RAILWIRE_E_STATE;
        }
        goto out;
    }
    ep->remote = *remote;
    ep->have_remote = 1;
    /* Judge what was parked, oldest first: the first match attaches. */
    for (i = 0; i < ep->n_parked; i++) {
        int fd = ep->parked_fd[i];
        struct rw_tls_conn *tls = ep->parked_tls[i];
        ep->parked_fd[i] = -1;
        ep->parked_tls[i] = NULL;
        if (!ep->attached && hello_matches(ep, &ep->parked[i]))
            attach_locked(ep, fd, tls);
        else if (ep->attached)
            rw_tcp_refuse(fd, tls);
        else
            refuse_checked(ep, fd, tls, "a parked hello named this endpoint with a wrong psn or "
                                   "not the client identity of the handshake");
    }
    ep->n_parked = 0;
    if (timeout_ms == 0)
        goto out; /* expect mode: the connection attaches whenever it arrives */
    while (!ep->attached && !ep->killed) {
        if (rw_tcp_cond_wait_until(&ep->cond, &d->lock, deadline) == RAILWIRE_E_TIMEOUT)
            break;
    }
    if (!ep->attached) {
        ep->have_remote = 0;
        rc = ep->killed ? RAILWIRE_E_CLOSED : RAILWIRE_E_TIMEOUT;
        rw_err("tcp: qpn 0x%08x: no rail connection from the client (qpn 0x%08x) within %d ms; "
               "check the client's log and that it can reach %s", (unsigned)ep->base.local.qpn,
               (unsigned)remote->qpn, timeout_ms, d->base.name);
    }
out:
    pthread_mutex_unlock(&d->lock);
    return rc;
}

void rw_tcp_srv_ep_kill(struct rw_tcp_srv_ep *ep)
{
    struct rw_tcp_domain *d = ep->dom;
    int attached, i;

    pthread_mutex_lock(&d->lock);
    ep->killed = 1;
    for (i = 0; i < ep->n_parked; i++) {
        rw_tcp_tls_close(ep->parked_fd[i], ep->parked_tls[i]);
        ep->parked_tls[i] = NULL;
    }
    ep->n_parked = 0;
    attached = ep->attached;
    pthread_cond_broadcast(&ep->cond);
    pthread_mutex_unlock(&d->lock);
    /* No new connection can attach now (killed); the loop closes the one
     * there is and lets go of it before this returns. */
    if (attached)
        rw_tcp_loop_kill(&ep->conn);
}

int rw_tcp_srv_ep_liveness(struct rw_tcp_srv_ep *ep)
{
    struct rw_tcp_domain *d = ep->dom;
    int st;

    pthread_mutex_lock(&d->lock);
    if (ep->killed || ep->conn_ended)
        st = RW_EP_DEAD;
    else if (ep->attached)
        st = RW_EP_LIVE;
    else
        st = RW_EP_WAITING;
    pthread_mutex_unlock(&d->lock);
    return st;
}

void rw_tcp_srv_ep_destroy(struct rw_tcp_srv_ep *ep)
{
    struct rw_tcp_domain *d = ep->dom;

    rw_tcp_srv_ep_kill(ep);
    pthread_mutex_lock(&d->lock);
    d->slots[ep->slot] = NULL;
    d->n_eps--;
    pthread_mutex_unlock(&d->lock);
    rw_tcp_sess_leave(ep->sess);
    pthread_cond_destroy(&ep->cond);
    free(ep->keys);
    free(ep);
}
