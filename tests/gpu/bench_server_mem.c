/* SPDX-License-Identifier: MIT */
/* GB/s of READ (and WRITE) from a server publishing CUDA memory (tcp: staged
 * through its pinned pool) against the same transfers from a server
 * publishing host memory, in the same run, over loopback, into a host
 * buffer of the client; with the stand-in driver (RAILWIRE_CUDA_LIBRARY) or
 * a real one.  Usage: gpu_bench_server_mem [rails] [seconds per case]
 * [rounds].  The cases alternate host/CUDA `rounds` times and the figures
 * are summed over the rounds; the machine may be shared: read the ratio,
 * not the absolute figures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <railwire.h>

#include "common/time.h"
#include "gpu/cuda_driver.h"

#define ARENA (64u << 20)
#define BUF (16u << 20)

struct side {
    railwire_server *s;
    railwire_railset *rs;
    railwire_mr *mr;
    uint64_t bytes;
    int64_t ms;
};

static int side_up(struct side *x, const railwire_region *host, const railwire_mem *dev,
                   unsigned rails, void *buf)
{
    railwire_server_opts so;
    railwire_server_opts_init(&so);
    so.dialect = RAILWIRE_DIALECT_RW;
    so.transport = RAILWIRE_TRANSPORT_TCP;
    so.listen_host = "127.0.0.1";
    if (host)
        so.arena = *host;
    else
        so.arena_mem = dev;
    if (railwire_server_create(&so, &x->s))
        return -1;
    char port[16];
    snprintf(port, sizeof(port), "%u", railwire_server_port(x->s));
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = rails;
    if (railwire_railset_connect("127.0.0.1", port, &o, &x->rs))
        return -1;
    return railwire_mr_register(x->rs, buf, BUF, &x->mr);
}

static void side_down(struct side *x)
{
    railwire_mr_deregister(x->mr);
    railwire_railset_close(x->rs);
    railwire_server_destroy(x->s);
}

static void run(struct side *x, void *buf, size_t len, int write, double secs)
{
    int64_t start = rw_now_ms(), end = start + (int64_t)(secs * 1000);
    size_t off = 0;
    while (rw_now_ms() < end) {
        int rc = write ? railwire_write(x->rs, x->mr, buf, len, 0, off, 30000)
                       : railwire_read(x->rs, x->mr, buf, len, 0, off, 30000);
        if (rc) {
            fprintf(stderr, "transfer failed: %s\n", railwire_strerror(rc));
            exit(1);
        }
        x->bytes += len;
        off = (off + len) % (ARENA - len + 1);
    }
    x->ms += rw_now_ms() - start;
}

static double gbps(const struct side *x)
{
    return (double)x->bytes / ((double)x->ms / 1000.0) / 1e9;
}

int main(int argc, char **argv)
{
    unsigned rails = argc > 1 ? (unsigned)atoi(argv[1]) : 2;
    double secs = argc > 2 ? atof(argv[2]) : 1.0;
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    const struct rw_cuda *cu;
    if (rw_cuda_get(&cu) < 0 || rw_cuda_use_device(0) < 0)
        return 1;
    unsigned char *arena = calloc(1, ARENA), *buf = calloc(1, BUF);
    CUdeviceptr d;
    if (!arena || !buf || cu->MemAlloc(&d, ARENA))
        return 1;
    railwire_region hr = {arena, ARENA};
    railwire_mem dm;
    railwire_mem_init(&dm);
    dm.kind = RAILWIRE_MEM_CUDA;
    dm.addr = (void *)(uintptr_t)d;
    dm.len = ARENA;
    struct side h = {0}, c = {0};
    if (side_up(&h, &hr, NULL, rails, buf) || side_up(&c, NULL, &dm, rails, buf))
        return 1;
    size_t sizes[] = {64u << 10, 1u << 20, 16u << 20};
    printf("rails=%u  size      op     host-server GB/s  cuda-server GB/s  cuda/host\n", rails);
    for (int k = 0; k < 3; k++)
        for (int w = 0; w < 2; w++) {
            h.bytes = c.bytes = 0;
            h.ms = c.ms = 0;
            for (int r = 0; r < rounds; r++) {
                run(&h, buf, sizes[k], w, secs);
                run(&c, buf, sizes[k], w, secs);
            }
            printf("          %-8zu  %-5s  %16.2f  %16.2f  %9.2f\n", sizes[k],
                   w ? "WRITE" : "READ", gbps(&h), gbps(&c), gbps(&c) / gbps(&h));
        }
    side_down(&c);
    side_down(&h);
    cu->MemFree(d);
    free(arena);
    free(buf);
    return 0;
}
