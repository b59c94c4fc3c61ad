/* SPDX-License-Identifier: MIT */
#include "tcp/tcp_sock.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <railwire/error.h>

#include "common/log.h"
#include "common/time.h"
#include "tcp/tcp_addr.h"
#include "tcp/tcp_cc.h"

uint32_t rw_tcp_random32(int nonzero)
{
    static _Atomic uint32_t fallback = 0x9e3779b9u;
    uint32_t v = 0;

    do {
        if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
            /* getrandom cannot fail for 4 bytes once the pool is ready;
             * keep working anyway, loudly. */
            rw_warn_rl("tcp: getrandom failed (%s); using a weaker random source", strerror(errno));
            v = (uint32_t)rw_now_ns() ^ (fallback += 0x9e3779b9u);
            v ^= v >> 16;
            v *= 0x85ebca6bu;
            v ^= v >> 13;
        }
    } while (nonzero && v == 0);
    return v;
}

int rw_tcp_set_nonblock(int fd, int on)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) < 0) {
        rw_err("tcp: fcntl(O_NONBLOCK) failed: %s", strerror(errno));
        return RAILWIRE_E_SYSTEM;
    }
    return 0;
}

static void setopt(int fd, int level, int name, int val, const char *what)
{
    if (setsockopt(fd, level, name, &val, sizeof(val)) < 0)
        rw_warn_rl("tcp: setsockopt(%s=%d) failed: %s", what, val, strerror(errno));
}

void rw_tcp_tune(int fd, int io_timeout_ms, unsigned sockbuf)
{
    int idle = io_timeout_ms / 2000;

    if (idle < 1)
        idle = 1;
    setopt(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
    if (sockbuf) {
        setopt(fd, SOL_SOCKET, SO_SNDBUF, (int)sockbuf, "SO_SNDBUF");
        setopt(fd, SOL_SOCKET, SO_RCVBUF, (int)sockbuf, "SO_RCVBUF");
    }
    setopt(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE");
    setopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, idle, "TCP_KEEPIDLE");
    setopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, 1, "TCP_KEEPINTVL");
    setopt(fd, IPPROTO_TCP, TCP_KEEPCNT, idle + 1, "TCP_KEEPCNT");
    setopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, io_timeout_ms, "TCP_USER_TIMEOUT");
}

void rw_tcp_set_io_timeouts(int fd, int ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
        rw_warn_rl("tcp: setsockopt(SO_SNDTIMEO/SO_RCVTIMEO) failed: %s", strerror(errno));
}

void rw_tcp_abort(int fd)
{
    struct sockaddr sa = {.sa_family = AF_UNSPEC};
    struct linger lg = {.l_onoff = 1, .l_linger = 0};

    /* connect() to AF_UNSPEC disconnects a TCP socket on the spot: its send
     * queue is dropped and the peer gets a reset.  Should the kernel refuse
     * (a thread blocked in the socket), a zero linger drops the queue at
     * the close instead. */
    if (connect(fd, &sa, sizeof(sa)) < 0) {
        rw_debug("tcp: disconnecting a rail socket failed (%s); its queue is dropped at close",
                 strerror(errno));
        if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0)
            rw_warn_rl("tcp: setsockopt(SO_LINGER) failed: %s", strerror(errno));
    }
}

int rw_tcp_connect(const struct sockaddr_storage *local, const struct sockaddr_storage *remote,
                   int timeout_ms, int io_timeout_ms, int *out)
{
    char rbuf[64], lbuf[64];
    int64_t deadline = rw_now_ms() + timeout_ms;
    int fd, err = 0, rc;
    socklen_t elen = sizeof(err);

    rw_tcp_addr_format(remote, 1, rbuf, sizeof(rbuf));
    if (local && !rw_tcp_addr_is_any(local) && local->ss_family != remote->ss_family) {
        rw_tcp_addr_format(local, 0, lbuf, sizeof(lbuf));
        rw_err_rl("tcp: cannot reach %s from local address %s: address families differ; "
               "give a local address of the same family as the server's", rbuf, lbuf);
        return RAILWIRE_E_CONNECT;
    }
    fd = socket(remote->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        rw_err_rl("tcp: socket() failed: %s", strerror(errno));
        return RAILWIRE_E_SYSTEM;
    }
    rw_tcp_tune(fd, io_timeout_ms, RW_TCP_SOCKBUF);
    /* Before connect: a connection that starts under BBR keeps its pacing
     * when moved off it later (tcp_cc.h). */
    rw_tcp_cc_prepare(fd);
    if (local && !rw_tcp_addr_is_any(local)) {
        struct sockaddr_storage l = *local;
        int one = 1;
        rw_tcp_addr_set_port(&l, 0);
        /* Let connect pick the port (any port free for this 4-tuple)
         * instead of bind searching for a port unused by every socket. */
        if (setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one)) < 0)
            rw_debug("tcp: IP_BIND_ADDRESS_NO_PORT unavailable: %s", strerror(errno));
        if (bind(fd, (const struct sockaddr *)&l, rw_tcp_addr_len(&l)) < 0) {
            rw_tcp_addr_format(local, 0, lbuf, sizeof(lbuf));
            rw_err_rl("tcp: bind to local address %s failed: %s; check that this host owns it",
                   lbuf, strerror(errno));
            rc = RAILWIRE_E_CONNECT;
            goto fail;
        }
    }
    if (connect(fd, (const struct sockaddr *)remote, rw_tcp_addr_len(remote)) < 0) {
        if (errno != EINPROGRESS) {
            err = errno;
            goto refused;
        }
        for (;;) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int left = rw_ms_left(deadline);
            int n = poll(&p, 1, left);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                rw_err("tcp: poll() failed while connecting to %s: %s", rbuf, strerror(errno));
                rc = RAILWIRE_E_SYSTEM;
                goto fail;
            }
            if (n == 0) {
                rw_err_rl("tcp: connecting a rail to %s timed out after %d ms; check that the "
                       "server is up and reachable from this rail's local address", rbuf, timeout_ms);
                rc = RAILWIRE_E_TIMEOUT;
                goto fail;
            }
            break;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
            err = errno;
        if (err)
            goto refused;
    }
    *out = fd;
    return 0;

refused:
    rw_err_rl("tcp: connecting a rail to %s failed: %s; check the server address, that it "
           "is still serving this session, and the route from the local address", rbuf, strerror(err));
    rc = RAILWIRE_E_CONNECT;
fail:
    close(fd);
    return rc;
}

static int wait_fd(int fd, short ev, int64_t deadline_ms)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = ev};
        int n = poll(&p, 1, rw_ms_left(deadline_ms));
        if (n > 0)
            return 0;
        if (n == 0)
            return RAILWIRE_E_TIMEOUT;
        if (errno != EINTR)
            return RAILWIRE_E_IO;
    }
}

int rw_tcp_send_deadline(int fd, const void *buf, size_t n, int64_t deadline_ms)
{
    const uint8_t *p = buf;
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = wait_fd(fd, POLLOUT, deadline_ms);
            if (rc)
                return rc;
            continue;
        }
        return RAILWIRE_E_IO;
    }
    return 0;
}

int rw_tcp_recv_deadline(int fd, void *buf, size_t n, int64_t deadline_ms)
{
    uint8_t *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t k = recv(fd, p + got, n - got, MSG_DONTWAIT);
        if (k > 0) {
            got += (size_t)k;
            continue;
        }
        if (k == 0)
            return got ? RAILWIRE_E_IO : RAILWIRE_E_CLOSED;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int rc = wait_fd(fd, POLLIN, deadline_ms);
            if (rc)
                return rc;
            continue;
        }
        return RAILWIRE_E_IO;
    }
    return 0;
}

int rw_tcp_sendv(int fd, struct iovec *iov, int iovcnt, int flags)
{
    while (iovcnt > 0) {
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)iovcnt};
        ssize_t k = sendmsg(fd, &mh, MSG_NOSIGNAL | flags);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return RAILWIRE_E_TIMEOUT;
            return RAILWIRE_E_IO;
        }
        while (iovcnt > 0 && (size_t)k >= iov->iov_len) {
            k -= (ssize_t)iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + k;
            iov->iov_len -= (size_t)k;
        }
    }
    return 0;
}
