/* SPDX-License-Identifier: MIT */
/* GB/s of READ and WRITE into CUDA memory (tcp, staged) against the same
 * transfers into host memory, in the same run, over loopback, with the
 * stand-in driver (RAILWIRE_CUDA_LIBRARY, set by ctest or by hand) or a
 * real one.  Usage: gpu_bench_staged [rails] [seconds per case].  Prints
 * one line per size and direction; the machine may be shared: read the
 * ratio, not the absolute figures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <railwire.h>

#include "common/time.h"
#include "gpu/cuda_driver.h"

#define ARENA (64u << 20)

static double run(railwire_railset *rs, railwire_mr *mr, void *local, size_t len, int write,
                  double secs)
{
    int64_t start = rw_now_ms(), end = start + (int64_t)(secs * 1000);
    uint64_t bytes = 0;
    size_t off = 0;
    while (rw_now_ms() < end) {
        int rc = write ? railwire_write(rs, mr, local, len, 0, off, 30000)
                       : railwire_read(rs, mr, local, len, 0, off, 30000);
        if (rc) {
            fprintf(stderr, "transfer failed: %s\n", railwire_strerror(rc));
            exit(1);
        }
        bytes += len;
        off = (off + len) % (ARENA - len + 1);
    }
    return (double)bytes / ((double)(rw_now_ms() - start) / 1000.0) / 1e9;
}

int main(int argc, char **argv)
{
    unsigned rails = argc > 1 ? (unsigned)atoi(argv[1]) : 2;
    double secs = argc > 2 ? atof(argv[2]) : 1.0;
    const struct rw_cuda *cu;
    if (rw_cuda_get(&cu) < 0 || rw_cuda_use_device(0) < 0)
        return 1;
    unsigned char *arena = calloc(1, ARENA), *host = calloc(1, 16u << 20);
    CUdeviceptr d;
    if (!arena || !host || cu->MemAlloc(&d, 16u << 20))
        return 1;
    railwire_server_opts so;
    railwire_server_opts_init(&so);
    so.dialect = RAILWIRE_DIALECT_RW;
    so.transport = RAILWIRE_TRANSPORT_TCP;
    so.listen_host = "127.0.0.1";
    so.arena = (railwire_region){arena, ARENA};
    railwire_server *s;
    railwire_railset *rs;
    if (railwire_server_create(&so, &s))
        return 1;
    char port[16];
    snprintf(port, sizeof(port), "%u", railwire_server_port(s));
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = rails;
    if (railwire_railset_connect("127.0.0.1", port, &o, &rs))
        return 1;
    railwire_mr *hmr, *dmr;
    railwire_mem m;
    railwire_mem_init(&m);
    m.kind = RAILWIRE_MEM_CUDA;
    m.addr = (void *)(uintptr_t)d;
    m.len = 16u << 20;
    if (railwire_mr_register(rs, host, 16u << 20, &hmr) || railwire_mr_register_mem(rs, &m, &dmr))
        return 1;
    size_t sizes[] = {64u << 10, 1u << 20, 16u << 20};
    printf("rails=%u  size      op     host GB/s  cuda GB/s  cuda/host\n", rails);
    for (int k = 0; k < 3; k++)
        for (int w = 0; w < 2; w++) {
            double h = run(rs, hmr, host, sizes[k], w, secs);
            double c = run(rs, dmr, (void *)(uintptr_t)d, sizes[k], w, secs);
            printf("          %-8zu  %-5s  %9.2f  %9.2f  %9.2f\n", sizes[k], w ? "WRITE" : "READ",
                   h, c, c / h);
        }
    railwire_mr_deregister(dmr);
    railwire_mr_deregister(hmr);
    railwire_railset_close(rs);
    railwire_server_destroy(s);
    cu->MemFree(d);
    free(arena);
    free(host);
    return 0;
}
