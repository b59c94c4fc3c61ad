/* SPDX-License-Identifier: MIT */
/* Striped READ and WRITE over real loopback sockets and a real server, 1, 2,
 * 4 and 8 rails, both dialects, random sizes (1 B .. 64 MiB) at random
 * offsets, every byte checked against the server's memory; and several
 * clients at once. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench_pattern.h"
#include "e2e/e2e_util.h"

#define MiB (1024u * 1024u)
#define MAX_XFER (64u * MiB)
#define ARENA (80u * MiB)
#define LOCAL (80u * MiB)
#define ROUNDS 4
#define MAX_OPS 8
#define TIMEOUT_MS 120000

static uint8_t *map_local(size_t len)
{
    uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(p != MAP_FAILED);
    return p;
}

/* Places k ranges of the given sizes at random non-overlapping offsets in
 * [0, space), in order, with random gaps. */
static void place(uint64_t *rng, const size_t *sizes, unsigned k, size_t space, uint64_t *offs)
{
    size_t used = 0, pos = 0, free_space;

    for (unsigned i = 0; i < k; i++)
        used += sizes[i];
    cr_assert_leq(used, space);
    free_space = space - used;
    for (unsigned i = 0; i < k; i++) {
        size_t gap = free_space ? (size_t)(e2e_rand(rng) % (free_space / (k - i) + 1)) : 0;
        free_space -= gap;
        pos += gap;
        offs[i] = pos;
        pos += sizes[i];
    }
}

/* Picks 1..MAX_OPS random sizes whose sum fits `space`. */
static unsigned pick_sizes(uint64_t *rng, size_t max, size_t space, size_t *sizes)
{
    unsigned want = 1 + (unsigned)(e2e_rand(rng) % MAX_OPS), k = 0;
    size_t sum = 0;

    while (k < want) {
        size_t s = e2e_rand_size(rng, max);
        if (sum + s > space)
            break;
        sizes[k++] = s;
        sum += s;
    }
    if (!k)
        sizes[k++] = 1 + (size_t)(e2e_rand(rng) % 4096);
    return k;
}

/* Submits k transfers as one batch and asserts every one completed OK. */
static void run_batch(railwire_railset *rs, railwire_op *ops, unsigned k)
{
    railwire_handle h[MAX_OPS];
    int st[MAX_OPS];

    for (unsigned i = 0; i < k; i++) {
        ops[i].user_data = i;
        st[i] = 1;
    }
    cr_assert_eq(railwire_submit_batch(rs, ops, k, h), (int)k);
    cr_assert_eq(e2e_wait_all(rs, st, k, TIMEOUT_MS), (int)k, "transfers did not all complete");
    for (unsigned i = 0; i < k; i++)
        cr_assert_eq(st[i], 0, "%s #%u (%zu bytes at layer %u offset %llu) failed: %s",
                     ops[i].opcode == RAILWIRE_OP_READ ? "READ" : "WRITE", i, ops[i].length,
                     ops[i].layer, (unsigned long long)ops[i].remote_offset,
                     railwire_strerror(st[i]));
}

static void check_same(const uint8_t *got, const uint8_t *want, size_t len, const char *what,
                       unsigned layer, uint64_t off)
{
    long d = e2e_first_diff(got, want, len);
    cr_assert_eq(d, -1, "%s of %zu bytes at layer %u offset %llu differs at byte %ld", what, len,
                 layer, (unsigned long long)off, d);
}

/* The server's counters after the READs: bytes_read_by_reference is part
 * of bytes_read, and with zero_copy_reads (by_ref) every READ of 128 KiB
 * or more went by reference, so there are some if one was that big. */
static void check_by_reference(railwire_server *srv, int by_ref, size_t biggest_read)
{
    struct railwire_server_stats st;

    cr_assert_eq(railwire_server_stats(srv, &st, sizeof(st)), 0);
    cr_assert_leq(st.bytes_read_by_reference, st.bytes_read);
    if (!by_ref)
        cr_assert_eq(st.bytes_read_by_reference, 0, "copied unless asked");
    else if (biggest_read >= (128u << 10))
        cr_assert_gt(st.bytes_read_by_reference, 0, "the big READs went by reference");
}

static void random_rw(unsigned rails, void (*tweak)(railwire_server_opts *o))
{
    struct e2e_server s;
    size_t arena = ARENA;
    railwire_railset *rs = NULL;
    railwire_mr *mr = NULL;
    uint8_t *local = map_local(LOCAL);
    uint64_t rng = e2e_seed("random RW transfers");
    size_t biggest_read = 0;
    int rc;

    e2e_server_start(&s, RAILWIRE_DIALECT_RW, &arena, 1, tweak);
    rc = e2e_connect(s.port, RAILWIRE_DIALECT_RW, rails, 0, 0, &rs);
    cr_assert_eq(rc, 0, "connect: %s", railwire_strerror(rc));
    cr_assert_eq(railwire_railset_rail_count(rs), rails);
    cr_assert_eq(railwire_mr_register(rs, local, LOCAL, &mr), 0);

    for (unsigned round = 0; round < ROUNDS; round++) {
        size_t sizes[MAX_OPS];
        uint64_t roff[MAX_OPS], loff[MAX_OPS];
        railwire_op ops[MAX_OPS];
        unsigned k = pick_sizes(&rng, MAX_XFER, arena, sizes);

        /* WRITE: distinct remote ranges, fresh data from a per-round seed. */
        place(&rng, sizes, k, arena, roff);
        place(&rng, sizes, k, LOCAL, loff);
        for (unsigned i = 0; i < k; i++) {
            bench_pattern_fill(local + loff[i], sizes[i], 10 + round, 0, roff[i]);
            ops[i] = (railwire_op){.opcode = RAILWIRE_OP_WRITE, .mr = mr, .local = local + loff[i],
                                   .length = sizes[i], .remote_offset = roff[i]};
        }
        run_batch(rs, ops, k);
        for (unsigned i = 0; i < k; i++)
            check_same(s.mem + roff[i], local + loff[i], sizes[i], "server memory after WRITE", 0,
                       roff[i]);

        /* READ: any remote ranges (they may overlap), distinct local ones. */
        k = pick_sizes(&rng, MAX_XFER, LOCAL, sizes);
        place(&rng, sizes, k, LOCAL, loff);
        for (unsigned i = 0; i < k; i++) {
            roff[i] = e2e_rand(&rng) % (arena - sizes[i] + 1);
            biggest_read = sizes[i] > biggest_read ? sizes[i] : biggest_read;
            memset(local + loff[i], 0xEE, sizes[i]);
            ops[i] = (railwire_op){.opcode = RAILWIRE_OP_READ, .mr = mr, .local = local + loff[i],
                                   .length = sizes[i], .remote_offset = roff[i]};
        }
        run_batch(rs, ops, k);
        for (unsigned i = 0; i < k; i++)
            check_same(local + loff[i], s.mem + roff[i], sizes[i], "READ", 0, roff[i]);
    }
    railwire_rail_stats st[RAILWIRE_MAX_RAILS];
    cr_assert_eq(railwire_railset_stats(rs, st, RAILWIRE_MAX_RAILS, sizeof(*st)), (int)rails);
    for (unsigned r = 0; r < rails; r++)
        cr_assert_eq(st[r].state, RAILWIRE_RAIL_UP, "rail %u went down", r);
    check_by_reference(s.srv, tweak != NULL, biggest_read);
    railwire_railset_close(rs);
    e2e_server_stop(&s);
    munmap(local, LOCAL);
}

static void random_ro(unsigned rails, void (*tweak)(railwire_server_opts *o))
{
    const size_t layers[3] = {72u * MiB, 4096, 3u * MiB + 17};
    struct e2e_server s;
    railwire_railset *rs = NULL;
    railwire_mr *mr = NULL;
    uint8_t *local = map_local(LOCAL);
    uint64_t rng = e2e_seed("random RO transfers");
    size_t biggest_read = 0;
    int rc;

    e2e_server_start(&s, RAILWIRE_DIALECT_RO, layers, 3, tweak);
    rc = e2e_connect(s.port, RAILWIRE_DIALECT_RO, rails, 0, 0, &rs);
    cr_assert_eq(rc, 0, "connect: %s", railwire_strerror(rc));
    cr_assert_eq(railwire_railset_layer_count(rs), 3);
    cr_assert_eq(railwire_mr_register(rs, local, LOCAL, &mr), 0);

    for (unsigned round = 0; round < ROUNDS + 2; round++) {
        size_t sizes[MAX_OPS];
        uint64_t loff[MAX_OPS];
        railwire_op ops[MAX_OPS];
        unsigned k = pick_sizes(&rng, MAX_XFER, LOCAL, sizes);

        place(&rng, sizes, k, LOCAL, loff);
        for (unsigned i = 0; i < k; i++) {
            uint32_t layer = (uint32_t)(e2e_rand(&rng) % 3);
            if (sizes[i] > layers[layer])
                layer = 0;
            biggest_read = sizes[i] > biggest_read ? sizes[i] : biggest_read;
            memset(local + loff[i], 0xEE, sizes[i]);
            ops[i] = (railwire_op){.opcode = RAILWIRE_OP_READ, .mr = mr, .local = local + loff[i],
                                   .length = sizes[i], .layer = layer,
                                   .remote_offset = e2e_rand(&rng) % (layers[layer] - sizes[i] + 1)};
        }
        run_batch(rs, ops, k);
        for (unsigned i = 0; i < k; i++)
            check_same(local + loff[i],
                       (const uint8_t *)s.regions[ops[i].layer].addr + ops[i].remote_offset,
                       sizes[i], "READ", ops[i].layer, ops[i].remote_offset);
    }
    check_by_reference(s.srv, tweak != NULL, biggest_read);
    railwire_railset_close(rs);
    e2e_server_stop(&s);
    munmap(local, LOCAL);
}

Test(transfer, rw_1_rail, .timeout = 240) { random_rw(1, NULL); }
Test(transfer, rw_2_rails, .timeout = 240) { random_rw(2, NULL); }
Test(transfer, rw_4_rails, .timeout = 240) { random_rw(4, NULL); }
Test(transfer, rw_8_rails, .timeout = 240) { random_rw(8, NULL); }
Test(transfer, ro_1_rail, .timeout = 240) { random_ro(1, NULL); }
Test(transfer, ro_2_rails, .timeout = 240) { random_ro(2, NULL); }
Test(transfer, ro_4_rails, .timeout = 240) { random_ro(4, NULL); }
Test(transfer, ro_8_rails, .timeout = 240) { random_ro(8, NULL); }

/* READ answers of 128 KiB and more handed to the sockets by reference to
 * the published memory (railwire_server_opts.zero_copy_reads): the same
 * random batches, every byte checked, with WRITEs into the arena between
 * the READs of it. */
static void zero_copy(railwire_server_opts *o) { o->zero_copy_reads = 1; }
Test(transfer, rw_1_rail_zero_copy_reads, .timeout = 240) { random_rw(1, zero_copy); }
Test(transfer, rw_4_rails_zero_copy_reads, .timeout = 240) { random_rw(4, zero_copy); }
Test(transfer, ro_2_rails_zero_copy_reads, .timeout = 240) { random_ro(2, zero_copy); }

/* Every rail carries part of a large striped transfer. */
Test(transfer, striping_uses_every_rail, .timeout = 120)
{
    size_t arena = 16u * MiB;
    struct e2e_server s;
    railwire_railset *rs = NULL;
    railwire_mr *mr = NULL;
    uint8_t *local = map_local(arena);
    railwire_rail_stats st[RAILWIRE_MAX_RAILS];

    e2e_server_start(&s, RAILWIRE_DIALECT_RW, &arena, 1, NULL);
    cr_assert_eq(e2e_connect(s.port, RAILWIRE_DIALECT_RW, 4, 0, 0, &rs), 0);
    cr_assert_eq(railwire_mr_register(rs, local, arena, &mr), 0);
    cr_assert_eq(e2e_transfer(rs, RAILWIRE_OP_READ, mr, local, arena, 0, 0, TIMEOUT_MS), 0);
    check_same(local, s.mem, arena, "READ", 0, 0);
    cr_assert_eq(railwire_railset_stats(rs, st, RAILWIRE_MAX_RAILS, sizeof(*st)), 4);
    for (unsigned r = 0; r < 4; r++)
        cr_assert_gt(st[r].bytes_read, 0, "rail %u carried nothing of a 16 MiB READ", r);
    railwire_railset_close(rs);
    e2e_server_stop(&s);
    munmap(local, arena);
}

/* Several clients at once, each on its own part of one arena, plus one
 * reading the whole arena's untouched tail. */
#define N_CLIENTS 4
#define PART (8u * MiB)

struct client_arg {
    const char *port;
    uint8_t *server_part;
    uint64_t part_off;
    uint64_t seed;
    int rc;
    char why[200];
};

static void *client_main(void *p)
{
    struct client_arg *a = p;
    railwire_railset *rs = NULL;
    railwire_mr *mr = NULL;
    uint8_t *buf = malloc(2 * PART);
    uint64_t rng = a->seed;

    a->rc = -1;
    if (!buf)
        return NULL;
    if (e2e_connect(a->port, RAILWIRE_DIALECT_RW, 2, 0, 0, &rs) < 0) {
        snprintf(a->why, sizeof(a->why), "connect failed");
        goto out;
    }
    if (railwire_mr_register(rs, buf, 2 * PART, &mr) < 0) {
        snprintf(a->why, sizeof(a->why), "register failed");
        goto out;
    }
    for (unsigned it = 0; it < 6; it++) {
        size_t len = e2e_rand_size(&rng, PART);
        uint64_t off = e2e_rand(&rng) % (PART - len + 1);
        int rc;
        bench_pattern_fill(buf, len, 20 + it, 0, a->part_off + off);
        rc = e2e_transfer(rs, RAILWIRE_OP_WRITE, mr, buf, len, 0, a->part_off + off, TIMEOUT_MS);
        if (rc) {
            snprintf(a->why, sizeof(a->why), "WRITE %zu at %llu: %s", len,
                     (unsigned long long)(a->part_off + off), railwire_strerror(rc));
            goto out;
        }
        memset(buf + PART, 0, len);
        rc = e2e_transfer(rs, RAILWIRE_OP_READ, mr, buf + PART, len, 0, a->part_off + off, TIMEOUT_MS);
        if (rc || memcmp(buf, buf + PART, len) || memcmp(buf, a->server_part + off, len)) {
            snprintf(a->why, sizeof(a->why), "READ back %zu at %llu: %s", len,
                     (unsigned long long)(a->part_off + off), rc ? railwire_strerror(rc) : "data differs");
            goto out;
        }
    }
    a->rc = 0;
out:
    railwire_railset_close(rs);
    free(buf);
    return NULL;
}

Test(transfer, several_clients_at_once, .timeout = 240)
{
    size_t arena = N_CLIENTS * PART;
    struct e2e_server s;
    struct client_arg args[N_CLIENTS];
    pthread_t th[N_CLIENTS];
    uint64_t seed = e2e_seed("several clients");

    e2e_server_start(&s, RAILWIRE_DIALECT_RW, &arena, 1, NULL);
    for (unsigned i = 0; i < N_CLIENTS; i++) {
        args[i] = (struct client_arg){.port = s.port, .server_part = s.mem + i * PART,
                                      .part_off = (uint64_t)i * PART, .seed = seed + i};
        cr_assert_eq(pthread_create(&th[i], NULL, client_main, &args[i]), 0);
    }
    for (unsigned i = 0; i < N_CLIENTS; i++) {
        pthread_join(th[i], NULL);
        cr_expect_eq(args[i].rc, 0, "client %u: %s", i, args[i].why);
    }
    e2e_server_stop(&s);
}
