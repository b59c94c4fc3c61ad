/* SPDX-License-Identifier: MIT */
/* The served-request counters of tcp server domains (tcp_served.h). */
#include "tcp/tcp_budget.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_served.h"

void rw_tcp_served_count(struct rw_tcp_served *s, unsigned op, uint32_t len, int ok)
{
    if (!ok) {
        atomic_fetch_add_explicit(&s->refused, 1, memory_order_relaxed);
    } else if (op == RW_TCP_OP_WRITE) {
        atomic_fetch_add_explicit(&s->writes, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->bytes_written, len, memory_order_relaxed);
    } else {
        atomic_fetch_add_explicit(&s->reads, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->bytes_read, len, memory_order_relaxed);
    }
}

int rw_tcp_domain_served(struct rw_domain *dom, struct rw_served *out)
{
    const struct rw_tcp_served *s = &rw_tcp_dom(dom)->served;
    out->reads = atomic_load_explicit(&s->reads, memory_order_relaxed);
    out->writes = atomic_load_explicit(&s->writes, memory_order_relaxed);
    out->bytes_read = atomic_load_explicit(&s->bytes_read, memory_order_relaxed);
    out->bytes_written = atomic_load_explicit(&s->bytes_written, memory_order_relaxed);
    out->refused = atomic_load_explicit(&s->refused, memory_order_relaxed);
    out->bytes_read_by_ref = atomic_load_explicit(&s->bytes_by_ref, memory_order_relaxed);
    if (rw_tcp_dom(dom)->role == RW_ROLE_SERVER) {
        struct rw_tcp_budget_stats b;
        rw_tcp_budget_get_stats(&b);
        out->queue_budget = b.budget;
        out->queue_share = b.share;
        out->queued = b.queued;
        out->queued_peak = b.peak;
        out->queue_evictions = b.evicted;
        out->queue_starved = b.starved;
    }
    return 0;
}
