/* SPDX-License-Identifier: MIT */
/* Data path over real loopback sockets: READ and WRITE of many sizes
 * checked byte for byte, pipelining beyond the queue depth, IPv6, and the
 * wait fd. */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/time.h"
#include "tcp/tcp_internal.h"
#include "tcp_fixture.h"

static const uint32_t sizes[] = {1, 7, 4096, 65537, (1u << 20) + 3, 4u << 20};

static void roundtrip(struct tpair *p)
{
    uint8_t *buf = malloc(8u << 20), *want = malloc(8u << 20);
    struct rw_mr *lmr;
    size_t i;

    cr_assert(buf && want);
    cr_assert_eq(rw_tcp_ops.mr_reg(p->cdom, buf, 8u << 20, RW_ACCESS_LOCAL, &lmr), 0);
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint32_t len = sizes[i];
        uint64_t off = (i * 12345u) % (T_SRV_LEN - len);
        struct rw_wr wr = {.wr_id = 100 + i, .opcode = RW_OP_READ, .local = buf + 1, .mr = lmr,
                           .length = len, .remote_addr = p->smr->remote_base + off,
                           .rkey = p->smr->rkey, .signaled = 1};
        struct rw_wc wc;

        /* READ: the client's buffer gets exactly the server's bytes. */
        memset(buf, 0, len + 2);
        cr_assert_eq(rw_tcp_ops.ep_post(p->cep, &wr, 1), 1);
        cr_assert_eq(t_wait(p->cep, &wc, 1, 10000), 1);
        cr_assert_eq(wc.wr_id, 100 + i);
        cr_assert_eq(wc.status, 0, "READ %u: status %d", len, wc.status);
        cr_assert_eq(wc.byte_len, len);
        cr_assert_eq(memcmp(buf + 1, p->smem + off, len), 0, "READ of %u bytes differs", len);
        cr_assert_eq(buf[0], 0, "READ wrote before its buffer");
        cr_assert_eq(buf[len + 1], 0, "READ wrote past its buffer");

        /* WRITE: the server's memory gets exactly the client's bytes, and
         * nothing around them changes. */
        t_pattern(want, len, 1000 + (uint32_t)i);
        memcpy(buf + 1, want, len);
        {
            uint8_t before = off ? p->smem[off - 1] : 0, after = p->smem[off + len];
            wr.opcode = RW_OP_WRITE;
            wr.wr_id = 200 + i;
            cr_assert_eq(rw_tcp_ops.ep_post(p->cep, &wr, 1), 1);
            cr_assert_eq(t_wait(p->cep, &wc, 1, 10000), 1);
            cr_assert_eq(wc.wr_id, 200 + i);
            cr_assert_eq(wc.status, 0, "WRITE %u: status %d", len, wc.status);
            cr_assert_eq(memcmp(p->smem + off, want, len), 0, "WRITE of %u bytes differs", len);
            if (off)
                cr_assert_eq(p->smem[off - 1], before);
            cr_assert_eq(p->smem[off + len], after);
        }
    }
    rw_tcp_ops.mr_dereg(lmr);
    free(buf);
    free(want);
}

Test(tcp_data, read_write_sizes_ipv4)
{
    struct tpair p;
    t_open(&p, "127.0.0.1", 0);
    t_connect(&p, NULL, 0, 8);
    roundtrip(&p);
    t_close(&p);
}

Test(tcp_data, read_write_sizes_ipv6)
{
    struct tpair p;
    t_open(&p, "::1", 0);
    t_connect(&p, NULL, 0, 8);
    cr_assert_eq(p.sep->local.gid[15], 1, "server GID is ::1");
    cr_assert_eq(p.sep->local.gid[10], 0, "::1 is not IPv4-mapped");
    roundtrip(&p);
    t_close(&p);
}

/* 120 mixed READs and WRITEs of random sizes through a queue of depth 16:
 * every WR completes once, in order, with the right bytes. */
Test(tcp_data, pipelined_beyond_depth)
{
    enum { N = 120, DEPTH = 16, REGION = 64 * 1024 }; /* N * REGION <= T_SRV_LEN */
    struct tpair p;
    uint8_t *lbuf = malloc((size_t)N * REGION), *expect = malloc(T_SRV_LEN);
    struct rw_wr *wrs = calloc(N, sizeof(*wrs));
    struct rw_wc *wcs = calloc(N, sizeof(*wcs));
    struct rw_mr *lmr;
    int got, i;

    cr_assert(lbuf && expect && wrs && wcs);
    t_open(&p, "127.0.0.1", 0);
    t_connect(&p, NULL, 0, DEPTH);
    memcpy(expect, p.smem, T_SRV_LEN);
    t_pattern(lbuf, (size_t)N * REGION, 7);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.cdom, lbuf, (size_t)N * REGION, RW_ACCESS_LOCAL, &lmr), 0);
    srand(3);
    for (i = 0; i < N; i++) {
        uint32_t len = 1 + (uint32_t)rand() % REGION;
        /* Each WR owns a disjoint server range, so order does not matter for data. */
        uint64_t off = (uint64_t)i * REGION + (uint32_t)rand() % (REGION - len + 1);
        wrs[i] = (struct rw_wr){.wr_id = (uint64_t)i, .opcode = (i % 3) ? RW_OP_READ : RW_OP_WRITE,
                                .local = lbuf + (size_t)i * REGION, .mr = lmr, .length = len,
                                .remote_addr = p.smr->remote_base + off, .rkey = p.smr->rkey};
        if (wrs[i].opcode == RW_OP_WRITE)
            memcpy(expect + off, wrs[i].local, len);
    }
    got = t_post_all(p.cep, wrs, N, wcs, 30000);
    got += t_wait(p.cep, wcs + got, N - got, 30000);
    cr_assert_eq(got, N);
    for (i = 0; i < N; i++) {
        cr_assert_eq(wcs[i].wr_id, (uint64_t)i, "completions in posting order");
        cr_assert_eq(wcs[i].status, 0);
        cr_assert_eq(wcs[i].byte_len, wrs[i].length);
        if (wrs[i].opcode == RW_OP_READ)
            cr_assert_eq(memcmp(wrs[i].local, expect + (wrs[i].remote_addr - p.smr->remote_base),
                                wrs[i].length), 0, "READ %d differs", i);
    }
    cr_assert_eq(memcmp(p.smem, expect, T_SRV_LEN), 0, "server memory after the WRITEs");
    rw_tcp_ops.mr_dereg(lmr);
    t_close(&p);
    free(lbuf);
    free(expect);
    free(wrs);
    free(wcs);
}

/* A full queue accepts nothing more until completions are polled. */
Test(tcp_data, post_bounded_by_depth)
{
    struct tpair p;
    uint8_t buf[64];
    struct rw_mr *lmr;
    struct rw_wr wrs[6];
    struct rw_wc wcs[6];
    int i;

    t_open(&p, "127.0.0.1", 0);
    t_connect(&p, NULL, 0, 4);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.cdom, buf, sizeof(buf), RW_ACCESS_LOCAL, &lmr), 0);
    for (i = 0; i < 6; i++)
        wrs[i] = (struct rw_wr){.wr_id = (uint64_t)i, .opcode = RW_OP_READ, .local = buf, .mr = lmr,
                                .length = 8, .remote_addr = p.smr->remote_base, .rkey = p.smr->rkey};
    cr_assert_eq(rw_tcp_ops.ep_post(p.cep, wrs, 6), 4);
    cr_assert_eq(t_wait(p.cep, wcs, 4, 10000), 4);
    cr_assert_eq(rw_tcp_ops.ep_post(p.cep, wrs + 4, 2), 2);
    cr_assert_eq(t_wait(p.cep, wcs, 2, 10000), 2);
    cr_assert_eq(wcs[1].wr_id, 5);
    rw_tcp_ops.mr_dereg(lmr);
    t_close(&p);
}

/* The wait fd becomes readable when a completion is queued, and ep_arm
 * clears a stale wakeup. */
Test(tcp_data, wait_fd_signals_completion)
{
    struct tpair p;
    uint8_t buf[16];
    struct rw_mr *lmr;
    struct rw_wc wc;
    struct pollfd pfd;
    struct rw_wr wr;

    t_open(&p, "127.0.0.1", 0);
    t_connect(&p, NULL, 0, 4);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.cdom, buf, sizeof(buf), RW_ACCESS_LOCAL, &lmr), 0);
    pfd = (struct pollfd){.fd = rw_tcp_ops.ep_wait_fd(p.cep), .events = POLLIN};
    cr_assert_geq(pfd.fd, 0);
    cr_assert_eq(rw_tcp_ops.ep_arm(p.cep), 0);
    cr_assert_eq(poll(&pfd, 1, 0), 0, "armed and idle: not readable");
    wr = (struct rw_wr){.wr_id = 9, .opcode = RW_OP_READ, .local = buf, .mr = lmr, .length = 16,
                        .remote_addr = p.smr->remote_base, .rkey = p.smr->rkey};
    cr_assert_eq(rw_tcp_ops.ep_post(p.cep, &wr, 1), 1);
    cr_assert_eq(poll(&pfd, 1, 10000), 1, "readable once the completion is queued");
    cr_assert_eq(rw_tcp_ops.ep_poll(p.cep, &wc, 1), 1);
    cr_assert_eq(wc.wr_id, 9);
    cr_assert_eq(rw_tcp_ops.ep_arm(p.cep), 0);
    cr_assert_eq(poll(&pfd, 1, 0), 0, "ep_arm cleared the wakeup");
    rw_tcp_ops.mr_dereg(lmr);
    t_close(&p);
}

/* How many completions the client ep has published (ep->done). */
static uint64_t cli_done(struct rw_ep *ep)
{
    struct rw_tcp_cli_ep *c = rw_container_of(ep, struct rw_tcp_cli_ep, base);
    pthread_mutex_lock(&c->lock);
    uint64_t d = c->done;
    pthread_mutex_unlock(&c->lock);
    return d;
}

/* Waits up to 10 s for the client ep to publish n completions. */
static void wait_done(struct rw_ep *ep, uint64_t n)
{
    int64_t end = rw_now_ms() + 10000;
    while (cli_done(ep) < n && rw_now_ms() < end)
        usleep(1000);
    cr_assert_geq(cli_done(ep), n, "the answer never came");
}

/* ep_arm_after(ep, 2): the first completion, which cannot finish what the
 * caller awaits, leaves the wait fd quiet; the second wakes it, and both
 * are there to poll.  64 KiB READs, so that the loop receives (a caller
 * awaiting a few small answers has the socket itself in its wait set). */
Test(tcp_data, wait_fd_armed_after_two_wakes_at_the_second_completion)
{
    enum { LEN = 64 * 1024 };
    struct tpair p;
    struct rw_mr *lmr;
    uint8_t *buf = t_open_with_buf(&p, 0, 4, 2 * LEN, &lmr);
    struct rw_wc wc[2];

    struct pollfd pfd = {.fd = rw_tcp_ops.ep_wait_fd(p.cep), .events = POLLIN};
    struct rw_wr wr = {.wr_id = 1, .opcode = RW_OP_READ, .local = buf, .mr = lmr, .length = LEN,
                       .remote_addr = p.smr->remote_base, .rkey = p.smr->rkey, .signaled = 1};
    /* Armed, then polled once more and found empty, as the ops contract
     * has it: the caller sleeps. */
    cr_assert_eq(rw_tcp_ops.ep_arm_after(p.cep, 2), 0);
    cr_assert_eq(rw_tcp_ops.ep_poll(p.cep, wc, 2), 0);
    cr_assert_eq(rw_tcp_ops.ep_post(p.cep, &wr, 1), 1);
    wait_done(p.cep, 1);
    cr_assert_eq(poll(&pfd, 1, 0), 0, "one of the two awaited completions woke the waiter");
    wr.wr_id = 2;
    wr.local = buf + LEN;
    cr_assert_eq(rw_tcp_ops.ep_post(p.cep, &wr, 1), 1);
    cr_assert_eq(poll(&pfd, 1, 10000), 1, "the second completion did not wake the waiter");
    cr_assert_eq(rw_tcp_ops.ep_poll(p.cep, wc, 2), 2);
    cr_assert_eq(wc[0].wr_id, 1);
    cr_assert_eq(wc[1].wr_id, 2);
    cr_assert_eq(wc[0].status, 0);
    cr_assert_eq(wc[1].status, 0);
    cr_assert_eq(memcmp(buf, p.smem, LEN), 0);
    cr_assert_eq(memcmp(buf + LEN, p.smem, LEN), 0);
    /* Armed for one again, the next completion wakes at once. */
    cr_assert_eq(rw_tcp_ops.ep_arm_after(p.cep, 1), 0);
    cr_assert_eq(poll(&pfd, 1, 0), 0, "ep_arm_after cleared the wakeup");
    cr_assert_eq(rw_tcp_ops.ep_post(p.cep, &wr, 1), 1);
    cr_assert_eq(poll(&pfd, 1, 10000), 1);
    cr_assert_eq(rw_tcp_ops.ep_poll(p.cep, wc, 2), 1);
    rw_tcp_ops.mr_dereg(lmr);
    t_close(&p);
    free(buf);
}

/* A completion that failed wakes the waiter before its mark: the refused
 * READ (a key the server never gave) is all the caller gets. */
Test(tcp_data, a_failed_completion_wakes_a_waiter_armed_for_more)
{
    enum { LEN = 64 * 1024 };
    struct tpair p;
    struct rw_mr *lmr;
    uint8_t *buf = t_open_with_buf(&p, 0, 4, LEN, &lmr);
    struct rw_wc wc;

    struct pollfd pfd = {.fd = rw_tcp_ops.ep_wait_fd(p.cep), .events = POLLIN};
    struct rw_wr wr = {.wr_id = 7, .opcode = RW_OP_READ, .local = buf, .mr = lmr, .length = LEN,
                       .remote_addr = p.smr->remote_base, .rkey = p.smr->rkey ^ 0x5a5a5a5au,
                       .signaled = 1};
    cr_assert_eq(rw_tcp_ops.ep_arm_after(p.cep, 4), 0);
    cr_assert_eq(rw_tcp_ops.ep_post(p.cep, &wr, 1), 1);
    cr_assert_eq(poll(&pfd, 1, 10000), 1, "a refused READ did not wake the waiter");
    cr_assert_eq(rw_tcp_ops.ep_poll(p.cep, &wc, 1), 1);
    cr_assert_eq(wc.wr_id, 7);
    cr_assert_eq(wc.status, RAILWIRE_E_REMOTE_ACCESS);
    rw_tcp_ops.mr_dereg(lmr);
    t_close(&p);
    free(buf);
}

/* Invalid WRs are refused at post time. */
Test(tcp_data, post_rejects_invalid_wr)
{
    struct tpair p;
    uint8_t buf[16];
    struct rw_mr *lmr;
    struct rw_wr wr;

    t_open(&p, "127.0.0.1", 0);
    t_connect(&p, NULL, 0, 4);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.cdom, buf, sizeof(buf), RW_ACCESS_LOCAL, &lmr), 0);
    wr = (struct rw_wr){.wr_id = 1, .opcode = RW_OP_READ, .local = buf + 8, .mr = lmr, .length = 9,
                        .remote_addr = p.smr->remote_base, .rkey = p.smr->rkey};
    cr_assert_eq(rw_tcp_ops.ep_post(p.cep, &wr, 1), RAILWIRE_E_INVALID, "local range past its MR");
    wr.length = 0;
    cr_assert_eq(rw_tcp_ops.ep_post(p.cep, &wr, 1), RAILWIRE_E_INVALID, "zero length");
    rw_tcp_ops.mr_dereg(lmr);
    t_close(&p);
}
