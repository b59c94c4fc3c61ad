/* SPDX-License-Identifier: MIT */
/* The accessors of railset_testing.h. */
#include "rail/client/railset_testing.h"

#include "common/time.h"
#include "rail/client/dispatch.h"

enum railwire_rail_state rw_test_rail_state(const railwire_railset *rs, unsigned i)
{
    return rw_rail_public_state(&rs->rails[i]);
}

railwire_rail_stats rw_test_rail_stats(const railwire_railset *rs, unsigned i)
{
    railwire_rail_stats st = rs->rails[i].stats;
    st.state = rw_rail_public_state(&rs->rails[i]);
    return st;
}

struct rw_ep *rw_test_rail_ep(const railwire_railset *rs, unsigned i)
{
    return rs->rails[i].ep;
}

struct rw_domain *rw_test_rail_dom(const railwire_railset *rs, unsigned i)
{
    return rs->rails[i].dom;
}

void rw_test_kill_rail(railwire_railset *rs, unsigned i)
{
    rs_lock(rs);
    rs->ops->ep_kill(rs->rails[i].ep);
    rs_unlock(rs);
}

void rw_test_fail_rail(railwire_railset *rs, unsigned i, int reason)
{
    int64_t now = rw_now_ms();
    rw_rail_report_failed(rs, i, reason, now);
    rw_railset_dispatch(rs, now);
}

struct rw_mr *rw_test_mr_rail(const railwire_mr *mr, unsigned i)
{
    return mr->per_rail[i];
}

size_t rw_test_rail_outstanding(const railwire_railset *rs, unsigned i)
{
    return rs->rails[i].outstanding.count;
}

uint64_t rw_test_rail_inflight_bytes(const railwire_railset *rs, unsigned i)
{
    return rs->rails[i].inflight_bytes;
}

unsigned rw_test_rail_wake_after(const railwire_railset *rs, unsigned i)
{
    return rw_rail_wake_after(rs, &rs->rails[i]);
}

size_t rw_test_pending(const railwire_railset *rs)
{
    return rs->pending.count;
}

unsigned rw_test_live(const railwire_railset *rs)
{
    return rs->n_live;
}

unsigned rw_test_busy(const railwire_railset *rs)
{
    return rs->n_busy;
}

int rw_test_poller_sleeps(railwire_railset *rs)
{
    rs_lock(rs);
    int sleeps = rs->poller;
    rs_unlock(rs);
    return sleeps;
}

size_t rw_test_slice_size(const railwire_railset *rs)
{
    return rs->slice_size;
}

uint64_t rw_test_busy_poll_ns(const railwire_railset *rs)
{
    return rs->busy_poll_ns;
}

uint64_t rw_test_rails_gen(const railwire_railset *rs)
{
    return rs->rails_gen;
}

double rw_test_min_inv_gbps(const railwire_railset *rs)
{
    return rs->min_inv_gbps;
}

int rw_test_session0_fd(const railwire_railset *rs)
{
    for (const struct rw_rsess *s = rs->sessions; s; s = s->next)
        if (s->id == 0)
            return s->fd;
    return -1;
}

void rw_test_dump(railwire_railset *rs, FILE *f, void (*rail_cb)(struct rw_ep *ep, FILE *f))
{
    rs_lock(rs);
    fprintf(f, "  railset: n_live %u, n_busy %u, pending %zu, active %s, poller %d, "
            "n_async %zu\n", rs->n_live, rs->n_busy, rs->pending.count,
            rs->active.head ? "yes" : "no", rs->poller, rs->n_async);
    for (unsigned i = 0; i < rs->n_rails; i++) {
        const struct rw_rail *r = &rs->rails[i];
        fprintf(f, "  rail %u: state %d, outstanding %zu, busy_pos %d, blocked %d, "
                "heals %llu, attempts %llu, down %d\n", i, (int)rw_rail_public_state(r),
                r->outstanding.count, r->busy_pos, r->blocked,
                (unsigned long long)r->stats.heals, (unsigned long long)r->stats.heal_attempts,
                r->stats.last_down_reason);
        if (rail_cb)
            rail_cb(r->ep, f);
    }
    for (unsigned k = 0; k < rs->n_busy; k++)
        fprintf(f, "  busy[%u] = %u\n", k, rs->busy[k]);
    rw_list_for_each(w, &rs->waiters, struct rw_waiter, link)
        fprintf(f, "  waiter: handle %llu woken %d\n", (unsigned long long)w->handle, w->woken);
    rs_unlock(rs);
}
