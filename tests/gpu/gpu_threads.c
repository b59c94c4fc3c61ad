/* SPDX-License-Identifier: MIT */
/* A plain program (Criterion does not start under ThreadSanitizer) for the
 * threads label: many threads load the CUDA driver at once, make devices
 * current, and copy through their own stand-in streams and events while
 * others query pointers.  Exits 0 when every thread saw its bytes back. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_driver.h"

#define N_THREADS 6
#define LEN (256u * 1024u)

static void *worker(void *arg)
{
    long id = (long)(intptr_t)arg;
    const struct rw_cuda *cu;
    CUdeviceptr d = 0;
    CUstream s = NULL;
    CUevent ev = NULL;
    unsigned char *src = malloc(LEN), *dst = malloc(LEN);
    struct rw_cuda_ptr pi;
    long ok = 0;

    if (!src || !dst || rw_cuda_get(&cu) || rw_cuda_use_device((int)(id % 2)))
        goto out;
    if (cu->MemAlloc(&d, LEN) || cu->StreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
        cu->EventCreate(&ev, CU_EVENT_DISABLE_TIMING))
        goto out;
    for (unsigned round = 0; round < 20; round++) {
        memset(src, (int)(id * 31 + round), LEN);
        if (cu->MemcpyHtoDAsync(d, src, LEN, s) || cu->EventRecord(ev, s))
            goto out;
        while (cu->EventQuery(ev) == CUDA_ERROR_NOT_READY)
            if (rw_cuda_ptr_info((void *)(uintptr_t)d, &pi) || pi.ordinal != id % 2)
                goto out;
        if (cu->MemcpyDtoHAsync(dst, d, LEN, s) || cu->StreamSynchronize(s) ||
            memcmp(src, dst, LEN))
            goto out;
    }
    ok = 1;
out:
    if (ev)
        cu->EventDestroy(ev);
    if (s)
        cu->StreamDestroy(s);
    if (d)
        cu->MemFree(d);
    free(src);
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
    printf("gpu_threads: %d of %d threads failed\n", fails, N_THREADS);
    return fails ? 1 : 0;
}
