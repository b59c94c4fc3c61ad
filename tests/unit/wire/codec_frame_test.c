/* SPDX-License-Identifier: MIT */
/* Unit tests: incremental framing (src/wire/codec_frame.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "railwire/log.h"
#include "wire/wire.h"

static void quiet(void)
{
    railwire_log_set_level(RAILWIRE_LOG_ERROR);
}

TestSuite(frame, .init = quiet);

Test(frame, max_sizes_are_the_largest_legal_messages)
{
    cr_assert_eq(rw_frame_max_size(RW_FRAME_RO_REPLY), 1 + 8 * (28 + 12 * 4096));
    cr_assert_eq(rw_frame_max_size(RW_FRAME_RO_REPLY), 393441);
    cr_assert_eq(rw_frame_max_size(RW_FRAME_RW_REPLY), 1 + 255 * 36);
    cr_assert_eq(rw_frame_max_size(RW_FRAME_CLIENT_IDS), 1 + 255 * 24);
    cr_assert_eq(rw_frame_max_size(RW_FRAME_CLIENT_STREAM), 2 + 255 * 24);
}

/* RO, 2 rails with 1 and 2 layers: need grows field by field. */
Test(frame, ro_need_follows_the_fields)
{
    uint8_t m[1 + 28 + 12 + 28 + 24] = {2};
    struct rw_frame f;

    rw_put_le32(m + 1 + 24, 1);
    rw_put_le32(m + 1 + 40 + 24, 2);
    rw_frame_init(&f, RW_FRAME_RO_REPLY, 2);
    cr_assert_eq(f.need, 1);
    cr_assert_eq(rw_frame_scan(&f, m, 0), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(rw_frame_scan(&f, m, 1), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(f.need, 29, "the first rail's fixed part");
    cr_assert_eq(f.rails, 2);
    cr_assert_eq(rw_frame_scan(&f, m, 28), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(rw_frame_scan(&f, m, 29), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(f.need, 41 + 28, "rail 0's layers, then rail 1's fixed part");
    cr_assert_eq(rw_frame_scan(&f, m, 69), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(f.need, sizeof(m));
    cr_assert_eq(rw_frame_scan(&f, m, sizeof(m) - 1), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(rw_frame_scan(&f, m, sizeof(m)), (ssize_t)sizeof(m));
    cr_assert_eq(rw_frame_scan(&f, m, sizeof(m) + 100), (ssize_t)sizeof(m), "stays complete");
}

Test(frame, fields_are_validated_as_soon_as_complete)
{
    uint8_t m[29] = {1};
    struct rw_frame f;

    rw_frame_init(&f, RW_FRAME_RO_REPLY, 9);
    cr_assert_eq(rw_frame_scan(&f, (const uint8_t[]){9}, 1), RAILWIRE_E_BAD_RAIL_COUNT);
    cr_assert_eq(f.error, RAILWIRE_E_BAD_RAIL_COUNT);
    cr_assert_eq(rw_frame_scan(&f, m, 29), RAILWIRE_E_BAD_RAIL_COUNT, "sticky");

    /* n_layers 0 is refused before any layer could arrive. */
    rw_frame_init(&f, RW_FRAME_RO_REPLY, 1);
    cr_assert_eq(rw_frame_scan(&f, m, 28), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(rw_frame_scan(&f, m, 29), RAILWIRE_E_BAD_LAYER_COUNT);
}

Test(frame, rw_and_client_counts_must_equal_want)
{
    struct rw_frame f;

    rw_frame_init(&f, RW_FRAME_RW_REPLY, 9);
    cr_assert_eq(rw_frame_scan(&f, (const uint8_t[]){9}, 1), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(f.need, 1 + 9 * 36, "RW is not bounded to 8");
    rw_frame_init(&f, RW_FRAME_RW_REPLY, 3);
    cr_assert_eq(rw_frame_scan(&f, (const uint8_t[]){2}, 1), RAILWIRE_E_RAIL_COUNT_MISMATCH);
    rw_frame_init(&f, RW_FRAME_RW_REPLY, 0);
    cr_assert_eq(rw_frame_scan(&f, (const uint8_t[]){0}, 1), 1, "zero rails asked, zero framed");

    rw_frame_init(&f, RW_FRAME_CLIENT_IDS, 2);
    cr_assert_eq(rw_frame_scan(&f, (const uint8_t[]){2}, 1), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(f.need, 49);
    rw_frame_init(&f, RW_FRAME_CLIENT_STREAM, 2);
    cr_assert_eq(rw_frame_scan(&f, (const uint8_t[]){2, 2}, 1), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(f.need, 2);
    cr_assert_eq(rw_frame_scan(&f, (const uint8_t[]){2, 2}, 2), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(f.need, 50);
    rw_frame_init(&f, RW_FRAME_CLIENT_STREAM, 2);
    cr_assert_eq(rw_frame_scan(&f, (const uint8_t[]){3, 2}, 1), RAILWIRE_E_RAIL_COUNT_MISMATCH,
                 "the request byte");
    rw_frame_init(&f, RW_FRAME_CLIENT_STREAM, 2);
    cr_assert_eq(rw_frame_scan(&f, (const uint8_t[]){2, 3}, 2), RAILWIRE_E_RAIL_COUNT_MISMATCH,
                 "the echoed count");
}

Test(frame, null_buffer_with_length_is_invalid)
{
    struct rw_frame f;
    rw_frame_init(&f, RW_FRAME_RW_REPLY, 1);
    cr_assert_eq(rw_frame_scan(&f, NULL, 0), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(rw_frame_scan(&f, NULL, 1), RAILWIRE_E_INVALID);
}
