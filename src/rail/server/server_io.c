/* SPDX-License-Identifier: MIT */
/* WIRE.md's bytes on a control connection: plain send/recv, or the same
 * bytes inside TLS when the listener runs it (tls/tls_conn.h), behind one
 * pair of calls so that the handshake state machine does not care.  Also
 * the plain listener's check for a client that speaks TLS to it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "rail/server/server_internal.h"
#if RAILWIRE_HAVE_TLS
#include "tls/tls_conn.h"
#endif

/* A fatal TLS alert record: protocol_version (70), TLS 1.2 record version,
 * as a TLS client expects from a server that will not speak its protocol. */
static const uint8_t alert_protocol_version[7] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46};

#if RAILWIRE_HAVE_TLS
static ssize_t tls_io(struct rw_conn *c, ssize_t k, char *what, size_t cap)
{
    if (k >= 0 || k == RW_TLS_WANT_READ || k == RW_TLS_WANT_WRITE)
        return k; /* the WANT values are the same numbers */
    snprintf(what, cap, "%s", rw_tls_conn_error(c->tls));
    return k;
}
#endif

ssize_t rw_conn_send(struct rw_conn *c, const void *p, size_t n, char *what, size_t cap)
{
#if RAILWIRE_HAVE_TLS
    if (c->tls)
        return tls_io(c, rw_tls_write(c->tls, p, n), what, cap);
#endif
    for (;;) {
        ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k > 0)
            return k;
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return RW_CONN_WANT_WRITE;
        snprintf(what, cap, "sending to it failed: %s", k < 0 ? strerror(errno) : "no progress");
        return RAILWIRE_E_IO;
    }
}

ssize_t rw_conn_recv(struct rw_conn *c, void *p, size_t n, char *what, size_t cap)
{
#if RAILWIRE_HAVE_TLS
    if (c->tls)
        return tls_io(c, rw_tls_read(c->tls, p, n), what, cap);
#endif
    for (;;) {
        ssize_t k = recv(c->fd, p, n, MSG_DONTWAIT);
        if (k >= 0)
            return k;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return RW_CONN_WANT_READ;
        snprintf(what, cap, "receiving failed: %s", strerror(errno));
        return RAILWIRE_E_IO;
    }
}

int rw_conn_plain_sniff(struct rw_conn *c)
{
    uint8_t head[2];
    if (c->tls || c->step != 0)
        return 0;
    ssize_t k = recv(c->fd, head, sizeof(head), MSG_PEEK | MSG_DONTWAIT);
    /* A legitimate client sends its request byte alone and waits for the
     * params: two bytes 0x16 0x03 at once are a TLS ClientHello. */
    if (k < 2 || head[0] != 0x16 || head[1] != 0x03)
        return 0;
    rw_srv_count(c->srv, RW_ST(tls_at_plain), 1);
    rw_srv_count(c->srv, RW_ST(handshake_failures), 1);
    rw_warn_rl("server: client %s: TLS: the client speaks TLS but this listener is plain; "
               "start the server with TLS (--tls-cert/--tls-key/--tls-ca or --tls-psk) or "
               "connect without TLS; closing", c->name);
    /* The alert tells a TLS client at once, in TLS terms, instead of a bare
     * end of stream. */
    if (send(c->fd, alert_protocol_version, sizeof(alert_protocol_version),
             MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        rw_debug("server: client %s: the TLS alert was not sent: %s", c->name, strerror(errno));
    return 1;
}
