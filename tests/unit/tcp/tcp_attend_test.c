/* SPDX-License-Identifier: MIT */
/* Who receives a rail's answers (src/tcp/tcp_cli_attend.c): a caller that
 * waits on a rail with a short queue of small transfers reads the answers
 * itself (ep_arm returns 1), any other queue leaves them to the client's
 * event loop (ep_arm returns 0).  A fake server that never answers keeps
 * every posted request outstanding, so each case is one fixed queue. */
#include <criterion/criterion.h>

#include "tcp/tcp_internal.h"
#include "tcp_fixture.h"

#define KIB 1024u

/* Posts n transfers of len bytes (READs, or WRITEs if write) on the rail
 * of q; returns what ep_arm says then. */
static int arm_after_posts(struct t_silent *q, int write, unsigned n, size_t len)
{
    for (unsigned i = 0; i < n; i++) {
        struct rw_wr wr = {.wr_id = i, .opcode = write ? RW_OP_WRITE : RW_OP_READ,
                           .local = q->buf, .mr = q->lmr, .length = len,
                           .remote_addr = 4096 * (uint64_t)i, .rkey = 1};
        cr_assert_eq(rw_tcp_ops.ep_post(q->cep, &wr, 1), 1);
    }
    return rw_tcp_ops.ep_arm(q->cep);
}

/* With `others` more client rails open in the process (idle), posts n
 * transfers of len bytes on a fresh rail; returns what ep_arm says. */
static int arm_among_rails(unsigned others, int write, unsigned n, size_t len)
{
    struct rw_ep_cfg cfg = {.depth = 32};
    struct t_silent o[8], q;
    int rc;

    cr_assert_leq(others, 8);
    for (unsigned i = 0; i < others; i++)
        t_silent_open(&o[i], &cfg, 4 * KIB);
    t_silent_open(&q, &cfg, 1024 * KIB);
    cr_assert_eq(rw_tcp_ops.ep_arm(q.cep), 0, "nothing awaited: the loop keeps the input");
    rc = arm_after_posts(&q, write, n, len);
    cr_assert_geq(rc, 0);
    t_silent_close(&q);
    for (unsigned i = 0; i < others; i++)
        t_silent_close(&o[i]);
    return rc;
}

/* Posts n transfers of len bytes (READs, or WRITEs if write) on a fresh
 * rail whose server never answers, the only rail of the process; returns
 * what ep_arm says then. */
static int arm_with_queue(int write, unsigned n, size_t len)
{
    return arm_among_rails(0, write, n, len);
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

Test(tcp_attend, four_rails_four_small_reads_are_received_by_the_caller)
{
    cr_assert_eq(arm_among_rails(3, 0, 4, 4 * KIB), 1);
}

Test(tcp_attend, four_rails_five_small_reads_go_to_the_loop)
{
    cr_assert_eq(arm_among_rails(3, 0, 5, 4 * KIB), 0);
}

Test(tcp_attend, four_rails_two_large_writes_go_to_the_loop)
{
    cr_assert_eq(arm_among_rails(3, 1, 2, 64 * KIB), 0);
}

Test(tcp_attend, two_rails_eight_small_reads_are_received_by_the_caller)
{
    cr_assert_eq(arm_among_rails(1, 0, 8, 4 * KIB), 1);
}

Test(tcp_attend, five_rails_one_small_read_goes_to_the_loop)
{
    cr_assert_eq(arm_among_rails(4, 0, 1, 4 * KIB), 0);
}
