/* SPDX-License-Identifier: MIT */
/* Healing, the railset side (see heal.h): scheduling, backoff and damping,
 * installing a healed rail through the rail state machine.  The worker
 * thread that opens new sessions is heal_worker.c. */
#include "rail/client/heal_worker.h"

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

/* ---- the railset side -------------------------------------------------- */

int rw_heal_enable(railwire_railset *rs, const char *host, const struct rw_heal_cfg *cfg,
                   rw_heal_open_fn open, void *ctx, void (*ctx_release)(void *ctx))
{
    struct rw_healer *h = calloc(1, sizeof(*h));
    if (!h) {
        rw_heal_free_strings(cfg->local_addr, cfg->n_rails);
        rw_heal_free_strings(cfg->device, cfg->n_rails);
        if (ctx_release)
            ctx_release(ctx);
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
    h->open_ctx_release = ctx_release;
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
        rw_healer_free(h); /* frees a pending result too */
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
    int e = pthread_create(&t, NULL, rw_heal_worker_main, h);
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
        rc = rw_mr_reg_dom(rs, dom, m, &m->staged);
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
