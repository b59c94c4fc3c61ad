/* SPDX-License-Identifier: MIT */
/* Memory descriptors on the verbs transport (rw_transport_ops.mr_reg_mem),
 * on a real device (soft-RoCE in the CI VM; every test skips without one):
 *   - a udmabuf (/dev/udmabuf over a memfd) registered as RAILWIRE_MEM_DMABUF
 *     carries WRITE and READ; where the device refuses DMA-BUFs (rxe may),
 *     the error says so and what to use instead;
 *   - CUDA memory of the stand-in driver goes through DMA-BUF when the device
 *     takes it, else falls back to the device pointer (the stand-in maps its
 *     memory CPU-readable here, as nvidia-peermem lets the NIC reach HBM);
 *   - with neither path, the error names both attempts and what to check. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <railwire/error.h>

#include "../gpu/gtest.h"
#include "gpu/cuda_driver.h"
#include "verbs/verbs.h"
#include "vtest.h"

#define LEN (1u << 20)

TestSuite(verbs_mem, .init = vt_require_devices, .timeout = 120);

/* A udmabuf of len bytes over a sealed memfd, mapped at *map.  Returns the
 * DMA-BUF fd, or -1 (skip) when /dev/udmabuf is absent. */
static int make_udmabuf(size_t len, int *memfd, void **map)
{
    int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
    if (dev < 0)
        return -1;
    *memfd = memfd_create("verbs-mem-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    cr_assert_geq(*memfd, 0);
    cr_assert_eq(ftruncate(*memfd, (off_t)len), 0);
    cr_assert_eq(fcntl(*memfd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
    struct udmabuf_create c = {.memfd = (uint32_t)*memfd, .flags = UDMABUF_FLAGS_CLOEXEC,
                               .offset = 0, .size = len};
    int fd = ioctl(dev, UDMABUF_CREATE, &c);
    close(dev);
    cr_assert_geq(fd, 0, "UDMABUF_CREATE failed");
    *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, *memfd, 0);
    cr_assert_neq(*map, MAP_FAILED);
    return fd;
}

/* Posts one op of len bytes between client buffer `local` (in cmr) and the
 * start of smr, and waits for it. */
static void one_op(struct vt_rail *r, enum rw_opcode op, void *local, struct rw_mr *cmr,
                   struct rw_mr *smr, size_t len)
{
    struct rw_wr wr = {.wr_id = 1, .opcode = op, .local = local, .mr = cmr,
                       .length = (uint32_t)len, .remote_addr = smr->remote_base,
                       .rkey = smr->rkey, .signaled = 1};
    struct rw_wc wc;
    cr_assert_eq(rw_verbs_ops.ep_post(r->cep, &wr, 1), 1);
    cr_assert_eq(vt_collect(r->cep, &wc, 1, 30000), 1);
    cr_assert_eq(wc.status, 0, "%s: %s", op == RW_OP_READ ? "READ" : "WRITE",
                 railwire_strerror(wc.status));
}

Test(verbs_mem, udmabuf_registers_or_is_refused_clearly)
{
    int memfd;
    void *map;
    int fd = make_udmabuf(LEN, &memfd, &map);
    if (fd < 0)
        cr_skip("no /dev/udmabuf in this kernel");
    struct vt_rail r;
    cr_assert_eq(vt_rail_up(0, 8, &r), 0);
    struct rw_mem m = {.kind = RAILWIRE_MEM_DMABUF, .addr = map, .len = LEN, .dmabuf_fd = fd,
                       .dmabuf_offset = 0, .device = -1};
    struct rw_mr *smr = NULL, *cmr = NULL;
    gt_log_capture();
    int rc = rw_verbs_ops.mr_reg_mem(r.sd, &m, RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE,
                                     &smr);
    if (rc) {
        cr_assert_eq(rc, RAILWIRE_E_VERBS);
        cr_assert(gt_log_has("ibv_reg_dmabuf_mr(fd"), "%s", gt_log_text());
        cr_assert(gt_log_has("cannot import DMA-BUFs") || gt_log_has("check that the fd"),
                  "%s", gt_log_text());
        cr_log_info("the device refused the DMA-BUF: %s", gt_log_text());
    } else {
        cr_assert_eq(smr->mem_kind, RAILWIRE_MEM_DMABUF);
        cr_assert_eq(smr->mem_path, RW_MEM_PATH_DMABUF);
        unsigned char *client = malloc(LEN), *want = malloc(LEN);
        cr_assert_eq(rw_verbs_ops.mr_reg(r.cd, client, LEN, RW_ACCESS_LOCAL, &cmr), 0);
        vt_pattern(want, LEN, 31);
        memcpy(client, want, LEN);
        one_op(&r, RW_OP_WRITE, client, cmr, smr, LEN);
        cr_assert(memcmp(map, want, LEN) == 0, "WRITE into the DMA-BUF: bytes differ");
        vt_pattern(map, LEN, 32);
        one_op(&r, RW_OP_READ, client, cmr, smr, LEN);
        cr_assert(memcmp(client, map, LEN) == 0, "READ from the DMA-BUF: bytes differ");
        rw_verbs_ops.mr_dereg(cmr);
        rw_verbs_ops.mr_dereg(smr);
        free(client);
        free(want);
    }
    vt_rail_down(&r);
    munmap(map, LEN);
    close(fd);
    close(memfd);
}

/* A file that is not a DMA-BUF: devices that cannot import DMA-BUFs (rxe)
 * refuse before looking at it, the others refuse the fd; either way the
 * error says which, and what to do. */
Test(verbs_mem, dmabuf_refusal_is_clear)
{
    int fd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, LEN), 0);
    static char addr[64];
    struct vt_rail r;
    cr_assert_eq(vt_rail_up(0, 8, &r), 0);
    struct rw_mem m = {.kind = RAILWIRE_MEM_DMABUF, .addr = addr, .len = 4096, .dmabuf_fd = fd,
                       .dmabuf_offset = 0, .device = -1};
    struct rw_mr *smr = NULL;
    gt_log_capture();
    int rc = rw_verbs_ops.mr_reg_mem(r.sd, &m, RW_ACCESS_REMOTE_READ, &smr);
    cr_assert_eq(rc, RAILWIRE_E_VERBS);
    cr_assert_null(smr);
    cr_assert(gt_log_has("ibv_reg_dmabuf_mr(fd"), "%s", gt_log_text());
    cr_assert(gt_log_has("cannot import DMA-BUFs") || gt_log_has("check that the fd is a DMA-BUF"),
              "%s", gt_log_text());
    cr_log_info("%s", gt_log_text());
    vt_rail_down(&r);
    close(fd);
}

/* Stand-in device memory on device 0, described and checked. */
static void cuda_mem(struct rw_mem *out, const struct rw_cuda **cu)
{
    CUdeviceptr p;
    railwire_mem m;
    gt_use_standin();
    cr_assert_eq(rw_cuda_get(cu), 0);
    cr_assert_eq(rw_cuda_use_device(0), 0);
    cr_assert_eq((*cu)->MemAlloc(&p, LEN), CUDA_SUCCESS);
    railwire_mem_init(&m);
    m.kind = RAILWIRE_MEM_CUDA;
    m.addr = (void *)(uintptr_t)p;
    m.len = LEN;
    cr_assert_eq(rw_mem_normalise(&m, out), 0);
}

Test(verbs_mem, cuda_memory_through_dmabuf_or_the_peermem_fallback)
{
    setenv("RAILWIRE_STANDIN_DEVMEM", "rw", 1);
    setenv("RAILWIRE_STANDIN_DMABUF", "udmabuf", 1);
    const struct rw_cuda *cu;
    struct rw_mem m;
    struct vt_rail r;
    struct rw_mr *smr = NULL, *cmr = NULL;
    cuda_mem(&m, &cu);
    cr_assert_eq(vt_rail_up(0, 8, &r), 0);
    gt_log_capture();
    int rc = rw_verbs_ops.mr_reg_mem(r.sd, &m, RW_ACCESS_REMOTE_READ | RW_ACCESS_REMOTE_WRITE,
                                     &smr);
    cr_assert_eq(rc, 0, "%s", gt_log_text());
    cr_assert_eq(smr->mem_kind, RAILWIRE_MEM_CUDA);
    cr_assert(smr->mem_path == RW_MEM_PATH_DMABUF || smr->mem_path == RW_MEM_PATH_PEERMEM);
    if (smr->mem_path == RW_MEM_PATH_PEERMEM)
        cr_assert(gt_log_has("DMA-BUF was not used: "), "%s", gt_log_text());
    cr_log_info("CUDA memory path: %s", rw_mem_path_name(smr->mem_path));
    unsigned char *client = malloc(LEN), *want = malloc(LEN), *back = malloc(LEN);
    cr_assert_eq(rw_verbs_ops.mr_reg(r.cd, client, LEN, RW_ACCESS_LOCAL, &cmr), 0);
    vt_pattern(want, LEN, 41);
    cr_assert_eq(cu->MemcpyHtoDAsync((CUdeviceptr)(uintptr_t)m.addr, want, LEN, NULL), 0);
    one_op(&r, RW_OP_READ, client, cmr, smr, LEN);
    cr_assert(memcmp(client, want, LEN) == 0, "READ from CUDA memory: bytes differ");
    vt_pattern(client, LEN, 42);
    one_op(&r, RW_OP_WRITE, client, cmr, smr, LEN);
    cr_assert_eq(cu->MemcpyDtoHAsync(back, (CUdeviceptr)(uintptr_t)m.addr, LEN, NULL), 0);
    cr_assert(memcmp(back, client, LEN) == 0, "WRITE into CUDA memory: bytes differ");
    rw_verbs_ops.mr_dereg(cmr);
    rw_verbs_ops.mr_dereg(smr);
    vt_rail_down(&r);
    free(client);
    free(want);
    free(back);
}

Test(verbs_mem, cuda_memory_with_neither_path_names_both)
{
    const struct rw_cuda *cu;
    struct rw_mem m;
    struct vt_rail r;
    struct rw_mr *smr = NULL;
    cuda_mem(&m, &cu); /* PROT_NONE device memory, no DMA-BUF export */
    cr_assert_eq(vt_rail_up(0, 8, &r), 0);
    gt_log_capture();
    int rc = rw_verbs_ops.mr_reg_mem(r.sd, &m, RW_ACCESS_REMOTE_READ, &smr);
    cr_assert_eq(rc, RAILWIRE_E_VERBS);
    cr_assert_null(smr);
    static const char *const says[] = {
        "cannot register CUDA memory",
        "DMA-BUF: cuMemGetHandleForAddressRange(DMA_BUF_FD) failed: CUDA_ERROR_NOT_SUPPORTED",
        "nvidia-peermem: ibv_reg_mr on the device pointer failed",
        "nvidia_peermem", "515", "IOMMU"};
    for (size_t i = 0; i < sizeof(says) / sizeof(says[0]); i++)
        cr_assert(gt_log_has(says[i]), "missing '%s' in:\n%s", says[i], gt_log_text());
    vt_rail_down(&r);
}
