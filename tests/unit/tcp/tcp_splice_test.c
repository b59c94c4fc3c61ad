/* SPDX-License-Identifier: MIT */
/* Zero-copy READ answers (src/tcp/tcp_serve_splice.c): a server region
 * registered with RW_ACCESS_READ_BY_REFERENCE answers READs of
 * RW_TCP_SPLICE_MIN bytes and more through its connection's pipe
 * (vmsplice + splice), in order with the answers it copies and with
 * WRITEs, every byte as published; smaller answers and other regions are
 * copied; a rail that cannot have a pipe copies everything. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/time.h"
#include "tcp/tcp_budget.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_serve_splice.h"
#include "tcp_fixture.h"

#define LBUF (16u << 20)

struct zctx {
    struct tpair p;
    struct rw_mr *zmr;        /* p.smem again, by reference */
    uint8_t *lbuf;
    struct rw_mr *lmr;
};

/* Opens a pair whose server ep exposes p.smem twice: by reference (zmr)
 * and copied (p.smr). */
static void zc_open(struct zctx *c)
{
    struct rw_mr *exposed[2];

    t_open(&c->p, "127.0.0.1", 0);
    cr_assert_eq(rw_tcp_ops.mr_reg(c->p.sdom, c->p.smem, T_SRV_LEN,
                                   RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE |
                                       RW_ACCESS_READ_BY_REFERENCE,
                                   &c->zmr),
                 0);
    exposed[0] = c->zmr;
    exposed[1] = c->p.smr;
    t_connect(&c->p, exposed, 2, 16);
    c->lbuf = malloc(LBUF);
    cr_assert_not_null(c->lbuf);
    cr_assert_eq(rw_tcp_ops.mr_reg(c->p.cdom, c->lbuf, LBUF, RW_ACCESS_LOCAL, &c->lmr), 0);
}

static void zc_close(struct zctx *c)
{
    rw_tcp_ops.mr_dereg(c->lmr);
    rw_tcp_ops.ep_destroy(c->p.cep);
    rw_tcp_ops.ep_destroy(c->p.sep);
    c->p.cep = c->p.sep = NULL;
    rw_tcp_ops.mr_dereg(c->zmr);
    t_close(&c->p);
    free(c->lbuf);
}

/* The pipe state of the server's connection (read once the loop is done
 * with the requests: every answer has arrived, so a pipe taken for one has
 * gone back to the pool: 0; -1 once none could be made). */
static int pipe_state(const struct zctx *c)
{
    const struct rw_tcp_srv_ep *s = rw_container_of(c->p.sep, struct rw_tcp_srv_ep, base);
    return s->conn.pipe_state;
}

/* One READ of len bytes at remote offset roff into lbuf + loff through mr;
 * asserts it completes and carries the published bytes. */
static void read_one(struct zctx *c, const struct rw_mr *mr, size_t roff, size_t loff, size_t len)
{
    struct rw_wr wr = {.wr_id = 1, .opcode = RW_OP_READ, .local = c->lbuf + loff, .mr = c->lmr,
                       .length = (uint32_t)len, .remote_addr = mr->remote_base + roff,
                       .rkey = mr->rkey};
    struct rw_wc wc;

    memset(c->lbuf + loff, 0xEE, len);
    cr_assert_eq(rw_tcp_ops.ep_post(c->p.cep, &wr, 1), 1);
    cr_assert_eq(t_wait(c->p.cep, &wc, 1, 20000), 1, "READ of %zu bytes completes", len);
    cr_assert_eq(wc.status, 0);
    cr_assert_eq(memcmp(c->lbuf + loff, c->p.smem + roff, len), 0, "READ of %zu bytes", len);
}

/* READ payload bytes the server domain handed over by reference. */
static uint64_t by_ref_bytes(const struct zctx *c)
{
    struct rw_served sv = {0};

    cr_assert_eq(rw_tcp_ops.domain_served(c->p.sdom, &sv), 0);
    return sv.bytes_read_by_ref;
}

/* Waits (up to 5 s) until the server's connections have given every queued
 * byte back to the budget: what a pipe held was counted and returned. */
static void budget_drains(void)
{
    struct rw_tcp_budget_stats st;
    int64_t deadline = rw_now_ms() + 5000;

    do {
        rw_tcp_budget_get_stats(&st);
        if (st.queued == 0)
            return;
        usleep(5 * 1000);
    } while (rw_ms_left(deadline) > 0);
    cr_assert_fail("%llu bytes still counted as queued", (unsigned long long)st.queued);
}

/* A batch of READs big and small, at odd offsets, with WRITEs among them,
 * all in flight at once: the spliced answers and the copied ones keep
 * their order on the stream, and every byte is the one published. */
Test(tcp_splice, answers_by_reference_carry_every_byte_in_order, .timeout = 120)
{
    static const size_t len[] = {4096, 128u << 10, 1u << 20, (1u << 20) + 13, 65536,
                                 (4u << 20) - 1, 200000, 17, (3u << 20) + 4095};
    enum { N = sizeof(len) / sizeof(len[0]) };
    struct rw_wr wrs[N + 2];
    struct rw_wc wcs[N + 2];
    size_t roff[N], loff[N], at = 0;
    struct zctx c;

    zc_open(&c);
    for (size_t i = 0; i < N; i++) {
        roff[i] = (i * 4097u) % (T_SRV_LEN - len[i]);
        loff[i] = at + (i % 3);
        at = loff[i] + len[i];
        memset(c.lbuf + loff[i], 0xEE, len[i]);
        wrs[i] = (struct rw_wr){.wr_id = i, .opcode = RW_OP_READ, .local = c.lbuf + loff[i],
                                .mr = c.lmr, .length = (uint32_t)len[i],
                                .remote_addr = c.zmr->remote_base + roff[i], .rkey = c.zmr->rkey};
    }
    cr_assert_lt(at + (2u << 20), LBUF);
    /* two WRITEs into the last 2 MiB of the region, which no READ covers
     * (the READs end below T_SRV_LEN - 2 MiB: checked below) */
    uint8_t *w = c.lbuf + LBUF - (2u << 20);
    t_pattern(w, 2u << 20, 99);
    for (int k = 0; k < 2; k++)
        wrs[N + k] = (struct rw_wr){.wr_id = 100 + (uint64_t)k, .opcode = RW_OP_WRITE,
                                    .local = w + (size_t)k * (1u << 20), .mr = c.lmr,
                                    .length = k ? (1u << 20) : 4096,
                                    .remote_addr = c.zmr->remote_base + T_SRV_LEN - (2u << 20) +
                                                   (size_t)k * (1u << 20),
                                    .rkey = c.zmr->rkey};
    for (size_t i = 0; i < N; i++)
        cr_assert_leq(roff[i] + len[i], T_SRV_LEN - (2u << 20));
    /* interleave: READs 0..4, the WRITEs, READs 5.. */
    struct rw_wr order[N + 2];
    size_t o = 0;
    for (size_t i = 0; i < 5; i++)
        order[o++] = wrs[i];
    order[o++] = wrs[N];
    order[o++] = wrs[N + 1];
    for (size_t i = 5; i < N; i++)
        order[o++] = wrs[i];
    int got = t_post_all(c.p.cep, order, N + 2, wcs, 30000);
    got += t_wait(c.p.cep, wcs + got, N + 2 - got, 30000);
    cr_assert_eq(got, N + 2, "every WR completes");
    for (size_t i = 0; i < N + 2; i++)
        cr_assert_eq(wcs[i].status, 0, "wr %llu", (unsigned long long)wcs[i].wr_id);
    for (size_t i = 0; i < N; i++)
        cr_assert_eq(memcmp(c.lbuf + loff[i], c.p.smem + roff[i], len[i]), 0,
                     "READ %zu (%zu bytes at %zu)", i, len[i], roff[i]);
    cr_assert_eq(memcmp(c.p.smem + T_SRV_LEN - (2u << 20), w, 4096), 0, "small WRITE landed");
    cr_assert_eq(memcmp(c.p.smem + T_SRV_LEN - (1u << 20), w + (1u << 20), 1u << 20), 0,
                 "big WRITE landed");
    cr_assert_eq(pipe_state(&c), 0, "the pipe went back to the pool with the last answer");
    cr_assert_eq(rw_tcp_splice_pipes_open(), 1, "one pipe served every answer");
    uint64_t big = 0;
    for (size_t i = 0; i < N; i++)
        big += len[i] >= RW_TCP_SPLICE_MIN ? len[i] : 0;
    cr_assert_eq(by_ref_bytes(&c), big, "every byte of the big answers, and only those, counted (%llu, %llu)", (unsigned long long)by_ref_bytes(&c), (unsigned long long)big);
    /* a READ after a WRITE of the same bytes sees the WRITE */
    read_one(&c, c.zmr, T_SRV_LEN - (1u << 20), 0, 1u << 20);
    cr_assert_eq(memcmp(c.lbuf, w + (1u << 20), 1u << 20), 0);
    budget_drains();
    zc_close(&c);
}

/* Answers below RW_TCP_SPLICE_MIN, and answers from memory registered
 * without RW_ACCESS_READ_BY_REFERENCE, are copied: the connection never
 * opens a pipe for them. */
Test(tcp_splice, small_answers_and_other_regions_are_copied, .timeout = 60)
{
    struct zctx c;

    zc_open(&c);
    for (int i = 0; i < 8; i++)
        read_one(&c, c.zmr, (size_t)i * 100003u, 0, RW_TCP_SPLICE_MIN - 1);
    read_one(&c, c.p.smr, 12345, 0, 4u << 20);
    cr_assert_eq(rw_tcp_splice_pipes_open(), 0, "no pipe for small answers or copied regions");
    cr_assert_eq(by_ref_bytes(&c), 0);
    read_one(&c, c.zmr, 12345, 0, RW_TCP_SPLICE_MIN);
    cr_assert_eq(rw_tcp_splice_pipes_open(), 1, "the first big answer by reference opens one");
    cr_assert_eq(by_ref_bytes(&c), RW_TCP_SPLICE_MIN);
    budget_drains();
    zc_close(&c);
}

/* With no descriptor left for a pipe, the rail copies its answers; it
 * keeps copying within the retry interval, even once descriptors are free
 * again, and after it the next big answer goes by reference again. */
Test(tcp_splice, a_rail_that_cannot_have_a_pipe_copies_its_answers, .timeout = 60)
{
    struct rlimit was, none;
    struct zctx c;
    int probe;

    rw_tcp_splice_configure(0, 3600u * 1000); /* no retry in the first part */
    zc_open(&c);
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &was), 0);
    probe = dup(0); /* the lowest free descriptor: with the limit there, none is free */
    cr_assert_geq(probe, 0);
    close(probe);
    none = was;
    none.rlim_cur = (rlim_t)probe;
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &none), 0);
    read_one(&c, c.zmr, 777, 5, 2u << 20);
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &was), 0);
    cr_assert_eq(pipe_state(&c), -1, "the pipe could not be made");
    read_one(&c, c.zmr, 999, 0, 1u << 20);
    cr_assert_eq(pipe_state(&c), -1, "the rail copies until it tries again");
    cr_assert_eq(by_ref_bytes(&c), 0);

    rw_tcp_splice_configure(0, 1); /* the interval has passed after the sleep */
    usleep(20 * 1000);
    read_one(&c, c.zmr, 4096, 0, 1u << 20);
    cr_assert_eq(by_ref_bytes(&c), 1u << 20, "the rail tried again and answered by reference");
    cr_assert_eq(pipe_state(&c), 0, "the pipe went back to the pool");
    rw_tcp_splice_configure(0, 0);
    budget_drains();
    zc_close(&c);
}

/* More connections than pipes: with a pool of one pipe, four rails' big
 * READs in flight at once all complete with every byte, each answer
 * through the pipe or copied when another holds it; the one pipe goes
 * back to the pool, and closes with the last server domain. */
Test(tcp_splice, connections_share_a_bounded_pool_of_pipes, .timeout = 120)
{
    enum { RAILS = 4, PER = 6 };
    struct rw_ep *sep[RAILS], *cep[RAILS];
    struct rw_wc wcs[RAILS][PER];
    struct rw_mr *zmr, *lmr;
    struct tpair p;
    uint8_t *lbuf;
    int got[RAILS] = {0};

    rw_tcp_splice_configure(1, 0);
    t_open(&p, "127.0.0.1", 0);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.sdom, p.smem, T_SRV_LEN,
                                   RW_ACCESS_REMOTE_READ | RW_ACCESS_READ_BY_REFERENCE, &zmr),
                 0);
    lbuf = malloc((size_t)RAILS * PER * (1u << 20));
    cr_assert_not_null(lbuf);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.cdom, lbuf, (size_t)RAILS * PER * (1u << 20),
                                   RW_ACCESS_LOCAL, &lmr), 0);
    for (int r = 0; r < RAILS; r++) {
        t_connect(&p, &zmr, 1, PER);
        sep[r] = p.sep;
        cep[r] = p.cep;
    }
    for (int r = 0; r < RAILS; r++)
        for (int i = 0; i < PER; i++) {
            size_t at = ((size_t)r * PER + (size_t)i) << 20;
            struct rw_wr wr = {.wr_id = (uint64_t)i, .opcode = RW_OP_READ, .local = lbuf + at,
                               .mr = lmr, .length = 1u << 20,
                               .remote_addr = zmr->remote_base + (at % (T_SRV_LEN - (1u << 20))),
                               .rkey = zmr->rkey};
            cr_assert_eq(rw_tcp_ops.ep_post(cep[r], &wr, 1), 1);
        }
    for (int r = 0; r < RAILS; r++) {
        got[r] = t_wait(cep[r], wcs[r], PER, 30000);
        cr_assert_eq(got[r], PER, "rail %d: every READ completes", r);
        for (int i = 0; i < PER; i++) {
            size_t at = ((size_t)r * PER + (size_t)i) << 20;
            cr_assert_eq(wcs[r][i].status, 0);
            cr_assert_eq(memcmp(lbuf + at, p.smem + (at % (T_SRV_LEN - (1u << 20))), 1u << 20), 0,
                         "rail %d READ %d", r, i);
        }
    }
    struct rw_served sv = {0};
    cr_assert_eq(rw_tcp_ops.domain_served(p.sdom, &sv), 0);
    cr_assert_gt(sv.bytes_read_by_ref, 0, "the pipe served some answers");
    cr_assert_leq(sv.bytes_read_by_ref, (uint64_t)RAILS * PER << 20);
    cr_assert_eq(rw_tcp_splice_pipes_open(), 1, "never more than the pool's one pipe");
    rw_tcp_ops.mr_dereg(lmr);
    for (int r = 0; r < RAILS; r++) {
        rw_tcp_ops.ep_destroy(cep[r]);
        rw_tcp_ops.ep_destroy(sep[r]);
    }
    p.cep = p.sep = NULL;
    rw_tcp_ops.mr_dereg(zmr);
    t_close(&p);
    cr_assert_eq(rw_tcp_splice_pipes_open(), 0, "the spare pipe closed with the last domain");
    free(lbuf);
}
