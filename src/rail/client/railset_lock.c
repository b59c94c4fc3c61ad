/* SPDX-License-Identifier: MIT */
/* The railset's lock and its waiters: the contended path of rs_lock, the
 * wake-ups of the threads that wait for completions and the kick of a
 * sleeping poller (see struct railwire_railset). */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
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
    for (struct rw_waiter *w = rw_list_first(&rs->waiters, struct rw_waiter, link); w && want;
         w = rw_list_next(w, struct rw_waiter, link)) {
        if (w->handle)
            continue;
        if (!w->woken)
            rs_wake(w);
        want--;
    }
}

void rs_release_slow(railwire_railset *rs)
{
    unsigned work = rs->release_work;
    if (work & RS_RELEASE_HOOK) /* the railset fd (railset_fd.c) registers it */
        rs->release_hook(rs);
    if (work & RS_RELEASE_WAITERS)
        rs_notify(rs);
    if ((work & RS_RELEASE_POLLER) && rs->kick_fd >= 0 &&
        (rs->poller_gen != rs->done_gen || rs->poller_rails_gen != rs->rails_gen ||
         rs->poll_set_stale)) {
        /* Another thread finished transfers while the poller sleeps (one of
         * them may be what the poller waits for), put a rail in service, or
         * posted to a rail that was idle when the poller armed its set: the
         * poll set does not watch that rail's completions yet. */
        uint64_t one = 1;
        rs->poller_gen = rs->done_gen;
        rs->poller_rails_gen = rs->rails_gen;
        rs->poll_set_stale = 0;
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
