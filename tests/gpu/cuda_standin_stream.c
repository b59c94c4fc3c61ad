/* SPDX-License-Identifier: MIT */
/* The stand-in driver's streams, events and copies.  Each stream has a
 * worker thread that runs its copies in order; an event records how many
 * copies its stream had queued, and is complete once the worker has done
 * that many (CUDA_ERROR_NOT_READY before).  The legacy stream (NULL) copies
 * synchronously.  A test can hold every worker with railwire_standin_gate. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_standin.h"
#include "cuda_standin_int.h"

#define SI_WAIT_S 60 /* the longest any wait here lasts */

struct si_op {
    struct si_op *next;
    struct si_alloc dev;
    size_t dev_off;
    void *host;
    size_t len;
    int to_device;
    CUhostFn fn;            /* set: a host function (cuLaunchHostFunc), not a copy */
    void *arg;
};

struct CUstream_st {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct si_op *head, *tail;
    uint64_t queued, done;
    int stop;
    unsigned refs; /* the handle + each event recorded on it; guarded by g_ev_mu */
    pthread_t worker;
};

struct CUevent_st {
    struct CUstream_st *s;
    uint64_t seq;
};

static pthread_mutex_t g_gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_gate_cv = PTHREAD_COND_INITIALIZER;
static int g_gate_closed;
static pthread_mutex_t g_ev_mu = PTHREAD_MUTEX_INITIALIZER;
static struct standin_stats g_stats; /* guarded by g_gate_mu */

RW_CUDA_REQUIRED(RW_CUDA_DECLARE)
RW_CUDA_OPTIONAL(RW_CUDA_DECLARE)
SI_EXPORT int railwire_standin_gate(int closed);
SI_EXPORT int railwire_standin_stats(struct standin_stats *out);

SI_EXPORT int railwire_standin_gate(int closed)
{
    pthread_mutex_lock(&g_gate_mu);
    g_gate_closed = closed != 0;
    pthread_cond_broadcast(&g_gate_cv);
    pthread_mutex_unlock(&g_gate_mu);
    return 0;
}

SI_EXPORT int railwire_standin_stats(struct standin_stats *out)
{
    pthread_mutex_lock(&g_gate_mu);
    *out = g_stats;
    out->streams_live = __atomic_load_n(&g_stats.streams_live, __ATOMIC_RELAXED);
    out->events_live = __atomic_load_n(&g_stats.events_live, __ATOMIC_RELAXED);
    out->allocs_live = __atomic_load_n(&si_n_allocs, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_gate_mu);
    return 0;
}

static struct timespec deadline(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += SI_WAIT_S;
    return ts;
}

static void run_op(const struct si_op *op)
{
    pthread_mutex_lock(&g_gate_mu);
    struct timespec ts = deadline();
    while (g_gate_closed)
        if (pthread_cond_timedwait(&g_gate_cv, &g_gate_mu, &ts) == ETIMEDOUT)
            break; /* a test forgot to reopen: do not hang the process */
    pthread_mutex_unlock(&g_gate_mu);
    si_copy(&op->dev, op->dev_off, op->host, op->len, op->to_device);
    pthread_mutex_lock(&g_gate_mu);
    if (op->to_device) {
        g_stats.htod++;
        g_stats.htod_bytes += op->len;
    } else {
        g_stats.dtoh++;
        g_stats.dtoh_bytes += op->len;
    }
    pthread_mutex_unlock(&g_gate_mu);
}

static void *worker(void *arg)
{
    struct CUstream_st *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head && !s->stop)
            pthread_cond_wait(&s->cv, &s->mu);
        if (!s->head)
            break;
        struct si_op *op = s->head;
        s->head = op->next;
        if (!s->head)
            s->tail = NULL;
        pthread_mutex_unlock(&s->mu);
        if (op->fn)
            op->fn(op->arg);
        else
            run_op(op);
        free(op);
        pthread_mutex_lock(&s->mu);
        s->done++;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void stream_put(struct CUstream_st *s)
{
    pthread_mutex_lock(&g_ev_mu);
    unsigned left = --s->refs;
    pthread_mutex_unlock(&g_ev_mu);
    if (left)
        return;
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

SI_EXPORT CUresult cuStreamCreate(CUstream *stream, unsigned int flags)
{
    CUresult r = si_fail("cuStreamCreate");
    if (r || (r = si_inited()))
        return r;
    if (!si_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    (void)flags;
    struct CUstream_st *s = calloc(1, sizeof(*s));
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->refs = 1;
    if (pthread_create(&s->worker, NULL, worker, s)) {
        stream_put(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    __atomic_add_fetch(&g_stats.streams_live, 1, __ATOMIC_RELAXED);
    *stream = s;
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
    CUresult r = si_fail("cuStreamDestroy_v2");
    if (r || (r = si_inited()))
        return r;
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    /* Work still queued completes first, as the driver documents. */
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->worker, NULL);
    __atomic_sub_fetch(&g_stats.streams_live, 1, __ATOMIC_RELAXED);
    stream_put(s);
    return CUDA_SUCCESS;
}

static CUresult enqueue(CUstream s, struct si_op *op);

static CUresult copy(CUstream s, uintptr_t devp, void *host, size_t len, int to_device)
{
    struct si_alloc a;
    if (!si_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    if (len == 0)
        return CUDA_SUCCESS;
    if (!host || si_find(devp, len, &a) != CUDA_SUCCESS || a.kind != SI_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    struct si_op *op = calloc(1, sizeof(*op));
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *op = (struct si_op){.dev = a, .dev_off = devp - a.base, .host = host, .len = len,
                         .to_device = to_device};
    return enqueue(s, op);
}

/* Queues op on s (or runs it at once: legacy stream, RAILWIRE_STANDIN_SYNC).
 * Takes op. */
static CUresult enqueue(CUstream s, struct si_op *op)
{
    const char *sync = getenv("RAILWIRE_STANDIN_SYNC");
    if (!s || (sync && !strcmp(sync, "1"))) {
        if (op->fn)
            op->fn(op->arg);
        else
            run_op(op);
        free(op);
        if (s) {
            pthread_mutex_lock(&s->mu);
            s->queued++;
            s->done++;
            pthread_mutex_unlock(&s->mu);
        }
        return CUDA_SUCCESS;
    }
    pthread_mutex_lock(&s->mu);
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    s->queued++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *user_data)
{
    CUresult r = si_fail("cuLaunchHostFunc");
    if (r || (r = si_inited()))
        return r;
    if (!si_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    struct si_op *op = calloc(1, sizeof(*op));
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->fn = fn;
    op->arg = user_data;
    return enqueue(stream, op);
}

SI_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes,
                                        CUstream stream)
{
    CUresult r = si_fail("cuMemcpyHtoDAsync_v2");
    if (r || (r = si_inited()))
        return r;
    return copy(stream, (uintptr_t)dst, (void *)(uintptr_t)src, bytes, 1);
}

SI_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes,
                                        CUstream stream)
{
    CUresult r = si_fail("cuMemcpyDtoHAsync_v2");
    if (r || (r = si_inited()))
        return r;
    return copy(stream, (uintptr_t)src, dst, bytes, 0);
}

/* Waits until s has done `seq` copies.  CUDA_SUCCESS or CUDA_ERROR_UNKNOWN
 * after SI_WAIT_S. */
static CUresult wait_done(struct CUstream_st *s, uint64_t seq)
{
    CUresult r = CUDA_SUCCESS;
    struct timespec ts = deadline();
    pthread_mutex_lock(&s->mu);
    while (s->done < seq && r == CUDA_SUCCESS)
        if (pthread_cond_timedwait(&s->cv, &s->mu, &ts) == ETIMEDOUT)
            r = CUDA_ERROR_UNKNOWN;
    pthread_mutex_unlock(&s->mu);
    return r;
}

static int is_done(struct CUstream_st *s, uint64_t seq)
{
    pthread_mutex_lock(&s->mu);
    int done = s->done >= seq;
    pthread_mutex_unlock(&s->mu);
    return done;
}

SI_EXPORT CUresult cuStreamSynchronize(CUstream s)
{
    CUresult r = si_fail("cuStreamSynchronize");
    if (r || (r = si_inited()) || !s)
        return r;
    pthread_mutex_lock(&s->mu);
    uint64_t seq = s->queued;
    pthread_mutex_unlock(&s->mu);
    return wait_done(s, seq);
}

SI_EXPORT CUresult cuStreamQuery(CUstream s)
{
    CUresult r = si_fail("cuStreamQuery");
    if (r || (r = si_inited()) || !s)
        return r;
    pthread_mutex_lock(&s->mu);
    int done = s->done >= s->queued;
    pthread_mutex_unlock(&s->mu);
    return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

SI_EXPORT CUresult cuEventCreate(CUevent *ev, unsigned int flags)
{
    CUresult r = si_fail("cuEventCreate");
    if (r || (r = si_inited()))
        return r;
    (void)flags;
    if (!si_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!(*ev = calloc(1, sizeof(**ev))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    __atomic_add_fetch(&g_stats.events_live, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuEventRecord(CUevent ev, CUstream s)
{
    CUresult r = si_fail("cuEventRecord");
    if (r || (r = si_inited()))
        return r;
    if (!ev)
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUstream_st *old = ev->s;
    uint64_t seq = 0;
    if (s) {
        pthread_mutex_lock(&g_ev_mu);
        s->refs++;
        pthread_mutex_unlock(&g_ev_mu);
        pthread_mutex_lock(&s->mu);
        seq = s->queued;
        pthread_mutex_unlock(&s->mu);
    }
    ev->s = s;
    ev->seq = seq;
    if (old)
        stream_put(old);
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuEventQuery(CUevent ev)
{
    CUresult r = si_fail("cuEventQuery");
    if (r || (r = si_inited()))
        return r;
    if (!ev)
        return CUDA_ERROR_INVALID_HANDLE;
    return !ev->s || is_done(ev->s, ev->seq) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

SI_EXPORT CUresult cuEventSynchronize(CUevent ev)
{
    CUresult r = si_fail("cuEventSynchronize");
    if (r || (r = si_inited()))
        return r;
    if (!ev)
        return CUDA_ERROR_INVALID_HANDLE;
    return ev->s ? wait_done(ev->s, ev->seq) : CUDA_SUCCESS;
}

SI_EXPORT CUresult cuEventDestroy_v2(CUevent ev)
{
    CUresult r = si_fail("cuEventDestroy_v2");
    if (r || (r = si_inited()))
        return r;
    if (!ev)
        return CUDA_ERROR_INVALID_HANDLE;
    if (ev->s)
        stream_put(ev->s);
    free(ev);
    __atomic_sub_fetch(&g_stats.events_live, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}
