/* SPDX-License-Identifier: MIT */
/* Dispatch of the rail events to failover and healing, the railset's
 * timers and its next deadline (see dispatch.h). */
#include "rail/client/dispatch.h"

#include "rail/client/heal.h"

void rw_railset_dispatch_run(railwire_railset *rs, int64_t now)
{
    while (rw_rail_events_pending(rs)) {
        unsigned i;
        while (rw_rail_next_lost(rs, &i)) {
            rw_failover_take_down(rs, i);
            rw_heal_rail_lost(rs, i, now);
        }
        if (rw_rail_take_control_ended(rs))
            rw_heal_session_ended(rs);
        rw_stripe_schedule(rs); /* a post error reports a new event */
    }
}

void rw_railset_timers(railwire_railset *rs, int64_t now)
{
    if (!rs->healer)
        return;
    /* The healer hears of the rails lost this round before its tick (the
     * loss damps the next attempt). */
    rw_railset_dispatch(rs, now);
    rw_heal_tick(rs, now);
    if (rw_rail_all_down_due(rs, now))
        rw_failover_all_down_expired(rs);
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

int64_t rw_railset_next_deadline(const railwire_railset *rs, int64_t now)
{
    if (rw_rail_events_pending(rs))
        return now;
    int64_t d = INT64_MAX;
    for (unsigned k = 0; k < rs->n_busy; k++) {
        const struct rw_rail *r = &rs->rails[rs->busy[k]];
        if (rw_rail_is_up(r) && r->outstanding.head)
            d = min64(d, rw_slice_of(r->outstanding.head)->posted_ms + rs->op_timeout_ms + 1);
    }
    /* Out-of-band death signals are looked at every check interval while
     * work is outstanding. */
    if (d != INT64_MAX && rs->ops->ep_check)
        d = min64(d, rs->next_check_ms);
    if (rs->healer) {
        d = min64(d, rw_heal_deadline(rs));
        d = min64(d, rw_rail_all_down_deadline(rs));
    }
    return d;
}
