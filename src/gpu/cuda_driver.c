/* SPDX-License-Identifier: MIT */
/* Loads the CUDA driver with dlopen, once, on first use (see cuda_driver.h). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "gpu/cuda_driver.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static struct rw_cuda g_cu;
static int g_rc;               /* outcome of the load, set once */
static char g_why[512];        /* why it failed, repeated by every rw_cuda_get */
static void *g_lib;
static int g_loaded;           /* g_lib was opened (atomic: read without the once) */

/* Primary contexts, retained on first use per device. */
#define RW_CUDA_MAX_DEVICES 64
static pthread_mutex_t g_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext g_ctx[RW_CUDA_MAX_DEVICES];

const char *rw_cuda_errname(CUresult r, char *buf, size_t len)
{
    const char *s = NULL;
    if (g_lib && g_cu.GetErrorName && g_cu.GetErrorName(r, &s) == CUDA_SUCCESS && s)
        return s;
    snprintf(buf, len, "CUresult %d", r);
    return buf;
}

int rw_cuda_fail(CUresult r, const char *call, const char *what)
{
    char nb[32];
    const char *desc = NULL;
    if (r == CUDA_SUCCESS)
        return 0;
    if (g_lib && g_cu.GetErrorString && g_cu.GetErrorString(r, &desc) != CUDA_SUCCESS)
        desc = NULL;
    rw_err("cuda: %s failed: %s (%s)%s%s", call, rw_cuda_errname(r, nb, sizeof(nb)),
           desc ? desc : "no description", what && *what ? ": " : "", what ? what : "");
    return RW_E_CUDA_CALL;
}

static int resolve(void)
{
#define RW_CUDA_RESOLVE(name, sym, params)                                              \
    *(void **)&g_cu.name = dlsym(g_lib, #sym);                                           \
    if (!g_cu.name) {                                                                   \
        snprintf(g_why, sizeof(g_why),                                                  \
                 "the CUDA driver %s lacks %s (too old a driver, or not the CUDA driver "   \
                 "library): install a current NVIDIA driver, or fix %s",                \
                 g_cu.path, #sym, RW_CUDA_LIBRARY_ENV);                                  \
        return RW_E_CUDA_MISSING;                                                       \
    }
    RW_CUDA_REQUIRED(RW_CUDA_RESOLVE)
#undef RW_CUDA_RESOLVE
#define RW_CUDA_RESOLVE_OPT(name, sym, params) *(void **)&g_cu.name = dlsym(g_lib, #sym);
    RW_CUDA_OPTIONAL(RW_CUDA_RESOLVE_OPT)
#undef RW_CUDA_RESOLVE_OPT
    return 0;
}

static int init_driver(void)
{
    char nb[32];
    CUresult r = g_cu.Init(0);
    if (r == CUDA_SUCCESS)
        r = g_cu.DriverGetVersion(&g_cu.version);
    if (r == CUDA_SUCCESS)
        r = g_cu.DeviceGetCount(&g_cu.n_devices);
    if (r == CUDA_ERROR_NO_DEVICE || (r == CUDA_SUCCESS && g_cu.n_devices <= 0)) {
        snprintf(g_why, sizeof(g_why),
                 "the CUDA driver %s sees no GPU (%s): check nvidia-smi and "
                 "CUDA_VISIBLE_DEVICES", g_cu.path, rw_cuda_errname(r, nb, sizeof(nb)));
        return RW_E_CUDA_MISSING;
    }
    if (r != CUDA_SUCCESS) {
        const char *desc = NULL;
        if (g_cu.GetErrorString(r, &desc) != CUDA_SUCCESS)
            desc = NULL;
        snprintf(g_why, sizeof(g_why),
                 "the CUDA driver %s failed to initialise: %s (%s): check that the NVIDIA "
                 "kernel module is loaded and matches the driver library (nvidia-smi)",
                 g_cu.path, rw_cuda_errname(r, nb, sizeof(nb)), desc ? desc : "no description");
        return RW_E_CUDA_CALL;
    }
    return 0;
}

static void load_once(void)
{
    const char *env = getenv("RAILWIRE_CUDA_LIBRARY"); /* RW_CUDA_LIBRARY_ENV */
    const char *path = env && *env ? env : RW_CUDA_LIBRARY_DEFAULT;

    snprintf(g_cu.path, sizeof(g_cu.path), "%s", path);
    g_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!g_lib) {
        const char *de = dlerror();
        if (env && *env)
            snprintf(g_why, sizeof(g_why),
                     "no CUDA driver: %s=%s could not be loaded (%s): name the driver "
                     "library (libcuda.so.1) there, or unset it to use the system's",
                     RW_CUDA_LIBRARY_ENV, env, de ? de : "dlopen failed");
        else
            snprintf(g_why, sizeof(g_why),
                     "no CUDA driver: %s could not be loaded (%s): install the NVIDIA driver "
                     "(libcuda.so.1 comes with it, not with the CUDA toolkit), or name the "
                     "driver library in %s", RW_CUDA_LIBRARY_DEFAULT, de ? de : "dlopen failed",
                     RW_CUDA_LIBRARY_ENV);
        g_rc = RW_E_CUDA_MISSING;
        return;
    }
    __atomic_store_n(&g_loaded, 1, __ATOMIC_RELEASE);
    g_rc = resolve();
    if (g_rc == 0)
        g_rc = init_driver();
    if (g_rc == 0)
        rw_info("cuda: loaded %s (driver API %d.%d, %d device%s)", g_cu.path,
                g_cu.version / 1000, g_cu.version % 1000 / 10, g_cu.n_devices,
                g_cu.n_devices == 1 ? "" : "s");
}

int rw_cuda_get(const struct rw_cuda **out)
{
    pthread_once(&g_once, load_once);
    if (g_rc) {
        rw_err("cuda: %s", g_why);
        return g_rc;
    }
    *out = &g_cu;
    return 0;
}

int rw_cuda_loaded(void)
{
    return __atomic_load_n(&g_loaded, __ATOMIC_ACQUIRE);
}

int rw_cuda_ptr_info(const void *addr, struct rw_cuda_ptr *out)
{
    const struct rw_cuda *cu;
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)addr;
    int rc = rw_cuda_get(&cu);
    unsigned int memtype = 0;

    memset(out, 0, sizeof(*out));
    out->ordinal = -1;
    if (rc)
        return rc;
    CUresult r = cu->PointerGetAttribute(&memtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
    if (r == CUDA_ERROR_INVALID_VALUE)
        return 0; /* memory the driver has never seen: plain host memory */
    if (r != CUDA_SUCCESS)
        return rw_cuda_fail(r, "cuPointerGetAttribute(MEMORY_TYPE)", "");
    out->memtype = (int)memtype;
    int ord = -1;
    unsigned int managed = 0;
    CUdeviceptr start = 0;
    size_t size = 0;
    if ((r = cu->PointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p)) ||
        (r = cu->PointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p)) ||
        (r = cu->PointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p)) ||
        (r = cu->PointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p)))
        return rw_cuda_fail(r, "cuPointerGetAttribute", "");
    out->managed = managed != 0;
    out->ordinal = memtype == CU_MEMORYTYPE_HOST ? -1 : ord;
    out->start = (uintptr_t)start;
    out->size = size;
    return 0;
}

int rw_cuda_use_device(int ordinal)
{
    const struct rw_cuda *cu;
    CUcontext cur = NULL;
    int rc = rw_cuda_get(&cu);
    if (rc)
        return rc;
    if (ordinal < 0 || ordinal >= cu->n_devices || ordinal >= RW_CUDA_MAX_DEVICES) {
        rw_err("cuda: device %d does not exist (the driver sees %d): check "
               "CUDA_VISIBLE_DEVICES", ordinal, cu->n_devices);
        return RAILWIRE_E_INVALID;
    }
    pthread_mutex_lock(&g_ctx_lock);
    if (!g_ctx[ordinal]) {
        CUdevice dev;
        CUresult r = cu->DeviceGet(&dev, ordinal);
        if (r == CUDA_SUCCESS)
            r = cu->DevicePrimaryCtxRetain(&g_ctx[ordinal], dev);
        if (r != CUDA_SUCCESS) {
            g_ctx[ordinal] = NULL;
            pthread_mutex_unlock(&g_ctx_lock);
            return rw_cuda_fail(r, "cuDevicePrimaryCtxRetain", "");
        }
    }
    CUcontext want = g_ctx[ordinal];
    pthread_mutex_unlock(&g_ctx_lock);
    CUresult r = cu->CtxGetCurrent(&cur);
    if (r != CUDA_SUCCESS)
        return rw_cuda_fail(r, "cuCtxGetCurrent", "");
    if (cur == want)
        return 0;
    return rw_cuda_fail(cu->CtxSetCurrent(want), "cuCtxSetCurrent", "");
}

int rw_cuda_pci_busid(int ordinal, char *out, size_t len)
{
    const struct rw_cuda *cu;
    CUdevice dev;
    int dom = 0, bus = 0, slot = 0;
    int rc = rw_cuda_get(&cu);
    if (rc)
        return rc;
    CUresult r = cu->DeviceGet(&dev, ordinal);
    if (r == CUDA_SUCCESS)
        r = cu->DeviceGetAttribute(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev);
    if (r == CUDA_SUCCESS)
        r = cu->DeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev);
    if (r == CUDA_SUCCESS)
        r = cu->DeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev);
    if (r != CUDA_SUCCESS)
        return rw_cuda_fail(r, "cuDeviceGetAttribute(PCI ids)", "");
    snprintf(out, len, "%04x:%02x:%02x.0", (unsigned)dom & 0xffff, (unsigned)bus & 0xff,
             (unsigned)slot & 0x1f);
    return 0;
}

int rw_cuda_export_dmabuf(const void *addr, size_t len, int *fd, uint64_t *offset, char *why,
                          size_t why_len)
{
    const struct rw_cuda *cu;
    char nb[32];
    int rc = rw_cuda_get(&cu);
    if (rc) {
        snprintf(why, why_len, "no CUDA driver");
        return rc;
    }
    if (!cu->MemGetHandleForAddressRange) {
        snprintf(why, why_len,
                 "the driver (API %d.%d) has no cuMemGetHandleForAddressRange (CUDA 11.7 and "
                 "driver 515 or later are needed)", cu->version / 1000, cu->version % 1000 / 10);
        return RAILWIRE_E_UNSUPPORTED;
    }
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)addr, mask = (uintptr_t)(pg > 0 ? pg : 4096) - 1;
    uintptr_t base = a & ~mask, end = (a + len + mask) & ~mask;
    int h = -1;
    CUresult r = cu->MemGetHandleForAddressRange(&h, (CUdeviceptr)base, end - base,
                                                 CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (r != CUDA_SUCCESS || h < 0) {
        snprintf(why, why_len, "cuMemGetHandleForAddressRange(DMA_BUF_FD) failed: %s",
                 rw_cuda_errname(r, nb, sizeof(nb)));
        rw_debug("cuda: %s", why);
        return r == CUDA_ERROR_NOT_SUPPORTED ? RAILWIRE_E_UNSUPPORTED : RW_E_CUDA_CALL;
    }
    *fd = h;
    *offset = a - base;
    return 0;
}
