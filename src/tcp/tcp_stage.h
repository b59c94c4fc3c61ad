/* SPDX-License-Identifier: MIT */
/* CUDA memory on the tcp client (path "staged", docs/gpu.md): the CPU never
 * touches device memory.  A staged registration only records the device
 * range and the railset's bounded pinned pool.  Posting a WR on it takes a
 * pool chunk (when the pool is full: back-pressure, nothing more
 * is allocated: the WR is not taken, as when the ep's queue is full, and
 * the railset posts it again once completions return chunks) and posts the WR on the chunk instead: a WRITE first copies
 * the payload device -> chunk on the ep's stream; a READ's payload lands in
 * the chunk and is copied chunk -> device when its completion is polled,
 * before the completion is reported.  One CUDA stream per ep (rail). */
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

/* After rw_tcp_cli_ep_poll returned n completions into wcs: finishes the
 * staged ones (READ: copies the chunk to the device; a failed copy turns
 * the completion's status into the driver's error) and returns their
 * chunks to the pool. */
void rw_tcp_stage_polled(struct rw_tcp_cli_ep *ep, struct rw_wc *wcs, int n);

/* Frees the ep's staging state (every chunk back to its pool). */
void rw_tcp_stage_ep_free(struct rw_tcp_cli_ep *ep);

#endif
