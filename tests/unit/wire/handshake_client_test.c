/* SPDX-License-Identifier: MIT */
/* Unit tests: the client handshake state machine (src/wire/handshake_client.c). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "golden/support/drive.h"
#include "railwire/log.h"
#include "wire/handshake.h"

static void quiet(void)
{
    railwire_log_set_level(RAILWIRE_LOG_ERROR);
}

TestSuite(hs_client, .init = quiet);

Test(hs_client, init_bounds_the_rail_count_per_dialect)
{
    struct rw_hs_client c;
    static const struct {
        enum railwire_dialect d;
        unsigned n;
        int rc;
    } cases[] = {
        {RAILWIRE_DIALECT_RO, 0, RAILWIRE_E_INVALID}, {RAILWIRE_DIALECT_RO, 1, 0},
        {RAILWIRE_DIALECT_RO, 8, 0},                  {RAILWIRE_DIALECT_RO, 9, RAILWIRE_E_INVALID},
        {RAILWIRE_DIALECT_RW, 0, RAILWIRE_E_INVALID}, {RAILWIRE_DIALECT_RW, 9, 0},
        {RAILWIRE_DIALECT_RW, 255, 0},                {RAILWIRE_DIALECT_RW, 256, RAILWIRE_E_INVALID},
        {(enum railwire_dialect)7, 1, RAILWIRE_E_INVALID},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cr_assert_eq(rw_hs_client_init(&c, cases[i].d, cases[i].n), cases[i].rc, "case %zu", i);
        cr_assert_eq(c.state, cases[i].rc ? RW_HS_FAILED : RW_HS_SEND);
        rw_hs_client_fini(&c); /* safe in every case */
    }
}

Test(hs_client, request_can_be_sent_in_pieces_and_nothing_else_is_pending)
{
    struct rw_hs_client c;
    const uint8_t *p;
    cr_assert_eq(rw_hs_client_init(&c, RAILWIRE_DIALECT_RW, 3), 0);
    cr_assert_eq(rw_hs_client_pending(&c, &p), 1);
    cr_assert_eq(p[0], 3);
    cr_assert_eq(rw_hs_client_need(&c), 0);
    rw_hs_client_sent(&c, 0);
    cr_assert_eq(c.state, RW_HS_SEND);
    rw_hs_client_sent(&c, 1);
    cr_assert_eq(c.state, RW_HS_RECV);
    cr_assert_eq(rw_hs_client_pending(&c, &p), 0);
    cr_assert_null(p);
    cr_assert_eq(rw_hs_client_need(&c), 1);
    rw_hs_client_fini(&c);
}

Test(hs_client, calls_in_the_wrong_state_are_refused)
{
    struct rw_hs_client c;
    struct rw_qp_id id = {0};
    uint8_t b = 1;
    cr_assert_eq(rw_hs_client_init(&c, RAILWIRE_DIALECT_RW, 1), 0);
    cr_assert_eq(rw_hs_client_feed(&c, &b, 1), RAILWIRE_E_STATE, "still sending the request");
    cr_assert_eq(rw_hs_client_set_local(&c, &id, 1), RAILWIRE_E_STATE);
    cr_assert_null(rw_hs_client_reply(&c));
    cr_assert_eq(c.state, RW_HS_SEND, "a refused call changes nothing");
    cr_assert_eq(rw_hs_client_feed(&c, NULL, 0), 0);
    rw_hs_client_fini(&c);
}

Test(hs_client, need_counts_down_the_message)
{
    struct rw_hs_client c;
    struct rw_rw_params p[2];
    uint8_t m[73];
    drv_sample_rw(p, 2, 3);
    rw_encode_rw_reply(m, sizeof(m), p, 2);
    cr_assert_eq(rw_hs_client_init(&c, RAILWIRE_DIALECT_RW, 2), 0);
    drv_client_flush(&c, NULL, 0);
    cr_assert_eq(rw_hs_client_need(&c), 1);
    cr_assert_eq(rw_hs_client_feed(&c, m, 1), 1);
    cr_assert_eq(rw_hs_client_need(&c), 72);
    cr_assert_eq(rw_hs_client_feed(&c, m + 1, 30), 30);
    cr_assert_eq(rw_hs_client_need(&c), 42);
    cr_assert_eq(rw_hs_client_feed(&c, m + 31, 42), 42);
    cr_assert_eq(c.state, RW_HS_NEED_LOCAL);
    cr_assert_eq(rw_hs_client_need(&c), 0);
    rw_hs_client_fini(&c);
}

Test(hs_client, feed_stops_at_the_end_of_the_reply)
{
    struct rw_hs_client c;
    struct rw_rw_params p;
    uint8_t m[37 + 5];
    drv_sample_rw(&p, 1, 3);
    rw_encode_rw_reply(m, 37, &p, 1);
    memset(m + 37, 0, 5);
    cr_assert_eq(rw_hs_client_init(&c, RAILWIRE_DIALECT_RW, 1), 0);
    drv_client_flush(&c, NULL, 0);
    cr_assert_eq(rw_hs_client_feed(&c, m, sizeof(m)), 37);
    cr_assert_eq(c.state, RW_HS_NEED_LOCAL);
    cr_assert_eq(rw_hs_client_feed(&c, m + 37, 5), RAILWIRE_E_STATE);
    rw_hs_client_fini(&c);
}

Test(hs_client, set_local_checks_the_count)
{
    struct rw_hs_client c;
    struct rw_rw_params p;
    struct rw_qp_id ids[2];
    uint8_t m[37];
    const uint8_t *out;
    uint8_t want[49];
    drv_sample_rw(&p, 1, 3);
    drv_sample_ids(ids, 2, 3);
    rw_encode_rw_reply(m, sizeof(m), &p, 1);
    cr_assert_eq(rw_hs_client_init(&c, RAILWIRE_DIALECT_RW, 1), 0);
    drv_client_flush(&c, NULL, 0);
    cr_assert_eq(rw_hs_client_feed(&c, m, sizeof(m)), 37);
    cr_assert_not_null(rw_hs_client_reply(&c));
    cr_assert_eq(rw_hs_client_reply(&c)->rw[0].arena.rkey, p.arena.rkey);
    cr_assert_eq(rw_hs_client_set_local(&c, ids, 2), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_hs_client_set_local(&c, NULL, 1), RAILWIRE_E_INVALID);
    cr_assert_eq(c.state, RW_HS_NEED_LOCAL);
    cr_assert_eq(rw_hs_client_set_local(&c, ids, 1), 0);
    cr_assert_eq(rw_hs_client_pending(&c, &out), 25);
    rw_encode_client_ids(want, sizeof(want), ids, 1);
    cr_assert_arr_eq(out, want, 25);
    rw_hs_client_sent(&c, 10);
    cr_assert_eq(rw_hs_client_pending(&c, &out), 15);
    cr_assert_arr_eq(out, want + 10, 15);
    rw_hs_client_sent(&c, 100); /* more than pending: clamped */
    cr_assert_eq(c.state, RW_HS_RECV);
    rw_hs_client_fini(&c);
}

Test(hs_client, bad_layer_count_fails_before_the_rest_arrives)
{
    struct rw_hs_client c;
    uint8_t m[29] = {1};
    rw_put_le32(m + 25, 4097);
    cr_assert_eq(rw_hs_client_init(&c, RAILWIRE_DIALECT_RO, 1), 0);
    drv_client_flush(&c, NULL, 0);
    for (size_t i = 0; i < 28; i++)
        cr_assert_eq(rw_hs_client_feed(&c, m + i, 1), 1);
    cr_assert_eq(rw_hs_client_feed(&c, m + 28, 1), RAILWIRE_E_BAD_LAYER_COUNT);
    cr_assert_eq(c.state, RW_HS_FAILED);
    cr_assert_eq(c.error, RAILWIRE_E_BAD_LAYER_COUNT);
    cr_assert_eq(rw_hs_client_eof(&c), RAILWIRE_E_BAD_LAYER_COUNT, "the first error stays");
    cr_assert_eq(rw_hs_client_feed(&c, m, 1), RAILWIRE_E_STATE);
    rw_hs_client_fini(&c);
}

/* The largest RO reply (8 rails x 4096 layers, 393441 bytes) fed one byte
 * at a time: each byte is handled in constant time (a quadratic feed would
 * re-decode ~7.7e10 bytes and run into the test timeout), the buffer never
 * exceeds the message, and the records come out exact. */
Test(hs_client, largest_ro_reply_one_byte_at_a_time, .timeout = 120)
{
    struct rw_hs_client c;
    struct rw_ro_params p[8];
    struct rw_mr_desc *layers = calloc(8 * 4096, sizeof(*layers));
    size_t len;
    uint8_t *m;
    char why[200];
    struct tv_records exp = {.n = 8, .ro = p};

    cr_assert_not_null(layers);
    drv_sample_ro(p, layers, 8, 4096, 77);
    len = rw_ro_reply_size(p, 8);
    cr_assert_eq(len, 393441);
    m = malloc(len);
    cr_assert_eq(rw_encode_ro_reply(m, len, p, 8), (ssize_t)len);
    cr_assert_eq(rw_hs_client_init(&c, RAILWIRE_DIALECT_RO, 8), 0);
    drv_client_flush(&c, NULL, 0);
    for (size_t i = 0; i < len; i++) {
        cr_assert_eq(c.state, RW_HS_RECV);
        if (rw_hs_client_feed(&c, m + i, 1) != 1)
            cr_assert_fail("byte %zu not taken", i);
        if (c.rx_cap > len)
            cr_assert_fail("reassembly buffer %zu exceeds the message", c.rx_cap);
    }
    cr_assert_eq(c.state, RW_HS_NEED_LOCAL);
    cr_assert(tv_reply_equal(&exp, rw_hs_client_reply(&c), why, sizeof(why)), "%s", why);
    cr_assert_null(c.rx, "the reassembly buffer is released once decoded");
    rw_hs_client_fini(&c);
    free(m);
    free(layers);
}

Test(hs_client, eof_classes_by_stage)
{
    struct rw_hs_client c;
    uint8_t one = 1;
    cr_assert_eq(rw_hs_client_init(&c, RAILWIRE_DIALECT_RW, 1), 0);
    drv_client_flush(&c, NULL, 0);
    cr_assert_eq(rw_hs_client_eof(&c), RAILWIRE_E_PEER_REJECTED);
    cr_assert_str_eq(railwire_error_class(c.error), "peer-rejected");
    rw_hs_client_fini(&c);
    cr_assert_eq(rw_hs_client_init(&c, RAILWIRE_DIALECT_RW, 1), 0);
    drv_client_flush(&c, NULL, 0);
    cr_assert_eq(rw_hs_client_feed(&c, &one, 1), 1);
    cr_assert_eq(rw_hs_client_eof(&c), RAILWIRE_E_TRUNCATED);
    rw_hs_client_fini(&c);
}
