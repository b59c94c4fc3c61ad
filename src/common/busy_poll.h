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

#include <stdint.h>

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

/* Returns 1 when an option value is acceptable (-1..RW_MAX_BUSY_POLL_US;
 * every negative value means never). */
static inline int rw_busy_poll_valid(int us)
{
    return us <= RW_MAX_BUSY_POLL_US;
}

#endif
