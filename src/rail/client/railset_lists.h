/* SPDX-License-Identifier: MIT */
/* The slice lists and the rails' outstanding lists with their busy set:
 * inline, because every slice passes through them two or three times per
 * transfer (pending -> outstanding -> finished), from stripe.c,
 * progress.c and failover.c.  Included by railset_internal.h; the lock is
 * held wherever they are used. */
#ifndef RW_RAIL_RAILSET_LISTS_H
#define RW_RAIL_RAILSET_LISTS_H
#if defined(RW_LAYER_RAIL_SERVER) || defined(RW_LAYER_RAIL_SESSION) || defined(RW_LAYER_RAIL_METRICS) || defined(RW_LAYER_BELOW_RAIL)
#error "src/rail/client/ is private to the client (docs/architecture.md)"
#endif

#include <string.h>

static inline void rw_slice_list_push_tail(struct rw_slice_list *l, struct rw_slice *s)
{
    s->next = NULL;
    s->prev = l->tail;
    if (l->tail)
        l->tail->next = s;
    else
        l->head = s;
    l->tail = s;
    l->count++;
}

/* Inserts the slices of `src`, in their order, before the head of `l`;
 * empties `src`. */
static inline void rw_slice_list_prepend(struct rw_slice_list *l, struct rw_slice_list *src)
{
    if (!src->head)
        return;
    src->tail->next = l->head;
    if (l->head)
        l->head->prev = src->tail;
    else
        l->tail = src->tail;
    l->head = src->head;
    l->count += src->count;
    memset(src, 0, sizeof(*src));
}

static inline void rw_slice_list_remove(struct rw_slice_list *l, struct rw_slice *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        l->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        l->tail = s->prev;
    s->prev = s->next = NULL;
    l->count--;
}

/* Adds s to rail r's outstanding list / removes it (keeping the busy set). */
static inline void rw_rail_out_push(railwire_railset *rs, struct rw_rail *r, struct rw_slice *s)
{
    rw_slice_list_push_tail(&r->outstanding, s);
    if (r->busy_pos < 0) {
        r->busy_pos = (int)rs->n_busy;
        rs->busy[rs->n_busy++] = r->index;
    }
}

static inline void rw_rail_out_remove(railwire_railset *rs, struct rw_rail *r, struct rw_slice *s)
{
    rw_slice_list_remove(&r->outstanding, s);
    if (r->outstanding.count == 0 && r->busy_pos >= 0) {
        unsigned last = rs->busy[--rs->n_busy];
        rs->busy[r->busy_pos] = last;
        rs->rails[last].busy_pos = r->busy_pos;
        r->busy_pos = -1;
    }
}

#endif
