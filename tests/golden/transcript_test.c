/* SPDX-License-Identifier: MIT */
/* Whole handshake conversations pinned byte for byte: the client state
 * machine against a scripted server, the server state machine against a
 * scripted client, both dialects, 1 and 8 rails; plus rejection before the
 * params, refusal at the ack, rail-count mismatches and end-of-stream at
 * every step. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "golden/support/drive.h"
#include "golden/support/vectors.h"
#include "railwire/log.h"

static void quiet(void)
{
    railwire_log_set_level(RAILWIRE_LOG_ERROR);
}

TestSuite(transcript, .init = quiet);

/* ------------------------------------------------- hand-pinned, 1 rail */

/* qpn 0x00000011, psn 0x00abcdef, gid fe80::1 */
#define QP_SERVER 0x11, 0x00, 0x00, 0x00, 0xef, 0xcd, 0xab, 0x00, \
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01
/* qpn 0x01020304, psn 0x00000007, gid ::ffff:10.0.0.2 */
#define QP_CLIENT 0x04, 0x03, 0x02, 0x01, 0x07, 0x00, 0x00, 0x00, \
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2

static const struct rw_qp_id server_qp = {
    0x11, 0x00abcdef, {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01}};
static const struct rw_qp_id client_qp = {
    0x01020304, 7, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2}};

/* RW: arena at 0x00007f0000001000, rkey 0xdeadbeef. */
static const uint8_t rw1_client[] = {0x01, /* request */
                                     0x01, QP_CLIENT};
static const uint8_t rw1_server[] = {0x01, QP_SERVER,
                                     0x00, 0x10, 0x00, 0x00, 0x00, 0x7f, 0x00, 0x00, /* base_addr */
                                     0xef, 0xbe, 0xad, 0xde,                         /* rkey */
                                     0x00};                                          /* ack */
/* RO: two layers, (0x1000, 5) and (0xffffffffffffffff, 0x80000000). */
static const uint8_t ro1_client[] = {0x01, 0x01, QP_CLIENT};
static const uint8_t ro1_server[] = {0x01, QP_SERVER,
                                     0x02, 0x00, 0x00, 0x00, /* n_layers */
                                     0x00, 0x10, 0, 0, 0, 0, 0, 0, 0x05, 0, 0, 0,
                                     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0x80,
                                     0x00}; /* ack */
static struct rw_mr_desc ro1_layers[] = {{0x1000, 5}, {UINT64_MAX, 0x80000000u}};

/* A scripted conversation: what each side says, and the params/ids the
 * state machines are given. */
struct script {
    enum railwire_dialect dialect;
    unsigned n;
    const uint8_t *client_bytes; /* request + ids */
    size_t client_len;
    const uint8_t *server_bytes; /* reply + ack */
    size_t server_len;
    const struct rw_ro_params *ro;
    const struct rw_rw_params *rw;
    const struct rw_qp_id *ids;
};

/* The client state machine against the scripted server, fed in pieces of
 * `chunk`; its emitted bytes must be exactly the script's client bytes. */
static void run_client(const struct script *sc, size_t chunk)
{
    struct rw_hs_client c;
    struct drv_bytes out = {0};
    size_t reply_len = sc->server_len - 1, used;
    const struct rw_server_reply *r;
    char why[200];

    cr_assert_eq(rw_hs_client_init(&c, sc->dialect, sc->n), 0);
    cr_assert_eq(c.state, RW_HS_SEND);
    cr_assert_eq(drv_client_flush(&c, &out, chunk), 1);
    cr_assert_eq(c.state, RW_HS_RECV);
    cr_assert_eq(drv_client_feed(&c, sc->server_bytes, reply_len, chunk, 0, &used), 0);
    cr_assert_eq(used, reply_len);
    cr_assert_eq(c.state, RW_HS_NEED_LOCAL);
    r = rw_hs_client_reply(&c);
    cr_assert_not_null(r);
    if (sc->dialect == RAILWIRE_DIALECT_RO) {
        struct tv_records exp = {.n = sc->n, .ro = (struct rw_ro_params *)sc->ro};
        cr_assert(tv_reply_equal(&exp, r, why, sizeof(why)), "%s", why);
    } else {
        struct tv_records exp = {.n = sc->n, .rw = (struct rw_rw_params *)sc->rw};
        cr_assert(tv_reply_equal(&exp, r, why, sizeof(why)), "%s", why);
    }
    cr_assert_eq(rw_hs_client_set_local(&c, sc->ids, sc->n), 0);
    cr_assert_eq(drv_client_flush(&c, &out, chunk), sc->client_len - 1);
    cr_assert_eq(c.state, RW_HS_RECV);
    cr_assert_eq(drv_client_feed(&c, sc->server_bytes + reply_len, 1, chunk, 0, &used), 0);
    cr_assert_eq(c.state, RW_HS_DONE);
    cr_assert_eq(rw_hs_client_eof(&c), 0, "a clean close after the ack is no error");
    cr_assert_eq(out.len, sc->client_len);
    cr_assert_arr_eq(out.p, sc->client_bytes, sc->client_len, "client transcript differs");
    drv_bytes_free(&out);
    rw_hs_client_fini(&c);
}

/* The server state machine against the scripted client. */
static void run_server(const struct script *sc, size_t chunk)
{
    struct rw_hs_server s;
    struct drv_bytes out = {0};
    size_t used;
    char why[200];
    struct tv_records exp = {.n = sc->n, .ids = (struct rw_qp_id *)sc->ids};

    cr_assert_eq(rw_hs_server_init(&s, sc->dialect), 0);
    cr_assert_eq(s.state, RW_HS_RECV);
    cr_assert_eq(drv_server_feed(&s, sc->client_bytes, sc->client_len, chunk, 0, &used), 0);
    cr_assert_eq(used, 1, "the request is one byte");
    cr_assert_eq(s.state, RW_HS_NEED_PARAMS);
    cr_assert_eq(s.n_rails, sc->n);
    if (sc->dialect == RAILWIRE_DIALECT_RO)
        cr_assert_eq(rw_hs_server_set_ro_params(&s, sc->ro, sc->n), 0);
    else
        cr_assert_eq(rw_hs_server_set_rw_params(&s, sc->rw, sc->n), 0);
    cr_assert_eq(drv_server_flush(&s, &out, chunk), sc->server_len - 1);
    cr_assert_eq(s.state, RW_HS_RECV);
    cr_assert_eq(drv_server_feed(&s, sc->client_bytes + 1, sc->client_len - 1, chunk, 0, &used), 0);
    cr_assert_eq(used, sc->client_len - 1);
    cr_assert_eq(s.state, RW_HS_NEED_DECISION);
    cr_assert(tv_ids_equal(&exp, s.ids, s.n_rails, why, sizeof(why)), "%s", why);
    cr_assert_eq(rw_hs_server_decide(&s, 1), 0);
    cr_assert_eq(drv_server_flush(&s, &out, chunk), 1);
    cr_assert_eq(s.state, RW_HS_DONE);
    cr_assert_eq(rw_hs_server_eof(&s), 0);
    cr_assert_eq(out.len, sc->server_len);
    cr_assert_arr_eq(out.p, sc->server_bytes, sc->server_len, "server transcript differs");
    drv_bytes_free(&out);
    rw_hs_server_fini(&s);
}

static void run_both(const struct script *sc)
{
    static const size_t chunks[] = {0, 1, 3};
    for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
        run_client(sc, chunks[i]);
        run_server(sc, chunks[i]);
    }
}

static struct script hand_rw1(void)
{
    static struct rw_rw_params rw = {.arena = {0x00007f0000001000ull, 0xdeadbeefu}};
    rw.qp = server_qp;
    return (struct script){RAILWIRE_DIALECT_RW, 1, rw1_client, sizeof(rw1_client), rw1_server,
                           sizeof(rw1_server), NULL, &rw, &client_qp};
}

static struct script hand_ro1(void)
{
    static struct rw_ro_params ro = {.n_layers = 2, .layers = ro1_layers};
    ro.qp = server_qp;
    return (struct script){RAILWIRE_DIALECT_RO, 1, ro1_client, sizeof(ro1_client), ro1_server,
                           sizeof(ro1_server), &ro, NULL, &client_qp};
}

Test(transcript, rw_1_rail_pinned_bytes)
{
    struct script sc = hand_rw1();
    run_both(&sc);
}

Test(transcript, ro_1_rail_pinned_bytes)
{
    struct script sc = hand_ro1();
    run_both(&sc);
}

/* ------------------------------------ from the reference vectors, 1 and 8 */

/* Builds a script from the first ok vectors of the file with `n` rails: the
 * server reply of the dialect and the client stream. */
struct vscript {
    struct tv_vector *vecs;
    size_t nvecs;
    struct script sc;
    uint8_t *client, *server;
};

static void vscript_load(struct vscript *vs, enum railwire_dialect d, unsigned n)
{
    enum tv_kind rk = d == RAILWIRE_DIALECT_RO ? TV_RO_SERVER : TV_RW_SERVER;
    const struct tv_vector *reply = NULL, *client = NULL;
    char why[200];

    memset(vs, 0, sizeof(*vs));
    cr_assert_eq(tv_load(tv_path(), &vs->vecs, &vs->nvecs, why, sizeof(why)), 0, "%s", why);
    for (size_t i = 0; i < vs->nvecs; i++) {
        const struct tv_vector *v = &vs->vecs[i];
        if (!v->ok || v->want != n)
            continue;
        if (v->kind == rk && !reply)
            reply = v;
        if (v->kind == TV_CLIENT && !client)
            client = v;
    }
    cr_assert(reply && client, "no %s reply or client vector with %u rails",
              d == RAILWIRE_DIALECT_RO ? "RO" : "RW", n);
    vs->server = malloc(reply->len + 1);
    cr_assert_not_null(vs->server);
    memcpy(vs->server, reply->bytes, reply->len);
    vs->server[reply->len] = RW_STATUS_OK;
    vs->sc = (struct script){d, n, client->bytes, client->len, vs->server, reply->len + 1,
                             reply->expect.ro, reply->expect.rw, client->expect.ids};
}

static void vscript_free(struct vscript *vs)
{
    free(vs->server);
    tv_free_all(vs->vecs, vs->nvecs);
}

static void run_vectors(enum railwire_dialect d, unsigned n)
{
    struct vscript vs;
    vscript_load(&vs, d, n);
    run_both(&vs.sc);
    vscript_free(&vs);
}

Test(transcript, ro_1_rail_reference_bytes) { run_vectors(RAILWIRE_DIALECT_RO, 1); }
Test(transcript, ro_8_rails_reference_bytes) { run_vectors(RAILWIRE_DIALECT_RO, 8); }
Test(transcript, rw_1_rail_reference_bytes) { run_vectors(RAILWIRE_DIALECT_RW, 1); }
Test(transcript, rw_8_rails_reference_bytes) { run_vectors(RAILWIRE_DIALECT_RW, 8); }

/* The two state machines talking to each other produce the same bytes. */
static void run_pair(enum railwire_dialect d, unsigned n)
{
    struct vscript vs;
    struct rw_hs_client c;
    struct rw_hs_server s;
    struct drv_bytes c2s = {0}, s2c = {0};
    size_t used, c_off = 0, s_off = 0;
    int steps = 0;

    vscript_load(&vs, d, n);
    cr_assert_eq(rw_hs_client_init(&c, d, n), 0);
    cr_assert_eq(rw_hs_server_init(&s, d), 0);
    while (c.state != RW_HS_DONE || s.state != RW_HS_DONE) {
        cr_assert_lt(++steps, 100, "the conversation does not end");
        cr_assert_neq(c.state, RW_HS_FAILED);
        cr_assert_neq(s.state, RW_HS_FAILED);
        drv_client_flush(&c, &c2s, 0);
        drv_server_flush(&s, &s2c, 0);
        if (s.state == RW_HS_RECV && c_off < c2s.len) {
            cr_assert_eq(drv_server_feed(&s, c2s.p + c_off, c2s.len - c_off, 0, 0, &used), 0);
            c_off += used;
        }
        if (c.state == RW_HS_RECV && s_off < s2c.len) {
            cr_assert_eq(drv_client_feed(&c, s2c.p + s_off, s2c.len - s_off, 0, 0, &used), 0);
            s_off += used;
        }
        if (s.state == RW_HS_NEED_PARAMS)
            cr_assert_eq(d == RAILWIRE_DIALECT_RO ? rw_hs_server_set_ro_params(&s, vs.sc.ro, n)
                                                  : rw_hs_server_set_rw_params(&s, vs.sc.rw, n), 0);
        if (c.state == RW_HS_NEED_LOCAL)
            cr_assert_eq(rw_hs_client_set_local(&c, vs.sc.ids, n), 0);
        if (s.state == RW_HS_NEED_DECISION)
            cr_assert_eq(rw_hs_server_decide(&s, 1), 0);
    }
    cr_assert_eq(c2s.len, vs.sc.client_len);
    cr_assert_arr_eq(c2s.p, vs.sc.client_bytes, c2s.len);
    cr_assert_eq(s2c.len, vs.sc.server_len);
    cr_assert_arr_eq(s2c.p, vs.sc.server_bytes, s2c.len);
    drv_bytes_free(&c2s);
    drv_bytes_free(&s2c);
    rw_hs_client_fini(&c);
    rw_hs_server_fini(&s);
    vscript_free(&vs);
}

Test(transcript, client_and_server_agree_ro_1) { run_pair(RAILWIRE_DIALECT_RO, 1); }
Test(transcript, client_and_server_agree_ro_8) { run_pair(RAILWIRE_DIALECT_RO, 8); }
Test(transcript, client_and_server_agree_rw_1) { run_pair(RAILWIRE_DIALECT_RW, 1); }
Test(transcript, client_and_server_agree_rw_8) { run_pair(RAILWIRE_DIALECT_RW, 8); }

/* ------------------------------------------------- rejection, refusal */

static void reject_before_params(enum railwire_dialect d, unsigned n)
{
    struct rw_hs_server s;
    struct rw_hs_client c;
    struct drv_bytes c2s = {0}, s2c = {0};
    size_t used;

    cr_assert_eq(rw_hs_client_init(&c, d, n), 0);
    cr_assert_eq(rw_hs_server_init(&s, d), 0);
    drv_client_flush(&c, &c2s, 0);
    cr_assert_eq(drv_server_feed(&s, c2s.p, c2s.len, 0, 0, &used), 0);
    cr_assert_eq(s.state, RW_HS_NEED_PARAMS);
    cr_assert_eq(rw_hs_server_reject(&s), 0);
    cr_assert_eq(s.state, RW_HS_REJECTED, "the caller closes the connection");
    cr_assert_eq(drv_server_flush(&s, &s2c, 0), 0, "a rejection sends nothing");
    /* The server closed: the client sees a clean EOF at the first byte. */
    cr_assert_eq(rw_hs_client_eof(&c), RAILWIRE_E_PEER_REJECTED);
    cr_assert_eq(c.state, RW_HS_FAILED);
    cr_assert_eq(c.error, RAILWIRE_E_PEER_REJECTED);
    cr_assert_str_eq(railwire_error_class(c.error), "peer-rejected");
    cr_assert_eq(rw_hs_server_eof(&s), 0, "EOF after a rejection is expected");
    drv_bytes_free(&c2s);
    rw_hs_client_fini(&c);
    rw_hs_server_fini(&s);
}

Test(transcript, rejection_before_params_is_peer_rejected)
{
    reject_before_params(RAILWIRE_DIALECT_RO, 1);
    reject_before_params(RAILWIRE_DIALECT_RO, 8);
    reject_before_params(RAILWIRE_DIALECT_RW, 1);
    reject_before_params(RAILWIRE_DIALECT_RW, 8);
}

Test(transcript, refusal_at_the_ack)
{
    struct script sc = hand_rw1();
    struct rw_hs_server s;
    struct rw_hs_client c;
    struct drv_bytes s_out = {0};
    size_t used;
    static const uint8_t refused_transcript[] = {0x01, QP_SERVER, 0x00, 0x10, 0x00, 0x00, 0x00,
                                                 0x7f, 0x00, 0x00, 0xef, 0xbe, 0xad, 0xde, 0x01};

    /* The server refuses: it sends ack 1. */
    cr_assert_eq(rw_hs_server_init(&s, sc.dialect), 0);
    cr_assert_eq(drv_server_feed(&s, sc.client_bytes, 1, 0, 0, &used), 0);
    cr_assert_eq(rw_hs_server_set_rw_params(&s, sc.rw, 1), 0);
    drv_server_flush(&s, &s_out, 0);
    cr_assert_eq(drv_server_feed(&s, sc.client_bytes + 1, sc.client_len - 1, 0, 0, &used), 0);
    cr_assert_eq(rw_hs_server_decide(&s, 0), 0);
    drv_server_flush(&s, &s_out, 0);
    cr_assert_eq(s.state, RW_HS_DONE);
    cr_assert_eq(s_out.len, sizeof(refused_transcript));
    cr_assert_arr_eq(s_out.p, refused_transcript, s_out.len);

    /* The client reads it as refused, for ack 1 and any other non-zero byte. */
    for (unsigned ack = 1; ack < 256; ack += 127) {
        uint8_t a = (uint8_t)ack;
        cr_assert_eq(rw_hs_client_init(&c, sc.dialect, 1), 0);
        drv_client_flush(&c, NULL, 0);
        cr_assert_eq(drv_client_feed(&c, s_out.p, s_out.len - 1, 0, 0, &used), 0);
        cr_assert_eq(rw_hs_client_set_local(&c, sc.ids, 1), 0);
        drv_client_flush(&c, NULL, 0);
        cr_assert_eq(rw_hs_client_feed(&c, &a, 1), RAILWIRE_E_REFUSED);
        cr_assert_eq(c.state, RW_HS_FAILED);
        cr_assert_eq(c.refused_status, (int)a);
        cr_assert_eq(rw_hs_client_eof(&c), RAILWIRE_E_REFUSED, "the failure stays refused");
        rw_hs_client_fini(&c);
    }
    drv_bytes_free(&s_out);
    rw_hs_server_fini(&s);
}

Test(transcript, reply_rail_count_mismatch)
{
    struct rw_hs_client c;
    /* Asked for 2; the RW server frames 1 (a whole valid 1-rail reply). */
    cr_assert_eq(rw_hs_client_init(&c, RAILWIRE_DIALECT_RW, 2), 0);
    drv_client_flush(&c, NULL, 0);
    cr_assert_eq(rw_hs_client_feed(&c, rw1_server, sizeof(rw1_server) - 1),
                 RAILWIRE_E_RAIL_COUNT_MISMATCH);
    cr_assert_eq(c.state, RW_HS_FAILED);
    rw_hs_client_fini(&c);
    /* Asked for 2; the RO server frames 1, the first byte decides. */
    cr_assert_eq(rw_hs_client_init(&c, RAILWIRE_DIALECT_RO, 2), 0);
    drv_client_flush(&c, NULL, 0);
    cr_assert_eq(rw_hs_client_feed(&c, ro1_server, 1), RAILWIRE_E_RAIL_COUNT_MISMATCH);
    rw_hs_client_fini(&c);
    /* RO 9 is a bad count before it is a mismatch. */
    cr_assert_eq(rw_hs_client_init(&c, RAILWIRE_DIALECT_RO, 8), 0);
    drv_client_flush(&c, NULL, 0);
    cr_assert_eq(rw_hs_client_feed(&c, (const uint8_t[]){9}, 1), RAILWIRE_E_BAD_RAIL_COUNT);
    rw_hs_client_fini(&c);
}

Test(transcript, echoed_rail_count_mismatch)
{
    struct script sc = hand_rw1();
    struct rw_hs_server s;
    size_t used;
    /* Request 1, but the ids message echoes 2. */
    static const uint8_t bad[] = {0x01, 0x02, QP_CLIENT, QP_CLIENT};

    cr_assert_eq(rw_hs_server_init(&s, RAILWIRE_DIALECT_RW), 0);
    cr_assert_eq(drv_server_feed(&s, bad, 1, 0, 0, &used), 0);
    cr_assert_eq(rw_hs_server_set_rw_params(&s, sc.rw, 1), 0);
    drv_server_flush(&s, NULL, 0);
    cr_assert_eq(rw_hs_server_feed(&s, bad + 1, sizeof(bad) - 1), RAILWIRE_E_RAIL_COUNT_MISMATCH);
    cr_assert_eq(s.state, RW_HS_FAILED);
    cr_assert_eq(s.error, RAILWIRE_E_RAIL_COUNT_MISMATCH);
    rw_hs_server_fini(&s);
}

/* ------------------------------------------------ end-of-stream anywhere */

/* Runs the client conversation of `sc` and closes the server's side after
 * `cut` bytes of its output: peer-rejected at 0 bytes, truncated anywhere
 * else before the ack, no error after it. */
Test(transcript, client_sees_eof_at_every_step)
{
    struct script scripts[2] = {hand_rw1(), hand_ro1()};
    for (int k = 0; k < 2; k++) {
        const struct script *sc = &scripts[k];
        size_t reply_len = sc->server_len - 1;
        for (size_t cut = 0; cut <= sc->server_len; cut++) {
            struct rw_hs_client c;
            size_t used;
            int want = cut == 0 ? RAILWIRE_E_PEER_REJECTED
                       : cut == sc->server_len ? 0 : RAILWIRE_E_TRUNCATED;
            cr_assert_eq(rw_hs_client_init(&c, sc->dialect, sc->n), 0);
            drv_client_flush(&c, NULL, 0);
            drv_client_feed(&c, sc->server_bytes, cut < reply_len ? cut : reply_len, 0, 0, &used);
            if (cut >= reply_len) {
                cr_assert_eq(c.state, RW_HS_NEED_LOCAL);
                if (cut == reply_len) {
                    /* EOF while the client has not even sent its ids. */
                    cr_assert_eq(rw_hs_client_eof(&c), RAILWIRE_E_TRUNCATED);
                    rw_hs_client_fini(&c);
                    /* ... and after it sent them, before the ack. */
                    cr_assert_eq(rw_hs_client_init(&c, sc->dialect, sc->n), 0);
                    drv_client_flush(&c, NULL, 0);
                    drv_client_feed(&c, sc->server_bytes, reply_len, 0, 0, &used);
                }
                cr_assert_eq(rw_hs_client_set_local(&c, sc->ids, sc->n), 0);
                drv_client_flush(&c, NULL, 0);
                drv_client_feed(&c, sc->server_bytes + reply_len, cut - reply_len, 0, 0, &used);
            }
            cr_assert_eq(rw_hs_client_eof(&c), want, "script %d cut at %zu: got %s", k, cut,
                         railwire_error_class(rw_hs_client_eof(&c)));
            cr_assert_eq(c.state, want ? RW_HS_FAILED : RW_HS_DONE);
            rw_hs_client_fini(&c);
        }
    }
    /* EOF before the request was even sent is still a rejection. */
    {
        struct rw_hs_client c;
        cr_assert_eq(rw_hs_client_init(&c, RAILWIRE_DIALECT_RW, 1), 0);
        cr_assert_eq(rw_hs_client_eof(&c), RAILWIRE_E_PEER_REJECTED);
        rw_hs_client_fini(&c);
    }
}

/* The client closes after `cut` bytes of its stream, at every step of the
 * server's side: truncated until the ack is sent, no error after it. */
Test(transcript, server_sees_eof_at_every_step)
{
    struct script scripts[2] = {hand_rw1(), hand_ro1()};
    for (int k = 0; k < 2; k++) {
        const struct script *sc = &scripts[k];
        for (size_t cut = 0; cut <= sc->client_len; cut++) {
            struct rw_hs_server s;
            size_t used;
            cr_assert_eq(rw_hs_server_init(&s, sc->dialect), 0);
            drv_server_feed(&s, sc->client_bytes, cut ? 1 : 0, 0, 0, &used);
            if (cut >= 1) {
                cr_assert_eq(s.state, RW_HS_NEED_PARAMS);
                if (cut == 1 && k == 0) {
                    /* EOF while the server decides on the params. */
                    cr_assert_eq(rw_hs_server_eof(&s), RAILWIRE_E_TRUNCATED);
                    rw_hs_server_fini(&s);
                    continue;
                }
                if (sc->dialect == RAILWIRE_DIALECT_RO)
                    rw_hs_server_set_ro_params(&s, sc->ro, sc->n);
                else
                    rw_hs_server_set_rw_params(&s, sc->rw, sc->n);
                drv_server_flush(&s, NULL, 0);
                drv_server_feed(&s, sc->client_bytes + 1, cut - 1, 0, 0, &used);
            }
            if (cut == sc->client_len) {
                cr_assert_eq(s.state, RW_HS_NEED_DECISION);
                cr_assert_eq(rw_hs_server_eof(&s), RAILWIRE_E_TRUNCATED,
                             "EOF before the ack is sent");
                rw_hs_server_fini(&s);
                cr_assert_eq(rw_hs_server_init(&s, sc->dialect), 0);
                drv_server_feed(&s, sc->client_bytes, 1, 0, 0, &used);
                if (sc->dialect == RAILWIRE_DIALECT_RO)
                    rw_hs_server_set_ro_params(&s, sc->ro, sc->n);
                else
                    rw_hs_server_set_rw_params(&s, sc->rw, sc->n);
                drv_server_flush(&s, NULL, 0);
                drv_server_feed(&s, sc->client_bytes + 1, cut - 1, 0, 0, &used);
                cr_assert_eq(rw_hs_server_decide(&s, 1), 0);
                drv_server_flush(&s, NULL, 0);
                cr_assert_eq(s.state, RW_HS_DONE);
                cr_assert_eq(rw_hs_server_eof(&s), 0);
            } else {
                cr_assert_eq(rw_hs_server_eof(&s), RAILWIRE_E_TRUNCATED, "script %d cut at %zu",
                             k, cut);
                cr_assert_eq(s.state, RW_HS_FAILED);
            }
            rw_hs_server_fini(&s);
        }
    }
}
