/* SPDX-License-Identifier: MIT */
/* Client endpoints: identity, the authenticated connect, posting, polling
 * and lifetime.  The I/O runs on the client event loops (tcp_cli_io.c,
 * tcp_cli_rx.c, tcp_cli_loop.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/busy_poll.h"
#include "common/log.h"
#include "common/time.h"
#include "tcp/tcp_addr.h"
#include "tcp/tcp_cc.h"
#include "tcp/tcp_cli_io.h"
#include "tcp/tcp_cli_loop.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_sock.h"

int rw_tcp_cli_ep_create(struct rw_tcp_domain *d, const struct rw_ep_cfg *cfg, struct rw_ep **out)
{
    struct rw_tcp_cli_ep *ep;
    unsigned depth = cfg->depth ? cfg->depth : RW_TCP_DEFAULT_DEPTH;
    uint32_t ring = 1;
    int rc;

    if (depth > d->base.max_qp_wr) {
        rw_err("tcp: ep_create: depth %u exceeds the domain's max_qp_wr %u", depth, d->base.max_qp_wr);
        return RAILWIRE_E_INVALID;
    }
    while (ring < depth)
        ring <<= 1;
    ep = calloc(1, sizeof(*ep));
    if (!ep)
        return RAILWIRE_E_NOMEM;
    ep->ring = calloc(ring, sizeof(*ep->ring));
    if (!ep->ring) {
        rc = RAILWIRE_E_NOMEM;
        goto fail_ep;
    }
    ep->base.dom = &d->base;
    ep->dom = d;
    ep->max_msg = d->base.max_msg;
    ep->io_timeout_ms = d->io_timeout_ms;
    ep->depth = depth;
    ep->lazy_verdict = cfg->lazy_verdict;
    ep->busy_poll_ns = rw_busy_poll_ns(cfg->busy_poll_us);
    ep->set_rails = cfg->set_rails;
    ep->link.place = rw_tcp_cli_pool_place();
    ep->mask = ring - 1;
    ep->fd = -1;
    ep->state = RW_TCP_CLI_NEW;
    ep->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ep->evfd < 0) {
        rw_err("tcp: eventfd() failed: %s", strerror(errno));
        rc = RAILWIRE_E_SYSTEM;
        goto fail_ring;
    }
    if (pthread_mutex_init(&ep->lock, NULL)) {
        rc = RAILWIRE_E_SYSTEM;
        goto fail_evfd;
    }
    rc = rw_tcp_cond_init(&ep->cond);
    if (rc)
        goto fail_lock;
    rc = rw_tcp_cli_wait_init(ep);
    if (rc)
        goto fail_cond;
    ep->base.local.qpn = rw_tcp_random32(1);
    ep->base.local.psn = rw_tcp_random32(0);
    rw_tcp_addr_to_gid(&d->local, ep->base.local.gid);
    if (rw_tcp_addr_is_any(&d->local))
        memset(ep->base.local.gid, 0, sizeof(ep->base.local.gid));
    pthread_mutex_lock(&d->lock);
    d->n_eps++;
    pthread_mutex_unlock(&d->lock);
    *out = &ep->base;
    return 0;

fail_cond:
    pthread_cond_destroy(&ep->cond);
fail_lock:
    pthread_mutex_destroy(&ep->lock);
fail_evfd:
    close(ep->evfd);
fail_ring:
    free(ep->ring);
fail_ep:
    free(ep);
    return rc;
}

/* Connects, sends the hello and reads the verdict.  Returns the connected
 * socket (still non-blocking) in *out. */
static int dial(struct rw_tcp_cli_ep *ep, const struct rw_qp_id *remote, int timeout_ms, int *out)
{
    struct sockaddr_storage ra;
    struct rw_tcp_hello h = {.srv_qpn = remote->qpn, .srv_psn = remote->psn,
                             .cli_qpn = ep->base.local.qpn, .cli_psn = ep->base.local.psn};
    uint8_t hello[RW_TCP_HELLO_SIZE], verdict = RW_TCP_VERDICT_REFUSE;
    int64_t deadline = rw_now_ms() + timeout_ms;
    char rbuf[64];
    int fd, rc;

    rc = rw_tcp_gid_to_addr(remote->gid, (uint16_t)(remote->qpn & 0xffffu), &ra);
    if (rc)
        return rc;
    rw_tcp_addr_format(&ra, 1, rbuf, sizeof(rbuf));
    rc = rw_tcp_connect(&ep->dom->local, &ra, timeout_ms, ep->io_timeout_ms, &fd);
    if (rc)
        return rc;
    rw_tcp_pick_congestion(fd, ep->set_rails);
    rw_tcp_hello_encode(hello, &h);
    if (ep->dom->tls_client) {
        rc = rw_tcp_cli_tls_dial(ep->dom, fd, hello, sizeof(hello), !ep->lazy_verdict, &verdict,
                                 deadline, &ep->tls);
        if (rc) {
            close(fd);
            return rc;
        }
        if (ep->lazy_verdict) {
            *out = fd;
            return 0;
        }
        rc = 0;
    } else {
        rc = rw_tcp_send_deadline(fd, hello, sizeof(hello), deadline);
    }
    if (!rc && ep->lazy_verdict) {
        /* The receive state machine reads the verdict before any response. */
        *out = fd;
        return 0;
    }
    if (!rc && !ep->tls)
        rc = rw_tcp_recv_deadline(fd, &verdict, 1, deadline);
    if (rc == RAILWIRE_E_TIMEOUT) {
        rw_err_rl("tcp: rail to %s: no answer to the hello within %d ms; check that the server "
               "is not overloaded and that the address really is a railwire tcp rail", rbuf, timeout_ms);
    } else if (rc) {
        rw_err_rl("tcp: rail to %s: the server closed the connection without answering the hello; "
               "see the server's log", rbuf);
        rc = RAILWIRE_E_CONNECT;
    } else if (verdict != RW_TCP_VERDICT_OK) {
        rw_err_rl("tcp: rail to %s: the server refused the rail (unknown endpoint or wrong psn); "
               "the remote identity must come from this session's handshake; see the server's log",
               rbuf);
        rc = RAILWIRE_E_REFUSED;
    }
    if (rc) {
        rw_tcp_tls_close(fd, ep->tls);
        ep->tls = NULL;
        return rc;
    }
    *out = fd;
    return 0;
}

/* A client domain bound to no address is named after the address its rail
 * actually left from ("tcp:127.0.0.1" rather than "tcp:0.0.0.0"), so rail
 * stats say which NIC carried it.  Runs before the railset exists, so no
 * reader races the rename. */
static void name_after_local(struct rw_tcp_cli_ep *ep, int fd)
{
    struct sockaddr_storage la;
    socklen_t len = sizeof(la);
    char abuf[sizeof(ep->dom->base.name) - 4];

    if (!rw_tcp_addr_is_any(&ep->dom->local) ||
        getsockname(fd, (struct sockaddr *)&la, &len) != 0)
        return;
    rw_tcp_addr_format(&la, 0, abuf, sizeof(abuf));
    snprintf(ep->dom->base.name, sizeof(ep->dom->base.name), "tcp:%s", abuf);
}

int rw_tcp_cli_ep_connect(struct rw_tcp_cli_ep *ep, const struct rw_qp_id *remote, int timeout_ms)
{
    int fd, rc;

    pthread_mutex_lock(&ep->lock);
    rc = ep->state == RW_TCP_CLI_NEW ? 0 : RAILWIRE_E_STATE;
    pthread_mutex_unlock(&ep->lock);
    if (rc) {
        rw_err("tcp: ep_connect on an endpoint that is already connected or dead");
        return rc;
    }
    rc = dial(ep, remote, timeout_ms > 0 ? timeout_ms : 0, &fd);
    if (rc)
        return rc;
    name_after_local(ep, fd);
    rw_tcp_cli_tls_mode(ep);
    ep->need_verdict = ep->lazy_verdict;
    return rw_tcp_cli_io_start(ep, fd);
}

static int wr_valid(const struct rw_tcp_cli_ep *ep, const struct rw_wr *w)
{
    const uint8_t *lo, *p = w->local;

    if ((w->opcode != RW_OP_READ && w->opcode != RW_OP_WRITE) || w->length == 0 ||
        w->length > ep->max_msg || !w->mr || !p)
        return 0;
    lo = w->mr->addr;
    return p >= lo && (size_t)(p - lo) <= w->mr->len && w->length <= w->mr->len - (size_t)(p - lo);
}

int rw_tcp_cli_ep_post(struct rw_tcp_cli_ep *ep, const struct rw_wr *wrs, size_t n)
{
    size_t room, k, i;

    pthread_mutex_lock(&ep->lock);
    if (ep->state != RW_TCP_CLI_UP) {
        int dead = ep->state == RW_TCP_CLI_DEAD;
        pthread_mutex_unlock(&ep->lock);
        if (!dead)
            rw_err("tcp: ep_post before ep_connect");
        return dead ? RAILWIRE_E_RAIL_DOWN : RAILWIRE_E_STATE;
    }
    room = ep->depth - (size_t)(ep->posted - ep->polled);
    k = n < room ? n : room;
    for (i = 0; i < k; i++) {
        const struct rw_wr *w = &wrs[i];
        struct rw_tcp_slot *s = &ep->ring[(ep->posted + i) & ep->mask];
        struct rw_tcp_req r;

        if (!wr_valid(ep, w)) {
            if (i == 0) {
                pthread_mutex_unlock(&ep->lock);
                rw_err("tcp: ep_post: invalid work request (opcode %d, length %u, local buffer "
                       "must lie inside its MR, length 1..%u)", (int)w->opcode, (unsigned)w->length,
                       (unsigned)ep->max_msg);
                return RAILWIRE_E_INVALID;
            }
            k = i;
            break;
        }
        s->wr = *w;
        r = (struct rw_tcp_req){.op = w->opcode == RW_OP_WRITE ? RW_TCP_OP_WRITE : RW_TCP_OP_READ,
                                .length = w->length, .tag = ep->posted + i,
                                .remote_addr = w->remote_addr, .rkey = w->rkey};
        rw_tcp_req_encode(s->hdr, &r);
    }
    if (k && ep->sent == ep->posted)
        ep->tx_mark_ms = rw_now_ms(); /* the send timeout counts from here */
    ep->posted += k;
    rw_tcp_cli_send_locked(ep, ep->posted - k, k);
    pthread_mutex_unlock(&ep->lock);
    return (int)k;
}

int rw_tcp_cli_ep_poll(struct rw_tcp_cli_ep *ep, struct rw_wc *wcs, int max)
{
    int n = 0;

    pthread_mutex_lock(&ep->lock);
    while (n < max && ep->polled < ep->done) {
        const struct rw_tcp_slot *s = &ep->ring[ep->polled & ep->mask];
        wcs[n++] = (struct rw_wc){.wr_id = s->wr.wr_id, .status = s->status, .byte_len = s->byte_len};
        ep->polled++;
    }
    pthread_mutex_unlock(&ep->lock);
    return n;
}

void rw_tcp_cli_ep_stop(struct rw_tcp_cli_ep *ep)
{
    rw_tcp_cli_ep_kill(ep);
    rw_tcp_cli_loop_detach(ep);
}

void rw_tcp_cli_ep_free(struct rw_tcp_cli_ep *ep)
{
    struct rw_tcp_domain *d = ep->dom;

    rw_tcp_tls_close(ep->fd, ep->tls);
    ep->tls = NULL;
    free(ep->rxs.rx);
    close(ep->wfd);
    close(ep->evfd);
    pthread_cond_destroy(&ep->cond);
    pthread_mutex_destroy(&ep->lock);
    free(ep->ring);
    free(ep);
    pthread_mutex_lock(&d->lock);
    d->n_eps--;
    pthread_mutex_unlock(&d->lock);
}
