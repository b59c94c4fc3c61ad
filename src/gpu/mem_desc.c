/* SPDX-License-Identifier: MIT */
/* Checks and normalises public memory descriptors (see mem_desc.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <railwire/error.h>

#include "common/log.h"
#include "gpu/cuda_driver.h"
#include "gpu/mem_desc.h"

/* The oldest descriptor accepted ends with len. */
#define RW_MEM_MIN_SIZE (offsetof(railwire_mem, len) + sizeof(size_t))

const char *rw_mem_path_name(int path)
{
    switch (path) {
    case RW_MEM_PATH_HOST: return "host";
    case RW_MEM_PATH_DMABUF: return "dmabuf";
    case RW_MEM_PATH_PEERMEM: return "peermem";
    case RW_MEM_PATH_STAGED: return "staged";
    default: return "?";
    }
}

const char *rw_mem_kind_name(int kind)
{
    switch (kind) {
    case RAILWIRE_MEM_HOST: return "host";
    case RAILWIRE_MEM_CUDA: return "cuda";
    case RAILWIRE_MEM_DMABUF: return "dmabuf";
    default: return "?";
    }
}

void rw_mem_host(struct rw_mem *out, void *addr, size_t len)
{
    *out = (struct rw_mem){.kind = RAILWIRE_MEM_HOST, .addr = addr, .len = len,
                           .dmabuf_fd = -1, .device = -1};
}

/* Copies the caller's struct_size bytes over the defaults; refuses a larger
 * struct whose unknown tail is not zero (a newer caller asking for
 * something this build cannot do). */
static int read_desc(const railwire_mem *in, railwire_mem *m)
{
    uint32_t size;
    railwire_mem_init(m);
    if (!in) {
        rw_err("memory descriptor: NULL");
        return RAILWIRE_E_INVALID;
    }
    memcpy(&size, in, sizeof(size));
    if (size < RW_MEM_MIN_SIZE) {
        rw_err("memory descriptor: struct_size %u is too small (at least %zu): initialise it "
               "with railwire_mem_init()", size, (size_t)RW_MEM_MIN_SIZE);
        return RAILWIRE_E_INVALID;
    }
    if (size > sizeof(*m)) {
        const unsigned char *tail = (const unsigned char *)in + sizeof(*m);
        for (size_t i = 0; i < size - sizeof(*m); i++) {
            if (tail[i]) {
                rw_err("memory descriptor: struct_size %u is larger than this railwire's (%zu) "
                       "and sets fields it does not know: the program was built against a "
                       "newer railwire", size, sizeof(*m));
                return RAILWIRE_E_INVALID;
            }
        }
        size = (uint32_t)sizeof(*m);
    }
    memcpy(m, in, size);
    m->struct_size = size;
    return 0;
}

static int check_cuda(const railwire_mem *m, struct rw_mem *out)
{
    struct rw_cuda_ptr pi;
    int rc = rw_cuda_ptr_info(m->addr, &pi);
    if (rc)
        return rc;
    if (pi.managed) {
        rw_err("memory descriptor: %p is CUDA managed memory (cudaMallocManaged), which NICs "
               "cannot reach directly: use cudaMalloc'ed memory", m->addr);
        return RAILWIRE_E_INVALID;
    }
    if (pi.memtype == 0 || pi.memtype == CU_MEMORYTYPE_HOST) {
        rw_err("memory descriptor: %p is not CUDA device memory (%s): register it as "
               "RAILWIRE_MEM_HOST", m->addr,
               pi.memtype ? "it is pinned host memory" : "the CUDA driver does not know it");
        return RAILWIRE_E_INVALID;
    }
    uintptr_t a = (uintptr_t)m->addr;
    if (a < pi.start || m->len > pi.size - (a - pi.start)) {
        rw_err("memory descriptor: %p+%zu runs past the end of its CUDA allocation "
               "(%#lx+%zu)", m->addr, m->len, (unsigned long)pi.start, pi.size);
        return RAILWIRE_E_INVALID;
    }
    if (m->device >= 0 && m->device != pi.ordinal) {
        rw_err("memory descriptor: device %d was given but %p lives on CUDA device %d: set "
               "device to -1 or to the right ordinal", m->device, m->addr, pi.ordinal);
        return RAILWIRE_E_INVALID;
    }
    out->device = pi.ordinal;
    return 0;
}

static int check_dmabuf(const railwire_mem *m, struct rw_mem *out)
{
    if (m->dmabuf_fd < 0 || fcntl(m->dmabuf_fd, F_GETFD) < 0) {
        rw_err("memory descriptor: dmabuf_fd %d is not an open file descriptor",
               m->dmabuf_fd);
        return RAILWIRE_E_INVALID;
    }
    if (m->dmabuf_offset > UINT64_MAX - m->len) {
        rw_err("memory descriptor: dmabuf_offset + len overflows");
        return RAILWIRE_E_INVALID;
    }
    /* A DMA-BUF's size is its end offset (lseek); files that cannot seek
     * leave the check to the exporter. */
    off_t end = lseek(m->dmabuf_fd, 0, SEEK_END);
    if (end >= 0 && m->dmabuf_offset + m->len > (uint64_t)end) {
        rw_err("memory descriptor: dmabuf_offset %llu + len %zu runs past the buffer's end "
               "(%lld bytes)", (unsigned long long)m->dmabuf_offset, m->len, (long long)end);
        return RAILWIRE_E_INVALID;
    }
    out->dmabuf_fd = m->dmabuf_fd;
    out->dmabuf_offset = m->dmabuf_offset;
    return 0;
}

int rw_mem_normalise(const railwire_mem *in, struct rw_mem *out)
{
    railwire_mem m;
    int rc = read_desc(in, &m);
    if (rc)
        return rc;
    if (m.kind > RAILWIRE_MEM_DMABUF) {
        rw_err("memory descriptor: unknown kind %u (RAILWIRE_MEM_HOST, _CUDA or _DMABUF)",
               m.kind);
        return RAILWIRE_E_INVALID;
    }
    if (!m.addr || m.len == 0 || (uintptr_t)m.addr > UINTPTR_MAX - m.len) {
        rw_err("memory descriptor (%s): %s", rw_mem_kind_name((int)m.kind),
               !m.addr ? "addr is NULL" : m.len == 0 ? "len is 0" : "addr + len overflows");
        return RAILWIRE_E_INVALID;
    }
    if (m.kind != RAILWIRE_MEM_CUDA && m.device != -1) {
        rw_err("memory descriptor (%s): device is %d, but it names a CUDA device: leave it -1",
               rw_mem_kind_name((int)m.kind), m.device);
        return RAILWIRE_E_INVALID;
    }
    rw_mem_host(out, m.addr, m.len);
    out->kind = m.kind;
    if (m.kind == RAILWIRE_MEM_CUDA)
        rc = check_cuda(&m, out);
    else if (m.kind == RAILWIRE_MEM_DMABUF)
        rc = check_dmabuf(&m, out);
    return rc;
}
