/* SPDX-License-Identifier: MIT */
/* The tcp server's event loops and queue budget (issue 8, F3): clients
 * that send a big READ and never read the answer stall only their own
 * connections, cost no thread, and never get more than the budget queued. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/time.h"
#include "tcp/tcp_budget.h"
#include "tcp/tcp_loop.h"
#include "tcp_fixture.h"
#include "tcp_raw.h"

#define BIG (16u << 20)

struct attack {
    int n;
    struct rw_ep **sep;
    int *fd;
    uint8_t *mem;
    struct rw_mr *mr;
};

/* n raw clients on p's server domain, each with its own server ep exposing
 * a 16 MiB region registered with RW_ACCESS_* `access`; each sends one
 * 16 MiB READ and never reads. */
static void attack_start(struct tpair *p, struct attack *a, int n, int access)
{
    struct rw_ep_cfg scfg = {.depth = 4};
    uint16_t port = 0;

    a->n = n;
    a->sep = calloc((size_t)n, sizeof(*a->sep));
    a->fd = calloc((size_t)n, sizeof(*a->fd));
    a->mem = malloc(BIG);
    cr_assert(a->sep && a->fd && a->mem);
    memset(a->mem, 0x77, BIG);
    cr_assert_eq(rw_tcp_ops.mr_reg(p->sdom, a->mem, BIG, access, &a->mr), 0);
    scfg.exposed = &a->mr;
    scfg.n_exposed = 1;
    for (int i = 0; i < n; i++) {
        struct rw_qp_id cli = {.qpn = 0x100u + (unsigned)i, .psn = 0xabc0u + (unsigned)i};
        cr_assert_eq(rw_tcp_ops.ep_create(p->sdom, &scfg, &a->sep[i]), 0);
        cr_assert_eq(rw_tcp_ops.ep_connect(a->sep[i], &cli, 0), 0);
        port = (uint16_t)(a->sep[i]->local.qpn & 0xffff);
        a->fd[i] = raw_rail_open("127.0.0.2", port, &a->sep[i]->local, cli.qpn, cli.psn, 0);
        cr_assert_geq(a->fd[i], 0);
        cr_assert_eq(raw_rail_verdict(a->fd[i], 5000), RW_TCP_VERDICT_OK);
        cr_assert_eq(raw_rail_request(a->fd[i], RW_TCP_OP_READ, BIG, 0, a->mr->remote_base,
                                      a->mr->rkey), 0);
    }
}

static void attack_stop(struct attack *a)
{
    for (int i = 0; i < a->n; i++) {
        close(a->fd[i]);
        rw_tcp_ops.ep_destroy(a->sep[i]);
    }
    rw_tcp_ops.mr_dereg(a->mr);
    free(a->mem);
    free(a->sep);
    free(a->fd);
}

/* 64 READs of 1 MiB by a real client, each checked byte for byte. */
static void legit_reads(struct tpair *p)
{
    uint8_t *buf = malloc(1u << 20);
    struct rw_mr *lmr;

    cr_assert_not_null(buf);
    cr_assert_eq(rw_tcp_ops.mr_reg(p->cdom, buf, 1u << 20, RW_ACCESS_LOCAL, &lmr), 0);
    for (int i = 0; i < 64; i++) {
        size_t off = (size_t)(i % 7) * (1u << 20);
        struct rw_wr wr = {.wr_id = (uint64_t)i, .opcode = RW_OP_READ, .local = buf, .mr = lmr,
                           .length = 1u << 20, .remote_addr = p->smr->remote_base + off,
                           .rkey = p->smr->rkey};
        struct rw_wc wc;
        cr_assert_eq(rw_tcp_ops.ep_post(p->cep, &wr, 1), 1);
        cr_assert_eq(t_wait(p->cep, &wc, 1, 20000), 1, "READ %d completes", i);
        cr_assert_eq(wc.status, 0);
        cr_assert_eq(memcmp(buf, p->smem + off, 1u << 20), 0);
    }
    rw_tcp_ops.mr_dereg(lmr);
    free(buf);
}

/* One loop thread serves everything: 32 connections with an unread 16 MiB
 * answer each cost no thread and do not stall another connection of the
 * same domain, which the same loop keeps serving. */
Test(tcp_budget, unread_reads_stall_only_their_own_connections, .timeout = 120)
{
    struct tpair p;
    struct attack a;
    struct rw_tcp_budget_stats st;
    int named, before, after;

    rw_tcp_pool_configure(1);
    t_open(&p, "127.0.0.1", 0);
    before = proc_threads("rw-tcp", &named);
    attack_start(&p, &a, 32, RW_ACCESS_REMOTE_READ);
    usleep(200 * 1000);
    after = proc_threads("rw-tcp", &named);
    cr_assert_eq(after, before, "32 attached connections cost no thread (%d -> %d)", before, after);
    cr_assert_eq(rw_tcp_pool_threads(), 1);
    t_connect(&p, NULL, 0, 8);
    legit_reads(&p);
    rw_tcp_budget_get_stats(&st);
    cr_assert_gt(st.queued, 0, "the unread answers are queued");
    cr_assert_leq(st.peak, st.budget);
    for (int i = 0; i < a.n; i++)
        cr_assert_eq(rw_tcp_ops.ep_liveness(a.sep[i]), RW_EP_LIVE, "stalled, not dead yet");
    attack_stop(&a);
    t_close(&p);
    rw_tcp_budget_get_stats(&st);
    cr_assert_eq(st.queued, 0, "every byte returned once the connections are gone");
    cr_assert_eq(st.conns, 0);
}

/* A 2 MiB budget: 16 unread 16 MiB answers (on memory registered with
 * `access`) and a reading client together never have more than 2 MiB
 * queued, the reading client is served, and every byte is given back once
 * the connections are gone. */
static void budget_bound(int access)
{
    struct rw_domain_cfg sc = {.role = RW_ROLE_SERVER, .device = "127.0.0.1",
                               .tcp_queue_budget = 2u << 20};
    struct rw_domain_cfg cc = {.role = RW_ROLE_CLIENT, .device = "127.0.0.1"};
    struct rw_tcp_budget_stats st;
    struct attack a;
    struct tpair p;

    memset(&p, 0, sizeof(p));
    cr_assert_eq(rw_tcp_ops.domain_open(&sc, &p.sdom), 0);
    cr_assert_eq(rw_tcp_ops.domain_open(&cc, &p.cdom), 0);
    p.smem = malloc(T_SRV_LEN);
    cr_assert_not_null(p.smem);
    t_pattern(p.smem, T_SRV_LEN, 3);
    cr_assert_eq(rw_tcp_ops.mr_reg(p.sdom, p.smem, T_SRV_LEN, RW_ACCESS_REMOTE_READ, &p.smr), 0);
    rw_tcp_budget_reset_peak();
    t_connect(&p, NULL, 0, 8);
    attack_start(&p, &a, 16, access);
    usleep(300 * 1000);
    rw_tcp_budget_get_stats(&st);
    cr_assert_eq(st.budget, 2u << 20);
    cr_assert_gt(st.queued, 0);
    legit_reads(&p);
    rw_tcp_budget_get_stats(&st);
    cr_assert_leq(st.peak, st.budget, "peak %llu > budget %llu", (unsigned long long)st.peak,
                  (unsigned long long)st.budget);
    attack_stop(&a);
    t_close(&p);
    rw_tcp_budget_get_stats(&st);
    cr_assert_eq(st.queued, 0, "every byte returned once the connections are gone");
}

Test(tcp_budget, queued_bytes_never_exceed_the_budget, .timeout = 120)
{
    budget_bound(RW_ACCESS_REMOTE_READ);
}

/* The same with the answers handed to the sockets by reference
 * (tcp_serve_splice.c): the bytes in a connection's pipe count as queued. */
Test(tcp_budget, answers_by_reference_never_exceed_the_budget, .timeout = 120)
{
    budget_bound(RW_ACCESS_REMOTE_READ | RW_ACCESS_READ_BY_REFERENCE);
}

/* A connection that keeps its answer unread for the I/O timeout is closed
 * (its ep reports DEAD), without holding up the loop meanwhile. */
Test(tcp_budget, unread_answer_closed_after_io_timeout, .timeout = 60)
{
    struct tpair p;
    struct attack a;
    int64_t deadline;

    rw_tcp_pool_configure(1);
    t_open(&p, "127.0.0.1", 400);
    attack_start(&p, &a, 2, RW_ACCESS_REMOTE_READ);
    t_connect(&p, NULL, 0, 8);
    legit_reads(&p);
    deadline = rw_now_ms() + 10000;
    while (rw_tcp_ops.ep_liveness(a.sep[0]) != RW_EP_DEAD && rw_ms_left(deadline) > 0)
        usleep(10 * 1000);
    cr_assert_eq(rw_tcp_ops.ep_liveness(a.sep[0]), RW_EP_DEAD);
    cr_assert_eq(rw_tcp_ops.ep_liveness(p.sep), RW_EP_LIVE, "an idle client is fine");
    attack_stop(&a);
    t_close(&p);
}
