/* SPDX-License-Identifier: MIT */
/* CUDA memory on the tcp client through pinned staging chunks, with the
 * copies asynchronous on the rail's stream (see tcp_stage.h). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "gpu/cuda_driver.h"
#include "gpu/mem_desc.h"
#include "tcp/tcp_cli_io.h"
#include "gpu/staging.h"
#include "tcp/tcp_stage.h"

#define KILL_DRAIN_MS 5000

/* A staged registration: the generic part, then where the bytes live. */
struct stage_mr {
    struct rw_mr base;
    struct rw_stage_pool *pool;
    int device;
};

enum ent_state {
    ENT_POSTED,   /* on the chunk, on the wire (WRITE: its copy may still run) */
    ENT_LANDED,   /* READ: payload in the chunk, copy to the device not queued yet */
    ENT_COPYING,  /* READ: copy to the device queued; its completion is held */
    ENT_DONE,     /* READ: copy done; its completion is ready to report */
    ENT_KILLED,   /* READ on the wire when the ep was killed: its chunk is back
                     in the pool, and its completion (even a success: the
                     payload was never copied) is reported as rail-down */
};

/* One staged WR on a chunk, until its completion is reported. */
struct stage_ent {
    struct stage_ent *next;
    uint64_t wr_id;
    uint64_t tag;           /* its copy's tag on the stream, 0: no copy queued */
    struct rw_mr chunk_mr;  /* host registration of the chunk (what the ep sees) */
    struct rw_stage_pool *pool;
    void *chunk;
    void *dev;              /* the device bytes this WR moves */
    uint32_t len;
    int read;
    int copied;             /* its copy is done (WRITE: the chunk holds the payload) */
    int unposted;           /* taken by rw_tcp_stage_post, not yet on the wire: that
                               call still owns it (a kill leaves it alone) */
    enum ent_state state;
    struct rw_wc wc;        /* READ: the held completion */
};

struct rw_tcp_stage {
    pthread_mutex_t lock;
    struct rw_stage_stream *stream;
    int device;
    struct rw_tcp_cli_ep *ep; /* its ep: the stream signals the ep's wait fd after each copy
                                 (the ep outlives the stage: ep_kill destroys the stream) */
    int notify;             /* 1: the stream wakes evfd (cuLaunchHostFunc) */
    int dead;               /* the stream failed: no more copies */
    uint64_t tag;
    struct stage_ent *head, *tail; /* in the order taken */
    unsigned n_held;        /* READ completions held for their copies */
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

/* Runs on the driver's thread once a copy is done: wakes the ep's waiter. */
static void wake(void *arg)
{
    struct rw_tcp_stage *st = arg;
    rw_tcp_cli_notify(st->ep); /* counted, so ep_arm reads it (tcp_cli_attend.c) */
}

/* The ep's staging state, created on first use on `device`. */
static struct rw_tcp_stage *stage_of(struct rw_tcp_cli_ep *ep, int device, int *rc)
{
    struct rw_tcp_stage *have = __atomic_load_n(&ep->stage, __ATOMIC_ACQUIRE);
    if (have) {
        *rc = 0;
        return have;
    }
    struct rw_tcp_stage *st = calloc(1, sizeof(*st));
    if (!st) {
        *rc = RAILWIRE_E_NOMEM;
        return NULL;
    }
    /* Every entry is a WR the railset counts as outstanding on this ep, so
     * at most depth copies are ever queued; twice that is room to spare. */
    *rc = rw_stage_stream_create(device, 2 * ep->depth, &st->stream);
    if (*rc < 0) {
        free(st);
        return NULL;
    }
    pthread_mutex_init(&st->lock, NULL);
    st->device = device;
    st->ep = ep;
    st->notify = rw_stage_stream_notify(st->stream, wake, st) == 0;
    if (!st->notify)
        rw_info("tcp: the CUDA driver lacks cuLaunchHostFunc: rail waiters poll while "
                "staging copies run");
    __atomic_store_n(&ep->stage, st, __ATOMIC_RELEASE); /* tcp_ops.c reads it unlocked */
    return st;
}

static void ent_push(struct rw_tcp_stage *st, struct stage_ent *e)
{
    e->next = NULL;
    if (st->tail)
        st->tail->next = e;
    else
        st->head = e;
    st->tail = e;
}

/* Unlinks e (found after prev, NULL when e is the head) and frees it. */
static void ent_drop(struct rw_tcp_stage *st, struct stage_ent *prev, struct stage_ent *e)
{
    if (prev)
        prev->next = e->next;
    else
        st->head = e->next;
    if (st->tail == e)
        st->tail = prev;
    if (e->state == ENT_COPYING || e->state == ENT_DONE || e->state == ENT_LANDED)
        st->n_held--;
    if (e->chunk)
        rw_stage_put(e->pool, e->chunk);
    free(e);
}

static struct stage_ent *ent_find(struct rw_tcp_stage *st, uint64_t wr_id, struct stage_ent **prev)
{
    *prev = NULL;
    for (struct stage_ent *e = st->head; e; *prev = e, e = e->next)
        if (e->wr_id == wr_id && (e->state == ENT_POSTED || e->state == ENT_KILLED))
            return e;
    return NULL;
}

/* With st->lock: a READ whose payload landed: queues its copy to the device
 * and holds its completion.  Returns 0 or the copy's error (the copy is not
 * queued; the caller reports it). */
static int read_landed(struct rw_tcp_stage *st, struct stage_ent *e)
{
    if (st->dead)
        return RW_E_CUDA_CALL;
    uint64_t tag = ++st->tag;
    int rc = rw_stage_copy(st->stream, 1, e->dev, e->chunk, e->len, tag);
    if (rc == RAILWIRE_E_LIMIT) {
        e->state = ENT_LANDED; /* queued by a later retire */
        return 0;
    }
    if (rc < 0) {
        st->dead = 1;
        return rc;
    }
    e->tag = tag;
    e->state = ENT_COPYING;
    return 0;
}

/* With st->lock: collects finished copies (never blocks).  A failed stream
 * fails every held READ with the driver's error. */
static void retire(struct rw_tcp_stage *st)
{
    uint64_t tags[32];
    while (!st->dead) {
        int n = rw_stage_poll(st->stream, tags, 32);
        if (n < 0) {
            st->dead = 1;
            break;
        }
        for (int k = 0; k < n; k++)
            for (struct stage_ent *e = st->head; e; e = e->next)
                if (e->tag == tags[k] && !e->copied) {
                    e->copied = 1;
                    if (e->state == ENT_COPYING)
                        e->state = ENT_DONE;
                    break;
                }
        if (n < 32)
            break;
    }
    for (struct stage_ent *e = st->head; e; e = e->next) {
        if (e->state == ENT_LANDED && read_landed(st, e) < 0)
            e->state = ENT_COPYING;
        if (st->dead && e->state == ENT_COPYING) {
            e->state = ENT_DONE;
            if (e->wc.status == 0)
                e->wc.status = RW_E_CUDA_CALL;
        }
    }
}

/* With st->lock: waits up to timeout_ms until e's copy is done.  Returns 0,
 * RW_E_CUDA_CALL (the stream failed) or RAILWIRE_E_TIMEOUT (logged). */
static int wait_copied(struct rw_tcp_stage *st, struct stage_ent *e, int timeout_ms)
{
    int64_t end = rw_now_ms() + timeout_ms;
    for (;;) {
        retire(st);
        if (e->copied)
            return 0;
        if (st->dead)
            return RW_E_CUDA_CALL;
        if (rw_now_ms() > end) {
            rw_err("tcp: a staging copy of %u bytes (device to host) did not finish in %d ms",
                   e->len, timeout_ms);
            return RAILWIRE_E_TIMEOUT;
        }
        pthread_mutex_unlock(&st->lock);
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&st->lock);
    }
}

/* With st->lock: takes a chunk for staged WR w and, for a WRITE, queues its
 * copy device -> chunk.  Returns the entry (in st's list), or NULL: *rc 0
 * when every chunk is in use (back-pressure), else the error. */
static struct stage_ent *stage_one(struct rw_tcp_stage *st, const struct rw_wr *w, int *rc)
{
    struct stage_mr *m = (struct stage_mr *)(void *)w->mr;
    struct stage_ent *e = calloc(1, sizeof(*e));
    if (!e) {
        *rc = RAILWIRE_E_NOMEM;
        return NULL;
    }
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
    e->state = ENT_POSTED;
    e->unposted = 1;
    e->chunk_mr = *w->mr;
    e->chunk_mr.addr = e->chunk;
    e->chunk_mr.len = w->length;
    e->chunk_mr.mem_kind = RAILWIRE_MEM_HOST;
    e->chunk_mr.mem_path = RW_MEM_PATH_HOST;
    if (!e->read) {
        e->tag = ++st->tag;
        *rc = st->dead ? RW_E_CUDA_CALL
                       : rw_stage_copy(st->stream, 0, e->dev, e->chunk, e->len, e->tag);
        if (*rc < 0) {
            if (*rc == RAILWIRE_E_LIMIT)
                *rc = 0; /* the stream is full: not taken, as with a full queue */
            rw_stage_put(e->pool, e->chunk);
            free(e);
            return NULL;
        }
    }
    ent_push(st, e);
    return e;
}

/* Free slots in the ep's queue now. */
static size_t ep_room(struct rw_tcp_cli_ep *ep)
{
    pthread_mutex_lock(&ep->lock);
    size_t room = ep->depth - (size_t)(ep->posted - ep->polled);
    pthread_mutex_unlock(&ep->lock);
    return room;
}

/* With st->lock: drops the entries of wrs[from, to) that were staged (their
 * WRs were not posted); waits for their copies first. */
static void unstage(struct rw_tcp_stage *st, struct stage_ent **ents, size_t from, size_t to,
                    int wait)
{
    for (size_t i = from; i < to; i++) {
        struct stage_ent *e = ents[i], *prev = NULL;
        if (!e)
            continue;
        if (!e->read && !e->copied && wait_copied(st, e, wait) == RAILWIRE_E_TIMEOUT)
            rw_warn("tcp: dropping a staging chunk whose copy is still running");
        for (struct stage_ent *p = st->head; p && p != e; p = p->next)
            prev = p;
        ent_drop(st, prev, e);
    }
}

int rw_tcp_stage_post(struct rw_tcp_cli_ep *ep, const struct rw_wr *wrs, size_t n)
{
    int rc = 0, wait = ep->io_timeout_ms > 0 ? ep->io_timeout_ms : 30000;
    size_t room = ep_room(ep), m = n < room ? n : room, i, posted = 0;
    if (m == 0)
        return 0;
    struct stage_ent **ents = calloc(m, sizeof(*ents));
    if (!ents)
        return RAILWIRE_E_NOMEM;
    struct rw_tcp_stage *st = NULL;
    /* First every staged WR takes its chunk and every WRITE queues its copy
     * device -> chunk, so the copies run back to back on the stream ... */
    for (i = 0; i < m; i++) {
        const struct rw_wr *w = &wrs[i];
        if (!w->mr || w->mr->mem_path != RW_MEM_PATH_STAGED)
            continue;
        if (!(st = stage_of(ep, ((struct stage_mr *)(void *)w->mr)->device, &rc)))
            break;
        pthread_mutex_lock(&st->lock);
        ents[i] = stage_one(st, w, &rc);
        pthread_mutex_unlock(&st->lock);
        if (!ents[i])
            break;
    }
    m = i;
    /* ... then each WR goes on the wire as soon as its payload is in its
     * chunk, while the later copies still run. */
    for (i = 0; i < m; i++) {
        struct rw_wr sw = wrs[i];
        if (ents[i]) {
            pthread_mutex_lock(&st->lock);
            int wr = ents[i]->read ? 0 : wait_copied(st, ents[i], wait);
            /* From here its completion may come (and free it) at any time;
             * the railset serialises kills with posts. */
            ents[i]->unposted = wr < 0;
            sw.local = ents[i]->chunk;
            sw.mr = &ents[i]->chunk_mr;
            pthread_mutex_unlock(&st->lock);
            if (wr < 0) {
                rc = wr;
                break;
            }
        }
        int p = rw_tcp_cli_ep_post(ep, &sw, 1);
        if (p <= 0) {
            rc = p;
            break;
        }
        ents[i] = NULL; /* posted: its completion finishes it */
        posted++;
    }
    if (st) {
        pthread_mutex_lock(&st->lock);
        unstage(st, ents, posted, m, wait);
        pthread_mutex_unlock(&st->lock);
    }
    free(ents);
    return posted > 0 ? (int)posted : rc;
}

int rw_tcp_stage_polled(struct rw_tcp_cli_ep *ep, struct rw_wc *wcs, int n, int max)
{
    struct rw_tcp_stage *st = __atomic_load_n(&ep->stage, __ATOMIC_ACQUIRE);
    if (!st)
        return n;
    int out = 0;
    pthread_mutex_lock(&st->lock);
    for (int k = 0; k < n; k++) {
        struct stage_ent *prev, *e = ent_find(st, wcs[k].wr_id, &prev);
        if (e && e->state == ENT_KILLED && wcs[k].status == 0)
            wcs[k].status = RAILWIRE_E_RAIL_DOWN;
        if (e && e->state == ENT_POSTED && e->read && wcs[k].status == 0) {
            /* The payload is in the chunk: copy it to the device and report
             * the completion once that copy is done. */
            e->wc = wcs[k];
            int rc = read_landed(st, e);
            if (rc == 0) {
                st->n_held++;
                continue;
            }
            wcs[k].status = rc;
        }
        if (e)
            ent_drop(st, prev, e);
        wcs[out++] = wcs[k];
    }
    retire(st);
    struct stage_ent *prev = NULL, *e = st->head;
    while (e && out < max) {
        struct stage_ent *next = e->next;
        if (e->state == ENT_DONE) {
            wcs[out++] = e->wc;
            ent_drop(st, prev, e);
        } else {
            prev = e;
        }
        e = next;
    }
    pthread_mutex_unlock(&st->lock);
    return out;
}

int rw_tcp_stage_busy(struct rw_tcp_cli_ep *ep)
{
    struct rw_tcp_stage *st = __atomic_load_n(&ep->stage, __ATOMIC_ACQUIRE);
    if (!st)
        return 0;
    pthread_mutex_lock(&st->lock);
    /* With cuLaunchHostFunc each finished copy wakes evfd; without it the
     * waiter must not sleep while completions are held. */
    int busy = st->n_held > 0 && (!st->notify || st->dead);
    pthread_mutex_unlock(&st->lock);
    return busy;
}

/* With st->lock: waits up to timeout_ms for every queued copy. */
static void drain(struct rw_tcp_stage *st, int timeout_ms)
{
    int64_t end = rw_now_ms() + timeout_ms;
    while (!st->dead && rw_stage_inflight(st->stream) > 0) {
        retire(st);
        if (rw_stage_inflight(st->stream) == 0)
            break;
        if (rw_now_ms() > end) {
            rw_warn("tcp: %u staging copies still running after %d ms",
                    rw_stage_inflight(st->stream), timeout_ms);
            break;
        }
        pthread_mutex_unlock(&st->lock);
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&st->lock);
    }
}

void rw_tcp_stage_kill(struct rw_tcp_cli_ep *ep)
{
    struct rw_tcp_stage *st = __atomic_load_n(&ep->stage, __ATOMIC_ACQUIRE);
    if (!st)
        return;
    /* The ep is dead: its WRs no longer touch their chunks, which go back
     * to the pool now.  It still reports the WRs it had; a READ among them
     * whose payload had landed never reaches the device, so it is reported
     * rail-down (the railset carries it again).  READs whose completions
     * are held: once their copies are done (waited for here, so nothing
     * touches the device memory afterwards) the bytes are where they
     * belong, and the next poll reports them as they are. */
    pthread_mutex_lock(&st->lock);
    drain(st, KILL_DRAIN_MS);
    retire(st);
    struct stage_ent *prev = NULL, *e = st->head;
    while (e) {
        struct stage_ent *next = e->next;
        if (e->unposted) {
            prev = e; /* rw_tcp_stage_post finds the ep dead and drops it */
        } else if (e->state == ENT_POSTED && !e->read) {
            ent_drop(st, prev, e); /* a WRITE's completion stands as it is */
        } else if (e->state == ENT_POSTED || e->state == ENT_KILLED) {
            if (e->chunk)
                rw_stage_put(e->pool, e->chunk);
            e->chunk = NULL;
            e->state = ENT_KILLED;
            prev = e;
        } else {
            if (e->state != ENT_DONE) {
                /* Its copy never ran or outlived the wait: report the WR
                 * failed, and keep the chunk a late copy may still use. */
                e->state = ENT_DONE;
                e->wc.status = RAILWIRE_E_RAIL_DOWN;
                if (rw_stage_inflight(st->stream) > 0)
                    e->chunk = NULL;
            }
            prev = e;
        }
        e = next;
    }
    pthread_mutex_unlock(&st->lock);
}

void rw_tcp_stage_ep_free(struct rw_tcp_cli_ep *ep)
{
    struct rw_tcp_stage *st = ep->stage;
    if (!st)
        return;
    /* Copies first (they use the chunks, and wake evfd), then the chunks. */
    int rc = rw_stage_stream_destroy(st->stream, KILL_DRAIN_MS);
    ep->stage = NULL;
    while (st->head) {
        if (rc < 0) /* a copy may still write the chunk: leak it rather */
            st->head->chunk = NULL;
        struct stage_ent *e = st->head;
        st->head = e->next;
        if (e->chunk)
            rw_stage_put(e->pool, e->chunk);
        free(e);
    }
    if (rc < 0)
        return; /* a copy's wake may still come: st stays (logged by the stream) */
    pthread_mutex_destroy(&st->lock);
    free(st);
}

void rw_tcp_stage_mr_info(const struct rw_mr *mr, void **pool, int *device)
{
    if (!mr || mr->mem_path != RW_MEM_PATH_STAGED)
        return;
    const struct stage_mr *m = (const struct stage_mr *)(const void *)mr;
    *pool = m->pool;
    *device = m->device;
}
