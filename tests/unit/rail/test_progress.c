/* SPDX-License-Identifier: MIT */
/* Progress over the mock transport: poll and wait, the synchronous helpers,
 * timeouts and per-rail statistics. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mock_world.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

static struct mock_world w;

static void teardown_world(void)
{
    mock_world_fini(&w);
}

TestSuite(progress, .fini = teardown_world);

static railwire_mr *reg(void *p, size_t n)
{
    railwire_mr *mr = NULL;
    cr_assert_eq(railwire_mr_register(w.rs, p, n, &mr), 0);
    return mr;
}

Test(progress, poll_delivers_each_transfer_once_with_its_user_data)
{
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.slice_size = 32 * KIB;
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 2, 1, 1 * MIB, NULL, &o), 0);
    uint8_t *buf = malloc(1 * MIB);
    railwire_mr *mr = reg(buf, 1 * MIB);
    railwire_completion c[8];
    cr_assert_eq(railwire_poll(w.rs, c, 8), 0, "nothing submitted, nothing delivered");
    railwire_handle h[3];
    for (int i = 0; i < 3; i++) {
        railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf + i * 100 * KIB,
                          .length = 100 * KIB, .remote_offset = (uint64_t)i * 100 * KIB,
                          .user_data = 1000u + (unsigned)i};
        cr_assert_eq(railwire_submit(w.rs, &op, &h[i]), 0);
        cr_assert_neq(h[i], 0);
        for (int k = 0; k < i; k++)
            cr_assert_neq(h[i], h[k], "handles must be unique");
    }
    int got = 0, seen[3] = {0};
    while (got < 3) {
        int n = railwire_poll(w.rs, c, 8);
        cr_assert_geq(n, 0);
        for (int k = 0; k < n; k++) {
            int i = (int)(c[k].user_data - 1000);
            cr_assert(i >= 0 && i < 3);
            cr_assert_eq(c[k].handle, h[i]);
            cr_assert_eq(c[k].status, 0);
            cr_assert_eq(c[k].length, 100 * KIB);
            seen[i]++;
        }
        got += n;
    }
    cr_assert(seen[0] == 1 && seen[1] == 1 && seen[2] == 1);
    cr_assert_eq(railwire_poll(w.rs, c, 8), 0, "nothing is delivered twice");
    cr_assert_eq(memcmp(buf, w.layer[0], 300 * KIB), 0);
    free(buf);
}

Test(progress, wait_times_out_while_a_rail_is_silent_and_completes_later)
{
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.op_timeout_ms = 60000;
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 1, 1, 64 * KIB, NULL, &o), 0);
    uint8_t buf[4096];
    railwire_mr *mr = reg(buf, sizeof(buf));
    mock_ep_blackhole(w.ep[0], 1);
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf, .length = 4096};
    railwire_handle h;
    cr_assert_eq(railwire_submit(w.rs, &op, &h), 0);
    railwire_completion c;
    cr_assert_eq(railwire_wait(w.rs, &c, 1, 30), RAILWIRE_E_TIMEOUT);
    cr_assert_eq(railwire_read(w.rs, mr, buf, 16, 0, 0, 30), RAILWIRE_E_TIMEOUT);
    cr_assert_eq(rw_test_rail_state(w.rs, 0), RAILWIRE_RAIL_UP);
    mock_ep_blackhole(w.ep[0], 0);
    int got = 0;
    while (got < 2) {
        int n = railwire_wait(w.rs, &c, 1, 20000);
        cr_assert_eq(n, 1);
        cr_assert_eq(c.status, 0);
        got++;
    }
    cr_assert_eq(memcmp(buf, w.layer[0], 4096), 0);
}

Test(progress, wait_with_nothing_submitted_times_out)
{
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 1, 1, 4 * KIB, NULL, NULL), 0);
    railwire_completion c;
    cr_assert_eq(railwire_wait(w.rs, &c, 1, 10), RAILWIRE_E_TIMEOUT);
    cr_assert_eq(railwire_wait(NULL, &c, 1, 10), RAILWIRE_E_INVALID);
    cr_assert_eq(railwire_poll(NULL, &c, 1), RAILWIRE_E_INVALID);
}

Test(progress, busy_polled_transport_still_completes)
{
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 2, 1, 1 * MIB, NULL, NULL), 0);
    mock_ep_use_wait_fd(w.ep[0], 0);
    mock_ep_use_wait_fd(w.ep[1], 0);
    uint8_t *buf = malloc(1 * MIB);
    railwire_mr *mr = reg(buf, 1 * MIB);
    cr_assert_eq(railwire_read(w.rs, mr, buf, 1 * MIB, 0, 0, 20000), 0);
    cr_assert_eq(memcmp(buf, w.layer[0], 1 * MIB), 0);
    free(buf);
}

Test(progress, sync_helpers_keep_other_completions_for_later_polls)
{
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RW, 2, 1, 1 * MIB, NULL, NULL), 0);
    uint8_t *buf = malloc(256 * KIB);
    railwire_mr *mr = reg(buf, 256 * KIB);
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf, .length = 64 * KIB,
                      .user_data = 42};
    railwire_handle h;
    cr_assert_eq(railwire_submit(w.rs, &op, &h), 0);
    memset(buf + 128 * KIB, 0xab, 64 * KIB);
    cr_assert_eq(railwire_write(w.rs, mr, buf + 128 * KIB, 64 * KIB, 0, 512 * KIB, 20000), 0);
    for (size_t i = 0; i < 64 * KIB; i++)
        cr_assert_eq(w.layer[0][512 * KIB + i], 0xab);
    railwire_completion c[4];
    int n = railwire_poll(w.rs, c, 4);
    cr_assert_eq(n, 1, "the async read's completion must still be there");
    cr_assert_eq(c[0].handle, h);
    cr_assert_eq(c[0].user_data, 42);
    cr_assert_eq(memcmp(buf, w.layer[0], 64 * KIB), 0);
    free(buf);
}

Test(progress, stats_count_bytes_and_ops_per_rail)
{
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.slice_size = 64 * KIB;
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RW, 2, 1, 1 * MIB, NULL, &o), 0);
    uint8_t *buf = calloc(1, 512 * KIB);
    railwire_mr *mr = reg(buf, 512 * KIB);
    cr_assert_eq(railwire_write(w.rs, mr, buf, 512 * KIB, 0, 0, 20000), 0);
    cr_assert_eq(railwire_read(w.rs, mr, buf, 256 * KIB, 0, 0, 20000), 0);
    railwire_rail_stats st[2];
    cr_assert_eq(railwire_railset_stats(w.rs, st, 2, sizeof(*st)), 2);
    cr_assert_eq(st[0].bytes_written + st[1].bytes_written, 512 * KIB);
    cr_assert_eq(st[0].bytes_read + st[1].bytes_read, 256 * KIB);
    cr_assert_eq(st[0].ops + st[1].ops, 12);
    cr_assert_eq(st[0].bytes_written + st[0].bytes_read, mock_ep_bytes(w.ep[0]));
    cr_assert_eq(st[1].bytes_written + st[1].bytes_read, mock_ep_bytes(w.ep[1]));
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(st[r].index, (unsigned)r);
        cr_assert_eq(st[r].state, RAILWIRE_RAIL_UP);
        cr_assert_eq(st[r].errors, 0);
        cr_assert_eq(st[r].down_reason, 0);
        cr_assert_gt(st[r].gbps, 0);
        cr_assert_neq(st[r].name[0], '\0');
    }
    cr_assert_eq(railwire_railset_stats(w.rs, st, 1, sizeof(*st)), 2, "returns the rail count even if max is smaller");
    cr_assert_str_eq(railwire_railset_transport(w.rs), "mock");
    cr_assert_eq(railwire_railset_rail_count(w.rs), 2);
    cr_assert_eq(railwire_railset_layer_count(w.rs), 1);
    free(buf);
}

/* CPU time of the calling thread, in ns. */
static uint64_t self_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

Test(progress, a_stalled_rail_gets_one_spin_window_not_one_per_wakeup)
{
    /* With a slice stalled on a full rail and another pending behind it,
     * railwire_wait wakes every millisecond to retry the pending one; a
     * window reopened at each wake-up would keep the waiter on the CPU for
     * the whole second, one window takes 20 ms of it. */
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.op_timeout_ms = 60000;
    o.busy_poll_us = 20000;
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 1, 1, 64 * KIB, NULL, &o), 0);
    uint8_t buf[8192];
    railwire_mr *mr = reg(buf, sizeof(buf));
    mock_ep_blackhole(w.ep[0], 1);
    mock_ep_set_depth(w.ep[0], 1);
    for (int i = 0; i < 2; i++) {
        railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf + i * 4096,
                          .length = 4096, .remote_offset = (uint64_t)i * 4096};
        railwire_handle h;
        cr_assert_eq(railwire_submit(w.rs, &op, &h), 0);
    }
    cr_assert_gt(rw_test_pending(w.rs), 0, "the second transfer waits for room on the rail");
    railwire_completion c;
    uint64_t t0 = self_cpu_ns();
    cr_assert_eq(railwire_wait(w.rs, &c, 1, 1000), RAILWIRE_E_TIMEOUT);
    uint64_t used = self_cpu_ns() - t0;
    cr_assert_lt(used, 200ull * 1000000ull,
                 "waiting 1 s on a stalled rail took %llu ms of CPU (window 20 ms)",
                 (unsigned long long)(used / 1000000));
    /* Once the rail moves again both transfers complete. */
    mock_ep_blackhole(w.ep[0], 0);
    for (int got = 0; got < 2; got++) {
        cr_assert_eq(railwire_wait(w.rs, &c, 1, 20000), 1);
        cr_assert_eq(c.status, 0);
    }
    cr_assert_eq(memcmp(buf, w.layer[0], 8192), 0);
}

Test(progress, a_waiter_whose_windows_keep_finding_nothing_stops_spinning)
{
    /* Every answer comes 4 ms after its request, and the window is 2 ms:
     * a window opened for each transfer spins 2 ms for nothing each time
     * (80 ms of CPU over these 40 transfers).  After four empty windows in
     * a row the waiter sleeps at once, looking again with one window every
     * 16 sleeps. */
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.busy_poll_us = 2000;
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 1, 1, 64 * KIB, NULL, &o), 0);
    cr_assert_eq(mock_ep_set_delay_us(w.ep[0], 4000), 0);
    uint8_t buf[4096];
    railwire_mr *mr = reg(buf, sizeof(buf));
    uint64_t t0 = self_cpu_ns();
    for (int i = 0; i < 40; i++) {
        railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf,
                          .length = sizeof(buf), .remote_offset = (uint64_t)(i % 4) * 4096};
        railwire_handle h;
        railwire_completion c;
        cr_assert_eq(railwire_submit(w.rs, &op, &h), 0);
        cr_assert_eq(railwire_wait(w.rs, &c, 1, 20000), 1);
        cr_assert_eq(c.status, 0);
        cr_assert_eq(memcmp(buf, w.layer[0] + (i % 4) * 4096, sizeof(buf)), 0);
    }
    uint64_t used = self_cpu_ns() - t0;
    cr_assert_lt(used, 40ull * 1000000ull,
                 "40 answers 4 ms apart took %llu ms of CPU (a 2 ms window each: 80 ms)",
                 (unsigned long long)(used / 1000000));
}

Test(progress, busy_poll_defaults_to_50_us_and_minus_one_turns_it_off)
{
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 1, 1, 64 * KIB, NULL, NULL), 0);
    cr_assert_eq(rw_test_busy_poll_ns(w.rs), 50000, "the default window is 50 us");
    mock_world_fini(&w);
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.busy_poll_us = -1;
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 1, 1, 64 * KIB, NULL, &o), 0);
    cr_assert_eq(rw_test_busy_poll_ns(w.rs), 0, "-1: the waiter sleeps at once");
    uint8_t buf[4096];
    railwire_mr *mr = reg(buf, sizeof(buf));
    cr_assert_eq(railwire_read(w.rs, mr, buf, sizeof(buf), 0, 0, 20000), 0);
    cr_assert_eq(memcmp(buf, w.layer[0], 4096), 0);
}

/* ---- a sleeping waiter and another thread's submit ------------------- */

struct waiter_arg {
    railwire_railset *rs;
    int n;
    railwire_completion c;
};

static void *wait_one(void *arg)
{
    struct waiter_arg *a = arg;
    a->n = railwire_wait(a->rs, &a->c, 1, 30000);
    return NULL;
}

/* The waiter arms only the rails with work when it goes to sleep; a
 * transfer another thread then hands to an idle rail must reach the poll
 * set (the submit kicks the sleeper), or it would wait for the sleeper's
 * timeout (here 30 s; the silent rail's op timeout is 60 s).  The mock's
 * fd of the idle rail never fires by itself: only a re-arm after the kick
 * sees the transfer. */
Test(progress, a_submit_to_an_idle_rail_wakes_a_waiter_asleep_on_a_stalled_one, .timeout = 60)
{
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.op_timeout_ms = 60000;
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RO, 2, 1, 64 * KIB, NULL, &o), 0);
    static uint8_t buf[2][4096];
    railwire_mr *mr = reg(buf, sizeof(buf));
    mock_ep_blackhole(w.ep[0], 1);
    mock_ep_blackhole(w.ep[1], 1);
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf[0], .length = 4096};
    railwire_handle stalled, later;
    cr_assert_eq(railwire_submit(w.rs, &op, &stalled), 0);
    unsigned s = rw_test_rail_outstanding(w.rs, 0) ? 0 : 1, idle = 1 - s;
    cr_assert_eq(rw_test_rail_outstanding(w.rs, s), 1u);
    mock_ep_blackhole(w.ep[idle], 0); /* rail s stays silent */

    struct waiter_arg a = {.rs = w.rs};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, wait_one, &a), 0);
    int asleep = 0;
    for (int i = 0; i < 10000 && !asleep; i++) {
        asleep = rw_test_poller_sleeps(w.rs);
        if (!asleep) {
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    cr_assert(asleep, "the waiting thread did not go to sleep on the rails within 10 s");
    op.local = buf[1];
    op.remote_offset = 8192;
    cr_assert_eq(railwire_submit(w.rs, &op, &later), 0);
    /* Not a speed bound: without the kick the waiter sleeps out its 30 s
     * (the silent rail's op timeout is 60 s), a hang for the transfer. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    int joined = pthread_timedjoin_np(t, NULL, &until);
    cr_assert_eq(joined, 0, "the waiter still slept 10 s after a transfer went to the idle rail");
    cr_assert_eq(a.n, 1, "the waiter returned %d: the transfer on the idle rail was not delivered "
                 "while the other rail stayed silent", a.n);
    cr_assert_eq(a.c.handle, later);
    cr_assert_eq(a.c.status, 0);
    cr_assert_eq(memcmp(buf[1], w.layer[0] + 8192, 4096), 0);
    cr_assert_eq(rw_test_rail_outstanding(w.rs, s), 1u, "the silent rail still holds its READ");
    cr_assert_eq(rw_test_rail_state(w.rs, s), RAILWIRE_RAIL_UP);
    (void)stalled;
}

/* A sleeping poller is woken only by a completion that can finish a
 * transfer: on a rail whose WRs complete in order, a slice followed by
 * one of the same transfer cannot.  Transfers A (4 slices) and B (1) on
 * one silent rail: the sleep may let A's first 3 completions pass, and
 * once A is gone, none of B's.  With slices pending for the rail, at most
 * half its queue passes, so that it is refilled while half is in flight. */
Test(progress, a_sleeping_poller_lets_pass_the_slices_that_cannot_finish_a_transfer)
{
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.slice_size = 32 * KIB;
    o.queue_depth = 8;
    o.op_timeout_ms = 60000;
    cr_assert_eq(mock_world_init(&w, RAILWIRE_DIALECT_RW, 1, 1, 1 * MIB, NULL, &o), 0);
    uint8_t *buf = malloc(1 * MIB);
    cr_assert_not_null(buf);
    railwire_mr *mr = reg(buf, 1 * MIB);
    railwire_handle h;
    cr_assert_eq(rw_test_rail_wake_after(w.rs, 0), 1u, "an idle rail wakes at its first completion");
    mock_ep_blackhole(w.ep[0], 1);
    railwire_op a = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf, .length = 128 * KIB};
    cr_assert_eq(railwire_submit(w.rs, &a, &h), 0);
    railwire_op b = {.opcode = RAILWIRE_OP_WRITE, .mr = mr, .local = buf + 128 * KIB,
                     .length = 32 * KIB, .remote_offset = 128 * KIB};
    cr_assert_eq(railwire_submit(w.rs, &b, &h), 0);
    cr_assert_eq(rw_test_rail_outstanding(w.rs, 0), 5u);
    cr_assert_eq(rw_test_rail_wake_after(w.rs, 0), 4u, "A's 4th slice is the first that can finish");
    /* C: 8 slices, of which 3 fit (depth 8): 5 wait. */
    railwire_op c = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf + 256 * KIB,
                     .length = 256 * KIB, .remote_offset = 256 * KIB};
    cr_assert_eq(railwire_submit(w.rs, &c, &h), 0);
    cr_assert_eq(rw_test_rail_outstanding(w.rs, 0), 8u);
    cr_assert_eq(rw_test_pending(w.rs), 5u);
    cr_assert_eq(rw_test_rail_wake_after(w.rs, 0), 4u, "half of the 8 outstanding: A's end anyway");
    mock_ep_blackhole(w.ep[0], 0);
    railwire_completion done[3];
    cr_assert_eq(mock_world_wait_n(&w, done, 3), 3);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(done[i].status, 0);
    cr_assert_eq(memcmp(buf, w.layer[0], 128 * KIB), 0);
    cr_assert_eq(memcmp(buf + 256 * KIB, w.layer[0] + 256 * KIB, 256 * KIB), 0);
    /* One transfer of 16 slices, 8 in flight and 8 pending: 4 pass. */
    mock_ep_blackhole(w.ep[0], 1);
    railwire_op d = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf, .length = 512 * KIB};
    cr_assert_eq(railwire_submit(w.rs, &d, &h), 0);
    cr_assert_eq(rw_test_pending(w.rs), 8u);
    cr_assert_eq(rw_test_rail_wake_after(w.rs, 0), 4u, "pending slices: half of the queue");
    mock_ep_blackhole(w.ep[0], 0);
    cr_assert_eq(railwire_wait(w.rs, done, 1, 20000), 1);
    cr_assert_eq(done[0].status, 0);
    cr_assert_eq(memcmp(buf, w.layer[0], 512 * KIB), 0);
    free(buf);
}
