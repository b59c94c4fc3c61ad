/* SPDX-License-Identifier: MIT */
#include "bench_loopback.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench_pattern.h"
#include "bench_util.h"

int bench_loopback_start(struct bench_loopback *lb, enum railwire_dialect dialect,
                         enum railwire_transport transport, unsigned n_layers, size_t layer_len,
                         int busy_poll_us, int zero_copy_reads,
                         const railwire_tls_opts *tls)
{
    static const char *const rail_addr[] = {"127.0.0.1"};
    railwire_server_opts o;
    uint64_t t0;
    int rc;

    memset(lb, 0, sizeof(*lb));
    if (dialect == RAILWIRE_DIALECT_RW)
        n_layers = 1;
    lb->n_layers = n_layers;
    lb->mem_len = (size_t)n_layers * layer_len;
    lb->mem = mmap(NULL, lb->mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (lb->mem == MAP_FAILED) {
        lb->mem = NULL;
        fprintf(stderr, "error: loopback server: cannot allocate %zu bytes\n", lb->mem_len);
        return RAILWIRE_E_NOMEM;
    }
    (void)madvise(lb->mem, lb->mem_len, MADV_HUGEPAGE); /* as tool_buf_alloc; advice only */
    lb->regions = calloc(n_layers, sizeof(*lb->regions));
    if (!lb->regions) {
        rc = RAILWIRE_E_NOMEM;
        goto fail;
    }
    for (unsigned l = 0; l < n_layers; l++) {
        lb->regions[l].addr = (char *)lb->mem + (size_t)l * layer_len;
        lb->regions[l].len = layer_len;
        bench_pattern_fill(lb->regions[l].addr, layer_len, 0, l, 0);
    }

    railwire_server_opts_init(&o);
    o.dialect = dialect;
    o.transport = transport;
    o.listen_host = "127.0.0.1";
    o.listen_port = "0";
    o.busy_poll_us = busy_poll_us;
    o.zero_copy_reads = zero_copy_reads != 0;
    o.tls = tls; /* the client's own TLS options serve the loopback server too */
    o.rail_addrs = rail_addr;
    o.n_rail_addrs = 1;
    if (dialect == RAILWIRE_DIALECT_RO) {
        o.layers = lb->regions;
        o.n_layers = n_layers;
    } else {
        o.arena = lb->regions[0];
    }
    t0 = tool_now_ns();
    rc = railwire_server_create(&o, &lb->srv);
    lb->create_ms = (double)(tool_now_ns() - t0) / 1e6;
    if (rc < 0) {
        fprintf(stderr, "error: loopback server: %s: %s\n", railwire_error_class(rc),
                railwire_strerror(rc));
        lb->srv = NULL;
        goto fail;
    }
    lb->port = railwire_server_port(lb->srv);
    return 0;
fail:
    bench_loopback_stop(lb);
    return rc;
}

void bench_loopback_stop(struct bench_loopback *lb)
{
    railwire_server_destroy(lb->srv);
    lb->srv = NULL;
    free(lb->regions);
    lb->regions = NULL;
    if (lb->mem)
        munmap(lb->mem, lb->mem_len);
    lb->mem = NULL;
}
