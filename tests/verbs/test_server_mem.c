/* SPDX-License-Identifier: MIT */
/* A verbs server publishing CUDA memory of the stand-in driver (tests/gpu)
 * through the public API: its arena goes through DMA-BUF or the peermem
 * fallback (stand-in device memory left CPU-mapped, standing in for
 * nvidia-peermem) and carries a client's READ and WRITE, counted by path in
 * the server's stats; with neither path, create fails naming both. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <railwire.h>

#include "../gpu/gtest.h"
#include "gpu/cuda_driver.h"
#include "vtest.h"

TestSuite(verbs_server_mem, .init = vt_require_devices, .timeout = 300);

#define LEN (2u << 20)

/* Opts of a RW verbs server on every B device, its arena CUDA memory d. */
static void cuda_server_opts(railwire_server_opts *so, railwire_mem *am, CUdeviceptr d,
                             char devs[][64], const char **ptrs)
{
    size_t nb = vt_devs('B', devs, 8);
    for (size_t i = 0; i < nb; i++)
        ptrs[i] = devs[i];
    railwire_mem_init(am);
    am->kind = RAILWIRE_MEM_CUDA;
    am->addr = (void *)(uintptr_t)d;
    am->len = LEN;
    railwire_server_opts_init(so);
    so->dialect = RAILWIRE_DIALECT_RW;
    so->transport = RAILWIRE_TRANSPORT_VERBS;
    so->listen_host = "127.0.0.1";
    so->devices = ptrs;
    so->n_devices = (unsigned)nb;
    so->gid_index = vt_gid_index();
    so->arena_mem = am;
}

static CUdeviceptr device_alloc(const struct rw_cuda **cu)
{
    CUdeviceptr d;
    gt_use_standin();
    cr_assert_eq(rw_cuda_get(cu), 0);
    cr_assert_eq(rw_cuda_use_device(0), 0);
    cr_assert_eq((*cu)->MemAlloc(&d, LEN), CUDA_SUCCESS);
    return d;
}

Test(verbs_server_mem, cuda_arena_through_dmabuf_or_peermem)
{
    setenv("RAILWIRE_STANDIN_DEVMEM", "rw", 1);
    setenv("RAILWIRE_STANDIN_DMABUF", "udmabuf", 1);
    const struct rw_cuda *cu;
    CUdeviceptr d = device_alloc(&cu);
    unsigned char *want = malloc(LEN), *buf = malloc(LEN);
    cr_assert(want && buf);
    vt_pattern(want, LEN, 51);
    cr_assert_eq(cu->MemcpyHtoDAsync(d, want, LEN, NULL), 0);
    char devs[8][64], adevs[8][64];
    const char *ptrs[8], *aptrs[8];
    railwire_server_opts so;
    railwire_mem am;
    cuda_server_opts(&so, &am, d, devs, ptrs);
    railwire_server *srv;
    gt_log_capture();
    int rc = railwire_server_create(&so, &srv);
    cr_assert_eq(rc, 0, "%s", gt_log_text());
    cr_assert(gt_log_has("bytes of cuda memory on ") &&
              (gt_log_has("path dmabuf") || gt_log_has("path peermem")), "%s", gt_log_text());
    struct railwire_server_stats st;
    cr_assert_eq(railwire_server_stats(srv, &st, sizeof(st)), 0);
    cr_assert_eq(st.regs_dmabuf + st.regs_peermem, so.n_devices);
    cr_assert_eq(st.regs_host + st.regs_staged, 0);
    cr_assert_eq(st.staging_bound, 0, "verbs stages nothing: no pool is kept");
    cr_log_info("server CUDA arena: %llu dmabuf, %llu peermem",
                (unsigned long long)st.regs_dmabuf, (unsigned long long)st.regs_peermem);
    char port[16];
    snprintf(port, sizeof(port), "%u", railwire_server_port(srv));
    size_t na = vt_devs('A', adevs, 8);
    for (size_t i = 0; i < na; i++)
        aptrs[i] = adevs[i];
    railwire_railset_opts ro;
    railwire_railset_opts_init(&ro);
    ro.dialect = RAILWIRE_DIALECT_RW;
    ro.transport = RAILWIRE_TRANSPORT_VERBS;
    ro.n_rails = (unsigned)na;
    ro.devices = aptrs;
    ro.n_devices = (unsigned)na;
    ro.gid_index = vt_gid_index();
    railwire_railset *rs;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", port, &ro, &rs), 0);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, LEN, &mr), 0);
    cr_assert_eq(railwire_read(rs, mr, buf, LEN, 0, 0, 10000), 0);
    cr_assert(memcmp(buf, want, LEN) == 0, "READ of a CUDA arena on verbs differs");
    vt_pattern(buf, LEN, 52);
    cr_assert_eq(railwire_write(rs, mr, buf, LEN, 0, 0, 10000), 0);
    cr_assert_eq(cu->MemcpyDtoHAsync(want, d, LEN, NULL), 0);
    cr_assert(memcmp(buf, want, LEN) == 0, "WRITE into a CUDA arena on verbs differs");
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    railwire_railset_close(rs);
    railwire_server_destroy(srv);
    cu->MemFree(d);
    free(want);
    free(buf);
}

Test(verbs_server_mem, cuda_arena_with_neither_path_names_both)
{
    const struct rw_cuda *cu;
    CUdeviceptr d = device_alloc(&cu); /* PROT_NONE device memory, no DMA-BUF export */
    char devs[8][64];
    const char *ptrs[8];
    railwire_server_opts so;
    railwire_mem am;
    cuda_server_opts(&so, &am, d, devs, ptrs);
    railwire_server *srv = NULL;
    gt_log_capture();
    cr_assert_eq(railwire_server_create(&so, &srv), RAILWIRE_E_VERBS, "%s", gt_log_text());
    cr_assert_null(srv);
    static const char *const says[] = {
        "cannot register CUDA memory", "DMA-BUF: cuMemGetHandleForAddressRange",
        "nvidia-peermem: ibv_reg_mr on the device pointer failed", "registering arena 0"};
    for (size_t i = 0; i < sizeof(says) / sizeof(says[0]); i++)
        cr_assert(gt_log_has(says[i]), "missing '%s' in:\n%s", says[i], gt_log_text());
    cu->MemFree(d);
}
