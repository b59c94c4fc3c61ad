/* SPDX-License-Identifier: MIT */
/* End to end over loopback with the real tcp transport: railwire_server +
 * railwire_railset, striped READ/WRITE checked byte for byte in both
 * dialects over 1..8 rails, several clients at once, caps, refused
 * accesses, session release. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <railwire.h>

#include "common/time.h"
#include "rail/client/railset_testing.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

static uint8_t pat(unsigned layer, size_t i)
{
    return (uint8_t)(i * 151u + layer * 29u + (i >> 11) * 5u + 3u);
}

struct srv {
    railwire_server *s;
    char port[16];
    uint8_t *mem[4];
    size_t len;
    unsigned n;
};

static void srv_start(struct srv *v, enum railwire_dialect d, unsigned n_layers, size_t len,
                      const char *host, void (*tweak)(railwire_server_opts *))
{
    memset(v, 0, sizeof(*v));
    v->len = len;
    v->n = d == RAILWIRE_DIALECT_RO ? n_layers : 1;
    railwire_region regs[4];
    for (unsigned l = 0; l < v->n; l++) {
        v->mem[l] = malloc(len);
        cr_assert_not_null(v->mem[l]);
        for (size_t i = 0; i < len; i++)
            v->mem[l][i] = pat(l, i);
        regs[l] = (railwire_region){v->mem[l], len};
    }
    railwire_server_opts o;
    railwire_server_opts_init(&o);
    o.dialect = d;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.listen_host = host;
    o.io_timeout_ms = 3000;
    if (d == RAILWIRE_DIALECT_RO) {
        o.layers = regs;
        o.n_layers = n_layers;
    } else {
        o.arena = regs[0];
    }
    if (tweak)
        tweak(&o);
    cr_assert_eq(railwire_server_create(&o, &v->s), 0);
    snprintf(v->port, sizeof(v->port), "%u", railwire_server_port(v->s));
}

static void srv_stop(struct srv *v)
{
    railwire_server_destroy(v->s);
    for (unsigned l = 0; l < v->n; l++)
        free(v->mem[l]);
}

static int connect_rs(struct srv *v, const char *host, enum railwire_dialect d, unsigned n,
                      railwire_railset **rs)
{
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = d;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = n;
    o.connect_timeout_ms = 3000;
    o.io_timeout_ms = 3000;
    return railwire_railset_connect(host, v->port, &o, rs);
}

static void wait_sessions(struct srv *v, unsigned want)
{
    int64_t end = rw_now_ms() + 5000;
    while (railwire_server_sessions(v->s) != want && rw_now_ms() < end)
        usleep(2000);
    cr_assert_eq(railwire_server_sessions(v->s), want);
}

/* Random RO reads over every layer, checked byte for byte. */
static void ro_reads(railwire_railset *rs, struct srv *v, unsigned seed, int count, size_t max)
{
    uint8_t *buf = malloc(max);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, max, &mr), 0);
    for (int k = 0; k < count; k++) {
        size_t len = 1 + (size_t)rand_r(&seed) % max;
        if (k == 0)
            len = max;
        size_t off = (size_t)rand_r(&seed) % (v->len - len + 1);
        unsigned layer = (unsigned)rand_r(&seed) % v->n;
        memset(buf, 0, len);
        int rc = railwire_read(rs, mr, buf, len, layer, off, 20000);
        cr_assert_eq(rc, 0, "read %zu@%zu of layer %u: %s", len, off, layer,
                     railwire_strerror(rc));
        cr_assert_eq(memcmp(buf, v->mem[layer] + off, len), 0, "read %zu@%zu differs", len, off);
    }
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    free(buf);
}

static void ro_over(unsigned rails)
{
    struct srv v;
    srv_start(&v, RAILWIRE_DIALECT_RO, 3, 6 * MIB, "127.0.0.1", NULL);
    railwire_railset *rs;
    cr_assert_eq(connect_rs(&v, "127.0.0.1", RAILWIRE_DIALECT_RO, rails, &rs), 0);
    cr_assert_eq(railwire_railset_rail_count(rs), rails);
    cr_assert_eq(railwire_railset_layer_count(rs), 3);
    cr_assert_str_eq(railwire_railset_transport(rs), "tcp");
    ro_reads(rs, &v, 1000 + rails, 24, 4 * MIB);
    railwire_rail_stats st[8];
    cr_assert_eq(railwire_railset_stats(rs, st, 8, sizeof(*st)), (int)rails);
    for (unsigned r = 0; r < rails; r++) {
        cr_assert_eq(st[r].state, RAILWIRE_RAIL_UP);
        cr_assert_gt(st[r].bytes_read, 0, "rail %u carried nothing", r);
    }
    wait_sessions(&v, 1);
    railwire_railset_close(rs);
    wait_sessions(&v, 0);
    srv_stop(&v);
}

Test(loopback, ro_reads_1_rail) { ro_over(1); }
Test(loopback, ro_reads_2_rails) { ro_over(2); }
Test(loopback, ro_reads_4_rails) { ro_over(4); }
Test(loopback, ro_reads_8_rails) { ro_over(8); }

static void rw_over(unsigned rails, const char *host)
{
    struct srv v;
    srv_start(&v, RAILWIRE_DIALECT_RW, 1, 8 * MIB, host, NULL);
    railwire_railset *rs;
    cr_assert_eq(connect_rs(&v, host, RAILWIRE_DIALECT_RW, rails, &rs), 0);
    size_t max = 3 * MIB;
    uint8_t *out = malloc(max), *in = malloc(max);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, out, max, &mr), 0);
    railwire_mr *mr2;
    cr_assert_eq(railwire_mr_register(rs, in, max, &mr2), 0);
    unsigned seed = 77 + rails;
    for (int k = 0; k < 16; k++) {
        size_t len = k == 0 ? max : 1 + (size_t)rand_r(&seed) % max;
        size_t off = (size_t)rand_r(&seed) % (v.len - len + 1);
        for (size_t i = 0; i < len; i++)
            out[i] = (uint8_t)rand_r(&seed);
        cr_assert_eq(railwire_write(rs, mr, out, len, 0, off, 20000), 0);
        cr_assert_eq(memcmp(v.mem[0] + off, out, len), 0, "the arena does not hold what was written");
        memset(in, 0, len);
        cr_assert_eq(railwire_read(rs, mr2, in, len, 0, off, 20000), 0);
        cr_assert_eq(memcmp(in, out, len), 0, "read back %zu@%zu differs", len, off);
    }
    free(out);
    free(in);
    railwire_railset_close(rs);
    srv_stop(&v);
}

Test(loopback, rw_write_read_1_rail) { rw_over(1, "127.0.0.1"); }
Test(loopback, rw_write_read_2_rails) { rw_over(2, "127.0.0.1"); }
Test(loopback, rw_write_read_4_rails) { rw_over(4, "127.0.0.1"); }
Test(loopback, rw_write_read_8_rails) { rw_over(8, "127.0.0.1"); }
Test(loopback, rw_ipv6_loopback_2_rails) { rw_over(2, "::1"); }

Test(loopback, many_transfers_in_flight_complete_in_any_order)
{
    struct srv v;
    srv_start(&v, RAILWIRE_DIALECT_RO, 1, 8 * MIB, "127.0.0.1", NULL);
    railwire_railset *rs;
    cr_assert_eq(connect_rs(&v, "127.0.0.1", RAILWIRE_DIALECT_RO, 4, &rs), 0);
    enum { N = 64 };
    size_t each = 128 * KIB;
    uint8_t *buf = calloc(N, each);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, N * each, &mr), 0);
    railwire_op ops[N];
    railwire_handle hs[N];
    for (int i = 0; i < N; i++)
        ops[i] = (railwire_op){.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf + i * each,
                               .length = each - (size_t)i, .remote_offset = (uint64_t)i * 1000,
                               .user_data = (uint64_t)i};
    cr_assert_eq(railwire_submit_batch(rs, ops, N, hs), N);
    int got = 0, seen[N] = {0};
    while (got < N) {
        railwire_completion c[16];
        int n = railwire_wait(rs, c, 16, 20000);
        cr_assert_gt(n, 0, "wait: %s", railwire_strerror(n));
        for (int k = 0; k < n; k++) {
            int i = (int)c[k].user_data;
            cr_assert_eq(c[k].status, 0);
            cr_assert_eq(c[k].handle, hs[i]);
            cr_assert_eq(seen[i]++, 0);
            cr_assert_eq(memcmp(buf + i * each, v.mem[0] + i * 1000, each - (size_t)i), 0);
        }
        got += n;
    }
    free(buf);
    railwire_railset_close(rs);
    srv_stop(&v);
}

/* READs and WRITEs pipelined on one rail: the server sends READ answers in
 * bounded runs, and a run whose last answer ends past its quantum must not
 * start the next WRITE's payload with nothing left (it once asked recv for
 * 0 bytes and closed the healthy rail as if the client had gone).  Healing
 * off, so a lost rail cannot hide behind a heal. */
Test(loopback, pipelined_reads_and_writes_never_drop_the_rail, .timeout = 120)
{
    struct srv v;
    srv_start(&v, RAILWIRE_DIALECT_RW, 1, 16 * MIB, "127.0.0.1", NULL);
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = 1;
    o.heal = 0;
    o.connect_timeout_ms = 3000;
    o.io_timeout_ms = 3000;
    railwire_railset *rs;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", v.port, &o, &rs), 0);
    enum { DEPTH = 8, TOTAL = 1500 };
    size_t each = 1 * MIB;
    unsigned seed = 4242;
    uint8_t *buf = malloc(DEPTH * each);
    cr_assert_not_null(buf);
    for (size_t i = 0; i < DEPTH * each; i++)
        buf[i] = (uint8_t)(i * 7u + 1u);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, DEPTH * each, &mr), 0);
    int submitted = 0, done = 0, inflight = 0;
    while (done < TOTAL) {
        while (inflight < DEPTH && submitted < TOTAL) {
            /* slot k is used by one transfer at a time; the op and the
             * length are random, so answers end at every offset of a run */
            unsigned k = (unsigned)submitted % DEPTH;
            railwire_op op = {.opcode = rand_r(&seed) & 1 ? RAILWIRE_OP_READ : RAILWIRE_OP_WRITE,
                              .mr = mr, .local = buf + k * each,
                              .length = 1 + (size_t)rand_r(&seed) % each,
                              .remote_offset = (uint64_t)k * each, .user_data = (uint64_t)k};
            railwire_handle h;
            cr_assert_eq(railwire_submit_batch(rs, &op, 1, &h), 1);
            submitted++;
            inflight++;
        }
        railwire_completion c[DEPTH];
        int n = railwire_wait(rs, c, DEPTH, 20000);
        cr_assert_gt(n, 0, "wait: %s", railwire_strerror(n));
        for (int i = 0; i < n; i++)
            cr_assert_eq(c[i].status, 0, "transfer %d failed: %s", done + i,
                         railwire_strerror(c[i].status));
        done += n;
        inflight -= n;
    }
    railwire_rail_stats st;
    cr_assert_eq(railwire_railset_stats(rs, &st, 1, sizeof(st)), 1);
    cr_assert_eq(st.state, RAILWIRE_RAIL_UP, "the rail went down: %s",
                 railwire_strerror(st.down_reason));
    cr_assert_eq(st.errors, 0);
    cr_assert_eq(st.last_down_reason, 0, "the rail went down once: %s",
                 railwire_strerror(st.last_down_reason));
    free(buf);
    railwire_railset_close(rs);
    srv_stop(&v);
}

struct client_job {
    struct srv *v;
    unsigned rails;
    int rc;
};

static void *client_thread(void *arg)
{
    struct client_job *j = arg;
    railwire_railset *rs;
    j->rc = connect_rs(j->v, "127.0.0.1", RAILWIRE_DIALECT_RO, j->rails, &rs);
    if (j->rc < 0)
        return NULL;
    uint8_t *buf = malloc(1 * MIB);
    railwire_mr *mr;
    j->rc = railwire_mr_register(rs, buf, 1 * MIB, &mr);
    for (int k = 0; k < 8 && j->rc == 0; k++) {
        size_t off = (size_t)k * 100000 + j->rails;
        j->rc = railwire_read(rs, mr, buf, 1 * MIB, k % 2, off, 20000);
        if (j->rc == 0 && memcmp(buf, j->v->mem[k % 2] + off, 1 * MIB) != 0)
            j->rc = -1;
    }
    free(buf);
    railwire_railset_close(rs);
    return NULL;
}

Test(loopback, several_clients_at_once)
{
    struct srv v;
    srv_start(&v, RAILWIRE_DIALECT_RO, 2, 4 * MIB, "127.0.0.1", NULL);
    enum { C = 4 };
    struct client_job jobs[C];
    pthread_t th[C];
    for (int i = 0; i < C; i++) {
        jobs[i] = (struct client_job){.v = &v, .rails = 1 + (unsigned)i};
        pthread_create(&th[i], NULL, client_thread, &jobs[i]);
    }
    for (int i = 0; i < C; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(jobs[i].rc, 0, "client %d: %s", i, railwire_strerror(jobs[i].rc));
    }
    wait_sessions(&v, 0);
    srv_stop(&v);
}

static void cap_rails(railwire_server_opts *o)
{
    o->max_rails_per_client = 2;
    o->max_clients = 2;
}

Test(loopback, caps_reject_a_client_while_others_are_served)
{
    struct srv v;
    srv_start(&v, RAILWIRE_DIALECT_RO, 2, 4 * MIB, "127.0.0.1", cap_rails);
    railwire_railset *a, *b, *c;
    cr_assert_eq(connect_rs(&v, "127.0.0.1", RAILWIRE_DIALECT_RO, 2, &a), 0);
    /* Over the rails cap: rejected by closing, seen as peer-rejected. */
    cr_assert_eq(connect_rs(&v, "127.0.0.1", RAILWIRE_DIALECT_RO, 3, &b), RAILWIRE_E_PEER_REJECTED);
    /* 9 RO rails can never be granted: the client refuses before connecting. */
    cr_assert_eq(connect_rs(&v, "127.0.0.1", RAILWIRE_DIALECT_RO, 9, &b), RAILWIRE_E_INVALID);
    cr_assert_eq(connect_rs(&v, "127.0.0.1", RAILWIRE_DIALECT_RO, 1, &b), 0);
    wait_sessions(&v, 2);
    /* Over the clients cap. */
    cr_assert_eq(connect_rs(&v, "127.0.0.1", RAILWIRE_DIALECT_RO, 1, &c), RAILWIRE_E_PEER_REJECTED);
    /* The served clients are unaffected. */
    uint8_t buf[4096];
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(a, buf, sizeof(buf), &mr), 0);
    cr_assert_eq(railwire_read(a, mr, buf, sizeof(buf), 1, 5, 20000), 0);
    cr_assert_eq(memcmp(buf, v.mem[1] + 5, sizeof(buf)), 0);
    railwire_railset_close(b);
    wait_sessions(&v, 1);
    cr_assert_eq(connect_rs(&v, "127.0.0.1", RAILWIRE_DIALECT_RO, 1, &c), 0,
                 "a slot freed by a closed session is usable again");
    railwire_railset_close(c);
    railwire_railset_close(a);
    srv_stop(&v);
}

Test(loopback, refused_accesses_fail_the_transfer_and_the_railset_stays_usable)
{
    struct srv v;
    srv_start(&v, RAILWIRE_DIALECT_RO, 2, 1 * MIB, "127.0.0.1", NULL);
    railwire_railset *rs;
    cr_assert_eq(connect_rs(&v, "127.0.0.1", RAILWIRE_DIALECT_RO, 2, &rs), 0);
    uint8_t *buf = calloc(1, 2 * MIB);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, 2 * MIB, &mr), 0);
    cr_assert_eq(railwire_write(rs, mr, buf, 4096, 0, 0, 20000), RAILWIRE_E_REMOTE_ACCESS,
                 "WRITE into an RO layer");
    cr_assert_eq(v.mem[0][0], pat(0, 0), "the refused WRITE changed the layer");
    cr_assert_eq(railwire_read(rs, mr, buf, 4096, 1, 1 * MIB - 100, 20000),
                 RAILWIRE_E_REMOTE_ACCESS, "read past the end of the layer");
    cr_assert_eq(railwire_read(rs, mr, buf, 2 * MIB, 0, 0, 20000), RAILWIRE_E_REMOTE_ACCESS,
                 "read larger than the layer");
    cr_assert_eq(railwire_read(rs, mr, buf, 16, 2, 0, 20000), RAILWIRE_E_REMOTE_ACCESS,
                 "no such layer");
    cr_assert_eq(railwire_read(rs, mr, buf, 1 * MIB, 1, 0, 20000), 0);
    cr_assert_eq(memcmp(buf, v.mem[1], 1 * MIB), 0);
    railwire_rail_stats st[2];
    railwire_railset_stats(rs, st, 2, sizeof(*st));
    cr_assert_eq(st[0].state, RAILWIRE_RAIL_UP);
    cr_assert_eq(st[1].state, RAILWIRE_RAIL_UP);
    free(buf);
    railwire_railset_close(rs);
    srv_stop(&v);
}

Test(loopback, connecting_to_nothing_fails_cleanly)
{
    struct srv v;
    srv_start(&v, RAILWIRE_DIALECT_RW, 1, 4096, "127.0.0.1", NULL);
    char port[16];
    memcpy(port, v.port, sizeof(port));
    srv_stop(&v);
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.dialect = RAILWIRE_DIALECT_RW;
    railwire_railset *rs = NULL;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", port, &o, &rs), RAILWIRE_E_CONNECT);
    cr_assert_null(rs);
}

Test(loopback, server_gone_fails_transfers_instead_of_hanging)
{
    struct srv v;
    srv_start(&v, RAILWIRE_DIALECT_RW, 1, 1 * MIB, "127.0.0.1", NULL);
    railwire_railset *rs;
    cr_assert_eq(connect_rs(&v, "127.0.0.1", RAILWIRE_DIALECT_RW, 2, &rs), 0);
    uint8_t *buf = calloc(1, 1 * MIB);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, 1 * MIB, &mr), 0);
    cr_assert_eq(railwire_read(rs, mr, buf, 1 * MIB, 0, 0, 20000), 0);
    railwire_server_destroy(v.s);
    v.s = NULL;
    int rc = railwire_read(rs, mr, buf, 1 * MIB, 0, 0, 30000);
    cr_assert(rc == RAILWIRE_E_ALL_RAILS_DOWN, "got %s", railwire_strerror(rc));
    free(buf);
    railwire_railset_close(rs);
    free(v.mem[0]);
}

Test(loopback, a_rail_killed_under_load_loses_nothing)
{
    struct srv v;
    srv_start(&v, RAILWIRE_DIALECT_RO, 1, 8 * MIB, "127.0.0.1", NULL);
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = 3;
    o.slice_size = 64 * KIB;
    o.heal = 0; /* failover alone: the killed rail must stay down (test_heal.c heals it) */
    railwire_railset *rs;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", v.port, &o, &rs), 0);
    enum { N = 32 };
    size_t each = 256 * KIB;
    uint8_t *buf = calloc(N, each);
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, N * each, &mr), 0);
    railwire_op ops[N];
    railwire_handle hs[N];
    for (int i = 0; i < N; i++)
        ops[i] = (railwire_op){.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf + i * each,
                               .length = each, .remote_offset = (uint64_t)i * each,
                               .user_data = (uint64_t)i};
    cr_assert_eq(railwire_submit_batch(rs, ops, N, hs), N);
    /* The transport fails rail 1 behind the railset's back, as a reset would. */
    rw_test_kill_rail(rs, 1);
    int got = 0;
    while (got < N) {
        railwire_completion c[8];
        int n = railwire_wait(rs, c, 8, 20000);
        cr_assert_gt(n, 0, "wait: %s", railwire_strerror(n));
        for (int k = 0; k < n; k++) {
            int i = (int)c[k].user_data;
            cr_assert_eq(c[k].status, 0);
            cr_assert_eq(memcmp(buf + i * each, v.mem[0] + i * each, each), 0);
        }
        got += n;
    }
    railwire_rail_stats st[3];
    railwire_railset_stats(rs, st, 3, sizeof(*st));
    cr_assert_eq(st[1].state, RAILWIRE_RAIL_DOWN);
    cr_assert_eq(st[0].state, RAILWIRE_RAIL_UP);
    cr_assert_eq(st[2].state, RAILWIRE_RAIL_UP);
    cr_assert_eq(st[0].bytes_read + st[1].bytes_read + st[2].bytes_read, (uint64_t)N * each);
    free(buf);
    railwire_railset_close(rs);
    srv_stop(&v);
}

Test(loopback, rw_64_mib_transfer_over_4_rails)
{
    struct srv v;
    size_t len = 64 * MIB;
    srv_start(&v, RAILWIRE_DIALECT_RW, 1, len + 4096, "127.0.0.1", NULL);
    railwire_railset *rs;
    cr_assert_eq(connect_rs(&v, "127.0.0.1", RAILWIRE_DIALECT_RW, 4, &rs), 0);
    uint8_t *buf = malloc(len);
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(i * 13 + (i >> 16));
    railwire_mr *mr;
    cr_assert_eq(railwire_mr_register(rs, buf, len, &mr), 0);
    cr_assert_eq(railwire_write(rs, mr, buf, len, 0, 4095, 60000), 0);
    cr_assert_eq(memcmp(v.mem[0] + 4095, buf, len), 0);
    memset(buf, 0, len);
    cr_assert_eq(railwire_read(rs, mr, buf, len, 0, 4095, 60000), 0);
    cr_assert_eq(memcmp(v.mem[0] + 4095, buf, len), 0);
    railwire_rail_stats st[4];
    railwire_railset_stats(rs, st, 4, sizeof(*st));
    for (int r = 0; r < 4; r++)
        cr_assert_gt(st[r].bytes_written, 0, "rail %d carried no part of the 64 MiB write", r);
    free(buf);
    railwire_railset_close(rs);
    srv_stop(&v);
}

static void two_rail_addrs(railwire_server_opts *o)
{
    static const char *const addrs[] = {"127.0.0.1", "127.0.0.2"};
    o->rail_addrs = addrs;
    o->n_rail_addrs = 2;
}

/* RW railsets far beyond RO's 8 rails (the RW wire allows 255): many rails
 * on two local and two server addresses, striped READ and WRITE at random
 * sizes and offsets, checked byte for byte, every rail carrying a share. */
Test(loopback, rw_16_32_64_rails_on_two_addresses, .timeout = 240)
{
    static const unsigned counts[] = {16, 32, 64};
    size_t len = 16 * MIB;
    struct srv v;
    srv_start(&v, RAILWIRE_DIALECT_RW, 1, len, "127.0.0.1", two_rail_addrs);
    uint8_t *buf = malloc(len), *back = malloc(len);
    cr_assert(buf && back);
    unsigned seed = 7;
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        unsigned n = counts[k];
        static const char *const local[] = {"127.0.0.1", "127.0.0.2"};
        const char *addrs[64];
        for (unsigned i = 0; i < n; i++)
            addrs[i] = local[i % 2];
        railwire_railset_opts o;
        railwire_railset_opts_init(&o);
        o.dialect = RAILWIRE_DIALECT_RW;
        o.transport = RAILWIRE_TRANSPORT_TCP;
        o.n_rails = n;
        o.local_addrs = addrs;
        o.n_local_addrs = n;
        o.slice_size = 64 * KIB;
        railwire_railset *rs;
        cr_assert_eq(railwire_railset_connect("127.0.0.1", v.port, &o, &rs), 0, "%u rails", n);
        cr_assert_eq(railwire_railset_rail_count(rs), n);
        railwire_mr *mr, *mr2;
        cr_assert_eq(railwire_mr_register(rs, buf, len, &mr), 0);
        cr_assert_eq(railwire_mr_register(rs, back, len, &mr2), 0);
        /* One big striped WRITE and READ: every rail takes slices. */
        for (size_t i = 0; i < len; i++)
            buf[i] = (uint8_t)(i * 7 + n);
        cr_assert_eq(railwire_write(rs, mr, buf, len, 0, 0, 60000), 0);
        cr_assert_eq(memcmp(v.mem[0], buf, len), 0, "%u rails: the arena differs", n);
        memset(back, 0, len);
        cr_assert_eq(railwire_read(rs, mr2, back, len, 0, 0, 60000), 0);
        cr_assert_eq(memcmp(back, buf, len), 0, "%u rails: the read differs", n);
        /* Random sizes and offsets. */
        for (int t = 0; t < 40; t++) {
            seed = seed * 1103515245u + 12345u;
            size_t sz = 1 + (seed >> 8) % (2 * MIB);
            seed = seed * 1103515245u + 12345u;
            size_t off = (seed >> 8) % (len - sz + 1);
            memset(back, 0, sz);
            cr_assert_eq(railwire_read(rs, mr2, back, sz, 0, off, 60000), 0);
            cr_assert_eq(memcmp(back, v.mem[0] + off, sz), 0, "%u rails: %zu bytes at %zu", n,
                         sz, off);
        }
        railwire_rail_stats *st = calloc(n, sizeof(*st));
        cr_assert_eq(railwire_railset_stats(rs, st, n, sizeof(*st)), (int)n);
        for (unsigned r = 0; r < n; r++) {
            cr_assert_eq(st[r].state, RAILWIRE_RAIL_UP);
            cr_assert_gt(st[r].bytes_written, 0, "%u rails: rail %u carried no slice", n, r);
        }
        free(st);
        railwire_railset_close(rs);
        wait_sessions(&v, 0);
    }
    free(buf);
    free(back);
    srv_stop(&v);
}

Test(loopback, ro_stays_at_8_rails)
{
    struct srv v;
    srv_start(&v, RAILWIRE_DIALECT_RO, 1, 1 * MIB, "127.0.0.1", NULL);
    railwire_railset *rs = NULL;
    cr_assert_eq(connect_rs(&v, "127.0.0.1", RAILWIRE_DIALECT_RO, 9, &rs), RAILWIRE_E_INVALID);
    cr_assert_eq(connect_rs(&v, "127.0.0.1", RAILWIRE_DIALECT_RO, 8, &rs), 0);
    railwire_railset_close(rs);
    srv_stop(&v);
}

Test(loopback, busy_poll_over_one_second_is_refused_and_off_still_transfers)
{
    struct srv v;
    srv_start(&v, RAILWIRE_DIALECT_RO, 1, 4 * MIB, "127.0.0.1", NULL);
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.busy_poll_us = 1000001;
    railwire_railset *rs = NULL;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", v.port, &o, &rs), RAILWIRE_E_INVALID);
    cr_assert_null(rs);
    o.busy_poll_us = -1;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", v.port, &o, &rs), 0);
    ro_reads(rs, &v, 7, 64, 64 * 1024);
    railwire_railset_close(rs);
    srv_stop(&v);
}
