/* SPDX-License-Identifier: MIT */
/* CUDA memory on the tcp client through pinned staging chunks (see
 * tcp_stage.h). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "common/log.h"
#include "common/time.h"
#include "gpu/mem_desc.h"
#include "gpu/staging.h"
#include "tcp/tcp_stage.h"

/* A staged registration: the generic part, then where the bytes live. */
struct stage_mr {
    struct rw_mr base;
    struct rw_stage_pool *pool;
    int device;
};

/* One posted WR on a chunk, until its completion is polled. */
struct stage_ent {
    struct stage_ent *next;
    uint64_t wr_id;
    struct rw_mr chunk_mr;  /* host registration of the chunk (what the ep sees) */
    struct rw_stage_pool *pool;
    void *chunk;
    void *dev;              /* the device bytes this WR moves */
    uint32_t len;
    int read;
};

struct rw_tcp_stage {
    pthread_mutex_t lock;
    struct rw_stage_stream *stream;
    int device;
    uint64_t tag;
    struct stage_ent *ents;
};

int rw_tcp_mr_reg_mem(struct rw_domain *dom, const struct rw_mem *mem, int access,
                      struct rw_mr **out)
{
    *out = NULL;
    if (mem->kind == RAILWIRE_MEM_HOST)
        return rw_tcp_mr_reg(dom, mem->addr, mem->len, access, out);
    if (mem->kind != RAILWIRE_MEM_CUDA) {
        rw_err("tcp: cannot register %s memory: tcp moves bytes with the CPU, which can "
               "stage CUDA memory but not a DMA-BUF; use verbs, or CUDA or host memory",
               rw_mem_kind_name((int)mem->kind));
        return RAILWIRE_E_UNSUPPORTED;
    }
    if (!mem->stage_pool) {
        rw_err("tcp: CUDA memory needs a staging pool (internal error)");
        return RAILWIRE_E_INVALID;
    }
    struct rw_mr *h = NULL;
    int rc = rw_tcp_mr_reg(dom, mem->addr, mem->len, access, &h);
    if (rc < 0)
        return rc;
    struct stage_mr *m = realloc(h, sizeof(*m));
    if (!m) {
        rw_tcp_mr_dereg(h);
        return RAILWIRE_E_NOMEM;
    }
    m->pool = mem->stage_pool;
    m->device = mem->device;
    m->base.mem_kind = RAILWIRE_MEM_CUDA;
    m->base.mem_path = RW_MEM_PATH_STAGED;
    *out = &m->base;
    return 0;
}

int rw_tcp_stage_any(const struct rw_wr *wrs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (wrs[i].mr && wrs[i].mr->mem_path == RW_MEM_PATH_STAGED)
            return 1;
    return 0;
}

/* Queues one copy on the ep's stream and waits up to timeout_ms for it. */
static int copy_sync(struct rw_tcp_stage *st, int to_dev, void *dev, void *host, size_t len,
                     int timeout_ms)
{
    uint64_t tag = ++st->tag, got;
    int rc = rw_stage_copy(st->stream, to_dev, dev, host, len, tag);
    if (rc < 0)
        return rc;
    int64_t end = rw_now_ms() + timeout_ms;
    for (;;) {
        int n = rw_stage_poll(st->stream, &got, 1);
        if (n < 0)
            return n;
        if (n == 1 && got == tag)
            return 0;
        if (rw_now_ms() > end) {
            rw_err("tcp: a staging copy of %zu bytes (%s) did not finish in %d ms", len,
                   to_dev ? "host to device" : "device to host", timeout_ms);
            return RAILWIRE_E_TIMEOUT;
        }
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

/* The ep's staging state, created on first use on `device`. */
static struct rw_tcp_stage *stage_of(struct rw_tcp_cli_ep *ep, int device, int *rc)
{
    if (ep->stage) {
        *rc = 0;
        return ep->stage;
    }
    struct rw_tcp_stage *st = calloc(1, sizeof(*st));
    if (!st) {
        *rc = RAILWIRE_E_NOMEM;
        return NULL;
    }
    *rc = rw_stage_stream_create(device, 4, &st->stream);
    if (*rc < 0) {
        free(st);
        return NULL;
    }
    pthread_mutex_init(&st->lock, NULL);
    st->device = device;
    ep->stage = st;
    return st;
}

static void ent_free(struct stage_ent *e)
{
    rw_stage_put(e->pool, e->chunk);
    free(e);
}

/* Stages one WR: takes a chunk, copies a WRITE's payload into it, and
 * fills *out with the WR on the chunk.  Returns the entry or NULL (*rc). */
static struct stage_ent *stage_one(struct rw_tcp_cli_ep *ep, struct rw_tcp_stage *st,
                                   const struct rw_wr *w, struct rw_wr *out, int *rc)
{
    struct stage_mr *m = (struct stage_mr *)(void *)w->mr;
    struct stage_ent *e = calloc(1, sizeof(*e));
    if (!e) {
        *rc = RAILWIRE_E_NOMEM;
        return NULL;
    }
    int wait = ep->io_timeout_ms > 0 ? ep->io_timeout_ms : 30000;
    /* Back-pressure: with every chunk in use the WR is not taken (the ep
     * reports no room, and the railset posts it again once completions
     * have returned chunks); the caller may be the thread that polls them,
     * so it never waits here. */
    *rc = rw_stage_get(m->pool, 0, &e->chunk);
    if (*rc < 0) {
        if (*rc == RAILWIRE_E_TIMEOUT)
            *rc = 0;
        free(e);
        return NULL;
    }
    e->pool = m->pool;
    e->wr_id = w->wr_id;
    e->dev = w->local;
    e->len = w->length;
    e->read = w->opcode == RW_OP_READ;
    e->chunk_mr = *w->mr;
    e->chunk_mr.addr = e->chunk;
    e->chunk_mr.len = w->length;
    e->chunk_mr.mem_kind = RAILWIRE_MEM_HOST;
    e->chunk_mr.mem_path = RW_MEM_PATH_HOST;
    if (!e->read) {
        *rc = copy_sync(st, 0, e->dev, e->chunk, e->len, wait);
        if (*rc < 0) {
            ent_free(e);
            return NULL;
        }
    }
    *out = *w;
    out->local = e->chunk;
    out->mr = &e->chunk_mr;
    return e;
}

int rw_tcp_stage_post(struct rw_tcp_cli_ep *ep, const struct rw_wr *wrs, size_t n)
{
    size_t i;
    int rc = 0;
    for (i = 0; i < n; i++) {
        const struct rw_wr *w = &wrs[i];
        if (!w->mr || w->mr->mem_path != RW_MEM_PATH_STAGED) {
            rc = rw_tcp_cli_ep_post(ep, w, 1);
            if (rc <= 0)
                break;
            continue;
        }
        struct rw_tcp_stage *st = stage_of(ep, ((struct stage_mr *)(void *)w->mr)->device, &rc);
        if (!st)
            break;
        struct rw_wr sw;
        pthread_mutex_lock(&st->lock);
        struct stage_ent *e = stage_one(ep, st, w, &sw, &rc);
        if (e) {
            e->next = st->ents;
            st->ents = e;
        }
        pthread_mutex_unlock(&st->lock);
        if (!e)
            break;
        rc = rw_tcp_cli_ep_post(ep, &sw, 1);
        if (rc <= 0) {
            pthread_mutex_lock(&st->lock);
            st->ents = e->next;
            pthread_mutex_unlock(&st->lock);
            ent_free(e);
            break;
        }
    }
    return i > 0 ? (int)i : rc;
}

void rw_tcp_stage_polled(struct rw_tcp_cli_ep *ep, struct rw_wc *wcs, int n)
{
    struct rw_tcp_stage *st = ep->stage;
    if (!st)
        return;
    pthread_mutex_lock(&st->lock);
    for (int k = 0; k < n && st->ents; k++) {
        struct stage_ent **pp = &st->ents;
        while (*pp && (*pp)->wr_id != wcs[k].wr_id)
            pp = &(*pp)->next;
        struct stage_ent *e = *pp;
        if (!e)
            continue;
        *pp = e->next;
        if (e->read && wcs[k].status == 0) {
            int wait = ep->io_timeout_ms > 0 ? ep->io_timeout_ms : 30000;
            int rc = copy_sync(st, 1, e->dev, e->chunk, e->len, wait);
            if (rc < 0)
                wcs[k].status = rc;
        }
        ent_free(e);
    }
    pthread_mutex_unlock(&st->lock);
}

void rw_tcp_stage_ep_free(struct rw_tcp_cli_ep *ep)
{
    struct rw_tcp_stage *st = ep->stage;
    if (!st)
        return;
    while (st->ents) {
        struct stage_ent *e = st->ents;
        st->ents = e->next;
        ent_free(e);
    }
    (void)rw_stage_stream_destroy(st->stream, 5000);
    pthread_mutex_destroy(&st->lock);
    free(st);
    ep->stage = NULL;
}

void rw_tcp_stage_mr_info(const struct rw_mr *mr, void **pool, int *device)
{
    if (!mr || mr->mem_path != RW_MEM_PATH_STAGED)
        return;
    const struct stage_mr *m = (const struct stage_mr *)(const void *)mr;
    *pool = m->pool;
    *device = m->device;
}
