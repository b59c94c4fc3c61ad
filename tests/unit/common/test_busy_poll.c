/* SPDX-License-Identifier: MIT */
/* The busy-poll quiet time (common/busy_poll.h): a spin round that lost its
 * CPU for a slice ends the window and silences every spin of the process;
 * a loss again right after the quiet time doubles it, up to the maximum; a
 * loss long after starts again from the minimum.  The clock is passed in,
 * so the state machine is checked at exact instants; criterion runs each
 * test in its own process, so each starts unsilenced. */
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
    int sleep_first_ms; /* the first attempt sleeps this long (a lost slice) */
};

static int attempt(void *arg)
{
    struct attempts *a = arg;
    if (a->calls++ == 0 && a->sleep_first_ms) {
        struct timespec ts = {0, (long)a->sleep_first_ms * 1000000L};
        while (nanosleep(&ts, &ts) != 0)
            ;
    }
    return 0;
}

Test(busy_poll_quiet, a_round_that_loses_the_cpu_ends_the_window)
{
    struct attempts a = {.sleep_first_ms = 3};
    /* A 10 s window: only the lost round can end it this early. */
    cr_assert_eq(rw_busy_poll_run(attempt, &a, 10ull * 1000u * 1000u * 1000u, -1), 0);
    cr_assert_eq(a.calls, 1, "the window went on after a round of 3 ms");
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
