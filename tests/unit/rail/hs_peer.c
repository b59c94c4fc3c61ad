/* SPDX-License-Identifier: MIT */
/* Test peers for the handshake driver (hs_peer.h). */
#include "hs_peer.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include "common/sock.h"

int hs_peer_client_flush(struct rw_hs_io *io, struct rw_hs_client *c)
{
    const uint8_t *p;
    size_t n;
    while ((n = rw_hs_client_pending(c, &p)) > 0) {
        int rc = rw_sock_send_all(io->fd, p, n, io->timeout_ms);
        if (rc < 0)
            return rc;
        rw_hs_client_sent(c, n);
    }
    return 0;
}

static int server_flush(struct rw_hs_io *io, struct rw_hs_server *s)
{
    const uint8_t *p;
    size_t n;
    while ((n = rw_hs_server_pending(s, &p)) > 0) {
        int rc = rw_sock_send_all(io->fd, p, n, io->timeout_ms);
        if (rc < 0)
            return rc;
        rw_hs_server_sent(s, n);
    }
    return 0;
}

int hs_peer_server_drive(struct rw_hs_io *io, struct rw_hs_server *s)
{
    for (;;) {
        int rc = server_flush(io, s);
        if (rc < 0)
            return rc;
        if (s->state == RW_HS_FAILED)
            return s->error ? s->error : RAILWIRE_E_PROTOCOL;
        if (s->state != RW_HS_RECV)
            return 0;
        if (io->off == io->len) {
            ssize_t k = rw_sock_recv(io->fd, io->buf, sizeof(io->buf), io->timeout_ms);
            if (k < 0)
                return (int)k;
            if (k == 0)
                return rw_hs_server_eof(s);
            io->off = 0;
            io->len = (size_t)k;
        }
        ssize_t used = rw_hs_server_feed(s, io->buf + io->off, io->len - io->off);
        if (used < 0)
            return (int)used;
        if (used == 0 && s->state == RW_HS_RECV)
            return RAILWIRE_E_STATE;
        io->off += (size_t)used;
    }
}

int hs_peer_accept(int lfd, int timeout_ms)
{
    struct pollfd pfd = {.fd = lfd, .events = POLLIN};
    if (poll(&pfd, 1, timeout_ms) <= 0)
        return -1;
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    return fd;
}
