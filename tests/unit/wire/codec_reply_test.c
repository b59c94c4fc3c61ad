/* SPDX-License-Identifier: MIT */
/* Unit tests: the server replies of both dialects (src/wire/codec_reply.c). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "golden/support/drive.h"
#include "railwire/log.h"
#include "wire/wire.h"

static void quiet(void)
{
    railwire_log_set_level(RAILWIRE_LOG_ERROR);
}

TestSuite(ro_reply, .init = quiet);
TestSuite(rw_reply, .init = quiet);

static int untouched(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != 0xcc)
            return 0;
    return 1;
}

/* n rails of n_layers each, encoded into an owned buffer. */
static uint8_t *ro_message(unsigned n, uint32_t n_layers, size_t *len)
{
    struct rw_ro_params p[8];
    struct rw_mr_desc *layers = calloc((size_t)n * n_layers, sizeof(*layers));
    uint8_t *m;

    cr_assert_not_null(layers);
    drv_sample_ro(p, layers, n, n_layers, 42);
    *len = rw_ro_reply_size(p, n);
    cr_assert_eq(*len, 1 + n * RW_RO_PARAMS_SIZE(n_layers));
    m = malloc(*len);
    cr_assert_eq(rw_encode_ro_reply(m, *len, p, n), (ssize_t)*len);
    free(layers);
    return m;
}

Test(ro_reply, layout_is_count_then_params)
{
    struct rw_mr_desc l[2] = {{0x1122334455667788ull, 0xaabbccdd}, {1, 2}};
    struct rw_ro_params p = {{7, 8, {0}}, 2, l};
    uint8_t b[1 + 28 + 24];
    static const uint8_t want[] = {1, 7, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                   0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0,
                                   0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0xdd, 0xcc, 0xbb, 0xaa,
                                   1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0};
    cr_assert_eq(sizeof(want), sizeof(b));
    cr_assert_eq(rw_encode_ro_reply(b, sizeof(b), &p, 1), (ssize_t)sizeof(b));
    cr_assert_arr_eq(b, want, sizeof(b));
}

Test(ro_reply, size_and_encode_refuse_unencodable_params)
{
    struct rw_mr_desc l[1] = {{1, 2}};
    struct rw_ro_params p[9];
    uint8_t b[1024];

    for (int i = 0; i < 9; i++)
        p[i] = (struct rw_ro_params){{0}, 1, l};
    cr_assert_eq(rw_ro_reply_size(p, 8), 1 + 8 * 40);
    cr_assert_eq(rw_ro_reply_size(p, 0), 0);
    cr_assert_eq(rw_ro_reply_size(p, 9), 0);
    cr_assert_eq(rw_ro_reply_size(NULL, 1), 0);
    memset(b, 0xcc, sizeof(b));
    cr_assert_eq(rw_encode_ro_reply(b, sizeof(b), p, 0), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_encode_ro_reply(b, sizeof(b), p, 9), RAILWIRE_E_INVALID);
    p[3].n_layers = 0;
    cr_assert_eq(rw_encode_ro_reply(b, sizeof(b), p, 8), RAILWIRE_E_INVALID, "0 layers");
    p[3].n_layers = 4097;
    cr_assert_eq(rw_encode_ro_reply(b, sizeof(b), p, 8), RAILWIRE_E_INVALID, "4097 layers");
    p[3].n_layers = 1;
    p[3].layers = NULL;
    cr_assert_eq(rw_encode_ro_reply(b, sizeof(b), p, 8), RAILWIRE_E_INVALID, "no layer array");
    cr_assert(untouched(b, sizeof(b)), "a refused encode writes nothing");
}

Test(ro_reply, encode_nospace_writes_nothing)
{
    struct rw_mr_desc l[3] = {{1, 2}, {3, 4}, {5, 6}};
    struct rw_ro_params p = {{0}, 3, l};
    uint8_t b[1 + 28 + 36];

    for (size_t cap = 0; cap < sizeof(b); cap++) {
        memset(b, 0xcc, sizeof(b));
        cr_assert_eq(rw_encode_ro_reply(b, cap, &p, 1), RAILWIRE_E_NOSPACE, "cap %zu", cap);
        cr_assert(untouched(b, sizeof(b)));
    }
    cr_assert_eq(rw_encode_ro_reply(b, sizeof(b), &p, 1), (ssize_t)sizeof(b));
}

Test(ro_reply, layer_count_bounds_4096_ok_4097_bad)
{
    size_t len;
    uint8_t *m = ro_message(1, 4096, &len);
    struct rw_server_reply r;
    uint8_t *big;

    cr_assert_eq(rw_decode_ro_reply(m, len, 1, &r), (ssize_t)len);
    cr_assert_eq(r.ro[0].n_layers, 4096);
    rw_server_reply_free(&r);
    /* Same message claiming 4097 layers (with the bytes for them). */
    big = calloc(1, len + 12);
    memcpy(big, m, len);
    rw_put_le32(big + 1 + 24, 4097);
    cr_assert_eq(rw_decode_ro_reply(big, len + 12, 1, &r), RAILWIRE_E_BAD_LAYER_COUNT);
    cr_assert_null(r.ro);
    rw_put_le32(big + 1 + 24, 0);
    cr_assert_eq(rw_decode_ro_reply(big, len + 12, 1, &r), RAILWIRE_E_BAD_LAYER_COUNT);
    rw_put_le32(big + 1 + 24, UINT32_MAX);
    cr_assert_eq(rw_decode_ro_reply(big, 29, 1, &r), RAILWIRE_E_BAD_LAYER_COUNT,
                 "refused from the count alone, nothing allocated from it");
    free(big);
    free(m);
}

Test(ro_reply, largest_reply_round_trips)
{
    size_t len;
    uint8_t *m = ro_message(8, 4096, &len), *again;
    struct rw_server_reply r;

    cr_assert_eq(len, 393441);
    cr_assert_eq(rw_decode_ro_reply(m, len, 8, &r), (ssize_t)len);
    cr_assert_eq(r.dialect, RAILWIRE_DIALECT_RO);
    cr_assert_eq(r.n_rails, 8);
    again = malloc(len);
    cr_assert_eq(rw_encode_ro_reply(again, len, r.ro, r.n_rails), (ssize_t)len);
    cr_assert_arr_eq(again, m, len);
    free(again);
    rw_server_reply_free(&r);
    cr_assert_eq(r.n_rails, 0);
    free(m);
}

Test(ro_reply, rail_count_is_bounded_before_it_is_compared)
{
    struct rw_server_reply r;
    cr_assert_eq(rw_decode_ro_reply((const uint8_t[]){9}, 1, 9, &r), RAILWIRE_E_BAD_RAIL_COUNT);
    cr_assert_eq(rw_decode_ro_reply((const uint8_t[]){0}, 1, 0, &r), RAILWIRE_E_BAD_RAIL_COUNT);
    cr_assert_eq(rw_decode_ro_reply((const uint8_t[]){0}, 1, 1, &r), RAILWIRE_E_BAD_RAIL_COUNT);
    cr_assert_eq(rw_decode_ro_reply((const uint8_t[]){2}, 1, 3, &r), RAILWIRE_E_RAIL_COUNT_MISMATCH);
    cr_assert_eq(rw_decode_ro_reply((const uint8_t[]){8}, 1, 8, &r), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(rw_decode_ro_reply(NULL, 0, 1, &r), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(rw_decode_ro_reply(NULL, 1, 1, &r), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_decode_ro_reply((const uint8_t[]){1}, 1, 1, NULL), RAILWIRE_E_INVALID);
}

Test(ro_reply, psn_above_2_pow_24_is_accepted)
{
    struct rw_mr_desc l = {5, 6};
    struct rw_ro_params p = {{1, 0xffffffffu, {0}}, 1, &l};
    uint8_t b[41];
    struct rw_server_reply r;
    cr_assert_eq(rw_encode_ro_reply(b, sizeof(b), &p, 1), 41);
    cr_assert_eq(rw_decode_ro_reply(b, sizeof(b), 1, &r), 41);
    cr_assert_eq(r.ro[0].qp.psn, 0xffffffffu);
    rw_server_reply_free(&r);
}

Test(rw_reply, layout_and_bounds)
{
    struct rw_rw_params p[256];
    uint8_t *b = malloc(1 + 256 * 36);
    struct rw_server_reply r;

    drv_sample_rw(p, 256, 1);
    p[0] = (struct rw_rw_params){{1, 2, {3}}, {0x0807060504030201ull, 0x0c0b0a09u}};
    cr_assert_eq(rw_encode_rw_reply(b, 37, p, 1), 37);
    cr_assert_arr_eq(b, ((uint8_t[]){1, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                     0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}), 37);
    /* 9 and 255 rails are fine in RW; 256 cannot be framed. */
    cr_assert_eq(rw_encode_rw_reply(b, 1 + 9 * 36, p, 9), 1 + 9 * 36);
    cr_assert_eq(rw_decode_rw_reply(b, 1 + 9 * 36, 9, &r), 1 + 9 * 36);
    cr_assert_eq(r.n_rails, 9);
    cr_assert_eq(r.dialect, RAILWIRE_DIALECT_RW);
    rw_server_reply_free(&r);
    cr_assert_eq(rw_encode_rw_reply(b, 1 + 255 * 36, p, 255), 1 + 255 * 36);
    cr_assert_eq(rw_decode_rw_reply(b, 1 + 255 * 36, 255, &r), 1 + 255 * 36);
    rw_server_reply_free(&r);
    cr_assert_eq(rw_encode_rw_reply(b, 1 + 256 * 36, p, 256), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_encode_rw_reply(b, 100, NULL, 1), RAILWIRE_E_INVALID);
    free(b);
}

Test(rw_reply, encode_nospace_writes_nothing)
{
    struct rw_rw_params p[2];
    uint8_t b[73];
    drv_sample_rw(p, 2, 5);
    for (size_t cap = 0; cap < sizeof(b); cap++) {
        memset(b, 0xcc, sizeof(b));
        cr_assert_eq(rw_encode_rw_reply(b, cap, p, 2), RAILWIRE_E_NOSPACE);
        cr_assert(untouched(b, sizeof(b)));
    }
}

Test(rw_reply, count_must_equal_want_and_truncation_needs_more)
{
    struct rw_rw_params p[2];
    uint8_t b[73];
    struct rw_server_reply r;
    drv_sample_rw(p, 2, 5);
    cr_assert_eq(rw_encode_rw_reply(b, sizeof(b), p, 2), 73);
    cr_assert_eq(rw_decode_rw_reply(b, sizeof(b), 1, &r), RAILWIRE_E_RAIL_COUNT_MISMATCH);
    cr_assert_eq(rw_decode_rw_reply(b, sizeof(b), 3, &r), RAILWIRE_E_RAIL_COUNT_MISMATCH);
    for (size_t len = 0; len < sizeof(b); len++) {
        cr_assert_eq(rw_decode_rw_reply(b, len, 2, &r), RAILWIRE_E_NEED_MORE);
        cr_assert_null(r.rw);
    }
    cr_assert_eq(rw_decode_rw_reply(b, sizeof(b), 2, &r), 73);
    cr_assert_eq(r.rw[1].arena.base_addr, p[1].arena.base_addr);
    rw_server_reply_free(&r);
}
