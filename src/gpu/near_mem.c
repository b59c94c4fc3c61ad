/* SPDX-License-Identifier: MIT */
/* Where a registered memory lives, for near=auto (topology.h). */
#include <string.h>

#include <railwire/mem.h>

#include "gpu/cuda_driver.h"
#include "gpu/mem_desc.h"
#include "gpu/near_mem.h"
#include "gpu/topology.h"

int rw_near_from_mem(const struct rw_mem *m, struct rw_near *out)
{
    memset(out, 0, sizeof(*out));
    if (m->kind == RAILWIRE_MEM_CUDA) {
        out->kind = RW_NEAR_CUDA;
        out->index = m->device;
        /* The bus id finds the GPU in the topology whatever CUDA's order. */
        return rw_cuda_pci_busid(m->device, out->busid, sizeof(out->busid));
    }
    if (m->kind == RAILWIRE_MEM_HOST) {
        int node = rw_topo_host_numa(m->addr);
        if (node >= 0) {
            out->kind = RW_NEAR_NUMA;
            out->index = node;
        }
    }
    return 0;
}
