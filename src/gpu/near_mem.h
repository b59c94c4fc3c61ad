/* SPDX-License-Identifier: MIT */
/* near=auto: what the first registered memory is near, and what the
 * calling thread is near when a railset connects. */
#ifndef RW_GPU_NEAR_MEM_H
#define RW_GPU_NEAR_MEM_H

#include "gpu/mem_desc.h"
#include "gpu/topology.h"

/* Fills *out from a checked descriptor: CUDA memory gives RW_NEAR_CUDA with
 * the device ordinal and its PCI bus id (from the driver); host memory gives
 * RW_NEAR_NUMA with the node of its first page when the kernel says (the
 * page must have been touched), else RW_NEAR_NONE; a DMA-BUF gives
 * RW_NEAR_NONE.  Returns 0, or the driver's error (logged).  Pass the result
 * as rw_topo_order_nics' first_mem. */
int rw_near_from_mem(const struct rw_mem *m, struct rw_near *out);

/* near=auto at connect (docs/gpu.md): the device of the CUDA context
 * current on the calling thread (RW_NEAR_CUDA with its bus id) when the
 * process has already loaded the CUDA driver (it is never loaded for
 * this), else the NUMA node of the CPU the thread runs on (RW_NEAR_NUMA),
 * else RW_NEAR_NONE.  *why says where the answer came from (a static
 * string).  Never fails. */
void rw_near_auto_now(struct rw_near *out, const char **why);

/* 1 when a and b name the same place (same kind, and the same GPU or NUMA
 * node), else 0. */
int rw_near_same(const struct rw_near *a, const struct rw_near *b);

/* "cuda:N", "numa:N", "auto" or "none" into buf; returns buf. */
const char *rw_near_str(const struct rw_near *n, char *buf, size_t len);

#endif
