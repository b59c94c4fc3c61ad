/* SPDX-License-Identifier: MIT */
/* The handshake driver: state machines over a socket (see handshake_drive.h). */
#include "rail/session/handshake_drive.h"

#include "common/log.h"
#include "common/time.h"
#include "common/sock.h"
#if RAILWIRE_HAVE_TLS
#include "tls/tls_conn.h"
#endif

void rw_hs_io_init(struct rw_hs_io *io, int fd, int timeout_ms)
{
    io->fd = fd;
    io->tls = NULL;
    io->first_seen = 0;
    io->timeout_ms = timeout_ms > 0 ? timeout_ms : 10000;
    io->off = io->len = 0;
    rw_sock_name(fd, 1, io->peer, sizeof(io->peer));
}

/* Makes sure unconsumed bytes exist.  Returns 1, 0 at a clean end of
 * stream, or the socket error (logged with `who`). */
static int fill(struct rw_hs_io *io, const char *who, int64_t deadline)
{
    if (io->off < io->len)
        return 1;
    int left = rw_ms_left(deadline);
    ssize_t n;
#if RAILWIRE_HAVE_TLS
    if (io->tls)
        n = left > 0 ? rw_tls_recv_some(io->tls, io->buf, sizeof(io->buf), deadline)
                     : RAILWIRE_E_TIMEOUT;
    else
#endif
        n = left > 0 ? rw_sock_recv(io->fd, io->buf, sizeof(io->buf), left)
                     : RAILWIRE_E_TIMEOUT;
    if (n > 0) {
        io->off = 0;
        io->len = (size_t)n;
        return 1;
    }
#if RAILWIRE_HAVE_TLS
    if (io->tls && n < 0 && n != RAILWIRE_E_TIMEOUT) {
        rw_err("handshake: %s", rw_tls_conn_error(io->tls));
        return (int)n;
    }
#endif
    if (n == 0)
        return 0;
    const char *peer = io->peer;
    if (n == RAILWIRE_E_TIMEOUT)
        rw_err("handshake: %s %s did not send its message within %d ms; check that it is a "
               "railwire peer of the same dialect and not overloaded", who, peer, io->timeout_ms);
    else
        rw_err("handshake: connection to %s %s failed (%s); check the peer's log", who, peer,
               railwire_error_class((int)n));
    return (int)n;
}

static int send_pending(struct rw_hs_io *io, const uint8_t *p, size_t n, const char *who,
                        int64_t deadline)
{
    int left = rw_ms_left(deadline);
    int rc;
#if RAILWIRE_HAVE_TLS
    if (io->tls)
        rc = left > 0 ? rw_tls_write_full(io->tls, p, n, deadline) : RAILWIRE_E_TIMEOUT;
    else
#endif
        rc = left > 0 ? rw_sock_send_all(io->fd, p, n, left) : RAILWIRE_E_TIMEOUT;
    if (rc < 0) {
        const char *peer = io->peer;
        rw_err("handshake: sending %zu bytes to %s %s failed (%s)", n, who, peer,
               railwire_error_class(rc));
    }
    return rc;
}

static int client_flush(struct rw_hs_io *io, struct rw_hs_client *c, int64_t deadline)
{
    const uint8_t *p;
    size_t n;
    while ((n = rw_hs_client_pending(c, &p)) > 0) {
        int rc = send_pending(io, p, n, "server", deadline);
        if (rc < 0)
            return rc;
        rw_hs_client_sent(c, n);
    }
    return 0;
}

int rw_hs_client_drive(struct rw_hs_io *io, struct rw_hs_client *c)
{
    const char *peer = io->peer;
    int64_t deadline = rw_now_ms() + io->timeout_ms;
    for (;;) {
        int rc = client_flush(io, c, deadline);
        if (rc < 0)
            return rc;
        switch (c->state) {
        case RW_HS_NEED_LOCAL:
        case RW_HS_DONE:
            return 0;
        case RW_HS_FAILED:
            return c->error ? c->error : RAILWIRE_E_PROTOCOL;
        case RW_HS_RECV:
            break;
        case RW_HS_SEND: /* nothing pending yet SEND: a state machine bug */
        default:
            rw_err("handshake: client state machine in unexpected state %d", (int)c->state);
            return RAILWIRE_E_STATE;
        }
        rc = fill(io, "server", deadline);
        if (rc < 0)
            return rc;
        if (rc == 0) {
            int e = rw_hs_client_eof(c);
            if (e == 0)
                return 0;
            if (e == RAILWIRE_E_PEER_REJECTED)
                rw_err("handshake: server %s closed the connection before sending its params: it "
                       "rejected this client (rail count, dialect or a cap); the reason is in the "
                       "server's log", peer);
            else
                rw_err("handshake: server %s closed the connection in the middle of a message "
                       "(%s); check that it speaks the same dialect and its log", peer,
                       railwire_error_class(e));
            return e;
        }
#if RAILWIRE_HAVE_TLS
        /* A plain client at a TLS listener reads the server's TLS alert:
         * a first byte that is not the rail count asked for (which the
         * decoder would refuse anyway) and starts a TLS record says so. */
        if (!io->tls && !io->first_seen && io->buf[io->off] != c->n_rails &&
            rw_tls_sniff_record(io->buf + io->off, io->len - io->off) == RW_TLS_SNIFF_TLS) {
            rw_err("handshake: server %s: %s", peer, RW_TLS_MSG_PLAIN_AT_TLS);
            return RAILWIRE_E_TLS;
        }
#endif
        io->first_seen = 1;
        ssize_t used = rw_hs_client_feed(c, io->buf + io->off, io->len - io->off);
        if (used < 0) {
            if (used == RAILWIRE_E_REFUSED)
                rw_err("handshake: server %s refused the rails (ack %d); the reason is in the "
                       "server's log", peer, c->refused_status);
            else
                rw_err("handshake: server %s sent an invalid reply: %s (%s)", peer,
                       railwire_error_class((int)used), railwire_strerror((int)used));
            return (int)used;
        }
        if (used == 0 && c->state == RW_HS_RECV) {
            rw_err("handshake: client state machine consumed nothing; giving up");
            return RAILWIRE_E_STATE;
        }
        io->off += (size_t)used;
    }
}
