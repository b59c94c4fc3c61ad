/* SPDX-License-Identifier: MIT */
/* The process's busy-poll quiet time (see common/busy_poll.h): one clock
 * shared by every spinning thread, since losing the CPU to another
 * process is a property of the machine's load, not of one thread.  The
 * two values are updated apart; a race between two threads that lost
 * their CPUs at once only picks one of their quiet times. */
#include "common/busy_poll.h"

#include <stdatomic.h>
#include <time.h>

/* rw_now_ns until which no thread spins (0: never silenced), and the
 * length of that quiet time. */
static _Atomic uint64_t quiet_until_ns;
static _Atomic uint64_t quiet_len_ns;

uint64_t rw_busy_poll_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int rw_busy_poll_lost(uint64_t start_ns, uint64_t cpu0, uint64_t now_ns)
{
    uint64_t cpu = cpu0 ? rw_busy_poll_cpu_ns() : 0;
    /* Without the clock, every lost round counts. */
    if (cpu && cpu - cpu0 >= now_ns - start_ns)
        return 0; /* the process itself kept a CPU busy: its own threads ran */
    rw_busy_poll_preempted(now_ns);
    return 1;
}

int rw_busy_poll_quiet(uint64_t now_ns)
{
    return now_ns < atomic_load_explicit(&quiet_until_ns, memory_order_relaxed);
}

void rw_busy_poll_preempted(uint64_t now_ns)
{
    uint64_t until = atomic_load_explicit(&quiet_until_ns, memory_order_relaxed);
    uint64_t len = atomic_load_explicit(&quiet_len_ns, memory_order_relaxed);

    /* Lost again within one quiet time of the last one's end: the load
     * lasts, so stay quiet twice as long. */
    if (until && now_ns < until + len)
        len = len * 2 > RW_BUSY_POLL_QUIET_MAX_NS ? RW_BUSY_POLL_QUIET_MAX_NS : len * 2;
    else
        len = RW_BUSY_POLL_QUIET_MIN_NS;
    atomic_store_explicit(&quiet_len_ns, len, memory_order_relaxed);
    atomic_store_explicit(&quiet_until_ns, now_ns + len, memory_order_relaxed);
}

uint64_t rw_busy_poll_quiet_len_ns(void)
{
    return atomic_load_explicit(&quiet_len_ns, memory_order_relaxed);
}
