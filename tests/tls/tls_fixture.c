/* SPDX-License-Identifier: MIT */
#include "tls_fixture.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"

char tls_dir[256];

static char lines[64][1100];
static int n_lines;

static void capture(enum railwire_log_level level, const char *msg, void *user)
{
    (void)level;
    (void)user;
    if (n_lines < 64)
        snprintf(lines[n_lines++], sizeof(lines[0]), "%s", msg);
}

int tls_log_has(const char *needle)
{
    for (int i = 0; i < n_lines; i++)
        if (strstr(lines[i], needle))
            return 1;
    return 0;
}

void tls_log_reset(void)
{
    n_lines = 0;
}

void tls_fx_setup(void)
{
    cr_assert_eq(tls_certs_make(tls_dir, sizeof(tls_dir)), 0, "making test certificates");
    n_lines = 0;
    railwire_log_set_level(RAILWIRE_LOG_INFO);
    railwire_log_set_sink(capture, NULL);
}

void tls_fx_teardown(void)
{
    railwire_log_set_sink(NULL, NULL);
    tls_certs_remove(tls_dir);
}

static char paths[4][512];

railwire_tls_opts tls_opts(const char *cert, const char *key, const char *ca, const char *psk)
{
    railwire_tls_opts o;
    const char *names[4] = {cert, key, ca, psk};
    const char *out[4] = {NULL, NULL, NULL, NULL};

    for (int i = 0; i < 4; i++)
        if (names[i])
            out[i] = tls_path(paths[i], sizeof(paths[i]), tls_dir, names[i]);
    railwire_tls_opts_init(&o);
    o.cert_file = out[0];
    o.key_file = out[1];
    o.ca_file = out[2];
    o.psk_file = out[3];
    return o;
}

struct rw_tls_creds *tls_creds(enum rw_tls_role role, const char *cert, const char *key,
                               const char *ca, const char *psk)
{
    railwire_tls_opts o = tls_opts(cert, key, ca, psk);
    struct rw_tls_creds *c = NULL;

    cr_assert_eq(rw_tls_creds_new(&o, role, &c), 0, "credentials %s %s %s %s", cert ? cert : "-",
                 key ? key : "-", ca ? ca : "-", psk ? psk : "-");
    return c;
}

int tls_tcp_pair(int *client_fd, int *server_fd)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    cr_assert_geq(l, 0);
    cr_assert_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(l, 4), 0);
    cr_assert_eq(getsockname(l, (struct sockaddr *)&a, &al), 0);
    *client_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_eq(connect(*client_fd, (struct sockaddr *)&a, sizeof(a)), 0);
    *server_fd = accept(l, NULL, NULL);
    cr_assert_geq(*server_fd, 0);
    setsockopt(*client_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(*server_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    close(l);
    return 0;
}

void tls_pair_open(struct tls_pair *p, struct rw_tls_creds *cc, struct rw_tls_creds *sc,
                   const char *host, int relay)
{
    memset(p, 0, sizeof(*p));
    p->rfd_c = p->rfd_s = -1;
    p->flip_at = -1;
    p->crc = p->src = 1;
    if (relay) {
        tls_tcp_pair(&p->cfd, &p->rfd_c);
        tls_tcp_pair(&p->rfd_s, &p->sfd);
        fcntl(p->rfd_c, F_SETFL, O_NONBLOCK);
        fcntl(p->rfd_s, F_SETFL, O_NONBLOCK);
    } else {
        tls_tcp_pair(&p->cfd, &p->sfd);
    }
    cr_assert_eq(rw_tls_conn_new(cc, p->cfd, host, &p->cli), 0);
    cr_assert_eq(rw_tls_conn_new(sc, p->sfd, NULL, &p->srv), 0);
}

static void pump(struct tls_pair *p, int from, int to, int count)
{
    char buf[65536];
    ssize_t k = recv(from, buf, sizeof(buf), MSG_DONTWAIT);

    if (k == 0) {
        shutdown(to, SHUT_WR);
        return;
    }
    if (k < 0)
        return;
    if (count) {
        if (p->flip_at >= 0 && (size_t)p->flip_at >= p->relayed &&
            (size_t)p->flip_at < p->relayed + (size_t)k)
            buf[(size_t)p->flip_at - p->relayed] ^= 0x01;
        p->relayed += (size_t)k;
    }
    for (ssize_t off = 0; off < k;) {
        ssize_t w = send(to, buf + off, (size_t)(k - off), MSG_NOSIGNAL);
        if (w < 0 && errno == EAGAIN) {
            struct pollfd pf = {.fd = to, .events = POLLOUT};
            poll(&pf, 1, 100);
            continue;
        }
        if (w <= 0)
            return;
        off += w;
    }
}

void tls_pair_relay(struct tls_pair *p)
{
    if (p->rfd_c < 0)
        return;
    pump(p, p->rfd_c, p->rfd_s, 1);
    pump(p, p->rfd_s, p->rfd_c, 0);
}

static void step(struct rw_tls_conn *c, int fd, int *rc)
{
    if (*rc != 1 && *rc != RW_TLS_WANT_READ && *rc != RW_TLS_WANT_WRITE)
        return;
    *rc = rw_tls_conn_handshake_step(c);
    if (*rc < 0 && *rc != RW_TLS_WANT_READ && *rc != RW_TLS_WANT_WRITE)
        shutdown(fd, SHUT_WR);
}

static int busy(int rc)
{
    return rc == 1 || rc == RW_TLS_WANT_READ || rc == RW_TLS_WANT_WRITE;
}

void tls_pair_handshake(struct tls_pair *p, int ms)
{
    int64_t end = rw_now_ms() + ms;

    while ((busy(p->crc) || busy(p->src)) && rw_now_ms() < end) {
        struct pollfd pf[4] = {{.fd = p->cfd, .events = POLLIN}, {.fd = p->sfd, .events = POLLIN},
                               {.fd = p->rfd_c, .events = POLLIN},
                               {.fd = p->rfd_s, .events = POLLIN}};
        step(p->cli, p->cfd, &p->crc);
        step(p->srv, p->sfd, &p->src);
        tls_pair_relay(p);
        poll(pf, p->rfd_c >= 0 ? 4 : 2, 5);
    }
}

static int read_some(struct tls_pair *p, struct rw_tls_conn *c, char *buf, size_t n, int ms)
{
    int64_t end = rw_now_ms() + ms;
    size_t got = 0;

    while (got < n && rw_now_ms() < end) {
        ssize_t r = rw_tls_read(c, buf + got, n - got);
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        if (r == 0)
            return RAILWIRE_E_CLOSED;
        if (r != RW_TLS_WANT_READ && r != RW_TLS_WANT_WRITE)
            return (int)r;
        tls_pair_relay(p);
        struct pollfd pf = {.fd = p->rfd_c >= 0 ? p->rfd_c : -1, .events = POLLIN};
        poll(&pf, 1, 2);
    }
    return got == n ? 0 : RAILWIRE_E_TIMEOUT;
}

int tls_pair_ping(struct tls_pair *p, int ms)
{
    char buf[4];
    int rc;

    rc = (int)rw_tls_write(p->cli, "ping", 4);
    if (rc != 4)
        return rc;
    tls_pair_relay(p);
    rc = read_some(p, p->srv, buf, 4, ms);
    if (rc) {
        shutdown(p->sfd, SHUT_WR);
        tls_pair_relay(p);
        int crc = read_some(p, p->cli, buf, 4, ms);
        return crc ? crc : rc;
    }
    cr_assert_eq(memcmp(buf, "ping", 4), 0);
    rc = (int)rw_tls_write(p->srv, "pong", 4);
    if (rc != 4)
        return rc;
    rc = read_some(p, p->cli, buf, 4, ms);
    if (rc)
        return rc;
    return memcmp(buf, "pong", 4) == 0 ? 0 : RAILWIRE_E_PROTOCOL;
}

void tls_pair_close(struct tls_pair *p)
{
    rw_tls_conn_free(p->cli);
    rw_tls_conn_free(p->srv);
    if (p->cfd >= 0)
        close(p->cfd);
    if (p->sfd >= 0)
        close(p->sfd);
    if (p->rfd_c >= 0)
        close(p->rfd_c);
    if (p->rfd_s >= 0)
        close(p->rfd_s);
}
