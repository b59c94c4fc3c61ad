/* SPDX-License-Identifier: MIT */
/* Healing: the railset side (scheduling, backoff and damping, installing a
 * healed rail) and the worker thread that opens new sessions (see heal.h). */
#include "rail/client/heal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "rail/client/rail_state.h"

#define RW_PROBE_BYTES 64

struct rw_healer {
    struct rw_heal_cfg cfg;
    char host[256];               /* the address the railset was opened with */
    rw_heal_open_fn open;
    void *open_ctx;

    pthread_mutex_t lock;         /* guards everything down to res_via */
    pthread_cond_t cond;          /* wakes the worker */
    int refs;                     /* the railset, and the worker while it runs */
    int stop;
    int thread_started;
    int has_req;
    int busy;
    int has_res;
    struct rw_heal_req req;
    struct rw_session_out res;
    int res_rc;
    char res_via[RW_HEAL_HOST_MAX];
    atomic_int res_ready;         /* has_res, readable without the lock */
    int wake_fd;                  /* eventfd written when a result is ready */

    /* The railset's thread only. */
    int in_flight;                /* an attempt was posted and not installed yet */
    int64_t due_ms;               /* next attempt, 0 = none scheduled */
    int backoff_ms;
    int64_t last_change_ms;       /* last heal or loss: the stability clock */
    int refresh;                  /* a session's control connection ended */
    uint64_t rng;
    char via[RW_HEAL_HOST_MAX];   /* the host the last successful heal went through */
};

static void free_strings(char **v, unsigned n)
{
    for (unsigned i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static void healer_free(struct rw_healer *h)
{
    free_strings(h->cfg.local_addr, h->cfg.n_rails);
    free_strings(h->cfg.device, h->cfg.n_rails);
    if (h->has_res)
        rw_session_close(h->cfg.ops, &h->res);
    if (h->wake_fd >= 0)
        close(h->wake_fd);
    pthread_cond_destroy(&h->cond);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

/* ---- the worker thread ------------------------------------------------ */

/* Destroys rail i of an opened session. */
static void drop_rail(const struct rw_transport_ops *ops, struct rw_session_out *out, unsigned i)
{
    if (out->ep[i])
        ops->ep_destroy(out->ep[i]);
    if (out->dom[i])
        ops->domain_close(out->dom[i]);
    free(out->remote[i]);
    out->ep[i] = NULL;
    out->dom[i] = NULL;
    out->remote[i] = NULL;
}

/* Proves a new rail with a 1-byte READ of its first region, bounded by the
 * op timeout.  Returns 0 or why it failed. */
static int probe_rail(const struct rw_heal_cfg *cfg, struct rw_domain *dom, struct rw_ep *ep,
                      const struct rw_mr_desc *remote, unsigned i)
{
    const struct rw_transport_ops *ops = cfg->ops;
    uint8_t *buf = calloc(1, RW_PROBE_BYTES);
    struct rw_mr *mr = NULL;
    int rc;

    if (!buf)
        return RAILWIRE_E_NOMEM;
    rc = ops->mr_reg(dom, buf, RW_PROBE_BYTES, RW_ACCESS_LOCAL, &mr);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    struct rw_wr wr = {.wr_id = 1, .opcode = RW_OP_READ, .local = buf, .mr = mr, .length = 1,
                       .remote_addr = remote[0].base_addr, .rkey = remote[0].rkey,
                       .signaled = 1};
    rc = ops->ep_post(ep, &wr, 1);
    if (rc == 1) {
        int64_t deadline = rw_now_ms() + (cfg->op_timeout_ms > 0 ? cfg->op_timeout_ms : 10000);
        for (;;) {
            struct rw_wc wc;
            int n = ops->ep_poll(ep, &wc, 1);
            if (n < 0) {
                rc = n;
                break;
            }
            if (n == 1) {
                rc = wc.status;
                break;
            }
            int left = rw_ms_left(deadline);
            if (left == 0) {
                rc = RAILWIRE_E_TIMEOUT;
                break;
            }
            int fd = ops->ep_wait_fd(ep);
            if (fd >= 0 && ops->ep_arm(ep) == 0) {
                n = ops->ep_poll(ep, &wc, 1);
                if (n == 1) {
                    rc = wc.status;
                    break;
                }
                struct pollfd p = {.fd = fd, .events = POLLIN};
                poll(&p, 1, left < 50 ? left : 50);
            } else {
                struct timespec ts = {0, 1000000L};
                nanosleep(&ts, NULL);
            }
        }
    } else if (rc >= 0) {
        rc = RAILWIRE_E_RAIL_DOWN;
    }
    if (rc != 0) {
        rw_warn("heal: rail %u (%s): the probe READ failed (%s); the new rail is not used", i,
                dom->name, railwire_error_class(rc));
        /* Nothing may touch the probe buffer once it is freed. */
        ops->ep_kill(ep);
    }
    ops->mr_dereg(mr);
    free(buf);
    return rc;
}

/* Drops the rails nobody asked for and probes the others.  Returns 0 when
 * at least one needed rail passed its probe. */
static int probe_all(const struct rw_healer *h, const struct rw_heal_req *req,
                     struct rw_session_out *out)
{
    int rc = RAILWIRE_E_CONNECT, ok = 0;

    for (unsigned i = 0; i < out->n_rails; i++) {
        if (!out->ep[i])
            continue;
        if (!req->need[i]) {
            drop_rail(h->cfg.ops, out, i);
            continue;
        }
        int e = probe_rail(&h->cfg, out->dom[i], out->ep[i], out->remote[i], i);
        if (e == 0) {
            ok = 1;
        } else {
            rc = e;
            drop_rail(h->cfg.ops, out, i);
        }
    }
    return ok ? 0 : rc;
}

static int stopping(struct rw_healer *h)
{
    pthread_mutex_lock(&h->lock);
    int s = h->stop;
    pthread_mutex_unlock(&h->lock);
    return s;
}

/* One attempt: each host in turn until a session opens; then the probes. */
static int attempt(struct rw_healer *h, const struct rw_heal_req *req, struct rw_session_out *out,
                   char *via)
{
    int rc = RAILWIRE_E_CONNECT;

    for (unsigned k = 0; k < req->n_hosts && !stopping(h); k++) {
        rc = h->open(&h->cfg, req, req->hosts[k], out, h->open_ctx);
        if (rc < 0) {
            rw_info("heal: no session through %s (%s)", req->hosts[k], railwire_error_class(rc));
            continue;
        }
        rc = probe_all(h, req, out);
        if (rc == 0) {
            snprintf(via, RW_HEAL_HOST_MAX, "%s", req->hosts[k]);
            return 0;
        }
        /* The server answered but its rails do not work: another address
         * reaches the same rails. */
        rw_session_close(h->cfg.ops, out);
        return rc;
    }
    return rc;
}

static void *worker_main(void *arg)
{
    struct rw_healer *h = arg;

    pthread_mutex_lock(&h->lock);
    for (;;) {
        while (!h->stop && !h->has_req) {
            /* Idle until asked; the bounded wait only re-checks. */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&h->cond, &h->lock, &ts);
        }
        if (h->stop)
            break;
        struct rw_heal_req req = h->req;
        h->has_req = 0;
        h->busy = 1;
        pthread_mutex_unlock(&h->lock);

        struct rw_session_out out;
        char via[RW_HEAL_HOST_MAX] = "";
        memset(&out, 0, sizeof(out));
        out.fd = -1;
        int rc = attempt(h, &req, &out, via);

        pthread_mutex_lock(&h->lock);
        h->busy = 0;
        if (h->stop) {
            if (rc == 0)
                rw_session_close(h->cfg.ops, &out);
            break;
        }
        h->res = out;
        h->res_rc = rc;
        memcpy(h->res_via, via, sizeof(via));
        h->has_res = 1;
        atomic_store(&h->res_ready, 1);
        uint64_t one = 1;
        if (h->wake_fd >= 0 && write(h->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
            rw_debug("heal: cannot signal the wake eventfd: %s", strerror(errno));
    }
    int last = --h->refs == 0;
    pthread_mutex_unlock(&h->lock);
    if (last)
        healer_free(h);
    return NULL;
}

/* ---- the railset side -------------------------------------------------- */

int rw_heal_enable(railwire_railset *rs, const char *host, const struct rw_heal_cfg *cfg,
                   rw_heal_open_fn open, void *ctx)
{
    struct rw_healer *h = calloc(1, sizeof(*h));
    if (!h) {
        free_strings(cfg->local_addr, cfg->n_rails);
        free_strings(cfg->device, cfg->n_rails);
        rw_err("heal: out of memory");
        return RAILWIRE_E_NOMEM;
    }
    h->cfg = *cfg;
    if (h->cfg.backoff_min_ms <= 0)
        h->cfg.backoff_min_ms = RW_DEFAULT_HEAL_BACKOFF_MIN_MS;
    if (h->cfg.backoff_max_ms <= 0)
        h->cfg.backoff_max_ms = RW_DEFAULT_HEAL_BACKOFF_MAX_MS;
    if (h->cfg.backoff_max_ms < h->cfg.backoff_min_ms)
        h->cfg.backoff_max_ms = h->cfg.backoff_min_ms;
    if (h->cfg.stable_ms <= 0)
        h->cfg.stable_ms = RW_DEFAULT_HEAL_STABLE_MS;
    snprintf(h->host, sizeof(h->host), "%s", host ? host : "");
    h->open = open;
    h->open_ctx = ctx;
    h->refs = 1;
    h->res.fd = -1;
    h->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    h->backoff_ms = h->cfg.backoff_min_ms;
    h->rng = (uint64_t)rw_now_ns() ^ (uint64_t)(uintptr_t)h;
    atomic_init(&h->res_ready, 0);
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->cond, NULL);
    rs->healer = h;
    if (!rs->max_tries)
        rs->max_tries = RW_DEFAULT_HEALING_TRIES;
    return 0;
}

void rw_heal_disable(railwire_railset *rs)
{
    struct rw_healer *h = rs->healer;
    if (!h)
        return;
    rs->healer = NULL;
    pthread_mutex_lock(&h->lock);
    h->stop = 1;
    pthread_cond_broadcast(&h->cond);
    int last = --h->refs == 0;
    pthread_mutex_unlock(&h->lock);
    if (last)
        healer_free(h); /* frees a pending result too */
}

/* A delay of about `ms`: uniformly in [ms/2, ms], so railsets that lost
 * rails at the same moment do not all come back at the same moment. */
static int jitter(struct rw_healer *h, int ms)
{
    h->rng ^= h->rng << 13;
    h->rng ^= h->rng >> 7;
    h->rng ^= h->rng << 17;
    int half = ms / 2;
    return half + (int)(h->rng % (uint64_t)(ms - half + 1));
}

static void schedule(struct rw_healer *h, int64_t now)
{
    if (!h->in_flight && !h->due_ms)
        h->due_ms = now + jitter(h, h->backoff_ms);
}

static void grow_backoff(struct rw_healer *h)
{
    h->backoff_ms = h->backoff_ms > h->cfg.backoff_max_ms / 2 ? h->cfg.backoff_max_ms
                                                                : 2 * h->backoff_ms;
}

void rw_heal_rail_lost(railwire_railset *rs, unsigned i, int64_t now_ms)
{
    struct rw_healer *h = rs->healer;
    if (!h)
        return;
    const struct rw_rail *r = &rs->rails[i];
    if (r->stats.heals && now_ms - r->up_since_ms < h->cfg.stable_ms) {
        /* Back for a moment only: a flapping link.  Wait longer next time. */
        grow_backoff(h);
        rw_info("heal: rail %u died %lld ms after it was healed; the next attempt waits about "
                "%d ms", i, (long long)(now_ms - r->up_since_ms), h->backoff_ms);
    }
    h->last_change_ms = now_ms;
    schedule(h, now_ms);
}

/* Writes the IP address a GID carries into buf ("" when it carries none
 * usable: zero, or link-local without a scope). */
static void gid_host(const uint8_t gid[16], char *buf, size_t cap)
{
    static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t zero[16];
    buf[0] = '\0';
    if (!memcmp(gid, zero, 16) || (gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80))
        return;
    if (!memcmp(gid, v4mapped, 12))
        inet_ntop(AF_INET, gid + 12, buf, (socklen_t)cap);
    else
        inet_ntop(AF_INET6, gid, buf, (socklen_t)cap);
}

static void add_host(struct rw_heal_req *req, const char *host)
{
    if (!host || !*host || req->n_hosts == RW_HEAL_MAX_HOSTS)
        return;
    for (unsigned k = 0; k < req->n_hosts; k++)
        if (!strcmp(req->hosts[k], host))
            return;
    snprintf(req->hosts[req->n_hosts++], RW_HEAL_HOST_MAX, "%s", host);
}

/* A rail to heal: down, or up in a session whose control connection ended. */
static int wanted(const struct rw_rail *r)
{
    if (!rw_rail_is_up(r))
        return 1;
    return r->sess && r->sess->had_ctrl && !r->sess->ctrl_up;
}

static int start_worker(struct rw_healer *h)
{
    if (h->thread_started)
        return 0;
    pthread_t t;
    pthread_mutex_lock(&h->lock);
    h->refs++;
    pthread_mutex_unlock(&h->lock);
    int e = pthread_create(&t, NULL, worker_main, h);
    if (e) {
        pthread_mutex_lock(&h->lock);
        h->refs--;
        pthread_mutex_unlock(&h->lock);
        rw_err("heal: cannot start the heal thread (%s); retrying later", strerror(e));
        return RAILWIRE_E_SYSTEM;
    }
    pthread_detach(t);
    h->thread_started = 1;
    return 0;
}

static void post_attempt(railwire_railset *rs, int64_t now)
{
    struct rw_healer *h = rs->healer;
    struct rw_heal_req req;
    char list[128] = "";
    size_t used = 0;

    memset(&req, 0, sizeof(req));
    for (unsigned i = 0; i < rs->n_rails; i++) {
        if (!wanted(&rs->rails[i]))
            continue;
        req.need[i] = 1;
        req.n_rails = i + 1;
        if (used < sizeof(list))
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%u", used ? "," : "", i);
    }
    h->due_ms = 0;
    if (!req.n_rails) {
        h->refresh = 0;
        return;
    }
    /* Where a new control connection may reach the server: the address that
     * worked last, the one the railset was opened with, then every address
     * the server's live rails have (another NIC of the same server). */
    add_host(&req, h->via);
    add_host(&req, h->host);
    for (unsigned i = 0; i < rs->n_rails; i++) {
        char a[RW_HEAL_HOST_MAX];
        if (!rw_rail_is_up(&rs->rails[i]))
            continue;
        gid_host(rs->rails[i].peer.gid, a, sizeof(a));
        add_host(&req, a);
    }
    if (start_worker(h) < 0) {
        grow_backoff(h);
        schedule(h, now);
        return;
    }
    for (unsigned i = 0; i < rs->n_rails; i++)
        if (req.need[i])
            rs->rails[i].stats.heal_attempts++;
    rw_info("heal: opening a new session for rail(s) %s (%u host(s) to try)", list, req.n_hosts);
    pthread_mutex_lock(&h->lock);
    h->req = req;
    h->has_req = 1;
    pthread_cond_signal(&h->cond);
    pthread_mutex_unlock(&h->lock);
    h->in_flight = 1;
}

/* Registers every live registration of the railset on the new domain of
 * rail i.  On success each mr's staged registration is ready to swap in;
 * on failure nothing is left registered.  Returns 0 or the error. */
static int stage_mrs(railwire_railset *rs, unsigned i, struct rw_domain *dom)
{
    int rc = 0;
    struct railwire_mr *m;
    for (m = rw_list_first(&rs->mrs, struct railwire_mr, link); m;
         m = rw_list_next(m, struct railwire_mr, link)) {
        m->staged = NULL;
        rc = rs->ops->mr_reg(dom, m->addr, m->len, RW_ACCESS_LOCAL, &m->staged);
        if (rc < 0) {
            m->staged = NULL;
            rw_warn("heal: rail %u: registering %zu bytes on the new rail failed (%s)", i, m->len,
                    railwire_error_class(rc));
            break;
        }
    }
    if (rc < 0)
        rw_list_for_each(k, &rs->mrs, struct railwire_mr, link) {
            if (k == m)
                break;
            rs->ops->mr_dereg(k->staged);
            k->staged = NULL;
        }
    return rc;
}

/* Puts rail i of a healed session in service in place of rails[i]. */
static int install_rail(railwire_railset *rs, unsigned i, struct rw_session_out *res,
                        struct rw_rsess *sess, int64_t now)
{
    struct rw_healer *h = rs->healer;
    struct rw_rail *r = &rs->rails[i];
    int rc = stage_mrs(rs, i, res->dom[i]);
    if (rc < 0)
        return rc;
    if (rw_rail_is_up(r)) {
        /* The old rail still works but its session's control connection
         * ended (the server will release it after its linger): the rail
         * moves to the new session without ever going down. */
        rw_failover_rail_retire(rs, i);
    }
    rw_list_for_each(m, &rs->mrs, struct railwire_mr, link) {
        if (m->per_rail[i])
            rs->ops->mr_dereg(m->per_rail[i]);
        m->per_rail[i] = m->staged;
        m->staged = NULL;
    }
    rs->ops->ep_destroy(r->ep);
    rw_rail_retire_domain(rs, r->dom);
    free(r->remote);
    rw_rsess_unuse(rs, r->sess);
    struct rw_rail_service svc = {.dom = res->dom[i], .ep = res->ep[i],
                                  .remote = res->remote[i], .n_remote = res->n_remote,
                                  .peer = res->peer[i], .sess = sess,
                                  .queue_depth = h->cfg.queue_depth};
    res->dom[i] = NULL;
    res->ep[i] = NULL;
    res->remote[i] = NULL;
    rw_rail_in_service(rs, i, &svc, now);
    return 0;
}

static void install(railwire_railset *rs, int64_t now)
{
    struct rw_healer *h = rs->healer;
    struct rw_session_out res;
    char via[RW_HEAL_HOST_MAX];
    uint64_t junk;

    pthread_mutex_lock(&h->lock);
    res = h->res;
    int rc = h->res_rc;
    memcpy(via, h->res_via, sizeof(via));
    h->has_res = 0;
    memset(&h->res, 0, sizeof(h->res));
    h->res.fd = -1;
    atomic_store(&h->res_ready, 0);
    pthread_mutex_unlock(&h->lock);
    if (h->wake_fd >= 0 && read(h->wake_fd, &junk, sizeof(junk)) < 0 && errno != EAGAIN)
        rw_debug("heal: reading the wake eventfd failed: %s", strerror(errno));
    h->in_flight = 0;

    if (rc < 0) {
        grow_backoff(h);
        h->due_ms = 0;
        schedule(h, now);
        rw_warn("heal: attempt failed (%s: %s); next attempt in about %lld ms",
                railwire_error_class(rc), railwire_strerror(rc), (long long)(h->due_ms - now));
        return;
    }
    struct rw_rsess *sess = rw_rsess_add(rs, res.fd);
    res.fd = -1;
    unsigned healed = 0;
    if (sess) {
        for (unsigned i = 0; i < res.n_rails && i < rs->n_rails; i++) {
            if (!res.ep[i])
                continue;
            int was_up = rw_rail_is_up(&rs->rails[i]);
            rc = install_rail(rs, i, &res, sess, now);
            if (rc == 0) {
                healed++;
                if (was_up)
                    rw_info("heal: rail %u (%s) moved to session %u through %s (its session's "
                            "control connection had ended)", i, rs->rails[i].stats.name, sess->id,
                            via);
                else
                    rw_info("heal: rail %u (%s) is back in service: session %u through %s", i,
                            rs->rails[i].stats.name, sess->id, via);
            }
        }
        if (!sess->users)
            rw_rsess_unuse(rs, sess);
    }
    rw_session_close(rs->ops, &res);
    if (healed) {
        snprintf(h->via, sizeof(h->via), "%s", via);
        h->last_change_ms = now;
    } else {
        grow_backoff(h);
    }
    h->due_ms = 0;
    for (unsigned i = 0; i < rs->n_rails; i++)
        if (wanted(&rs->rails[i])) {
            schedule(h, now);
            break;
        }
}

void rw_heal_tick(railwire_railset *rs, int64_t now_ms)
{
    struct rw_healer *h = rs->healer;
    if (!h)
        return;
    if (atomic_load_explicit(&h->res_ready, memory_order_acquire))
        install(rs, now_ms);
    if (h->in_flight)
        return;
    if (h->refresh) {
        h->refresh = 0;
        for (unsigned i = 0; i < rs->n_rails; i++)
            if (wanted(&rs->rails[i])) {
                schedule(h, now_ms);
                break;
            }
    }
    if (!h->due_ms && rs->n_live < rs->n_rails)
        schedule(h, now_ms);
    if (!h->due_ms) {
        /* Everything is up: once it has stayed up for the damping window,
         * the next loss starts again from the shortest delay. */
        if (h->backoff_ms != h->cfg.backoff_min_ms &&
            now_ms - h->last_change_ms >= h->cfg.stable_ms)
            h->backoff_ms = h->cfg.backoff_min_ms;
        return;
    }
    if (now_ms >= h->due_ms)
        post_attempt(rs, now_ms);
}

void rw_heal_session_ended(railwire_railset *rs)
{
    if (rs->healer)
        rs->healer->refresh = 1;
}

int rw_heal_wait_fd(const railwire_railset *rs)
{
    return rs->healer ? rs->healer->wake_fd : -1;
}

int64_t rw_heal_deadline(const railwire_railset *rs)
{
    const struct rw_healer *h = rs->healer;
    if (!h || h->in_flight || !h->due_ms)
        return INT64_MAX;
    return h->due_ms;
}

void rw_heal_test_set_port(railwire_railset *rs, const char *port)
{
    if (rs->healer && !rs->healer->thread_started)
        snprintf(rs->healer->cfg.port, sizeof(rs->healer->cfg.port), "%s", port);
}

int rw_heal_test_busy(const railwire_railset *rs)
{
    return rs->healer && rs->healer->in_flight;
}
