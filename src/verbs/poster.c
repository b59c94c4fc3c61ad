/* SPDX-License-Identifier: MIT */
/* Poster-thread mode.  Software RDMA providers (rdma_rxe, siw) do their
 * protocol work (packet building, software ICRC, copies) inside the
 * ibv_post_send doorbell, in the posting thread.  A railset drives all its
 * rails from one thread, so on those providers its rails would share one
 * CPU.  Here client eps hand their WRs to a pool of poster threads shared by
 * every ep of the process, so the rails' protocol work runs on several CPUs.
 *
 * The pool grows to one thread per poster-mode ep up to a cap, the CPUs the
 * process may run on (RAILWIRE_VERBS_POST_THREADS overrides it), as the tcp
 * client's event loops do: more threads than CPUs would only take turns.
 * Past the cap a new ep joins the thread serving the fewest eps.  A thread
 * serves its eps in turn, posting what one ep has queued (at most its ring)
 * before moving to the next, so a busy ep delays the others on its thread by
 * at most one ring's posting.  A thread stops when its last ep leaves.
 *
 * Hardware NICs take a doorbell write and do not use this mode (an extra
 * thread hop would only add latency); RAILWIRE_VERBS_POST_THREAD=0|1
 * overrides the choice.  Even on software providers the hop costs more than
 * it gains while only one rail posts, so an ep posts inline unless two or
 * more poster-mode eps exist (or its thread still has WRs of it queued, to
 * keep the posting order). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpus.h"
#include "common/log.h"
#include "verbs/status.h"
#include "verbs/verbs_int.h"

/* One poster thread and the eps it serves. */
struct rw_vposter {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;         /* work queued, an ep leaving, or stop */
    pthread_cond_t idle_cv;    /* the thread finished a pass (an ep may leave) */
    struct rw_vep *eps;        /* guarded by mu: list through ve->pnext */
    unsigned n_eps;            /* guarded by pool_lock */
    int stop;                  /* guarded by mu */
    struct rw_vep *resume;     /* guarded by mu: the ep to serve next (round robin) */
    struct rw_vposter *next;   /* guarded by pool_lock: the pool's list */
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rw_vposter *pool;  /* guarded by pool_lock */
static unsigned pool_threads;    /* guarded by pool_lock */

/* Client eps in poster-thread mode in this process.  With one, posting
 * inline is faster (no thread hop); with two or more they post in parallel. */
static _Atomic int n_posters;

int rw_vposter_wanted(const struct rw_vep *ve)
{
    return ve->poster_on &&
           (atomic_load(&n_posters) >= 2 || atomic_load(&ve->sent_seq) != ve->next_seq);
}

void rw_vposter_posted_inline(struct rw_vep *ve)
{
    /* Only called while nothing of ve is queued (sent_seq == the old next_seq). */
    atomic_store(&ve->sent_seq, ve->next_seq);
    pthread_mutex_lock(&ve->pt->mu);
    ve->queued_seq = ve->next_seq;
    pthread_mutex_unlock(&ve->pt->mu);
}

/* Posts ve's WRs in [sent, end) as chains of consecutive ring slots.  On a
 * failed ibv_post_send records the error (the owner sees post_err and fails
 * the ep) and returns -1. */
static int post_range(struct rw_vep *ve, uint64_t sent, uint64_t end)
{
    while (sent < end) {
        /* One chain of consecutive ring slots (no wrap-around). */
        uint64_t first = sent % ve->depth;
        uint64_t k = end - sent;
        if (k > ve->depth - first)
            k = ve->depth - first;
        for (uint64_t i = 0; i < k; i++)
            ve->ring[first + i].wr.next = i + 1 < k ? &ve->ring[first + i + 1].wr : NULL;
        struct ibv_send_wr *bad = NULL;
        int rc = ibv_post_send(ve->qp, &ve->ring[first].wr, &bad);
        if (rc) {
            int en = rw_verbs_errno(rc, errno);
            uint64_t ok = 0;
            if (bad && bad >= &ve->ring[first].wr && bad < &ve->ring[first].wr + k)
                ok = (uint64_t)(bad - &ve->ring[first].wr);
            atomic_store(&ve->sent_seq, sent + ok);
            atomic_store(&ve->post_err, en ? en : EIO);
            return -1;
        }
        sent += k;
        atomic_store(&ve->sent_seq, sent);
    }
    return 0;
}

/* The first ep of pt's list, from `from` on (wrapping), with WRs to post;
 * NULL if none.  Called with pt->mu held. */
static struct rw_vep *next_with_work(struct rw_vposter *pt, struct rw_vep *from)
{
    struct rw_vep *ve = from ? from : pt->eps;
    for (int pass = 0; pass < 2; pass++, ve = pt->eps) {
        for (; ve; ve = ve->pnext)
            if (!ve->post_failed && !ve->leaving && ve->queued_seq != atomic_load(&ve->sent_seq))
                return ve;
        if (!from)
            break;
    }
    return NULL;
}

static void *poster_main(void *arg)
{
    struct rw_vposter *pt = arg;

    pthread_mutex_lock(&pt->mu);
    for (;;) {
        struct rw_vep *ve;
        while (!pt->stop && !(ve = next_with_work(pt, pt->resume)))
            pthread_cond_wait(&pt->cv, &pt->mu);
        if (pt->stop)
            break;
        uint64_t sent = atomic_load(&ve->sent_seq), end = ve->queued_seq;
        ve->posting = 1;
        pthread_mutex_unlock(&pt->mu);
        int failed = post_range(ve, sent, end) != 0;
        pthread_mutex_lock(&pt->mu);
        ve->posting = 0;
        if (failed)
            ve->post_failed = 1;
        pt->resume = ve->pnext;
        pthread_cond_broadcast(&pt->idle_cv);
    }
    pthread_mutex_unlock(&pt->mu);
    return NULL;
}

/* The most poster threads: RAILWIRE_VERBS_POST_THREADS (checked at domain
 * open), else the CPUs the process may run on, as for the tcp client's
 * loops. */
static unsigned threads_cap(const struct rw_vep *ve)
{
    return ve->dom->post_threads ? ve->dom->post_threads : rw_cpus_usable();
}

static void poster_free(struct rw_vposter *pt)
{
    pthread_cond_destroy(&pt->idle_cv);
    pthread_cond_destroy(&pt->cv);
    pthread_mutex_destroy(&pt->mu);
    free(pt);
}

/* A new poster thread, linked into the pool; NULL on failure (logged).
 * Called with pool_lock held. */
static struct rw_vposter *poster_new(const struct rw_vep *ve)
{
    struct rw_vposter *pt = calloc(1, sizeof(*pt));
    int e;

    if (!pt) {
        rw_err("verbs: %s: out of memory for a poster thread", ve->dom->base.name);
        return NULL;
    }
    pthread_mutex_init(&pt->mu, NULL);
    pthread_cond_init(&pt->cv, NULL);
    pthread_cond_init(&pt->idle_cv, NULL);
    e = pthread_create(&pt->thread, NULL, poster_main, pt);
    if (e) {
        rw_err("verbs: %s: cannot start a poster thread (errno %d)", ve->dom->base.name, e);
        poster_free(pt);
        return NULL;
    }
    pt->next = pool;
    pool = pt;
    pool_threads++;
    return pt;
}

int rw_vposter_start(struct rw_vep *ve)
{
    struct rw_vposter *pt = NULL;

    pthread_mutex_lock(&pool_lock);
    for (struct rw_vposter *p = pool; p; p = p->next)
        if (!pt || p->n_eps < pt->n_eps)
            pt = p;
    if (!pt || (pt->n_eps > 0 && pool_threads < threads_cap(ve))) {
        struct rw_vposter *fresh = poster_new(ve);
        if (!fresh && !pt) {
            pthread_mutex_unlock(&pool_lock);
            return RAILWIRE_E_SYSTEM;
        }
        if (fresh)
            pt = fresh;
    }
    pt->n_eps++;
    ve->pt = pt;
    ve->queued_seq = ve->next_seq;
    ve->posting = ve->leaving = ve->post_failed = 0;
    atomic_store(&ve->sent_seq, ve->next_seq);
    atomic_store(&ve->post_err, 0);
    pthread_mutex_lock(&pt->mu);
    ve->pnext = pt->eps;
    pt->eps = ve;
    pthread_mutex_unlock(&pt->mu);
    pthread_mutex_unlock(&pool_lock);
    ve->poster_on = 1;
    atomic_fetch_add(&n_posters, 1);
    return 0;
}

void rw_vposter_kick(struct rw_vep *ve, uint64_t queued)
{
    struct rw_vposter *pt = ve->pt;

    pthread_mutex_lock(&pt->mu);
    ve->queued_seq = queued;
    pthread_cond_signal(&pt->cv);
    pthread_mutex_unlock(&pt->mu);
}

void rw_vposter_stop(struct rw_vep *ve)
{
    struct rw_vposter *pt = ve->pt;
    int last;

    if (!ve->poster_on)
        return;
    pthread_mutex_lock(&pool_lock);
    pthread_mutex_lock(&pt->mu);
    ve->leaving = 1; /* the thread picks no new chain of ve ... */
    while (ve->posting) /* ... and finishes the one it is posting */
        pthread_cond_wait(&pt->idle_cv, &pt->mu);
    for (struct rw_vep **pp = &pt->eps; *pp; pp = &(*pp)->pnext)
        if (*pp == ve) {
            *pp = ve->pnext;
            break;
        }
    if (pt->resume == ve)
        pt->resume = ve->pnext;
    last = --pt->n_eps == 0;
    if (last) {
        pt->stop = 1;
        pthread_cond_signal(&pt->cv);
    }
    pthread_mutex_unlock(&pt->mu);
    if (last) {
        for (struct rw_vposter **pp = &pool; *pp; pp = &(*pp)->next)
            if (*pp == pt) {
                *pp = pt->next;
                break;
            }
        pool_threads--;
    }
    pthread_mutex_unlock(&pool_lock);
    if (last) {
        pthread_join(pt->thread, NULL);
        poster_free(pt);
    }
    atomic_fetch_sub(&n_posters, 1);
    ve->pt = NULL;
    ve->pnext = NULL;
    ve->poster_on = 0;
}

unsigned rw_vposter_threads(void)
{
    unsigned n;

    pthread_mutex_lock(&pool_lock);
    n = pool_threads;
    pthread_mutex_unlock(&pool_lock);
    return n;
}
