/* SPDX-License-Identifier: MIT */
/* Shared state of the stand-in CUDA driver's two files. */
#ifndef RW_TESTS_GPU_CUDA_STANDIN_INT_H
#define RW_TESTS_GPU_CUDA_STANDIN_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/cuda_api.h"

#define SI_EXPORT __attribute__((visibility("default")))

enum si_kind { SI_DEVICE = 1, SI_HOST_ALLOC = 2, SI_HOST_REG = 3 };

struct si_alloc {
    struct si_alloc *next;
    enum si_kind kind;
    uintptr_t base;
    size_t size;       /* as asked */
    size_t mapped;     /* whole pages mapped (device and host allocs) */
    int ordinal;
    int memfd;         /* device memory's backing file, -1 otherwise */
};

/* Live allocations (for the stats). */
extern uint64_t si_n_allocs;

/* Returns the injected CUresult for entry point `sym`, or 0. */
CUresult si_fail(const char *sym);
/* 0 once cuInit succeeded, else CUDA_ERROR_NOT_INITIALIZED. */
CUresult si_inited(void);
/* The context current on this thread, or NULL. */
CUcontext si_current(void);
/* Finds the allocation holding [p, p+len) and copies it (under the global
 * lock) into *out.  Returns 0 or CUDA_ERROR_INVALID_VALUE. */
CUresult si_find(uintptr_t p, size_t len, struct si_alloc *out);
/* Copies len bytes between host memory and the device allocation `a`
 * (dev_off bytes in), opening the device pages only for the copy. */
void si_copy(const struct si_alloc *a, size_t dev_off, void *host, size_t len, int to_device);

#endif
