/* SPDX-License-Identifier: MIT */
/* The busy-poll quiet time (common/busy_poll.h): a spin round that lost its
 * CPU for a slice ends the window and silences every spin of the process;
 * a loss again right after the quiet time doubles it, up to the maximum; a
 * loss long after starts again from the minimum; a long round while the
 * process itself kept a CPU busy (its own threads took the CPU) is no
 * loss.  The clocks are passed in, so the state machine is checked at
 * exact instants; criterion runs each test in its own process, so each
 * starts unsilenced. */
#include <criterion/criterion.h>
#include <time.h>

#include "common/busy_poll.h"

#define T0 (1000ull * 1000u * 1000u * 1000u) /* an instant far from 0 */

Test(busy_poll_quiet, a_loss_silences_for_the_minimum_then_spinning_resumes)
{
    cr_assert_not(rw_busy_poll_quiet(T0), "no loss yet: spinning is allowed");
    cr_assert_eq(rw_busy_poll_quiet_len_ns(), 0);
    rw_busy_poll_preempted(T0);
    cr_assert_eq(rw_busy_poll_quiet_len_ns(), RW_BUSY_POLL_QUIET_MIN_NS);
    cr_assert(rw_busy_poll_quiet(T0));
    cr_assert(rw_busy_poll_quiet(T0 + RW_BUSY_POLL_QUIET_MIN_NS - 1));
    cr_assert_not(rw_busy_poll_quiet(T0 + RW_BUSY_POLL_QUIET_MIN_NS));
}

Test(busy_poll_quiet, losses_right_after_each_quiet_time_double_it_up_to_the_maximum)
{
    uint64_t t = T0, len = RW_BUSY_POLL_QUIET_MIN_NS;
    rw_busy_poll_preempted(t);
    for (int i = 0; i < 20; i++) {
        t += len + 1; /* the first spin after the quiet time loses again */
        cr_assert_not(rw_busy_poll_quiet(t));
        rw_busy_poll_preempted(t);
        len = len * 2 > RW_BUSY_POLL_QUIET_MAX_NS ? RW_BUSY_POLL_QUIET_MAX_NS : len * 2;
        cr_assert_eq(rw_busy_poll_quiet_len_ns(), len, "loss %d in a row", i + 2);
        cr_assert(rw_busy_poll_quiet(t + len - 1));
        cr_assert_not(rw_busy_poll_quiet(t + len));
    }
    cr_assert_eq(len, RW_BUSY_POLL_QUIET_MAX_NS, "the quiet time reached its maximum");
    /* A loss long after the last quiet time ended: the load went away. */
    t += 3 * len;
    rw_busy_poll_preempted(t);
    cr_assert_eq(rw_busy_poll_quiet_len_ns(), RW_BUSY_POLL_QUIET_MIN_NS);
}

struct attempts {
    int calls;
    int sleep_ms;    /* the first sleepy_calls attempts sleep this long: */
    int sleepy_calls; /* a lost slice during which the process ran nothing */
};

static int attempt(void *arg)
{
    struct attempts *a = arg;
    if (a->calls++ < a->sleepy_calls) {
        struct timespec ts = {0, (long)a->sleep_ms * 1000000L};
        while (nanosleep(&ts, &ts) != 0)
            ;
    }
    return 0;
}

Test(busy_poll_quiet, a_round_that_loses_the_cpu_to_others_ends_the_window)
{
    /* The attempt sleeps 3 ms: the process ran nothing meanwhile, as when a
     * yield gave the CPU to another process for a slice. */
    struct attempts a = {.sleep_ms = 3, .sleepy_calls = 1};
    /* A 10 s window: only the lost round can end it this early. */
    cr_assert_eq(rw_busy_poll_run(attempt, &a, 10ull * 1000u * 1000u * 1000u, -1), 0);
    cr_assert_eq(a.calls, 1, "the window went on after a lost round");
    cr_assert_eq(rw_busy_poll_quiet_len_ns(), RW_BUSY_POLL_QUIET_MIN_NS);
}

Test(busy_poll_quiet, a_long_round_while_the_process_kept_a_cpu_busy_is_not_load)
{
    /* The clocks are passed in: the process is made to look as if it ran
     * 10 ms of CPU over a 5 ms window (its own threads took the CPU: a peer
     * loop's big piece of work), then 0 ms over a 50 ms one. */
    const uint64_t ms = 1000u * 1000u;
    cr_assert_gt(rw_busy_poll_cpu_ns(), 0, "the process CPU clock is readable");
    while (rw_busy_poll_cpu_ns() < 20 * ms) /* so that cpu - 10 ms is a real reading */
        ;
    uint64_t cpu = rw_busy_poll_cpu_ns(), now = rw_now_ns();
    cr_assert_eq(rw_busy_poll_lost(now - 5 * ms, cpu - 10 * ms, now), 0);
    cr_assert_eq(rw_busy_poll_quiet_len_ns(), 0, "the process's own work silenced the spin");
    cr_assert_not(rw_busy_poll_quiet(rw_now_ns()));
    cr_assert_eq(rw_busy_poll_lost(now - 50 * ms, cpu, now), 1);
    cr_assert_eq(rw_busy_poll_quiet_len_ns(), RW_BUSY_POLL_QUIET_MIN_NS);
}

Test(busy_poll_quiet, a_silenced_process_does_not_spin_at_all)
{
    struct attempts a = {0};
    /* Silenced until far beyond this test's end. */
    rw_busy_poll_preempted(rw_now_ns() + 3600ull * 1000u * 1000u * 1000u);
    cr_assert_eq(rw_busy_poll_run(attempt, &a, 1000u * 1000u, -1), 0);
    cr_assert_eq(a.calls, 0, "a silenced spin still polled %d time(s)", a.calls);
}
