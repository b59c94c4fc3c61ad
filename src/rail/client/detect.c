/* SPDX-License-Identifier: MIT */
/* Detectors that look for dead rails on a timer: operations older than the
 * op timeout, and the transport's out-of-band death signals (ep_check).
 * They only report to the rail state machine; dispatch reacts. */
#include "common/log.h"
#include "rail/client/rail_state.h"

void rw_detect_eps(railwire_railset *rs, int64_t now_ms)
{
    if (!rs->ops->ep_check)
        return;
    for (unsigned i = 0; i < rs->n_rails; i++) {
        struct rw_rail *r = &rs->rails[i];
        if (!rw_rail_is_up(r))
            continue;
        int rc = rs->ops->ep_check(r->ep);
        if (rc < 0)
            rw_rail_report_failed(rs, i, rc, now_ms);
    }
}

void rw_detect_timeouts(railwire_railset *rs, int64_t now_ms)
{
    /* Only rails with outstanding slices can time out (reporting changes
     * no list; walked from the end, as progress polls). */
    for (unsigned k = rs->n_busy; k-- > 0;) {
        unsigned i = rs->busy[k];
        struct rw_rail *r = &rs->rails[i];
        if (!rw_rail_is_up(r) || !r->outstanding.head)
            continue;
        int64_t age = now_ms - rw_slice_of(r->outstanding.head)->posted_ms;
        if (age > rs->op_timeout_ms) {
            rw_warn("rail %u (%s): an operation has been outstanding for %lld ms (op timeout "
                    "%d ms): the link may be dropping packets", i, r->stats.name, (long long)age,
                    rs->op_timeout_ms);
            rw_rail_report_failed(rs, i, RAILWIRE_E_TIMEOUT, now_ms);
        }
    }
}
