/* SPDX-License-Identifier: MIT */
/* `railwire serve --cuda N`: the RW arena in CUDA device memory, allocated
 * through the driver railwire loads at run time (no CUDA toolkit). */
#ifndef RAILWIRE_TOOL_SERVE_CUDA_H
#define RAILWIRE_TOOL_SERVE_CUDA_H

#include <stddef.h>

/* Allocates `size` bytes on CUDA device `device` (cuMemAlloc) into *out;
 * with `fill`, copies the bench pattern (seed 0) in through a pinned host
 * buffer (the CPU never touches device memory).  Returns 0, or -1 after
 * printing why on stderr (nothing left allocated). */
int serve_cuda_arena(int device, size_t size, int fill, void **out);

/* Frees an arena from serve_cuda_arena (NULL is a no-op). */
void serve_cuda_free(int device, void *arena);

#endif
