/* SPDX-License-Identifier: MIT */
/* The accept thread of a server domain: one poll loop over the listening
 * socket, the wake eventfd and every connection still sending its hello.
 * Each pending connection has its own deadline and partial buffer, so a
 * silent or slow client delays nobody; a garbage hello is refused at once. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "tcp/tcp_addr.h"
#include "tcp/tcp_internal.h"

struct pending {
    int fd;
    size_t got;
    int64_t deadline_ms;
    uint8_t buf[RW_TCP_HELLO_SIZE];
};

static void peer_name(int fd, char *buf, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
        ss.ss_family = AF_UNSPEC;
    rw_tcp_addr_format(&ss, 1, buf, cap);
}

/* A whole hello arrived on p->fd: authenticate it and give the connection to
 * its ep, or refuse it. */
static void handle_hello(struct rw_tcp_domain *d, struct pending *p)
{
    struct rw_tcp_hello h;
    char peer[64];

    peer_name(p->fd, peer, sizeof(peer));
    if (rw_tcp_hello_decode(p->buf, &h)) {
        rw_warn("tcp: %s: rail connection from %s does not speak the railwire tcp rail "
                "protocol (bad magic/version); closed", d->base.name, peer);
        rw_tcp_refuse(p->fd);
        return;
    }
    if ((h.srv_qpn & 0xffffu) != rw_tcp_addr_port(&d->local)) {
        rw_warn("tcp: %s: rail connection from %s names qpn 0x%08x of another listener; refused",
                d->base.name, peer, (unsigned)h.srv_qpn);
        rw_tcp_refuse(p->fd);
        return;
    }
    pthread_mutex_lock(&d->lock);
    if (!rw_tcp_srv_offer_locked(d, p->fd, &h))
        rw_warn("tcp: %s: rail connection from %s for qpn 0x%08x refused: unknown endpoint, "
                "wrong psn, or the endpoint already has its connection", d->base.name, peer,
                (unsigned)h.srv_qpn);
    pthread_mutex_unlock(&d->lock);
}

static void accept_new(struct rw_tcp_domain *d, struct pending *pend, int *n_pend)
{
    unsigned evicted = 0;

    for (;;) {
        int fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                rw_warn("tcp: %s: accept failed: %s", d->base.name, strerror(errno));
            if (evicted)
                rw_warn("tcp: %s: %d connections were still sending their hello; closed the "
                        "%u oldest to take new ones (a flood of idle connections?)",
                        d->base.name, RW_TCP_MAX_PENDING, evicted);
            return;
        }
        int slot = *n_pend;
        if (slot >= RW_TCP_MAX_PENDING) {
            /* Full of connections that have not finished their hello: drop
             * the oldest one rather than stop accepting, so a flood of
             * silent connections cannot lock real rails out until it times
             * out (a real client sends its hello right after connecting). */
            slot = 0;
            for (int i = 1; i < *n_pend; i++)
                if (pend[i].deadline_ms < pend[slot].deadline_ms)
                    slot = i;
            close(pend[slot].fd);
            evicted++;
        } else {
            (*n_pend)++;
        }
        pend[slot].fd = fd;
        pend[slot].got = 0;
        pend[slot].deadline_ms = rw_now_ms() + d->io_timeout_ms;
    }
}

/* Reads what p->fd has.  Returns 1 when the entry is finished (handed over
 * or closed) and must be removed. */
static int read_pending(struct rw_tcp_domain *d, struct pending *p)
{
    for (;;) {
        ssize_t k = recv(p->fd, p->buf + p->got, sizeof(p->buf) - p->got, MSG_DONTWAIT);
        if (k > 0) {
            p->got += (size_t)k;
            if (p->got == sizeof(p->buf)) {
                handle_hello(d, p);
                return 1;
            }
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        rw_debug("tcp: %s: a rail connection closed before its hello", d->base.name);
        close(p->fd);
        return 1;
    }
}

void *rw_tcp_accept_main(void *arg)
{
    struct rw_tcp_domain *d = arg;
    static const int base = 2;
    struct pending pend[RW_TCP_MAX_PENDING];
    struct pollfd pfd[RW_TCP_MAX_PENDING + 2];
    int n_pend = 0, i;

    for (;;) {
        int64_t now = rw_now_ms(), next = now + 60000;
        int n;

        for (i = 0; i < n_pend;) {
            if (pend[i].deadline_ms <= now) {
                char peer[64];
                peer_name(pend[i].fd, peer, sizeof(peer));
                rw_warn("tcp: %s: rail connection from %s sent no complete hello within %d ms; closed",
                        d->base.name, peer, d->io_timeout_ms);
                close(pend[i].fd);
                pend[i] = pend[--n_pend];
                continue;
            }
            if (pend[i].deadline_ms < next)
                next = pend[i].deadline_ms;
            i++;
        }
        pfd[0] = (struct pollfd){.fd = d->wake_fd, .events = POLLIN};
        pfd[1] = (struct pollfd){.fd = d->listen_fd, .events = POLLIN};
        for (i = 0; i < n_pend; i++)
            pfd[base + i] = (struct pollfd){.fd = pend[i].fd, .events = POLLIN};
        n = poll(pfd, (nfds_t)(base + n_pend), rw_ms_left(next));
        if (n < 0 && errno != EINTR) {
            rw_err("tcp: %s: poll failed in the accept thread: %s", d->base.name, strerror(errno));
            break;
        }
        if (n <= 0)
            continue;
        if (pfd[0].revents)
            break;
        /* Pending connections first: their pollfd slots match pend[] only
         * until the array changes. */
        for (i = n_pend - 1; i >= 0; i--) {
            if (pfd[base + i].revents && read_pending(d, &pend[i]))
                pend[i] = pend[--n_pend];
        }
        if (pfd[1].revents)
            accept_new(d, pend, &n_pend);
    }
    for (i = 0; i < n_pend; i++)
        close(pend[i].fd);
    return NULL;
}
