/* SPDX-License-Identifier: MIT */
/* TLS on the server's rail connections (docs/tcp-transport.md, "TLS"):
 * the accept thread runs each connection's TLS handshake before it reads
 * the hello (tcp_accept.c); afterwards the verdict byte, the requests and
 * the answers flow inside TLS through the calls below, with recv(2) and
 * sendmsg(2) semantics so that tcp_serve.c's state machine is the same
 * for both.  Without TLS support built in, tls is always NULL. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "tcp/tcp_internal.h"
#if RAILWIRE_HAVE_TLS
#include "tls/tls_conn.h"
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
/* A TLS result in errno terms. */
static ssize_t tls_result(struct rw_tcp_conn *c, ssize_t k)
{
    if (k >= 0)
        return k;
    if (k == RW_TLS_WANT_READ || k == RW_TLS_WANT_WRITE) {
        errno = EAGAIN;
        return -1;
    }
    rw_warn_rl("tcp: qpn 0x%08x: %s", c->ep ? (unsigned)c->ep->base.local.qpn : 0u,
               rw_tls_conn_error(c->tls));
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
#if RAILWIRE_HAVE_TLS
    if (c->tls)
        return tls_result(c, rw_tls_read(c->tls, buf, n));
#endif
    return recv(c->fd, buf, n, MSG_DONTWAIT);
}

ssize_t rw_tcp_conn_sendmsg(struct rw_tcp_conn *c, const struct msghdr *mh, int flags)
{
#if RAILWIRE_HAVE_TLS
    if (c->tls)
        return tls_result(c, rw_tls_writev(c->tls, mh->msg_iov, (int)mh->msg_iovlen));
#endif
    return sendmsg(c->fd, mh, flags);
}
