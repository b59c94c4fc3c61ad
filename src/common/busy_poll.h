/* SPDX-License-Identifier: MIT */
/* Bounded busy polling: a thread about to sleep for data that is on its way
 * (an answer to a request in flight, the next request of an active client)
 * first polls for a short window, giving way to any other runnable thread,
 * because on loopback and in VMs waking a sleeping thread costs more than
 * the transfer.  Only threads with work outstanding spin, and a window that
 * found nothing is not reopened until work arrives again, so an idle or
 * stalled peer never keeps a thread spinning. */
#ifndef RW_COMMON_BUSY_POLL_H
#define RW_COMMON_BUSY_POLL_H

#include <sched.h>
#include <stdint.h>

#include <railwire/error.h>

#include "common/log.h"
#include "common/time.h"

/* The window when an option says 0 (the default): Linux's recommended
 * net.core.busy_poll value. */
#define RW_DEFAULT_BUSY_POLL_US 50
/* The largest window an option may ask for (one second). */
#define RW_MAX_BUSY_POLL_US 1000000

/* Returns the window in nanoseconds for an option value in microseconds:
 * 0 = the default, negative = never spin. */
static inline uint64_t rw_busy_poll_ns(int us)
{
    if (us < 0)
        return 0;
    return (uint64_t)(us ? us : RW_DEFAULT_BUSY_POLL_US) * 1000u;
}

/* Checks an option value (every negative value means never; at most
 * RW_MAX_BUSY_POLL_US).  Returns 0, or RAILWIRE_E_INVALID with a message
 * that starts with `who` ("connect", "server"). */
static inline int rw_busy_poll_check(const char *who, int us)
{
    if (us <= RW_MAX_BUSY_POLL_US)
        return 0;
    rw_err("%s: busy_poll_us %d is above %d (one second); use 0 for the default (%d us) or -1 "
           "to sleep at once", who, us, RW_MAX_BUSY_POLL_US, RW_DEFAULT_BUSY_POLL_US);
    return RAILWIRE_E_INVALID;
}

/* An attempt plus the sched_yield after it that took this long means the
 * thread lost its CPU for a time slice: to another process on a machine
 * with no idle core, or to a peer thread of ours with a big piece of work
 * (a loop taking in 4 MiB of WRITEs).  Only the first gives the CPU away
 * at every yield, so such a round is read as load only when the whole
 * process ran less than one CPU's worth over the window so far: the CPU
 * went elsewhere.  Measured on 8 rails of 1 MiB WRITEs on an idle
 * machine: rounds of 1-2 ms by the dozen, the process at 1.0-2.0 CPUs over
 * their windows; beside two CPU-bound processes, 4 KiB READs: rounds of
 * 1-4 ms, the process under 0.25 CPU.  Silencing on every long round cost
 * those WRITEs a fifth of their rate; waiting for two in a row let most
 * losses under load through (a yield does not lose every time). */
#define RW_BUSY_POLL_PREEMPTED_NS (1000u * 1000u)
/* After such a loss no thread of the process spins for a quiet time: on a
 * machine whose cores are all taken, each sched_yield of a spin gives a
 * whole slice away, and a waiter woken by its fd is scheduled sooner than
 * one that yields (4 KiB READs at depth 1 on tcp loopback beside two
 * CPU-bound processes on 2 CPUs: as few as 250 a second spinning, against
 * 4,900-43,000 sleeping at once; docs/benchmarks.md, eighteenth session).
 * The quiet time starts at RW_BUSY_POLL_QUIET_MIN_NS (a lone stall of the
 * host costs little spinning) and doubles, up to RW_BUSY_POLL_QUIET_MAX_NS,
 * each time the first spins after it lose the CPU again (a lasting load). */
#define RW_BUSY_POLL_QUIET_MIN_NS (10u * 1000u * 1000u)
#define RW_BUSY_POLL_QUIET_MAX_NS (1000u * 1000u * 1000u)

/* Whether spinning is off for the process at time now_ns (a recent spin
 * lost its CPU: see RW_BUSY_POLL_QUIET_MIN_NS). */
int rw_busy_poll_quiet(uint64_t now_ns);
/* Records that a spin lost its CPU at now_ns: no spin for the quiet time. */
void rw_busy_poll_preempted(uint64_t now_ns);
/* The CPU time of every thread of the process in ns (0 if the clock
 * fails): what rw_busy_poll_run reads at the start of a window. */
uint64_t rw_busy_poll_cpu_ns(void);
/* For rw_busy_poll_run, after a round that lost its CPU, in a window that
 * began at start_ns with the process's CPU time at cpu0 (0: unknown):
 * returns 1 when the process ran less than one CPU's worth since then, and
 * silences it (rw_busy_poll_preempted); else 0. */
int rw_busy_poll_lost(uint64_t start_ns, uint64_t cpu0, uint64_t now_ns);
/* The length of the current (or last) quiet time in ns; 0 before any. */
uint64_t rw_busy_poll_quiet_len_ns(void);

/* Calls attempt(arg) until it returns non-zero or window_ns has passed (at
 * most timeout_ms when that is >= 0), giving way to other runnable threads
 * between attempts.  A round that reads as load (rw_busy_poll_lost) ends
 * the window and silences every spin of the process for a quiet time;
 * while silenced, returns 0 at once.  The process's CPU clock is read at
 * each window's start (one system call), so that a lost round can be told
 * from a peer thread's work.  Returns the last result: 0 when the window
 * passed (or was cut short) with nothing. */
static inline int rw_busy_poll_run(int (*attempt)(void *), void *arg, uint64_t window_ns,
                                   int timeout_ms)
{
    uint64_t now = rw_now_ns(), end;
    int r;

    if (rw_busy_poll_quiet(now))
        return 0;
    uint64_t start = now, cpu0 = rw_busy_poll_cpu_ns();
    if (timeout_ms >= 0 && (uint64_t)timeout_ms * 1000000u < window_ns)
        window_ns = (uint64_t)timeout_ms * 1000000u;
    end = now + window_ns;
    while (now < end) {
        uint64_t round = now;
        r = attempt(arg);
        if (r != 0)
            return r;
        sched_yield();
        now = rw_now_ns();
        if (now - round >= RW_BUSY_POLL_PREEMPTED_NS && rw_busy_poll_lost(start, cpu0, now))
            return 0;
    }
    return 0;
}

#endif
