/* SPDX-License-Identifier: MIT */
/* The rail state machine (see rail_state.h for its table). */
#include "rail/client/rail_state.h"

#include <stdint.h>
#include <stdio.h>

unsigned rw_rail_depth(unsigned queue_depth, const struct rw_domain *dom)
{
    unsigned d = queue_depth       ? queue_depth
                 : dom->default_depth ? dom->default_depth
                                      : RW_DEFAULT_QUEUE_DEPTH;
    if (dom->max_qp_wr && d > dom->max_qp_wr)
        d = dom->max_qp_wr;
    return d ? d : 1;
}

uint64_t rw_rail_byte_cap(unsigned queue_depth, unsigned depth, size_t slice_size)
{
    if (queue_depth || depth <= RW_DEFAULT_QUEUE_DEPTH)
        return UINT64_MAX;
    return (uint64_t)RW_DEFAULT_QUEUE_DEPTH * slice_size;
}

void rw_railset_shrink_slices(railwire_railset *rs, size_t size)
{
    if (!size || rs->slice_size <= size)
        return;
    rs->slice_size = size;
    for (unsigned i = 0; i < rs->n_rails; i++) {
        struct rw_rail *r = &rs->rails[i];
        /* A capped rail is one whose cap is not UINT64_MAX (no queue_depth
         * given, a deeper domain default): its cap follows the slices. */
        if (r->byte_cap != UINT64_MAX && r->st != RW_RAIL_NEW)
            r->byte_cap = rw_rail_byte_cap(0, r->depth, size);
    }
}

void rw_railset_update_bases(railwire_railset *rs)
{
    for (unsigned l = 0; l < rs->n_layers; l++) {
        uint64_t m = 0;
        for (unsigned i = 0; i < rs->n_rails; i++)
            if (rs->rails[i].remote && rs->rails[i].remote[l].base_addr > m)
                m = rs->rails[i].remote[l].base_addr;
        rs->layer_max_base[l] = m;
    }
}

/* min_inv_gbps over the live rails (the fastest live rail); with none
 * live, over every rail that has a domain, so the rail choice keeps a
 * sane scale while it has nothing to choose from. */
static void update_min_inv_gbps(railwire_railset *rs)
{
    double m = 0, any = 0;
    for (unsigned k = 0; k < rs->n_rails; k++) {
        const struct rw_rail *r = &rs->rails[k];
        if (r->st == RW_RAIL_NEW)
            continue;
        if (any == 0 || r->inv_gbps < any)
            any = r->inv_gbps;
        if (r->st == RW_RAIL_UP && (m == 0 || r->inv_gbps < m))
            m = r->inv_gbps;
    }
    rs->min_inv_gbps = m > 0 ? m : any;
}

enum rw_rail_st rw_rail_in_service(railwire_railset *rs, unsigned i,
                                   const struct rw_rail_service *svc, int64_t now)
{
    struct rw_rail *r = &rs->rails[i];
    enum rw_rail_st was = r->st;
    r->dom = svc->dom;
    r->ep = svc->ep;
    r->remote = svc->remote;
    r->n_remote = svc->n_remote;
    r->peer = svc->peer;
    r->sess = svc->sess;
    svc->sess->users++;
    r->depth = rw_rail_depth(svc->queue_depth, r->dom);
    r->blocked = 0;
    r->inflight_bytes = 0;
    r->up_since_ms = now;
    rw_railset_shrink_slices(rs, r->dom->max_msg);
    r->byte_cap = rw_rail_byte_cap(svc->queue_depth, r->depth, rs->slice_size);
    r->stats.index = i;
    r->stats.session = svc->sess->id;
    r->stats.control_up = svc->sess->ctrl_up;
    r->stats.gbps = r->dom->gbps > 0 ? r->dom->gbps : 1.0;
    r->inv_gbps = 1.0 / r->stats.gbps;
    snprintf(r->stats.name, sizeof(r->stats.name), "%s", r->dom->name);
    r->stats.tls = r->ep ? r->ep->tls : 0;
    r->stats.tls_ktls = r->ep ? r->ep->tls_ktls : 0;
    rw_railset_update_bases(rs);
    rs->rails_gen++; /* a sleeping poller must watch the new ep */
    r->st = RW_RAIL_UP;
    if (was != RW_RAIL_UP) {
        r->stats.down_reason = 0;
        rs->n_live++;
        rs->all_down_since_ms = 0;
        rs->all_down_expired = 0;
    }
    if (was == RW_RAIL_DOWN)
        r->stats.heals++;
    update_min_inv_gbps(rs);
    return was;
}

int rw_rail_report_failed(railwire_railset *rs, unsigned i, int reason, int64_t now)
{
    struct rw_rail *r = &rs->rails[i];
    if (r->st != RW_RAIL_UP)
        return 0;
    r->st = RW_RAIL_DOWN;
    r->stats.down_reason = reason ? reason : RAILWIRE_E_RAIL_DOWN;
    r->stats.last_down_reason = r->stats.down_reason;
    rs->n_live--;
    if (rs->n_live == 0)
        rs->all_down_since_ms = now;
    update_min_inv_gbps(rs);
    /* A rail is queued once per UP -> DOWN, and it is put back in service
     * only after the queue was drained: the ring never overflows. */
    rs->ev.lost[(rs->ev.lost_head + rs->ev.n_lost) % RAILWIRE_MAX_RAILS] = (uint8_t)i;
    rs->ev.n_lost++;
    rs->ev.pending++;
    return 1;
}

void rw_rail_report_control_ended(railwire_railset *rs, struct rw_rsess *s)
{
    for (unsigned i = 0; i < rs->n_rails; i++)
        if (rs->rails[i].sess == s)
            rs->rails[i].stats.control_up = 0;
    if (!rs->ev.control_ended)
        rs->ev.pending++;
    rs->ev.control_ended = 1;
}

int rw_rail_next_lost(railwire_railset *rs, unsigned *i)
{
    if (!rs->ev.n_lost)
        return 0;
    *i = rs->ev.lost[rs->ev.lost_head];
    rs->ev.lost_head = (rs->ev.lost_head + 1) % RAILWIRE_MAX_RAILS;
    rs->ev.n_lost--;
    rs->ev.pending--;
    return 1;
}

int rw_rail_take_control_ended(railwire_railset *rs)
{
    int e = rs->ev.control_ended;
    if (e)
        rs->ev.pending--;
    rs->ev.control_ended = 0;
    return e;
}

int64_t rw_rail_all_down_deadline(const railwire_railset *rs)
{
    if (!rs->healer || rs->n_live > 0 || rs->all_down_expired)
        return INT64_MAX;
    return rs->all_down_since_ms + rs->all_down_timeout_ms;
}

int rw_rail_all_down_due(railwire_railset *rs, int64_t now)
{
    if (now < rw_rail_all_down_deadline(rs))
        return 0;
    rs->all_down_expired = 1;
    return 1;
}
