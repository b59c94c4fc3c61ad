/* SPDX-License-Identifier: MIT */
/* A server publishing CUDA memory (railwire_server_opts.layer_mems /
 * arena_mem) on tcp against the stand-in driver, whose device memory the
 * CPU cannot touch: the server stages it through its pinned pool.  Round
 * trips CUDA(client) <-> CUDA(server) and HOST <-> CUDA, READ and WRITE, on
 * 1 and 2 rails, checked byte for byte through the stand-in's copies; the
 * server's staging bound under many concurrent transfers; the option
 * checks; no driver and a failing driver at create. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <railwire.h>

#include "cuda_standin.h"
#include "common/time.h"
#include "gpu/cuda_driver.h"
#include "gtest.h"

TestSuite(gpu_server_mem, .timeout = 240);

#define ARENA (8u << 20)

struct world {
    railwire_server *s;
    railwire_railset *rs;
    const struct rw_cuda *cu;
    CUstream stream;
    CUdeviceptr arena;       /* the server's CUDA arena */
    unsigned char *shadow;   /* what the arena should hold */
};

static void driver_up(struct world *w)
{
    gt_use_standin();
    cr_assert_eq(rw_cuda_get(&w->cu), 0);
    cr_assert_eq(rw_cuda_use_device(0), 0);
    cr_assert_eq(w->cu->StreamCreate(&w->stream, 0), 0);
}

static void dev_to_host(struct world *w, void *host, CUdeviceptr d, size_t len)
{
    cr_assert_eq(w->cu->MemcpyDtoHAsync(host, d, len, w->stream), 0);
    cr_assert_eq(w->cu->StreamSynchronize(w->stream), 0);
}

static void host_to_dev(struct world *w, CUdeviceptr d, const void *host, size_t len)
{
    cr_assert_eq(w->cu->MemcpyHtoDAsync(d, host, len, w->stream), 0);
    cr_assert_eq(w->cu->StreamSynchronize(w->stream), 0);
}

static void fill(unsigned char *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)(i * seed + 11 + (i >> 10) * 3);
}

static void connect_rw(struct world *w, unsigned rails)
{
    char port[16];
    snprintf(port, sizeof(port), "%u", railwire_server_port(w->s));
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = rails;
    o.connect_timeout_ms = 3000;
    o.io_timeout_ms = 10000;
    o.slice_size = 256u << 10;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", port, &o, &w->rs), 0);
}

/* A RW server whose arena is CUDA memory, filled with a known pattern. */
static void world_up(struct world *w, unsigned rails, size_t staging)
{
    driver_up(w);
    cr_assert_eq(w->cu->MemAlloc(&w->arena, ARENA), 0);
    w->shadow = malloc(ARENA);
    cr_assert_not_null(w->shadow);
    fill(w->shadow, ARENA, 7);
    host_to_dev(w, w->arena, w->shadow, ARENA);
    railwire_mem am;
    railwire_mem_init(&am);
    am.kind = RAILWIRE_MEM_CUDA;
    am.addr = (void *)(uintptr_t)w->arena;
    am.len = ARENA;
    railwire_server_opts so;
    railwire_server_opts_init(&so);
    so.dialect = RAILWIRE_DIALECT_RW;
    so.transport = RAILWIRE_TRANSPORT_TCP;
    so.listen_host = "127.0.0.1";
    so.arena_mem = &am;
    so.staging_bytes = staging;
    cr_assert_eq(railwire_server_create(&so, &w->s), 0);
    connect_rw(w, rails);
}

static void world_down(struct world *w)
{
    railwire_railset_close(w->rs);
    railwire_server_destroy(w->s);
    w->cu->MemFree(w->arena);
    w->cu->StreamDestroy(w->stream);
    free(w->shadow);
}

/* The local buffer of a round trip: host memory or CUDA memory. */
struct local {
    int cuda;
    unsigned char *host;
    CUdeviceptr dev;
    railwire_mr *mr;
};

static void *local_ptr(const struct local *l)
{
    return l->cuda ? (void *)(uintptr_t)l->dev : (void *)l->host;
}

static void local_up(struct world *w, struct local *l, int cuda, size_t len)
{
    l->cuda = cuda;
    l->host = malloc(len);
    cr_assert_not_null(l->host);
    if (!cuda) {
        cr_assert_eq(railwire_mr_register(w->rs, l->host, len, &l->mr), 0);
        return;
    }
    cr_assert_eq(w->cu->MemAlloc(&l->dev, len), 0);
    railwire_mem m;
    railwire_mem_init(&m);
    m.kind = RAILWIRE_MEM_CUDA;
    m.addr = (void *)(uintptr_t)l->dev;
    m.len = len;
    cr_assert_eq(railwire_mr_register_mem(w->rs, &m, &l->mr), 0);
}

/* The local bytes as the host sees them (through a copy for CUDA). */
static const unsigned char *local_bytes(struct world *w, struct local *l, size_t len)
{
    if (l->cuda)
        dev_to_host(w, l->host, l->dev, len);
    return l->host;
}

static void local_set(struct world *w, struct local *l, size_t len, unsigned seed)
{
    fill(l->host, len, seed);
    if (l->cuda)
        host_to_dev(w, l->dev, l->host, len);
}

static void local_down(struct world *w, struct local *l)
{
    cr_assert_eq(railwire_mr_deregister(l->mr), 0);
    if (l->cuda)
        w->cu->MemFree(l->dev);
    free(l->host);
}

static void round_trip(unsigned rails, int client_cuda, size_t len)
{
    static struct world w;
    struct local l;
    world_up(&w, rails, 0);
    local_up(&w, &l, client_cuda, len);
    /* READ: the server's CUDA arena -> the client */
    cr_assert_eq(railwire_read(w.rs, l.mr, local_ptr(&l), len, 0, 4096 + 3, 10000), 0);
    cr_assert(memcmp(local_bytes(&w, &l, len), w.shadow + 4096 + 3, len) == 0,
              "READ of a CUDA arena differs");
    /* WRITE: the client -> the server's CUDA arena */
    size_t at = ARENA - len - 5;
    local_set(&w, &l, len, 31);
    cr_assert_eq(railwire_write(w.rs, l.mr, local_ptr(&l), len, 0, at, 10000), 0);
    unsigned char *back = malloc(len);
    cr_assert_not_null(back);
    dev_to_host(&w, back, w.arena + at, len);
    cr_assert(memcmp(back, l.host, len) == 0, "WRITE into a CUDA arena differs");
    /* and READ it back through the server again */
    memset(l.host, 0, len);
    if (l.cuda)
        host_to_dev(&w, l.dev, l.host, len);
    cr_assert_eq(railwire_read(w.rs, l.mr, local_ptr(&l), len, 0, at, 10000), 0);
    cr_assert(memcmp(local_bytes(&w, &l, len), back, len) == 0, "READ after WRITE differs");
    struct railwire_server_stats st;
    cr_assert_eq(railwire_server_stats(w.s, &st, sizeof(st)), 0);
    cr_assert_eq(st.regs_staged, 1, "one arena on one domain, staged");
    cr_assert_eq(st.regs_host + st.regs_dmabuf + st.regs_peermem, 0);
    cr_assert_eq(st.staging_bound, 64u << 20, "the default bound");
    cr_assert_leq(st.staging_allocated, st.staging_bound);
    cr_assert_geq(st.bytes_read, 2 * len);
    cr_assert_eq(st.bytes_written, len);
    free(back);
    local_down(&w, &l);
    world_down(&w);
}

Test(gpu_server_mem, host_client_one_rail) { round_trip(1, 0, (3u << 20) + 17); }
Test(gpu_server_mem, host_client_two_rails) { round_trip(2, 0, (5u << 20) + 333); }
Test(gpu_server_mem, cuda_client_one_rail) { round_trip(1, 1, (3u << 20) + 17); }
Test(gpu_server_mem, cuda_client_two_rails) { round_trip(2, 1, (5u << 20) + 333); }
Test(gpu_server_mem, small_cuda_to_cuda) { round_trip(1, 1, 4096 + 9); }

/* RO: a CUDA layer next to a host layer (descriptors of both kinds),
 * read by a host client and a CUDA client; writing is refused. */
Test(gpu_server_mem, ro_cuda_and_host_layers)
{
    static struct world w;
    size_t len = (2u << 20) + 100;
    driver_up(&w);
    CUdeviceptr d;
    cr_assert_eq(w.cu->MemAlloc(&d, len), 0);
    unsigned char *want = malloc(len), *hostl = malloc(len);
    cr_assert(want && hostl);
    fill(want, len, 13);
    fill(hostl, len, 17);
    host_to_dev(&w, d, want, len);
    railwire_mem lm[2];
    railwire_mem_init(&lm[0]);
    lm[0].kind = RAILWIRE_MEM_CUDA;
    lm[0].addr = (void *)(uintptr_t)d;
    lm[0].len = len;
    railwire_mem_init(&lm[1]);
    lm[1].addr = hostl;
    lm[1].len = len;
    railwire_server_opts so;
    railwire_server_opts_init(&so);
    so.transport = RAILWIRE_TRANSPORT_TCP;
    so.listen_host = "127.0.0.1";
    so.layer_mems = lm;
    so.n_layer_mems = 2;
    gt_log_capture();
    cr_assert_eq(railwire_server_create(&so, &w.s), 0);
    cr_assert(gt_log_has("layer 0:") && gt_log_has("cuda memory") && gt_log_has("path staged"),
              "%s", gt_log_text());
    char port[16];
    snprintf(port, sizeof(port), "%u", railwire_server_port(w.s));
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = 2;
    o.connect_timeout_ms = 3000;
    o.io_timeout_ms = 10000;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", port, &o, &w.rs), 0);
    for (int cuda = 0; cuda < 2; cuda++) {
        struct local l;
        local_up(&w, &l, cuda, len);
        cr_assert_eq(railwire_read(w.rs, l.mr, local_ptr(&l), len, 0, 0, 10000), 0);
        cr_assert(memcmp(local_bytes(&w, &l, len), want, len) == 0, "CUDA layer differs");
        cr_assert_eq(railwire_read(w.rs, l.mr, local_ptr(&l), len - 1, 1, 1, 10000), 0);
        cr_assert(memcmp(local_bytes(&w, &l, len - 1), hostl + 1, len - 1) == 0,
                  "host layer differs");
        cr_assert_lt(railwire_write(w.rs, l.mr, local_ptr(&l), 4096, 0, 0, 10000), 0,
                     "a RO layer took a WRITE");
        local_down(&w, &l);
    }
    struct railwire_server_stats st;
    cr_assert_eq(railwire_server_stats(w.s, &st, sizeof(st)), 0);
    cr_assert_eq(st.regs_staged, 1);
    cr_assert_eq(st.regs_host, 1);
    cr_assert_eq(st.registrations, 2);
    railwire_railset_close(w.rs);
    railwire_server_destroy(w.s);
    w.cu->MemFree(d);
    w.cu->StreamDestroy(w.stream);
    free(want);
    free(hostl);
}

/* A 16 KiB bound (4 chunks of 4 KiB) shared by many concurrent transfers
 * on 2 rails: they all complete whole, the pool never allocates past the
 * bound, and every chunk comes back. */
Test(gpu_server_mem, tiny_staging_bound_many_transfers)
{
    static struct world w;
    enum { N = 24, LEN = 96 * 1024 + 5 };
    world_up(&w, 2, 16u << 10);
    struct local l;
    local_up(&w, &l, 1, (size_t)N * LEN);
    local_set(&w, &l, (size_t)N * LEN, 5);
    railwire_op ops[N];
    railwire_handle h[N];
    memset(ops, 0, sizeof(ops));
    for (int i = 0; i < N; i++) {
        int rd = i % 2;
        ops[i] = (railwire_op){.opcode = rd ? RAILWIRE_OP_READ : RAILWIRE_OP_WRITE, .mr = l.mr,
                               .local = (void *)(uintptr_t)(l.dev + (size_t)i * LEN),
                               .length = LEN, .remote_offset = (uint64_t)i * LEN * 2,
                               .user_data = (uint64_t)i};
    }
    cr_assert_eq(railwire_submit_batch(w.rs, ops, N, h), N);
    int done = 0;
    while (done < N) {
        railwire_completion c[N];
        int n = railwire_wait(w.rs, c, N, 30000);
        cr_assert_gt(n, 0, "transfers stalled under the staging bound");
        for (int k = 0; k < n; k++)
            cr_assert_eq(c[k].status, 0, "%s", railwire_strerror(c[k].status));
        done += n;
    }
    unsigned char *dev = malloc((size_t)N * LEN), *srv = malloc(LEN);
    cr_assert(dev && srv);
    dev_to_host(&w, dev, l.dev, (size_t)N * LEN);
    for (int i = 0; i < N; i++) {
        size_t off = (size_t)i * LEN * 2;
        if (i % 2) {
            cr_assert(memcmp(dev + (size_t)i * LEN, w.shadow + off, LEN) == 0,
                      "READ %d differs", i);
        } else {
            dev_to_host(&w, srv, w.arena + off, LEN);
            cr_assert(memcmp(srv, l.host + (size_t)i * LEN, LEN) == 0, "WRITE %d differs", i);
        }
    }
    struct railwire_server_stats st;
    cr_assert_eq(railwire_server_stats(w.s, &st, sizeof(st)), 0);
    cr_assert_eq(st.staging_bound, 16u << 10);
    cr_assert_eq(st.staging_chunk, 4u << 10);
    cr_assert_leq(st.staging_allocated, st.staging_bound, "allocated past the bound");
    cr_assert_gt(st.staging_allocated, 0);
    cr_assert_eq(st.staging_in_use, 0, "every chunk came back");
    char text[16384];
    ssize_t n = railwire_server_metrics(w.s, text, sizeof(text));
    cr_assert(n > 0 && (size_t)n < sizeof(text));
    cr_assert(strstr(text, "railwire_server_registrations_by_path{transport=\"tcp\","
                           "path=\"staged\"} 1\n"), "%s", text);
    cr_assert(strstr(text, "railwire_server_staging_bound_bytes 16384\n"), "%s", text);
    free(dev);
    free(srv);
    local_down(&w, &l);
    world_down(&w);
}

/* Back-pressure made visible: with the stand-in's copies held (its gate),
 * READs on 2 rails take every chunk of a 4-chunk pool and the next request
 * finds none (staging_waits) while nothing is allocated past the bound;
 * once the copies run, every transfer completes whole. */
Test(gpu_server_mem, a_full_pool_makes_requests_wait)
{
    static struct world w;
    /* 128 KiB: above the 64 KiB up to which a tcp railset of 2 rails on
     * few cores packs transfers onto one rail (rw_stripe_packs), so the
     * READs spread over both rails as this test needs. */
    enum { N = 8, LEN = 128 * 1024 };
    world_up(&w, 2, 16u << 10);
    standin_gate_fn gate = (standin_gate_fn)gt_standin_sym(STANDIN_GATE_SYM);
    cr_assert_not_null(gate);
    struct local l;
    local_up(&w, &l, 0, (size_t)N * LEN); /* host: the client copies nothing */
    railwire_op ops[N];
    railwire_handle h[N];
    for (int i = 0; i < N; i++)
        ops[i] = (railwire_op){.opcode = RAILWIRE_OP_READ, .mr = l.mr,
                               .local = l.host + (size_t)i * LEN, .length = LEN,
                               .remote_offset = (uint64_t)i * LEN * 3, .user_data = (uint64_t)i};
    gate(1);
    cr_assert_eq(railwire_submit_batch(w.rs, ops, N, h), N);
    struct railwire_server_stats st;
    int64_t end = rw_now_ms() + 20000;
    do {
        cr_assert_eq(railwire_server_stats(w.s, &st, sizeof(st)), 0);
        if (st.staging_waits > 0 && st.staging_in_use == st.staging_bound)
            break;
        usleep(2000);
    } while (rw_now_ms() < end);
    gate(0);
    cr_assert_gt(st.staging_waits, 0, "no request waited for a chunk");
    cr_assert_eq(st.staging_in_use, st.staging_bound, "the pool was not full");
    cr_assert_leq(st.staging_allocated, st.staging_bound, "allocated past the bound");
    for (int done = 0; done < N;) {
        railwire_completion c[N];
        int n = railwire_wait(w.rs, c, N, 30000);
        cr_assert_gt(n, 0, "transfers stalled after the pool filled");
        for (int k = 0; k < n; k++)
            cr_assert_eq(c[k].status, 0, "%s", railwire_strerror(c[k].status));
        done += n;
    }
    for (int i = 0; i < N; i++)
        cr_assert(memcmp(l.host + (size_t)i * LEN, w.shadow + (size_t)i * LEN * 3, LEN) == 0,
                  "READ %d differs", i);
    /* The server gives a chunk back once its send returns, which the
     * client may see complete first: wait (bounded) for the last ones. */
    end = rw_now_ms() + 5000;
    do {
        cr_assert_eq(railwire_server_stats(w.s, &st, sizeof(st)), 0);
        if (st.staging_in_use == 0)
            break;
        usleep(2000);
    } while (rw_now_ms() < end);
    cr_assert_eq(st.staging_in_use, 0, "every chunk came back");
    cr_assert_leq(st.staging_allocated, st.staging_bound);
    local_down(&w, &l);
    world_down(&w);
}

/* Host descriptors behave as layers: host path, and the driver is never
 * loaded. */
Test(gpu_server_mem, host_descriptors_never_load_the_driver)
{
    unsigned char a[8192], b[8192];
    fill(a, sizeof(a), 3);
    railwire_mem am;
    railwire_mem_init(&am);
    am.addr = a;
    am.len = sizeof(a);
    railwire_server_opts so;
    railwire_server_opts_init(&so);
    so.dialect = RAILWIRE_DIALECT_RW;
    so.transport = RAILWIRE_TRANSPORT_TCP;
    so.listen_host = "127.0.0.1";
    so.arena_mem = &am;
    static struct world w;
    cr_assert_eq(railwire_server_create(&so, &w.s), 0);
    connect_rw(&w, 1);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(w.rs, b, sizeof(b), &mr), 0);
    cr_assert_eq(railwire_read(w.rs, mr, b, sizeof(b), 0, 0, 5000), 0);
    cr_assert(memcmp(a, b, sizeof(b)) == 0);
    struct railwire_server_stats st;
    cr_assert_eq(railwire_server_stats(w.s, &st, sizeof(st)), 0);
    cr_assert_eq(st.regs_host, 1);
    cr_assert_eq(st.staging_bound, 0, "no staging pool for host memory");
    char text[16384];
    cr_assert_gt(railwire_server_metrics(w.s, text, sizeof(text)), 0);
    cr_assert(strstr(text, "path=\"host\"} 1\n"), "%s", text);
    cr_assert_null(strstr(text, "railwire_server_staging_"), "%s", text);
    cr_assert_eq(rw_cuda_loaded(), 0, "host memory must not load the driver");
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    railwire_railset_close(w.rs);
    railwire_server_destroy(w.s);
}

static int fd_count(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    cr_assert_not_null(d);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static int create_fails(const railwire_server_opts *so)
{
    railwire_server *s = NULL;
    int rc = railwire_server_create(so, &s);
    cr_assert_null(s);
    return rc;
}

Test(gpu_server_mem, option_checks_name_the_field)
{
    unsigned char a[4096];
    railwire_region r = {a, sizeof(a)};
    railwire_mem m[2];
    railwire_mem_init(&m[0]);
    m[0].addr = a;
    m[0].len = sizeof(a);
    railwire_mem_init(&m[1]);
    m[1].addr = a;
    m[1].len = 0;
    railwire_server_opts so;
    railwire_server_opts_init(&so);
    so.transport = RAILWIRE_TRANSPORT_TCP;
    so.listen_host = "127.0.0.1";
    so.layers = &r;
    so.n_layers = 1;
    so.layer_mems = m;
    so.n_layer_mems = 1;
    gt_log_capture();
    cr_assert_eq(create_fails(&so), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("both layers and layer_mems"), "%s", gt_log_text());
    so.layers = NULL;
    so.n_layers = 0;
    so.n_layer_mems = 2;
    gt_log_capture();
    cr_assert_eq(create_fails(&so), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("layer_mems[1]") && gt_log_has("len"), "%s", gt_log_text());
    so.n_layer_mems = 1;
    so.staging_bytes = 100;
    gt_log_capture();
    cr_assert_eq(create_fails(&so), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("staging_bytes"), "%s", gt_log_text());
    so.staging_bytes = 0;
    so.dialect = RAILWIRE_DIALECT_RW;
    so.arena = r;
    so.layer_mems = NULL;
    so.n_layer_mems = 0;
    so.arena_mem = m;
    gt_log_capture();
    cr_assert_eq(create_fails(&so), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("both arena and arena_mem"), "%s", gt_log_text());
    so.arena = (railwire_region){NULL, 0};
    so.layer_mems = m;
    so.n_layer_mems = 1;
    gt_log_capture();
    cr_assert_eq(create_fails(&so), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("layer_mems is set but the dialect is RW"), "%s", gt_log_text());
}

static void cuda_arena_opts(railwire_server_opts *so, railwire_mem *am, void *addr, size_t len)
{
    railwire_mem_init(am);
    am->kind = RAILWIRE_MEM_CUDA;
    am->addr = addr;
    am->len = len;
    railwire_server_opts_init(so);
    so->dialect = RAILWIRE_DIALECT_RW;
    so->transport = RAILWIRE_TRANSPORT_TCP;
    so->listen_host = "127.0.0.1";
    so->arena_mem = am;
}

Test(gpu_server_mem, no_driver_at_create_is_clear_and_leaks_nothing)
{
    setenv("RAILWIRE_CUDA_LIBRARY", "/nonexistent/libcuda-srv.so.1", 1);
    railwire_server_opts so;
    railwire_mem am;
    cuda_arena_opts(&so, &am, (void *)(uintptr_t)0x7f0000001000ull, 1u << 20);
    int fds = fd_count();
    gt_log_capture();
    cr_assert_eq(create_fails(&so), RAILWIRE_E_NO_DEVICE);
    cr_assert(gt_log_has("/nonexistent/libcuda-srv.so.1"), "%s", gt_log_text());
    cr_assert(gt_log_has("arena_mem"), "%s", gt_log_text());
    cr_assert_eq(fd_count(), fds, "a descriptor leaked");
}

Test(gpu_server_mem, a_failing_driver_at_create_is_clear_and_leaks_nothing)
{
    static struct world w;
    driver_up(&w);
    CUdeviceptr d;
    cr_assert_eq(w.cu->MemAlloc(&d, 1u << 20), 0);
    railwire_server_opts so;
    railwire_mem am;
    cuda_arena_opts(&so, &am, (void *)(uintptr_t)d, 1u << 20);
    int fds = fd_count();
    setenv("RAILWIRE_STANDIN_FAIL", "cuPointerGetAttribute", 1);
    gt_log_capture();
    cr_assert_lt(create_fails(&so), 0);
    cr_assert(gt_log_has("cuPointerGetAttribute") && gt_log_has("arena_mem"), "%s",
              gt_log_text());
    unsetenv("RAILWIRE_STANDIN_FAIL");
    cr_assert_eq(fd_count(), fds, "a descriptor leaked");
    struct standin_stats ss;
    standin_stats_fn stats = (standin_stats_fn)gt_standin_sym(STANDIN_STATS_SYM);
    cr_assert_not_null(stats);
    stats(&ss);
    cr_assert_eq(ss.allocs_live, 1, "only the test's own allocation is left");
    w.cu->MemFree(d);
    w.cu->StreamDestroy(w.stream);
}

/* A copy that fails while serving: the server names the CUDA call and
 * closes that rail connection (the client's transfer fails, here after its
 * heals also fail), keeps running, and serves the next client. */
Test(gpu_server_mem, a_failing_copy_while_serving_is_clear)
{
    static struct world w;
    world_up(&w, 1, 0);
    unsigned char buf[8192];
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(w.rs, buf, sizeof(buf), &mr), 0);
    setenv("RAILWIRE_STANDIN_FAIL", "cuMemcpyDtoHAsync_v2", 1);
    gt_log_capture();
    int rc = railwire_read(w.rs, mr, buf, sizeof(buf), 0, 0, 5000);
    cr_assert_lt(rc, 0);
    cr_assert(gt_log_has("cuMemcpyDtoHAsync"), "%s", gt_log_text());
    unsetenv("RAILWIRE_STANDIN_FAIL");
    railwire_railset_close(w.rs);
    connect_rw(&w, 1);
    cr_assert_eq(railwire_mr_register(w.rs, buf, sizeof(buf), &mr), 0);
    cr_assert_eq(railwire_read(w.rs, mr, buf, sizeof(buf), 0, 64, 5000), 0);
    cr_assert(memcmp(buf, w.shadow + 64, sizeof(buf)) == 0);
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    world_down(&w);
}
