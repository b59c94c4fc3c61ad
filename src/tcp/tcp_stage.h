/* SPDX-License-Identifier: MIT */
/* CUDA memory on the tcp client (path "staged", docs/gpu.md): the CPU never
 * touches device memory.  A staged registration only records the device
 * range and the railset's bounded pinned pool.  Posting a WR on it takes a
 * pool chunk (when the pool is full: back-pressure, nothing more is
 * allocated: the WR is not taken, as when the ep's queue is full, and the
 * railset posts it again once completions return chunks) and posts the WR
 * on the chunk instead.  Copies are asynchronous, on one CUDA stream per ep
 * (rail):
 * - WRITE: the batch's copies device -> chunk are all queued first; each WR
 *   goes on the wire as soon as its own copy is done, while the later
 *   copies still run.
 * - READ: when the payload has landed in the chunk (its completion is
 *   polled), the copy chunk -> device is queued and the completion held;
 *   it is reported by a later poll once that copy is done (an event query,
 *   never a CPU read of device memory).  Meanwhile the rail receives the
 *   next payloads.  The stream wakes the ep's wait fd after each copy
 *   (cuLaunchHostFunc). */
#ifndef RW_TCP_STAGE_H
#define RW_TCP_STAGE_H

#include "tcp/tcp_internal.h"

struct rw_mem;

/* ops->mr_reg_mem for tcp: HOST as rw_tcp_mr_reg; CUDA staged through
 * mem->stage_pool (which must be set); DMABUF refused (UNSUPPORTED). */
int rw_tcp_mr_reg_mem(struct rw_domain *dom, const struct rw_mem *mem, int access,
                      struct rw_mr **out);

/* A staged registration's pool (struct rw_stage_pool) and CUDA device into
 * *pool / *device; leaves them alone for any other registration. */
void rw_tcp_stage_mr_info(const struct rw_mr *mr, void **pool, int *device);

/* 1 if any of the n WRs uses a staged registration. */
int rw_tcp_stage_any(const struct rw_wr *wrs, size_t n);

/* ep_post for a batch holding staged WRs: posts them one at a time,
 * staging each.  Returns how many were posted (>= 0: fewer than n when the
 * ep's queue or the staging pool is full) or, when none was, the error. */
int rw_tcp_stage_post(struct rw_tcp_cli_ep *ep, const struct rw_wr *wrs, size_t n);

/* After rw_tcp_cli_ep_poll returned n completions into wcs (room for
 * max): finishes the staged ones (a READ's copy to the device is queued
 * and its completion held), then appends the held READ completions whose
 * copies are done (a failed copy turns the status into the driver's
 * error), up to max; returns the completions now in wcs.  Staged WRs
 * reported here give their chunks back to the pool.  Call it also when
 * the ep had nothing (n 0). */
int rw_tcp_stage_polled(struct rw_tcp_cli_ep *ep, struct rw_wc *wcs, int n, int max);

/* 1 when the ep's waiter must not sleep on its wait fd: READ completions
 * are held for copies and nothing will wake the fd when they finish (a
 * driver without cuLaunchHostFunc, or a failed stream). */
int rw_tcp_stage_busy(struct rw_tcp_cli_ep *ep);

/* After the ep was killed: waits (bounded) for its copies, then drops every
 * staged WR and gives the chunks back; the railset carries those WRs on
 * other rails.  Once it returns nothing touches their device memory. */
void rw_tcp_stage_kill(struct rw_tcp_cli_ep *ep);

/* Frees the ep's staging state: waits (bounded) for its copies, then every
 * chunk goes back to its pool. */
void rw_tcp_stage_ep_free(struct rw_tcp_cli_ep *ep);

#endif
