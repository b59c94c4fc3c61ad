/* SPDX-License-Identifier: MIT */
/* Memory descriptors: which kind of memory a registration covers.
 *
 * A railwire_mem names host memory, CUDA device memory or a DMA-BUF.  It
 * starts with struct_size, set from the caller's sizeof by
 * railwire_mem_init(), so the struct can grow: railwire reads only
 * struct_size bytes and gives fields past them their defaults.
 *
 *     railwire_mem m;
 *     railwire_mem_init(&m);
 *     m.kind = RAILWIRE_MEM_CUDA;
 *     m.addr = (void *)dptr;      // from cuMemAlloc / cudaMalloc / torch
 *     m.len = bytes;
 *
 * The caller keeps ownership of the memory and of dmabuf_fd; railwire
 * neither frees nor closes them. */
#ifndef RAILWIRE_MEM_H
#define RAILWIRE_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* railwire_mem.kind */
enum railwire_mem_kind {
    RAILWIRE_MEM_HOST = 0,   /* ordinary process memory (malloc, mmap, pinned host) */
    RAILWIRE_MEM_CUDA = 1,   /* CUDA device memory (cuMemAlloc/cudaMalloc); the CUDA
                                driver is loaded at run time when first needed */
    RAILWIRE_MEM_DMABUF = 2, /* a DMA-BUF file descriptor (any exporter) */
};

typedef struct railwire_mem {
    uint32_t struct_size;   /* sizeof(railwire_mem) as the caller compiled it */
    uint32_t kind;          /* enum railwire_mem_kind */
    /* HOST, CUDA: the first byte (a device pointer for CUDA).  DMABUF: the
     * address by which the caller names the region's first byte in later
     * calls (e.g. where it mapped the buffer); it must not be NULL. */
    void *addr;
    size_t len;             /* bytes, > 0 */
    int dmabuf_fd;          /* DMABUF: the buffer's fd (-1 otherwise) */
    uint64_t dmabuf_offset; /* DMABUF: where the region starts in the buffer */
    int device;             /* CUDA: device ordinal, -1 = found from the pointer */
} railwire_mem;

/* Sets *m to a HOST descriptor of nothing, with struct_size = `size`,
 * dmabuf_fd = -1 and device = -1.  Use railwire_mem_init(). */
static inline void railwire_mem_init_sized(railwire_mem *m, uint32_t size)
{
    memset(m, 0, size);
    m->struct_size = size;
    m->kind = RAILWIRE_MEM_HOST;
    m->dmabuf_fd = -1;
    m->device = -1;
}

#define railwire_mem_init(m) railwire_mem_init_sized((m), (uint32_t)sizeof(*(m)))

#ifdef __cplusplus
}
#endif
#endif
