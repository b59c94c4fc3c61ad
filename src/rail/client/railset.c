/* SPDX-License-Identifier: MIT */
/* The railset's life cycle, getters and statistics. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/busy_poll.h"
#include "common/log.h"
#include "common/struct_abi.h"
#include "common/time.h"
#include "rail/client/heal.h"
#include "rail/client/railset_internal.h"

void rs_lock_contended(railwire_railset *rs)
{
    /* Contended: let busy pollers see that someone waits for the lock. */
    atomic_fetch_add_explicit(&rs->lock_waiters, 1, memory_order_relaxed);
    pthread_mutex_lock(&rs->lock);
    atomic_fetch_sub_explicit(&rs->lock_waiters, 1, memory_order_relaxed);
}

void rs_wake(struct rw_waiter *w)
{
    if (w && !w->woken) {
        w->woken = 1;
        pthread_cond_signal(&w->cond);
    }
}

void rs_notify(railwire_railset *rs)
{
    /* One async waiter per async completion nobody has taken yet: the
     * waiters already woken count first, so a thread that delivered its
     * own completions wakes nobody for them. */
    size_t want = rs->n_async_done;
    for (struct rw_waiter *w = rs->wait_head; w && want; w = w->next) {
        if (w->handle)
            continue;
        if (!w->woken)
            rs_wake(w);
        want--;
    }
}

void rs_release_slow(railwire_railset *rs)
{
    rs_notify(rs);
    if (rs->poller && rs->kick_fd >= 0 &&
        (rs->poller_gen != rs->done_gen || rs->poller_rails_gen != rs->rails_gen)) {
        /* Another thread finished transfers while the poller sleeps (one of
         * them may be what the poller waits for), or put a rail in service
         * whose completions the poller's poll set does not watch yet. */
        uint64_t one = 1;
        rs->poller_gen = rs->done_gen;
        rs->poller_rails_gen = rs->rails_gen;
        if (write(rs->kick_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
            rw_debug("railset: cannot kick the poller: %s", strerror(errno));
    }
}

int rw_cond_init_monotonic(pthread_cond_t *c)
{
    pthread_condattr_t a;
    if (pthread_condattr_init(&a))
        return -1;
    int rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC) || pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
    return rc ? -1 : 0;
}

struct rw_rsess *rw_rsess_add(railwire_railset *rs, int fd)
{
    struct rw_rsess *s = calloc(1, sizeof(*s));
    if (!s) {
        rw_err("railset: out of memory for a session");
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    s->id = rs->next_sess_id++;
    s->fd = fd;
    s->had_ctrl = s->ctrl_up = fd >= 0;
    s->next = rs->sessions;
    rs->sessions = s;
    return s;
}

void rw_rsess_unuse(railwire_railset *rs, struct rw_rsess *s)
{
    if (!s)
        return;
    if (s->users)
        s->users--;
    if (s->users)
        return;
    for (struct rw_rsess **pp = &rs->sessions; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    if (s->fd >= 0) {
        rw_debug("railset: session %u has no rail left; closing its control connection", s->id);
        close(s->fd);
    }
    free(s);
}

void rw_rsess_check(railwire_railset *rs)
{
    for (struct rw_rsess *s = rs->sessions; s; s = s->next) {
        if (!s->ctrl_up)
            continue;
        char junk[256];
        ssize_t n = recv(s->fd, junk, sizeof(junk), MSG_DONTWAIT);
        if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)))
            continue; /* still open (bytes after the ack are not part of the conversation) */
        const char *why = n == 0 ? "the server closed it" : strerror(errno);
        close(s->fd);
        s->fd = -1;
        s->ctrl_up = 0;
        unsigned k = 0;
        for (unsigned i = 0; i < rs->n_rails; i++)
            if (rs->rails[i].sess == s) {
                rs->rails[i].stats.control_up = 0;
                k++;
            }
        rw_warn("railset: the control connection of session %u ended (%s); its %u rail(s) keep "
                "working%s", s->id, why, k,
                rs->healer ? " and are moved to a new session as soon as one opens" : "");
        rw_heal_session_ended(rs);
    }
}

unsigned rw_rail_depth(unsigned queue_depth, const struct rw_domain *dom)
{
    unsigned d = queue_depth ? queue_depth : RW_DEFAULT_QUEUE_DEPTH;
    if (dom->max_qp_wr && d > dom->max_qp_wr)
        d = dom->max_qp_wr;
    return d ? d : 1;
}

/* Frees the railset's own allocations (the lock, the kick eventfd, the
 * transfer pool, the per-rail arrays) and the railset itself. */
static void free_shell(railwire_railset *rs)
{
    pthread_mutex_destroy(&rs->lock);
    if (rs->kick_fd >= 0)
        close(rs->kick_fd);
    while (rs->xfer_pool) {
        struct rw_xfer *px = rs->xfer_pool;
        rs->xfer_pool = px->next;
        free(px);
    }
    free(rs->layer_max_base);
    free(rs->rails);
    free(rs->post_wrs);
    free(rs->post_cnt);
    free(rs->busy);
    free(rs->graveyard);
    free(rs);
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

int rw_railset_create_local(const struct rw_transport_ops *ops, const railwire_railset_opts *o,
                            const struct rw_rail_init *rails, unsigned n, railwire_railset **out)
{
    unsigned max = o && o->dialect == RAILWIRE_DIALECT_RO ? RAILWIRE_MAX_RO_RAILS
                                                           : RAILWIRE_MAX_RAILS;
    if (!ops || !o || !rails || !out || n == 0 || n > max) {
        rw_err("railset: invalid arguments (rail count %u, must be 1..%u)", n, max);
        return RAILWIRE_E_INVALID;
    }
    unsigned n_remote = rails[0].n_remote;
    for (unsigned i = 0; i < n; i++) {
        if (!rails[i].dom || !rails[i].ep || !rails[i].remote || rails[i].n_remote == 0) {
            rw_err("railset: rail %u is incomplete", i);
            return RAILWIRE_E_INVALID;
        }
        if (rails[i].n_remote != n_remote) {
            rw_err("railset: rail %u has %u remote regions but rail 0 has %u; the server must "
                   "publish the same layers on every rail", i, rails[i].n_remote, n_remote);
            return RAILWIRE_E_PROTOCOL;
        }
    }
    if (o->dialect == RAILWIRE_DIALECT_RW && n_remote != 1) {
        rw_err("railset: RW dialect needs exactly one arena per rail, got %u", n_remote);
        return RAILWIRE_E_INVALID;
    }

    railwire_railset *rs = calloc(1, sizeof(*rs));
    if (!rs)
        goto nomem;
    /* Slices one rail takes per scheduling round: enough to batch posts,
     * few enough that many rails share a round. */
    rs->post_batch = n <= 16 ? RW_POST_BATCH_MAX : n <= 64 ? 8 : 4;
    rs->rails = calloc(n, sizeof(*rs->rails));
    rs->post_wrs = calloc((size_t)n * rs->post_batch, sizeof(*rs->post_wrs));
    rs->post_cnt = calloc(n, sizeof(*rs->post_cnt));
    rs->busy = calloc(n, sizeof(*rs->busy));
    rs->graveyard = calloc((size_t)n * 4, sizeof(*rs->graveyard));
    rs->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!rs->rails || !rs->post_wrs || !rs->post_cnt || !rs->graveyard || !rs->busy ||
        pthread_mutex_init(&rs->lock, NULL)) {
        if (rs->kick_fd >= 0)
            close(rs->kick_fd);
        free(rs->rails);
        free(rs->post_wrs);
        free(rs->post_cnt);
        free(rs->busy);
        free(rs->graveyard);
        free(rs);
        goto nomem;
    }
    rs->ops = ops;
    rs->reg_multi = ops->mr_reg_multi;
    rs->dialect = o->dialect;
    rs->n_rails = n;
    rs->n_live = n;
    rs->n_layers = n_remote;
    rs->op_timeout_ms = o->op_timeout_ms > 0 ? o->op_timeout_ms : RW_DEFAULT_OP_TIMEOUT_MS;
    rs->all_down_timeout_ms = o->all_down_timeout_ms > 0 ? o->all_down_timeout_ms
                                                         : rs->op_timeout_ms;
    rs->busy_poll_ns = rw_busy_poll_ns(o->busy_poll_us);
    rs->spin_idle_gen = UINT64_MAX;
    rs->max_tries = o->max_slice_tries; /* rw_heal_enable sets the healing default */
    rs->next_handle = 1;
    size_t slice = o->slice_size ? o->slice_size : RW_DEFAULT_SLICE_SIZE;
    for (unsigned i = 0; i < n; i++) {
        struct rw_rail *r = &rs->rails[i];
        r->remote = calloc(n_remote, sizeof(*r->remote));
        if (!r->remote)
            goto nomem_rs;
        memcpy(r->remote, rails[i].remote, n_remote * sizeof(*r->remote));
        r->n_remote = n_remote;
    }
    for (unsigned i = 0; i < n; i++) {
        struct rw_rail *r = &rs->rails[i];
        r->index = i;
        r->busy_pos = -1;
        r->dom = rails[i].dom;
        r->ep = rails[i].ep;
        r->depth = rw_rail_depth(o->queue_depth, r->dom);
        if (r->dom->max_msg && slice > r->dom->max_msg)
            slice = r->dom->max_msg;
        r->stats.index = i;
        r->stats.state = RAILWIRE_RAIL_UP;
        r->stats.gbps = r->dom->gbps > 0 ? r->dom->gbps : 1.0;
        r->inv_gbps = 1.0 / r->stats.gbps;
        snprintf(r->stats.name, sizeof(r->stats.name), "%s", r->dom->name);
    }
    if (slice > UINT32_MAX)
        slice = UINT32_MAX;
    rs->slice_size = slice;
    rs->layer_max_base = calloc(n_remote, sizeof(*rs->layer_max_base));
    if (!rs->layer_max_base)
        goto nomem_rs;
    rw_railset_update_bases(rs);
    rs->min_inv_gbps = rs->rails[0].inv_gbps;
    for (unsigned i = 1; i < n; i++)
        if (rs->rails[i].inv_gbps < rs->min_inv_gbps)
            rs->min_inv_gbps = rs->rails[i].inv_gbps;
    struct rw_rsess *s0 = rw_rsess_add(rs, -1);
    if (!s0)
        goto nomem_rs;
    int64_t now = rw_now_ms();
    for (unsigned i = 0; i < n; i++) {
        rs->rails[i].sess = s0;
        rs->rails[i].up_since_ms = now;
        rs->rails[i].peer = rails[i].peer;
    }
    s0->users = n;
    *out = rs;
    return 0;

nomem_rs:
    for (unsigned i = 0; i < n; i++)
        free(rs->rails[i].remote);
    free_shell(rs);
nomem:
    rw_err("railset: out of memory");
    return RAILWIRE_E_NOMEM;
}

void railwire_railset_close(railwire_railset *rs)
{
    if (!rs)
        return;
    /* The heal thread finishes an attempt in progress on its own. */
    rw_heal_disable(rs);
    /* Kill first so no outstanding operation touches a buffer after close. */
    for (unsigned i = 0; i < rs->n_rails; i++)
        if (rs->rails[i].ep && rs->rails[i].stats.state == RAILWIRE_RAIL_UP)
            rs->ops->ep_kill(rs->rails[i].ep);
    struct rw_xfer *x = rs->active_head;
    while (x) {
        struct rw_xfer *nx = x->next;
        rw_xfer_free(rs, x);
        x = nx;
    }
    x = rs->done_head;
    while (x) {
        struct rw_xfer *nx = x->next;
        rw_xfer_free(rs, x);
        x = nx;
    }
    for (unsigned i = 0; i < rs->n_rails; i++)
        if (rs->rails[i].ep)
            rs->ops->ep_destroy(rs->rails[i].ep);
    while (rs->mrs)
        rw_mr_release(rs->mrs);
    for (unsigned i = 0; i < rs->n_rails; i++) {
        if (rs->rails[i].dom)
            rs->ops->domain_close(rs->rails[i].dom);
        free(rs->rails[i].remote);
    }
    while (rs->sessions) {
        struct rw_rsess *sn = rs->sessions;
        rs->sessions = sn->next;
        if (sn->fd >= 0)
            close(sn->fd);
        free(sn);
    }
    free_shell(rs);
}

unsigned railwire_railset_rail_count(const railwire_railset *rs)
{
    return rs ? rs->n_rails : 0;
}

unsigned railwire_railset_layer_count(const railwire_railset *rs)
{
    return rs ? rs->n_layers : 0;
}

const char *railwire_railset_transport(const railwire_railset *rs)
{
    return rs && rs->ops ? rs->ops->name : "none";
}

int railwire_railset_stats(const railwire_railset *rs, railwire_rail_stats *out, unsigned max,
                           size_t elem_size)
{
    if (!rs || (!out && max) || elem_size < RAILWIRE_RAIL_STATS_MIN_SIZE) {
        rw_err("railset_stats: NULL railset or out, or element size %zu below %u: pass "
               "sizeof *out", elem_size, RAILWIRE_RAIL_STATS_MIN_SIZE);
        return RAILWIRE_E_INVALID;
    }
    railwire_railset *w = (railwire_railset *)(uintptr_t)rs; /* the lock is not part of the value */
    rs_lock(w);
    for (unsigned i = 0; i < rs->n_rails && i < max; i++)
        rw_struct_out((char *)out + (size_t)i * elem_size, elem_size, &rs->rails[i].stats,
                      sizeof(rs->rails[i].stats));
    rs_unlock(w);
    return (int)rs->n_rails;
}
