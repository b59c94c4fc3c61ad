/* SPDX-License-Identifier: MIT */
/* The rails' outstanding lists with their busy set (common/list.h lists
 * of slices): inline, because every slice passes through them once per
 * transfer, from stripe.c, progress.c and failover.c.  Included by railset_internal.h; the lock is
 * held wherever they are used. */
#ifndef RW_RAIL_RAILSET_LISTS_H
#define RW_RAIL_RAILSET_LISTS_H
#if defined(RW_LAYER_RAIL_SERVER) || defined(RW_LAYER_RAIL_SESSION) || defined(RW_LAYER_RAIL_METRICS) || defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/client/ is private to the client (docs/architecture.md)"
#endif


/* The transfer of list node n (NULL for NULL). */
static inline struct rw_xfer *rw_xfer_of(struct rw_list_node *n)
{
    return rw_list_entry_or_null(n, struct rw_xfer, link);
}

/* Adds s to rail r's outstanding list / removes it (keeping the busy set,
 * and marking a sleeping poller's poll set stale when r joins it). */
static inline void rw_rail_out_push(railwire_railset *rs, struct rw_rail *r, struct rw_slice *s)
{
    rw_list_push_tail(&r->outstanding, &s->link);
    if (r->busy_pos < 0) {
        r->busy_pos = (int)rs->n_busy;
        rs->busy[rs->n_busy++] = r->index;
        /* A sleeping poller armed only the rails busy then (poll_wait.c):
         * the release of the lock kicks it to arm this one too. */
        if (rs->poller && r->armed_round != rs->arm_round)
            rs->poll_set_stale = 1;
    }
}

static inline void rw_rail_out_remove(railwire_railset *rs, struct rw_rail *r, struct rw_slice *s)
{
    rw_list_remove(&r->outstanding, &s->link);
    if (r->outstanding.count == 0 && r->busy_pos >= 0) {
        unsigned last = rs->busy[--rs->n_busy];
        rs->busy[r->busy_pos] = last;
        rs->rails[last].busy_pos = r->busy_pos;
        r->busy_pos = -1;
    }
}

#endif
