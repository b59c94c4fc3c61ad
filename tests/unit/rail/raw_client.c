/* SPDX-License-Identifier: MIT */
/* Raw clients for the server's suites (see raw_client.h). */
#include "raw_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/time.h"
#include "rail/session/handshake_drive.h"
#include "common/sock.h"
#include "tcp/tcp_addr.h"
#include "tcp/tcp_proto.h"
#include "wire/handshake.h"

int raw_dial(const char *src, const char *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (src) {
        struct sockaddr_in a = {.sin_family = AF_INET};
        inet_pton(AF_INET, src, &a.sin_addr);
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
            close(fd);
            return -1;
        }
    }
    struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&d, sizeof(d)) < 0) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

int raw_handshake(int fd, unsigned n, int timeout_ms, struct raw_session *s)
{
    memset(s, 0, sizeof(*s));
    s->ctl = fd;
    s->n = n;
    for (unsigned i = 0; i < RAW_MAX_RAILS; i++)
        s->rail[i] = -1;
    struct rw_hs_client c;
    struct rw_hs_io io;
    int rc = rw_hs_client_init(&c, RAILWIRE_DIALECT_RW, n);
    if (rc < 0)
        return rc;
    rw_hs_io_init(&io, fd, timeout_ms);
    rc = rw_hs_client_drive(&io, &c);
    if (rc == 0 && c.state == RW_HS_NEED_LOCAL) {
        const struct rw_server_reply *rep = rw_hs_client_reply(&c);
        for (unsigned i = 0; i < n; i++) {
            s->srv[i] = rep->rw[i].qp;
            s->cli[i] = (struct rw_qp_id){.qpn = 0x1000u + i, .psn = (uint32_t)rand()};
        }
        s->arena = rep->rw[0].arena;
        rc = rw_hs_client_set_local(&c, s->cli, n);
        if (rc == 0)
            rc = rw_hs_client_drive(&io, &c);
        if (rc == 0 && c.state != RW_HS_DONE)
            rc = RAILWIRE_E_STATE;
    } else if (rc == 0) {
        rc = RAILWIRE_E_STATE;
    }
    rw_hs_client_fini(&c);
    return rc;
}

static int wait_fd(int fd, short ev, int64_t deadline)
{
    struct pollfd p = {.fd = fd, .events = ev};
    return poll(&p, 1, rw_ms_left(deadline)) == 1;
}

int raw_open_rail(struct raw_session *s, unsigned i, int timeout_ms)
{
    struct sockaddr_storage ra;
    if (rw_tcp_gid_to_addr(s->srv[i].gid, (uint16_t)(s->srv[i].qpn & 0xffffu), &ra))
        return -1;
    int fd = socket(ra.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    socklen_t sl = ra.ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                           : sizeof(struct sockaddr_in6);
    if (connect(fd, (struct sockaddr *)&ra, sl) < 0) {
        close(fd);
        return -1;
    }
    struct rw_tcp_hello h = {.srv_qpn = s->srv[i].qpn, .srv_psn = s->srv[i].psn,
                             .cli_qpn = s->cli[i].qpn, .cli_psn = s->cli[i].psn};
    uint8_t hello[RW_TCP_HELLO_SIZE], verdict = 0xff;
    rw_tcp_hello_encode(hello, &h);
    int64_t deadline = rw_now_ms() + timeout_ms;
    if (send(fd, hello, sizeof(hello), MSG_NOSIGNAL) != (ssize_t)sizeof(hello) ||
        !wait_fd(fd, POLLIN, deadline) || recv(fd, &verdict, 1, 0) != 1 ||
        verdict != RW_TCP_VERDICT_OK) {
        close(fd);
        return -1;
    }
    s->rail[i] = fd;
    return 0;
}

void raw_close(struct raw_session *s)
{
    for (unsigned i = 0; i < RAW_MAX_RAILS; i++) {
        if (s->rail[i] >= 0)
            close(s->rail[i]);
        s->rail[i] = -1;
    }
    if (s->ctl >= 0)
        close(s->ctl);
    s->ctl = -1;
}
