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

/* Calls attempt(arg) until it returns non-zero or window_ns has passed (at
 * most timeout_ms when that is >= 0), giving way to other runnable threads
 * between attempts.  Returns the last result: 0 when the window passed with
 * nothing. */
static inline int rw_busy_poll_run(int (*attempt)(void *), void *arg, uint64_t window_ns,
                                   int timeout_ms)
{
    uint64_t now = rw_now_ns(), end;
    int r;

    if (timeout_ms >= 0 && (uint64_t)timeout_ms * 1000000u < window_ns)
        window_ns = (uint64_t)timeout_ms * 1000000u;
    end = now + window_ns;
    while (now < end) {
        r = attempt(arg);
        if (r != 0)
            return r;
        sched_yield();
        now = rw_now_ns();
    }
    return 0;
}

#endif
