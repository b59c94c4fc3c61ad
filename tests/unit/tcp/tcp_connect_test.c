/* SPDX-License-Identifier: MIT */
/* Rail connection setup: authentication by the hello, refusals, timeouts,
 * and an accept path that no silent client can stall. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp/tcp_proto.h"
#include "tcp_fixture.h"

static void make_eps(struct tpair *p, int io_timeout_ms)
{
    struct rw_ep_cfg ccfg = {.depth = 4};
    struct rw_ep_cfg scfg = {.depth = 4};

    t_open(p, "127.0.0.1", io_timeout_ms);
    scfg.exposed = &p->smr;
    scfg.n_exposed = 1;
    cr_assert_eq(rw_tcp_ops.ep_create(p->sdom, &scfg, &p->sep), 0);
    cr_assert_eq(rw_tcp_ops.ep_create(p->cdom, &ccfg, &p->cep), 0);
}

static int raw_connect(uint16_t port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    return fd;
}

/* A connected pair can move a byte: proves the rail really is up. */
static void check_rail_works(struct tpair *p)
{
    uint8_t b = 0;
    struct rw_mr *lmr;
    struct rw_wr wr;
    struct rw_wc wc;

    cr_assert_eq(rw_tcp_ops.mr_reg(p->cdom, &b, 1, RW_ACCESS_LOCAL, &lmr), 0);
    wr = (struct rw_wr){.wr_id = 1, .opcode = RW_OP_READ, .local = &b, .mr = lmr, .length = 1,
                        .remote_addr = p->smr->remote_base + 5, .rkey = p->smr->rkey};
    cr_assert_eq(rw_tcp_ops.ep_post(p->cep, &wr, 1), 1);
    cr_assert_eq(t_wait(p->cep, &wc, 1, 10000), 1);
    cr_assert_eq(wc.status, 0);
    cr_assert_eq(b, p->smem[5]);
    rw_tcp_ops.mr_dereg(lmr);
}

Test(tcp_connect, wrong_psn_refused_then_right_one_accepted)
{
    struct tpair p;
    struct rw_qp_id bad;
    struct rw_ep *cep2;
    struct rw_ep_cfg ccfg = {.depth = 4};

    make_eps(&p, 0);
    /* The server knows its client (expect mode, as the rail layer does):
     * a wrong psn is refused at once. */
    cr_assert_eq(rw_tcp_ops.ep_connect(p.sep, &p.cep->local, 0), 0);
    bad = p.sep->local;
    bad.psn ^= 0x80000000u;
    cr_assert_eq(rw_tcp_ops.ep_connect(p.cep, &bad, 5000), RAILWIRE_E_REFUSED);
    /* The refused attempt left nothing behind: a fresh client still gets in. */
    cr_assert_eq(rw_tcp_ops.ep_create(p.cdom, &ccfg, &cep2), 0);
    rw_tcp_ops.ep_destroy(p.cep);
    p.cep = cep2;
    /* The server names its new client first (the rail layer's order; a
     * hello racing ahead would be judged against the old identity). */
    cr_assert_eq(rw_tcp_ops.ep_connect(p.sep, &p.cep->local, 0), 0);
    cr_assert_eq(rw_tcp_ops.ep_connect(p.cep, &p.sep->local, 5000), 0);
    check_rail_works(&p);
    t_close(&p);
}

Test(tcp_connect, unknown_slot_refused)
{
    struct tpair p;
    struct rw_qp_id bad;

    make_eps(&p, 0);
    bad = p.sep->local;
    bad.qpn += 1u << 16; /* the next slot: no ep there */
    cr_assert_eq(rw_tcp_ops.ep_connect(p.cep, &bad, 5000), RAILWIRE_E_REFUSED);
    t_close(&p);
}

struct srv_wait {
    pthread_t th;
    struct rw_ep *sep;
    struct rw_qp_id remote;
    int timeout_ms;
    int rc;
};

static void *srv_wait_main(void *arg)
{
    struct srv_wait *w = arg;
    w->rc = rw_tcp_ops.ep_connect(w->sep, &w->remote, w->timeout_ms);
    return NULL;
}

static void srv_wait_start(struct srv_wait *w, struct rw_ep *sep, const struct rw_qp_id *remote, int ms)
{
    w->sep = sep;
    w->remote = *remote;
    w->timeout_ms = ms;
    w->rc = 1;
    cr_assert_eq(pthread_create(&w->th, NULL, srv_wait_main, w), 0);
}

/* The server waits for the client named in the handshake: another client
 * that knows the server's identity is refused, and the right one still gets
 * in afterwards. */
Test(tcp_connect, other_client_identity_refused)
{
    struct tpair p;
    struct rw_ep *intruder;
    struct rw_ep_cfg ccfg = {.depth = 4};
    struct srv_wait w;

    make_eps(&p, 0);
    cr_assert_eq(rw_tcp_ops.ep_create(p.cdom, &ccfg, &intruder), 0);
    srv_wait_start(&w, p.sep, &p.cep->local, 10000);
    cr_assert_eq(rw_tcp_ops.ep_connect(intruder, &p.sep->local, 10000), RAILWIRE_E_REFUSED);
    cr_assert_eq(rw_tcp_ops.ep_connect(p.cep, &p.sep->local, 10000), 0);
    pthread_join(w.th, NULL);
    cr_assert_eq(w.rc, 0);
    check_rail_works(&p);
    rw_tcp_ops.ep_destroy(intruder);
    t_close(&p);
}

/* The client's hello may arrive before the server's ep_connect: it waits
 * (parked) and is attached once the server names that client. */
static void *late_client(void *arg)
{
    struct tpair *p = arg;
    return (void *)(intptr_t)rw_tcp_ops.ep_connect(p->cep, &p->sep->local, 10000);
}

Test(tcp_connect, hello_before_server_connect)
{
    struct tpair p;
    pthread_t th;
    void *ret;

    make_eps(&p, 0);
    cr_assert_eq(pthread_create(&th, NULL, late_client, &p), 0);
    usleep(200 * 1000); /* let the hello arrive first (ordering only, not asserted) */
    cr_assert_eq(rw_tcp_ops.ep_connect(p.sep, &p.cep->local, 10000), 0);
    pthread_join(th, &ret);
    cr_assert_eq((int)(intptr_t)ret, 0);
    check_rail_works(&p);
    t_close(&p);
}

Test(tcp_connect, server_connect_times_out_without_client)
{
    struct tpair p;
    make_eps(&p, 0);
    cr_assert_eq(rw_tcp_ops.ep_connect(p.sep, &p.cep->local, 200), RAILWIRE_E_TIMEOUT);
    /* ... and the ep can still be connected afterwards. */
    {
        int srv_rc;
        cr_assert_eq(t_connect_both(p.sep, p.cep, 10000, &srv_rc), 0);
        cr_assert_eq(srv_rc, 0);
    }
    check_rail_works(&p);
    t_close(&p);
}

Test(tcp_connect, closed_port_fails_with_connect_error)
{
    struct tpair p;
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sin);
    struct rw_qp_id id;
    int fd;

    make_eps(&p, 0);
    /* A port that was just free: bound, never listened. */
    fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    id = t_loopback_id(ntohs(sin.sin_port), 1, 1);
    /* A refused connection is reported as such well before a long timeout. */
    cr_assert_eq(rw_tcp_ops.ep_connect(p.cep, &id, 60000), RAILWIRE_E_CONNECT);
    close(fd);
    t_close(&p);
}

/* A listener whose accept queue is full drops SYNs: a black hole on
 * loopback.  The connect gives up after its timeout with a timeout error. */
Test(tcp_connect, black_holed_address_times_out)
{
    struct tpair p;
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sin);
    struct rw_qp_id id;
    int lfd, fill[16], n_fill = 0, full = 0;

    make_eps(&p, 0);
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_eq(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    cr_assert_eq(listen(lfd, 0), 0);
    cr_assert_eq(getsockname(lfd, (struct sockaddr *)&sin, &len), 0);
    while (n_fill < 16 && !full) {
        struct pollfd pfd;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        int rc = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
        cr_assert(rc == 0 || errno == EINPROGRESS);
        fill[n_fill++] = fd;
        pfd = (struct pollfd){.fd = fd, .events = POLLOUT};
        full = poll(&pfd, 1, 300) == 0; /* this SYN was dropped: the queue is full */
    }
    cr_assert(full, "could not fill the accept queue");
    id = t_loopback_id(ntohs(sin.sin_port), 1, 1);
    cr_assert_eq(rw_tcp_ops.ep_connect(p.cep, &id, 300), RAILWIRE_E_TIMEOUT);
    while (n_fill)
        close(fill[--n_fill]);
    close(lfd);
    t_close(&p);
}

/* Connections that send nothing, or half a hello, do not delay another
 * client: its connect (timeout 3 s) completes although the server waits up
 * to 20 s for the silent ones' hellos. */
Test(tcp_connect, silent_clients_do_not_delay_others)
{
    struct tpair p;
    uint8_t half[RW_TCP_HELLO_SIZE / 2] = {'R', 'W', 'T', '1'};
    int silent[4], i, srv_rc;
    uint16_t port;

    make_eps(&p, 20000);
    port = (uint16_t)(p.sep->local.qpn & 0xffff);
    for (i = 0; i < 4; i++) {
        silent[i] = raw_connect(port);
        if (i % 2)
            cr_assert_eq(send(silent[i], half, sizeof(half), 0), (ssize_t)sizeof(half));
    }
    usleep(50 * 1000);
    cr_assert_eq(t_connect_both(p.sep, p.cep, 3000, &srv_rc), 0);
    cr_assert_eq(srv_rc, 0);
    check_rail_works(&p);
    for (i = 0; i < 4; i++)
        close(silent[i]);
    t_close(&p);
}

/* A connection that never completes its hello is closed after the
 * server's I/O timeout. */
Test(tcp_connect, silent_client_closed_after_io_timeout)
{
    struct tpair p;
    struct pollfd pfd;
    uint8_t b;
    int fd;

    make_eps(&p, 300);
    fd = raw_connect((uint16_t)(p.sep->local.qpn & 0xffff));
    pfd = (struct pollfd){.fd = fd, .events = POLLIN};
    cr_assert_eq(poll(&pfd, 1, 10000), 1);
    cr_assert_leq(recv(fd, &b, 1, 0), 0, "closed without a verdict");
    close(fd);
    t_close(&p);
}

/* Bytes that are not a hello get the refusal verdict. */
Test(tcp_connect, garbage_hello_refused)
{
    struct tpair p;
    uint8_t junk[RW_TCP_HELLO_SIZE], v = 0;
    int fd;

    make_eps(&p, 0);
    memset(junk, 'x', sizeof(junk));
    fd = raw_connect((uint16_t)(p.sep->local.qpn & 0xffff));
    cr_assert_eq(send(fd, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
    cr_assert_eq(recv(fd, &v, 1, 0), 1);
    cr_assert_eq(v, RW_TCP_VERDICT_REFUSE);
    close(fd);
    t_close(&p);
}

/* A second connection for an ep that already has its rail is refused. */
Test(tcp_connect, second_connection_for_same_ep_refused)
{
    struct tpair p;
    struct rw_ep *dup;
    struct rw_ep_cfg ccfg = {.depth = 4};
    int srv_rc;

    make_eps(&p, 0);
    cr_assert_eq(t_connect_both(p.sep, p.cep, 10000, &srv_rc), 0);
    cr_assert_eq(srv_rc, 0);
    cr_assert_eq(rw_tcp_ops.ep_create(p.cdom, &ccfg, &dup), 0);
    cr_assert_eq(rw_tcp_ops.ep_connect(dup, &p.sep->local, 5000), RAILWIRE_E_REFUSED);
    rw_tcp_ops.ep_destroy(dup);
    check_rail_works(&p);
    t_close(&p);
}

/* The client can bind its rail to a chosen local address. */
Test(tcp_connect, client_binds_its_local_address)
{
    struct tpair p;
    static const uint8_t lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
    int srv_rc;

    make_eps(&p, 0);
    cr_assert_eq(memcmp(p.cep->local.gid, lo, 16), 0, "client GID is its bound address");
    cr_assert_eq(t_connect_both(p.sep, p.cep, 10000, &srv_rc), 0);
    check_rail_works(&p);
    t_close(&p);
}

/* lazy_verdict: the client's ep_connect returns once the hello is sent, so
 * all rails can be dialled before the server attaches any. */
Test(tcp_connect, lazy_verdict_rails_come_up_in_parallel)
{
    enum { N = 8 };
    struct tpair p;
    struct rw_ep *s[N], *c[N];
    struct rw_ep_cfg ccfg = {.depth = 4, .lazy_verdict = 1};
    struct rw_ep_cfg scfg = {.depth = 4};
    int i;

    t_open(&p, "127.0.0.1", 0);
    scfg.exposed = &p.smr;
    scfg.n_exposed = 1;
    for (i = 0; i < N; i++) {
        cr_assert_eq(rw_tcp_ops.ep_create(p.sdom, &scfg, &s[i]), 0);
        cr_assert_eq(rw_tcp_ops.ep_create(p.cdom, &ccfg, &c[i]), 0);
    }
    /* Client first, every rail, with no server ep_connect running: only a
     * lazy verdict lets this finish. */
    for (i = 0; i < N; i++)
        cr_assert_eq(rw_tcp_ops.ep_connect(c[i], &s[i]->local, 5000), 0);
    for (i = 0; i < N; i++)
        cr_assert_eq(rw_tcp_ops.ep_connect(s[i], &c[i]->local, 5000), 0);
    for (i = 0; i < N; i++) {
        p.sep = s[i];
        p.cep = c[i];
        check_rail_works(&p);
    }
    for (i = 0; i < N; i++) {
        rw_tcp_ops.ep_destroy(c[i]);
        rw_tcp_ops.ep_destroy(s[i]);
    }
    p.sep = p.cep = NULL;
    t_close(&p);
}

/* lazy_verdict with a wrong psn: ep_connect succeeds, the refusal then kills
 * the ep and its WRs complete rail-down. */
Test(tcp_connect, lazy_verdict_refusal_kills_the_ep)
{
    struct tpair p;
    struct rw_ep_cfg ccfg = {.depth = 4, .lazy_verdict = 1};
    struct rw_qp_id bad;
    struct rw_mr *lmr;
    struct rw_wr wr;
    struct rw_wc wc;
    uint8_t b[8];
    int rc;

    make_eps(&p, 0);
    rw_tcp_ops.ep_destroy(p.cep);
    cr_assert_eq(rw_tcp_ops.ep_create(p.cdom, &ccfg, &p.cep), 0);
    cr_assert_eq(rw_tcp_ops.ep_connect(p.sep, &p.cep->local, 0), 0);
    bad = p.sep->local;
    bad.psn ^= 1;
    cr_assert_eq(rw_tcp_ops.ep_connect(p.cep, &bad, 5000), 0);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.cdom, b, sizeof(b), RW_ACCESS_LOCAL, &lmr), 0);
    wr = (struct rw_wr){.wr_id = 3, .opcode = RW_OP_READ, .local = b, .mr = lmr, .length = 8,
                        .remote_addr = p.smr->remote_base, .rkey = p.smr->rkey};
    rc = rw_tcp_ops.ep_post(p.cep, &wr, 1);
    if (rc == 1) {
        cr_assert_eq(t_wait(p.cep, &wc, 1, 10000), 1);
        cr_assert_eq(wc.status, RAILWIRE_E_RAIL_DOWN);
        rc = rw_tcp_ops.ep_post(p.cep, &wr, 1);
    }
    cr_assert_eq(rc, RAILWIRE_E_RAIL_DOWN);
    rw_tcp_ops.mr_dereg(lmr);
    t_close(&p);
}

/* A "::" listener is dual-stack: advertised as IPv4 (the control
 * connection's address), an IPv4 client reaches it. */
Test(tcp_connect, dual_stack_listener_takes_ipv4_client)
{
    struct rw_domain_cfg sc = {.role = RW_ROLE_SERVER, .device = "::"};
    struct rw_domain_cfg cc = {.role = RW_ROLE_CLIENT, .device = "127.0.0.1"};
    struct sockaddr_in adv = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_storage ss;
    struct rw_ep_cfg scfg = {.advertise = &ss};
    struct rw_ep_cfg ccfg = {.depth = 2};
    struct tpair p;
    int srv_rc;

    memset(&p, 0, sizeof(p));
    memset(&ss, 0, sizeof(ss));
    memcpy(&ss, &adv, sizeof(adv));
    cr_assert_eq(rw_tcp_ops.domain_open(&sc, &p.sdom), 0);
    cr_assert_eq(rw_tcp_ops.domain_open(&cc, &p.cdom), 0);
    p.smem = malloc(T_SRV_LEN);
    cr_assert_not_null(p.smem);
    t_pattern(p.smem, T_SRV_LEN, 9);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.sdom, p.smem, T_SRV_LEN, RW_ACCESS_REMOTE_READ, &p.smr), 0);
    scfg.exposed = &p.smr;
    scfg.n_exposed = 1;
    cr_assert_eq(rw_tcp_ops.ep_create(p.sdom, &scfg, &p.sep), 0);
    cr_assert_eq(p.sep->local.gid[10], 0xff, "advertised IPv4 address, IPv4-mapped");
    cr_assert_eq(p.sep->local.gid[12], 127);
    cr_assert_eq(rw_tcp_ops.ep_create(p.cdom, &ccfg, &p.cep), 0);
    cr_assert_eq(t_connect_both(p.sep, p.cep, 10000, &srv_rc), 0);
    cr_assert_eq(srv_rc, 0);
    check_rail_works(&p);
    t_close(&p);
}

/* An IPv4 local address cannot reach an IPv6 server: a clear connect error. */
Test(tcp_connect, family_mismatch_is_a_connect_error)
{
    struct tpair p;
    struct rw_domain_cfg sc = {.role = RW_ROLE_SERVER, .device = "::1"};
    struct rw_domain *d6;
    struct rw_ep *s6;
    struct rw_ep_cfg scfg = {.depth = 2};

    make_eps(&p, 0);
    cr_assert_eq(rw_tcp_ops.domain_open(&sc, &d6), 0);
    cr_assert_eq(rw_tcp_ops.ep_create(d6, &scfg, &s6), 0);
    cr_assert_eq(rw_tcp_ops.ep_connect(p.cep, &s6->local, 5000), RAILWIRE_E_CONNECT);
    rw_tcp_ops.ep_destroy(s6);
    rw_tcp_ops.domain_close(d6);
    t_close(&p);
}
