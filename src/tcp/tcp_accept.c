/* SPDX-License-Identifier: MIT */
/* The accept thread of a server domain: one poll loop over the listening
 * socket, the wake eventfd and every connection still sending its hello.
 * Each pending connection has its own deadline and partial buffer, so a
 * silent or slow client delays nobody; a garbage hello is refused at once.
 * A locked-out peer (tcp_guard.h) is refused at accept, its hello unread.
 * When accept4 fails for lack of descriptors or memory, the listener is not
 * polled for a while (100 ms, doubling to 1 s) instead of spinning. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "tcp/tcp_addr.h"
#include "tcp/tcp_guard.h"
#include "tcp/tcp_internal.h"
#if RAILWIRE_HAVE_TLS
#include "tls/tls_conn.h"
#include "tls/tls_creds.h"
#endif

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 1000
#define FAULT_LOG_MS 1000 /* at most one accept-fault line per this interval */

struct pending {
    int fd;
    struct rw_tls_conn *tls;  /* owned: TLS runs before the hello (NULL: plain) */
    int hs_done;              /* the TLS handshake is complete */
    short events;             /* what poll waits for */
    size_t got;
    int64_t deadline_ms;
    uint8_t buf[RW_TCP_HELLO_SIZE];
};

struct acceptor {
    struct rw_tcp_domain *d;
    struct pending pend[RW_TCP_MAX_PENDING];
    int n_pend;
    int64_t paused_until_ms;     /* listener not polled before this */
    int backoff_ms;
    unsigned long faults;        /* accept faults since the last line logged */
    int64_t fault_logged_ms;
    int last_errno;
};

/* Counts a refused hello against the peer ss (unless unknown). */
static void count_failure(struct rw_tcp_domain *d, const struct sockaddr_storage *ss,
                          const char *peer)
{
    if (ss->ss_family != AF_UNSPEC && rw_tcp_guard_fail(ss, rw_now_ms()))
        rw_warn_rl("tcp: %s: %s sent %d refused rail hellos; its rail connections are refused "
                   "for %d s", d->base.name, peer, RW_TCP_LOCKOUT_FAILS, RW_TCP_LOCKOUT_MS / 1000);
}

/* A new connection on a TLS domain gets its TLS state (NULL on a plain
 * one).  Returns 0, or -1 after closing fd. */
static int start_tls(struct rw_tcp_domain *d, int fd, struct rw_tls_conn **out)
{
    *out = NULL;
#if RAILWIRE_HAVE_TLS
    if (!d->tls_server)
        return 0;
    struct rw_tls_creds *cr = rw_tls_slot_get(d->tls_server);
    int rc = rw_tls_conn_new(cr, fd, NULL, out);
    rw_tls_creds_unref(cr);
    if (rc < 0) {
        *out = NULL;
        rw_warn_rl("tcp: %s: cannot start TLS on a rail connection (%s); closed", d->base.name,
                   railwire_error_class(rc));
        close(fd);
        return -1;
    }
#else
    (void)d, (void)fd;
#endif
    return 0;
}

/* Runs p's TLS handshake as far as the socket allows.  Returns 0 when the
 * hello may be read now (or TLS is off), -1 while the handshake waits
 * (p->events set), 1 when the connection failed and was closed. */
static int tls_pending(struct rw_tcp_domain *d, struct pending *p)
{
#if RAILWIRE_HAVE_TLS
    if (!p->tls || p->hs_done)
        return 0;
    int rc = rw_tls_conn_handshake_step(p->tls);
    if (rc == RW_TLS_WANT_READ || rc == RW_TLS_WANT_WRITE) {
        p->events = rc == RW_TLS_WANT_WRITE ? POLLOUT : POLLIN;
        return -1;
    }
    if (rc < 0) {
        enum rw_tls_reason r = rw_tls_conn_reason(p->tls);
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        char peer[64];
        if (getpeername(p->fd, (struct sockaddr *)&ss, &len) < 0)
            ss.ss_family = AF_UNSPEC;
        rw_tcp_addr_format(&ss, 1, peer, sizeof(peer));
        rw_warn_rl("tcp: %s: rail connection: %s; closed", d->base.name,
                   rw_tls_conn_error(p->tls));
        if (r != RW_TLS_R_TIMEOUT && r != RW_TLS_R_CLOSED && r != RW_TLS_R_IO)
            count_failure(d, &ss, peer); /* wrong credentials count like wrong hellos */
        rw_tcp_tls_close(p->fd, p->tls);
        return 1;
    }
    p->hs_done = 1;
    p->events = POLLIN;
#else
    (void)d, (void)p;
#endif
    return 0;
}

/* recv(2) of the hello's bytes, inside TLS when it runs: -1 with errno
 * EAGAIN when nothing is there, -2 when TLS must write first. */
static ssize_t pending_recv(struct pending *p)
{
#if RAILWIRE_HAVE_TLS
    if (p->tls) {
        ssize_t k = rw_tls_read(p->tls, p->buf + p->got, sizeof(p->buf) - p->got);
        if (k == RW_TLS_WANT_READ || k == RW_TLS_WANT_WRITE) {
            p->events = k == RW_TLS_WANT_WRITE ? POLLOUT : POLLIN;
            errno = EAGAIN;
            return k == RW_TLS_WANT_WRITE ? -2 : -1;
        }
        if (k < 0) {
            errno = ECONNRESET;
            return -1;
        }
        return k;
    }
#endif
    return recv(p->fd, p->buf + p->got, sizeof(p->buf) - p->got, MSG_DONTWAIT);
}

/* A whole hello arrived on p->fd: give the connection to its ep (attached,
 * parked or refused there), or refuse it. */
static void handle_hello(struct rw_tcp_domain *d, struct pending *p)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    struct rw_tcp_hello h;
    char peer[64];
    int ok;

    if (getpeername(p->fd, (struct sockaddr *)&ss, &len) < 0)
        ss.ss_family = AF_UNSPEC;
    rw_tcp_addr_format(&ss, 1, peer, sizeof(peer));
    if (rw_tcp_hello_decode(p->buf, &h)) {
        rw_warn_rl("tcp: %s: rail connection from %s does not speak the railwire tcp rail "
                   "protocol (bad magic/version); closed", d->base.name, peer);
        rw_tcp_refuse(p->fd, p->tls);
        count_failure(d, &ss, peer);
        return;
    }
    if ((h.srv_qpn & 0xffffu) != rw_tcp_addr_port(&d->local)) {
        rw_warn_rl("tcp: %s: rail connection from %s names qpn 0x%08x of another listener; "
                   "refused", d->base.name, peer, (unsigned)h.srv_qpn);
        rw_tcp_refuse(p->fd, p->tls);
        count_failure(d, &ss, peer);
        return;
    }
#if RAILWIRE_HAVE_TLS
    /* The hello was the last exact-length read: the ep's loop reads until
     * would-block, so records may be read ahead from here on. */
    if (p->tls)
        rw_tls_conn_read_ahead(p->tls);
#endif
    pthread_mutex_lock(&d->lock);
    ok = rw_tcp_srv_offer_locked(d, p->fd, p->tls, &h);
    pthread_mutex_unlock(&d->lock);
    if (!ok) {
        rw_warn_rl("tcp: %s: rail connection from %s for qpn 0x%08x refused: unknown endpoint, "
                   "or the endpoint already has its connection", d->base.name, peer,
                   (unsigned)h.srv_qpn);
        count_failure(d, &ss, peer);
    }
}

/* accept4 failed with errno e for want of a resource: pause the listener. */
static void accept_fault(struct acceptor *a, int e, int64_t now)
{
    a->backoff_ms = a->backoff_ms ? a->backoff_ms * 2 : BACKOFF_MIN_MS;
    if (a->backoff_ms > BACKOFF_MAX_MS)
        a->backoff_ms = BACKOFF_MAX_MS;
    a->paused_until_ms = now + a->backoff_ms;
    a->faults++;
    a->last_errno = e;
    if (now - a->fault_logged_ms >= FAULT_LOG_MS) {
        rw_warn("tcp: %s: cannot accept rail connections: %s (%lu time(s) since the last such "
                "line); not accepting for %d ms; raise the process's file descriptor limit "
                "(ulimit -n, LimitNOFILE=) or free memory", a->d->base.name, strerror(e),
                a->faults, a->backoff_ms);
        a->faults = 0;
        a->fault_logged_ms = now;
    }
}

static void accept_new(struct acceptor *a)
{
    struct rw_tcp_domain *d = a->d;
    unsigned evicted = 0, locked = 0;

    for (;;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int64_t now;
        int fd = accept4(d->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            int e = errno;
            if (e == EINTR || e == ECONNABORTED)
                continue;
            if (e == EMFILE || e == ENFILE || e == ENOMEM || e == ENOBUFS)
                accept_fault(a, e, rw_now_ms());
            else if (e != EAGAIN && e != EWOULDBLOCK)
                rw_warn_rl("tcp: %s: accept failed: %s", d->base.name, strerror(e));
            break;
        }
        a->backoff_ms = 0;
        now = rw_now_ms();
        if (rw_tcp_guard_locked(&ss, now)) {
            locked++;
            rw_tcp_refuse(fd, NULL);
            continue;
        }
        struct rw_tls_conn *tls = NULL;
        if (start_tls(d, fd, &tls) < 0)
            continue;
        int slot = a->n_pend;
        if (slot >= RW_TCP_MAX_PENDING) {
            /* Full of connections that have not finished their hello: drop
             * the oldest one rather than stop accepting, so a flood of
             * silent connections cannot lock real rails out until it times
             * out (a real client sends its hello right after connecting). */
            slot = 0;
            for (int i = 1; i < a->n_pend; i++)
                if (a->pend[i].deadline_ms < a->pend[slot].deadline_ms)
                    slot = i;
            rw_tcp_tls_close(a->pend[slot].fd, a->pend[slot].tls);
            evicted++;
        } else {
            a->n_pend++;
        }
        a->pend[slot].fd = fd;
        a->pend[slot].tls = tls;
        a->pend[slot].hs_done = 0;
        a->pend[slot].events = POLLIN;
        a->pend[slot].got = 0;
        a->pend[slot].deadline_ms = now + d->io_timeout_ms;
    }
    if (evicted)
        rw_warn_rl("tcp: %s: %d connections were still sending their hello; closed the %u "
                   "oldest to take new ones (a flood of idle connections?)", d->base.name,
                   RW_TCP_MAX_PENDING, evicted);
    if (locked)
        rw_warn_rl("tcp: %s: refused %u rail connection(s) from locked-out peers (too many wrong "
                   "hellos)", d->base.name, locked);
}

/* Reads what p->fd has.  Returns 1 when the entry is finished (handed over
 * or closed) and must be removed. */
static int read_pending(struct rw_tcp_domain *d, struct pending *p)
{
    int rc = tls_pending(d, p);
    if (rc)
        return rc > 0;
    for (;;) {
        ssize_t k = pending_recv(p);
        if (k == -2)
            return 0; /* TLS wants to write first: p->events says so */
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
        rw_debug_rl("tcp: %s: a rail connection closed before its hello", d->base.name);
        rw_tcp_tls_close(p->fd, p->tls);
        return 1;
    }
}

void *rw_tcp_accept_main(void *arg)
{
    static const int base = 2;
    struct pollfd pfd[RW_TCP_MAX_PENDING + 2];
    struct acceptor *a = calloc(1, sizeof(*a));
    struct rw_tcp_domain *d = arg;
    int i;

    pthread_setname_np(pthread_self(), "rw-tcp-accept");
    if (!a) {
        rw_err("tcp: %s: out of memory starting the accept thread; no rail can attach",
               d->base.name);
        return NULL;
    }
    a->d = d;
    a->fault_logged_ms = rw_now_ms() - FAULT_LOG_MS;
    for (;;) {
        int64_t now = rw_now_ms(), next = now + 60000;
        int n, listen_on = now >= a->paused_until_ms;

        for (i = 0; i < a->n_pend;) {
            struct pending *p = &a->pend[i];
            if (p->deadline_ms <= now) {
                char peer[64];
                struct sockaddr_storage ss;
                socklen_t sl = sizeof(ss);
                if (getpeername(p->fd, (struct sockaddr *)&ss, &sl) < 0)
                    ss.ss_family = AF_UNSPEC;
                rw_tcp_addr_format(&ss, 1, peer, sizeof(peer));
                rw_warn_rl("tcp: %s: rail connection from %s sent no complete %shello within %d "
                           "ms; closed", d->base.name, peer,
                           p->tls && !p->hs_done ? "TLS handshake and " : "", d->io_timeout_ms);
                rw_tcp_tls_close(p->fd, p->tls);
                *p = a->pend[--a->n_pend];
                continue;
            }
            if (p->deadline_ms < next)
                next = p->deadline_ms;
            i++;
        }
        if (!listen_on && a->paused_until_ms < next)
            next = a->paused_until_ms;
        pfd[0] = (struct pollfd){.fd = d->wake_fd, .events = POLLIN};
        /* a negative fd is ignored by poll: the listener rests */
        pfd[1] = (struct pollfd){.fd = listen_on ? d->listen_fd : -1, .events = POLLIN};
        for (i = 0; i < a->n_pend; i++)
            pfd[base + i] = (struct pollfd){.fd = a->pend[i].fd, .events = a->pend[i].events};
        n = poll(pfd, (nfds_t)(base + a->n_pend), rw_ms_left(next));
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
        for (i = a->n_pend - 1; i >= 0; i--) {
            if (pfd[base + i].revents && read_pending(d, &a->pend[i]))
                a->pend[i] = a->pend[--a->n_pend];
        }
        if (listen_on && pfd[1].revents)
            accept_new(a);
    }
    for (i = 0; i < a->n_pend; i++)
        rw_tcp_tls_close(a->pend[i].fd, a->pend[i].tls);
    free(a);
    return NULL;
}
