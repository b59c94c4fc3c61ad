/* SPDX-License-Identifier: MIT */
/* A check for machines with a GPU (and, in CI, the stand-in): loads the
 * driver that RAILWIRE_CUDA_LIBRARY names (default libcuda.so.1), checks a
 * cuMemAlloc'ed buffer's descriptor, tries the DMA-BUF export, and moves
 * 64 KiB, 1 MiB and 16 MiB host -> device -> host through the staging pool
 * and a copy stream, verifying every byte.  Prints one line per size with
 * the staged GB/s and, as the reference of the same run, a host memcpy's.
 * Exit status: 0 all checks passed, 1 a check failed, 2 no driver/GPU. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu/cuda_driver.h"
#include "gpu/mem_desc.h"
#include "gpu/staging.h"

#define CHUNK (1u << 20)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Moves len bytes between want/back and the device at d, chunk by chunk. */
static int stage(struct rw_stage_stream *s, struct rw_stage_pool *p, int to_dev, CUdeviceptr d,
                 unsigned char *host, size_t len)
{
    size_t n = (len + CHUNK - 1) / CHUNK, queued = 0, done = 0;
    void **bufs = calloc(n, sizeof(void *));
    uint64_t tags[8];
    int rc = bufs ? 0 : 1;
    while (rc == 0 && done < n) {
        while (queued < n && rw_stage_inflight(s) < 8) {
            size_t off = queued * CHUNK, l = len - off < CHUNK ? len - off : CHUNK;
            if ((rc = rw_stage_get(p, 30000, &bufs[queued])) != 0)
                break;
            if (to_dev)
                memcpy(bufs[queued], host + off, l);
            if ((rc = rw_stage_copy(s, to_dev, (void *)(uintptr_t)(d + off), bufs[queued], l,
                                    queued)) != 0)
                break;
            queued++;
        }
        int k = rc ? rc : rw_stage_poll(s, tags, 8);
        if (k < 0) {
            rc = k;
            break;
        }
        if (k == 0)
            sched_yield(); /* let the copy engine run (it may share our CPU) */
        for (int i = 0; i < k; i++, done++) {
            size_t off = tags[i] * CHUNK, l = len - off < CHUNK ? len - off : CHUNK;
            if (!to_dev)
                memcpy(host + off, bufs[tags[i]], l);
            rw_stage_put(p, bufs[tags[i]]);
        }
    }
    free(bufs);
    return rc;
}

static int one_size(const struct rw_cuda *cu, struct rw_stage_stream *s,
                    struct rw_stage_pool *p, size_t len)
{
    CUdeviceptr d = 0;
    unsigned char *want = malloc(len), *back = malloc(len);
    int rc = 1, reps = (int)((64u << 20) / len);
    if (!want || !back || cu->MemAlloc(&d, len) != CUDA_SUCCESS)
        goto out;
    for (size_t i = 0; i < len; i++)
        want[i] = (unsigned char)(i * 7 + (i >> 12));
    /* Warm up: first touches of every page stay out of the timing. */
    memset(back, 0, len);
    if (stage(s, p, 1, d, want, len) || stage(s, p, 0, d, back, len))
        goto out;
    double t0 = now_s();
    for (int r = 0; r < reps; r++)
        if (stage(s, p, 1, d, want, len) || stage(s, p, 0, d, back, len))
            goto out;
    double t1 = now_s();
    for (int r = 0; r < reps; r++) {
        memcpy(back, want, len);
        memcpy(want, back, len);
    }
    double t2 = now_s();
    memset(back, 0, len);
    if (stage(s, p, 0, d, back, len) || memcmp(want, back, len)) {
        fprintf(stderr, "gpu-check: %zu bytes: device round trip differs\n", len);
        goto out;
    }
    double bytes = 2.0 * (double)len * reps;
    printf("gpu-check: %8zu bytes: staged %.2f GB/s (H2D+D2H), host memcpy %.2f GB/s, "
           "ratio %.3f\n", len, bytes / (t1 - t0) / 1e9, bytes / (t2 - t1) / 1e9,
           (t2 - t1) / (t1 - t0));
    rc = 0;
out:
    if (d)
        cu->MemFree(d);
    free(want);
    free(back);
    return rc;
}

int main(void)
{
    const struct rw_cuda *cu;
    struct rw_stage_pool *p = NULL;
    struct rw_stage_stream *s = NULL;
    if (rw_cuda_get(&cu) || rw_cuda_use_device(0))
        return 2;
    printf("gpu-check: driver %s, API %d.%d, %d device(s)\n", cu->path, cu->version / 1000,
           cu->version % 1000 / 10, cu->n_devices);
    CUdeviceptr d = 0;
    if (!cu->MemAlloc || cu->MemAlloc(&d, 4 << 20) != CUDA_SUCCESS)
        return 1;
    railwire_mem m;
    struct rw_mem out;
    railwire_mem_init(&m);
    m.kind = RAILWIRE_MEM_CUDA;
    m.addr = (void *)(uintptr_t)(d + 4096);
    m.len = 1 << 20;
    int rc = rw_mem_normalise(&m, &out);
    printf("gpu-check: descriptor of cuMemAlloc memory: %s (device %d)\n", rc ? "FAILED" : "ok",
           out.device);
    char why[256] = "";
    int fd = -1;
    uint64_t off = 0;
    int ex = rw_cuda_export_dmabuf(m.addr, m.len, &fd, &off, why, sizeof(why));
    printf("gpu-check: DMA-BUF export: %s%s\n", ex ? "not available: " : "ok",
           ex ? why : "");
    if (fd >= 0)
        close(fd);
    cu->MemFree(d);
    if (rc == 0)
        rc = rw_stage_pool_create(0, 16 * CHUNK, CHUNK, &p);
    if (rc == 0)
        rc = rw_stage_stream_create(0, 8, &s);
    static const size_t sizes[] = {64u << 10, 1u << 20, 16u << 20};
    for (size_t i = 0; rc == 0 && i < 3; i++)
        rc = one_size(cu, s, p, sizes[i]);
    if (s && rw_stage_stream_destroy(s, 10000))
        rc = 1;
    rw_stage_pool_destroy(p);
    printf("gpu-check: %s\n", rc ? "FAILED" : "all checks passed");
    return rc ? 1 : 0;
}
