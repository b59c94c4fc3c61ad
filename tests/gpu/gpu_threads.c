/* SPDX-License-Identifier: MIT */
/* A plain program (Criterion does not start under ThreadSanitizer) for the
 * threads label: many threads load the CUDA driver at once, make devices
 * current, and copy through their own stand-in streams and events while
 * others query pointers, sharing a staging pool smaller than their number.  Exits 0 when every thread saw its bytes back. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_driver.h"
#include "gpu/staging.h"

#define N_THREADS 6
#define LEN (256u * 1024u)

/* Fewer pinned chunks than threads: they wait for each other. */
static struct rw_stage_pool *g_pool;
static pthread_once_t g_pool_once = PTHREAD_ONCE_INIT;

static void make_pool(void)
{
    if (rw_stage_pool_create(0, 2 * LEN, LEN, &g_pool))
        g_pool = NULL;
}

static void *worker(void *arg)
{
    long id = (long)(intptr_t)arg;
    const struct rw_cuda *cu;
    CUdeviceptr d = 0;
    CUstream s = NULL;
    CUevent ev = NULL;
    unsigned char *src = NULL, *dst = malloc(LEN);
    struct rw_cuda_ptr pi;
    long ok = 0;

    if (!dst || rw_cuda_get(&cu) || rw_cuda_use_device((int)(id % 2)))
        goto out;
    pthread_once(&g_pool_once, make_pool);
    if (!g_pool)
        goto out;
    if (cu->MemAlloc(&d, LEN) || cu->StreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
        cu->EventCreate(&ev, CU_EVENT_DISABLE_TIMING))
        goto out;
    for (unsigned round = 0; round < 20; round++) {
        if (rw_stage_get(g_pool, 30000, (void **)&src))
            goto out;
        memset(src, (int)(id * 31 + round), LEN);
        if (cu->MemcpyHtoDAsync(d, src, LEN, s) || cu->EventRecord(ev, s))
            goto out;
        while (cu->EventQuery(ev) == CUDA_ERROR_NOT_READY)
            if (rw_cuda_ptr_info((void *)(uintptr_t)d, &pi) || pi.ordinal != id % 2)
                goto out;
        if (cu->MemcpyDtoHAsync(dst, d, LEN, s) || cu->StreamSynchronize(s) ||
            memcmp(src, dst, LEN))
            goto out;
        rw_stage_put(g_pool, src);
        src = NULL;
    }
    ok = 1;
out:
    if (ev)
        cu->EventDestroy(ev);
    if (s)
        cu->StreamDestroy(s);
    if (d)
        cu->MemFree(d);
    if (src && g_pool)
        rw_stage_put(g_pool, src);
    free(dst);
    return (void *)(intptr_t)ok;
}

int main(void)
{
    pthread_t t[N_THREADS];
    int fails = 0;
    setenv("RAILWIRE_CUDA_LIBRARY", RW_STANDIN_PATH, 1);
    for (long i = 0; i < N_THREADS; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i))
            return 2;
    for (int i = 0; i < N_THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        fails += r == NULL;
    }
    struct rw_stage_stats st = {0};
    if (!g_pool)
        return 1;
    rw_stage_pool_stats(g_pool, &st);
    printf("gpu_threads: %d of %d threads failed; staging waits %llu, %zu bytes pinned\n",
           fails, N_THREADS, (unsigned long long)st.waits, st.allocated);
    fails += st.allocated > 2 * LEN;
    rw_stage_pool_destroy(g_pool);
    return fails ? 1 : 0;
}
