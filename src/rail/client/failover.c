/* SPDX-License-Identifier: MIT */
/* Failover, the reaction to a lost rail (dispatch.c calls it once the
 * rail state machine took the rail down): its ep is killed and its
 * unfinished slices go back to the front of the pending FIFO, to be
 * re-issued on the surviving rails.  With no rail left, every unfinished
 * transfer fails with RAILWIRE_E_ALL_RAILS_DOWN. */
#include "common/log.h"
#include "rail/client/rail_state.h"
#include "rail/client/xfer.h"


void rw_failover_fail_all(railwire_railset *rs, int status)
{
    for (unsigned i = 0; i < rs->n_rails; i++) {
        struct rw_rail *r = &rs->rails[i];
        if (rw_rail_is_up(r) && r->outstanding.head) {
            /* Only reached for rails already killed; never finish a slice a
             * live ep may still touch. */
            continue;
        }
        while (r->outstanding.head) {
            struct rw_slice *s = rw_slice_of(r->outstanding.head);
            rw_rail_out_remove(rs, r, s);
            s->rail = -1;
            rw_slice_finish(rs, s, status);
        }
        r->inflight_bytes = 0;
    }
    while (rs->pending.head) {
        struct rw_slice *s = rw_slice_of(rs->pending.head);
        rw_list_remove(&rs->pending, &s->link);
        rw_slice_finish(rs, s, status);
    }
}

/* Moves rail r's unfinished slices back to the front of the pending FIFO,
 * in order, except those already carried max_tries times: their transfers
 * fail with `reason` (a request the peer keeps rejecting must not loop
 * across rails and heals).  Returns the number moved. */
static size_t take_back(railwire_railset *rs, struct rw_rail *r, int reason)
{
    struct rw_list back = {0};
    size_t moved = 0, failed = 0;
    while (r->outstanding.head) {
        struct rw_slice *s = rw_slice_of(r->outstanding.head);
        rw_rail_out_remove(rs, r, s);
        s->rail = -1;
        if (rs->max_tries && s->tries >= rs->max_tries) {
            failed++;
            rw_slice_finish(rs, s, reason);
            continue;
        }
        rw_list_push_tail(&back, &s->link);
        moved++;
    }
    if (failed)
        rw_err("rail %u (%s): %zu slice(s) had been carried %u times already (max_slice_tries); "
               "their transfers fail with %s", r->index, r->stats.name, failed, rs->max_tries,
               railwire_error_class(reason));
    rw_list_prepend(&rs->pending, &back);
    return moved;
}

void rw_failover_take_down(railwire_railset *rs, unsigned i)
{
    struct rw_rail *r = &rs->rails[i];
    /* After ep_kill returns no outstanding WR touches its buffer again, so
     * the slices can safely be carried by another rail. */
    rs->ops->ep_kill(r->ep);
    size_t moved = take_back(rs, r, r->stats.down_reason);
    r->stats.reissued += moved;
    r->inflight_bytes = 0;
    r->blocked = 0;
    if (rs->n_live > 0) {
        rw_warn("rail %u (%s) is down (%s: %s); %zu unfinished slice(s) re-issued on %u "
                "surviving rail(s)%s", i, r->stats.name, railwire_error_class(r->stats.down_reason),
                railwire_strerror(r->stats.down_reason), moved, rs->n_live,
                rs->healer ? "; healing it" : "");
        return;
    }
    if (rs->healer) {
        rw_err("rail %u (%s) is down (%s); no rail is live: transfers wait up to %d ms "
               "(all_down_timeout_ms) for a heal, then fail", i, r->stats.name,
               railwire_error_class(r->stats.down_reason), rs->all_down_timeout_ms);
        return;
    }
    rw_err("rail %u (%s) is down (%s); no rail is left: every unfinished transfer fails; "
           "check the links, the server and its log", i, r->stats.name,
           railwire_error_class(r->stats.down_reason));
    /* Rails lost in the same round and not reacted to yet still have live
     * eps: the last of them fails everything, once all are killed. */
    if (rs->ev.n_lost == 0)
        rw_failover_fail_all(rs, RAILWIRE_E_ALL_RAILS_DOWN);
}

void rw_failover_rail_retire(railwire_railset *rs, unsigned i)
{
    struct rw_rail *r = &rs->rails[i];
    rs->ops->ep_kill(r->ep);
    size_t moved = take_back(rs, r, RAILWIRE_E_CLOSED);
    r->stats.reissued += moved;
    r->inflight_bytes = 0;
    r->blocked = 0;
    if (moved)
        rw_info("rail %u (%s): %zu unfinished slice(s) re-issued while the rail moves to a new "
                "session", i, r->stats.name, moved);
}

void rw_failover_all_down_expired(railwire_railset *rs)
{
    rw_err("railset: no rail has been live for %d ms (all_down_timeout_ms): every unfinished "
           "transfer fails with all-rails-down, and new ones until a rail heals; check the links, "
           "the server and its log", rs->all_down_timeout_ms);
    rw_failover_fail_all(rs, RAILWIRE_E_ALL_RAILS_DOWN);
}
