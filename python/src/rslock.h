/* SPDX-License-Identifier: MIT */
/* The one place that serialises use of a C railset.
 *
 * include/railwire/railset.h says a railset "may be used from one thread at
 * a time".  Python programs call one Railset from many threads, so every C
 * call on a railset, and the extension's own completion queue and list of
 * synchronous waiters, run with this mutex held.  The mutex is always taken
 * with the GIL released, and code holding it never asks for the GIL, so the
 * two locks cannot deadlock.  Waits are cut into short slices
 * (RWPY_WAIT_SLICE_MS) with the mutex released in between, so other threads
 * can submit while one waits.
 *
 * When the C railset becomes thread-safe (issue 9 part 1), the C calls can
 * run outside this lock: the synchronous helpers can then call
 * railwire_read/railwire_write directly (the C railset then guarantees that
 * another thread's poll never takes their completion), railset_wait.c's
 * queue and waiter list can go, and this header can shrink to nothing.
 * Nothing else in the extension knows which lock it is. */
#ifndef RWPY_RSLOCK_H
#define RWPY_RSLOCK_H

#include <pthread.h>

struct rwpy_rslock {
    pthread_mutex_t m;
};

/* 0, or an errno value from pthread_mutex_init. */
static inline int rwpy_rslock_init(struct rwpy_rslock *l)
{
    return pthread_mutex_init(&l->m, NULL);
}

static inline void rwpy_rslock_destroy(struct rwpy_rslock *l)
{
    pthread_mutex_destroy(&l->m);
}

/* Call only with the GIL released. */
static inline void rwpy_rslock_acquire(struct rwpy_rslock *l)
{
    pthread_mutex_lock(&l->m);
}

static inline void rwpy_rslock_release(struct rwpy_rslock *l)
{
    pthread_mutex_unlock(&l->m);
}

#endif
