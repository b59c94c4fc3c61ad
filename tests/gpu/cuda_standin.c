/* SPDX-License-Identifier: MIT */
/* A stand-in for the CUDA driver library, for tests on machines without a
 * GPU: the entry points railwire uses (src/gpu/cuda_api.h), over host
 * memory.  "Device" memory is a memfd mapping kept PROT_NONE except inside
 * si_copy, so any CPU access to it by railwire crashes the test.  Streams
 * and events: cuda_standin_stream.c.  Knobs: cuda_standin.h. */
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda_standin.h"
#include "cuda_standin_int.h"

RW_CUDA_REQUIRED(RW_CUDA_DECLARE)
RW_CUDA_OPTIONAL(RW_CUDA_DECLARE)

#define SI_MAX_DEV 16

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;   /* the allocation list */
static pthread_mutex_t g_copy_mu = PTHREAD_MUTEX_INITIALIZER; /* device pages open */
static struct si_alloc *g_allocs;
static int g_inited;
static struct CUctx_st {
    int ordinal;
} g_ctx[SI_MAX_DEV];
static _Thread_local CUcontext t_cur;
uint64_t si_n_allocs;

CUresult si_fail(const char *sym)
{
    const char *env = getenv("RAILWIRE_STANDIN_FAIL");
    size_t n = strlen(sym);
    for (const char *p = env; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len >= n && !strncmp(p, sym, n) && (len == n || p[n] == '='))
            return len == n ? CUDA_ERROR_UNKNOWN : (CUresult)atoi(p + n + 1);
        p = end ? end + 1 : NULL;
    }
    return CUDA_SUCCESS;
}

CUresult si_inited(void)
{
    return __atomic_load_n(&g_inited, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS
                                                         : CUDA_ERROR_NOT_INITIALIZED;
}

CUcontext si_current(void)
{
    return t_cur;
}

#define SI_ENTER(sym)                      \
    do {                                   \
        CUresult r_ = si_fail(sym);        \
        if (r_ == CUDA_SUCCESS)            \
            r_ = si_inited();              \
        if (r_ != CUDA_SUCCESS)            \
            return r_;                     \
    } while (0)

static int n_devices(void)
{
    const char *e = getenv("RAILWIRE_STANDIN_DEVICES");
    int n = e ? atoi(e) : 2;
    return n < 0 ? 0 : n > SI_MAX_DEV ? SI_MAX_DEV : n;
}

SI_EXPORT CUresult cuInit(unsigned int flags)
{
    CUresult r = si_fail("cuInit");
    if (r)
        return r;
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (n_devices() == 0)
        return CUDA_ERROR_NO_DEVICE;
    __atomic_store_n(&g_inited, 1, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuDriverGetVersion(int *version)
{
    CUresult r = si_fail("cuDriverGetVersion");
    if (r)
        return r;
    *version = 12040;
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuDeviceGetCount(int *count)
{
    SI_ENTER("cuDeviceGetCount");
    *count = n_devices();
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    SI_ENTER("cuDeviceGet");
    if (ordinal < 0 || ordinal >= n_devices())
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

/* Device N sits at PCI 0000:(0x1b + 0x10 N):00.0 unless
 * RAILWIRE_STANDIN_PCI_BUS gives "bus,bus,..." in hex. */
static int pci_bus(int ordinal)
{
    const char *e = getenv("RAILWIRE_STANDIN_PCI_BUS");
    for (int i = 0; e && *e; i++) {
        char *end;
        long v = strtol(e, &end, 16);
        if (i == ordinal)
            return (int)v;
        e = *end == ',' ? end + 1 : NULL;
    }
    return 0x1b + 0x10 * ordinal;
}

SI_EXPORT CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev)
{
    SI_ENTER("cuDeviceGetAttribute");
    if (dev < 0 || dev >= n_devices())
        return CUDA_ERROR_INVALID_DEVICE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *pi = pci_bus(dev); break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: *pi = 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    SI_ENTER("cuDevicePrimaryCtxRetain");
    if (dev < 0 || dev >= n_devices())
        return CUDA_ERROR_INVALID_DEVICE;
    g_ctx[dev].ordinal = dev;
    *pctx = &g_ctx[dev];
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    SI_ENTER("cuDevicePrimaryCtxRelease_v2");
    return dev < 0 || dev >= n_devices() ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

SI_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    SI_ENTER("cuCtxGetCurrent");
    *pctx = t_cur;
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    SI_ENTER("cuCtxGetDevice");
    if (!t_cur)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = t_cur->ordinal;
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    SI_ENTER("cuCtxSetCurrent");
    if (ctx && (ctx < &g_ctx[0] || ctx >= &g_ctx[SI_MAX_DEV]))
        return CUDA_ERROR_INVALID_CONTEXT;
    t_cur = ctx;
    return CUDA_SUCCESS;
}

/* ---- memory -------------------------------------------------------------- */

static size_t page_round(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (n + pg - 1) / pg * pg;
}

static void add_alloc(struct si_alloc *a)
{
    pthread_mutex_lock(&g_mu);
    a->next = g_allocs;
    g_allocs = a;
    __atomic_add_fetch(&si_n_allocs, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_mu);
}

/* Unlinks the allocation of `kind` starting at base; NULL if none. */
static struct si_alloc *take_alloc(uintptr_t base, enum si_kind kind)
{
    struct si_alloc *a = NULL;
    pthread_mutex_lock(&g_mu);
    for (struct si_alloc **pp = &g_allocs; *pp; pp = &(*pp)->next) {
        if ((*pp)->base == base && (*pp)->kind == kind) {
            a = *pp;
            *pp = a->next;
            __atomic_sub_fetch(&si_n_allocs, 1, __ATOMIC_RELAXED);
            break;
        }
    }
    pthread_mutex_unlock(&g_mu);
    return a;
}

CUresult si_find(uintptr_t p, size_t len, struct si_alloc *out)
{
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_mu);
    for (struct si_alloc *a = g_allocs; a; a = a->next) {
        if (p >= a->base && p - a->base < a->size && len <= a->size - (p - a->base)) {
            *out = *a;
            r = CUDA_SUCCESS;
            break;
        }
    }
    pthread_mutex_unlock(&g_mu);
    return r;
}

static int devmem_rw(void)
{
    const char *e = getenv("RAILWIRE_STANDIN_DEVMEM");
    return e && !strcmp(e, "rw");
}

void si_copy(const struct si_alloc *a, size_t dev_off, void *host, size_t len, int to_device)
{
    char *dev = (char *)a->base + dev_off;
    /* Open only the pages the copy touches, and only while it runs. */
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)dev & ~(uintptr_t)(pg - 1);
    size_t span = page_round((uintptr_t)dev + len - lo);
    int open_pages = !devmem_rw();
    pthread_mutex_lock(&g_copy_mu);
    if (open_pages && mprotect((void *)lo, span, PROT_READ | PROT_WRITE))
        abort();
    if (to_device)
        memcpy(dev, host, len);
    else
        memcpy(host, dev, len);
    if (open_pages && mprotect((void *)lo, span, PROT_NONE))
        abort();
    pthread_mutex_unlock(&g_copy_mu);
}

SI_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes)
{
    SI_ENTER("cuMemAlloc_v2");
    CUcontext cur = t_cur;
    if (!cur)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct si_alloc *a = calloc(1, sizeof(*a));
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->kind = SI_DEVICE;
    a->size = bytes;
    a->mapped = page_round(bytes);
    a->ordinal = cur->ordinal;
    a->memfd = memfd_create("standin-device-memory", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    void *p = MAP_FAILED;
    if (a->memfd >= 0 && ftruncate(a->memfd, (off_t)a->mapped) == 0 &&
        fcntl(a->memfd, F_ADD_SEALS, F_SEAL_SHRINK) == 0)
        p = mmap(NULL, a->mapped, devmem_rw() ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_SHARED,
                 a->memfd, 0);
    if (p == MAP_FAILED) {
        if (a->memfd >= 0)
            close(a->memfd);
        free(a);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->base = (uintptr_t)p;
    add_alloc(a);
    *ptr = (CUdeviceptr)a->base;
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuMemFree_v2(CUdeviceptr ptr)
{
    SI_ENTER("cuMemFree_v2");
    struct si_alloc *a = take_alloc((uintptr_t)ptr, SI_DEVICE);
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    munmap((void *)a->base, a->mapped);
    close(a->memfd);
    free(a);
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags)
{
    (void)flags;
    SI_ENTER("cuMemHostAlloc");
    struct si_alloc *a = calloc(1, sizeof(*a));
    if (!a || bytes == 0) {
        free(a);
        return bytes ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
    }
    void *p = mmap(NULL, page_round(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) {
        free(a);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *a = (struct si_alloc){.kind = SI_HOST_ALLOC, .base = (uintptr_t)p, .size = bytes,
                           .mapped = page_round(bytes), .ordinal = -1, .memfd = -1};
    add_alloc(a);
    *pp = p;
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuMemFreeHost(void *p)
{
    SI_ENTER("cuMemFreeHost");
    struct si_alloc *a = take_alloc((uintptr_t)p, SI_HOST_ALLOC);
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    munmap(p, a->mapped);
    free(a);
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned int flags)
{
    (void)flags;
    SI_ENTER("cuMemHostRegister_v2");
    struct si_alloc probe, *a;
    if (!p || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (si_find((uintptr_t)p, 1, &probe) == CUDA_SUCCESS)
        return 712; /* CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED */
    if (!(a = calloc(1, sizeof(*a))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    *a = (struct si_alloc){.kind = SI_HOST_REG, .base = (uintptr_t)p, .size = bytes,
                           .ordinal = -1, .memfd = -1};
    add_alloc(a);
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuMemHostUnregister(void *p)
{
    SI_ENTER("cuMemHostUnregister");
    struct si_alloc *a = take_alloc((uintptr_t)p, SI_HOST_REG);
    if (!a)
        return 713; /* CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED */
    free(a);
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr)
{
    SI_ENTER("cuPointerGetAttribute");
    struct si_alloc a;
    if (si_find((uintptr_t)ptr, 1, &a) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = a.kind == SI_DEVICE ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned int *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = a.ordinal < 0 ? 0 : a.ordinal; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = a.base; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = a.size; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

SI_EXPORT CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr ptr, size_t size,
                                                 int type, unsigned long long flags)
{
    SI_ENTER("cuMemGetHandleForAddressRange");
    const char *mode = getenv("RAILWIRE_STANDIN_DMABUF");
    struct si_alloc a;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    if (type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || flags != 0 || ptr % pg || size % pg)
        return CUDA_ERROR_INVALID_VALUE;
    if (!mode || strcmp(mode, "udmabuf"))
        return CUDA_ERROR_NOT_SUPPORTED;
    if (si_find((uintptr_t)ptr, 1, &a) != CUDA_SUCCESS || a.kind != SI_DEVICE ||
        (uintptr_t)ptr - a.base + size > a.mapped)
        return CUDA_ERROR_INVALID_VALUE;
    int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
    if (dev < 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    struct udmabuf_create c = {.memfd = (uint32_t)a.memfd, .flags = UDMABUF_FLAGS_CLOEXEC,
                               .offset = (uintptr_t)ptr - a.base, .size = size};
    int fd = ioctl(dev, UDMABUF_CREATE, &c);
    close(dev);
    if (fd < 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    *(int *)handle = fd;
    return CUDA_SUCCESS;
}

/* ---- error names ---------------------------------------------------------- */

static const struct {
    CUresult r;
    const char *name, *desc;
} g_names[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult lookup(CUresult err, const char **str, int desc)
{
    for (size_t i = 0; i < sizeof(g_names) / sizeof(g_names[0]); i++) {
        if (g_names[i].r == err) {
            *str = desc ? g_names[i].desc : g_names[i].name;
            return CUDA_SUCCESS;
        }
    }
    *str = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

SI_EXPORT CUresult cuGetErrorName(CUresult err, const char **str)
{
    return lookup(err, str, 0);
}

SI_EXPORT CUresult cuGetErrorString(CUresult err, const char **str)
{
    return lookup(err, str, 1);
}
