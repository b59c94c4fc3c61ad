/* SPDX-License-Identifier: MIT */
/* CUDA memory served through pinned staging chunks (see tcp_serve_stage.h).
 *
 * A connection's chunks form a FIFO ring [head, tail) in the order their
 * copies were queued on its stream, so copies complete in ring order:
 * - READ: every slot is COPYING (device -> chunk queued) or READY; the
 *   head slot is sent, and goes back to the pool once sent whole;
 * - WRITE: COPYING slots (chunk -> device queued), then at most one FILLING
 *   slot at the tail that the socket's bytes go into; a completed copy
 *   returns its chunk at once. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/time.h"
#include "gpu/staging.h"
#include "tcp/tcp_loop.h"
#include "tcp/tcp_serve_stage.h"

#define SPIN_NS 100000       /* re-run after each poll this long, then every ms */
#define CLOSE_WAIT_MS 5000   /* copies in flight a close waits for */

enum slot_state { SL_COPYING = 1, SL_READY, SL_FILLING };

struct sst_slot {
    uint8_t *buf;       /* a pool chunk */
    uint32_t len;       /* payload bytes the chunk carries */
    uint32_t off;       /* READ: bytes sent; WRITE: bytes received */
    int state;
};

struct rw_tcp_sst {
    struct rw_stage_pool *pool;
    size_t chunk;
    struct rw_stage_stream *stream;
    int device;
    struct sst_slot ring[RW_TCP_SST_SLOTS];
    unsigned head, tail;   /* monotonic; slot i is ring[i % RW_TCP_SST_SLOTS] */
    uint8_t *dev;          /* READ: next device byte to copy; WRITE: where the next chunk goes */
    uint64_t dev_left;     /* READ: device bytes not yet queued for copy */
    int write;
    int64_t wait_since_ns; /* 0: not waiting */
};

static struct sst_slot *slot(struct rw_tcp_sst *s, unsigned i)
{
    return &s->ring[i % RW_TCP_SST_SLOTS];
}

int rw_tcp_sst_begin(struct rw_tcp_conn *c, const struct rw_tcp_key *k)
{
    struct rw_tcp_sst *s = c->sst;
    if (s && s->device != k->stage_dev) {
        /* another device's region: a stream of that device (idle now) */
        (void)rw_stage_stream_destroy(s->stream, 0);
        s->stream = NULL;
    }
    if (!s) {
        s = calloc(1, sizeof(*s));
        if (!s) {
            rw_err_rl("tcp: out of memory for a connection's staging state");
            return RAILWIRE_E_NOMEM;
        }
        c->sst = s;
    }
    if (!s->stream) {
        int rc = rw_stage_stream_create(k->stage_dev, RW_TCP_SST_SLOTS, &s->stream);
        if (rc < 0) {
            rw_err_rl("tcp: qpn 0x%08x: cannot create a CUDA stream on device %d to stage a "
                      "request (%s)", (unsigned)c->ep->base.local.qpn, k->stage_dev,
                      railwire_strerror(rc));
            return rc;
        }
        s->device = k->stage_dev;
    }
    struct rw_stage_stats ps;
    s->pool = k->stage_pool;
    rw_stage_pool_stats(s->pool, &ps);
    s->chunk = ps.chunk;
    s->head = s->tail = 0;
    s->dev = c->mem;
    s->write = c->req.op == RW_TCP_OP_WRITE;
    s->dev_left = s->write ? 0 : c->req.length;
    s->wait_since_ns = 0;
    c->staged = 1;
    return 0;
}

/* Collects completed copies: READ chunks become READY, WRITE chunks go
 * back to the pool.  Returns 0, or a negative code when a copy failed. */
static int pump(struct rw_tcp_conn *c)
{
    struct rw_tcp_sst *s = c->sst;
    uint64_t tags[RW_TCP_SST_SLOTS];
    if (!rw_stage_inflight(s->stream))
        return 0;
    int n = rw_stage_poll(s->stream, tags, (int)RW_TCP_SST_SLOTS);
    if (n < 0)
        return n;
    for (int i = 0; i < n; i++) {
        struct sst_slot *sl = slot(s, (unsigned)tags[i]);
        if (s->write) {
            rw_stage_put(s->pool, sl->buf);
            memset(sl, 0, sizeof(*sl));
            s->head++;
        } else {
            sl->state = SL_READY;
        }
    }
    if (n > 0) {
        c->last_progress_ms = rw_now_ms();
        s->wait_since_ns = 0;
    }
    return 0;
}

/* Takes a free chunk into a new tail slot.  Returns the slot, or NULL
 * when the connection holds its most or the pool has none free. */
static struct sst_slot *take(struct rw_tcp_sst *s, uint32_t len, int state)
{
    void *buf;
    if (s->tail - s->head >= RW_TCP_SST_SLOTS || rw_stage_get(s->pool, 0, &buf) < 0)
        return NULL;
    struct sst_slot *sl = slot(s, s->tail);
    *sl = (struct sst_slot){.buf = buf, .len = len, .state = state};
    s->tail++;
    return sl;
}

/* READ: queues device -> chunk copies while slots and chunks allow. */
static int refill(struct rw_tcp_sst *s)
{
    while (s->dev_left) {
        uint32_t len = (uint32_t)(s->dev_left < s->chunk ? s->dev_left : s->chunk);
        struct sst_slot *sl = take(s, len, SL_COPYING);
        if (!sl)
            return 0;
        int rc = rw_stage_copy(s->stream, 0, s->dev, sl->buf, len, s->tail - 1);
        if (rc < 0)
            return rc;
        s->dev += len;
        s->dev_left -= len;
    }
    return 0;
}

static enum rw_tcp_step copy_failed(const char **why)
{
    *why = "a staging copy between CUDA memory and pinned host memory failed (the log "
           "above names the CUDA call and its CUresult)";
    return RW_TCP_S_CLOSE;
}

static enum rw_tcp_step wait_copy(struct rw_tcp_conn *c)
{
    if (!c->sst->wait_since_ns)
        c->sst->wait_since_ns = (int64_t)rw_now_ns();
    c->wait = RW_TCP_W_COPY;
    return RW_TCP_S_WAIT;
}

enum rw_tcp_step rw_tcp_sst_window(struct rw_tcp_conn *c, size_t hdr, const uint8_t **src,
                                   uint64_t *avail, const char **why)
{
    struct rw_tcp_sst *s = c->sst;
    if (pump(c) < 0 || refill(s) < 0)
        return copy_failed(why);
    *avail = 0;
    if (s->head != s->tail && slot(s, s->head)->state == SL_READY) {
        struct sst_slot *sl = slot(s, s->head);
        *src = sl->buf + sl->off;
        *avail = sl->len - sl->off;
        return RW_TCP_S_CONT;
    }
    return hdr ? RW_TCP_S_CONT : wait_copy(c);
}

void rw_tcp_sst_sent(struct rw_tcp_conn *c, uint64_t n)
{
    struct rw_tcp_sst *s = c->sst;
    struct sst_slot *sl = slot(s, s->head);
    sl->off += (uint32_t)n;
    if (sl->off == sl->len) {
        rw_stage_put(s->pool, sl->buf);
        memset(sl, 0, sizeof(*sl));
        s->head++;
    }
}

/* Queues the filled tail slot's copy chunk -> device. */
static int flush(struct rw_tcp_sst *s, struct sst_slot *sl)
{
    int rc = rw_stage_copy(s->stream, 1, s->dev, sl->buf, sl->len, s->tail - 1);
    if (rc < 0)
        return rc;
    sl->state = SL_COPYING;
    s->dev += sl->len;
    return 0;
}

/* The slot the payload goes into now, or NULL (no chunk: wait). */
static struct sst_slot *filling(struct rw_tcp_conn *c)
{
    struct rw_tcp_sst *s = c->sst;
    if (s->tail != s->head && slot(s, s->tail - 1)->state == SL_FILLING)
        return slot(s, s->tail - 1);
    uint32_t len = (uint32_t)(c->left < s->chunk ? c->left : s->chunk);
    return take(s, len, SL_FILLING);
}

enum rw_tcp_step rw_tcp_sst_payload(struct rw_tcp_conn *c, int64_t now, uint64_t *quantum,
                                    const char **why)
{
    struct rw_tcp_sst *s = c->sst;
    if (pump(c) < 0)
        return copy_failed(why);
    while (c->left) {
        struct sst_slot *sl = filling(c);
        if (!sl)
            return wait_copy(c);
        size_t room = sl->len - sl->off, staged = c->st_len - c->st_off;
        ssize_t k;
        if (staged) {
            k = (ssize_t)(staged < room ? staged : room);
            memcpy(sl->buf + sl->off, c->st + c->st_off, (size_t)k);
            c->st_off += (size_t)k;
        } else {
            size_t want = room < *quantum ? room : (size_t)*quantum;
            do {
                k = rw_tcp_conn_recv(c, sl->buf + sl->off, want);
            } while (k < 0 && errno == EINTR);
            if (k <= 0)
                return rw_tcp_conn_recv_err(c, k, 1, why);
            *quantum = *quantum > (uint64_t)k ? *quantum - (uint64_t)k : 0;
            c->last_progress_ms = now;
        }
        sl->off += (uint32_t)k;
        c->left -= (uint64_t)k;
        if (sl->off == sl->len && flush(s, sl) < 0)
            return copy_failed(why);
        if (*quantum == 0 && c->left)
            return RW_TCP_S_YIELD;
    }
    if (pump(c) < 0)
        return copy_failed(why);
    if (s->head != s->tail)
        return wait_copy(c);
    s->wait_since_ns = 0;
    return RW_TCP_S_DONE;
}

void rw_tcp_sst_resched(struct rw_tcp_conn *c)
{
    int64_t since = c->sst ? c->sst->wait_since_ns : 0;
    if (since && (int64_t)rw_now_ns() - since < SPIN_NS)
        rw_tcp_loop_ready(c);
    else
        rw_tcp_loop_tick_add(c, 1);
}

void rw_tcp_sst_close(struct rw_tcp_conn *c)
{
    struct rw_tcp_sst *s = c->sst;
    if (!s)
        return;
    int rc = rw_stage_stream_destroy(s->stream, CLOSE_WAIT_MS);
    for (unsigned i = s->head; i != s->tail; i++) {
        struct sst_slot *sl = slot(s, i);
        /* a copy still running may touch its chunk: keep it out of the pool */
        if (rc == 0 || sl->state != SL_COPYING)
            rw_stage_put(s->pool, sl->buf);
    }
    free(s);
    c->sst = NULL;
    c->staged = 0;
}
