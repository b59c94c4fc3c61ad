/* SPDX-License-Identifier: MIT */
/* Poster-thread mode.  Software RDMA providers (rdma_rxe, siw) do their
 * protocol work (packet building, software ICRC, copies) inside the
 * ibv_post_send doorbell, in the posting thread.  A railset drives all its
 * rails from one thread, so on those providers its rails would share one
 * CPU.  Here each ep gets a thread that makes the ibv_post_send calls, so
 * each rail's protocol work runs on its own CPU.  Hardware NICs take a
 * doorbell write and do not use this mode (an extra thread hop would only add
 * latency); RAILWIRE_VERBS_POST_THREAD=0|1 overrides the choice.  Even on
 * software providers the hop costs more than it gains while only one rail
 * posts, so an ep posts inline unless two or more poster-mode eps exist (or
 * its thread still has WRs queued, to keep the posting order). */
#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "verbs/status.h"
#include "verbs/verbs_int.h"

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
    /* Only called while the thread is idle (sent_seq == the old next_seq). */
    atomic_store(&ve->sent_seq, ve->next_seq);
    pthread_mutex_lock(&ve->mu);
    ve->queued_seq = ve->next_seq;
    pthread_mutex_unlock(&ve->mu);
}

static void *poster_main(void *arg)
{
    struct rw_vep *ve = arg;
    uint64_t sent;

    for (;;) {
        pthread_mutex_lock(&ve->mu);
        /* The owner may have posted inline meanwhile: re-read sent_seq. */
        while (!ve->stop && ve->queued_seq == (sent = atomic_load(&ve->sent_seq)))
            pthread_cond_wait(&ve->cv, &ve->mu);
        sent = atomic_load(&ve->sent_seq);
        uint64_t end = ve->queued_seq;
        int stop = ve->stop;
        pthread_mutex_unlock(&ve->mu);
        if (stop)
            break;
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
                sent += ok;
                atomic_store(&ve->sent_seq, sent);
                atomic_store(&ve->post_err, en ? en : EIO);
                return NULL; /* the owner sees post_err and fails the ep */
            }
            sent += k;
            atomic_store(&ve->sent_seq, sent);
        }
    }
    return NULL;
}

int rw_vposter_start(struct rw_vep *ve)
{
    int e;

    pthread_mutex_init(&ve->mu, NULL);
    pthread_cond_init(&ve->cv, NULL);
    ve->stop = 0;
    ve->queued_seq = ve->next_seq;
    atomic_store(&ve->sent_seq, ve->next_seq);
    atomic_store(&ve->post_err, 0);
    e = pthread_create(&ve->poster, NULL, poster_main, ve);
    if (e) {
        rw_err("verbs: %s: cannot start the poster thread (errno %d)", ve->dom->base.name, e);
        pthread_cond_destroy(&ve->cv);
        pthread_mutex_destroy(&ve->mu);
        return RAILWIRE_E_SYSTEM;
    }
    ve->poster_on = 1;
    atomic_fetch_add(&n_posters, 1);
    return 0;
}

void rw_vposter_kick(struct rw_vep *ve, uint64_t queued)
{
    pthread_mutex_lock(&ve->mu);
    ve->queued_seq = queued;
    pthread_cond_signal(&ve->cv);
    pthread_mutex_unlock(&ve->mu);
}

void rw_vposter_stop(struct rw_vep *ve)
{
    if (!ve->poster_on)
        return;
    pthread_mutex_lock(&ve->mu);
    ve->stop = 1;
    pthread_cond_signal(&ve->cv);
    pthread_mutex_unlock(&ve->mu);
    pthread_join(ve->poster, NULL);
    atomic_fetch_sub(&n_posters, 1);
    pthread_cond_destroy(&ve->cv);
    pthread_mutex_destroy(&ve->mu);
    ve->poster_on = 0;
}
