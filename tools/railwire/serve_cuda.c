/* SPDX-License-Identifier: MIT */
/* The RW arena of `railwire serve --cuda N` (see serve_cuda.h). */
#include <stdint.h>
#include <stdio.h>

#include <railwire.h>

#include "bench_pattern.h"
#include "gpu/cuda_driver.h"
#include "serve_cuda.h"

#define PIECE (4u << 20)

/* Copies the pattern into [d, d+size) piece by piece through one pinned
 * buffer.  Returns 0 or -1 (printed). */
static int fill_pattern(const struct rw_cuda *cu, CUdeviceptr d, size_t size)
{
    void *host = NULL;
    CUstream st = NULL;
    CUresult r = cu->MemHostAlloc(&host, PIECE, 0);
    if (r == CUDA_SUCCESS)
        r = cu->StreamCreate(&st, 0);
    for (size_t off = 0; r == CUDA_SUCCESS && off < size; off += PIECE) {
        size_t n = size - off < PIECE ? size - off : PIECE;
        bench_pattern_fill(host, n, 0, 0, off);
        r = cu->MemcpyHtoDAsync(d + off, host, n, st);
        if (r == CUDA_SUCCESS)
            r = cu->StreamSynchronize(st);
    }
    if (r != CUDA_SUCCESS)
        rw_cuda_fail(r, "filling the CUDA arena", "--fill");
    if (st)
        cu->StreamDestroy(st);
    if (host)
        cu->MemFreeHost(host);
    return r == CUDA_SUCCESS ? 0 : -1;
}

int serve_cuda_arena(int device, size_t size, int fill, void **out)
{
    const struct rw_cuda *cu;
    CUdeviceptr d;
    *out = NULL;
    int rc = rw_cuda_get(&cu);
    if (rc == 0)
        rc = rw_cuda_use_device(device);
    if (rc < 0) {
        fprintf(stderr, "error: --cuda %d: the CUDA driver or device is not usable: %s (the "
                        "log above says what was looked for)\n", device, railwire_strerror(rc));
        return -1;
    }
    if (!cu->MemAlloc || !cu->MemFree) {
        fprintf(stderr, "error: --cuda %d: the CUDA driver lacks cuMemAlloc_v2/cuMemFree_v2\n",
                device);
        return -1;
    }
    CUresult r = cu->MemAlloc(&d, size);
    if (r != CUDA_SUCCESS) {
        rw_cuda_fail(r, "cuMemAlloc", "the arena of --cuda");
        fprintf(stderr, "error: --cuda %d: cannot allocate %zu bytes of device memory\n", device,
                size);
        return -1;
    }
    if (fill && fill_pattern(cu, d, size) < 0) {
        cu->MemFree(d);
        fprintf(stderr, "error: --cuda %d --fill: the pattern could not be copied in\n", device);
        return -1;
    }
    *out = (void *)(uintptr_t)d;
    return 0;
}

void serve_cuda_free(int device, void *arena)
{
    const struct rw_cuda *cu;
    if (!arena || rw_cuda_get(&cu) < 0 || rw_cuda_use_device(device) < 0)
        return;
    cu->MemFree((CUdeviceptr)(uintptr_t)arena);
}
