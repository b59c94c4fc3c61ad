/* SPDX-License-Identifier: MIT */
/* Unit tests: the client's messages (src/wire/codec_client.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "golden/support/drive.h"
#include "railwire/log.h"
#include "wire/wire.h"

static void quiet(void)
{
    railwire_log_set_level(RAILWIRE_LOG_ERROR);
}

TestSuite(client_msg, .init = quiet);

Test(client_msg, request_is_one_byte)
{
    uint8_t b[2] = {0xcc, 0xcc};
    cr_assert_eq(rw_encode_request(b, 2, 8), 1);
    cr_assert_eq(b[0], 8);
    cr_assert_eq(b[1], 0xcc);
    cr_assert_eq(rw_encode_request(b, 1, 255), 1);
    cr_assert_eq(b[0], 255);
    cr_assert_eq(rw_encode_request(b, 1, 256), RAILWIRE_E_INVALID);
    b[0] = 0xcc;
    cr_assert_eq(rw_encode_request(b, 0, 1), RAILWIRE_E_NOSPACE);
    cr_assert_eq(b[0], 0xcc);
}

Test(client_msg, ids_layout_and_round_trip)
{
    struct rw_qp_id ids[3], got[3];
    uint8_t b[1 + 3 * 24];
    drv_sample_ids(ids, 3, 11);
    cr_assert_eq(rw_encode_client_ids(b, sizeof(b), ids, 3), (ssize_t)sizeof(b));
    cr_assert_eq(b[0], 3);
    for (int i = 0; i < 3; i++) {
        uint32_t v;
        rw_get_le32(&v, b + 1 + 24 * i);
        cr_assert_eq(v, ids[i].qpn);
        rw_get_le32(&v, b + 5 + 24 * i);
        cr_assert_eq(v, ids[i].psn);
        cr_assert_arr_eq(b + 9 + 24 * i, ids[i].gid, 16);
    }
    cr_assert_eq(rw_decode_client_ids(b, sizeof(b), 3, got), (ssize_t)sizeof(b));
    cr_assert_arr_eq(got, ids, sizeof(ids));
}

Test(client_msg, ids_encode_refusals)
{
    struct rw_qp_id ids[2];
    uint8_t b[49];
    drv_sample_ids(ids, 2, 1);
    for (size_t cap = 0; cap < sizeof(b); cap++) {
        memset(b, 0xcc, sizeof(b));
        cr_assert_eq(rw_encode_client_ids(b, cap, ids, 2), RAILWIRE_E_NOSPACE);
        for (size_t i = 0; i < sizeof(b); i++)
            cr_assert_eq(b[i], 0xcc);
    }
    cr_assert_eq(rw_encode_client_ids(b, sizeof(b), NULL, 2), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_encode_client_ids(b, sizeof(b), ids, 256), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_encode_client_ids(b, 1, NULL, 0), 1, "zero ids is a count byte");
    cr_assert_eq(b[0], 0);
}

Test(client_msg, ids_decode_checks_count_and_length)
{
    struct rw_qp_id ids[2], got[2];
    uint8_t b[49];
    drv_sample_ids(ids, 2, 1);
    rw_encode_client_ids(b, sizeof(b), ids, 2);
    cr_assert_eq(rw_decode_client_ids(b, sizeof(b), 1, got), RAILWIRE_E_RAIL_COUNT_MISMATCH);
    cr_assert_eq(rw_decode_client_ids(b, sizeof(b), 3, got), RAILWIRE_E_RAIL_COUNT_MISMATCH);
    for (size_t len = 0; len < sizeof(b); len++)
        cr_assert_eq(rw_decode_client_ids(b, len, 2, got), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(rw_decode_client_ids(b, sizeof(b), 2, NULL), RAILWIRE_E_INVALID);
}

Test(client_msg, stream_checks_request_byte_and_echo)
{
    struct rw_qp_id ids[2], got[2];
    uint8_t b[50];
    drv_sample_ids(ids, 2, 4);
    b[0] = 2;
    rw_encode_client_ids(b + 1, sizeof(b) - 1, ids, 2);
    cr_assert_eq(rw_decode_client_stream(b, sizeof(b), 2, got), 50);
    cr_assert_arr_eq(got, ids, sizeof(ids));
    cr_assert_eq(rw_decode_client_stream(b, sizeof(b), 3, got), RAILWIRE_E_RAIL_COUNT_MISMATCH);
    b[0] = 3;
    cr_assert_eq(rw_decode_client_stream(b, sizeof(b), 2, got), RAILWIRE_E_RAIL_COUNT_MISMATCH,
                 "request byte differs from want");
    cr_assert_eq(rw_decode_client_stream(b, 1, 2, got), RAILWIRE_E_RAIL_COUNT_MISMATCH,
                 "decided at the first byte");
    b[0] = 2;
    b[1] = 1;
    cr_assert_eq(rw_decode_client_stream(b, sizeof(b), 2, got), RAILWIRE_E_RAIL_COUNT_MISMATCH,
                 "echoed count differs");
    cr_assert_eq(rw_decode_client_stream(b, 0, 2, got), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(rw_decode_client_stream((const uint8_t[]){0, 0}, 2, 0, NULL), 2,
                 "zero rails, nothing to store");
}

Test(client_msg, stream_of_255_rails)
{
    static struct rw_qp_id ids[255], got[255];
    static uint8_t b[2 + 255 * 24];
    drv_sample_ids(ids, 255, 9);
    b[0] = 255;
    cr_assert_eq(rw_encode_client_ids(b + 1, sizeof(b) - 1, ids, 255), (ssize_t)sizeof(b) - 1);
    cr_assert_eq(rw_decode_client_stream(b, sizeof(b), 255, got), (ssize_t)sizeof(b));
    cr_assert_arr_eq(got, ids, sizeof(ids));
}
