/* SPDX-License-Identifier: MIT */
/* Verified round trips into CUDA memory (ci/gpu-check.sh), over tcp, with the
 * driver RAILWIRE_CUDA_LIBRARY names (or libcuda.so.1).
 *
 *   gpu_verify_rt RAILS [HOST PORT]
 *
 * Without HOST PORT: against a server in this process publishing a 64 MiB
 * host arena holding the bench pattern (seed 0); with them: against a
 * `railwire serve --dialect rw --arena 64M --fill` (host or --cuda memory).
 * For 64 KiB, 1 MiB and 16 MiB: READ the pattern into a cuMemAlloc buffer,
 * copy it out (cuMemcpyDtoH) and compare byte for byte; WRITE a fresh
 * pattern copied into the CUDA buffer (cuMemcpyHtoD) to offsets >= 32 MiB
 * (the READ range is never written), then READ it back into host memory and
 * into a second CUDA buffer and compare both.  Prints one line per case.
 * Exit status: 0 all equal, 1 a transfer failed or a byte differed, 2 no
 * driver or device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <railwire.h>

#include "bench_pattern.h"
#include "gpu/cuda_driver.h"

#define ARENA (64u << 20)
#define BUF (16u << 20)
#define WRITE_BASE (32u << 20)
#define TMO 60000

struct rt {
    const struct rw_cuda *cu;
    CUstream st;
    railwire_railset *rs;
    railwire_mr *hmr, *dmr;
    unsigned char *host;   /* registered host buffer */
    unsigned char *stage;  /* unregistered: pattern in, copies out */
    CUdeviceptr d;         /* 2 x BUF: [0, BUF) and [BUF, 2 BUF) */
};

/* Copies n bytes between host and device through the stream; 0 or -1. */
static int copy(struct rt *t, int to_dev, CUdeviceptr d, void *h, size_t n)
{
    CUresult r = to_dev ? t->cu->MemcpyHtoDAsync(d, h, n, t->st)
                        : t->cu->MemcpyDtoHAsync(h, d, n, t->st);
    if (r == CUDA_SUCCESS)
        r = t->cu->StreamSynchronize(t->st);
    return rw_cuda_fail(r, to_dev ? "cuMemcpyHtoD" : "cuMemcpyDtoH", "gpu_verify_rt") ? -1 : 0;
}

static int check(const char *what, const void *buf, size_t n, uint32_t seed, uint64_t off)
{
    size_t at;
    uint8_t got, want;
    if (bench_pattern_check(buf, n, seed, 0, off, &at, &got, &want) == 0)
        return 0;
    fprintf(stderr, "gpu-verify: %s: byte %zu (remote offset %llu) is 0x%02x, want 0x%02x\n",
            what, at, (unsigned long long)(off + at), got, want);
    return -1;
}

static int xfer(struct rt *t, int write, railwire_mr *mr, void *local, size_t n, uint64_t off)
{
    int rc = write ? railwire_write(t->rs, mr, local, n, 0, off, TMO)
                   : railwire_read(t->rs, mr, local, n, 0, off, TMO);
    if (rc)
        fprintf(stderr, "gpu-verify: %s of %zu bytes at %llu failed: %s\n",
                write ? "WRITE" : "READ", n, (unsigned long long)off, railwire_strerror(rc));
    return rc ? -1 : 0;
}

/* READ the server's pattern (seed 0) into CUDA memory and compare. */
static int case_read(struct rt *t, size_t n)
{
    uint64_t off = n + 4096;   /* not aligned to the size: slices land mid-page */
    memset(t->stage, 0, n);
    if (copy(t, 1, t->d, t->stage, n) || xfer(t, 0, t->dmr, (void *)(uintptr_t)t->d, n, off) ||
        copy(t, 0, t->d, t->stage, n))
        return -1;
    return check("READ into CUDA", t->stage, n, 0, off);
}

/* WRITE from CUDA memory, read back into host and into CUDA memory. */
static int case_write(struct rt *t, size_t n, uint32_t seed)
{
    uint64_t off = WRITE_BASE + 4096;
    CUdeviceptr d2 = t->d + BUF;
    bench_pattern_fill(t->stage, n, seed, 0, off);
    if (copy(t, 1, t->d, t->stage, n) || xfer(t, 1, t->dmr, (void *)(uintptr_t)t->d, n, off))
        return -1;
    memset(t->host, 0, n);
    if (xfer(t, 0, t->hmr, t->host, n, off) || check("WRITE from CUDA, read into host", t->host, n, seed, off))
        return -1;
    memset(t->stage, 0, n);
    if (copy(t, 1, d2, t->stage, n) || xfer(t, 0, t->dmr, (void *)(uintptr_t)d2, n, off) ||
        copy(t, 0, d2, t->stage, n))
        return -1;
    return check("WRITE from CUDA, read into CUDA", t->stage, n, seed, off);
}

static int setup(struct rt *t, unsigned rails, const char *host, const char *port,
                 railwire_server **srv, unsigned char **arena)
{
    char pbuf[16];
    if (!host) {
        railwire_server_opts so;
        railwire_server_opts_init(&so);
        so.dialect = RAILWIRE_DIALECT_RW;
        so.transport = RAILWIRE_TRANSPORT_TCP;
        so.listen_host = "127.0.0.1";
        if (!(*arena = malloc(ARENA)))
            return -1;
        bench_pattern_fill(*arena, ARENA, 0, 0, 0);
        so.arena = (railwire_region){*arena, ARENA};
        if (railwire_server_create(&so, srv))
            return -1;
        snprintf(pbuf, sizeof(pbuf), "%u", railwire_server_port(*srv));
        host = "127.0.0.1";
        port = pbuf;
    }
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = rails;
    int rc = railwire_railset_connect(host, port, &o, &t->rs);
    if (rc) {
        fprintf(stderr, "gpu-verify: connect %s:%s: %s\n", host, port, railwire_strerror(rc));
        return -1;
    }
    railwire_mem m;
    railwire_mem_init(&m);
    m.kind = RAILWIRE_MEM_CUDA;
    m.addr = (void *)(uintptr_t)t->d;
    m.len = 2 * (size_t)BUF;
    if (railwire_mr_register(t->rs, t->host, BUF, &t->hmr) ||
        railwire_mr_register_mem(t->rs, &m, &t->dmr))
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    struct rt t = {0};
    unsigned rails = argc > 1 ? (unsigned)atoi(argv[1]) : 1;
    const char *host = argc > 3 ? argv[2] : NULL, *port = argc > 3 ? argv[3] : NULL;
    if (rails < 1 || rails > 255 || argc == 3 || argc > 4) {
        fprintf(stderr, "usage: gpu_verify_rt RAILS [HOST PORT]\n");
        return 1;
    }
    if (rw_cuda_get(&t.cu) || rw_cuda_use_device(0) || !t.cu->MemAlloc || !t.cu->MemFree)
        return 2;
    railwire_server *srv = NULL;
    unsigned char *arena = NULL;
    int bad = 1;
    t.host = malloc(BUF);
    t.stage = malloc(BUF);
    if (!t.host || !t.stage || rw_cuda_fail(t.cu->MemAlloc(&t.d, 2 * (size_t)BUF), "cuMemAlloc", "") ||
        rw_cuda_fail(t.cu->StreamCreate(&t.st, 0), "cuStreamCreate", ""))
        goto out;
    if (setup(&t, rails, host, port, &srv, &arena))
        goto out;
    static const size_t sizes[] = {64u << 10, 1u << 20, 16u << 20};
    bad = 0;
    for (int k = 0; k < 3; k++) {
        int r = case_read(&t, sizes[k]);
        printf("gpu-verify: rails=%u server=%s READ  %8zu into CUDA: %s\n", rails,
               host ? "remote" : "host", sizes[k], r ? "FAILED" : "ok");
        int w = case_write(&t, sizes[k], 100 + rails * 3 + (uint32_t)k);
        printf("gpu-verify: rails=%u server=%s WRITE %8zu from CUDA: %s\n", rails,
               host ? "remote" : "host", sizes[k], w ? "FAILED" : "ok");
        bad |= r | w;
    }
out:
    if (t.dmr)
        railwire_mr_deregister(t.dmr);
    if (t.hmr)
        railwire_mr_deregister(t.hmr);
    if (t.rs)
        railwire_railset_close(t.rs);
    if (srv)
        railwire_server_destroy(srv);
    if (t.st)
        t.cu->StreamDestroy(t.st);
    if (t.d)
        t.cu->MemFree(t.d);
    free(arena);
    free(t.host);
    free(t.stage);
    return bad ? 1 : 0;
}
