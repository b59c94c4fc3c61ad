/* SPDX-License-Identifier: MIT */
/* Regression tests from the adversarial review of the railset core, over
 * the mock transport: each test pins one bug that was found and fixed. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/time.h"
#include "mock_world.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

static struct mock_world w;

static void teardown_world(void)
{
    mock_world_fini(&w);
}

TestSuite(review, .fini = teardown_world);

/* The synchronous helpers: when the last rail times out, check_timeouts
 * fails the transfer inside rw_progress (which then reports 0 completions
 * polled); sync_op used to go to sleep_on_rails anyway, which with no live
 * rail slept for the whole remaining timeout (24 h for timeout -1) before
 * looking at the done list again.  The Criterion timeout catches the hang. */
Test(review, sync_read_returns_when_the_last_rail_times_out, .timeout = 30)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 200);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 1, 1, 256 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 64 * KIB);
    railwire_mr *mr = NULL;
    cr_assert_eq(railwire_mr_register(w.rs, buf, 64 * KIB, &mr), 0);
    mock_ep_blackhole(w.ep[0], 1);
    cr_assert_eq(railwire_read(w.rs, mr, buf, 64 * KIB, 0, 0, -1), RAILWIRE_E_ALL_RAILS_DOWN);
    cr_assert_eq(rw_test_rail_state(w.rs, 0), RAILWIRE_RAIL_DOWN);
    cr_assert_eq(rw_test_rail_stats(w.rs, 0).down_reason, RAILWIRE_E_TIMEOUT);
    free(buf);
}

/* Two silent rails: the first times out and its slices move to the second,
 * which times out too; the write must then fail at once, not sleep. */
Test(review, sync_write_returns_when_every_rail_times_out, .timeout = 30)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 100);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RW, 2, 1, 256 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 128 * KIB);
    railwire_mr *mr = NULL;
    cr_assert_eq(railwire_mr_register(w.rs, buf, 128 * KIB, &mr), 0);
    mock_ep_blackhole(w.ep[0], 1);
    mock_ep_blackhole(w.ep[1], 1);
    cr_assert_eq(railwire_write(w.rs, mr, buf, 128 * KIB, 0, 0, -1), RAILWIRE_E_ALL_RAILS_DOWN);
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    free(buf);
}

/* Reads one transfer's completion and checks that nothing else comes. */
static railwire_completion only_completion(void)
{
    railwire_completion c[4];
    int n = railwire_wait(w.rs, c, 4, 20000);
    cr_assert_eq(n, 1, "wait returned %d", n);
    cr_assert_eq(railwire_poll(w.rs, c + 1, 3), 0, "a transfer completed twice");
    return c[0];
}

/* One transfer with slices on both rails: its tail is out of bounds
 * (remote-access) while a rail carrying its in-bounds slices dies.  The
 * transfer completes exactly once, with the remote-access error, the
 * surviving rail stays up and the registration is released. */
Test(review, remote_access_and_a_dying_rail_in_one_transfer)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 2, 1, 256 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 128 * KIB);
    railwire_mr *mr = NULL;
    cr_assert_eq(railwire_mr_register(w.rs, buf, 128 * KIB, &mr), 0);
    mock_ep_fail_after(w.ep[0], 1);
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf, .length = 128 * KIB,
                      .remote_offset = 192 * KIB, .user_data = 7};
    railwire_handle h;
    cr_assert_eq(railwire_submit(w.rs, &op, &h), 0);
    railwire_completion c = only_completion();
    cr_assert_eq(c.handle, h);
    cr_assert_eq(c.user_data, 7);
    cr_assert_eq(c.status, RAILWIRE_E_REMOTE_ACCESS);
    railwire_rail_stats st[2];
    railwire_railset_stats(w.rs, st, 2, sizeof(*st));
    cr_assert_eq(st[0].state, RAILWIRE_RAIL_DOWN);
    cr_assert_eq(st[1].state, RAILWIRE_RAIL_UP);
    /* 8 slices: 4 in bounds (each counted once as an op), 4 refused. */
    cr_assert_eq(st[0].ops + st[1].ops, 4);
    cr_assert_eq(st[0].bytes_read + st[1].bytes_read, 64 * KIB);
    cr_assert_eq(memcmp(buf, w.layer[0] + 192 * KIB, 64 * KIB), 0);
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    cr_assert_eq(mock_violations(), 0);
    free(buf);
}

/* Same, but every rail dies: still one completion, with an error. */
Test(review, remote_access_then_every_rail_dies)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 2, 1, 256 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 128 * KIB);
    railwire_mr *mr = NULL;
    cr_assert_eq(railwire_mr_register(w.rs, buf, 128 * KIB, &mr), 0);
    mock_ep_fail_after(w.ep[0], 1);
    mock_ep_fail_after(w.ep[1], 1);
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf, .length = 128 * KIB,
                      .remote_offset = 192 * KIB};
    railwire_handle h;
    cr_assert_eq(railwire_submit(w.rs, &op, &h), 0);
    railwire_completion c = only_completion();
    cr_assert_eq(c.handle, h);
    cr_assert(c.status == RAILWIRE_E_REMOTE_ACCESS || c.status == RAILWIRE_E_ALL_RAILS_DOWN,
              "status %d", c.status);
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    free(buf);
}

/* Input checks of the public API: NULLs, bad counts, a buffer outside its
 * registration, length 0, a layer out of range, overflowing offsets. */
Test(review, public_api_input_checks)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 2, 3, 64 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 64 * KIB);
    railwire_mr *mr = NULL, *m2 = NULL;
    cr_assert_eq(railwire_mr_register(NULL, buf, 10, &mr), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_mr_register(w.rs, NULL, 10, &mr), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_mr_register(w.rs, buf, 0, &mr), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_mr_register(w.rs, buf, 10, NULL), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_mr_register(w.rs, buf, 32 * KIB, &mr), 0);
    cr_assert_eq(railwire_mr_register(w.rs, buf + 32 * KIB, 32 * KIB, &m2), 0);
    railwire_handle h;
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf, .length = 16};
    cr_assert_eq(railwire_submit(NULL, &op, &h), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_submit(w.rs, NULL, &h), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_submit(w.rs, &op, NULL), RAILWIRE_E_INVALID);
    railwire_op bad = op;
    bad.length = 0;
    cr_assert_eq(railwire_submit(w.rs, &bad, &h), RAILWIRE_E_INVALID);
    bad = op;
    bad.mr = NULL;
    cr_assert_eq(railwire_submit(w.rs, &bad, &h), RAILWIRE_E_INVALID);
    bad = op;
    bad.local = buf + 32 * KIB - 8; /* runs 8 bytes past mr into m2's range */
    cr_assert_eq(railwire_submit(w.rs, &bad, &h), RAILWIRE_E_INVALID);
    bad = op;
    bad.local = buf + 32 * KIB; /* inside m2, not mr */
    cr_assert_eq(railwire_submit(w.rs, &bad, &h), RAILWIRE_E_INVALID);
    bad = op;
    bad.local = buf - 1;
    cr_assert_eq(railwire_submit(w.rs, &bad, &h), RAILWIRE_E_INVALID);
    bad = op;
    bad.length = SIZE_MAX;
    cr_assert_eq(railwire_submit(w.rs, &bad, &h), RAILWIRE_E_INVALID);
    bad = op;
    bad.opcode = (enum railwire_opcode)7;
    cr_assert_eq(railwire_submit(w.rs, &bad, &h), RAILWIRE_E_INVALID);
    bad = op;
    bad.layer = 3;
    cr_assert_eq(railwire_submit(w.rs, &bad, &h), RAILWIRE_E_REMOTE_ACCESS);
    bad = op;
    bad.remote_offset = UINT64_MAX - 8;
    cr_assert_eq(railwire_submit(w.rs, &bad, &h), RAILWIRE_E_INVALID);
    bad = op;
    bad.remote_offset = UINT64_MAX - 100; /* fits alone, not with the base address */
    bad.length = 16;
    cr_assert_lt(railwire_submit(w.rs, &bad, &h), 0);
    /* batch: stops at the first invalid op */
    railwire_op batch[3] = {op, op, op};
    batch[1].length = 0;
    railwire_handle hs[3] = {0};
    cr_assert_eq(railwire_submit_batch(w.rs, batch, 3, hs), 1);
    cr_assert_neq(hs[0], 0);
    cr_assert_eq(railwire_submit_batch(w.rs, batch + 1, 2, hs), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_submit_batch(w.rs, NULL, 2, hs), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_submit_batch(w.rs, batch, 0, NULL), 0);
    railwire_completion c[2];
    cr_assert_eq(railwire_poll(NULL, c, 2), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_poll(w.rs, NULL, 2), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_poll(w.rs, c, -1), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_wait(w.rs, NULL, 1, 10), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_wait(w.rs, c, 0, 10), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_wait(NULL, c, 1, 10), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_wait(w.rs, c, 2, 20000), 1);
    cr_assert_eq(c[0].status, 0);
    cr_assert_eq(railwire_read(NULL, mr, buf, 16, 0, 0, 100), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_read(w.rs, NULL, buf, 16, 0, 0, 100), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_read(w.rs, mr, buf, 0, 0, 0, 100), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_railset_stats(NULL, NULL, 0, sizeof(railwire_rail_stats)), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_railset_stats(w.rs, NULL, 1, sizeof(railwire_rail_stats)), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_railset_stats(w.rs, NULL, 0, sizeof(railwire_rail_stats)), 2);
    cr_assert_eq(railwire_railset_rail_count(NULL), 0);
    cr_assert_eq(railwire_railset_layer_count(w.rs), 3);
    cr_assert_eq(railwire_mr_deregister(NULL), 0);
    cr_assert_eq(railwire_mr_deregister(m2), 0);
    railwire_railset_close(NULL);
    free(buf);
}
