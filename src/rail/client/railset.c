/* SPDX-License-Identifier: MIT */
/* The railset's life cycle, getters and statistics. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/busy_poll.h"
#include "common/cpus.h"
#include "common/log.h"
#include "common/struct_abi.h"
#include "gpu/staging.h"
#include "common/time.h"
#include "rail/client/heal.h"
#include "rail/client/rail_state.h"
#include "rail/client/xfer.h"

/* Frees the railset's own allocations (the lock, the kick eventfd, the
 * transfer pool, the per-rail arrays) and the railset itself. */
static void free_shell(railwire_railset *rs)
{
    pthread_mutex_destroy(&rs->lock);
    if (rs->kick_fd >= 0)
        close(rs->kick_fd);
    while (rs->xfer_pool) {
        struct rw_xfer *px = rw_xfer_of(rs->xfer_pool);
        rs->xfer_pool = px->link.next;
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

/* Allocates a railset for n rails with its per-rail arrays, its lock and
 * its kick eventfd (-1 if none could be made).  Returns it (everything
 * else zero), or NULL when out of memory. */
static railwire_railset *alloc_shell(unsigned n, unsigned n_remote)
{
    railwire_railset *rs = calloc(1, sizeof(*rs));
    if (!rs)
        return NULL;
    /* Slices one rail takes per scheduling round: enough to batch posts,
     * few enough that many rails share a round. */
    rs->post_batch = n <= 16 ? RW_POST_BATCH_MAX : n <= 64 ? 8 : 4;
    rs->rails = calloc(n, sizeof(*rs->rails));
    rs->post_wrs = calloc((size_t)n * rs->post_batch, sizeof(*rs->post_wrs));
    rs->post_cnt = calloc(n, sizeof(*rs->post_cnt));
    rs->busy = calloc(n, sizeof(*rs->busy));
    rs->graveyard = calloc((size_t)n * 4, sizeof(*rs->graveyard));
    rs->layer_max_base = calloc(n_remote, sizeof(*rs->layer_max_base));
    rs->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (rs->rails && rs->post_wrs && rs->post_cnt && rs->graveyard && rs->busy &&
        rs->layer_max_base && pthread_mutex_init(&rs->lock, NULL) == 0)
        return rs;
    if (rs->kick_fd >= 0)
        close(rs->kick_fd);
    free(rs->rails);
    free(rs->post_wrs);
    free(rs->post_cnt);
    free(rs->busy);
    free(rs->graveyard);
    free(rs->layer_max_base);
    free(rs);
    return NULL;
}

/* Copies of the rails' remote regions, one array per rail (each passes to
 * its rail when put in service; the outer array is the caller's to free).
 * Returns NULL when out of memory, with nothing left allocated. */
static struct rw_mr_desc **copy_remotes(const struct rw_rail_init *rails, unsigned n,
                                        unsigned n_remote)
{
    struct rw_mr_desc **remote = calloc(n, sizeof(*remote));
    for (unsigned i = 0; remote && i < n; i++) {
        remote[i] = calloc(n_remote, sizeof(**remote));
        if (!remote[i]) {
            while (i-- > 0)
                free(remote[i]);
            free(remote);
            return NULL;
        }
        memcpy(remote[i], rails[i].remote, n_remote * sizeof(**remote));
    }
    return remote;
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

    railwire_railset *rs = alloc_shell(n, n_remote);
    if (!rs)
        goto nomem;
    rs->ops = ops;
    rs->reg_multi = ops->mr_reg_multi;
    rs->dialect = o->dialect;
    rs->n_rails = n;
    rs->pack_max_len =
        rw_stripe_packs(n, ops->rails_share_cores ? rw_cpus_usable() : UINT_MAX) ? RW_PACK_MAX_LEN : 0;
    rs->n_layers = n_remote;
    rs->op_timeout_ms = o->op_timeout_ms > 0 ? o->op_timeout_ms : RW_DEFAULT_OP_TIMEOUT_MS;
    rs->all_down_timeout_ms = o->all_down_timeout_ms > 0 ? o->all_down_timeout_ms
                                                         : rs->op_timeout_ms;
    rs->busy_poll_ns = rw_busy_poll_ns(o->busy_poll_us);
    rs->spin_idle_gen = UINT64_MAX;
    rs->max_tries = o->max_slice_tries; /* rw_heal_enable sets the healing default */
    rs->next_handle = 1;
    rs->staging_bytes = o->staging_bytes;
    size_t slice = o->slice_size ? o->slice_size : RW_DEFAULT_SLICE_SIZE;
    rs->slice_size = slice > UINT32_MAX ? UINT32_MAX : slice;
    struct rw_rsess *s0 = rw_rsess_add(rs, -1);
    struct rw_mr_desc **remote = s0 ? copy_remotes(rails, n, n_remote) : NULL;
    if (!remote)
        goto nomem_rs;
    int64_t now = rw_now_ms();
    for (unsigned i = 0; i < n; i++) {
        struct rw_rail *r = &rs->rails[i];
        r->index = i;
        r->busy_pos = -1;
        struct rw_rail_service svc = {.dom = rails[i].dom, .ep = rails[i].ep,
                                      .remote = remote[i], .n_remote = n_remote,
                                      .peer = rails[i].peer, .sess = s0,
                                      .queue_depth = o->queue_depth};
        rw_rail_in_service(rs, i, &svc, now);
    }
    free(remote);
    *out = rs;
    return 0;

nomem_rs:
    free(rs->sessions); /* s0 alone, if it was made; no rail took its remote yet */
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
    if (rs->net_ctx_free)
        rs->net_ctx_free(rs->net_ctx);
    rs->net_ctx = NULL;
    rs->net_ctx_free = NULL;
    /* Kill first so no outstanding operation touches a buffer after close. */
    for (unsigned i = 0; i < rs->n_rails; i++)
        if (rs->rails[i].ep && rw_rail_is_up(&rs->rails[i]))
            rs->ops->ep_kill(rs->rails[i].ep);
    unsigned lost; /* down, but not reacted to yet: their eps still live */
    while (rw_rail_next_lost(rs, &lost))
        rs->ops->ep_kill(rs->rails[lost].ep);
    struct rw_list *lists[2] = {&rs->active, &rs->done};
    for (int k = 0; k < 2; k++)
        while (lists[k]->head) {
            struct rw_xfer *x = rw_xfer_of(lists[k]->head);
            rw_list_remove(lists[k], &x->link);
            rw_xfer_free(rs, x);
        }
    for (unsigned i = 0; i < rs->n_rails; i++)
        if (rs->rails[i].ep)
            rs->ops->ep_destroy(rs->rails[i].ep);
    rw_rsfd_free(rs); /* the railset fd (railset_fd.c) */
    while (rs->mrs.head)
        rw_mr_release(rw_list_entry(rs->mrs.head, struct railwire_mr, link));
    rw_stage_pool_destroy(rs->stage_pool);
    rs->stage_pool = NULL;
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
    for (unsigned i = 0; i < rs->n_rails && i < max; i++) {
        railwire_rail_stats st = rs->rails[i].stats;
        st.state = rw_rail_public_state(&rs->rails[i]);
        rw_struct_out((char *)out + (size_t)i * elem_size, elem_size, &st, sizeof(st));
    }
    rs_unlock(w);
    return (int)rs->n_rails;
}
