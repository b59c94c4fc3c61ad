/* SPDX-License-Identifier: MIT */
/* Where the detectors' events and the railset's timers meet the reactions.
 * The detectors (progress: completion errors; detect.c: op timeouts and
 * ep_check; stripe: post errors; rsess.c: a control connection's end)
 * only report to the rail state machine (rail_state.h).  Dispatch drains
 * those reports and calls the reactions: failover (kill the ep, take its
 * slices back or fail them) and healing (schedule an attempt).  Nothing
 * below calls back up into progress or here.
 *
 *   progress / submit / wait
 *        |  dispatch.h: rw_railset_dispatch, rw_railset_timers, rw_railset_next_deadline
 *        v
 *   heal.c  ->  failover.c  ->  xfer.h, rail_state.c
 *   stripe.c, detect.c, rsess.c  ->  rail_state.c (report only) */
#ifndef RW_RAIL_CLIENT_DISPATCH_H
#define RW_RAIL_CLIENT_DISPATCH_H
#if defined(RW_LAYER_RAIL_SERVER) || defined(RW_LAYER_RAIL_SESSION) || defined(RW_LAYER_RAIL_METRICS) || defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/client/ is private to the client (docs/architecture.md)"
#endif

#include "rail/client/rail_state.h"

/* How often the control connections are checked and the transport is asked
 * for out-of-band death signals (ep_check). */
#define RW_CHECK_INTERVAL_MS 100

/* Drains the reported events: each lost rail is failed over (and healing
 * told), a control connection's end is handed to the healer; then pending
 * slices are scheduled again, until no event is left. */
void rw_railset_dispatch_run(railwire_railset *rs, int64_t now);

/* rw_railset_dispatch_run when events are pending (inline: every progress
 * round asks). */
static inline void rw_railset_dispatch(railwire_railset *rs, int64_t now)
{
    if (rw_rail_events_pending(rs))
        rw_railset_dispatch_run(rs, now);
}

/* The railset's timers at `now`, with healing only: the events reported so
 * far are dispatched, then the healer's tick (install a finished attempt,
 * start the next) and the all-down bound. */
void rw_railset_timers(railwire_railset *rs, int64_t now);

/* The railset's next deadline (CLOCK_MONOTONIC ms; INT64_MAX: none): the
 * oldest outstanding slice's op timeout, the next ep_check pass while work
 * is outstanding, the heal timer and the all-down bound; `now` when events
 * wait for dispatch.  The waiter sleeps until then and no longer. */
int64_t rw_railset_next_deadline(const railwire_railset *rs, int64_t now);

#endif
