/* SPDX-License-Identifier: MIT */
/* The process-wide queue budget and the per-session shares (see
 * tcp_budget.h).  Lock-free counters: every loop thread reserves and
 * returns bytes on its own connections' behalf. */
#include "tcp/tcp_budget.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Atomic uint64_t g_budget = RW_TCP_DEFAULT_BUDGET;
static _Atomic uint64_t g_share = RW_TCP_DEFAULT_SHARE;
static _Atomic uint64_t g_queued;
static _Atomic uint64_t g_peak;
static _Atomic unsigned g_conns;
static _Atomic uint64_t g_evicted;
static _Atomic uint64_t g_starved;
static _Atomic int64_t g_starving_ms = -1000000;
static _Atomic unsigned g_next_loop_base;

void rw_tcp_budget_configure(uint64_t budget, uint64_t share)
{
    if (budget)
        atomic_store(&g_budget, budget);
    if (share)
        atomic_store(&g_share, share);
}

struct rw_tcp_sess *rw_tcp_sess_new(void)
{
    struct rw_tcp_sess *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    atomic_store(&s->refs, 1);
    atomic_store(&s->n_eps, 1);
    atomic_store(&s->placed, 0);
    s->loop_base = atomic_fetch_add(&g_next_loop_base, 1);
    return s;
}

void rw_tcp_sess_join(struct rw_tcp_sess *s)
{
    atomic_fetch_add(&s->refs, 1);
    atomic_fetch_add(&s->n_eps, 1);
}

unsigned rw_tcp_sess_place(struct rw_tcp_sess *s)
{
    return s->loop_base + atomic_fetch_add(&s->placed, 1);
}

void rw_tcp_sess_leave(struct rw_tcp_sess *s)
{
    if (!s)
        return;
    atomic_fetch_sub(&s->n_eps, 1);
    if (atomic_fetch_sub(&s->refs, 1) == 1)
        free(s);
}

uint64_t rw_tcp_budget_cap(const struct rw_tcp_sess *s)
{
    unsigned n = atomic_load(&g_conns), k = s ? atomic_load(&s->n_eps) : 1;
    uint64_t cap = atomic_load(&g_budget) / (n ? n : 1);
    uint64_t share = atomic_load(&g_share) / (k ? k : 1);

    if (share < cap)
        cap = share;
    if (cap > RW_TCP_CAP_MAX)
        cap = RW_TCP_CAP_MAX;
    if (cap < RW_TCP_CAP_MIN)
        cap = RW_TCP_CAP_MIN;
    return cap;
}

void rw_tcp_budget_conn_add(void)
{
    atomic_fetch_add(&g_conns, 1);
}

void rw_tcp_budget_conn_del(void)
{
    atomic_fetch_sub(&g_conns, 1);
}

uint64_t rw_tcp_budget_take(uint64_t n)
{
    uint64_t b = atomic_load(&g_budget);
    uint64_t q = atomic_load(&g_queued), g, p;

    do {
        g = q >= b ? 0 : b - q < n ? b - q : n;
        if (g == 0)
            break;
    } while (!atomic_compare_exchange_weak(&g_queued, &q, q + g));
    if (g < n) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        atomic_store(&g_starving_ms, (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
        atomic_fetch_add(&g_starved, 1);
    }
    if (g) {
        q += g;
        p = atomic_load(&g_peak);
        while (q > p && !atomic_compare_exchange_weak(&g_peak, &p, q))
            ;
    }
    return g;
}

void rw_tcp_budget_give(uint64_t n)
{
    if (n)
        atomic_fetch_sub(&g_queued, n);
}

long rw_tcp_host_tcp_pages(long *pressure)
{
    char line[256];
    long mem = -1, lo, mid, hi;
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_mem", "r");

    *pressure = -1;
    if (f) {
        if (fscanf(f, "%ld %ld %ld", &lo, &mid, &hi) == 3)
            *pressure = mid;
        fclose(f);
    }
    f = fopen("/proc/net/sockstat", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        char *m = strstr(line, " mem ");
        if (strncmp(line, "TCP:", 4) == 0 && m)
            mem = atol(m + 5);
    }
    fclose(f);
    return mem;
}

static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t host_checked_ms = -1000000;
static int host_pressure;

int rw_tcp_budget_host_pressure(int64_t now_ms)
{
    int p;

    pthread_mutex_lock(&host_lock);
    if (now_ms - host_checked_ms >= 200) {
        long limit, pages = rw_tcp_host_tcp_pages(&limit);
        host_pressure = pages >= 0 && limit > 0 && pages >= limit;
        host_checked_ms = now_ms;
    }
    p = host_pressure;
    pthread_mutex_unlock(&host_lock);
    return p;
}

static _Atomic int g_evict = 1;

void rw_tcp_budget_set_eviction(int on)
{
    atomic_store(&g_evict, on);
}

int rw_tcp_budget_starving(int64_t now_ms)
{
    if (!atomic_load(&g_evict))
        return 0;
    return now_ms - atomic_load(&g_starving_ms) < 500 || rw_tcp_budget_host_pressure(now_ms);
}

void rw_tcp_budget_count_eviction(void)
{
    atomic_fetch_add(&g_evicted, 1);
}

void rw_tcp_budget_get_stats(struct rw_tcp_budget_stats *out)
{
    out->budget = atomic_load(&g_budget);
    out->share = atomic_load(&g_share);
    out->queued = atomic_load(&g_queued);
    out->peak = atomic_load(&g_peak);
    out->conns = atomic_load(&g_conns);
    out->evicted = atomic_load(&g_evicted);
    out->starved = atomic_load(&g_starved);
}

void rw_tcp_budget_reset_peak(void)
{
    atomic_store(&g_peak, atomic_load(&g_queued));
}
