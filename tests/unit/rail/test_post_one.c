/* SPDX-License-Identifier: MIT */
/* The direct post of a single-slice transfer (rw_stripe_post_one): when
 * the chosen rail refuses the post or takes nothing, the slice goes the
 * usual way (failover, another rail, or failure when no rail is left), and
 * a single-slice transfer never overtakes slices already pending. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "mock_world.h"

#define KIB 1024u

static struct mock_world w;

static void teardown_world(void)
{
    mock_world_fini(&w);
}

TestSuite(post_one, .fini = teardown_world);

static railwire_mr *reg(void *p, size_t n)
{
    railwire_mr *mr = NULL;
    cr_assert_eq(railwire_mr_register(w.rs, p, n, &mr), 0);
    return mr;
}

Test(post_one, a_refused_post_fails_the_rail_over_and_the_transfer_moves)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 2, 1, 256 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 64 * KIB);
    railwire_mr *mr = reg(buf, 64 * KIB);
    mock_ep_post_fails(w.ep[0], 1);
    /* Consecutive single-slice transfers start their rail choice at the next
     * rail, so one of the two meets rail 0. */
    for (int i = 0; i < 2; i++)
        cr_assert_eq(railwire_read(w.rs, mr, buf + i * 8 * KIB, 8 * KIB, 0, i * 8 * KIB, 20000), 0);
    cr_assert_eq(memcmp(buf, w.layer[0], 16 * KIB), 0);
    cr_assert_eq(rw_test_rail_state(w.rs, 0), RAILWIRE_RAIL_DOWN);
    cr_assert_eq(rw_test_rail_stats(w.rs, 1).bytes_read, 16 * KIB);
    cr_assert_eq(rw_test_pending(w.rs), 0);
    cr_assert_eq(mock_violations(), 0);
    free(buf);
}

Test(post_one, a_rail_that_takes_nothing_is_blocked_and_the_transfer_moves)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 2, 1, 256 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 64 * KIB);
    railwire_mr *mr = reg(buf, 64 * KIB);
    mock_ep_set_depth(w.ep[0], 0); /* ep_post accepts nothing */
    for (int i = 0; i < 2; i++)
        cr_assert_eq(railwire_read(w.rs, mr, buf + i * 8 * KIB, 8 * KIB, 0, i * 8 * KIB, 20000), 0);
    cr_assert_eq(memcmp(buf, w.layer[0], 16 * KIB), 0);
    cr_assert_eq(rw_test_rail_state(w.rs, 0), RAILWIRE_RAIL_UP, "a short post is no failure");
    cr_assert_eq(rw_test_rail_stats(w.rs, 0).ops, 0);
    cr_assert_eq(rw_test_rail_stats(w.rs, 1).bytes_read, 16 * KIB);
    /* Once it takes WRs again, rail 0 carries its share. */
    mock_ep_set_depth(w.ep[0], 64);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(railwire_read(w.rs, mr, buf, 8 * KIB, 0, 0, 20000), 0);
    cr_assert_gt(rw_test_rail_stats(w.rs, 0).ops, 0);
    free(buf);
}

Test(post_one, a_refused_post_on_the_only_rail_fails_the_transfer)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 1, 1, 256 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 64 * KIB);
    railwire_mr *mr = reg(buf, 64 * KIB);
    mock_ep_post_fails(w.ep[0], 1);
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf, .length = 4 * KIB,
                      .user_data = 7};
    railwire_handle h = 0;
    cr_assert_eq(railwire_submit(w.rs, &op, &h), 0, "submitted; it fails as a completion");
    railwire_completion c;
    cr_assert_eq(railwire_wait(w.rs, &c, 1, 5000), 1);
    cr_assert_eq(c.handle, h);
    cr_assert_eq(c.user_data, 7);
    cr_assert_eq(c.status, RAILWIRE_E_ALL_RAILS_DOWN);
    cr_assert_eq(rw_test_pending(w.rs), 0);
    cr_assert_eq(railwire_read(w.rs, mr, buf, 8, 0, 0, 100), RAILWIRE_E_ALL_RAILS_DOWN);
    cr_assert_eq(railwire_mr_deregister(mr), 0, "the failed transfer released its registration");
    free(buf);
}

Test(post_one, a_single_slice_transfer_queues_behind_pending_slices)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000); /* 8 slices in flight per rail */
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 1, 1, 512 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 512 * KIB);
    railwire_mr *mr = reg(buf, 512 * KIB);
    railwire_op big = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf, .length = 256 * KIB};
    railwire_op small = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf + 256 * KIB,
                         .length = 4 * KIB, .remote_offset = 256 * KIB};
    railwire_handle h[2];
    cr_assert_eq(railwire_submit(w.rs, &big, &h[0]), 0);
    cr_assert_eq(rw_test_pending(w.rs), 8, "16 slices, 8 posted");
    cr_assert_eq(railwire_submit(w.rs, &small, &h[1]), 0);
    cr_assert_eq(rw_test_pending(w.rs), 9, "the small one waits behind the pending slices");
    int got = 0;
    while (got < 2) {
        railwire_completion c[2];
        int n = railwire_wait(w.rs, c, 2, 5000);
        cr_assert_gt(n, 0);
        for (int k = 0; k < n; k++)
            cr_assert_eq(c[k].status, 0);
        got += n;
    }
    const struct rw_wr *log;
    cr_assert_eq(mock_log(&log), 17);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(log[i].length, 16 * KIB, "WR %d is a slice of the big transfer", i);
    cr_assert_eq(log[16].length, 4 * KIB, "the small transfer is posted last");
    cr_assert_eq(memcmp(buf, w.layer[0], 260 * KIB), 0);
    free(buf);
}
