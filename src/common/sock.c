/* SPDX-License-Identifier: MIT */
/* Control-socket I/O with timeouts (see sock.h). */
#include "common/sock.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include <railwire/error.h>

#define RW_SOCK_DEFAULT_CONNECT_MS 5000
#define RW_SOCK_DEFAULT_IO_MS 10000

char *rw_sockaddr_str(const struct sockaddr *sa, char *buf, size_t cap)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
        snprintf(buf, cap, "%s:%u", host, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
        snprintf(buf, cap, "[%s]:%u", host, port);
    } else {
        snprintf(buf, cap, "?");
    }
    return buf;
}

char *rw_sock_name(int fd, int peer, char *buf, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int rc = peer ? getpeername(fd, (struct sockaddr *)&ss, &sl)
                  : getsockname(fd, (struct sockaddr *)&ss, &sl);
    if (rc < 0) {
        snprintf(buf, cap, "?");
        return buf;
    }
    return rw_sockaddr_str((struct sockaddr *)&ss, buf, cap);
}

char *rw_sock_host(int fd, char *buf, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    buf[0] = '\0';
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
        return buf;
    if (ss.ss_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, buf, (socklen_t)cap);
    else if (ss.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, buf, (socklen_t)cap);
    return buf;
}

unsigned rw_sock_local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return 0;
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -1;
    return 0;
}

/* Waits for `events` on fd; returns 1 ready, 0 timeout, -1 error. */
static int wait_fd(int fd, short events, int ms)
{
    int64_t deadline = rw_now_ms() + ms;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int rc = poll(&p, 1, rw_ms_left(deadline));
        if (rc > 0)
            return 1;
        if (rc == 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

/* One connect attempt; 0 and *fd, or an error (not logged). */
static int try_connect(const struct addrinfo *ai, int ms, int *fd, int *sys_err)
{
    int s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (s < 0) {
        *sys_err = errno;
        return RAILWIRE_E_CONNECT;
    }
    if (set_nonblock(s) < 0) {
        *sys_err = errno;
        close(s);
        return RAILWIRE_E_SYSTEM;
    }
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
        *fd = s;
        return 0;
    }
    if (errno != EINPROGRESS) {
        *sys_err = errno;
        close(s);
        return RAILWIRE_E_CONNECT;
    }
    int w = wait_fd(s, POLLOUT, ms);
    if (w <= 0) {
        *sys_err = w == 0 ? ETIMEDOUT : errno;
        close(s);
        return w == 0 ? RAILWIRE_E_TIMEOUT : RAILWIRE_E_CONNECT;
    }
    int err = 0;
    socklen_t el = sizeof(err);
    if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
        err = errno;
    if (err) {
        *sys_err = err;
        close(s);
        return RAILWIRE_E_CONNECT;
    }
    *fd = s;
    return 0;
}

int rw_sock_connect(const char *host, const char *port, int timeout_ms, int *fd)
{
    if (!host || !port || !fd) {
        rw_err("connect: NULL host, port or fd");
        return RAILWIRE_E_INVALID;
    }
    if (timeout_ms <= 0)
        timeout_ms = RW_SOCK_DEFAULT_CONNECT_MS;
    int64_t deadline = rw_now_ms() + timeout_ms;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0) {
        rw_err("connect: cannot resolve %s port %s: %s; check the host name and port", host, port,
               gai_strerror(g));
        return RAILWIRE_E_CONNECT;
    }
    unsigned n = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
        n++;
    int rc = RAILWIRE_E_CONNECT, sys_err = 0;
    char name[80] = "?";
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next, n--) {
        int left = rw_ms_left(deadline);
        if (left == 0) {
            rc = RAILWIRE_E_TIMEOUT;
            break;
        }
        /* Share what is left among the remaining addresses so one
         * black-holed address cannot starve the others. */
        int slot = n > 1 ? left / (int)n : left;
        rw_sockaddr_str(ai->ai_addr, name, sizeof(name));
        rc = try_connect(ai, slot > 0 ? slot : 1, fd, &sys_err);
        if (rc == 0)
            break;
        rw_debug("connect: %s: %s", name, strerror(sys_err));
    }
    freeaddrinfo(res);
    if (rc == RAILWIRE_E_TIMEOUT)
        rw_err("connect: %s port %s did not answer within %d ms (last tried %s); check that the "
               "host is up and reachable", host, port, timeout_ms, name);
    else if (rc < 0)
        rw_err("connect: cannot connect to %s port %s (last tried %s: %s); check that the server "
               "is listening there and firewalls", host, port, name, strerror(sys_err));
    return rc;
}

int rw_sock_listen_try(const char *host, const char *port, int backlog, int *fd, int *sys_errp)
{
    if (sys_errp)
        *sys_errp = 0;
    if (!port || !fd) {
        rw_err("listen: NULL port or fd");
        return RAILWIRE_E_INVALID;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC,
                             .ai_flags = AI_PASSIVE};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(host && *host ? host : "0.0.0.0", port, &hints, &res);
    if (g != 0) {
        rw_err("listen: cannot resolve %s port %s: %s", host ? host : "0.0.0.0", port,
               gai_strerror(g));
        return RAILWIRE_E_CONNECT;
    }
    int rc = RAILWIRE_E_CONNECT, sys_err = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (s < 0) {
            sys_err = errno;
            continue;
        }
        int one = 1;
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(s, ai->ai_addr, ai->ai_addrlen) < 0 || listen(s, backlog) < 0 ||
            set_nonblock(s) < 0) {
            sys_err = errno;
            close(s);
            continue;
        }
        *fd = s;
        rc = 0;
        break;
    }
    freeaddrinfo(res);
    if (sys_errp)
        *sys_errp = rc < 0 ? sys_err : 0;
    return rc;
}

int rw_sock_listen(const char *host, const char *port, int backlog, int *fd)
{
    int sys_err = 0;
    int rc = rw_sock_listen_try(host, port, backlog, fd, &sys_err);

    if (rc == RAILWIRE_E_CONNECT && sys_err)
        rw_err("listen: cannot listen on %s port %s: %s; check the address and that the port is "
               "free", host ? host : "0.0.0.0", port, strerror(sys_err));
    return rc;
}

void rw_sock_keepalive(int fd, int timeout_ms)
{
    if (timeout_ms <= 0)
        timeout_ms = RW_SOCK_DEFAULT_IO_MS;
    int idle = timeout_ms / 2000 > 0 ? timeout_ms / 2000 : 1;
    int on = 1, intvl = 1, cnt = idle + 1;
    if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) < 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) < 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) < 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) < 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout_ms, sizeof(timeout_ms)) < 0)
        rw_debug("keepalive: setsockopt failed: %s", strerror(errno));
}

int rw_sock_send_all(int fd, const void *buf, size_t len, int timeout_ms)
{
    if (timeout_ms <= 0)
        timeout_ms = RW_SOCK_DEFAULT_IO_MS;
    /* The whole call is bounded: a peer reading a trickle at a time must
     * not stretch it wait after wait. */
    int64_t deadline = rw_now_ms() + timeout_ms;
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int left = rw_ms_left(deadline);
            int w = left > 0 ? wait_fd(fd, POLLOUT, left) : 0;
            if (w == 0) {
                rw_debug("send: %zu bytes still unsent after %d ms", len, timeout_ms);
                return RAILWIRE_E_TIMEOUT;
            }
            if (w < 0)
                return RAILWIRE_E_IO;
            continue;
        }
        rw_debug("send failed: %s", n < 0 ? strerror(errno) : "no progress");
        return RAILWIRE_E_IO;
    }
    return 0;
}

ssize_t rw_sock_recv(int fd, void *buf, size_t cap, int timeout_ms)
{
    if (timeout_ms <= 0)
        timeout_ms = RW_SOCK_DEFAULT_IO_MS;
    int64_t deadline = rw_now_ms() + timeout_ms;
    for (;;) {
        ssize_t n = recv(fd, buf, cap, 0);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            rw_debug("recv failed: %s", strerror(errno));
            return RAILWIRE_E_IO;
        }
        int left = rw_ms_left(deadline);
        if (left == 0)
            return RAILWIRE_E_TIMEOUT;
        int w = wait_fd(fd, POLLIN, left);
        if (w == 0)
            return RAILWIRE_E_TIMEOUT;
        if (w < 0)
            return RAILWIRE_E_IO;
    }
}
