/* SPDX-License-Identifier: MIT */
/* The server's counters: updated by the loop thread, read from any thread. */
#include <string.h>

#include "common/log.h"
#include "common/struct_abi.h"
#include "rail/server/server_internal.h"

void rw_srv_count(struct railwire_server *srv, size_t field, int64_t d)
{
    pthread_mutex_lock(&srv->stats_lock);
    uint64_t *p = (uint64_t *)(void *)((char *)&srv->st + field);
    *p = (uint64_t)((int64_t)*p + d);
    pthread_mutex_unlock(&srv->stats_lock);
}

void rw_srv_rail_census(struct railwire_server *srv)
{
    uint64_t n[4] = {0}; /* indexed by enum rw_ep_liveness */
    rw_list_for_each(c, &srv->sessions, struct rw_conn, link)
        for (unsigned i = 0; i < c->n; i++) {
            if (!c->eps[i])
                continue;
            int st = srv->ops->ep_liveness ? srv->ops->ep_liveness(c->eps[i]) : RW_EP_UNKNOWN;
            n[st >= 0 && st < 4 ? st : RW_EP_UNKNOWN]++;
        }
    pthread_mutex_lock(&srv->stats_lock);
    srv->st.rails_unknown = n[RW_EP_UNKNOWN];
    srv->st.rails_waiting = n[RW_EP_WAITING];
    srv->st.rails_attached = n[RW_EP_LIVE];
    srv->st.rails_closed = n[RW_EP_DEAD];
    pthread_mutex_unlock(&srv->stats_lock);
}

int railwire_server_stats(const railwire_server *srv, struct railwire_server_stats *caller,
                          size_t size)
{
    if (!srv || !caller || size < RAILWIRE_SERVER_STATS_MIN_SIZE) {
        rw_err("server_stats: NULL server or out, or size %zu below %u: pass sizeof *out", size,
               RAILWIRE_SERVER_STATS_MIN_SIZE);
        return RAILWIRE_E_INVALID;
    }
    /* Built whole here, then only `size` bytes go to the caller. */
    struct railwire_server_stats snap, *out = &snap;
    /* The transport's counters first, outside the lock: they are atomics
     * of their own and the domains are fixed after create. */
    struct rw_served sum = {0};
    int counted = srv->ops && srv->ops->domain_served;
    for (unsigned i = 0; counted && i < srv->n_doms; i++) {
        struct rw_served one = {0};
        if (!srv->doms[i].dom || srv->ops->domain_served(srv->doms[i].dom, &one) < 0)
            continue;
        sum.reads += one.reads;
        sum.writes += one.writes;
        sum.bytes_read += one.bytes_read;
        sum.bytes_written += one.bytes_written;
        sum.refused += one.refused;
        sum.bytes_read_by_ref += one.bytes_read_by_ref;
        /* process-wide: the same in every domain, taken once */
        sum.queue_budget = one.queue_budget;
        sum.queue_share = one.queue_share;
        sum.queued = one.queued;
        sum.queued_peak = one.queued_peak;
        sum.queue_evictions = one.queue_evictions;
        sum.queue_starved = one.queue_starved;
    }
    pthread_mutex_t *lock = (pthread_mutex_t *)&srv->stats_lock;
    pthread_mutex_lock(lock);
    memcpy(out, &srv->st, sizeof(*out));
    pthread_mutex_unlock(lock);
    out->data_counted = (uint64_t)counted;
    out->requests_read = sum.reads;
    out->requests_written = sum.writes;
    out->bytes_read = sum.bytes_read;
    out->bytes_written = sum.bytes_written;
    out->requests_refused = sum.refused;
    out->bytes_read_by_reference = sum.bytes_read_by_ref;
    out->queue_budget_bytes = sum.queue_budget;
    out->queue_share_bytes = sum.queue_share;
    out->queued_bytes = sum.queued;
    out->queued_peak_bytes = sum.queued_peak;
    out->queue_evictions = sum.queue_evictions;
    out->queue_starved = sum.queue_starved;
    rw_srv_mem_stats(srv, out);
    rw_struct_out(caller, size, &snap, sizeof(snap));
    return 0;
}

unsigned railwire_server_sessions(const railwire_server *srv)
{
    if (!srv)
        return 0;
    pthread_mutex_t *lock = (pthread_mutex_t *)&srv->stats_lock;
    pthread_mutex_lock(lock);
    unsigned n = (unsigned)srv->st.sessions_live;
    pthread_mutex_unlock(lock);
    return n;
}
