/* SPDX-License-Identifier: MIT */
/* near=auto: what the first registered memory is near. */
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

#endif
