/* SPDX-License-Identifier: MIT */
/* Per-transfer deadlines (railwire_op.timeout_ms): a transfer not finished
 * by its deadline is cancelled with RAILWIRE_E_TIMEOUT.  The railset keeps
 * an upper bound of the transfers with a deadline and the earliest
 * deadline (possibly of a transfer that already finished: then one scan
 * finds the real one); rw_xfer_deadline_next tells the waiters and the
 * railset fd's timer when to look again. */
#include "common/log.h"
#include "rail/client/railset_internal.h"

int64_t rw_xfer_deadline_next(const railwire_railset *rs)
{
    return rs->n_deadline ? rs->xd_next_ms : -1;
}

void rw_xfer_deadline_check(railwire_railset *rs, int64_t now_ms)
{
    if (rs->n_deadline == 0 || now_ms < rs->xd_next_ms)
        return;
    size_t n = 0, fired = 0;
    int64_t next = 0;
    struct rw_xfer *x = rw_xfer_of(rs->active.head);
    while (x) {
        /* Cancelling may complete x, which moves it to the done list. */
        struct rw_xfer *nx = rw_xfer_of(x->link.next);
        if (x->deadline_ms) {
            if (x->deadline_ms <= now_ms) {
                rw_xfer_cancel(rs, x, RAILWIRE_E_TIMEOUT);
                fired++;
            } else {
                if (n == 0 || x->deadline_ms < next)
                    next = x->deadline_ms;
                n++;
            }
        }
        x = nx;
    }
    rs->n_deadline = n;
    rs->xd_next_ms = next;
    if (fired)
        rw_info("railset: %zu transfer(s) passed their deadline (timeout_ms) and are cancelled",
                fired);
}
