/* SPDX-License-Identifier: MIT */
/* Where a registered memory lives, and where the calling thread is, for
 * near=auto (topology.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/* 1 when this process has the CUDA driver library mapped already (loaded
 * by railwire or by the application), without loading it. */
static int driver_in_process(void)
{
    if (rw_cuda_loaded())
        return 1;
    const char *env = getenv(RW_CUDA_LIBRARY_ENV);
    void *h = dlopen(env && *env ? env : RW_CUDA_LIBRARY_DEFAULT, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return 0;
    dlclose(h);
    return 1;
}

/* The device of the context current on this thread: 0 and *dev, or -1. */
static int current_cuda_device(int *dev)
{
    const struct rw_cuda *cu;
    if (!driver_in_process() || rw_cuda_get(&cu) < 0 || !cu->CtxGetDevice)
        return -1;
    CUcontext ctx = NULL;
    CUdevice d = -1;
    if (cu->CtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx || cu->CtxGetDevice(&d) != CUDA_SUCCESS ||
        d < 0)
        return -1;
    *dev = d;
    return 0;
}

void rw_near_auto_now(struct rw_near *out, const char **why)
{
    memset(out, 0, sizeof(*out));
    int dev;
    if (current_cuda_device(&dev) == 0) {
        out->kind = RW_NEAR_CUDA;
        out->index = dev;
        if (rw_cuda_pci_busid(dev, out->busid, sizeof(out->busid)) < 0)
            out->busid[0] = '\0';
        *why = "the CUDA context current on the connecting thread";
        return;
    }
#ifdef SYS_getcpu
    unsigned cpu = 0, node = 0;
    if (syscall(SYS_getcpu, &cpu, &node, NULL) == 0) {
        out->kind = RW_NEAR_NUMA;
        out->index = (int)node;
        *why = "the NUMA node of the CPU running the connecting thread (no CUDA context is "
               "current on it)";
        return;
    }
#endif
    *why = "nothing (no CUDA context is current and the CPU's NUMA node is unknown)";
}

int rw_near_same(const struct rw_near *a, const struct rw_near *b)
{
    if (a->kind != b->kind)
        return 0;
    if (a->kind == RW_NEAR_CUDA && a->busid[0] && b->busid[0])
        return !strcasecmp(a->busid, b->busid);
    return a->kind == RW_NEAR_NONE || a->kind == RW_NEAR_AUTO || a->index == b->index;
}

const char *rw_near_str(const struct rw_near *n, char *buf, size_t len)
{
    switch (n->kind) {
    case RW_NEAR_CUDA: snprintf(buf, len, "cuda:%d", n->index); break;
    case RW_NEAR_NUMA: snprintf(buf, len, "numa:%d", n->index); break;
    case RW_NEAR_AUTO: snprintf(buf, len, "auto"); break;
    default: snprintf(buf, len, "none"); break;
    }
    return buf;
}
