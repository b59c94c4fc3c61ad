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

/* Posts n transfers of len bytes (READs, or WRITEs if write) on a fresh
 * rail whose server never answers; returns what ep_arm says then. */
static int arm_with_queue(int write, unsigned n, size_t len)
{
    struct rw_ep_cfg cfg = {.depth = 32};
    struct t_silent q;
    int rc;

    t_silent_open(&q, &cfg, 1024 * KIB);
    cr_assert_eq(rw_tcp_ops.ep_arm(q.cep), 0, "nothing awaited: the loop keeps the input");
    for (unsigned i = 0; i < n; i++) {
        struct rw_wr wr = {.wr_id = i, .opcode = write ? RW_OP_WRITE : RW_OP_READ,
                           .local = q.buf + (size_t)i * len % (1024 * KIB - len), .mr = q.lmr,
                           .length = len, .remote_addr = 4096 * (uint64_t)i, .rkey = 1};
        cr_assert_eq(rw_tcp_ops.ep_post(q.cep, &wr, 1), 1);
    }
    rc = rw_tcp_ops.ep_arm(q.cep);
    cr_assert_geq(rc, 0);
    t_silent_close(&q);
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
