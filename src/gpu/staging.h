/* SPDX-License-Identifier: MIT */
/* Staging GPU memory through pinned host buffers, for transports whose CPU
 * moves the bytes (tcp): the CPU never touches device memory; payloads land
 * in pinned host chunks and reach the device by asynchronous copies on one
 * CUDA stream per rail (and the reverse), so the network and the copies
 * overlap.
 *
 * A pool bounds the pinned memory: chunks are allocated on demand up to the
 * bound and then reused; when all are in use, rw_stage_get waits
 * (back-pressure) and never allocates more.  Everything here loads the CUDA
 * driver (cuda_driver.h): create these only for CUDA memory. */
#ifndef RW_GPU_STAGING_H
#define RW_GPU_STAGING_H

#include <stddef.h>
#include <stdint.h>

/* Default bound of a pool and size of its chunks. */
#define RW_STAGE_DEFAULT_BYTES (64u << 20)
#define RW_STAGE_DEFAULT_CHUNK (1u << 20)

struct rw_stage_pool;

/* What a pool holds now (for stats). */
struct rw_stage_stats {
    size_t bound;          /* the most pinned bytes it may hold */
    size_t chunk;          /* bytes per chunk */
    size_t allocated;      /* pinned bytes allocated so far (<= bound) */
    size_t in_use;         /* bytes handed out and not yet returned */
    uint64_t waits;        /* rw_stage_get calls that had to wait */
    uint64_t timeouts;     /* ... and gave up */
};

/* Creates a pool of at most `bound` bytes in chunks of `chunk` bytes (0 =
 * the defaults; bound is rounded down to whole chunks, at least one),
 * allocated as portable pinned memory from CUDA device `device`'s context.
 * Returns 0 and *out, or RAILWIRE_E_INVALID / RAILWIRE_E_NOMEM / the
 * driver's error (logged). */
int rw_stage_pool_create(int device, size_t bound, size_t chunk, struct rw_stage_pool **out);

/* Takes one chunk (chunk bytes of pinned host memory) into *buf.  When all
 * are in use, waits up to timeout_ms for one to come back.  Returns 0,
 * RAILWIRE_E_TIMEOUT (back-pressure outlasted the wait, logged at debug:
 * the caller decides), or RAILWIRE_E_NOMEM / the driver's error (logged).
 * Thread-safe. */
int rw_stage_get(struct rw_stage_pool *p, int timeout_ms, void **buf);
/* Returns a chunk taken with rw_stage_get.  Thread-safe. */
void rw_stage_put(struct rw_stage_pool *p, void *buf);
void rw_stage_pool_stats(struct rw_stage_pool *p, struct rw_stage_stats *out);
/* Frees the pool; every chunk must have come back.  NULL is a no-op. */
void rw_stage_pool_destroy(struct rw_stage_pool *p);

/* One rail's copy engine: a CUDA stream on one device and a ring of events,
 * one per outstanding copy.  Used by one thread at a time. */
struct rw_stage_stream;

/* Creates a stream on CUDA device `device` with room for `depth` copies in
 * flight.  Returns 0 and *out, or an error (logged). */
int rw_stage_stream_create(int device, unsigned depth, struct rw_stage_stream **out);

/* Queues one asynchronous copy of len bytes: host -> dev when to_device,
 * else dev -> host; `host` should be a pool chunk (pinned).  `tag` comes
 * back from rw_stage_poll once the copy is done.  Returns 0,
 * RAILWIRE_E_LIMIT when depth copies are in flight (poll first), or
 * RW_E_CUDA_CALL (logged with the CUresult). */
int rw_stage_copy(struct rw_stage_stream *s, int to_device, void *dev, void *host, size_t len,
                  uint64_t tag);

/* Never blocks: moves the tags of up to max finished copies, in the order
 * they were queued, into tags.  Returns the count, or RW_E_CUDA_CALL when a
 * copy failed (logged; the stream is then unusable). */
int rw_stage_poll(struct rw_stage_stream *s, uint64_t *tags, int max);

/* From now on (once per stream), has the stream run fn(arg) as soon as
 * each later copy is done (cuLaunchHostFunc, queued between the copy and
 * its event), so a thread can sleep until copies finish instead of
 * polling; fn runs on a driver thread and must not call the driver.  A copy
 * counts as done for rw_stage_poll before its fn runs, so a thread fn wakes
 * always finds it.  A copy's event completes only after its fn has run, so
 * once rw_stage_stream_destroy returned 0 no fn is running (on a timeout
 * the stream's memory is kept, since a late fn may still use it).
 * Returns 0, or RAILWIRE_E_UNSUPPORTED when the driver lacks
 * cuLaunchHostFunc (CUDA < 10: poll instead). */
int rw_stage_stream_notify(struct rw_stage_stream *s, void (*fn)(void *), void *arg);

/* Copies queued and not yet reported by rw_stage_poll. */
unsigned rw_stage_inflight(const struct rw_stage_stream *s);

/* Waits up to timeout_ms for queued copies, then frees the stream.  Returns
 * 0, or RAILWIRE_E_TIMEOUT when copies were still running (they may still
 * touch their buffers: keep them) — the stream is freed either way.  NULL
 * is a no-op returning 0. */
int rw_stage_stream_destroy(struct rw_stage_stream *s, int timeout_ms);

#endif
