/* SPDX-License-Identifier: MIT */
/* The process-wide pool of client event loops (see tcp_cli_loop.h):
 * min(cores, rails) loops shared by every railset, started as rails attach
 * and stopped when the last one detaches, and what a fork() does to them
 * (the child has none of the loop threads).  One loop is tcp_cli_loop.c. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "common/cpus.h"
#include "common/log.h"
#include "tcp/tcp_cli_io.h"
#include "tcp/tcp_cli_loop.h"
#include "tcp/tcp_cli_loop_int.h"

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
/* pool[k] serves the eps whose place is k mod max_loops(); NULL until one
 * attaches, so the loops running are min(cores, eps attached) at most. */
static struct rw_tcp_cli_loop *pool[RW_TCP_CLI_LOOPS_MAX];
static unsigned pool_n;                /* loops running (non-NULL entries) */
static _Atomic unsigned next_place;    /* rw_tcp_cli_pool_place */
static unsigned pool_eps;              /* eps attached to them */
static _Atomic unsigned pool_eps_seen; /* pool_eps, for rw_tcp_cli_pool_eps */
static unsigned pool_want;             /* rw_tcp_cli_pool_configure; 0 = cores */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* With pool_lock held: stops and joins every loop of the pool (they have no
 * ep left). */
static void stop_all(void)
{
    for (unsigned i = 0; i < RW_TCP_CLI_LOOPS_MAX; i++) {
        struct rw_tcp_cli_loop *l = pool[i];
        if (!l)
            continue;
        pthread_mutex_lock(&l->lock);
        l->stop = 1;
        pthread_mutex_unlock(&l->lock);
        rw_tcp_cli_loop_wake(l);
        pthread_join(l->thread, NULL);
        rw_tcp_cli_loop_free(l);
        pool[i] = NULL;
    }
    if (pool_n)
        rw_debug("tcp: stopped %u client event loop thread(s)", pool_n);
    pool_n = 0;
}

/* --- fork: the child has none of the loop threads --- */

static void fork_prepare(void)
{
    pthread_mutex_lock(&pool_lock);
    for (unsigned i = 0; i < RW_TCP_CLI_LOOPS_MAX; i++) {
        if (!pool[i])
            continue;
        pthread_mutex_lock(&pool[i]->run);
        pthread_mutex_lock(&pool[i]->lock);
    }
}

static void fork_parent(void)
{
    for (unsigned i = RW_TCP_CLI_LOOPS_MAX; i-- > 0;) {
        if (!pool[i])
            continue;
        pthread_mutex_unlock(&pool[i]->lock);
        pthread_mutex_unlock(&pool[i]->run);
    }
    pthread_mutex_unlock(&pool_lock);
}

/* In the child: every inherited ep is dead and orphaned (its connection
 * belongs to the parent; nothing may be sent on it, nor shut down), and the
 * pool forgets the loops (their epoll sets are shared with the parent). */
static void orphan_ep(struct rw_tcp_cli_ep *ep)
{
    ep->link.orphan = 1;
    ep->abort_due = 0; /* the parent's connection: never aborted from here */
    if (ep->state == RW_TCP_CLI_UP) {
        ep->state = RW_TCP_CLI_DEAD;
        ep->err = RAILWIRE_E_RAIL_DOWN;
    }
}

static void fork_child(void)
{
    for (unsigned i = 0; i < RW_TCP_CLI_LOOPS_MAX; i++) {
        struct rw_tcp_cli_loop *l = pool[i];
        struct rw_tcp_cli_ep *ep;
        if (!l)
            continue;
        for (unsigned k = 0; k < l->set.n; k++)
            orphan_ep(rw_tcp_cli_ep_of(l->set.tab[k]));
        for (ep = l->adds; ep; ep = ep->link.add_next)
            orphan_ep(ep);
        l->adds = l->kicks = l->kills = NULL;
        l->orphan = 1;
        pthread_mutex_unlock(&l->lock);
        pthread_mutex_unlock(&l->run);
        if (!l->n_eps)
            rw_tcp_cli_loop_free(l);
        pool[i] = NULL;
    }
    pool_n = 0;
    pool_eps = 0;
    atomic_store_explicit(&pool_eps_seen, 0, memory_order_relaxed);
    pthread_mutex_unlock(&pool_lock);
}

static void fork_setup(void)
{
    if (pthread_atfork(fork_prepare, fork_parent, fork_child))
        rw_warn("tcp: cannot register the client loops' fork handlers; a fork()ed child must not "
                "close railsets it inherited");
}

/* --- the pool --- */

static unsigned max_loops(void)
{
    unsigned want = pool_want, n = rw_cpus_usable();

    if (n > RW_TCP_CLI_LOOPS_MAX)
        n = RW_TCP_CLI_LOOPS_MAX;
    return want && want < n ? want : n;
}

unsigned rw_tcp_cli_pool_place(void)
{
    return atomic_fetch_add_explicit(&next_place, 1, memory_order_relaxed);
}

void rw_tcp_cli_pool_configure(unsigned n)
{
    pthread_mutex_lock(&pool_lock);
    pool_want = n > RW_TCP_CLI_LOOPS_MAX ? RW_TCP_CLI_LOOPS_MAX : n;
    pthread_mutex_unlock(&pool_lock);
}

unsigned rw_tcp_cli_pool_eps(void)
{
    return atomic_load_explicit(&pool_eps_seen, memory_order_relaxed);
}

unsigned rw_tcp_cli_pool_threads(void)
{
    unsigned n;
    pthread_mutex_lock(&pool_lock);
    n = pool_n;
    pthread_mutex_unlock(&pool_lock);
    return n;
}

pthread_t rw_tcp_cli_loop_thread(const struct rw_tcp_cli_ep *ep)
{
    return ep->link.loop->thread;
}

int rw_tcp_cli_loop_attach(struct rw_tcp_cli_ep *ep)
{
    struct rw_tcp_cli_loop *l = NULL;

    pthread_once(&fork_once, fork_setup);
    pthread_mutex_lock(&pool_lock);
    unsigned k = ep->link.place % max_loops();
    if (!pool[k]) {
        pool[k] = rw_tcp_cli_loop_start(k);
        if (pool[k])
            pool_n++;
    }
    l = pool[k];
    if (!l) {
        /* no thread for it: the least loaded loop running */
        for (unsigned i = 0; i < RW_TCP_CLI_LOOPS_MAX; i++)
            if (pool[i] && (!l || pool[i]->n_eps < l->n_eps))
                l = pool[i];
    }
    if (!l) {
        pthread_mutex_unlock(&pool_lock);
        return RAILWIRE_E_SYSTEM;
    }
    l->n_eps++;
    pool_eps++;
    atomic_store_explicit(&pool_eps_seen, pool_eps, memory_order_relaxed);
    ep->link.loop = l;
    rw_evloop_member_init(&ep->link.member);
    pthread_mutex_lock(&l->lock);
    ep->link.add_next = l->adds;
    l->adds = ep;
    pthread_mutex_unlock(&l->lock);
    pthread_mutex_unlock(&pool_lock);
    rw_tcp_cli_loop_wake(l);
    return 0;
}

void rw_tcp_cli_loop_detach(struct rw_tcp_cli_ep *ep)
{
    struct rw_tcp_cli_loop *l = ep->link.loop;

    if (!l)
        return;
    ep->link.loop = NULL;
    pthread_mutex_lock(&pool_lock);
    if (ep->link.orphan) {
        if (--l->n_eps == 0)
            rw_tcp_cli_loop_free(l);
    } else {
        l->n_eps--;
        --pool_eps;
        atomic_store_explicit(&pool_eps_seen, pool_eps, memory_order_relaxed);
        if (pool_eps == 0)
            stop_all();
    }
    pthread_mutex_unlock(&pool_lock);
}
