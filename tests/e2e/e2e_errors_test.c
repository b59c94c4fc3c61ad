/* SPDX-License-Identifier: MIT */
/* Refusals and failures end to end: out-of-bounds, wrong layer, WRITE to a
 * read-only layer and oversized requests fail with errors while the server
 * keeps serving others; caps reject by closing (peer-rejected); a peer that
 * closes early, goes silent, or acks non-zero; connect to a dead address
 * times out; every rail dead fails every transfer with an error. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_pattern.h"
#include "e2e/e2e_peer.h"
#include "e2e/e2e_util.h"

#define KiB 1024u
#define MiB (1024u * 1024u)
#define TMO 30000

/* A well-behaved second client: must keep working after each bad request
 * of another client on the same server. */
struct good_client {
    railwire_railset *rs;
    railwire_mr *mr;
    uint8_t buf[64 * KiB];
};

static void good_start(struct good_client *g, const struct e2e_server *s)
{
    cr_assert_eq(e2e_connect(s->port, s->dialect, 2, 0, 0, &g->rs), 0);
    cr_assert_eq(railwire_mr_register(g->rs, g->buf, sizeof(g->buf), &g->mr), 0);
}

static void good_check(struct good_client *g, const struct e2e_server *s)
{
    memset(g->buf, 0, sizeof(g->buf));
    cr_assert_eq(e2e_transfer(g->rs, RAILWIRE_OP_READ, g->mr, g->buf, sizeof(g->buf), 0, 100, TMO), 0,
                 "the server stopped serving a good client");
    cr_assert_eq(memcmp(g->buf, s->mem + 100, sizeof(g->buf)), 0);
}

/* Result of one transfer: the submit error, else the completion status. */
static int attempt(railwire_railset *rs, enum railwire_opcode opc, railwire_mr *mr, void *local,
                   size_t len, uint32_t layer, uint64_t off)
{
    return e2e_transfer(rs, opc, mr, local, len, layer, off, TMO);
}

Test(errors, rw_out_of_bounds_and_oversized, .timeout = 120)
{
    size_t arena = 1 * MiB;
    struct e2e_server s;
    struct good_client g;
    railwire_railset *rs;
    railwire_mr *mr;
    uint8_t *buf = calloc(1, 4 * MiB), *before = malloc(arena);
    const struct { uint64_t off; size_t len; const char *what; } bad[] = {
        {arena - 10, 100, "crossing the end"},
        {arena, 1, "just past the end"},
        {arena + 4096, 4096, "beyond the end"},
        {0, 2 * MiB, "oversized (twice the arena)"},
        {0, 4 * MiB, "oversized and striped"},
        {UINT64_MAX - 8, 16, "offset wrapping around"},
    };

    cr_assert(buf && before);
    e2e_server_start(&s, RAILWIRE_DIALECT_RW, &arena, 1, NULL);
    good_start(&g, &s);
    cr_assert_eq(e2e_connect(s.port, RAILWIRE_DIALECT_RW, 2, 0, 0, &rs), 0);
    cr_assert_eq(railwire_mr_register(rs, buf, 4 * MiB, &mr), 0);
    memcpy(before, s.mem, arena);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = attempt(rs, RAILWIRE_OP_READ, mr, buf, bad[i].len, 0, bad[i].off);
        cr_expect_lt(rc, 0, "READ %s succeeded", bad[i].what);
        cr_expect_neq(rc, RAILWIRE_E_TIMEOUT, "READ %s hung", bad[i].what);
        rc = attempt(rs, RAILWIRE_OP_WRITE, mr, buf, bad[i].len, 0, bad[i].off);
        cr_expect_lt(rc, 0, "WRITE %s succeeded", bad[i].what);
        cr_expect_neq(rc, RAILWIRE_E_TIMEOUT, "WRITE %s hung", bad[i].what);
        cr_assert_eq(memcmp(before, s.mem, arena), 0, "a refused WRITE (%s) changed the arena",
                     bad[i].what);
        good_check(&g, &s);
    }
    /* A request that fits exactly still works on the offending railset. */
    cr_expect_eq(attempt(rs, RAILWIRE_OP_READ, mr, buf, 10, 0, arena - 10), 0);
    railwire_railset_close(rs);
    railwire_railset_close(g.rs);
    e2e_server_stop(&s);
    free(buf);
    free(before);
}

Test(errors, ro_write_and_wrong_layer, .timeout = 120)
{
    const size_t layers[2] = {256 * KiB, 64 * KiB};
    struct e2e_server s;
    struct good_client g;
    railwire_railset *rs;
    railwire_mr *mr;
    static uint8_t buf[512 * KiB];
    uint8_t *before;
    int rc;

    e2e_server_start(&s, RAILWIRE_DIALECT_RO, layers, 2, NULL);
    before = malloc(s.mem_len);
    cr_assert(before);
    memcpy(before, s.mem, s.mem_len);
    good_start(&g, &s);
    cr_assert_eq(e2e_connect(s.port, RAILWIRE_DIALECT_RO, 2, 0, 0, &rs), 0);
    cr_assert_eq(railwire_mr_register(rs, buf, sizeof(buf), &mr), 0);
    memset(buf, 0x5A, sizeof(buf));

    rc = attempt(rs, RAILWIRE_OP_WRITE, mr, buf, 4096, 0, 0);
    cr_expect_lt(rc, 0, "a WRITE into a read-only layer succeeded");
    rc = attempt(rs, RAILWIRE_OP_WRITE, mr, buf, 200 * KiB, 0, 0);
    cr_expect_lt(rc, 0, "a striped WRITE into a read-only layer succeeded");
    cr_assert_eq(memcmp(before, s.mem, s.mem_len), 0, "a refused WRITE changed a read-only layer");
    good_check(&g, &s);

    rc = attempt(rs, RAILWIRE_OP_READ, mr, buf, 16, 2, 0);
    cr_expect_lt(rc, 0, "a READ of layer 2 (of 2) succeeded");
    rc = attempt(rs, RAILWIRE_OP_READ, mr, buf, 16, 4095, 0);
    cr_expect_lt(rc, 0, "a READ of layer 4095 succeeded");
    good_check(&g, &s);

    /* Layer 1 is 64 KiB: reading 100 KiB of it is oversized even though
     * layer 0 would hold it. */
    rc = attempt(rs, RAILWIRE_OP_READ, mr, buf, 100 * KiB, 1, 0);
    cr_expect_lt(rc, 0, "an oversized READ of layer 1 succeeded");
    rc = attempt(rs, RAILWIRE_OP_READ, mr, buf, 1, 1, 64 * KiB);
    cr_expect_lt(rc, 0, "a READ past the end of layer 1 succeeded");
    good_check(&g, &s);

    /* And the right layer reads the right bytes. */
    cr_expect_eq(attempt(rs, RAILWIRE_OP_READ, mr, buf, 64 * KiB, 1, 0), 0);
    cr_expect_eq(memcmp(buf, s.regions[1].addr, 64 * KiB), 0);
    railwire_railset_close(rs);
    railwire_railset_close(g.rs);
    e2e_server_stop(&s);
    free(before);
}

static void cap_rails_2(railwire_server_opts *o)
{
    o->max_rails_per_client = 2;
}

static void cap_clients_1(railwire_server_opts *o)
{
    o->max_clients = 1;
}

Test(errors, over_the_rail_cap_is_peer_rejected, .timeout = 60)
{
    size_t arena = 256 * KiB;
    struct e2e_server s;
    railwire_railset *rs = NULL;

    e2e_server_start(&s, RAILWIRE_DIALECT_RW, &arena, 1, cap_rails_2);
    cr_expect_eq(e2e_connect(s.port, RAILWIRE_DIALECT_RW, 3, 0, 0, &rs), RAILWIRE_E_PEER_REJECTED);
    cr_assert_eq(e2e_connect(s.port, RAILWIRE_DIALECT_RW, 2, 0, 0, &rs), 0);
    railwire_railset_close(rs);
    e2e_server_stop(&s);
}

Test(errors, over_the_client_cap_is_peer_rejected, .timeout = 60)
{
    size_t arena = 256 * KiB;
    struct e2e_server s;
    struct good_client g;
    railwire_railset *rs = NULL;

    e2e_server_start(&s, RAILWIRE_DIALECT_RW, &arena, 1, cap_clients_1);
    good_start(&g, &s);
    cr_expect_eq(e2e_connect(s.port, RAILWIRE_DIALECT_RW, 1, 0, 0, &rs), RAILWIRE_E_PEER_REJECTED);
    good_check(&g, &s);
    railwire_railset_close(g.rs);
    /* Once the first session is released, a new client gets in. */
    int rc = RAILWIRE_E_PEER_REJECTED;
    for (int i = 0; i < 50 && rc == RAILWIRE_E_PEER_REJECTED; i++) {
        rc = e2e_connect(s.port, RAILWIRE_DIALECT_RW, 1, 0, 0, &rs);
        if (rc == RAILWIRE_E_PEER_REJECTED)
            usleep(100000);
    }
    cr_expect_eq(rc, 0, "the released session's slot was never freed: %s", railwire_strerror(rc));
    if (rc == 0)
        railwire_railset_close(rs);
    e2e_server_stop(&s);
}

Test(errors, sessions_are_released_when_clients_close, .timeout = 60)
{
    size_t arena = 256 * KiB;
    struct e2e_server s;
    railwire_railset *rs[3];

    e2e_server_start(&s, RAILWIRE_DIALECT_RW, &arena, 1, NULL);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(e2e_connect(s.port, RAILWIRE_DIALECT_RW, 2, 0, 0, &rs[i]), 0);
    /* The server counts a session once its ack is sent, which the client
     * may read first: wait (bounded) for its count to catch up. */
    for (int i = 0; i < 100 && railwire_server_sessions(s.srv) != 3; i++)
        usleep(50000);
    cr_expect_eq(railwire_server_sessions(s.srv), 3);
    for (int i = 0; i < 3; i++)
        railwire_railset_close(rs[i]);
    for (int i = 0; i < 100 && railwire_server_sessions(s.srv); i++)
        usleep(50000);
    cr_expect_eq(railwire_server_sessions(s.srv), 0);
    e2e_server_stop(&s);
}

Test(errors, peer_closing_before_params_is_peer_rejected, .timeout = 60)
{
    struct e2e_peer p;
    railwire_railset *rs = NULL;

    e2e_peer_start(&p, E2E_PEER_CLOSE_EARLY, NULL, RAILWIRE_DIALECT_RO, 0);
    cr_expect_eq(e2e_connect(p.port, RAILWIRE_DIALECT_RO, 2, 2000, 2000, &rs),
                 RAILWIRE_E_PEER_REJECTED);
    e2e_peer_stop(&p);
}

Test(errors, non_zero_ack_is_refused, .timeout = 60)
{
    const enum railwire_dialect dialects[2] = {RAILWIRE_DIALECT_RO, RAILWIRE_DIALECT_RW};

    for (int d = 0; d < 2; d++) {
        size_t len[2] = {64 * KiB, 32 * KiB};
        struct e2e_server s;
        struct e2e_peer p;
        railwire_railset *rs = NULL;

        e2e_server_start(&s, dialects[d], len, 2, NULL);
        e2e_peer_start(&p, E2E_PEER_ACK_REFUSE, s.port, dialects[d], s.n_layers);
        cr_expect_eq(e2e_connect(p.port, dialects[d], 2, 2000, 5000, &rs), RAILWIRE_E_REFUSED,
                     "dialect %s", d ? "rw" : "ro");
        e2e_peer_stop(&p);
        e2e_server_stop(&s);
    }
}

Test(errors, silent_peer_times_out, .timeout = 60)
{
    struct e2e_peer p;
    railwire_railset *rs = NULL;

    e2e_peer_start(&p, E2E_PEER_SILENT, NULL, RAILWIRE_DIALECT_RW, 0);
    cr_expect_eq(e2e_connect(p.port, RAILWIRE_DIALECT_RW, 1, 1000, 500, &rs), RAILWIRE_E_TIMEOUT);
    e2e_peer_stop(&p);
}

Test(errors, dead_address_connect_times_out, .timeout = 60)
{
    struct e2e_peer p;
    railwire_railset *rs = NULL;

    e2e_peer_start(&p, E2E_PEER_BACKLOG_FULL, NULL, RAILWIRE_DIALECT_RW, 0);
    cr_expect_eq(e2e_connect(p.port, RAILWIRE_DIALECT_RW, 1, 300, 300, &rs), RAILWIRE_E_TIMEOUT);
    e2e_peer_stop(&p);
}

Test(errors, refused_port_is_a_connect_error, .timeout = 60)
{
    struct e2e_peer p;
    char port[16];
    railwire_railset *rs = NULL;
    int rc;

    /* A port that was just free: nothing listens there. */
    e2e_peer_start(&p, E2E_PEER_CLOSE_EARLY, NULL, RAILWIRE_DIALECT_RW, 0);
    snprintf(port, sizeof(port), "%s", p.port);
    e2e_peer_stop(&p);
    rc = e2e_connect(port, RAILWIRE_DIALECT_RW, 1, 1000, 1000, &rs);
    cr_expect_eq(rc, RAILWIRE_E_CONNECT, "got %s", railwire_error_class(rc));
}

/* Every rail dead (the server goes away mid-run): every transfer fails with
 * an error, none hangs, none reports success with bytes missing. */
Test(errors, all_rails_dead_fails_every_transfer, .timeout = 120)
{
    size_t arena = 64 * MiB;
    struct e2e_server s;
    railwire_railset *rs;
    railwire_mr *mr;
    enum { N = 64 };
    railwire_op ops[N];
    railwire_handle h[N];
    int st[N];
    uint8_t *buf = malloc(arena);
    int ok = 0, failed = 0;

    cr_assert(buf);
    e2e_server_start(&s, RAILWIRE_DIALECT_RW, &arena, 1, NULL);
    cr_assert_eq(e2e_connect(s.port, RAILWIRE_DIALECT_RW, 2, 0, 0, &rs), 0);
    cr_assert_eq(railwire_mr_register(rs, buf, arena, &mr), 0);
    for (int i = 0; i < N; i++) {
        ops[i] = (railwire_op){.opcode = RAILWIRE_OP_READ, .mr = mr, .local = buf + (size_t)i * MiB,
                               .length = MiB, .remote_offset = (uint64_t)i * MiB, .user_data = (uint64_t)i};
        st[i] = 1;
    }
    memset(buf, 0, arena);
    cr_assert_eq(railwire_submit_batch(rs, ops, N, h), N);
    railwire_server_destroy(s.srv);
    s.srv = NULL;
    cr_assert_eq(e2e_wait_all(rs, st, N, 60000), N, "some transfers never completed");
    for (int i = 0; i < N; i++) {
        if (st[i] == 0) {
            ok++;
            cr_assert_eq(memcmp(buf + (size_t)i * MiB, s.mem + (size_t)i * MiB, MiB), 0,
                         "transfer %d reported success with wrong bytes", i);
        } else {
            failed++;
        }
    }
    cr_log_info("%d transfers finished before the server went away, %d failed", ok, failed);
    /* After the fact: every new transfer fails with an error, quickly. */
    for (int i = 0; i < 4; i++) {
        int rc = attempt(rs, RAILWIRE_OP_READ, mr, buf, 4096, 0, 0);
        cr_expect_lt(rc, 0, "a transfer succeeded with every rail dead");
        cr_expect_neq(rc, RAILWIRE_E_TIMEOUT, "a transfer hung with every rail dead");
    }
    railwire_rail_stats rst[2];
    cr_assert_eq(railwire_railset_stats(rs, rst, 2, sizeof(*rst)), 2);
    cr_expect_eq(rst[0].state, RAILWIRE_RAIL_DOWN);
    cr_expect_eq(rst[1].state, RAILWIRE_RAIL_DOWN);
    railwire_railset_close(rs);
    e2e_server_stop(&s);
    free(buf);
}
