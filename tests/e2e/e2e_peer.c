/* SPDX-License-Identifier: MIT */
#include "e2e/e2e_peer.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int listen_loopback(int backlog, unsigned *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    cr_assert_geq(fd, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(fd, backlog), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static int connect_loopback(const char *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)atoi(port))};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads exactly n bytes within 10 s; returns 0 or -1. */
static int read_full(int fd, uint8_t *b, size_t n)
{
    while (n) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t k;
        if (poll(&p, 1, 10000) <= 0)
            return -1;
        k = recv(fd, b, n, 0);
        if (k <= 0)
            return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

static int write_full(int fd, const uint8_t *b, size_t n)
{
    while (n) {
        ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
        if (k <= 0)
            return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Waits up to 10 s for a connection. */
static int accept_one(int lfd)
{
    struct pollfd p = {.fd = lfd, .events = POLLIN};

    if (poll(&p, 1, 10000) <= 0)
        return -1;
    return accept(lfd, NULL, NULL);
}

/* WIRE.md: u8 n | n x (RO: 28 + 12 * n_layers bytes, RW: 36 bytes). */
static size_t reply_len(const struct e2e_peer *p, unsigned n)
{
    size_t per = p->dialect == RAILWIRE_DIALECT_RO ? 28u + 12u * p->n_layers : 36u;
    return 1 + (size_t)n * per;
}

static void relay_refuse(struct e2e_peer *p, int cfd)
{
    uint8_t buf[1 + 8 * (28 + 12 * 16)];
    uint8_t req, ack;
    int sfd = connect_loopback(p->real_port);
    size_t rl;

    if (sfd < 0)
        return;
    if (read_full(cfd, &req, 1) || write_full(sfd, &req, 1))
        goto out;
    rl = reply_len(p, req);
    if (rl > sizeof(buf) || read_full(sfd, buf, rl) || write_full(cfd, buf, rl))
        goto out;
    /* the client's second message: u8 n | n x 24 bytes */
    if (read_full(cfd, buf, 1 + 24u * req) || write_full(sfd, buf, 1 + 24u * req))
        goto out;
    if (read_full(sfd, &ack, 1))
        goto out;
    ack = 1; /* STATUS_ERR instead of what the server said */
    write_full(cfd, &ack, 1);
    /* Hold until the client closes. */
    read_full(cfd, buf, 1);
out:
    close(sfd);
}

static void *peer_main(void *arg)
{
    struct e2e_peer *p = arg;
    int cfd = accept_one(p->lfd);
    uint8_t b;

    if (cfd < 0)
        return NULL;
    switch (p->kind) {
    case E2E_PEER_CLOSE_EARLY:
        read_full(cfd, &b, 1);
        break;
    case E2E_PEER_SILENT: {
        /* Read what comes, answer nothing, until the client gives up. */
        uint8_t junk[64];
        struct pollfd pf = {.fd = cfd, .events = POLLIN};
        while (poll(&pf, 1, 15000) > 0 && recv(cfd, junk, sizeof(junk), 0) > 0)
            ;
        break;
    }
    case E2E_PEER_ACK_REFUSE:
        relay_refuse(p, cfd);
        break;
    case E2E_PEER_BACKLOG_FULL:
        break;
    }
    close(cfd);
    p->served = 1;
    return NULL;
}

void e2e_peer_start(struct e2e_peer *p, enum e2e_peer_kind kind, const char *real_port,
                    enum railwire_dialect dialect, unsigned n_layers)
{
    unsigned port;

    memset(p, 0, sizeof(*p));
    p->kind = kind;
    p->filler_fd = -1;
    p->real_port = real_port;
    p->dialect = dialect;
    p->n_layers = n_layers;
    p->lfd = listen_loopback(kind == E2E_PEER_BACKLOG_FULL ? 0 : 8, &port);
    snprintf(p->port, sizeof(p->port), "%u", port);
    if (kind == E2E_PEER_BACKLOG_FULL) {
        /* One connection that is never accepted fills a backlog of 0; later
         * SYNs are dropped by the kernel. */
        p->filler_fd = connect_loopback(p->port);
        cr_assert_geq(p->filler_fd, 0);
        return;
    }
    cr_assert_eq(pthread_create(&p->th, NULL, peer_main, p), 0);
    p->started = 1;
}

void e2e_peer_stop(struct e2e_peer *p)
{
    if (p->lfd >= 0)
        shutdown(p->lfd, SHUT_RDWR);
    if (p->started)
        pthread_join(p->th, NULL);
    if (p->filler_fd >= 0)
        close(p->filler_fd);
    if (p->lfd >= 0)
        close(p->lfd);
    p->lfd = -1;
}
