/* SPDX-License-Identifier: MIT */
/* The internal form of a public railwire_mem (railwire/mem.h): checked,
 * with defaults filled in and the CUDA device found from the pointer, plus
 * the path a transport took to register it (shown in stats and logs). */
#ifndef RW_GPU_MEM_DESC_H
#define RW_GPU_MEM_DESC_H

#include <stddef.h>
#include <stdint.h>

#include <railwire/mem.h>

/* How a transport made a region usable (struct rw_mr.mem_path). */
enum rw_mem_path {
    RW_MEM_PATH_HOST = 0,    /* host memory, registered as such */
    RW_MEM_PATH_DMABUF = 1,  /* verbs: ibv_reg_dmabuf_mr on a DMA-BUF */
    RW_MEM_PATH_PEERMEM = 2, /* verbs: ibv_reg_mr on a device pointer (nvidia-peermem) */
    RW_MEM_PATH_STAGED = 3,  /* tcp: copied through pinned host staging buffers */
};

/* "host", "dmabuf", "peermem", "staged" ("?" for anything else). */
const char *rw_mem_path_name(int path);
/* "host", "cuda", "dmabuf" ("?" for anything else). */
const char *rw_mem_kind_name(int kind);

struct rw_mem {
    uint32_t kind;          /* RAILWIRE_MEM_* */
    void *addr;
    size_t len;
    int dmabuf_fd;          /* DMABUF only, else -1 */
    uint64_t dmabuf_offset; /* DMABUF only, else 0 */
    int device;             /* CUDA: the ordinal (resolved); else -1 */
    /* CUDA: the railset's bounded staging pool (struct rw_stage_pool), set
     * by the railset for transports that stage (tcp); NULL otherwise. */
    void *stage_pool;
};

/* Fills *out with a host descriptor of [addr, addr+len). */
void rw_mem_host(struct rw_mem *out, void *addr, size_t len);

/* Checks *in, reading only in->struct_size bytes of it, and fills *out.
 * CUDA memory loads the driver (cuda_driver.h) and asks it where the pointer
 * lives: it must be device memory of one allocation holding the whole range,
 * on `device` when that is not -1.  Host memory never loads the driver.
 * Returns 0, RAILWIRE_E_INVALID (logged: which field and why), or the
 * driver's error (RW_E_CUDA_MISSING / RW_E_CUDA_CALL, logged). */
int rw_mem_normalise(const railwire_mem *in, struct rw_mem *out);

#endif
