/* SPDX-License-Identifier: MIT */
/* Failover over the mock transport: a rail that dies, goes silent or
 * refuses posts has its slices re-issued elsewhere; refused accesses fail
 * only their transfer; with no rail left everything fails; nothing ever
 * completes as success with bytes missing. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mock_world.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

static struct mock_world w;

static void teardown_world(void)
{
    mock_world_fini(&w);
}

TestSuite(failover, .fini = teardown_world);

static railwire_mr *reg(void *p, size_t n)
{
    railwire_mr *mr = NULL;
    cr_assert_eq(railwire_mr_register(w.rs, p, n, &mr), 0);
    return mr;
}

Test(failover, rail_dying_mid_transfer_loses_nothing)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 2, 1, 4 * MIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 4 * MIB);
    railwire_mr *mr = reg(buf, 4 * MIB);
    mock_ep_fail_after(w.ep[1], 5);
    cr_assert_eq(railwire_read(w.rs, mr, buf, 4 * MIB, 0, 0, 20000), 0);
    cr_assert_eq(memcmp(buf, w.layer[0], 4 * MIB), 0);
    railwire_rail_stats st[2];
    railwire_railset_stats(w.rs, st, 2, sizeof(*st));
    cr_assert_eq(st[1].state, RAILWIRE_RAIL_DOWN);
    cr_assert_eq(st[1].down_reason, RAILWIRE_E_RAIL_DOWN);
    cr_assert_gt(st[1].reissued, 0);
    cr_assert_gt(st[1].errors, 0);
    cr_assert_eq(st[1].ops, 5);
    cr_assert_eq(st[0].state, RAILWIRE_RAIL_UP);
    cr_assert_eq(st[0].bytes_read + st[1].bytes_read, 4 * MIB);
    cr_assert_eq(mock_ep_killed(w.ep[1]), 1, "a dead rail's ep is killed before re-issue");
    /* The railset keeps working on the surviving rail. */
    memset(buf, 0, 4 * MIB);
    cr_assert_eq(railwire_read(w.rs, mr, buf, 1 * MIB, 0, 1000, 20000), 0);
    cr_assert_eq(memcmp(buf, w.layer[0] + 1000, 1 * MIB), 0);
    free(buf);
}

Test(failover, silent_rail_times_out_and_its_slices_move)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 150);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RW, 3, 1, 2 * MIB, NULL, &o), 0);
    uint8_t *buf = malloc(2 * MIB);
    for (size_t i = 0; i < 2 * MIB; i++)
        buf[i] = (uint8_t)(i * 7 + 3);
    railwire_mr *mr = reg(buf, 2 * MIB);
    mock_ep_blackhole(w.ep[0], 1);
    cr_assert_eq(railwire_write(w.rs, mr, buf, 2 * MIB, 0, 0, 20000), 0);
    cr_assert_eq(memcmp(w.layer[0], buf, 2 * MIB), 0);
    railwire_rail_stats st[3];
    railwire_railset_stats(w.rs, st, 3, sizeof(*st));
    cr_assert_eq(st[0].state, RAILWIRE_RAIL_DOWN);
    cr_assert_eq(st[0].down_reason, RAILWIRE_E_TIMEOUT);
    cr_assert_eq(st[0].reissued, 8, "its whole queue (depth 8) moved, got %llu",
                 (unsigned long long)st[0].reissued);
    cr_assert_eq(mock_ep_killed(w.ep[0]), 1);
    cr_assert_eq(mock_ep_bytes(w.ep[0]), 0);
    free(buf);
}

Test(failover, failing_post_takes_the_rail_down)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 2, 1, 1 * MIB, NULL, &o), 0);
    uint8_t *buf = malloc(1 * MIB);
    railwire_mr *mr = reg(buf, 1 * MIB);
    mock_ep_post_fails(w.ep[0], 1);
    cr_assert_eq(railwire_read(w.rs, mr, buf, 1 * MIB, 0, 0, 20000), 0);
    cr_assert_eq(memcmp(buf, w.layer[0], 1 * MIB), 0);
    cr_assert_eq(rw_test_rail_state(w.rs, 0), RAILWIRE_RAIL_DOWN);
    cr_assert_eq(rw_test_rail_stats(w.rs, 1).bytes_read, 1 * MIB);
    free(buf);
}

Test(failover, remote_access_error_fails_only_that_transfer)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 2, 2, 256 * KIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 512 * KIB);
    railwire_mr *mr = reg(buf, 512 * KIB);
    /* WRITE into a read-only layer. */
    cr_assert_eq(railwire_write(w.rs, mr, buf, 64 * KIB, 0, 0, 20000), RAILWIRE_E_REMOTE_ACCESS);
    /* Out of bounds: the tail runs past the layer. */
    cr_assert_eq(railwire_read(w.rs, mr, buf, 64 * KIB, 1, 224 * KIB, 20000),
                 RAILWIRE_E_REMOTE_ACCESS);
    for (int r = 0; r < 2; r++)
        cr_assert_eq(rw_test_rail_state(w.rs, r), RAILWIRE_RAIL_UP);
    cr_assert_eq(w.layer[0][0], mock_pattern(0, 0), "the refused WRITE changed nothing");
    cr_assert_eq(railwire_read(w.rs, mr, buf, 256 * KIB, 1, 0, 20000), 0);
    cr_assert_eq(memcmp(buf, w.layer[1], 256 * KIB), 0);
    free(buf);
}

Test(failover, no_rail_left_fails_every_transfer_and_new_submits)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 10000);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 2, 1, 1 * MIB, NULL, &o), 0);
    uint8_t *buf = malloc(1 * MIB);
    railwire_mr *mr = reg(buf, 1 * MIB);
    mock_ep_fail_after(w.ep[0], 3);
    mock_ep_fail_after(w.ep[1], 3);
    enum { N = 8 };
    railwire_handle hs[N];
    for (int i = 0; i < N; i++) {
        railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf + i * 128 * KIB,
                          .length = 128 * KIB, .remote_offset = (uint64_t)i * 128 * KIB};
        cr_assert_eq(railwire_submit(w.rs, &op, &hs[i]), 0);
    }
    int got = 0, failed = 0;
    while (got < N) {
        railwire_completion c[N];
        int n = railwire_wait(w.rs, c, N, 20000);
        cr_assert_gt(n, 0);
        for (int k = 0; k < n; k++) {
            if (c[k].status == 0)
                cr_assert_fail("transfer %llu reported success with rails dying under it",
                               (unsigned long long)c[k].handle);
            cr_assert_eq(c[k].status, RAILWIRE_E_ALL_RAILS_DOWN);
            failed++;
        }
        got += n;
    }
    cr_assert_eq(failed, N);
    railwire_handle h;
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf, .length = 8};
    cr_assert_eq(railwire_submit(w.rs, &op, &h), RAILWIRE_E_ALL_RAILS_DOWN);
    cr_assert_eq(railwire_read(w.rs, mr, buf, 8, 0, 0, 100), RAILWIRE_E_ALL_RAILS_DOWN);
    cr_assert_eq(railwire_mr_deregister(mr), 0, "failed transfers release their registration");
    free(buf);
}

Test(failover, random_faults_never_report_success_with_wrong_bytes)
{
    srand(12345);
    for (int round = 0; round < 20; round++) {
        railwire_railset_opts o = mock_world_opts((size_t)(4 + rand() % 60) * KIB, 100);
        unsigned n = 2 + (unsigned)(rand() % 3);
        cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RW, n, 1, 2 * MIB, NULL, &o), 0);
        /* Every rail but the last may fail: it keeps the railset alive. */
        for (unsigned r = 0; r + 1 < n; r++) {
            int f = rand() % 4;
            if (f == 0)
                mock_ep_fail_after(w.ep[r], (unsigned)(rand() % 40));
            else if (f == 1)
                mock_ep_blackhole(w.ep[r], 1);
            else if (f == 2)
                mock_ep_set_per_poll(w.ep[r], 1 + (unsigned)(rand() % 3));
        }
        uint8_t *buf = malloc(2 * MIB);
        railwire_mr *mr = reg(buf, 2 * MIB);
        enum { N = 16 };
        struct { size_t off, len; } t[N];
        railwire_handle hs[N];
        for (int i = 0; i < N; i++) {
            t[i].len = 1 + (size_t)rand() % (128 * KIB);
            t[i].off = (size_t)i * 128 * KIB;
            railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf + t[i].off,
                              .length = t[i].len, .remote_offset = t[i].off,
                              .user_data = (uint64_t)i};
            cr_assert_eq(railwire_submit(w.rs, &op, &hs[i]), 0);
        }
        int got = 0;
        while (got < N) {
            railwire_completion c[N];
            int k = railwire_wait(w.rs, c, N, 20000);
            cr_assert_gt(k, 0, "round %d: wait failed (%d)", round, k);
            for (int j = 0; j < k; j++) {
                int i = (int)c[j].user_data;
                cr_assert_eq(c[j].status, 0, "round %d: a surviving rail must carry everything", round);
                cr_assert_eq(memcmp(buf + t[i].off, w.layer[0] + t[i].off, t[i].len), 0,
                             "round %d: transfer %d reported success with wrong bytes", round, i);
            }
            got += k;
        }
        cr_assert_eq(mock_violations(), 0);
        free(buf);
        mock_world_fini(&w);
    }
}

Test(failover, an_application_that_polls_late_does_not_kill_healthy_rails)
{
    railwire_railset_opts o = mock_world_opts(16 * KIB, 50);
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 2, 1, 1 * MIB, NULL, &o), 0);
    uint8_t *buf = malloc(256 * KIB);
    railwire_mr *mr = reg(buf, 256 * KIB);
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf, .length = 256 * KIB};
    railwire_handle h;
    cr_assert_eq(railwire_submit(w.rs, &op, &h), 0);
    usleep(200 * 1000); /* the ops finished in the transport long ago; nobody polled */
    railwire_completion c;
    cr_assert_eq(railwire_wait(w.rs, &c, 1, 20000), 1);
    cr_assert_eq(c.status, 0);
    cr_assert_eq(rw_test_rail_state(w.rs, 0), RAILWIRE_RAIL_UP);
    cr_assert_eq(rw_test_rail_state(w.rs, 1), RAILWIRE_RAIL_UP);
    cr_assert_eq(memcmp(buf, w.layer[0], 256 * KIB), 0);
    free(buf);
}
