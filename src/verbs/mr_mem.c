/* SPDX-License-Identifier: MIT */
/* Registering memory descriptors (rw_transport_ops.mr_reg_mem): host memory
 * through the cached path of mr.c; CUDA memory as a DMA-BUF exported by the
 * driver (cuMemGetHandleForAddressRange + ibv_reg_dmabuf_mr), else as a
 * device pointer the kernel resolves through nvidia-peermem (ibv_reg_mr);
 * a caller's DMA-BUF straight through ibv_reg_dmabuf_mr.
 *
 * Device and DMA-BUF registrations are not cached: each call makes one
 * (struct rw_vmr.direct).  The exported DMA-BUF fd is closed once the
 * registration holds the buffer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "gpu/cuda_driver.h"
#include "verbs/status.h"
#include "verbs/verbs_int.h"

/* What to check when no path could register device memory. */
#define RW_VMR_GPU_HINT                                                                     \
    "check: DMA-BUF needs an NVIDIA driver of release 515 or later with its open kernel " \
    "modules (CUDA 11.7+), Linux 5.12+ and a NIC driver that imports DMA-BUFs; the "       \
    "peermem path needs the nvidia_peermem kernel module (`modprobe nvidia_peermem`); "    \
    "with the IOMMU in translating mode, peer-to-peer DMA between GPU and NIC may be "     \
    "refused (try iommu=pt)"

/* ibv_reg_dmabuf_mr at a chosen iova; like mr.c's host path, a device that
 * refuses the random iova gets the address itself. */
static struct ibv_mr *reg_dmabuf(struct rw_vdev *d, int fd, uint64_t off, size_t len,
                                 void *addr, int access, uint64_t *iova)
{
    int flags = rw_vmr_access(access);
    *iova = rw_vmr_pick_iova(addr, access);
    struct ibv_mr *mr = ibv_reg_dmabuf_mr(d->pd, off, len, *iova, fd, flags);
    if (mr || *iova == (uint64_t)(uintptr_t)addr || errno != EINVAL)
        return mr;
    *iova = (uint64_t)(uintptr_t)addr;
    return ibv_reg_dmabuf_mr(d->pd, off, len, *iova, fd, flags);
}

static void errno_text(char *out, size_t len, const char *call, int en)
{
    snprintf(out, len, "%s failed (errno %d, %s)", call, en, strerror(en));
}

/* CUDA memory: DMA-BUF first, then the device pointer.  On success *path
 * says which; on failure the error names both attempts. */
static struct ibv_mr *reg_cuda(struct rw_vdev *d, const struct rw_mem *mem, int access,
                               uint64_t *iova, int *path)
{
    char dmabuf_why[256], peer_why[160];
    int fd = -1;
    uint64_t off = 0;
    struct ibv_mr *mr = NULL;

    if (rw_cuda_use_device(mem->device)) {
        snprintf(dmabuf_why, sizeof(dmabuf_why), "no CUDA context on device %d", mem->device);
    } else if (rw_cuda_export_dmabuf(mem->addr, mem->len, &fd, &off, dmabuf_why,
                                     sizeof(dmabuf_why)) == 0) {
        mr = reg_dmabuf(d, fd, off, mem->len, mem->addr, access, iova);
        int en = errno;
        close(fd);
        if (mr) {
            *path = RW_MEM_PATH_DMABUF;
            return mr;
        }
        errno_text(dmabuf_why, sizeof(dmabuf_why), "ibv_reg_dmabuf_mr", en);
    }
    mr = rw_vmr_reg_at_iova(d, mem->addr, mem->len, access, iova);
    if (mr) {
        *path = RW_MEM_PATH_PEERMEM;
        rw_info("verbs: %s: CUDA memory %p+%zu (device %d) registered through nvidia-peermem; "
                "DMA-BUF was not used: %s", d->name, mem->addr, mem->len, mem->device,
                dmabuf_why);
        return mr;
    }
    errno_text(peer_why, sizeof(peer_why), "ibv_reg_mr on the device pointer", errno);
    rw_err("verbs: %s: cannot register CUDA memory %p+%zu (device %d): DMA-BUF: %s; "
           "nvidia-peermem: %s; " RW_VMR_GPU_HINT, d->name, mem->addr, mem->len, mem->device,
           dmabuf_why, peer_why);
    return NULL;
}

static struct ibv_mr *reg_caller_dmabuf(struct rw_vdev *d, const struct rw_mem *mem,
                                        int access, uint64_t *iova)
{
    struct ibv_mr *mr = reg_dmabuf(d, mem->dmabuf_fd, mem->dmabuf_offset, mem->len, mem->addr,
                                   access, iova);
    if (!mr) {
        int en = errno;
        rw_err("verbs: %s: ibv_reg_dmabuf_mr(fd %d, offset %llu, %zu bytes) failed (errno %d, "
               "%s): %s", d->name, mem->dmabuf_fd, (unsigned long long)mem->dmabuf_offset,
               mem->len, en, strerror(en),
               en == EOPNOTSUPP || en == ENOSYS || en == EPROTONOSUPPORT
                   ? "this device or its kernel driver cannot import DMA-BUFs (soft-RoCE and "
                     "older drivers cannot): use host memory, or a NIC driver with DMA-BUF "
                     "support (Linux 5.12+)"
                   : "check that the fd is a DMA-BUF and the range lies inside it");
    }
    return mr;
}

int rw_vmr_reg_mem(struct rw_domain *dom, const struct rw_mem *mem, int access,
                   struct rw_mr **out)
{
    struct rw_vdom *vd = rw_container_of(dom, struct rw_vdom, base);
    struct ibv_mr *mr = NULL;
    uint64_t iova = 0;
    int path = RW_MEM_PATH_HOST;

    if (mem->kind == RAILWIRE_MEM_HOST) {
        int rc = rw_vmr_reg(dom, mem->addr, mem->len, access, out);
        if (rc == 0)
            (*out)->mem_kind = RAILWIRE_MEM_HOST, (*out)->mem_path = RW_MEM_PATH_HOST;
        return rc;
    }
    if (!mem->addr || mem->len == 0) {
        rw_err("verbs: %s: cannot register an empty region", dom->name);
        return RAILWIRE_E_INVALID;
    }
    struct rw_vmr *m = calloc(1, sizeof(*m));
    if (!m)
        return RAILWIRE_E_NOMEM;
    if (mem->kind == RAILWIRE_MEM_CUDA) {
        mr = reg_cuda(vd->dev, mem, access, &iova, &path);
    } else if (mem->kind == RAILWIRE_MEM_DMABUF) {
        mr = reg_caller_dmabuf(vd->dev, mem, access, &iova);
        path = RW_MEM_PATH_DMABUF;
    } else {
        rw_err("verbs: %s: unknown memory kind %u", dom->name, mem->kind);
    }
    if (!mr) {
        free(m);
        return mem->kind > RAILWIRE_MEM_DMABUF ? RAILWIRE_E_INVALID : RAILWIRE_E_VERBS;
    }
    rw_vdev_ref(vd->dev);
    m->dev = vd->dev;
    m->direct = mr;
    m->base = (struct rw_mr){.dom = dom, .addr = mem->addr, .len = mem->len, .access = access,
                             .lkey = mr->lkey, .rkey = mr->rkey, .remote_base = iova,
                             .mem_kind = (uint8_t)mem->kind, .mem_path = (uint8_t)path};
    char where[32] = "";
    if (mem->kind == RAILWIRE_MEM_CUDA)
        snprintf(where, sizeof(where), " on CUDA device %d", mem->device);
    rw_info("verbs: %s: registered %zu bytes of %s memory%s (mem kind %s, path %s)", dom->name,
            mem->len, rw_mem_kind_name((int)mem->kind), where, rw_mem_kind_name((int)mem->kind),
            rw_mem_path_name(path));
    *out = &m->base;
    return 0;
}
