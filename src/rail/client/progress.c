/* SPDX-License-Identifier: MIT */
/* Progress: one round over the railset (rw_progress): poll every busy
 * rail, account completions per transfer and per rail, run the timed
 * detectors and the timers, schedule pending slices and dispatch what the
 * detectors reported.  Delivering and waiting are in poll_wait.c. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/busy_poll.h"
#include "common/log.h"
#include "common/time.h"
#include "rail/client/dispatch.h"
#include "rail/client/heal.h"
#include "rail/client/rail_state.h"
#include "rail/client/xfer.h"

#define RW_POLL_BATCH 64
/* How often the control connections are checked and the transport is asked
 * for out-of-band death signals (ep_check). */
#define RW_CHECK_INTERVAL_MS 100

/* Accounts one completion of rail r; returns a rail-level error (the rail
 * must go down) or 0. */
static int account(railwire_railset *rs, struct rw_rail *r, const struct rw_wc *wc)
{
    struct rw_slice *s = (struct rw_slice *)(uintptr_t)wc->wr_id;
    if (!s || s->rail != (int)r->index) {
        rw_err("rail %u (%s): completion for an unknown operation (wr_id 0x%llx); the transport "
               "is inconsistent, taking the rail down", r->index, r->stats.name,
               (unsigned long long)wc->wr_id);
        return RAILWIRE_E_PROTOCOL;
    }
    if (rw_failover_is_rail_error(wc->status)) {
        r->stats.errors++;
        return wc->status; /* the slice stays outstanding and is re-issued */
    }
    rw_rail_out_remove(rs, r, s);
    r->inflight_bytes -= s->length;
    s->rail = -1;
    if (wc->status == 0) {
        r->stats.ops++;
        if (s->xfer->op.opcode == RAILWIRE_OP_READ)
            r->stats.bytes_read += s->length;
        else
            r->stats.bytes_written += s->length;
    } else {
        r->stats.errors++;
        rw_warn("rail %u (%s): the peer refused an access (%s) to layer %u offset %llu length %u",
                r->index, r->stats.name, railwire_error_class(wc->status), s->xfer->op.layer,
                (unsigned long long)(s->xfer->op.remote_offset + s->offset), s->length);
    }
    rw_slice_finish(rs, s, wc->status);
    return 0;
}

/* Polls rail r into wcs (RW_POLL_BATCH entries, the caller's, so that one
 * array serves every rail of a progress round).  Inline in rw_progress: it
 * runs once per busy rail. */
static inline int poll_rail(railwire_railset *rs, struct rw_rail *r, struct rw_wc *wcs)
{
    int total = 0, rail_err = 0;
    for (;;) {
        int n = rs->ops->ep_poll(r->ep, wcs, RW_POLL_BATCH);
        if (n < 0) {
            rail_err = n;
            break;
        }
        for (int k = 0; k < n; k++) {
            int e = account(rs, r, &wcs[k]);
            if (e && !rail_err)
                rail_err = e;
        }
        total += n;
        if (n < RW_POLL_BATCH || rail_err)
            break;
    }
    if (rail_err)
        rw_rail_report_failed(rs, r->index, rail_err, rw_now_ms());
    return total;
}

int rw_progress(railwire_railset *rs)
{
    int total = 0;
    if (rs->n_blocked) {
        for (unsigned i = 0; i < rs->n_rails; i++)
            rs->rails[i].blocked = 0;
        rs->n_blocked = 0;
    }
    /* Only rails with outstanding slices can have completions; polling one
     * may take it (or, when it dies, others) out of the busy set, so walk
     * the set from its end. */
    unsigned busy = rs->n_busy;
    struct rw_wc wcs[RW_POLL_BATCH];
    for (unsigned k = rs->n_busy; k-- > 0;) {
        if (k >= rs->n_busy)
            continue;
        struct rw_rail *r = &rs->rails[rs->busy[k]];
        if (rw_rail_is_up(r))
            total += poll_rail(rs, r, wcs);
    }
    int64_t now = rw_now_ms();
    if (busy)
        rw_detect_timeouts(rs, now);
    if (rs->n_deadline) /* per-transfer deadlines (cancel.c, xfer_deadline.c) */
        rw_xfer_deadline_check(rs, now);
    if (now >= rs->next_check_ms) {
        rs->next_check_ms = now + RW_CHECK_INTERVAL_MS;
        rw_rsess_check(rs);
        rw_detect_eps(rs, now);
    }
    if (rs->healer)
        rw_railset_timers(rs, now);
    rw_stripe_schedule(rs);
    /* The reactions to what the detectors above (and a post error while
     * scheduling) reported; a lost rail is not chosen meanwhile. */
    rw_railset_dispatch(rs, now);
    return total;
}
