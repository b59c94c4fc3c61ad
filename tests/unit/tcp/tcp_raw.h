/* SPDX-License-Identifier: MIT */
/* Raw rail clients for the server-side suites and benchmarks: a plain
 * socket that speaks the rail protocol by hand, so a test can play a
 * client that never reads, or a thousand of them, without client threads.
 * Header-only (static functions): no Criterion dependency. */
#ifndef RW_TESTS_TCP_RAW_H
#define RW_TESTS_TCP_RAW_H

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp/tcp_proto.h"
#include "transport/transport.h"

/* Connects from `src` (NULL: any) to 127.0.0.1:port (blocking) and sends
 * the hello naming `srv` with client identity (cli_qpn, cli_psn).
 * rcvbuf > 0 sets SO_RCVBUF first.  Returns the socket or -1. */
static inline int raw_rail_open(const char *src, uint16_t port, const struct rw_qp_id *srv,
                                uint32_t cli_qpn, uint32_t cli_psn, int rcvbuf)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct rw_tcp_hello h = {.srv_qpn = srv->qpn, .srv_psn = srv->psn, .cli_qpn = cli_qpn,
                             .cli_psn = cli_psn};
    uint8_t buf[RW_TCP_HELLO_SIZE];
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    if (rcvbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    if (src) {
        struct sockaddr_in l = {.sin_family = AF_INET};
        inet_pton(AF_INET, src, &l.sin_addr);
        if (bind(fd, (struct sockaddr *)&l, sizeof(l)) < 0)
            goto fail;
    }
    if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
        goto fail;
    rw_tcp_hello_encode(buf, &h);
    if (send(fd, buf, sizeof(buf), MSG_NOSIGNAL) != (ssize_t)sizeof(buf))
        goto fail;
    return fd;
fail:
    close(fd);
    return -1;
}

/* Waits up to ms for the verdict byte: returns it, -1 on timeout, -2 on EOF. */
static inline int raw_rail_verdict(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    uint8_t v;
    if (poll(&p, 1, ms) != 1)
        return -1;
    return recv(fd, &v, 1, 0) == 1 ? v : -2;
}

/* Sends one request. Returns 0 or -1. */
static inline int raw_rail_request(int fd, uint32_t op, uint32_t len, uint64_t tag, uint64_t addr,
                                   uint32_t rkey)
{
    struct rw_tcp_req r = {.op = op, .length = len, .tag = tag, .remote_addr = addr, .rkey = rkey};
    uint8_t buf[RW_TCP_REQ_SIZE];
    rw_tcp_req_encode(buf, &r);
    return send(fd, buf, sizeof(buf), MSG_NOSIGNAL) == (ssize_t)sizeof(buf) ? 0 : -1;
}

/* Reads exactly n bytes within ms per wait.  Returns 0 or -1. */
static inline int raw_read_all(int fd, void *dst, size_t n, int ms)
{
    uint8_t *p = dst;
    while (n) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        ssize_t k;
        if (poll(&pf, 1, ms) != 1)
            return -1;
        k = recv(fd, p, n, 0);
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Counts this process's threads; *named gets those whose name starts with
 * prefix (the transport names its threads rw-tcp-loopN, rw-tcp-accept). */
static inline int proc_threads(const char *prefix, int *named)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    *named = 0;
    if (!d)
        return -1;
    while ((e = readdir(d))) {
        char path[300], name[64] = "";
        FILE *f;
        if (e->d_name[0] == '.')
            continue;
        n++;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        f = fopen(path, "r");
        if (f) {
            if (fgets(name, sizeof(name), f) && strncmp(name, prefix, strlen(prefix)) == 0)
                (*named)++;
            fclose(f);
        }
    }
    closedir(d);
    return n;
}

/* Open descriptors of this process. */
static inline int proc_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own */
}

/* Resident set size of this process in KiB (VmRSS), or -1. */
static inline long proc_rss_kib(void)
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

#endif
