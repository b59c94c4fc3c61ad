/* SPDX-License-Identifier: MIT */
/* The CUDA driver, loaded at run time.
 *
 * railwire needs no CUDA at build time: the driver library (libcuda.so.1, or
 * the file named by RAILWIRE_CUDA_LIBRARY) is opened with dlopen the first
 * time CUDA memory is used, once per process (thread-safe), and never in a
 * program that registers only host memory.  The library stays loaded until
 * the process exits.
 *
 * Error codes (until the public header grows CUDA-specific ones, the lead's
 * call): RW_E_CUDA_MISSING when no driver could be loaded or it sees no
 * device, RW_E_CUDA_CALL when a driver call failed; the log line names the
 * call and the CUresult (CUDA_ERROR_...). */
#ifndef RW_GPU_CUDA_DRIVER_H
#define RW_GPU_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include <railwire/error.h>

#include "gpu/cuda_api.h"

#define RW_E_CUDA_MISSING RAILWIRE_E_NO_DEVICE
#define RW_E_CUDA_CALL RAILWIRE_E_SYSTEM

/* The environment variable naming the driver library, and the default. */
#define RW_CUDA_LIBRARY_ENV "RAILWIRE_CUDA_LIBRARY"
#define RW_CUDA_LIBRARY_DEFAULT "libcuda.so.1"

/* The driver's entry points (NULL only for the optional ones). */
struct rw_cuda {
#define RW_CUDA_FIELD(name, sym, params) CUresult (*name) params;
    RW_CUDA_REQUIRED(RW_CUDA_FIELD)
    RW_CUDA_OPTIONAL(RW_CUDA_FIELD)
#undef RW_CUDA_FIELD
    char path[256];     /* the file that was loaded */
    int version;        /* cuDriverGetVersion: 1000 * major + 10 * minor */
    int n_devices;      /* cuDeviceGetCount */
};

/* Loads and initialises the driver on first call (cuInit, cuDeviceGetCount);
 * later calls return the same outcome.  Returns 0 and *out (static, valid
 * until exit), or RW_E_CUDA_MISSING / RW_E_CUDA_CALL; every failing call
 * logs why (the file names tried, the environment variable, or the
 * CUresult).  Thread-safe. */
int rw_cuda_get(const struct rw_cuda **out);

/* 1 if the driver was loaded in this process (for tests: host-only paths
 * must leave it unloaded), else 0. */
int rw_cuda_loaded(void);

/* "CUDA_ERROR_NOT_READY" for `r` (the driver's cuGetErrorName when loaded,
 * else "CUresult N" in buf).  Never NULL. */
const char *rw_cuda_errname(CUresult r, char *buf, size_t len);

/* Logs "`call` failed: NAME (description)" with `what` appended and returns
 * RW_E_CUDA_CALL; returns 0 for CUDA_SUCCESS. */
int rw_cuda_fail(CUresult r, const char *call, const char *what);

/* What the driver knows of a pointer. */
struct rw_cuda_ptr {
    int memtype;        /* CU_MEMORYTYPE_*, 0 when the driver does not know it */
    int managed;        /* cudaMallocManaged memory */
    int ordinal;        /* device ordinal, -1 for host memory */
    uintptr_t start;    /* the allocation holding it */
    size_t size;
};

/* Asks the driver about `addr`.  Returns 0 (memtype 0: not CUDA memory), or
 * an error (logged). */
int rw_cuda_ptr_info(const void *addr, struct rw_cuda_ptr *out);

/* Makes device `ordinal`'s primary context current on the calling thread
 * (retained once per device and process).  Returns 0 or an error (logged). */
int rw_cuda_use_device(int ordinal);

/* The PCI bus id of device `ordinal`, "dddd:bb:dd.0" in out (>= 16 bytes).
 * Returns 0 or an error (logged). */
int rw_cuda_pci_busid(int ordinal, char *out, size_t len);

/* Exports [addr, addr+len) of device memory as a DMA-BUF.  The range is
 * widened to whole host pages, as the driver wants; *offset is addr's offset
 * in the exported buffer, *fd the new file descriptor (the caller closes it).
 * Returns 0, RAILWIRE_E_UNSUPPORTED when the driver cannot export
 * (cuMemGetHandleForAddressRange missing or CUDA_ERROR_NOT_SUPPORTED), or
 * RW_E_CUDA_CALL.  The reason is written to why (never NULL) and logged at
 * debug level only: callers try another path and log the whole story. */
int rw_cuda_export_dmabuf(const void *addr, size_t len, int *fd, uint64_t *offset, char *why,
                          size_t why_len);

#endif
