/* SPDX-License-Identifier: MIT */
/* Staging through pinned host memory (src/gpu/staging*.c) with the stand-in
 * driver: the pool's bound and back-pressure, round trips host -> device ->
 * host through copy streams, completion order and not-ready copies, and a
 * failing copy; and near=auto from a memory descriptor. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <railwire/error.h>

#include "common/time.h"
#include "cuda_standin.h"
#include "gpu/cuda_driver.h"
#include "gpu/near_mem.h"
#include "gpu/staging.h"
#include "gtest.h"

#define CHUNK (64u * 1024u)

TestSuite(gpu_staging, .timeout = 60);

static const struct rw_cuda *load(void)
{
    const struct rw_cuda *cu;
    gt_use_standin();
    gt_log_capture();
    cr_assert_eq(rw_cuda_get(&cu), 0, "%s", gt_log_text());
    return cu;
}

struct putter {
    struct rw_stage_pool *p;
    void *buf;
};

static void *put_later(void *arg)
{
    struct putter *pt = arg;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    rw_stage_put(pt->p, pt->buf);
    return NULL;
}

Test(gpu_staging, pool_is_bounded_and_applies_back_pressure)
{
    load();
    struct rw_stage_pool *p;
    struct rw_stage_stats st;
    void *b[4], *extra = NULL;
    cr_assert_eq(rw_stage_pool_create(0, 4 * CHUNK + 100, CHUNK, &p), 0);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(rw_stage_get(p, 0, &b[i]), 0, "%s", gt_log_text());
    rw_stage_pool_stats(p, &st);
    cr_assert_eq(st.bound, 4 * CHUNK, "rounded down to whole chunks");
    cr_assert_eq(st.allocated, 4 * CHUNK);
    cr_assert_eq(st.in_use, 4 * CHUNK);
    cr_assert_eq(rw_stage_get(p, 30, &extra), RAILWIRE_E_TIMEOUT);
    rw_stage_pool_stats(p, &st);
    cr_assert_eq(st.waits, 1);
    cr_assert_eq(st.timeouts, 1);
    /* A chunk coming back wakes a waiter; nothing new is allocated. */
    struct putter pt = {p, b[2]};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, put_later, &pt), 0);
    cr_assert_eq(rw_stage_get(p, 30000, &extra), 0);
    pthread_join(t, NULL);
    cr_assert_eq(extra, b[2], "the returned chunk is reused");
    rw_stage_pool_stats(p, &st);
    cr_assert_eq(st.allocated, 4 * CHUNK);
    standin_stats_fn stats = (standin_stats_fn)gt_standin_sym(STANDIN_STATS_SYM);
    struct standin_stats ss;
    stats(&ss);
    cr_assert_eq(ss.allocs_live, 4, "exactly the bound in pinned chunks");
    for (int i = 0; i < 4; i++)
        rw_stage_put(p, i == 2 ? extra : b[i]);
    rw_stage_pool_destroy(p);
    stats(&ss);
    cr_assert_eq(ss.allocs_live, 0);
}

Test(gpu_staging, round_trip_through_a_copy_stream)
{
    const struct rw_cuda *cu = load();
    size_t len = 16 * CHUNK;
    CUdeviceptr d;
    unsigned char *want = malloc(len), *back = malloc(len);
    struct rw_stage_pool *p;
    struct rw_stage_stream *s;
    cr_assert_eq(rw_cuda_use_device(1), 0);
    cr_assert_eq(cu->MemAlloc(&d, len), 0);
    cr_assert_eq(rw_stage_pool_create(1, 4 * CHUNK, CHUNK, &p), 0);
    cr_assert_eq(rw_stage_stream_create(1, 4, &s), 0);
    for (size_t i = 0; i < len; i++)
        want[i] = (unsigned char)(i * 13 + i / 4096);
    for (int dir = 1; dir >= 0; dir--) {
        void *bufs[16] = {0};
        uint64_t next_tag = 0, done = 0, tags[4];
        while (done < 16) {
            while (next_tag < 16 && rw_stage_inflight(s) < 4) {
                cr_assert_eq(rw_stage_get(p, 30000, &bufs[next_tag]), 0);
                if (dir)
                    memcpy(bufs[next_tag], want + next_tag * CHUNK, CHUNK);
                void *dev = (void *)(uintptr_t)(d + next_tag * CHUNK);
                cr_assert_eq(rw_stage_copy(s, dir, dev, bufs[next_tag], CHUNK, next_tag), 0);
                next_tag++;
            }
            int n = rw_stage_poll(s, tags, 4);
            cr_assert_geq(n, 0);
            for (int k = 0; k < n; k++, done++) {
                cr_assert_eq(tags[k], done, "completions in queue order");
                if (!dir)
                    memcpy(back + tags[k] * CHUNK, bufs[tags[k]], CHUNK);
                rw_stage_put(p, bufs[tags[k]]);
            }
        }
    }
    cr_assert(memcmp(want, back, len) == 0, "bytes differ after host -> device -> host");
    cr_assert_eq(rw_stage_stream_destroy(s, 1000), 0);
    rw_stage_pool_destroy(p);
    cu->MemFree(d);
    free(want);
    free(back);
}

Test(gpu_staging, depth_limit_and_not_ready)
{
    const struct rw_cuda *cu = load();
    standin_gate_fn gate = (standin_gate_fn)gt_standin_sym(STANDIN_GATE_SYM);
    CUdeviceptr d;
    void *buf;
    uint64_t tag;
    struct rw_stage_pool *p;
    struct rw_stage_stream *s;
    cr_assert_eq(rw_cuda_use_device(0), 0);
    cr_assert_eq(cu->MemAlloc(&d, CHUNK), 0);
    cr_assert_eq(rw_stage_pool_create(0, CHUNK, CHUNK, &p), 0);
    cr_assert_eq(rw_stage_get(p, 0, &buf), 0);
    cr_assert_eq(rw_stage_stream_create(0, 1, &s), 0);
    gate(1);
    cr_assert_eq(rw_stage_copy(s, 1, (void *)(uintptr_t)d, buf, CHUNK, 7), 0);
    cr_assert_eq(rw_stage_copy(s, 1, (void *)(uintptr_t)d, buf, CHUNK, 8), RAILWIRE_E_LIMIT);
    cr_assert_eq(rw_stage_poll(s, &tag, 1), 0, "the copy cannot be done: the gate is shut");
    cr_assert_eq(rw_stage_inflight(s), 1);
    gate(0);
    /* The stand-in's worker runs the copy once it gets a CPU: bounded by
     * time, not by a count of polls (100,000 polls took about 10 ms, and
     * under load the worker had not run by then in 3 of 150 runs). */
    int64_t deadline = rw_now_ms() + 10000;
    int n;
    while ((n = rw_stage_poll(s, &tag, 1)) == 0 && rw_now_ms() < deadline)
        nanosleep(&(struct timespec){0, 100 * 1000}, NULL);
    cr_assert_eq(n, 1, "the copy was not done 10 s after the gate opened");
    cr_assert_eq(tag, 7);
    cr_assert_eq(rw_stage_stream_destroy(s, 1000), 0);
    rw_stage_put(p, buf);
    rw_stage_pool_destroy(p);
    cu->MemFree(d);
}

Test(gpu_staging, failing_copy_is_reported_with_the_curesult)
{
    const struct rw_cuda *cu = load();
    CUdeviceptr d;
    void *buf;
    uint64_t tag;
    struct rw_stage_pool *p;
    struct rw_stage_stream *s;
    cr_assert_eq(rw_cuda_use_device(0), 0);
    cr_assert_eq(cu->MemAlloc(&d, CHUNK), 0);
    cr_assert_eq(rw_stage_pool_create(0, CHUNK, CHUNK, &p), 0);
    cr_assert_eq(rw_stage_get(p, 0, &buf), 0);
    cr_assert_eq(rw_stage_stream_create(0, 2, &s), 0);
    setenv("RAILWIRE_STANDIN_FAIL", "cuMemcpyDtoHAsync_v2=2", 1);
    cr_assert_eq(rw_stage_copy(s, 0, (void *)(uintptr_t)d, buf, CHUNK, 1), RW_E_CUDA_CALL);
    cr_assert(gt_log_has("cuMemcpyDtoHAsync failed: CUDA_ERROR_OUT_OF_MEMORY"), "%s",
              gt_log_text());
    cr_assert_eq(rw_stage_poll(s, &tag, 1), RW_E_CUDA_CALL, "the stream stays failed");
    unsetenv("RAILWIRE_STANDIN_FAIL");
    cr_assert_eq(rw_stage_stream_destroy(s, 1000), 0);
    rw_stage_put(p, buf);
    rw_stage_pool_destroy(p);
    cu->MemFree(d);
}

Test(gpu_staging, bad_arguments)
{
    load();
    struct rw_stage_pool *p;
    struct rw_stage_stream *s;
    cr_assert_eq(rw_stage_pool_create(0, 100, CHUNK, &p), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("smaller than one chunk"), "%s", gt_log_text());
    cr_assert_eq(rw_stage_stream_create(0, 0, &s), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_stage_stream_create(5, 4, &s), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("device 5 does not exist"), "%s", gt_log_text());
}

/* near=auto takes its target from the first registered memory. */
Test(gpu_staging, near_from_memory)
{
    const struct rw_cuda *cu = load();
    CUdeviceptr d;
    struct rw_mem m;
    struct rw_near n;
    cr_assert_eq(rw_cuda_use_device(1), 0);
    cr_assert_eq(cu->MemAlloc(&d, CHUNK), 0);
    rw_mem_host(&m, (void *)(uintptr_t)d, CHUNK);
    m.kind = RAILWIRE_MEM_CUDA;
    m.device = 1;
    cr_assert_eq(rw_near_from_mem(&m, &n), 0);
    cr_assert_eq(n.kind, RW_NEAR_CUDA);
    cr_assert_eq(n.index, 1);
    cr_assert_str_eq(n.busid, "0000:2b:00.0");
    static char page[8192];
    page[0] = 1;
    rw_mem_host(&m, page, sizeof(page));
    cr_assert_eq(rw_near_from_mem(&m, &n), 0);
    int node = rw_topo_host_numa(page);
    if (node >= 0) {
        cr_assert_eq(n.kind, RW_NEAR_NUMA);
        cr_assert_eq(n.index, node);
    } else {
        cr_assert_eq(n.kind, RW_NEAR_NONE);
    }
    cu->MemFree(d);
}

static int g_woken;

static void count_wake(void *arg)
{
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_RELEASE);
}

/* The notification runs once per copy, only after the copy is done, and a
 * copy it reports is already done for rw_stage_poll (no lost wake-up). */
Test(gpu_staging, notify_runs_after_each_copy)
{
    const struct rw_cuda *cu = load();
    standin_gate_fn gate = (standin_gate_fn)gt_standin_sym(STANDIN_GATE_SYM);
    CUdeviceptr d;
    void *buf;
    uint64_t tags[3];
    struct rw_stage_pool *p;
    struct rw_stage_stream *s;
    cr_assert_eq(rw_cuda_use_device(0), 0);
    cr_assert_eq(cu->MemAlloc(&d, CHUNK), 0);
    cr_assert_eq(rw_stage_pool_create(0, CHUNK, CHUNK, &p), 0);
    cr_assert_eq(rw_stage_get(p, 0, &buf), 0);
    cr_assert_eq(rw_stage_stream_create(0, 4, &s), 0);
    cr_assert_eq(rw_stage_stream_notify(s, count_wake, &g_woken), 0);
    cr_assert_eq(rw_stage_stream_notify(s, count_wake, &g_woken), RAILWIRE_E_INVALID);
    gate(1);
    for (uint64_t t = 1; t <= 3; t++)
        cr_assert_eq(rw_stage_copy(s, (int)(t & 1), (void *)(uintptr_t)d, buf, CHUNK, t), 0);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    cr_assert_eq(__atomic_load_n(&g_woken, __ATOMIC_ACQUIRE), 0, "woken before any copy ran");
    cr_assert_eq(rw_stage_poll(s, tags, 3), 0);
    gate(0);
    int got = 0;
    for (int i = 0; i < 2000 && got < 3; i++) {
        int seen = __atomic_load_n(&g_woken, __ATOMIC_ACQUIRE);
        int n = rw_stage_poll(s, tags + got, 3 - got);
        cr_assert_geq(n, 0);
        got += n;
        cr_assert_geq(got, seen, "a copy that woke us was not yet done for rw_stage_poll");
        nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
    }
    cr_assert_eq(got, 3);
    cr_assert_eq(tags[0], 1);
    cr_assert_eq(tags[2], 3);
    cr_assert_eq(rw_stage_stream_destroy(s, 1000), 0);
    cr_assert_eq(__atomic_load_n(&g_woken, __ATOMIC_ACQUIRE), 3);
    rw_stage_put(p, buf);
    rw_stage_pool_destroy(p);
    cu->MemFree(d);
}
