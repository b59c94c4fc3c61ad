/* SPDX-License-Identifier: MIT */
/* Who receives a rail's answers (src/tcp/tcp_cli_attend.c): a caller that
 * waits on a rail with a short queue of small transfers reads the answers
 * itself (ep_arm returns 1), any other queue leaves them to the client's
 * event loop (ep_arm returns 0).  A fake server that never answers keeps
 * every posted request outstanding, so each case is one fixed queue. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "tcp/tcp_internal.h"
#include "tcp_fixture.h"

#define KIB 1024u

struct queue {
    struct fake_srv f;
    struct rw_domain *cdom;
    struct rw_ep *cep;
    uint8_t *buf;
    struct rw_mr *lmr;
};

static void queue_open(struct queue *q)
{
    struct rw_domain_cfg cc = {.role = RW_ROLE_CLIENT, .device = "127.0.0.1", .io_timeout_ms = 60000};
    struct rw_ep_cfg ecfg = {.depth = 32};

    q->buf = calloc(1, 1024 * KIB);
    cr_assert_not_null(q->buf);
    fake_start(&q->f, RW_TCP_VERDICT_OK);
    cr_assert_eq(rw_tcp_ops.domain_open(&cc, &q->cdom), 0);
    cr_assert_eq(rw_tcp_ops.ep_create(q->cdom, &ecfg, &q->cep), 0);
    cr_assert_eq(rw_tcp_ops.ep_connect(q->cep, &q->f.id, 5000), 0);
    cr_assert_eq(rw_tcp_ops.mr_reg(q->cdom, q->buf, 1024 * KIB, RW_ACCESS_LOCAL, &q->lmr), 0);
}

static void queue_close(struct queue *q)
{
    rw_tcp_ops.ep_destroy(q->cep);
    rw_tcp_ops.mr_dereg(q->lmr);
    rw_tcp_ops.domain_close(q->cdom);
    fake_close(&q->f);
    free(q->buf);
}

/* Posts n transfers of len bytes (READs, or WRITEs if write) on a fresh
 * rail whose server never answers; returns what ep_arm says then. */
static int arm_with_queue(int write, unsigned n, size_t len)
{
    struct queue q;
    int rc;

    queue_open(&q);
    cr_assert_eq(rw_tcp_ops.ep_arm(q.cep), 0, "nothing awaited: the loop keeps the input");
    for (unsigned i = 0; i < n; i++) {
        struct rw_wr wr = {.wr_id = i, .opcode = write ? RW_OP_WRITE : RW_OP_READ,
                           .local = q.buf + (size_t)i * len % (1024 * KIB - len), .mr = q.lmr,
                           .length = len, .remote_addr = 4096 * (uint64_t)i, .rkey = 1};
        cr_assert_eq(rw_tcp_ops.ep_post(q.cep, &wr, 1), 1);
    }
    rc = rw_tcp_ops.ep_arm(q.cep);
    cr_assert_geq(rc, 0);
    queue_close(&q);
    return rc;
}

Test(tcp_attend, one_small_read_is_received_by_the_caller)
{
    cr_assert_eq(arm_with_queue(0, 1, 4 * KIB), 1);
}

Test(tcp_attend, eight_small_reads_are_received_by_the_caller)
{
    cr_assert_eq(arm_with_queue(0, 8, 4 * KIB), 1);
}

Test(tcp_attend, eight_small_writes_are_received_by_the_caller)
{
    cr_assert_eq(arm_with_queue(1, 8, 16 * KIB), 1);
}

Test(tcp_attend, nine_small_reads_go_to_the_loop)
{
    cr_assert_eq(arm_with_queue(0, 9, 4 * KIB), 0);
}

Test(tcp_attend, a_large_read_goes_to_the_loop)
{
    cr_assert_eq(arm_with_queue(0, 1, 16 * KIB + 1), 0);
}

Test(tcp_attend, two_large_writes_are_received_by_the_caller)
{
    /* their answers are verdicts: small whatever the payload */
    cr_assert_eq(arm_with_queue(1, 2, 64 * KIB), 1);
}

Test(tcp_attend, three_large_writes_go_to_the_loop)
{
    cr_assert_eq(arm_with_queue(1, 3, 64 * KIB), 0);
}
