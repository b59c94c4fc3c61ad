/* SPDX-License-Identifier: MIT */
#include "e2e/e2e_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "bench_pattern.h"

void e2e_server_start(struct e2e_server *s, enum railwire_dialect dialect, const size_t *layer_len,
                      unsigned n_layers, void (*tweak)(railwire_server_opts *o))
{
    static const char *const rail_addr[] = {"127.0.0.1"};
    railwire_server_opts o;
    size_t off = 0;
    int rc;

    memset(s, 0, sizeof(*s));
    cr_assert(n_layers >= 1 && n_layers <= E2E_MAX_LAYERS);
    if (dialect == RAILWIRE_DIALECT_RW)
        n_layers = 1;
    s->dialect = dialect;
    s->n_layers = n_layers;
    for (unsigned l = 0; l < n_layers; l++)
        s->mem_len += layer_len[l];
    s->mem = mmap(NULL, s->mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(s->mem != MAP_FAILED, "cannot map %zu bytes", s->mem_len);
    for (unsigned l = 0; l < n_layers; l++) {
        s->regions[l].addr = s->mem + off;
        s->regions[l].len = layer_len[l];
        bench_pattern_fill(s->regions[l].addr, layer_len[l], 0, l, 0);
        off += layer_len[l];
    }
    railwire_server_opts_init(&o);
    o.dialect = dialect;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.listen_host = "127.0.0.1";
    o.listen_port = "0";
    o.rail_addrs = rail_addr;
    o.n_rail_addrs = 1;
    if (dialect == RAILWIRE_DIALECT_RO) {
        o.layers = s->regions;
        o.n_layers = n_layers;
    } else {
        o.arena = s->regions[0];
    }
    if (tweak)
        tweak(&o);
    rc = railwire_server_create(&o, &s->srv);
    cr_assert_eq(rc, 0, "railwire_server_create: %s", railwire_strerror(rc));
    snprintf(s->port, sizeof(s->port), "%u", railwire_server_port(s->srv));
}

void e2e_server_stop(struct e2e_server *s)
{
    railwire_server_destroy(s->srv);
    s->srv = NULL;
    if (s->mem)
        munmap(s->mem, s->mem_len);
    s->mem = NULL;
}

int e2e_connect(const char *port, enum railwire_dialect dialect, unsigned rails, int connect_ms,
                int io_ms, railwire_railset **out)
{
    railwire_railset_opts o;

    railwire_railset_opts_init(&o);
    o.dialect = dialect;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = rails;
    if (connect_ms)
        o.connect_timeout_ms = connect_ms;
    if (io_ms)
        o.io_timeout_ms = io_ms;
    return railwire_railset_connect("127.0.0.1", port, &o, out);
}

uint64_t e2e_seed(const char *what)
{
    const char *env = getenv("RAILWIRE_E2E_SEED");
    uint64_t seed;

    if (env && *env) {
        seed = strtoull(env, NULL, 0);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_sec * 1000003ull ^ (uint64_t)ts.tv_nsec;
    }
    fprintf(stderr, "[e2e] %s: seed %llu (replay with RAILWIRE_E2E_SEED=%llu)\n", what,
            (unsigned long long)seed, (unsigned long long)seed);
    return seed;
}

uint64_t e2e_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

size_t e2e_rand_size(uint64_t *state, size_t max)
{
    unsigned bits = 0;
    size_t lo, size;

    while (bits < 63 && ((size_t)1 << (bits + 1)) <= max)
        bits++;
    lo = (size_t)1 << (e2e_rand(state) % (bits + 1));
    size = lo + (size_t)(e2e_rand(state) % lo);
    return size > max ? max : size;
}

int e2e_transfer(railwire_railset *rs, enum railwire_opcode opc, railwire_mr *mr, void *local,
                 size_t len, uint32_t layer, uint64_t off, int timeout_ms)
{
    railwire_op op = {.opcode = opc, .mr = mr, .local = local, .length = len, .layer = layer,
                      .remote_offset = off, .user_data = 0};
    railwire_handle h;
    railwire_completion c;
    int rc = railwire_submit(rs, &op, &h);

    if (rc < 0)
        return rc;
    rc = railwire_wait(rs, &c, 1, timeout_ms);
    if (rc < 0)
        return rc;
    /* No cr_assert here: client threads call this too. */
    if (rc != 1 || c.handle != h) {
        fprintf(stderr, "[e2e] railwire_wait returned %d completion(s), handle %llu for %llu\n", rc,
                (unsigned long long)c.handle, (unsigned long long)h);
        return RAILWIRE_E_STATE;
    }
    return c.status;
}

int e2e_wait_all(railwire_railset *rs, int *statuses, size_t n, int timeout_ms)
{
    struct timespec t0, t;
    railwire_completion c[32];
    size_t got = 0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (got < n) {
        long el;
        int k;
        clock_gettime(CLOCK_MONOTONIC, &t);
        el = (t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L;
        if (el >= timeout_ms)
            break;
        k = railwire_wait(rs, c, 32, (int)(timeout_ms - el));
        if (k == RAILWIRE_E_TIMEOUT)
            break;
        cr_assert_geq(k, 0, "railwire_wait: %s", railwire_strerror(k));
        for (int i = 0; i < k; i++) {
            cr_assert_lt(c[i].user_data, n);
            statuses[c[i].user_data] = c[i].status;
        }
        got += (size_t)k;
    }
    return (int)got;
}

long e2e_first_diff(const uint8_t *a, const uint8_t *b, size_t len)
{
    if (!memcmp(a, b, len))
        return -1;
    for (size_t i = 0; i < len; i++)
        if (a[i] != b[i])
            return (long)i;
    return -1;
}
