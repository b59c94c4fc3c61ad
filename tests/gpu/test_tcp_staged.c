/* SPDX-License-Identifier: MIT */
/* CUDA memory on tcp (path "staged") against the stand-in driver, whose
 * device memory the CPU cannot touch: READ and WRITE between a host arena
 * and CUDA memory on 1 and 2 rails, checked byte for byte through the
 * stand-in's copies; the staging bound (one chunk for many slices:
 * transfers wait, nothing more is allocated). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <railwire.h>

#include "common/time.h"
#include "gpu/cuda_driver.h"
#include "gpu/staging.h"
#include "cuda_standin.h"
#include "gtest.h"
#include "rail/client/railset_internal.h"
#include "rail/client/railset_testing.h"

TestSuite(gpu_tcp_staged, .timeout = 240);

#define ARENA (8u << 20)

struct world {
    railwire_server *s;
    railwire_railset *rs;
    unsigned char *arena;
    const struct rw_cuda *cu;
    CUstream stream;
};

static void world_up(struct world *w, unsigned rails, size_t staging)
{
    gt_use_standin();
    cr_assert_eq(rw_cuda_get(&w->cu), 0);
    cr_assert_eq(rw_cuda_use_device(0), 0);
    cr_assert_eq(w->cu->StreamCreate(&w->stream, 0), 0);
    w->arena = malloc(ARENA);
    cr_assert_not_null(w->arena);
    for (size_t i = 0; i < ARENA; i++)
        w->arena[i] = (unsigned char)(i * 7 + (i >> 12));
    railwire_server_opts so;
    railwire_server_opts_init(&so);
    so.dialect = RAILWIRE_DIALECT_RW;
    so.transport = RAILWIRE_TRANSPORT_TCP;
    so.listen_host = "127.0.0.1";
    so.arena = (railwire_region){w->arena, ARENA};
    cr_assert_eq(railwire_server_create(&so, &w->s), 0);
    char port[16];
    snprintf(port, sizeof(port), "%u", railwire_server_port(w->s));
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = rails;
    o.connect_timeout_ms = 3000;
    o.io_timeout_ms = 10000;
    o.staging_bytes = staging;
    o.slice_size = 256u << 10;
    o.heal_backoff_min_ms = 20;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", port, &o, &w->rs), 0);
}

static void world_down(struct world *w)
{
    railwire_railset_close(w->rs);
    railwire_server_destroy(w->s);
    w->cu->StreamDestroy(w->stream);
    free(w->arena);
}

/* Device <-> host through the stand-in's own copies. */
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

static railwire_mr *reg_cuda(struct world *w, CUdeviceptr d, size_t len)
{
    railwire_mem m;
    railwire_mr *mr;
    railwire_mem_init(&m);
    m.kind = RAILWIRE_MEM_CUDA;
    m.addr = (void *)(uintptr_t)d;
    m.len = len;
    cr_assert_eq(railwire_mr_register_mem(w->rs, &m, &mr), 0);
    return mr;
}

static void round_trip(unsigned rails, size_t len, size_t staging)
{
    static struct world w;
    CUdeviceptr d;
    unsigned char *back = malloc(len), *src = malloc(len);
    cr_assert(back && src);
    world_up(&w, rails, staging);
    cr_assert_eq(w.cu->MemAlloc(&d, len), 0);
    railwire_mr *mr = reg_cuda(&w, d, len);
    railwire_rail_stats st[2];
    cr_assert_eq(railwire_railset_stats(w.rs, st, rails, sizeof(st[0])), (int)rails);
    for (unsigned i = 0; i < rails; i++)
        cr_assert_eq(st[i].regs_staged, 1);
    /* READ: server host arena -> client CUDA memory */
    cr_assert_eq(railwire_read(w.rs, mr, (void *)(uintptr_t)d, len, 0, 4096, 10000), 0);
    dev_to_host(&w, back, d, len);
    cr_assert(memcmp(back, w.arena + 4096, len) == 0, "READ into CUDA memory differs");
    /* WRITE: client CUDA memory -> server host arena */
    for (size_t i = 0; i < len; i++)
        src[i] = (unsigned char)(i * 31 + 5 + (i >> 9));
    host_to_dev(&w, d, src, len);
    size_t at = ARENA - len;
    cr_assert_eq(railwire_write(w.rs, mr, (void *)(uintptr_t)d, len, 0, at, 10000), 0);
    cr_assert(memcmp(w.arena + at, src, len) == 0, "WRITE from CUDA memory differs");
    /* the bound held */
    struct rw_stage_stats ss;
    rw_stage_pool_stats(w.rs->stage_pool, &ss);
    cr_assert_leq(ss.allocated, ss.bound);
    cr_assert_eq(ss.in_use, 0, "every chunk came back");
    if (staging)
        cr_assert_leq(ss.allocated, staging < ss.chunk ? ss.chunk : staging);
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    world_down(&w);
    w.cu->MemFree(d);
    free(back);
    free(src);
}

Test(gpu_tcp_staged, small_one_rail) { round_trip(1, 4096 + 17, 0); }
Test(gpu_tcp_staged, striped_one_rail) { round_trip(1, 3u << 20, 0); }
Test(gpu_tcp_staged, striped_two_rails) { round_trip(2, (5u << 20) + 333, 0); }

/* One chunk for 2 rails and a transfer of many slices: the slices wait
 * for the chunk, and the pool never holds more than the bound. */
Test(gpu_tcp_staged, staging_bound_one_chunk) { round_trip(2, 6u << 20, 1u << 20); }

Test(gpu_tcp_staged, dmabuf_is_refused_on_tcp)
{
    static struct world w;
    railwire_mem m;
    railwire_mr *mr = NULL;
    world_up(&w, 1, 0);
    railwire_mem_init(&m);
    m.kind = RAILWIRE_MEM_DMABUF;
    m.dmabuf_fd = 0;
    m.addr = w.arena;
    m.len = 4096;
    gt_log_capture();
    cr_assert_lt(railwire_mr_register_mem(w.rs, &m, &mr), 0);
    cr_assert_null(mr);
    world_down(&w);
}

/* A rail killed while a READ into CUDA memory is in flight: its slices are
 * re-issued on the other rail, the bytes arrive whole, every chunk comes
 * back, and the healed rail carries staged transfers again. */
Test(gpu_tcp_staged, a_rail_killed_mid_transfer_heals)
{
    static struct world w;
    size_t len = 6u << 20;
    CUdeviceptr d;
    unsigned char *back = malloc(len);
    cr_assert_not_null(back);
    world_up(&w, 2, 2u << 20);
    cr_assert_eq(w.cu->MemAlloc(&d, len), 0);
    railwire_mr *mr = reg_cuda(&w, d, len);
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = (void *)(uintptr_t)d,
                      .length = len, .remote_offset = 1000, .user_data = 7};
    railwire_handle h;
    cr_assert_eq(railwire_submit(w.rs, &op, &h), 0);
    rw_test_kill_rail(w.rs, 1);
    railwire_completion c;
    cr_assert_eq(railwire_wait(w.rs, &c, 1, 20000), 1);
    cr_assert_eq(c.status, 0, "%s", railwire_strerror(c.status));
    dev_to_host(&w, back, d, len);
    cr_assert(memcmp(back, w.arena + 1000, len) == 0, "READ across the kill differs");
    /* The kill happens behind the railset's back: rail 1 still reads UP
     * until a detector notices (its slices may all have gone to rail 0,
     * staging allowing), so wait for the heal, not only for UP. */
    int64_t end = rw_now_ms() + 15000;
    while ((rw_test_rail_state(w.rs, 1) != RAILWIRE_RAIL_UP || rw_test_rail_stats(w.rs, 1).heals < 1) &&
           rw_now_ms() < end) {
        (void)railwire_read(w.rs, mr, (void *)(uintptr_t)d, 4096, 0, 0, 2000);
        usleep(10000);
    }
    cr_assert_eq(rw_test_rail_state(w.rs, 1), RAILWIRE_RAIL_UP, "rail 1 did not heal");
    railwire_rail_stats st = rw_test_rail_stats(w.rs, 1);
    cr_assert_geq(st.heals, 1);
    uint64_t before = st.bytes_read;
    cr_assert_eq(railwire_read(w.rs, mr, (void *)(uintptr_t)d, len, 0, 77, 10000), 0);
    dev_to_host(&w, back, d, len);
    cr_assert(memcmp(back, w.arena + 77, len) == 0, "READ after the heal differs");
    st = rw_test_rail_stats(w.rs, 1);
    cr_assert_gt(st.bytes_read, before, "the healed rail carried no staged bytes");
    struct rw_stage_stats ss;
    rw_stage_pool_stats(w.rs->stage_pool, &ss);
    cr_assert_eq(ss.in_use, 0, "every chunk came back");
    cr_assert_leq(ss.allocated, 2u << 20);
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    world_down(&w);
    w.cu->MemFree(d);
    free(back);
}

/* Copies overlap the network, yet a transfer never completes before its
 * copies: with the stand-in's copy workers held, a READ of many slices
 * into CUDA memory has every payload landed in staging (the server served
 * it all) but is not complete, and no copy to the device has run; once the
 * workers go, it completes and the bytes are right.  A WRITE submitted
 * while they are held has sent nothing (its payload is still in device
 * memory) until they go. */
Test(gpu_tcp_staged, transfer_completes_only_after_its_copies)
{
    static struct world w;
    size_t len = (3u << 20) + 99;
    CUdeviceptr d;
    unsigned char *back = malloc(len);
    cr_assert_not_null(back);
    world_up(&w, 2, 0);
    standin_gate_fn gate = (standin_gate_fn)gt_standin_sym(STANDIN_GATE_SYM);
    standin_stats_fn stats = (standin_stats_fn)gt_standin_sym(STANDIN_STATS_SYM);
    cr_assert(gate && stats);
    cr_assert_eq(w.cu->MemAlloc(&d, len), 0);
    railwire_mr *mr = reg_cuda(&w, d, len);
    struct standin_stats s0, s1;
    stats(&s0);
    gate(1);
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = (void *)(uintptr_t)d,
                      .length = len, .remote_offset = 555, .user_data = 9};
    railwire_handle h;
    cr_assert_eq(railwire_submit(w.rs, &op, &h), 0);
    /* The server sends every slice's payload while the copies are held. */
    int64_t end = rw_now_ms() + 20000;
    uint64_t got = 0;
    while (got < len && rw_now_ms() < end) {
        railwire_completion c;
        int n = railwire_wait(w.rs, &c, 1, 20);
        cr_assert_eq(n, RAILWIRE_E_TIMEOUT, "completed with its copies held (%d, status %d)", n,
                     n == 1 ? c.status : 0);
        struct railwire_server_stats ss;
        cr_assert_eq(railwire_server_stats(w.s, &ss, sizeof(ss)), 0);
        got = ss.bytes_read;
    }
    cr_assert_eq(got, len, "the server did not send every payload");
    railwire_completion c;
    cr_assert_eq(railwire_wait(w.rs, &c, 1, 200), RAILWIRE_E_TIMEOUT,
                 "completed before its copies ran");
    stats(&s1);
    cr_assert_eq(s1.htod, s0.htod, "a copy to the device ran through the gate");
    gate(0);
    cr_assert_eq(railwire_wait(w.rs, &c, 1, 20000), 1);
    cr_assert_eq(c.status, 0, "%s", railwire_strerror(c.status));
    stats(&s1);
    cr_assert_gt(s1.htod, s0.htod);
    dev_to_host(&w, back, d, len);
    cr_assert(memcmp(back, w.arena + 555, len) == 0, "READ into CUDA memory differs");
    struct rw_stage_stats ss;
    rw_stage_pool_stats(w.rs->stage_pool, &ss);
    cr_assert_eq(ss.in_use, 0, "every chunk came back");
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    world_down(&w);
    w.cu->MemFree(d);
    free(back);
}

struct killer {
    railwire_railset *rs;
    int done;
};

static void *kill_rail1(void *arg)
{
    struct killer *k = arg;
    rw_test_kill_rail(k->rs, 1);
    __atomic_store_n(&k->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* A rail killed while its READ copies are held: the kill waits for them
 * (once it returns nothing touches the device memory), the slices are
 * carried again on the other rail, and the transfer completes whole. */
Test(gpu_tcp_staged, kill_waits_for_held_copies)
{
    static struct world w;
    size_t len = 4u << 20;
    CUdeviceptr d;
    unsigned char *back = malloc(len);
    cr_assert_not_null(back);
    world_up(&w, 2, 0);
    standin_gate_fn gate = (standin_gate_fn)gt_standin_sym(STANDIN_GATE_SYM);
    cr_assert_not_null(gate);
    cr_assert_eq(w.cu->MemAlloc(&d, len), 0);
    railwire_mr *mr = reg_cuda(&w, d, len);
    gate(1);
    railwire_op op = {.opcode = RAILWIRE_OP_READ, .mr = mr, .local = (void *)(uintptr_t)d,
                      .length = len, .remote_offset = 3, .user_data = 5};
    railwire_handle h;
    cr_assert_eq(railwire_submit(w.rs, &op, &h), 0);
    railwire_completion c;
    struct railwire_server_stats ss = {0};
    int64_t end = rw_now_ms() + 20000;
    while (ss.bytes_read < len && rw_now_ms() < end) {
        cr_assert_eq(railwire_wait(w.rs, &c, 1, 20), RAILWIRE_E_TIMEOUT);
        cr_assert_eq(railwire_server_stats(w.s, &ss, sizeof(ss)), 0);
    }
    usleep(100000); /* the last payloads land in their chunks */
    struct killer k = {.rs = w.rs};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, kill_rail1, &k), 0);
    usleep(200000);
    cr_assert_eq(__atomic_load_n(&k.done, __ATOMIC_ACQUIRE), 0,
                 "the kill returned while its copies were held");
    gate(0);
    pthread_join(t, NULL);
    cr_assert_eq(railwire_wait(w.rs, &c, 1, 20000), 1);
    cr_assert_eq(c.status, 0, "%s", railwire_strerror(c.status));
    dev_to_host(&w, back, d, len);
    size_t bad = 0;
    while (bad < len && back[bad] == w.arena[3 + bad])
        bad++;
    cr_assert_eq(bad, len, "READ across the kill differs from byte %zu (slice %zu)", bad,
                 bad / (256u << 10));
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    world_down(&w);
    w.cu->MemFree(d);
    free(back);
}
