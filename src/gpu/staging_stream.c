/* SPDX-License-Identifier: MIT */
/* One rail's copy engine: a CUDA stream and a ring of events (staging.h). */
#include <stdlib.h>
#include <time.h>

#include <railwire/error.h>

#include "common/log.h"
#include "gpu/cuda_driver.h"
#include "gpu/staging.h"

struct rw_stage_stream {
    const struct rw_cuda *cu;
    int device;
    CUstream st;
    unsigned depth;
    CUevent *ev;             /* ev[seq % depth] marks copy seq done */
    uint64_t *tags;
    uint64_t head, tail;     /* copies [head, tail) are in flight */
    int dead;
    CUhostFn notify;         /* run by the stream after each copy (NULL: none) */
    void *notify_arg;
    uint64_t hf_from;        /* copies from this seq on are followed by stream_hostfn */
    uint64_t hf_done;        /* ... which has run this many times (atomic) */
};

/* Runs on the driver's thread after each copy once notify is set: the copy
 * is done.  Counted before the caller's fn runs, so whoever fn wakes sees
 * the copy done (the copy's event completes only later). */
static void stream_hostfn(void *arg)
{
    struct rw_stage_stream *s = arg;
    __atomic_add_fetch(&s->hf_done, 1, __ATOMIC_RELEASE);
    s->notify(s->notify_arg);
}

/* 1 when copy `seq` is known done through stream_hostfn. */
static int hostfn_done(const struct rw_stage_stream *s, uint64_t seq)
{
    return s->notify && seq >= s->hf_from &&
           __atomic_load_n(&s->hf_done, __ATOMIC_ACQUIRE) > seq - s->hf_from;
}

static void free_stream(struct rw_stage_stream *s)
{
    for (unsigned i = 0; s->ev && i < s->depth; i++)
        if (s->ev[i])
            s->cu->EventDestroy(s->ev[i]);
    if (s->st) {
        CUresult r = s->cu->StreamDestroy(s->st);
        if (r != CUDA_SUCCESS)
            rw_cuda_fail(r, "cuStreamDestroy", "");
    }
    free(s->ev);
    free(s->tags);
    free(s);
}

int rw_stage_stream_create(int device, unsigned depth, struct rw_stage_stream **out)
{
    const struct rw_cuda *cu;
    int rc = rw_cuda_get(&cu);
    if (rc == 0)
        rc = rw_cuda_use_device(device);
    if (rc)
        return rc;
    if (depth == 0) {
        rw_err("staging: a copy stream needs a depth of at least 1");
        return RAILWIRE_E_INVALID;
    }
    struct rw_stage_stream *s = calloc(1, sizeof(*s));
    if (!s)
        return RAILWIRE_E_NOMEM;
    s->cu = cu;
    s->device = device;
    s->depth = depth;
    s->ev = calloc(depth, sizeof(*s->ev));
    s->tags = calloc(depth, sizeof(*s->tags));
    if (!s->ev || !s->tags) {
        free_stream(s);
        return RAILWIRE_E_NOMEM;
    }
    CUresult r = cu->StreamCreate(&s->st, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) {
        s->st = NULL;
        free_stream(s);
        return rw_cuda_fail(r, "cuStreamCreate", "creating a staging stream");
    }
    for (unsigned i = 0; i < depth; i++) {
        r = cu->EventCreate(&s->ev[i], CU_EVENT_DISABLE_TIMING);
        if (r != CUDA_SUCCESS) {
            s->ev[i] = NULL;
            free_stream(s);
            return rw_cuda_fail(r, "cuEventCreate", "creating a staging event");
        }
    }
    *out = s;
    return 0;
}

int rw_stage_copy(struct rw_stage_stream *s, int to_device, void *dev, void *host, size_t len,
                  uint64_t tag)
{
    if (s->dead)
        return RW_E_CUDA_CALL;
    if (s->tail - s->head >= s->depth)
        return RAILWIRE_E_LIMIT;
    int rc = rw_cuda_use_device(s->device);
    if (rc)
        return rc;
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)dev;
    CUresult r = to_device ? s->cu->MemcpyHtoDAsync(d, host, len, s->st)
                           : s->cu->MemcpyDtoHAsync(host, d, len, s->st);
    const char *call = to_device ? "cuMemcpyHtoDAsync" : "cuMemcpyDtoHAsync";
    if (r == CUDA_SUCCESS && s->notify) {
        call = "cuLaunchHostFunc";
        r = s->cu->LaunchHostFunc(s->st, stream_hostfn, s);
    }
    if (r == CUDA_SUCCESS) {
        call = "cuEventRecord";
        r = s->cu->EventRecord(s->ev[s->tail % s->depth], s->st);
    }
    if (r != CUDA_SUCCESS) {
        s->dead = 1;
        return rw_cuda_fail(r, call, "staging a transfer");
    }
    s->tags[s->tail % s->depth] = tag;
    s->tail++;
    return 0;
}

int rw_stage_poll(struct rw_stage_stream *s, uint64_t *tags, int max)
{
    int n = 0;
    if (s->dead)
        return RW_E_CUDA_CALL;
    if (s->head == s->tail)
        return 0;
    int rc = rw_cuda_use_device(s->device);
    if (rc)
        return rc;
    while (s->head < s->tail && n < max) {
        CUresult r = hostfn_done(s, s->head) ? CUDA_SUCCESS
                                             : s->cu->EventQuery(s->ev[s->head % s->depth]);
        if (r == CUDA_ERROR_NOT_READY)
            break;
        if (r != CUDA_SUCCESS) {
            s->dead = 1;
            return rw_cuda_fail(r, "cuEventQuery", "a staging copy failed");
        }
        tags[n++] = s->tags[s->head % s->depth];
        s->head++;
    }
    return n;
}

int rw_stage_stream_notify(struct rw_stage_stream *s, void (*fn)(void *), void *arg)
{
    if (!s->cu->LaunchHostFunc || !fn)
        return RAILWIRE_E_UNSUPPORTED;
    if (s->notify) {
        rw_err("staging: a copy stream's notification is set once");
        return RAILWIRE_E_INVALID;
    }
    s->notify_arg = arg;
    s->hf_from = s->tail;
    s->notify = fn;
    return 0;
}

unsigned rw_stage_inflight(const struct rw_stage_stream *s)
{
    return (unsigned)(s->tail - s->head);
}

int rw_stage_stream_destroy(struct rw_stage_stream *s, int timeout_ms)
{
    int rc = 0;
    if (!s)
        return 0;
    struct timespec pause = {0, 200000};
    long waited_us = 0;
    while (!s->dead && s->head < s->tail) {
        uint64_t tags[16];
        if (rw_stage_poll(s, tags, 16) < 0)
            break;
        if (s->head == s->tail)
            break;
        if (waited_us / 1000 >= timeout_ms) {
            rw_warn("staging: %u copies still running after %d ms; freeing their stream",
                    (unsigned)(s->tail - s->head), timeout_ms);
            rc = RAILWIRE_E_TIMEOUT;
            break;
        }
        nanosleep(&pause, NULL);
        waited_us += 200;
    }
    /* Events and the stream belong to the device's context. */
    (void)rw_cuda_use_device(s->device);
    if (rc < 0 && s->notify)
        return rc; /* a copy's host function may still run and use s: keep it */
    free_stream(s);
    return rc;
}
