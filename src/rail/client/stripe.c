/* SPDX-License-Identifier: MIT */
/* Striping: cut transfers into slices and hand them to rails by weight
 * (the domain's link speed) and load (bytes in flight), within each rail's
 * depth.  What no rail can take waits in the pending FIFO, in order. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/time.h"
#include "rail/client/rail_state.h"


int rw_stripe_submit(railwire_railset *rs, const railwire_op *op, int direct, struct rw_xfer **out)
{
    size_t slice = rs->slice_size;
    /* No division for the common single-slice transfer. */
    size_t n = op->length <= slice ? 1 : op->length / slice + (op->length % slice ? 1 : 0);
    struct rw_xfer *x = rw_xfer_of(rs->xfer_pool);
    if (x) {
        rs->xfer_pool = x->link.next;
        rs->n_pool--;
    } else {
        x = malloc(sizeof(*x));
    }
    struct rw_slice *s = NULL;
    if (x)
        s = n == 1 ? &x->one : malloc(n * sizeof(*s)); /* n <= the registration's length: fits */
    if (!s) {
        free(x);
        rw_err("submit: out of memory for a transfer of %zu bytes (%zu slices)", op->length, n);
        return RAILWIRE_E_NOMEM;
    }
    /* Every field is stored below (no memset of the transfer or its slices:
     * the lists link them, the rest is set here). */
    x->handle = rs->next_handle++;
    x->op = *op;
    x->status = 0;
    x->sync_owned = 0;
    x->waiter = NULL;
    x->n_slices = n;
    x->n_done = 0;
    x->slices = s;
    if (n == 1) { /* the common case, without the loop's arithmetic */
        s->xfer = x;
        s->offset = 0;
        s->length = (uint32_t)op->length;
        s->rail = -1;
        s->posted_ms = 0;
        s->tries = 0;
        if (!direct)
            rw_list_push_tail(&rs->pending, &s->link);
    } else {
        for (size_t i = 0; i < n; i++) {
            s[i].xfer = x;
            s[i].offset = i * slice;
            size_t left = op->length - s[i].offset;
            s[i].length = (uint32_t)(left < slice ? left : slice);
            s[i].rail = -1;
            s[i].posted_ms = 0;
            s[i].tries = 0;
            rw_list_push_tail(&rs->pending, &s[i].link);
        }
    }
    op->mr->users++;
    rw_list_push_tail(&rs->active, &x->link);
    *out = x;
    return 0;
}

/* Whether rail r can take a slice of len bytes now: up, not blocked, under
 * its depth and its byte cap. */
static inline int rail_can_take(const struct rw_rail *r, uint32_t len)
{
    return rw_rail_is_up(r) && !r->blocked && r->outstanding.count < r->depth &&
           r->inflight_bytes + len <= r->byte_cap;
}

/* Small transfers are packed: a rail of the fastest kind takes their slices
 * until it has PACK_BYTES or PACK_SLICES in flight before the next rail
 * gets any.  Spread one by one over many rails, small requests cost a send
 * call, a TCP segment and a wake-up of both ends each (64 rails at depth
 * 64: one request per rail, 6x the CPU per transfer of one rail); packed,
 * a rail's loop writes and reads them in batches.  The slices of bigger
 * transfers, and small ones once every rail is full, go to the least
 * loaded rail; so do all slices of a railset that does not pack
 * (rs->pack_max_len is 0 then, rw_stripe_packs): at most
 * RW_PACK_MIN_RAILS rails and, on a transport whose rails share the
 * process's cores (tcp's loops), no more than half the cores, so that each
 * rail's two ends can have a CPU each even when they share the host, and
 * spreading buys the parallelism of every rail (verbs rails are their
 * NICs': spreading always uses every NIC).  With fewer cores the rails'
 * loops share CPUs and spreading only adds wake-ups: on 2 CPUs,
 * 4 KiB at depth 64 on tcp loopback went from 2 rails 240k-275k READs and
 * 381k-386k WRITEs per second, 4 rails 181k-225k and 257k-318k, spread,
 * to 338k-378k and 581k-615k, 319k-343k and 589k-596k, packed (64 KiB
 * moved the same either way). */
int rw_stripe_packs(unsigned n_rails, unsigned cores)
{
    return n_rails > RW_PACK_MIN_RAILS || (n_rails >= 2 && n_rails > cores / 2);
}

#define PACK_BYTES (512u * 1024)
#define PACK_SLICES 64u

static int pick_packed(const railwire_railset *rs, uint32_t len)
{
    /* Start at the rail chosen last (rr_start is one past it): it keeps
     * taking slices until it holds PACK_BYTES, so the usual case costs one
     * look, not a scan of every rail; then the next one that fits fills. */
    unsigned i = rs->rr_start - 1u < rs->n_rails ? rs->rr_start - 1u : 0;

    for (unsigned k = 0; k < rs->n_rails; k++, i++) {
        if (i == rs->n_rails)
            i = 0;
        const struct rw_rail *r = &rs->rails[i];
        if (rail_can_take(r, len) && r->inv_gbps <= rs->min_inv_gbps &&
            r->inflight_bytes + len <= PACK_BYTES && r->outstanding.count < PACK_SLICES)
            return (int)i;
    }
    return -1;
}

/* The least loaded rail that can take a slice of len bytes, or -1. */
static inline __attribute__((always_inline)) int pick_least_loaded(const railwire_railset *rs,
                                                                   uint32_t len)
{
    int best = -1;
    double best_load = 0;

    /* Start the scan at a rotating rail so that equal loads do not always
     * favour the lowest index; no division or modulo per rail. */
    unsigned i = rs->rr_start < rs->n_rails ? rs->rr_start : 0;
    for (unsigned k = 0; k < rs->n_rails; k++, i++) {
        if (i == rs->n_rails)
            i = 0;
        const struct rw_rail *r = &rs->rails[i];
        if (!rail_can_take(r, len))
            continue;
        /* An idle rail of the fastest kind: nothing can be less loaded (every
         * other load is at least len * min_inv_gbps), so no load computed. */
        if (r->inflight_bytes == 0 && r->inv_gbps <= rs->min_inv_gbps)
            return (int)i;
        double load = (double)(r->inflight_bytes + len) * r->inv_gbps;
        if (best < 0 || load < best_load) {
            best = (int)i;
            best_load = load;
        }
    }
    return best;
}

/* Out of line, so that a railset that never packs pays one comparison. */
static __attribute__((noinline)) int pick_small(const railwire_railset *rs, uint32_t len)
{
    int best = pick_packed(rs, len);
    return best >= 0 ? best : pick_least_loaded(rs, len);
}

int rw_stripe_pick_rail(const railwire_railset *rs, const struct rw_slice *s)
{
    if (__builtin_expect(s->xfer->op.length <= rs->pack_max_len, 0))
        return pick_small(rs, s->length);
    return pick_least_loaded(rs, s->length);
}

static inline void fill_wr(const railwire_railset *rs, const struct rw_rail *r, const struct rw_slice *s,
                    struct rw_wr *wr)
{
    const railwire_op *op = &s->xfer->op;
    uint32_t layer = rs->dialect == RAILWIRE_DIALECT_RO ? op->layer : 0;
    wr->wr_id = (uint64_t)(uintptr_t)s;
    wr->opcode = op->opcode == RAILWIRE_OP_WRITE ? RW_OP_WRITE : RW_OP_READ;
    wr->local = (char *)op->local + s->offset;
    wr->mr = op->mr->per_rail[r->index];
    wr->length = s->length;
    wr->remote_addr = r->remote[layer].base_addr + op->remote_offset + s->offset;
    wr->rkey = r->remote[layer].rkey;
    wr->signaled = 1;
}

/* Takes the last `k` slices of rail r's outstanding list back to the front
 * of the pending FIFO, in order. */
static void unpost_tail(railwire_railset *rs, struct rw_rail *r, size_t k)
{
    struct rw_list back = {0};
    for (size_t j = 0; j < k; j++) {
        struct rw_slice *s = rw_slice_of(r->outstanding.tail);
        rw_rail_out_remove(rs, r, s);
        r->inflight_bytes -= s->length;
        s->rail = -1;
        s->tries--; /* never reached the transport */
        rw_list_push_head(&back, &s->link);
    }
    rw_list_prepend(&rs->pending, &back);
}

void rw_stripe_post_one(railwire_railset *rs, struct rw_slice *s)
{
    int ri = rw_stripe_pick_rail(rs, s);
    if (ri < 0) {
        rw_list_push_tail(&rs->pending, &s->link);
        rw_stripe_schedule(rs);
        return;
    }
    struct rw_rail *r = &rs->rails[ri];
    struct rw_wr wr;
    fill_wr(rs, r, s, &wr);
    rs->rr_start = (unsigned)ri + 1;
    s->rail = ri;
    s->posted_ms = rw_now_ms();
    s->tries++;
    rw_rail_out_push(rs, r, s);
    r->inflight_bytes += s->length;
    int rc = rs->ops->ep_post(r->ep, &wr, 1);
    if (rc > 0)
        return;
    /* Not taken: back to the (empty) pending FIFO, and on as
     * schedule_round does with a refused post. */
    unpost_tail(rs, r, 1);
    if (rc < 0) {
        rw_warn("rail %u (%s): posting failed (%s); failing over", (unsigned)ri, r->stats.name,
                railwire_strerror(rc));
        rw_rail_report_failed(rs, (unsigned)ri, rc, s->posted_ms);
    } else {
        if (!r->blocked)
            rs->n_blocked++;
        r->blocked = 1;
    }
    rw_stripe_schedule(rs);
}

/* One round: assign up to post_batch slices per rail, then post them.
 * Returns the number of slices accepted by the transports. */
static size_t schedule_round(railwire_railset *rs)
{
    size_t *cnt = rs->post_cnt;
    const unsigned batch = rs->post_batch;
    int64_t now = 0;
    unsigned used_lo = rs->n_rails, used_hi = 0;

    while (rs->pending.head) {
        struct rw_slice *s = rw_slice_of(rs->pending.head);
        int ri = rw_stripe_pick_rail(rs, s);
        if (ri < 0 || cnt[ri] == batch)
            break;
        if (!now)
            now = rw_now_ms(); /* one clock read per round, only when something is posted */
        if ((unsigned)ri < used_lo)
            used_lo = (unsigned)ri;
        if ((unsigned)ri >= used_hi)
            used_hi = (unsigned)ri + 1;
        struct rw_rail *r = &rs->rails[ri];
        rs->rr_start = (unsigned)ri + 1;
        rw_list_remove(&rs->pending, &s->link);
        s->rail = ri;
        s->posted_ms = now;
        s->tries++;
        rw_rail_out_push(rs, r, s);
        r->inflight_bytes += s->length;
        fill_wr(rs, r, s, &rs->post_wrs[(size_t)ri * batch + cnt[ri]++]);
    }

    /* Rails are posted in turn, not in index order: a refusal may come from
     * a resource the rails share (tcp's staging chunks for CUDA memory), and
     * index order would hand it to the lowest rail every round, leaving the
     * others idle.  The next round starts at the first rail that got
     * nothing here, or else at the one after the first rail cut short. */
    size_t accepted = 0;
    unsigned span = used_hi > used_lo ? used_hi - used_lo : 0;
    unsigned first = rs->post_first;
    if (first < used_lo || first >= used_hi)
        first = used_lo;
    int starved = -1, cut = -1;
    for (unsigned k = 0, i = first; k < span; k++, i = i + 1 == used_hi ? used_lo : i + 1) {
        if (!cnt[i])
            continue;
        struct rw_rail *r = &rs->rails[i];
        size_t n = cnt[i];
        cnt[i] = 0;
        int rc = rs->ops->ep_post(r->ep, &rs->post_wrs[(size_t)i * batch], n);
        if (rc < 0) {
            unpost_tail(rs, r, n);
            rw_warn("rail %u (%s): posting failed (%s); failing over", i, r->stats.name,
                    railwire_strerror(rc));
            rw_rail_report_failed(rs, i, rc, now);
            continue;
        }
        if ((size_t)rc > n)
            rc = (int)n;
        accepted += (size_t)rc;
        if ((size_t)rc < n) {
            if (rc == 0 && starved < 0)
                starved = (int)i;
            if (cut < 0)
                cut = (int)i;
            unpost_tail(rs, r, n - (size_t)rc);
            if (!r->blocked)
                rs->n_blocked++;
            r->blocked = 1;
        }
    }
    if (starved >= 0)
        rs->post_first = (unsigned)starved;
    else if (cut >= 0)
        rs->post_first = (unsigned)cut + 1; /* if out of range: the lowest */
    return accepted;
}

void rw_stripe_schedule_run(railwire_railset *rs)
{
    while (rs->pending.head && rs->n_live > 0) {
        unsigned live = rs->n_live;
        if (schedule_round(rs) == 0 && rs->n_live == live)
            break;
    }
}
