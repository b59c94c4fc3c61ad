/* SPDX-License-Identifier: MIT */
/* TLS on the server's rail connections (docs/tcp-transport.md, "TLS"):
 * the accept thread runs each connection's TLS handshake before it reads
 * the hello (tcp_accept.c); afterwards the verdict byte, the requests and
 * the answers flow inside TLS through the calls below, with recv(2) and
 * sendmsg(2) semantics so that tcp_serve.c's state machine is the same
 * for both.  Without TLS support built in, tls is always NULL. */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <railwire/railset.h>

#include "common/log.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_sock.h"
#if RAILWIRE_HAVE_TLS
#include "tls/tls_conn.h"
#include "tls/tls_creds.h"
#endif

void rw_tcp_tls_close(int fd, struct rw_tls_conn *tls)
{
#if RAILWIRE_HAVE_TLS
    if (tls) {
        rw_tls_conn_shutdown(tls);
        rw_tls_conn_free(tls);
    }
#else
    (void)tls;
#endif
    if (fd >= 0)
        close(fd);
}

#if RAILWIRE_HAVE_TLS
/* A failed TLS read or write: a reset or an end is the rail's ordinary
 * death (logged by whoever reacts to it), anything else (a record that
 * failed authentication, an alert) is worth a warning of its own. */
static void log_tls_failure(struct rw_tls_conn *t, const char *what)
{
    enum rw_tls_reason r = rw_tls_conn_reason(t);
    if (r == RW_TLS_R_IO || r == RW_TLS_R_CLOSED)
        rw_debug_rl("tcp: %s: %s", what, rw_tls_conn_error(t));
    else
        rw_warn_rl("tcp: %s: %s", what, rw_tls_conn_error(t));
}

/* A TLS result in errno terms. */
static ssize_t tls_result(struct rw_tcp_conn *c, ssize_t k)
{
    if (k >= 0)
        return k;
    if (k == RW_TLS_WANT_READ || k == RW_TLS_WANT_WRITE) {
        errno = EAGAIN;
        return -1;
    }
    log_tls_failure(c->tls, "qpn");
    errno = ECONNRESET;
    return -1;
}
#endif

int rw_tcp_send_verdict(int fd, struct rw_tls_conn *tls, uint8_t v)
{
#if RAILWIRE_HAVE_TLS
    if (tls) {
        /* One byte into a fresh TLS connection: the socket takes it now. */
        ssize_t k = rw_tls_write(tls, &v, 1);
        if (k == 1)
            return 0;
        errno = k == RW_TLS_WANT_READ || k == RW_TLS_WANT_WRITE ? EAGAIN : EPROTO;
        return -1;
    }
#else
    (void)tls;
#endif
    return send(fd, &v, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1 ? 0 : -1;
}

ssize_t rw_tcp_conn_recv(struct rw_tcp_conn *c, void *buf, size_t n)
{
    /* A failed socket still hands out what it had queued, but a client
     * resets a rail only when it has given it up with requests unanswered
     * (rw_tcp_abort) and carries them again elsewhere: a WRITE read now
     * would land after the copy that replaced it. */
    if (c->rx_reset) {
        errno = ECONNRESET;
        return -1;
    }
#if RAILWIRE_HAVE_TLS
    if (c->tls) {
        rw_tls_thread_hold_sigpipe(); /* a server loop thread (tcp_serve.c) */
        return tls_result(c, rw_tls_read(c->tls, buf, n));
    }
#endif
    return recv(c->fd, buf, n, MSG_DONTWAIT);
}

ssize_t rw_tcp_conn_sendmsg(struct rw_tcp_conn *c, const struct msghdr *mh, int flags)
{
#if RAILWIRE_HAVE_TLS
    if (c->tls) {
        rw_tls_thread_hold_sigpipe(); /* a server loop thread (tcp_serve.c) */
        return tls_result(c, rw_tls_writev(c->tls, mh->msg_iov, (int)mh->msg_iovlen));
    }
#endif
    return sendmsg(c->fd, mh, flags);
}

/* ---- client rails ---- */

ssize_t rw_tcp_rx_recv(struct rw_tcp_rx *rx, void *buf, size_t n)
{
#if RAILWIRE_HAVE_TLS
    if (rx->tls) {
        rw_tls_thread_hold_sigpipe(); /* the rail's loop thread (tcp_cli_rx.c) */
        ssize_t k = rw_tls_read(rx->tls, buf, n);
        if (k >= 0)
            return k;
        if (k == RW_TLS_WANT_READ || k == RW_TLS_WANT_WRITE) {
            errno = EAGAIN;
            return -1;
        }
        log_tls_failure(rx->tls, "rail");
        errno = ECONNRESET;
        return -1;
    }
#endif
    return recv(rx->fd, buf, n, MSG_DONTWAIT);
}

ssize_t rw_tcp_cli_sendmsg(struct rw_tcp_cli_ep *ep, const struct msghdr *mh)
{
#if RAILWIRE_HAVE_TLS
    if (ep->tls) {
        ssize_t k = rw_tls_writev(ep->tls, mh->msg_iov, (int)mh->msg_iovlen);
        if (k >= 0)
            return k;
        if (k == RW_TLS_WANT_READ || k == RW_TLS_WANT_WRITE) {
            errno = EAGAIN;
            return -1;
        }
        log_tls_failure(ep->tls, "rail");
        errno = ECONNRESET;
        return -1;
    }
#endif
    return sendmsg(ep->fd, mh, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void rw_tcp_domain_tls_client(struct rw_tcp_domain *d, struct rw_tls_creds *c, const char *host)
{
#if RAILWIRE_HAVE_TLS
    d->tls_client = c ? rw_tls_creds_ref(c) : NULL;
    snprintf(d->tls_host, sizeof(d->tls_host), "%s", host ? host : "");
#else
    (void)d, (void)c, (void)host;
#endif
}

void rw_tcp_domain_tls_release(struct rw_tcp_domain *d)
{
#if RAILWIRE_HAVE_TLS
    rw_tls_creds_unref(d->tls_client);
#endif
    d->tls_client = NULL;
}

int rw_tcp_cli_tls_dial(struct rw_tcp_domain *d, int fd, const uint8_t *hello, size_t n,
                        int want_verdict, uint8_t *verdict, int64_t deadline_ms,
                        struct rw_tls_conn **out)
{
    *out = NULL;
#if RAILWIRE_HAVE_TLS
    struct rw_tls_conn *t = NULL;
    int rc = rw_tls_conn_new(d->tls_client, fd, d->tls_host[0] ? d->tls_host : NULL, &t);
    if (rc < 0) {
        rw_err_rl("tcp: %s: cannot start TLS on a rail (%s)", d->base.name,
                  railwire_error_class(rc));
        return rc;
    }
    rc = rw_tls_conn_handshake(t, deadline_ms);
    if (rc == 0)
        rc = rw_tls_write_full(t, hello, n, deadline_ms);
    if (rc == 0 && want_verdict)
        rc = rw_tls_read_full(t, verdict, 1, deadline_ms);
    if (rc < 0) {
        if (rc == RAILWIRE_E_CLOSED)
            rw_err_rl("tcp: rail: the server closed the TLS connection without answering the "
                      "hello; see the server's log");
        else
            rw_err_rl("tcp: rail: %s", rw_tls_conn_error(t));
        rw_tls_conn_free(t);
        return rc == RAILWIRE_E_CLOSED ? RAILWIRE_E_CONNECT : rc;
    }
    /* The exact-length reads are over: the rail's loop reads until
     * would-block from here on. */
    rw_tls_conn_read_ahead(t);
    *out = t;
    return 0;
#else
    (void)d, (void)fd, (void)hello, (void)n, (void)want_verdict, (void)verdict,
        (void)deadline_ms;
    rw_err("tcp: TLS asked for, but this railwire was built without TLS");
    return RAILWIRE_E_INVALID;
#endif
}

void rw_tcp_cli_tls_mode(struct rw_tcp_cli_ep *ep)
{
    ep->base.tls = RAILWIRE_RAIL_TLS_OFF;
    ep->base.tls_ktls = 0;
#if RAILWIRE_HAVE_TLS
    if (!ep->tls)
        return;
    int snd = 0, rcv = 0;
    rw_tls_conn_ktls(ep->tls, &snd, &rcv);
    ep->base.tls_ktls = (snd ? RAILWIRE_KTLS_SEND : 0u) | (rcv ? RAILWIRE_KTLS_RECV : 0u);
    ep->base.tls = ep->base.tls_ktls ? RAILWIRE_RAIL_TLS_KERNEL : RAILWIRE_RAIL_TLS_USER;
#endif
}
