/* SPDX-License-Identifier: MIT */
/* The CUDA driver loader (src/gpu/cuda_driver.c) against the stand-in
 * driver: loading once, the errors with no driver or a failing one, pointer
 * queries, PCI ids, DMA-BUF export refused, and the stand-in's own promises
 * (stream/event semantics, device memory the CPU cannot touch).  Each test
 * runs in its own process, so each loads the driver afresh. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda_standin.h"
#include "gpu/cuda_driver.h"
#include "gtest.h"

TestSuite(gpu_cuda_driver, .timeout = 60);

static const struct rw_cuda *load(void)
{
    const struct rw_cuda *cu = NULL;
    gt_use_standin();
    gt_log_capture();
    int rc = rw_cuda_get(&cu);
    cr_assert_eq(rc, 0, "loading the stand-in: %d\n%s", rc, gt_log_text());
    return cu;
}

Test(gpu_cuda_driver, loads_the_standin_once_and_only_on_demand)
{
    cr_assert_eq(rw_cuda_loaded(), 0, "nothing asked for CUDA yet");
    const struct rw_cuda *cu = load(), *again = NULL;
    cr_assert_eq(rw_cuda_loaded(), 1);
    cr_assert_eq(cu->n_devices, 2);
    cr_assert_eq(cu->version, 12040);
    cr_assert_str_eq(cu->path, getenv("RAILWIRE_CUDA_LIBRARY"));
    cr_assert_not_null(cu->MemGetHandleForAddressRange, "optional entry point resolved");
    cr_assert_eq(rw_cuda_get(&again), 0);
    cr_assert_eq(again, cu);
    cr_assert(gt_log_has("cuda: loaded"), "%s", gt_log_text());
}

static void *get_thread(void *arg)
{
    const struct rw_cuda **out = arg;
    if (rw_cuda_get(out))
        *out = NULL;
    return NULL;
}

Test(gpu_cuda_driver, concurrent_first_use_loads_once)
{
    pthread_t t[8];
    const struct rw_cuda *got[8];
    gt_use_standin();
    for (int i = 0; i < 8; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, get_thread, &got[i]), 0);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 8; i++) {
        cr_assert_not_null(got[i]);
        cr_assert_eq(got[i], got[0]);
    }
}

Test(gpu_cuda_driver, missing_library_named_by_env)
{
    const struct rw_cuda *cu = NULL;
    setenv("RAILWIRE_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    gt_log_capture();
    cr_assert_eq(rw_cuda_get(&cu), RW_E_CUDA_MISSING);
    cr_assert_null(cu);
    cr_assert(gt_log_has("no CUDA driver"), "%s", gt_log_text());
    cr_assert(gt_log_has("RAILWIRE_CUDA_LIBRARY=/nonexistent/libcuda.so.1"), "%s",
              gt_log_text());
    /* Every later call fails the same way, and says so again. */
    gt_log_capture();
    cr_assert_eq(rw_cuda_get(&cu), RW_E_CUDA_MISSING);
    cr_assert(gt_log_has("/nonexistent/libcuda.so.1"), "%s", gt_log_text());
    cr_assert_eq(rw_cuda_loaded(), 0);
}

Test(gpu_cuda_driver, missing_system_driver_names_file_and_env)
{
    const struct rw_cuda *cu = NULL;
    unsetenv("RAILWIRE_CUDA_LIBRARY");
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h) {
        dlclose(h);
        cr_skip("this machine has a CUDA driver");
    }
    gt_log_capture();
    cr_assert_eq(rw_cuda_get(&cu), RW_E_CUDA_MISSING);
    cr_assert(gt_log_has("libcuda.so.1 could not be loaded"), "%s", gt_log_text());
    cr_assert(gt_log_has("RAILWIRE_CUDA_LIBRARY"), "%s", gt_log_text());
}

Test(gpu_cuda_driver, library_without_the_driver_api)
{
    const struct rw_cuda *cu = NULL;
    setenv("RAILWIRE_CUDA_LIBRARY", "libc.so.6", 1);
    gt_log_capture();
    cr_assert_eq(rw_cuda_get(&cu), RW_E_CUDA_MISSING);
    cr_assert(gt_log_has("lacks cuInit"), "%s", gt_log_text());
}

Test(gpu_cuda_driver, failing_init_names_the_curesult)
{
    const struct rw_cuda *cu = NULL;
    gt_use_standin();
    setenv("RAILWIRE_STANDIN_FAIL", "cuInit=3", 1);
    gt_log_capture();
    cr_assert_eq(rw_cuda_get(&cu), RW_E_CUDA_CALL);
    cr_assert(gt_log_has("CUDA_ERROR_NOT_INITIALIZED"), "%s", gt_log_text());
    cr_assert(gt_log_has("failed to initialise"), "%s", gt_log_text());
}

Test(gpu_cuda_driver, driver_without_devices)
{
    const struct rw_cuda *cu = NULL;
    gt_use_standin();
    setenv("RAILWIRE_STANDIN_DEVICES", "0", 1);
    gt_log_capture();
    cr_assert_eq(rw_cuda_get(&cu), RW_E_CUDA_MISSING);
    cr_assert(gt_log_has("sees no GPU"), "%s", gt_log_text());
    cr_assert(gt_log_has("CUDA_ERROR_NO_DEVICE"), "%s", gt_log_text());
}

/* Allocates len bytes on device `ord` through the loaded driver. */
static void *dev_alloc(const struct rw_cuda *cu, int ord, size_t len)
{
    CUdeviceptr p = 0;
    cr_assert_eq(rw_cuda_use_device(ord), 0, "%s", gt_log_text());
    cr_assert_eq(cu->MemAlloc(&p, len), CUDA_SUCCESS);
    return (void *)(uintptr_t)p;
}

Test(gpu_cuda_driver, pointer_info_and_pci_ids)
{
    const struct rw_cuda *cu = load();
    struct rw_cuda_ptr pi;
    char bus[32];
    unsigned char *d = dev_alloc(cu, 1, 3 << 20);
    cr_assert_eq(rw_cuda_ptr_info(d + 4096, &pi), 0);
    cr_assert_eq(pi.memtype, CU_MEMORYTYPE_DEVICE);
    cr_assert_eq(pi.ordinal, 1);
    cr_assert_eq(pi.start, (uintptr_t)d);
    cr_assert_eq(pi.size, (size_t)3 << 20);
    cr_assert_eq(pi.managed, 0);
    int host = 0;
    cr_assert_eq(rw_cuda_ptr_info(&host, &pi), 0);
    cr_assert_eq(pi.memtype, 0, "plain host memory is unknown to the driver");
    cr_assert_eq(pi.ordinal, -1);
    cr_assert_eq(rw_cuda_pci_busid(1, bus, sizeof(bus)), 0);
    cr_assert_str_eq(bus, "0000:2b:00.0");
    cr_assert_eq(rw_cuda_use_device(7), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("device 7 does not exist"), "%s", gt_log_text());
    cr_assert_eq(cu->MemFree((CUdeviceptr)(uintptr_t)d), CUDA_SUCCESS);
}

Test(gpu_cuda_driver, dmabuf_export_refused_with_reason)
{
    const struct rw_cuda *cu = load();
    char why[256];
    int fd = -1;
    uint64_t off = 0;
    unsigned char *d = dev_alloc(cu, 0, 1 << 20);
    int rc = rw_cuda_export_dmabuf(d + 100, 4096, &fd, &off, why, sizeof(why));
    cr_assert_eq(rc, RAILWIRE_E_UNSUPPORTED);
    cr_assert(strstr(why, "CUDA_ERROR_NOT_SUPPORTED"), "%s", why);
    cr_assert(strstr(why, "cuMemGetHandleForAddressRange"), "%s", why);
    cr_assert_eq(fd, -1);
    cu->MemFree((CUdeviceptr)(uintptr_t)d);
}

/* With the stand-in's udmabuf mode (where the kernel has /dev/udmabuf),
 * the export gives a DMA-BUF of whole pages holding the device bytes. */
Test(gpu_cuda_driver, dmabuf_export_through_udmabuf)
{
    if (access("/dev/udmabuf", R_OK | W_OK))
        cr_skip("no /dev/udmabuf");
    setenv("RAILWIRE_STANDIN_DMABUF", "udmabuf", 1);
    const struct rw_cuda *cu = load();
    char why[256] = "";
    int fd = -1;
    uint64_t off = 0;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *d = dev_alloc(cu, 0, 4 * pg), src[300];
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (unsigned char)(i ^ 0x5a);
    cr_assert_eq(cu->MemcpyHtoDAsync((CUdeviceptr)(uintptr_t)(d + pg + 100), src, sizeof(src),
                                     NULL), CUDA_SUCCESS);
    int rc = rw_cuda_export_dmabuf(d + pg + 100, sizeof(src), &fd, &off, why, sizeof(why));
    cr_assert_eq(rc, 0, "%s", why);
    cr_assert_eq(off, 100, "offset inside the first exported page");
    cr_assert_eq(lseek(fd, 0, SEEK_END), (off_t)pg, "one whole page exported");
    /* A DMA-BUF has no read(); udmabuf maps. */
    unsigned char *map = mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, 0);
    cr_assert_neq(map, MAP_FAILED);
    cr_assert(memcmp(map + off, src, sizeof(src)) == 0);
    munmap(map, pg);
    close(fd);
}

Test(gpu_cuda_driver, failing_copy_names_the_curesult)
{
    const struct rw_cuda *cu = load();
    unsigned char *d = dev_alloc(cu, 0, 4096), buf[64] = {0};
    setenv("RAILWIRE_STANDIN_FAIL", "cuMemcpyHtoDAsync_v2", 1);
    CUresult r = cu->MemcpyHtoDAsync((CUdeviceptr)(uintptr_t)d, buf, sizeof(buf), NULL);
    cr_assert_eq(r, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(rw_cuda_fail(r, "cuMemcpyHtoDAsync", "staging a READ"), RW_E_CUDA_CALL);
    cr_assert(gt_log_has("cuMemcpyHtoDAsync failed: CUDA_ERROR_UNKNOWN (unknown error): "
                         "staging a READ"), "%s", gt_log_text());
    unsetenv("RAILWIRE_STANDIN_FAIL");
    cu->MemFree((CUdeviceptr)(uintptr_t)d);
}

Test(gpu_cuda_driver, standin_streams_and_events_follow_the_driver_semantics)
{
    const struct rw_cuda *cu = load();
    standin_gate_fn gate = (standin_gate_fn)gt_standin_sym(STANDIN_GATE_SYM);
    standin_stats_fn stats = (standin_stats_fn)gt_standin_sym(STANDIN_STATS_SYM);
    cr_assert(gate && stats);
    size_t len = 1 << 20;
    unsigned char *d = dev_alloc(cu, 0, len), *src = NULL, *dst = malloc(len);
    CUstream s;
    CUevent ev;
    cr_assert_eq(cu->MemHostAlloc((void **)&src, len, 0), CUDA_SUCCESS);
    for (size_t i = 0; i < len; i++)
        src[i] = (unsigned char)(i * 7 + 3);
    cr_assert_eq(cu->StreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    cr_assert_eq(cu->EventCreate(&ev, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    cr_assert_eq(cu->EventQuery(ev), CUDA_SUCCESS, "an unrecorded event is complete");
    gate(1);
    cr_assert_eq(cu->MemcpyHtoDAsync((CUdeviceptr)(uintptr_t)d, src, len, s), CUDA_SUCCESS);
    cr_assert_eq(cu->EventRecord(ev, s), CUDA_SUCCESS);
    cr_assert_eq(cu->EventQuery(ev), CUDA_ERROR_NOT_READY);
    cr_assert_eq(cu->StreamQuery(s), CUDA_ERROR_NOT_READY);
    gate(0);
    cr_assert_eq(cu->EventSynchronize(ev), CUDA_SUCCESS);
    cr_assert_eq(cu->EventQuery(ev), CUDA_SUCCESS);
    cr_assert_eq(cu->MemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)d, len, s), CUDA_SUCCESS);
    cr_assert_eq(cu->StreamSynchronize(s), CUDA_SUCCESS);
    cr_assert_eq(cu->StreamQuery(s), CUDA_SUCCESS);
    cr_assert(memcmp(src, dst, len) == 0, "bytes differ after a device round trip");
    struct standin_stats st;
    stats(&st);
    cr_assert_eq(st.htod, 1);
    cr_assert_eq(st.dtoh, 1);
    cr_assert_eq(st.htod_bytes, len);
    cr_assert_eq(cu->EventDestroy(ev), CUDA_SUCCESS);
    cr_assert_eq(cu->StreamDestroy(s), CUDA_SUCCESS);
    cr_assert_eq(cu->MemFreeHost(src), CUDA_SUCCESS);
    cr_assert_eq(cu->MemFree((CUdeviceptr)(uintptr_t)d), CUDA_SUCCESS);
    stats(&st);
    cr_assert_eq(st.streams_live + st.events_live + st.allocs_live, 0);
    free(dst);
}

Test(gpu_cuda_driver, copies_need_a_current_context)
{
    const struct rw_cuda *cu = load();
    unsigned char *d = dev_alloc(cu, 0, 4096), buf[16] = {0};
    cr_assert_eq(cu->CtxSetCurrent(NULL), CUDA_SUCCESS);
    cr_assert_eq(cu->MemcpyHtoDAsync((CUdeviceptr)(uintptr_t)d, buf, 16, NULL),
                 CUDA_ERROR_INVALID_CONTEXT);
    cr_assert_eq(rw_cuda_use_device(0), 0);
    cr_assert_eq(cu->MemcpyHtoDAsync((CUdeviceptr)(uintptr_t)d, buf, 16, NULL), CUDA_SUCCESS);
}

/* The stand-in's guard, as the kernel sees it: the device mapping has no
 * access rights outside the stand-in's copies. */
Test(gpu_cuda_driver, device_memory_is_mapped_without_access)
{
    const struct rw_cuda *cu = load();
    uintptr_t d = (uintptr_t)dev_alloc(cu, 0, 3 * 4096);
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;
    cr_assert_not_null(f);
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && d >= lo && d < hi) {
            cr_assert_str_eq(perms, "---s", "device memory mapped %s", perms);
            found = 1;
        }
    }
    fclose(f);
    cr_assert(found, "device memory not in /proc/self/maps");
}

#ifndef __SANITIZE_ADDRESS__
/* And in practice: a CPU read of "device" memory kills the process.  (Not
 * under AddressSanitizer, whose SEGV handler reports instead.) */
Test(gpu_cuda_driver, cpu_access_to_device_memory_crashes, .signal = SIGSEGV)
{
    const struct rw_cuda *cu = load();
    volatile unsigned char *d = dev_alloc(cu, 0, 4096);
    unsigned char v = d[10];
    cr_assert_fail("read device memory from the CPU: %u", v);
}
#endif
