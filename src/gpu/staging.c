/* SPDX-License-Identifier: MIT */
/* Pinned staging pool and per-rail copy streams (see staging.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <railwire/error.h>

#include "common/log.h"
#include "common/time.h"
#include "gpu/cuda_driver.h"
#include "gpu/staging.h"

struct rw_stage_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* a chunk came back */
    const struct rw_cuda *cu;
    int device;
    size_t chunk, n_max;        /* chunk bytes, most chunks */
    size_t n_alloc;             /* chunks allocated or being allocated */
    size_t n_free;
    void **all, **free_list;    /* n_max entries each */
    size_t n_all;               /* entries of all[] filled */
    uint64_t waits, timeouts;
};

int rw_stage_pool_create(int device, size_t bound, size_t chunk, struct rw_stage_pool **out)
{
    const struct rw_cuda *cu;
    int rc = rw_cuda_get(&cu);
    if (rc)
        return rc;
    chunk = chunk ? chunk : RW_STAGE_DEFAULT_CHUNK;
    bound = bound ? bound : RW_STAGE_DEFAULT_BYTES;
    if (bound < chunk) {
        rw_err("staging: the bound (%zu bytes) is smaller than one chunk (%zu bytes)", bound,
               chunk);
        return RAILWIRE_E_INVALID;
    }
    struct rw_stage_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return RAILWIRE_E_NOMEM;
    p->cu = cu;
    p->device = device;
    p->chunk = chunk;
    p->n_max = bound / chunk;
    p->all = calloc(p->n_max, sizeof(void *));
    p->free_list = calloc(p->n_max, sizeof(void *));
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (!p->all || !p->free_list || pthread_cond_init(&p->cv, &ca)) {
        pthread_condattr_destroy(&ca);
        free(p->all);
        free(p->free_list);
        free(p);
        return RAILWIRE_E_NOMEM;
    }
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&p->mu, NULL);
    *out = p;
    return 0;
}

/* Allocates one pinned chunk (the slot is already reserved in n_alloc). */
static int alloc_chunk(struct rw_stage_pool *p, void **buf)
{
    int rc = rw_cuda_use_device(p->device);
    if (rc)
        return rc;
    CUresult r = p->cu->MemHostAlloc(buf, p->chunk, CU_MEMHOSTALLOC_PORTABLE);
    if (r != CUDA_SUCCESS)
        return rw_cuda_fail(r, "cuMemHostAlloc", "allocating a pinned staging chunk");
    return 0;
}

int rw_stage_get(struct rw_stage_pool *p, int timeout_ms, void **buf)
{
    struct timespec dl = rw_monotonic_in_ms(timeout_ms > 0 ? timeout_ms : 0);
    int waited = 0, rc = 0;

    pthread_mutex_lock(&p->mu);
    while (!p->n_free && p->n_alloc == p->n_max) {
        if (!waited++)
            p->waits++;
        if (timeout_ms <= 0 || pthread_cond_timedwait(&p->cv, &p->mu, &dl) == ETIMEDOUT) {
            if (p->n_free || p->n_alloc < p->n_max)
                break;
            p->timeouts++;
            pthread_mutex_unlock(&p->mu);
            rw_debug("staging: all %zu chunks in use for %d ms", p->n_max, timeout_ms);
            return RAILWIRE_E_TIMEOUT;
        }
    }
    if (p->n_free) {
        *buf = p->free_list[--p->n_free];
        pthread_mutex_unlock(&p->mu);
        return 0;
    }
    p->n_alloc++;
    pthread_mutex_unlock(&p->mu);
    rc = alloc_chunk(p, buf);
    pthread_mutex_lock(&p->mu);
    if (rc) {
        p->n_alloc--;
        pthread_cond_signal(&p->cv);
    } else {
        p->all[p->n_all++] = *buf;
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void rw_stage_put(struct rw_stage_pool *p, void *buf)
{
    pthread_mutex_lock(&p->mu);
    p->free_list[p->n_free++] = buf;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void rw_stage_pool_stats(struct rw_stage_pool *p, struct rw_stage_stats *out)
{
    pthread_mutex_lock(&p->mu);
    *out = (struct rw_stage_stats){
        .bound = p->n_max * p->chunk, .chunk = p->chunk, .allocated = p->n_all * p->chunk,
        .in_use = (p->n_all - p->n_free) * p->chunk, .waits = p->waits,
        .timeouts = p->timeouts};
    pthread_mutex_unlock(&p->mu);
}

void rw_stage_pool_destroy(struct rw_stage_pool *p)
{
    if (!p)
        return;
    if (p->n_free != p->n_all)
        rw_warn("staging: pool destroyed with %zu of %zu chunks still in use",
                p->n_all - p->n_free, p->n_all);
    for (size_t i = 0; i < p->n_all; i++) {
        CUresult r = p->cu->MemFreeHost(p->all[i]);
        if (r != CUDA_SUCCESS)
            rw_cuda_fail(r, "cuMemFreeHost", "freeing a staging chunk");
    }
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->all);
    free(p->free_list);
    free(p);
}
