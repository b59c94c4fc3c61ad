/* SPDX-License-Identifier: MIT */
/* Cancelling a transfer (railwire_cancel, and a per-transfer deadline that
 * falls due): its slices not yet posted are dropped at once; those on the
 * wire are never re-issued (failover's take_back finishes them instead) and
 * finish when their rail completes them or is killed, after which no copy
 * can land.  Also the per-transfer submit options (RAILWIRE_OP_F_RESERVED,
 * timeout_ms) and railwire_railset_pending. */
#include "common/log.h"
#include "common/time.h"
#include "rail/client/railset_internal.h"
#include "rail/client/xfer.h"

int rw_xfer_submit_extras_slow(railwire_railset *rs, struct rw_xfer *x, const railwire_op *op)
{
    x->reserved = !x->sync_owned && (op->flags & RAILWIRE_OP_F_RESERVED) != 0;
    if (x->reserved)
        rs->n_reserved++;
    x->deadline_ms = 0;
    if (op->timeout_ms) {
        x->deadline_ms = rw_now_ms() + (int64_t)op->timeout_ms;
        if (rs->n_deadline == 0 || x->deadline_ms < rs->xd_next_ms)
            rs->xd_next_ms = x->deadline_ms;
        rs->n_deadline++;
    }
    return x->reserved;
}

void rw_xfer_cancel(railwire_railset *rs, struct rw_xfer *x, int code)
{
    if (x->cancel || x->n_done == x->n_slices)
        return;
    x->cancel = code;
    x->deadline_ms = 0;
    /* The status comes from the slices: those dropped here (and those a
     * dead rail gives back, failover.c) finish with `code`; when none is
     * dropped and every slice on the wire succeeds, the cancel came too
     * late to stop anything and the transfer completes as it would have. */
    /* Its slices waiting for a rail: in the pending FIFO (never the
     * unqueued slice of a direct submit: that one is posted before the
     * lock is released).  Finishing the last one completes the transfer,
     * which may then be freed by nobody but a later poll: stop there. */
    size_t left = x->n_slices - x->n_done;
    struct rw_slice *s = rw_slice_of(rs->pending.head);
    while (s && left) {
        struct rw_slice *next = rw_slice_of(s->link.next);
        if (s->xfer == x) {
            rw_list_remove(&rs->pending, &s->link);
            left--;
            rw_slice_finish(rs, s, code);
        }
        s = next;
    }
    if (x->n_done < x->n_slices)
        rw_debug("railset: transfer %llu %s: %zu slice(s) still on the wire finish first",
                 (unsigned long long)x->handle, code == RAILWIRE_E_TIMEOUT ? "timed out" : "cancelled",
                 x->n_slices - x->n_done);
}

struct rw_xfer *rw_xfer_find(railwire_railset *rs, railwire_handle h, int *done)
{
    /* The finished ones first: the list is short, and a waiter looks there
     * most often. */
    for (struct rw_xfer *x = rw_xfer_of(rs->done.head); x; x = rw_xfer_of(x->link.next))
        if (x->handle == h) {
            *done = 1;
            return x;
        }
    for (struct rw_xfer *x = rw_xfer_of(rs->active.head); x; x = rw_xfer_of(x->link.next))
        if (x->handle == h) {
            *done = 0;
            return x;
        }
    return NULL;
}

int railwire_cancel(railwire_railset *rs, railwire_handle h)
{
    if (!rs || !h) {
        rw_err("cancel: NULL railset or handle 0");
        return RAILWIRE_E_INVALID;
    }
    rs_lock(rs);
    int done = 0, rc = 0;
    struct rw_xfer *x = rw_xfer_find(rs, h, &done);
    if (!x || x->sync_owned) {
        rc = RAILWIRE_E_INVALID;
    } else if (done) {
        rc = RAILWIRE_E_STATE;
    } else {
        rw_xfer_cancel(rs, x, RAILWIRE_E_CANCELED);
    }
    rs_unlock(rs);
    if (rc == RAILWIRE_E_INVALID)
        rw_err("cancel: no transfer %llu is pending (never submitted, or its completion was "
               "already returned)", (unsigned long long)h);
    else if (rc == RAILWIRE_E_STATE)
        rw_debug("cancel: transfer %llu already finished; its completion waits to be polled",
                 (unsigned long long)h);
    return rc;
}

size_t railwire_railset_pending(railwire_railset *rs)
{
    if (!rs)
        return 0;
    rs_lock(rs);
    size_t n = rs->n_async + rs->n_reserved;
    rs_unlock(rs);
    return n;
}
