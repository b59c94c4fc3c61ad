/* SPDX-License-Identifier: MIT */
/* Server endpoints: identity, matching a client's connection to the ep, and
 * lifetime.  The data path is in tcp_serve.c. */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "tcp/tcp_addr.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_sock.h"

void rw_tcp_refuse(int fd)
{
    uint8_t v = RW_TCP_VERDICT_REFUSE;
    /* Best effort: the socket is fresh, one byte always fits. */
    if (send(fd, &v, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)
        rw_debug("tcp: could not send the refusal verdict: %s", strerror(errno));
    close(fd);
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
                                          .addr = mr->addr};
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
                rw_warn("tcp: %s listens on IPv4 only but the advertised address is IPv6; "
                        "clients will not reach it: listen on :: or a specific address",
                        d->base.name);
        } else {
            struct sockaddr_in *sin = (struct sockaddr_in *)&a;
            rw_warn("tcp: %s listens on a wildcard address and no address to advertise was "
                    "given; advertising 127.0.0.1 (only local clients can connect)", d->base.name);
            memset(&a, 0, sizeof(a));
            sin->sin_family = AF_INET;
            sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        }
    }
    rw_tcp_addr_to_gid(&a, ep->base.local.gid);
}

int rw_tcp_srv_ep_create(struct rw_tcp_domain *d, const struct rw_ep_cfg *cfg, struct rw_ep **out)
{
    struct rw_tcp_srv_ep *ep;
    unsigned i, slot = 0;
    int rc;

    ep = calloc(1, sizeof(*ep));
    if (!ep)
        return RAILWIRE_E_NOMEM;
    ep->base.dom = &d->base;
    ep->dom = d;
    ep->max_msg = d->base.max_msg;
    ep->io_timeout_ms = d->io_timeout_ms;
    ep->parked_fd = -1;
    ep->conn_fd = -1;
    rc = build_keys(ep, cfg);
    if (rc)
        goto fail_ep;
    rc = rw_tcp_cond_init(&ep->cond);
    if (rc)
        goto fail_ep;
    set_gid(ep, cfg);
    ep->base.local.psn = rw_tcp_random32(0);

    pthread_mutex_lock(&d->lock);
    for (i = 0; i < RW_TCP_MAX_SLOTS - 1; i++) {
        unsigned s = (d->next_slot + i) % RW_TCP_MAX_SLOTS;
        if (s != 0 && !d->slots[s]) {
            slot = s;
            break;
        }
    }
    if (slot) {
        d->slots[slot] = ep;
        d->next_slot = slot + 1;
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
fail_ep:
    free(ep->keys);
    free(ep);
    return rc;
}

static int ids_match(const struct rw_qp_id *remote, uint32_t qpn, uint32_t psn)
{
    return remote->qpn == qpn && remote->psn == psn;
}

/* With dom->lock held: accepts fd as this ep's rail connection. */
static int attach_locked(struct rw_tcp_srv_ep *ep, int fd)
{
    uint8_t v = RW_TCP_VERDICT_OK;

    if (send(fd, &v, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1 || rw_tcp_set_nonblock(fd, 0)) {
        rw_warn("tcp: qpn 0x%08x: could not answer the client's hello: %s",
                (unsigned)ep->base.local.qpn, strerror(errno));
        close(fd);
        return RAILWIRE_E_IO;
    }
    rw_tcp_tune(fd, ep->io_timeout_ms);
    rw_tcp_set_io_timeouts(fd, ep->io_timeout_ms);
    ep->conn_fd = fd;
    if (pthread_create(&ep->thread, NULL, rw_tcp_serve_main, ep)) {
        rw_err("tcp: qpn 0x%08x: cannot start the serving thread", (unsigned)ep->base.local.qpn);
        ep->conn_fd = -1;
        close(fd);
        return RAILWIRE_E_SYSTEM;
    }
    ep->thread_started = 1;
    pthread_cond_broadcast(&ep->cond);
    return 0;
}

int rw_tcp_srv_offer_locked(struct rw_tcp_domain *d, int fd, const struct rw_tcp_hello *h)
{
    unsigned slot = h->srv_qpn >> 16;
    struct rw_tcp_srv_ep *ep = slot < RW_TCP_MAX_SLOTS ? d->slots[slot] : NULL;

    if (!ep || ep->killed || ep->base.local.psn != h->srv_psn || ep->conn_fd >= 0 ||
        ep->parked_fd >= 0) {
        rw_tcp_refuse(fd);
        return 0;
    }
    if (ep->have_remote) {
        if (!ids_match(&ep->remote, h->cli_qpn, h->cli_psn)) {
            rw_tcp_refuse(fd);
            return 0;
        }
        return attach_locked(ep, fd) == 0;
    }
    ep->parked_fd = fd;
    ep->parked_qpn = h->cli_qpn;
    ep->parked_psn = h->cli_psn;
    return 1;
}

int rw_tcp_srv_ep_connect(struct rw_tcp_srv_ep *ep, const struct rw_qp_id *remote, int timeout_ms)
{
    struct rw_tcp_domain *d = ep->dom;
    int64_t deadline = rw_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    int rc = 0;

    pthread_mutex_lock(&d->lock);
    if (ep->killed) {
        rc = RAILWIRE_E_STATE;
        rw_err("tcp: qpn 0x%08x: ep_connect on a killed endpoint", (unsigned)ep->base.local.qpn);
        goto out;
    }
    if (ep->conn_fd >= 0) {
        if (!ids_match(&ep->remote, remote->qpn, remote->psn)) {
            rw_err("tcp: qpn 0x%08x: already connected to another client identity",
                   (unsigned)ep->base.local.qpn);
            rc = RAILWIRE_E_STATE;
        }
        goto out;
    }
    ep->remote = *remote;
    ep->have_remote = 1;
    if (ep->parked_fd >= 0) {
        int fd = ep->parked_fd;
        ep->parked_fd = -1;
        if (ids_match(remote, ep->parked_qpn, ep->parked_psn)) {
            attach_locked(ep, fd);
        } else {
            rw_warn("tcp: qpn 0x%08x: a rail connection named this endpoint but not the client "
                    "identity of the handshake (qpn 0x%08x); refused",
                    (unsigned)ep->base.local.qpn, (unsigned)ep->parked_qpn);
            rw_tcp_refuse(fd);
        }
    }
    if (timeout_ms == 0)
        goto out; /* expect mode: the connection attaches whenever it arrives */
    while (ep->conn_fd < 0 && !ep->killed) {
        if (rw_tcp_cond_wait_until(&ep->cond, &d->lock, deadline) == RAILWIRE_E_TIMEOUT)
            break;
    }
    if (ep->conn_fd < 0) {
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
    int join = 0, fd;

    pthread_mutex_lock(&d->lock);
    ep->killed = 1;
    if (ep->parked_fd >= 0) {
        close(ep->parked_fd);
        ep->parked_fd = -1;
    }
    fd = ep->conn_fd;
    if (ep->thread_started && !ep->thread_joined) {
        ep->thread_joined = 1;
        join = 1;
    }
    pthread_cond_broadcast(&ep->cond);
    pthread_mutex_unlock(&d->lock);
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
    if (join)
        pthread_join(ep->thread, NULL);
}

int rw_tcp_srv_ep_liveness(struct rw_tcp_srv_ep *ep)
{
    struct rw_tcp_domain *d = ep->dom;
    int st;

    pthread_mutex_lock(&d->lock);
    if (ep->killed || ep->conn_ended)
        st = RW_EP_DEAD;
    else if (ep->conn_fd >= 0)
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
    if (ep->conn_fd >= 0)
        close(ep->conn_fd);
    pthread_cond_destroy(&ep->cond);
    free(ep->keys);
    free(ep);
}
