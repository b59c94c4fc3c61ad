/* SPDX-License-Identifier: MIT */
/* Unit tests: the ack (src/wire/codec_ack.c). */
#include <criterion/criterion.h>

#include "railwire/log.h"
#include "wire/wire.h"

static void quiet(void)
{
    railwire_log_set_level(RAILWIRE_LOG_ERROR);
}

TestSuite(ack, .init = quiet);

Test(ack, zero_is_ok_anything_else_refused)
{
    for (unsigned v = 0; v < 256; v++) {
        uint8_t b = (uint8_t)v, status = 0xaa;
        ssize_t rc = rw_decode_ack(&b, 1, &status);
        cr_assert_eq(status, v);
        cr_assert_eq(rc, v == 0 ? 1 : RAILWIRE_E_REFUSED, "ack %u", v);
    }
}

Test(ack, empty_needs_more_and_is_truncated_at_eof)
{
    uint8_t status = 0xaa;
    cr_assert_eq(rw_decode_ack(NULL, 0, &status), RAILWIRE_E_NEED_MORE);
    cr_assert_eq(status, 0xaa);
    cr_assert_eq(rw_eof_error(0, 0), RAILWIRE_E_TRUNCATED);
}

Test(ack, decode_reads_one_byte_only)
{
    static const uint8_t b[] = {0, 1, 2};
    uint8_t status;
    cr_assert_eq(rw_decode_ack(b, sizeof(b), &status), 1);
    cr_assert_eq(rw_decode_ack(b, 1, NULL), RAILWIRE_E_INVALID);
}

Test(ack, encode)
{
    uint8_t b[2] = {0xcc, 0xcc};
    cr_assert_eq(rw_encode_ack(b, 2, RW_STATUS_OK), 1);
    cr_assert_eq(b[0], 0);
    cr_assert_eq(b[1], 0xcc);
    cr_assert_eq(rw_encode_ack(b, 1, RW_STATUS_ERR), 1);
    cr_assert_eq(b[0], 1);
    b[0] = 0xcc;
    cr_assert_eq(rw_encode_ack(b, 0, RW_STATUS_OK), RAILWIRE_E_NOSPACE);
    cr_assert_eq(b[0], 0xcc);
    cr_assert_eq(rw_encode_ack(NULL, 1, RW_STATUS_OK), RAILWIRE_E_INVALID);
}
