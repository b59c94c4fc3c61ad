/* SPDX-License-Identifier: MIT */
/* The handshake driver over real loopback sockets, against peers scripted
 * byte by byte: peer-rejected, truncated, refused and timeout stay apart;
 * full conversations in both dialects over IPv4 and IPv6. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rail/session/handshake_drive.h"
#include "common/sock.h"
#include "hs_peer.h"

/* ------------------------------------------------------------ the peer */
struct peer {
    int lfd;
    char port[16];
    void (*script)(struct peer *p, int fd);
    pthread_t th;
    uint8_t got[1024]; /* what the peer read */
    size_t n_got;
    int arg;
};

static void peer_read(struct peer *p, int fd, size_t n)
{
    while (n > 0) {
        ssize_t k = rw_sock_recv(fd, p->got + p->n_got, n, 5000);
        if (k <= 0)
            return;
        p->n_got += (size_t)k;
        n -= (size_t)k;
    }
}

static void peer_send(int fd, const void *b, size_t n)
{
    rw_sock_send_all(fd, b, n, 5000);
}

static void *peer_main(void *arg)
{
    struct peer *p = arg;
    int fd = -1;
    fd = hs_peer_accept(p->lfd, 5000);
    if (fd >= 0) {
        p->script(p, fd);
        close(fd);
    }
    return NULL;
}

static void peer_start(struct peer *p, const char *host, void (*script)(struct peer *, int))
{
    memset(p, 0, sizeof(*p));
    cr_assert_eq(rw_sock_listen(host, "0", 4, &p->lfd), 0);
    snprintf(p->port, sizeof(p->port), "%u", rw_sock_local_port(p->lfd));
    p->script = script;
    cr_assert_eq(pthread_create(&p->th, NULL, peer_main, p), 0);
}

static void peer_join(struct peer *p)
{
    pthread_join(p->th, NULL);
    close(p->lfd);
}

/* A valid RO reply for one rail, one layer. */
static size_t ro_reply(uint8_t *out, size_t cap)
{
    struct rw_mr_desc layer = {.base_addr = 0x1122334455667788ull, .rkey = 0xabcdef01u};
    struct rw_ro_params p = {.qp = {.qpn = 7, .psn = 9}, .n_layers = 1, .layers = &layer};
    memset(p.qp.gid, 0x5a, 16);
    ssize_t n = rw_encode_ro_reply(out, cap, &p, 1);
    cr_assert_gt(n, 0);
    return (size_t)n;
}

/* ------------------------------------------------------------- scripts */
static void s_close_after_request(struct peer *p, int fd)
{
    peer_read(p, fd, 1);
}

static void s_truncated_params(struct peer *p, int fd)
{
    uint8_t r[128];
    size_t n = ro_reply(r, sizeof(r));
    peer_read(p, fd, 1);
    peer_send(fd, r, n - (size_t)p->arg);
}

static void s_ack(struct peer *p, int fd)
{
    uint8_t r[128];
    size_t n = ro_reply(r, sizeof(r));
    peer_read(p, fd, 1);
    peer_send(fd, r, n);
    peer_read(p, fd, 1 + 24);
    uint8_t ack = (uint8_t)p->arg;
    peer_send(fd, &ack, 1);
}

static void s_silent(struct peer *p, int fd)
{
    peer_read(p, fd, 1);
    usleep(400 * 1000);
}

/* ------------------------------------------------------- client driver */
static int run_client(struct peer *p, const char *host, int timeout_ms, struct rw_hs_client *c)
{
    int fd = -1;
    cr_assert_eq(rw_sock_connect(host, p->port, 2000, &fd), 0);
    struct rw_hs_io io;
    rw_hs_io_init(&io, fd, timeout_ms);
    cr_assert_eq(rw_hs_client_init(c, RAILWIRE_DIALECT_RO, 1), 0);
    int rc = rw_hs_client_drive(&io, c);
    if (rc == 0 && c->state == RW_HS_NEED_LOCAL) {
        struct rw_qp_id id = {.qpn = 0x01020304, .psn = 0x00abcdef};
        memset(id.gid, 0xee, 16);
        cr_assert_eq(rw_hs_client_set_local(c, &id, 1), 0);
        rc = hs_peer_client_flush(&io, c);
        if (rc == 0)
            rc = rw_hs_client_drive(&io, c);
    }
    close(fd);
    return rc;
}

Test(handshake_drive, close_before_params_is_peer_rejected)
{
    struct peer p;
    peer_start(&p, "127.0.0.1", s_close_after_request);
    struct rw_hs_client c;
    cr_assert_eq(run_client(&p, "127.0.0.1", 2000, &c), RAILWIRE_E_PEER_REJECTED);
    rw_hs_client_fini(&c);
    peer_join(&p);
    cr_assert_eq(p.n_got, 1);
    cr_assert_eq(p.got[0], 1, "the request byte is the rail count");
}

Test(handshake_drive, close_inside_params_is_truncated)
{
    for (int cut = 1; cut <= 40; cut += 13) {
        struct peer p;
        peer_start(&p, "127.0.0.1", s_truncated_params);
        p.arg = cut; /* bytes missing at the end (the reply is 41 bytes) */
        struct rw_hs_client c;
        cr_assert_eq(run_client(&p, "127.0.0.1", 2000, &c), RAILWIRE_E_TRUNCATED,
                     "reply cut %d bytes short", cut);
        rw_hs_client_fini(&c);
        peer_join(&p);
    }
}

Test(handshake_drive, nonzero_ack_is_refused)
{
    struct peer p;
    peer_start(&p, "127.0.0.1", s_ack);
    p.arg = 1;
    struct rw_hs_client c;
    cr_assert_eq(run_client(&p, "127.0.0.1", 2000, &c), RAILWIRE_E_REFUSED);
    rw_hs_client_fini(&c);
    peer_join(&p);
}

Test(handshake_drive, silent_server_is_a_timeout)
{
    struct peer p;
    peer_start(&p, "127.0.0.1", s_silent);
    struct rw_hs_client c;
    cr_assert_eq(run_client(&p, "127.0.0.1", 100, &c), RAILWIRE_E_TIMEOUT);
    rw_hs_client_fini(&c);
    peer_join(&p);
}

static void check_full_conversation(const char *host)
{
    struct peer p;
    peer_start(&p, host, s_ack);
    p.arg = 0;
    struct rw_hs_client c;
    cr_assert_eq(run_client(&p, host, 2000, &c), 0);
    cr_assert_eq(c.state, RW_HS_DONE);
    const struct rw_server_reply *r = rw_hs_client_reply(&c);
    cr_assert_eq(r->n_rails, 1);
    cr_assert_eq(r->ro[0].qp.qpn, 7);
    cr_assert_eq(r->ro[0].n_layers, 1);
    cr_assert_eq(r->ro[0].layers[0].base_addr, 0x1122334455667788ull);
    cr_assert_eq(r->ro[0].layers[0].rkey, 0xabcdef01u);
    rw_hs_client_fini(&c);
    peer_join(&p);
    /* request, then the count again and the 24-byte identity, little-endian */
    static const uint8_t want[] = {1, 1, 0x04, 0x03, 0x02, 0x01, 0xef, 0xcd, 0xab, 0x00};
    cr_assert_eq(p.n_got, 26);
    cr_assert_eq(memcmp(p.got, want, sizeof(want)), 0);
    for (int i = 10; i < 26; i++)
        cr_assert_eq(p.got[i], 0xee);
}

Test(handshake_drive, full_conversation_ipv4)
{
    check_full_conversation("127.0.0.1");
}

Test(handshake_drive, full_conversation_ipv6)
{
    check_full_conversation("::1");
}

/* ------------------------------------------------------- server driver */
struct both {
    char port[16];
    int rc;
    enum railwire_dialect d;
    unsigned n;
    int accept;
};

static void *client_side(void *arg)
{
    struct both *b = arg;
    int fd = -1;
    b->rc = rw_sock_connect("127.0.0.1", b->port, 2000, &fd);
    if (b->rc < 0)
        return NULL;
    struct rw_hs_io io;
    rw_hs_io_init(&io, fd, 2000);
    struct rw_hs_client c;
    rw_hs_client_init(&c, b->d, b->n);
    b->rc = rw_hs_client_drive(&io, &c);
    if (b->rc == 0) {
        struct rw_qp_id ids[8];
        memset(ids, 0, sizeof(ids));
        for (unsigned i = 0; i < b->n; i++)
            ids[i].qpn = 100 + i;
        rw_hs_client_set_local(&c, ids, b->n);
        b->rc = hs_peer_client_flush(&io, &c);
        if (b->rc == 0)
            b->rc = rw_hs_client_drive(&io, &c);
    }
    rw_hs_client_fini(&c);
    close(fd);
    return NULL;
}

static void server_conversation(enum railwire_dialect d, unsigned n, int accept, int want_client_rc)
{
    int lfd;
    cr_assert_eq(rw_sock_listen("127.0.0.1", "0", 4, &lfd), 0);
    struct both b = {.d = d, .n = n, .accept = accept};
    snprintf(b.port, sizeof(b.port), "%u", rw_sock_local_port(lfd));
    pthread_t th;
    pthread_create(&th, NULL, client_side, &b);
    int fd = -1;
    fd = hs_peer_accept(lfd, 5000);
    cr_assert_geq(fd, 0);
    struct rw_hs_io io;
    rw_hs_io_init(&io, fd, 2000);
    struct rw_hs_server s;
    cr_assert_eq(rw_hs_server_init(&s, d), 0);
    cr_assert_eq(hs_peer_server_drive(&io, &s), 0);
    cr_assert_eq(s.state, RW_HS_NEED_PARAMS);
    cr_assert_eq(s.n_rails, n);
    struct rw_mr_desc layers[2] = {{0x1000, 1}, {0x2000, 2}};
    if (d == RAILWIRE_DIALECT_RO) {
        struct rw_ro_params p[8];
        for (unsigned i = 0; i < n; i++)
            p[i] = (struct rw_ro_params){.qp = {.qpn = i}, .n_layers = 2, .layers = layers};
        cr_assert_eq(rw_hs_server_set_ro_params(&s, p, n), 0);
    } else {
        struct rw_rw_params p[8];
        for (unsigned i = 0; i < n; i++)
            p[i] = (struct rw_rw_params){.qp = {.qpn = i}, .arena = {0x4000, 4}};
        cr_assert_eq(rw_hs_server_set_rw_params(&s, p, n), 0);
    }
    cr_assert_eq(hs_peer_server_drive(&io, &s), 0);
    cr_assert_eq(s.state, RW_HS_NEED_DECISION);
    for (unsigned i = 0; i < n; i++)
        cr_assert_eq(s.ids[i].qpn, 100 + i);
    cr_assert_eq(rw_hs_server_decide(&s, accept), 0);
    cr_assert_eq(hs_peer_server_drive(&io, &s), 0);
    cr_assert_eq(s.state, RW_HS_DONE);
    rw_hs_server_fini(&s);
    pthread_join(th, NULL);
    close(fd);
    close(lfd);
    cr_assert_eq(b.rc, want_client_rc);
}

Test(handshake_drive, server_and_client_drivers_agree_ro_8_rails)
{
    server_conversation(RAILWIRE_DIALECT_RO, 8, 1, 0);
}

Test(handshake_drive, server_and_client_drivers_agree_rw_3_rails)
{
    server_conversation(RAILWIRE_DIALECT_RW, 3, 1, 0);
}

Test(handshake_drive, server_refusal_reaches_the_client_as_refused)
{
    server_conversation(RAILWIRE_DIALECT_RW, 1, 0, RAILWIRE_E_REFUSED);
}

static void *client_quits_midway(void *arg)
{
    struct both *b = arg;
    int fd = -1;
    if (rw_sock_connect("127.0.0.1", b->port, 2000, &fd) < 0)
        return NULL;
    uint8_t msg[] = {2, 2, 1, 2, 3}; /* request 2 rails, then a cut second message */
    rw_sock_send_all(fd, msg, 1, 1000);
    uint8_t buf[256];
    size_t got = 0;
    while (got < 1 + 2 * 36) {
        ssize_t k = rw_sock_recv(fd, buf, sizeof(buf), 2000);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    rw_sock_send_all(fd, msg + 1, 4, 1000);
    close(fd);
    return NULL;
}

Test(handshake_drive, client_closing_inside_its_ids_is_truncated_on_the_server)
{
    int lfd;
    cr_assert_eq(rw_sock_listen("127.0.0.1", "0", 4, &lfd), 0);
    struct both b = {0};
    snprintf(b.port, sizeof(b.port), "%u", rw_sock_local_port(lfd));
    pthread_t th;
    pthread_create(&th, NULL, client_quits_midway, &b);
    int fd = -1;
    fd = hs_peer_accept(lfd, 5000);
    struct rw_hs_io io;
    rw_hs_io_init(&io, fd, 2000);
    struct rw_hs_server s;
    cr_assert_eq(rw_hs_server_init(&s, RAILWIRE_DIALECT_RW), 0);
    cr_assert_eq(hs_peer_server_drive(&io, &s), 0);
    struct rw_rw_params p[2] = {{.arena = {1, 1}}, {.arena = {2, 2}}};
    cr_assert_eq(rw_hs_server_set_rw_params(&s, p, 2), 0);
    cr_assert_eq(hs_peer_server_drive(&io, &s), RAILWIRE_E_TRUNCATED);
    rw_hs_server_fini(&s);
    pthread_join(th, NULL);
    close(fd);
    close(lfd);
}
