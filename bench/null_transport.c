/* SPDX-License-Identifier: MIT */
/* The null transport (see null_transport.h). */
#include "null_transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

struct null_domain {
    struct rw_domain pub;
};

struct null_mr {
    struct rw_mr pub;
};

/* One accepted WR, waiting for ep_poll. */
struct null_slot {
    uint64_t wr_id;
    uint32_t len;
    uint64_t due_ns;          /* rate model: visible from this time on */
};

struct null_ep {
    struct rw_ep pub;
    struct null_slot *ring;   /* cap entries, cap a power of two */
    unsigned cap, head, count;
    int dead;
    int fd;                   /* eventfd or -1 */
    double ns_per_byte;       /* 0: immediate */
    uint64_t latency_ns;
    double link_free_ns;      /* rate model: when the link finishes what it holds */
};

static struct null_config cfg = {.max_qp_wr = 4096};
static struct null_counters ctr;
static unsigned n_domains;

void null_configure(const struct null_config *c)
{
    cfg = *c;
    if (!cfg.max_qp_wr)
        cfg.max_qp_wr = 1;
}

void null_counters_get(struct null_counters *out)
{
    *out = ctr;
}

void null_reset_counters(void)
{
    memset(&ctr, 0, sizeof(ctr));
}

static uint64_t clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ctr.clock_reads++;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int n_domain_open(const struct rw_domain_cfg *dc, struct rw_domain **out)
{
    (void)dc;
    struct null_domain *d = calloc(1, sizeof(*d));
    if (!d)
        return RAILWIRE_E_NOMEM;
    d->pub.ops = &rw_null_ops;
    snprintf(d->pub.name, sizeof(d->pub.name), "null:%u", n_domains++);
    /* The striping weight in Gbit/s, as verbs reports it. */
    d->pub.gbps = cfg.line_gbs > 0 ? cfg.line_gbs * 8.0 : 100.0;
    d->pub.max_qp_wr = cfg.max_qp_wr;
    d->pub.max_msg = 0;
    *out = &d->pub;
    return 0;
}

static void n_domain_close(struct rw_domain *dom)
{
    free(rw_container_of(dom, struct null_domain, pub));
}

static int n_mr_reg(struct rw_domain *dom, void *addr, size_t len, int access, struct rw_mr **out)
{
    struct null_mr *m = calloc(1, sizeof(*m));
    if (!m)
        return RAILWIRE_E_NOMEM;
    m->pub.dom = dom;
    m->pub.addr = addr;
    m->pub.len = len;
    m->pub.access = access;
    m->pub.lkey = 1;
    m->pub.rkey = 1;
    m->pub.remote_base = (uint64_t)(uintptr_t)addr;
    *out = &m->pub;
    return 0;
}

static void n_mr_dereg(struct rw_mr *mr)
{
    free(rw_container_of(mr, struct null_mr, pub));
}

static int n_ep_create(struct rw_domain *dom, const struct rw_ep_cfg *ec, struct rw_ep **out)
{
    (void)ec;
    struct null_ep *e = calloc(1, sizeof(*e));
    if (!e)
        return RAILWIRE_E_NOMEM;
    e->cap = 1;
    while (e->cap < dom->max_qp_wr)
        e->cap <<= 1;
    e->ring = calloc(e->cap, sizeof(*e->ring));
    /* The rate model has no timer to wake a sleeper: it is busy-polled. */
    e->fd = cfg.use_eventfd && !(cfg.line_gbs > 0) ? eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) : -1;
    if (!e->ring || (cfg.use_eventfd && !(cfg.line_gbs > 0) && e->fd < 0)) {
        if (e->fd >= 0)
            close(e->fd);
        free(e->ring);
        free(e);
        return RAILWIRE_E_NOMEM;
    }
    e->pub.dom = dom;
    e->pub.local.qpn = 1;
    if (cfg.line_gbs > 0)
        e->ns_per_byte = 1.0 / cfg.line_gbs; /* GB/s = bytes per ns */
    e->latency_ns = cfg.latency_ns;
    *out = &e->pub;
    return 0;
}

static int n_ep_connect(struct rw_ep *ep, const struct rw_qp_id *remote, int timeout_ms)
{
    (void)ep;
    (void)remote;
    (void)timeout_ms;
    return 0;
}

static int n_ep_post(struct rw_ep *ep, const struct rw_wr *wrs, size_t n)
{
    struct null_ep *e = rw_container_of(ep, struct null_ep, pub);
    if (e->dead)
        return RAILWIRE_E_RAIL_DOWN;
    ctr.post_calls++;
    double t = 0;
    if (e->ns_per_byte > 0) {
        double now = (double)clock_ns();
        t = e->link_free_ns > now ? e->link_free_ns : now;
    }
    size_t k = 0;
    for (; k < n && e->count < e->cap; k++) {
        struct null_slot *s = &e->ring[(e->head + e->count) & (e->cap - 1)];
        s->wr_id = wrs[k].wr_id;
        s->len = wrs[k].length;
        if (e->ns_per_byte > 0) {
            t += (double)wrs[k].length * e->ns_per_byte;
            s->due_ns = (uint64_t)t + e->latency_ns;
        }
        e->count++;
    }
    if (e->ns_per_byte > 0)
        e->link_free_ns = t;
    ctr.wrs += k;
    return (int)k;
}

static int n_ep_poll(struct rw_ep *ep, struct rw_wc *wcs, int max)
{
    struct null_ep *e = rw_container_of(ep, struct null_ep, pub);
    ctr.poll_calls++;
    if (!e->count)
        return 0;
    uint64_t now = e->ns_per_byte > 0 ? clock_ns() : UINT64_MAX;
    int status = e->dead ? RAILWIRE_E_RAIL_DOWN : 0;
    int n = 0;
    while (n < max && e->count) {
        const struct null_slot *s = &e->ring[e->head];
        if (!e->dead && s->due_ns > now)
            break;
        wcs[n].wr_id = s->wr_id;
        wcs[n].status = status;
        wcs[n].byte_len = status ? 0 : s->len;
        ctr.bytes += wcs[n].byte_len;
        n++;
        e->head = (e->head + 1) & (e->cap - 1);
        e->count--;
    }
    ctr.wcs += (uint64_t)n;
    return n;
}

static int n_ep_wait_fd(struct rw_ep *ep)
{
    return rw_container_of(ep, struct null_ep, pub)->fd;
}

static int n_ep_arm(struct rw_ep *ep)
{
    struct null_ep *e = rw_container_of(ep, struct null_ep, pub);
    if (e->fd < 0)
        return 0;
    uint64_t v;
    while (read(e->fd, &v, sizeof(v)) > 0) {
    }
    if (e->count) {
        v = 1;
        if (write(e->fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
            return -1;
    }
    return 0;
}

static void n_ep_kill(struct rw_ep *ep)
{
    rw_container_of(ep, struct null_ep, pub)->dead = 1;
}

static void n_ep_destroy(struct rw_ep *ep)
{
    struct null_ep *e = rw_container_of(ep, struct null_ep, pub);
    if (e->fd >= 0)
        close(e->fd);
    free(e->ring);
    free(e);
}

const struct rw_transport_ops rw_null_ops = {
    .name = "null",
    .domain_open = n_domain_open,
    .domain_close = n_domain_close,
    .mr_reg = n_mr_reg,
    .mr_dereg = n_mr_dereg,
    .ep_create = n_ep_create,
    .ep_connect = n_ep_connect,
    .ep_post = n_ep_post,
    .ep_poll = n_ep_poll,
    .ep_wait_fd = n_ep_wait_fd,
    .ep_arm = n_ep_arm,
    .ep_kill = n_ep_kill,
    .ep_destroy = n_ep_destroy,
};
