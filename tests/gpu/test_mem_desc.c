/* SPDX-License-Identifier: MIT */
/* Memory descriptors (src/gpu/mem_desc.c): sizes, kinds, field checks,
 * the device found from a CUDA pointer (stand-in driver), and host memory
 * never loading the driver. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <railwire/error.h>
#include <railwire/mem.h>

#include "gpu/cuda_driver.h"
#include "gpu/mem_desc.h"
#include "gtest.h"

TestSuite(gpu_mem_desc, .timeout = 60);

Test(gpu_mem_desc, init_sets_size_and_defaults)
{
    railwire_mem m;
    memset(&m, 0x5a, sizeof(m));
    railwire_mem_init(&m);
    cr_assert_eq(m.struct_size, sizeof(m));
    cr_assert_eq(m.kind, RAILWIRE_MEM_HOST);
    cr_assert_eq(m.dmabuf_fd, -1);
    cr_assert_eq(m.device, -1);
    cr_assert_null(m.addr);
    cr_assert_eq(m.len, 0);
}

Test(gpu_mem_desc, host_memory_never_loads_the_driver)
{
    char buf[256];
    railwire_mem m;
    struct rw_mem out;
    gt_use_standin();
    railwire_mem_init(&m);
    m.addr = buf;
    m.len = sizeof(buf);
    cr_assert_eq(rw_mem_normalise(&m, &out), 0);
    cr_assert_eq(out.kind, RAILWIRE_MEM_HOST);
    cr_assert_eq(out.addr, buf);
    cr_assert_eq(out.len, sizeof(buf));
    cr_assert_eq(out.device, -1);
    cr_assert_eq(rw_cuda_loaded(), 0);
}

/* An old caller whose struct ends at len: the rest takes the defaults. */
Test(gpu_mem_desc, short_struct_reads_only_its_size)
{
    char buf[64];
    size_t sz = offsetof(railwire_mem, len) + sizeof(size_t);
    railwire_mem full;
    struct rw_mem out;
    railwire_mem_init(&full);
    full.struct_size = (uint32_t)sz;
    full.dmabuf_fd = 5;  /* past sz: must not be read */
    full.device = 3;
    full.addr = buf;
    full.len = sizeof(buf);
    /* exactly sz bytes on the heap: ASan catches reading more */
    unsigned char *m = malloc(sz);
    cr_assert_not_null(m);
    memcpy(m, &full, sz);
    cr_assert_eq(rw_mem_normalise((const railwire_mem *)(void *)m, &out), 0);
    cr_assert_eq(out.addr, buf);
    cr_assert_eq(out.dmabuf_fd, -1);
    cr_assert_eq(out.device, -1);
    uint32_t small = (uint32_t)(sz - 1);
    memcpy(m, &small, sizeof(small));
    gt_log_capture();
    cr_assert_eq(rw_mem_normalise((const railwire_mem *)(void *)m, &out), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("railwire_mem_init"), "%s", gt_log_text());
    free(m);
}

Test(gpu_mem_desc, longer_struct_from_a_newer_caller)
{
    char buf[64];
    struct {
        railwire_mem m;
        uint64_t future;
    } big;
    struct rw_mem out;
    memset(&big, 0, sizeof(big));
    railwire_mem_init(&big.m);
    big.m.struct_size = sizeof(big);
    big.m.addr = buf;
    big.m.len = sizeof(buf);
    cr_assert_eq(rw_mem_normalise(&big.m, &out), 0, "zero tail: accepted");
    big.future = 1;
    gt_log_capture();
    cr_assert_eq(rw_mem_normalise(&big.m, &out), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("newer railwire"), "%s", gt_log_text());
}

Test(gpu_mem_desc, bad_fields_are_refused_with_reasons)
{
    char buf[64];
    railwire_mem m;
    struct rw_mem out;
    static const struct {
        uint32_t kind;
        int null_addr;
        size_t len;
        int device;
        const char *says;
    } cases[] = {
        {7, 0, 64, -1, "unknown kind 7"},
        {RAILWIRE_MEM_HOST, 1, 64, -1, "addr is NULL"},
        {RAILWIRE_MEM_HOST, 0, 0, -1, "len is 0"},
        {RAILWIRE_MEM_HOST, 0, SIZE_MAX, -1, "overflows"},
        {RAILWIRE_MEM_HOST, 0, 64, 0, "names a CUDA device"},
        {RAILWIRE_MEM_DMABUF, 0, 64, -1, "not an open file descriptor"},
    };
    cr_assert_eq(rw_mem_normalise(NULL, &out), RAILWIRE_E_INVALID);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        railwire_mem_init(&m);
        m.kind = cases[i].kind;
        m.addr = cases[i].null_addr ? NULL : buf;
        m.len = cases[i].len;
        m.device = cases[i].device;
        gt_log_capture();
        cr_assert_eq(rw_mem_normalise(&m, &out), RAILWIRE_E_INVALID, "case %zu", i);
        cr_assert(gt_log_has(cases[i].says), "case %zu: %s", i, gt_log_text());
    }
    cr_assert_eq(rw_cuda_loaded(), 0);
}

Test(gpu_mem_desc, dmabuf_range_checked_against_the_buffer)
{
    char buf[64];
    railwire_mem m;
    struct rw_mem out;
    int fd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, 8192), 0);
    railwire_mem_init(&m);
    m.kind = RAILWIRE_MEM_DMABUF;
    m.addr = buf;
    m.len = 4096;
    m.dmabuf_fd = fd;
    m.dmabuf_offset = 4096;
    cr_assert_eq(rw_mem_normalise(&m, &out), 0);
    cr_assert_eq(out.dmabuf_fd, fd);
    cr_assert_eq(out.dmabuf_offset, 4096);
    m.dmabuf_offset = 4097;
    gt_log_capture();
    cr_assert_eq(rw_mem_normalise(&m, &out), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("runs past the buffer's end"), "%s", gt_log_text());
    close(fd);
}

/* Device memory from the stand-in, on device `ord`. */
static void *dev_alloc(int ord, size_t len)
{
    const struct rw_cuda *cu;
    CUdeviceptr p = 0;
    cr_assert_eq(rw_cuda_get(&cu), 0);
    cr_assert_eq(rw_cuda_use_device(ord), 0);
    cr_assert_eq(cu->MemAlloc(&p, len), CUDA_SUCCESS);
    return (void *)(uintptr_t)p;
}

Test(gpu_mem_desc, cuda_device_found_from_the_pointer)
{
    gt_use_standin();
    gt_log_capture();
    unsigned char *d = dev_alloc(1, 1 << 20);
    railwire_mem m;
    struct rw_mem out;
    railwire_mem_init(&m);
    m.kind = RAILWIRE_MEM_CUDA;
    m.addr = d + 4096;
    m.len = 8192;
    cr_assert_eq(rw_mem_normalise(&m, &out), 0, "%s", gt_log_text());
    cr_assert_eq(out.kind, RAILWIRE_MEM_CUDA);
    cr_assert_eq(out.device, 1);
    m.device = 1;
    cr_assert_eq(rw_mem_normalise(&m, &out), 0);
    m.device = 0;
    cr_assert_eq(rw_mem_normalise(&m, &out), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("lives on CUDA device 1"), "%s", gt_log_text());
    m.device = -1;
    m.len = 1 << 20;
    cr_assert_eq(rw_mem_normalise(&m, &out), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("runs past the end of its CUDA allocation"), "%s", gt_log_text());
}

Test(gpu_mem_desc, cuda_kind_on_host_memory)
{
    char buf[64];
    railwire_mem m;
    struct rw_mem out;
    gt_use_standin();
    gt_log_capture();
    railwire_mem_init(&m);
    m.kind = RAILWIRE_MEM_CUDA;
    m.addr = buf;
    m.len = sizeof(buf);
    cr_assert_eq(rw_mem_normalise(&m, &out), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("not CUDA device memory"), "%s", gt_log_text());
    cr_assert(gt_log_has("RAILWIRE_MEM_HOST"), "%s", gt_log_text());
}

Test(gpu_mem_desc, cuda_kind_without_a_driver)
{
    char buf[64];
    railwire_mem m;
    struct rw_mem out;
    setenv("RAILWIRE_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    gt_log_capture();
    railwire_mem_init(&m);
    m.kind = RAILWIRE_MEM_CUDA;
    m.addr = buf;
    m.len = sizeof(buf);
    cr_assert_eq(rw_mem_normalise(&m, &out), RW_E_CUDA_MISSING);
    cr_assert(gt_log_has("no CUDA driver"), "%s", gt_log_text());
}

Test(gpu_mem_desc, names)
{
    cr_assert_str_eq(rw_mem_path_name(RW_MEM_PATH_HOST), "host");
    cr_assert_str_eq(rw_mem_path_name(RW_MEM_PATH_DMABUF), "dmabuf");
    cr_assert_str_eq(rw_mem_path_name(RW_MEM_PATH_PEERMEM), "peermem");
    cr_assert_str_eq(rw_mem_path_name(RW_MEM_PATH_STAGED), "staged");
    cr_assert_str_eq(rw_mem_kind_name(RAILWIRE_MEM_CUDA), "cuda");
    cr_assert_str_eq(rw_mem_kind_name(RAILWIRE_MEM_DMABUF), "dmabuf");
}
