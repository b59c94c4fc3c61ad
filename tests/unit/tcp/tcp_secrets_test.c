/* SPDX-License-Identifier: MIT */
/* Secrets of the tcp rail (issue 8): nothing confirms a psn guess before
 * the client's identity is known, slots are random, a guessing peer is
 * locked out (and only that peer), and published bases are opaque; and
 * the random keys never start with the handshake's STATUS_OK byte. */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp/tcp_guard.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_proto.h"
#include "tcp_fixture.h"

/* A raw rail connection from 127.0.0.1 that sends `h` as its hello. */
static int raw_hello(uint16_t port, const struct rw_tcp_hello *h)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    uint8_t buf[RW_TCP_HELLO_SIZE];
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    cr_assert_geq(fd, 0);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    rw_tcp_hello_encode(buf, h);
    cr_assert_eq(send(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
    return fd;
}

/* Waits up to ms for the verdict: returns the verdict byte, -1 if none
 * came in time, -2 if the connection closed without one. */
static int verdict(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    uint8_t v;

    if (poll(&p, 1, ms) != 1)
        return -1;
    return recv(fd, &v, 1, 0) == 1 ? v : -2;
}

/* Before the server's ep_connect, a hello with the right psn and one with
 * a wrong psn get the same treatment (both wait, no answer); once the
 * client identities are known the right one attaches and the wrong one is
 * refused.  Today's code refused the wrong psn at once: a psn oracle. */
Test(tcp_secrets, no_psn_oracle_before_the_ids)
{
    struct tpair p;
    struct rw_ep_cfg scfg = {.depth = 4};
    struct rw_ep *a, *b;
    struct rw_qp_id ida = {.qpn = 0x1111, .psn = 0x2222}, idb = {.qpn = 0x3333, .psn = 0x4444};
    struct rw_tcp_hello ha, hb;
    uint16_t port;
    int fa, fb;

    t_open(&p, "127.0.0.1", 0);
    scfg.exposed = &p.smr;
    scfg.n_exposed = 1;
    cr_assert_eq(rw_tcp_ops.ep_create(p.sdom, &scfg, &a), 0);
    cr_assert_eq(rw_tcp_ops.ep_create(p.sdom, &scfg, &b), 0);
    port = (uint16_t)(a->local.qpn & 0xffff);
    ha = (struct rw_tcp_hello){.srv_qpn = a->local.qpn, .srv_psn = a->local.psn,
                               .cli_qpn = ida.qpn, .cli_psn = ida.psn};
    hb = (struct rw_tcp_hello){.srv_qpn = b->local.qpn, .srv_psn = b->local.psn ^ 0x5a5a5a5au,
                               .cli_qpn = idb.qpn, .cli_psn = idb.psn};
    fa = raw_hello(port, &ha);
    fb = raw_hello(port, &hb);
    /* Same class: neither answered while the ids are unknown. */
    cr_assert_eq(verdict(fa, 300), -1, "right psn: no answer before ep_connect");
    cr_assert_eq(verdict(fb, 0), -1, "wrong psn: no answer before ep_connect either");
    cr_assert_eq(rw_tcp_ops.ep_liveness(a), RW_EP_WAITING);
    cr_assert_eq(rw_tcp_ops.ep_connect(a, &ida, 0), 0);
    cr_assert_eq(rw_tcp_ops.ep_connect(b, &idb, 0), 0);
    cr_assert_eq(verdict(fa, 5000), RW_TCP_VERDICT_OK);
    cr_assert_eq(verdict(fb, 5000), RW_TCP_VERDICT_REFUSE);
    cr_assert_eq(rw_tcp_ops.ep_liveness(b), RW_EP_WAITING, "b can still take its real client");
    close(fa);
    close(fb);
    rw_tcp_ops.ep_destroy(a);
    rw_tcp_ops.ep_destroy(b);
    t_close(&p);
}

/* Slot numbers (qpn >> 16) are random, not a sequence an attacker can walk. */
Test(tcp_secrets, slots_are_random)
{
    enum { N = 64 };
    struct tpair p;
    struct rw_ep_cfg scfg = {.depth = 4};
    struct rw_ep *e[N];
    unsigned seq = 0, i, j;

    t_open(&p, "127.0.0.1", 0);
    for (i = 0; i < N; i++) {
        cr_assert_eq(rw_tcp_ops.ep_create(p.sdom, &scfg, &e[i]), 0);
        cr_assert_neq(e[i]->local.qpn >> 16, 0);
        for (j = 0; j < i; j++)
            cr_assert_neq(e[i]->local.qpn >> 16, e[j]->local.qpn >> 16, "distinct slots");
        if (i && (e[i]->local.qpn >> 16) == (e[i - 1]->local.qpn >> 16) + 1)
            seq++;
    }
    /* Random slots follow each other with probability 1/65535 each. */
    cr_assert_lt(seq, 4, "%u of %d slots follow the previous one", seq, N - 1);
    for (i = 0; i < N; i++)
        rw_tcp_ops.ep_destroy(e[i]);
    t_close(&p);
}

/* 16 wrong hellos from 127.0.0.2 lock that address out (even its right
 * hello is then refused unchecked); 127.0.0.1 keeps working. */
Test(tcp_secrets, lockout_after_wrong_hellos_only_for_that_peer)
{
    struct tpair p;
    struct rw_domain_cfg cc2 = {.role = RW_ROLE_CLIENT, .device = "127.0.0.2"};
    struct rw_domain *cdom2;
    struct rw_ep_cfg scfg = {.depth = 4}, ccfg = {.depth = 4};
    struct rw_ep *target, *good2, *cep2;
    struct rw_qp_id bad;
    int i, srv_rc;

    t_open(&p, "127.0.0.1", 0);
    cr_assert_eq(rw_tcp_ops.domain_open(&cc2, &cdom2), 0);
    scfg.exposed = &p.smr;
    scfg.n_exposed = 1;
    cr_assert_eq(rw_tcp_ops.ep_create(p.sdom, &scfg, &target), 0);
    for (i = 0; i < RW_TCP_LOCKOUT_FAILS; i++) {
        struct rw_ep *c;
        cr_assert_eq(rw_tcp_ops.ep_create(cdom2, &ccfg, &c), 0);
        cr_assert_eq(rw_tcp_ops.ep_connect(target, &c->local, 0), 0);
        bad = target->local;
        bad.psn ^= 1u + (unsigned)i;
        cr_assert_eq(rw_tcp_ops.ep_connect(c, &bad, 5000), RAILWIRE_E_REFUSED, "guess %d", i);
        rw_tcp_ops.ep_destroy(c);
    }
    /* The right identity from the locked-out address is refused too. */
    cr_assert_eq(rw_tcp_ops.ep_create(p.sdom, &scfg, &good2), 0);
    cr_assert_eq(rw_tcp_ops.ep_create(cdom2, &ccfg, &cep2), 0);
    cr_assert_eq(rw_tcp_ops.ep_connect(good2, &cep2->local, 0), 0);
    cr_assert_neq(rw_tcp_ops.ep_connect(cep2, &good2->local, 5000), 0, "locked out");
    cr_assert_eq(rw_tcp_ops.ep_liveness(good2), RW_EP_WAITING);
    /* 127.0.0.1 is another peer: it gets in. */
    cr_assert_eq(rw_tcp_ops.ep_create(p.sdom, &scfg, &p.sep), 0);
    cr_assert_eq(rw_tcp_ops.ep_create(p.cdom, &ccfg, &p.cep), 0);
    cr_assert_eq(t_connect_both(p.sep, p.cep, 5000, &srv_rc), 0);
    cr_assert_eq(srv_rc, 0);
    rw_tcp_ops.ep_destroy(cep2);
    rw_tcp_ops.ep_destroy(good2);
    rw_tcp_ops.ep_destroy(target);
    rw_tcp_ops.domain_close(cdom2);
    t_close(&p);
}

static int one(struct rw_ep *cep, struct rw_mr *lmr, enum rw_opcode op, void *local, uint32_t len,
               uint64_t raddr, uint32_t rkey)
{
    struct rw_wr wr = {.wr_id = 9, .opcode = op, .local = local, .mr = lmr, .length = len,
                       .remote_addr = raddr, .rkey = rkey};
    struct rw_wc wc;
    cr_assert_eq(rw_tcp_ops.ep_post(cep, &wr, 1), 1);
    cr_assert_eq(t_wait(cep, &wc, 1, 10000), 1);
    return wc.status;
}

/* The published base is not the region's address, and READ/WRITE through
 * it land on the right bytes; the address itself is refused. */
Test(tcp_secrets, published_bases_are_opaque)
{
    struct tpair p;
    uint8_t buf[4096], *mem2 = malloc(1 << 16);
    struct rw_mr *lmr, *mr2;
    struct rw_mr *exp[2];

    cr_assert_not_null(mem2);
    t_open(&p, "127.0.0.1", 0);
    memset(mem2, 0x33, 1 << 16);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.sdom, mem2, 1 << 16,
                                   RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE, &mr2), 0);
    exp[0] = p.smr;
    exp[1] = mr2;
    t_connect(&p, exp, 2, 4);
    cr_assert_neq(p.smr->remote_base, (uint64_t)(uintptr_t)p.smem);
    cr_assert_neq(mr2->remote_base, (uint64_t)(uintptr_t)mem2);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.cdom, buf, sizeof(buf), RW_ACCESS_LOCAL, &lmr), 0);
    cr_assert_eq(one(p.cep, lmr, RW_OP_READ, buf, 4096, p.smr->remote_base + 12345, p.smr->rkey), 0);
    cr_assert_eq(memcmp(buf, p.smem + 12345, 4096), 0);
    memset(buf, 0xc7, sizeof(buf));
    cr_assert_eq(one(p.cep, lmr, RW_OP_WRITE, buf, 1000, mr2->remote_base + 777, mr2->rkey), 0);
    cr_assert_eq(mem2[776], 0x33);
    cr_assert_eq(memcmp(mem2 + 777, buf, 1000), 0);
    cr_assert_eq(mem2[1777], 0x33);
    /* The last byte, and one past it. */
    cr_assert_eq(one(p.cep, lmr, RW_OP_READ, buf, 1, mr2->remote_base + (1 << 16) - 1, mr2->rkey), 0);
    cr_assert_eq(one(p.cep, lmr, RW_OP_READ, buf, 2, mr2->remote_base + (1 << 16) - 1, mr2->rkey),
                 RAILWIRE_E_REMOTE_ACCESS);
    /* The raw virtual address names nothing. */
    cr_assert_eq(one(p.cep, lmr, RW_OP_READ, buf, 16, (uint64_t)(uintptr_t)mem2, mr2->rkey),
                 RAILWIRE_E_REMOTE_ACCESS);
    rw_tcp_ops.mr_dereg(lmr);
    rw_tcp_ops.ep_destroy(p.cep);
    rw_tcp_ops.ep_destroy(p.sep);
    p.cep = p.sep = NULL;
    rw_tcp_ops.mr_dereg(mr2);
    t_close(&p);
    free(mem2);
}

/* An RW client that dials a 1-layer RO port reads the first byte of layer
 * 0's rkey (little-endian: its low byte) as the server's ack.  Keys never
 * start with STATUS_OK (0), so that client is always refused (the Python
 * test_errors.test_dialect_mismatch failed about once in 256 runs before).
 * 4096 random keys: about 16 would start with 0 without the rule. */
Test(tcp_secrets, keys_never_start_with_the_status_ok_byte)
{
    static uint32_t k[4096];

    for (size_t i = 0; i < 4096; i++) {
        cr_assert_eq(rw_tcp_key_alloc(&k[i]), 0);
        cr_assert_neq(k[i] & 0xffu, 0u, "key %zu is 0x%08x", i, (unsigned)k[i]);
        cr_assert_neq(k[i], 0u);
    }
    for (size_t i = 0; i < 4096; i++)
        rw_tcp_key_free(k[i]);
}
