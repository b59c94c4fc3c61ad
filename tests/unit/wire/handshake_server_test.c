/* SPDX-License-Identifier: MIT */
/* Unit tests: the server handshake state machine (src/wire/handshake_server.c). */
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

TestSuite(hs_server, .init = quiet);

static void to_params(struct rw_hs_server *s, enum railwire_dialect d, uint8_t req)
{
    cr_assert_eq(rw_hs_server_init(s, d), 0);
    cr_assert_eq(s->state, RW_HS_RECV);
    cr_assert_eq(rw_hs_server_need(s), 1);
    cr_assert_eq(rw_hs_server_feed(s, &req, 1), 1);
    cr_assert_eq(s->state, RW_HS_NEED_PARAMS);
    cr_assert_eq(s->n_rails, req);
}

Test(hs_server, init_refuses_an_unknown_dialect)
{
    struct rw_hs_server s;
    cr_assert_eq(rw_hs_server_init(&s, (enum railwire_dialect)5), RAILWIRE_E_INVALID);
    cr_assert_eq(s.state, RW_HS_FAILED);
    rw_hs_server_fini(&s);
}

Test(hs_server, request_takes_one_byte_only)
{
    struct rw_hs_server s;
    static const uint8_t b[] = {2, 2, 0};
    cr_assert_eq(rw_hs_server_init(&s, RAILWIRE_DIALECT_RW), 0);
    cr_assert_eq(rw_hs_server_feed(&s, b, sizeof(b)), 1);
    cr_assert_eq(s.n_rails, 2);
    cr_assert_eq(rw_hs_server_feed(&s, b + 1, 2), RAILWIRE_E_STATE, "waiting for params");
    rw_hs_server_fini(&s);
}

Test(hs_server, params_must_fit_the_request_and_dialect)
{
    struct rw_hs_server s;
    struct rw_rw_params rw[9];
    struct rw_ro_params ro[9];
    struct rw_mr_desc layers[9];

    drv_sample_rw(rw, 9, 1);
    drv_sample_ro(ro, layers, 9, 1, 1);
    to_params(&s, RAILWIRE_DIALECT_RO, 2);
    cr_assert_eq(rw_hs_server_set_rw_params(&s, rw, 2), RAILWIRE_E_INVALID, "RW params on RO");
    cr_assert_eq(rw_hs_server_set_ro_params(&s, ro, 1), RAILWIRE_E_INVALID, "count differs");
    ro[1].n_layers = 0;
    cr_assert_eq(rw_hs_server_set_ro_params(&s, ro, 2), RAILWIRE_E_INVALID, "0 layers");
    ro[1].n_layers = 1;
    cr_assert_eq(s.state, RW_HS_NEED_PARAMS);
    cr_assert_eq(rw_hs_server_set_ro_params(&s, ro, 2), 0);
    cr_assert_eq(s.state, RW_HS_SEND);
    cr_assert_eq(rw_hs_server_set_ro_params(&s, ro, 2), RAILWIRE_E_STATE);
    cr_assert_eq(rw_hs_server_reject(&s), RAILWIRE_E_STATE, "too late to reject");
    rw_hs_server_fini(&s);

    /* An RO client asking for 9 cannot be granted: reject it. */
    to_params(&s, RAILWIRE_DIALECT_RO, 9);
    cr_assert_eq(rw_hs_server_set_ro_params(&s, ro, 9), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_hs_server_reject(&s), 0);
    cr_assert_eq(s.state, RW_HS_REJECTED);
    cr_assert_eq(rw_hs_server_pending(&s, &(const uint8_t *){NULL}), 0);
    rw_hs_server_fini(&s);

    /* RW grants 9. */
    to_params(&s, RAILWIRE_DIALECT_RW, 9);
    cr_assert_eq(rw_hs_server_set_rw_params(&s, rw, 9), 0);
    cr_assert_eq(drv_server_flush(&s, NULL, 5), 1 + 9 * 36);
    cr_assert_eq(rw_hs_server_need(&s), 1);
    rw_hs_server_fini(&s);
}

Test(hs_server, emits_the_encoders_bytes_in_pieces)
{
    struct rw_hs_server s;
    struct rw_ro_params ro[3];
    struct rw_mr_desc layers[6];
    struct drv_bytes out = {0};
    uint8_t want[1 + 3 * RW_RO_PARAMS_SIZE(2)];

    drv_sample_ro(ro, layers, 3, 2, 9);
    cr_assert_eq(rw_encode_ro_reply(want, sizeof(want), ro, 3), (ssize_t)sizeof(want));
    to_params(&s, RAILWIRE_DIALECT_RO, 3);
    cr_assert_eq(rw_hs_server_set_ro_params(&s, ro, 3), 0);
    memset(layers, 0, sizeof(layers)); /* params were copied into the pending bytes */
    cr_assert_eq(drv_server_flush(&s, &out, 7), sizeof(want));
    cr_assert_arr_eq(out.p, want, sizeof(want));
    cr_assert_eq(s.state, RW_HS_RECV);
    drv_bytes_free(&out);
    rw_hs_server_fini(&s);
}

Test(hs_server, ids_byte_by_byte_then_decision)
{
    static struct rw_qp_id ids[255];
    static uint8_t m[1 + 255 * 24];
    static struct rw_rw_params rw[255];
    struct rw_hs_server s;
    const uint8_t *out;

    drv_sample_ids(ids, 255, 5);
    drv_sample_rw(rw, 255, 5);
    cr_assert_eq(rw_encode_client_ids(m, sizeof(m), ids, 255), (ssize_t)sizeof(m));
    to_params(&s, RAILWIRE_DIALECT_RW, 255);
    cr_assert_eq(rw_hs_server_set_rw_params(&s, rw, 255), 0);
    drv_server_flush(&s, NULL, 0);
    cr_assert_eq(rw_hs_server_decide(&s, 1), RAILWIRE_E_STATE);
    for (size_t i = 0; i < sizeof(m); i++) {
        cr_assert_eq(rw_hs_server_need(&s), i == 0 ? 1 : sizeof(m) - i);
        cr_assert_eq(rw_hs_server_feed(&s, m + i, 1), 1);
        cr_assert_leq(s.rx_cap, rw_frame_max_size(RW_FRAME_CLIENT_IDS));
    }
    cr_assert_eq(s.state, RW_HS_NEED_DECISION);
    cr_assert_arr_eq(s.ids, ids, sizeof(ids));
    cr_assert_eq(rw_hs_server_decide(&s, 0), 0);
    cr_assert_eq(rw_hs_server_pending(&s, &out), 1);
    cr_assert_eq(out[0], RW_STATUS_ERR, "refusal is ack 1");
    rw_hs_server_sent(&s, 1);
    cr_assert_eq(s.state, RW_HS_DONE);
    cr_assert_eq(rw_hs_server_eof(&s), 0);
    rw_hs_server_fini(&s);
}

Test(hs_server, echoed_count_mismatch_fails_at_the_first_byte)
{
    struct rw_hs_server s;
    struct rw_rw_params rw[2];
    uint8_t three = 3;
    drv_sample_rw(rw, 2, 5);
    to_params(&s, RAILWIRE_DIALECT_RW, 2);
    cr_assert_eq(rw_hs_server_set_rw_params(&s, rw, 2), 0);
    drv_server_flush(&s, NULL, 0);
    cr_assert_eq(rw_hs_server_feed(&s, &three, 1), RAILWIRE_E_RAIL_COUNT_MISMATCH);
    cr_assert_eq(s.state, RW_HS_FAILED);
    cr_assert_eq(rw_hs_server_eof(&s), RAILWIRE_E_RAIL_COUNT_MISMATCH);
    rw_hs_server_fini(&s);
}

Test(hs_server, eof_is_truncated_until_done)
{
    struct rw_hs_server s;
    cr_assert_eq(rw_hs_server_init(&s, RAILWIRE_DIALECT_RO), 0);
    cr_assert_eq(rw_hs_server_eof(&s), RAILWIRE_E_TRUNCATED, "not even a request");
    cr_assert_eq(s.state, RW_HS_FAILED);
    rw_hs_server_fini(&s);
    to_params(&s, RAILWIRE_DIALECT_RO, 1);
    cr_assert_eq(rw_hs_server_eof(&s), RAILWIRE_E_TRUNCATED);
    rw_hs_server_fini(&s);
}
