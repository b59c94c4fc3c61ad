/* SPDX-License-Identifier: MIT */
/* A plain program (Criterion does not start under ThreadSanitizer) for the
 * threads label: a tcp server publishing a CUDA arena (stand-in driver)
 * through a staging pool of 4 small chunks, served by 2 event loops, while
 * 3 client threads, each with its own 2-rail railset, READ and WRITE their
 * own slices of it at once.  Exits 0 when every byte came back and every
 * chunk returned to the pool. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <railwire.h>

#include "gpu/cuda_driver.h"

#define N_THREADS 3
#define SLICE (1u << 20)
#define ROUNDS 4

static railwire_server *g_srv;
static char g_port[16];

static void *client(void *arg)
{
    long id = (long)(intptr_t)arg, ok = 0;
    unsigned char *out = malloc(SLICE), *in = malloc(SLICE);
    railwire_railset *rs = NULL;
    railwire_mr *mo = NULL, *mi = NULL;
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = 2;
    o.io_timeout_ms = 20000;
    o.slice_size = 96u << 10;
    if (!out || !in || railwire_railset_connect("127.0.0.1", g_port, &o, &rs) ||
        railwire_mr_register(rs, out, SLICE, &mo) || railwire_mr_register(rs, in, SLICE, &mi))
        goto done;
    for (int r = 0; r < ROUNDS; r++) {
        for (size_t i = 0; i < SLICE; i++)
            out[i] = (unsigned char)(i * 13 + (size_t)id * 71 + (size_t)r * 5 + (i >> 11));
        uint64_t at = (uint64_t)id * SLICE;
        if (railwire_write(rs, mo, out, SLICE, 0, at, 30000) ||
            railwire_read(rs, mi, in, SLICE, 0, at, 30000) || memcmp(in, out, SLICE)) {
            fprintf(stderr, "client %ld round %d: bytes differ or a transfer failed\n", id, r);
            goto done;
        }
    }
    ok = 1;
done:
    if (mo)
        railwire_mr_deregister(mo);
    if (mi)
        railwire_mr_deregister(mi);
    railwire_railset_close(rs);
    free(out);
    free(in);
    return (void *)(intptr_t)ok;
}

int main(void)
{
    const struct rw_cuda *cu;
    CUdeviceptr d;
    setenv("RAILWIRE_CUDA_LIBRARY", RW_STANDIN_PATH, 0);
    if (rw_cuda_get(&cu) || rw_cuda_use_device(0) || cu->MemAlloc(&d, N_THREADS * SLICE)) {
        fprintf(stderr, "the stand-in driver is not usable\n");
        return 1;
    }
    railwire_mem am;
    railwire_mem_init(&am);
    am.kind = RAILWIRE_MEM_CUDA;
    am.addr = (void *)(uintptr_t)d;
    am.len = N_THREADS * SLICE;
    railwire_server_opts so;
    railwire_server_opts_init(&so);
    so.dialect = RAILWIRE_DIALECT_RW;
    so.transport = RAILWIRE_TRANSPORT_TCP;
    so.listen_host = "127.0.0.1";
    so.arena_mem = &am;
    so.staging_bytes = 64u << 10;
    if (railwire_server_create(&so, &g_srv)) {
        fprintf(stderr, "server_create failed\n");
        return 1;
    }
    snprintf(g_port, sizeof(g_port), "%u", railwire_server_port(g_srv));
    pthread_t t[N_THREADS];
    for (long i = 0; i < N_THREADS; i++)
        pthread_create(&t[i], NULL, client, (void *)(intptr_t)i);
    int good = 1;
    for (int i = 0; i < N_THREADS; i++) {
        void *ok;
        pthread_join(t[i], &ok);
        good &= ok != NULL;
    }
    struct railwire_server_stats st;
    railwire_server_stats(g_srv, &st, sizeof(st));
    if (st.staging_allocated > st.staging_bound || st.staging_in_use) {
        fprintf(stderr, "staging: %llu allocated of %llu, %llu in use\n",
                (unsigned long long)st.staging_allocated, (unsigned long long)st.staging_bound,
                (unsigned long long)st.staging_in_use);
        good = 0;
    }
    railwire_server_destroy(g_srv);
    cu->MemFree(d);
    printf("%s\n", good ? "ok" : "FAILED");
    return good ? 0 : 1;
}
