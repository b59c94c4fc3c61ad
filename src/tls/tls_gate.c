/* SPDX-License-Identifier: MIT */
#include "tls/tls_gate.h"

#include <errno.h>
#include <time.h>

#include <railwire/error.h>

#include "common/cpus.h"
#include "common/time.h"

unsigned rw_tls_gate_default(void)
{
    unsigned n = rw_cpus_usable();

    if (n < 2)
        n = 2;
    return 2 * n;
}

int rw_tls_gate_init(struct rw_tls_gate *g, unsigned max)
{
    pthread_condattr_t ca;

    g->max = max ? max : rw_tls_gate_default();
    g->busy = 0;
    g->entered = g->full = 0;
    if (pthread_mutex_init(&g->lock, NULL) != 0)
        return RAILWIRE_E_SYSTEM;
    if (pthread_condattr_init(&ca) != 0 ||
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&g->freed, &ca) != 0) {
        pthread_mutex_destroy(&g->lock);
        return RAILWIRE_E_SYSTEM;
    }
    pthread_condattr_destroy(&ca);
    return 0;
}

int rw_tls_gate_try(struct rw_tls_gate *g)
{
    int ok;

    pthread_mutex_lock(&g->lock);
    ok = g->busy < g->max;
    if (ok) {
        g->busy++;
        g->entered++;
    } else {
        g->full++;
    }
    pthread_mutex_unlock(&g->lock);
    return ok;
}

int rw_tls_gate_enter(struct rw_tls_gate *g, int64_t deadline_ms)
{
    struct timespec ts = {(time_t)(deadline_ms / 1000), (long)(deadline_ms % 1000) * 1000000L};
    int rc = 0, counted = 0;

    pthread_mutex_lock(&g->lock);
    while (g->busy >= g->max) {
        if (!counted++)
            g->full++;
        if (pthread_cond_timedwait(&g->freed, &g->lock, &ts) == ETIMEDOUT &&
            g->busy >= g->max) {
            rc = RAILWIRE_E_TIMEOUT;
            break;
        }
    }
    if (rc == 0) {
        g->busy++;
        g->entered++;
    }
    pthread_mutex_unlock(&g->lock);
    return rc;
}

void rw_tls_gate_leave(struct rw_tls_gate *g)
{
    pthread_mutex_lock(&g->lock);
    if (g->busy > 0)
        g->busy--;
    pthread_cond_signal(&g->freed);
    pthread_mutex_unlock(&g->lock);
}

unsigned rw_tls_gate_busy(struct rw_tls_gate *g)
{
    unsigned b;

    pthread_mutex_lock(&g->lock);
    b = g->busy;
    pthread_mutex_unlock(&g->lock);
    return b;
}

void rw_tls_gate_destroy(struct rw_tls_gate *g)
{
    pthread_cond_destroy(&g->freed);
    pthread_mutex_destroy(&g->lock);
}
