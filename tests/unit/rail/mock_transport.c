/* SPDX-License-Identifier: MIT */
/* The mock transport (see mock_transport.h). */
#include "mock_transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/time.h"

#define MOCK_MAX_MRS 8192
#define MOCK_LOG 4096
/* Each domain's remote addresses are offset differently, so a rail that
 * used another rail's base address would hit nothing. */
#define MOCK_DOM_STRIDE 0x100000000000ull

struct mock_domain {
    struct rw_domain pub;
    unsigned id;
};

struct mock_mr {
    struct rw_mr pub;
    int live;
};

struct mock_op {
    struct rw_wr wr;
    uint64_t due_ns;          /* CLOCK_MONOTONIC: it may finish from then on */
};

struct mock_ep {
    struct rw_ep pub;
    struct mock_op *q;        /* outstanding ring */
    unsigned cap, head, count;
    unsigned depth, per_poll;
    int dead, blackhole, post_fails, use_fd, fd;
    long fail_after;          /* -1: never */
    unsigned completed, killed, max_out;
    uint64_t bytes;
    struct rw_wc *flushed;    /* completions owed after a death */
    unsigned n_flushed;
    uint64_t delay_ns;        /* mock_ep_set_delay_us */
    int tfd;                  /* the wait fd while delay_ns: a timerfd, -1 before */
};

static struct {
    double gbps;
    unsigned max_qp_wr;
    uint32_t max_msg;
    int set;
} next_dom;
static unsigned dom_ids;
static unsigned default_depth;
static struct mock_mr *mrs[MOCK_MAX_MRS];
static unsigned n_mrs;
static unsigned violations;
static unsigned live_objects, kills_total;
static struct rw_wr oplog[MOCK_LOG];
static size_t n_oplog;
static unsigned shared_slots, shared_used; /* a bound over every ep's outstanding ops */

void mock_next_domain(double gbps, unsigned max_qp_wr, uint32_t max_msg)
{
    next_dom.gbps = gbps;
    next_dom.max_qp_wr = max_qp_wr;
    next_dom.max_msg = max_msg;
    next_dom.set = 1;
}

void mock_set_default_depth(unsigned depth)
{
    default_depth = depth;
}

void mock_reset(void)
{
    n_mrs = 0;
    violations = 0;
    n_oplog = 0;
    kills_total = 0;
    shared_slots = 0;
    shared_used = 0;
    next_dom.set = 0;
    memset(mrs, 0, sizeof(mrs));
}

unsigned mock_live_objects(void)
{
    return live_objects;
}

unsigned mock_kills_total(void)
{
    return kills_total;
}

unsigned mock_violations(void)
{
    return violations;
}

size_t mock_log(const struct rw_wr **out)
{
    *out = oplog;
    return n_oplog;
}

static int m_domain_open(const struct rw_domain_cfg *cfg, struct rw_domain **out)
{
    (void)cfg;
    struct mock_domain *d = calloc(1, sizeof(*d));
    if (!d)
        return RAILWIRE_E_NOMEM;
    d->id = ++dom_ids;
    d->pub.ops = &rw_mock_ops;
    snprintf(d->pub.name, sizeof(d->pub.name), "mock:%u", d->id);
    d->pub.gbps = next_dom.set ? next_dom.gbps : 10.0;
    d->pub.max_qp_wr = next_dom.set ? next_dom.max_qp_wr : 1024;
    d->pub.max_msg = next_dom.set ? next_dom.max_msg : 0;
    d->pub.default_depth = default_depth;
    next_dom.set = 0;
    live_objects++;
    *out = &d->pub;
    return 0;
}

static void m_domain_close(struct rw_domain *dom)
{
    live_objects--;
    free(rw_container_of(dom, struct mock_domain, pub));
}

static int m_mr_reg(struct rw_domain *dom, void *addr, size_t len, int access, struct rw_mr **out)
{
    if (n_mrs == MOCK_MAX_MRS)
        return RAILWIRE_E_LIMIT;
    struct mock_mr *m = calloc(1, sizeof(*m));
    if (!m)
        return RAILWIRE_E_NOMEM;
    struct mock_domain *d = rw_container_of(dom, struct mock_domain, pub);
    m->pub.dom = dom;
    m->pub.addr = addr;
    m->pub.len = len;
    m->pub.access = access;
    m->pub.lkey = 100 + n_mrs;
    m->pub.rkey = 5000 + n_mrs;
    m->pub.remote_base = (uint64_t)(uintptr_t)addr + d->id * MOCK_DOM_STRIDE;
    m->live = 1;
    mrs[n_mrs++] = m;
    live_objects++;
    *out = &m->pub;
    return 0;
}

static void m_mr_dereg(struct rw_mr *mr)
{
    struct mock_mr *m = rw_container_of(mr, struct mock_mr, pub);
    for (unsigned i = 0; i < n_mrs; i++)
        if (mrs[i] == m)
            mrs[i] = NULL;
    live_objects--;
    free(m);
}

static int m_ep_create(struct rw_domain *dom, const struct rw_ep_cfg *cfg, struct rw_ep **out)
{
    struct mock_ep *e = calloc(1, sizeof(*e));
    if (!e)
        return RAILWIRE_E_NOMEM;
    e->cap = 4096;
    e->q = calloc(e->cap, sizeof(*e->q));
    e->flushed = calloc(e->cap, sizeof(*e->flushed));
    if (!e->q || !e->flushed) {
        free(e->q);
        free(e->flushed);
        free(e);
        return RAILWIRE_E_NOMEM;
    }
    e->pub.dom = dom;
    e->pub.local.qpn = 77;
    e->depth = cfg && cfg->depth ? cfg->depth : 1024;
    e->fail_after = -1;
    e->use_fd = 1;
    e->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    e->tfd = -1;
    live_objects++;
    *out = &e->pub;
    return 0;
}

static int m_ep_connect(struct rw_ep *ep, const struct rw_qp_id *remote, int timeout_ms)
{
    (void)ep;
    (void)remote;
    (void)timeout_ms;
    return 0;
}

static struct mock_mr *find_remote(uint32_t rkey)
{
    for (unsigned i = 0; i < n_mrs; i++)
        if (mrs[i] && mrs[i]->pub.rkey == rkey)
            return mrs[i];
    return NULL;
}

static void die(struct mock_ep *e)
{
    if (e->dead)
        return;
    e->dead = 1;
    while (e->count) {
        struct mock_op *op = &e->q[e->head];
        e->flushed[e->n_flushed++] = (struct rw_wc){.wr_id = op->wr.wr_id,
                                                    .status = RAILWIRE_E_RAIL_DOWN};
        e->head = (e->head + 1) % e->cap;
        e->count--;
        shared_used--;
    }
}

static int m_ep_post(struct rw_ep *ep, const struct rw_wr *wrs, size_t n)
{
    struct mock_ep *e = rw_container_of(ep, struct mock_ep, pub);
    if (e->dead || e->post_fails)
        return RAILWIRE_E_RAIL_DOWN;
    size_t k = 0;
    for (; k < n && e->count < e->depth && e->count < e->cap &&
           (!shared_slots || shared_used < shared_slots);
         k++) {
        const struct rw_wr *w = &wrs[k];
        const struct rw_mr *lm = w->mr;
        uint32_t maxm = ep->dom->max_msg;
        if (!lm || lm->dom != ep->dom || w->length == 0 || (maxm && w->length > maxm) ||
            (char *)w->local < (char *)lm->addr ||
            (char *)w->local + w->length > (char *)lm->addr + lm->len)
            violations++;
        e->q[(e->head + e->count) % e->cap].wr = *w;
        e->q[(e->head + e->count) % e->cap].due_ns = e->delay_ns ? rw_now_ns() + e->delay_ns : 0;
        e->count++;
        shared_used++;
        if (n_oplog < MOCK_LOG)
            oplog[n_oplog++] = *w;
    }
    if (e->count > e->max_out)
        e->max_out = e->count;
    return (int)k;
}

/* Runs one op against the remote table; returns its status. */
static int execute(const struct rw_wr *w)
{
    struct mock_mr *m = find_remote(w->rkey);
    if (!m)
        return RAILWIRE_E_REMOTE_ACCESS;
    int need = w->opcode == RW_OP_WRITE ? RW_ACCESS_REMOTE_WRITE : RW_ACCESS_REMOTE_READ;
    if (!(m->pub.access & need))
        return RAILWIRE_E_REMOTE_ACCESS;
    uint64_t base = m->pub.remote_base;
    if (w->remote_addr < base || w->remote_addr - base > m->pub.len ||
        w->length > m->pub.len - (w->remote_addr - base))
        return RAILWIRE_E_REMOTE_ACCESS;
    char *remote = (char *)m->pub.addr + (w->remote_addr - base);
    if (w->opcode == RW_OP_WRITE)
        memcpy(remote, w->local, w->length);
    else
        memcpy(w->local, remote, w->length);
    return 0;
}

static int m_ep_poll(struct rw_ep *ep, struct rw_wc *wcs, int max)
{
    struct mock_ep *e = rw_container_of(ep, struct mock_ep, pub);
    int n = 0;
    if (e->dead) {
        while (n < max && e->n_flushed) {
            wcs[n++] = e->flushed[0];
            memmove(e->flushed, e->flushed + 1, --e->n_flushed * sizeof(*e->flushed));
        }
        return n;
    }
    if (e->blackhole)
        return 0;
    unsigned limit = e->per_poll ? e->per_poll : e->count;
    uint64_t now = e->delay_ns ? rw_now_ns() : 0;
    while (n < max && e->count && limit-- && e->q[e->head].due_ns <= now) {
        if (e->fail_after == 0) {
            die(e);
            return n + m_ep_poll(ep, wcs + n, max - n);
        }
        struct mock_op *op = &e->q[e->head];
        int st = execute(&op->wr);
        wcs[n].wr_id = op->wr.wr_id;
        wcs[n].status = st;
        wcs[n].byte_len = st ? 0 : op->wr.length;
        n++;
        e->head = (e->head + 1) % e->cap;
        e->count--;
        shared_used--;
        if (st == 0) {
            e->completed++;
            e->bytes += op->wr.length;
            if (e->fail_after > 0)
                e->fail_after--;
        }
    }
    return n;
}

static int m_ep_wait_fd(struct rw_ep *ep)
{
    struct mock_ep *e = rw_container_of(ep, struct mock_ep, pub);
    return !e->use_fd ? -1 : e->delay_ns ? e->tfd : e->fd;
}

/* A delayed ep's arm: the timerfd fires when the oldest op is due (at
 * once if it is, never while nothing waits). */
static int arm_delayed(struct mock_ep *e)
{
    struct itimerspec its;
    uint64_t v;
    memset(&its, 0, sizeof(its));
    while (read(e->tfd, &v, sizeof(v)) > 0) {
    }
    if (e->n_flushed || (e->count && !e->blackhole)) {
        uint64_t due = e->n_flushed ? 1 : e->q[e->head].due_ns;
        if (due == 0)
            due = 1;
        its.it_value.tv_sec = (time_t)(due / 1000000000ull);
        its.it_value.tv_nsec = (long)(due % 1000000000ull);
    }
    return timerfd_settime(e->tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0 ? -1 : 0;
}

static int m_ep_arm(struct rw_ep *ep)
{
    struct mock_ep *e = rw_container_of(ep, struct mock_ep, pub);
    uint64_t v;
    if (e->delay_ns)
        return arm_delayed(e);
    while (read(e->fd, &v, sizeof(v)) > 0) {
    }
    if ((e->count && !e->blackhole) || e->n_flushed) {
        v = 1;
        if (write(e->fd, &v, sizeof(v)) != sizeof(v))
            return -1;
    }
    return 0;
}

static void m_ep_kill(struct rw_ep *ep)
{
    struct mock_ep *e = rw_container_of(ep, struct mock_ep, pub);
    e->killed++;
    kills_total++;
    die(e);
}

static void m_ep_destroy(struct rw_ep *ep)
{
    struct mock_ep *e = rw_container_of(ep, struct mock_ep, pub);
    if (e->fd >= 0)
        close(e->fd);
    if (e->tfd >= 0)
        close(e->tfd);
    shared_used -= e->count;
    free(e->q);
    free(e->flushed);
    free(e);
    live_objects--;
}

const struct rw_transport_ops rw_mock_ops = {
    .name = "mock",
    .domain_open = m_domain_open,
    .domain_close = m_domain_close,
    .mr_reg = m_mr_reg,
    .mr_dereg = m_mr_dereg,
    .ep_create = m_ep_create,
    .ep_connect = m_ep_connect,
    .ep_post = m_ep_post,
    .ep_poll = m_ep_poll,
    .ep_wait_fd = m_ep_wait_fd,
    .ep_arm = m_ep_arm,
    .ep_kill = m_ep_kill,
    .ep_destroy = m_ep_destroy,
};

#define EP(x) rw_container_of((x), struct mock_ep, pub)
void mock_ep_fail_now(struct rw_ep *ep) { die(EP(ep)); }
void mock_ep_fail_after(struct rw_ep *ep, unsigned k) { EP(ep)->fail_after = (long)k; }
void mock_ep_blackhole(struct rw_ep *ep, int on) { EP(ep)->blackhole = on; }
void mock_ep_post_fails(struct rw_ep *ep, int on) { EP(ep)->post_fails = on; }
void mock_ep_set_depth(struct rw_ep *ep, unsigned depth) { EP(ep)->depth = depth; }
void mock_set_shared_slots(unsigned n) { shared_slots = n; }
void mock_ep_set_per_poll(struct rw_ep *ep, unsigned k) { EP(ep)->per_poll = k; }
void mock_ep_use_wait_fd(struct rw_ep *ep, int on) { EP(ep)->use_fd = on; }
int mock_ep_set_delay_us(struct rw_ep *ep, unsigned us)
{
    struct mock_ep *e = EP(ep);
    if (e->count)
        return -1;
    if (e->tfd < 0)
        e->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (e->tfd < 0)
        return -1;
    e->delay_ns = (uint64_t)us * 1000u;
    return 0;
}
unsigned mock_ep_completed(const struct rw_ep *ep)
{
    return rw_container_of(ep, const struct mock_ep, pub)->completed;
}
uint64_t mock_ep_bytes(const struct rw_ep *ep)
{
    return rw_container_of(ep, const struct mock_ep, pub)->bytes;
}
unsigned mock_ep_max_outstanding(const struct rw_ep *ep)
{
    return rw_container_of(ep, const struct mock_ep, pub)->max_out;
}
unsigned mock_ep_killed(const struct rw_ep *ep)
{
    return rw_container_of(ep, const struct mock_ep, pub)->killed;
}
unsigned mock_ep_outstanding(const struct rw_ep *ep)
{
    return rw_container_of(ep, const struct mock_ep, pub)->count;
}
