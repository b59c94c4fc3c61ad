/* SPDX-License-Identifier: MIT */
/* A transfer's end: a slice finishing, the transfer completing (active ->
 * done list, its waiter woken) and its release back to the railset's pool.
 * Inline: every slice passes here once (from progress, failover and
 * stripe), and the lock is held wherever they run.  Below every other file
 * of the client except the lists: it calls nothing of theirs. */
#ifndef RW_RAIL_CLIENT_XFER_H
#define RW_RAIL_CLIENT_XFER_H
#if defined(RW_LAYER_RAIL_SERVER) || defined(RW_LAYER_RAIL_SESSION) || defined(RW_LAYER_RAIL_METRICS) || defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/client/ is private to the client (docs/architecture.md)"
#endif

#include <stdlib.h>

#include "rail/client/railset_internal.h"

#define RW_XFER_POOL_MAX 256

/* rw_slice.rail of a slice that finished with an error (for the
 * completion's bytes_moved). */
#define RW_SLICE_FAILED (-2)

/* Frees x's slices and returns x to the railset's pool (or frees it). */
static inline void rw_xfer_recycle(railwire_railset *rs, struct rw_xfer *x)
{
    if (x->slices != &x->one)
        free(x->slices);
    if (rs->n_pool < RW_XFER_POOL_MAX) {
        x->link.next = rs->xfer_pool;
        rs->xfer_pool = &x->link;
        rs->n_pool++;
        return;
    }
    free(x);
}

/* Frees a transfer (back to the railset's pool) and drops its
 * registration's use count when it never completed. */
static inline void rw_xfer_free(railwire_railset *rs, struct rw_xfer *x)
{
    if (!x)
        return;
    if (x->n_done < x->n_slices && x->op.mr && x->op.mr->users)
        x->op.mr->users--; /* never completed: drop its use here */
    rw_xfer_recycle(rs, x);
}

/* Moves a finished transfer from the active to the done list and wakes
 * whoever waits for it. */
static inline void rw_xfer_complete(railwire_railset *rs, struct rw_xfer *x)
{
    if (x->op.mr->users)
        x->op.mr->users--;
    rw_list_remove(&rs->active, &x->link);
    rw_list_push_tail(&rs->done, &x->link);
    rs->done_gen++;
    if (x->sync_owned)
        rs_wake(x->waiter);
    else
        rs->n_async_done++;
}

/* Marks one slice finished with `status` (0 = its bytes moved); completes
 * its transfer when it was the last one. */
static inline void rw_slice_finish(railwire_railset *rs, struct rw_slice *s, int status)
{
    struct rw_xfer *x = s->xfer;
    if (status) {
        if (!x->status)
            x->status = status;
        s->rail = RW_SLICE_FAILED;
    }
    if (++x->n_done == x->n_slices)
        rw_xfer_complete(rs, x);
}

#endif
