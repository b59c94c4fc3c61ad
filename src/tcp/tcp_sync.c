/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <time.h>

#include <railwire/error.h>

#include "common/time.h"
#include "tcp/tcp_internal.h"

int rw_tcp_cond_init(pthread_cond_t *c)
{
    pthread_condattr_t a;
    int rc;

    if (pthread_condattr_init(&a))
        return RAILWIRE_E_SYSTEM;
    rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    if (!rc)
        rc = pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
    return rc ? RAILWIRE_E_SYSTEM : 0;
}

int rw_tcp_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, int64_t deadline_ms)
{
    struct timespec ts;

    if (rw_now_ms() >= deadline_ms)
        return RAILWIRE_E_TIMEOUT;
    ts.tv_sec = (time_t)(deadline_ms / 1000);
    ts.tv_nsec = (long)(deadline_ms % 1000) * 1000000L;
    if (pthread_cond_timedwait(c, m, &ts) == ETIMEDOUT)
        return RAILWIRE_E_TIMEOUT;
    return 0;
}
