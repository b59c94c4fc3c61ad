/* SPDX-License-Identifier: MIT */
/* Unit tests: little-endian helpers, the QP identity record, reply
 * ownership and the end-of-stream mapping (src/wire/codec_records.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "wire/wire.h"

Test(le, put_le32_writes_little_endian_and_advances)
{
    uint8_t b[6] = {0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa};
    cr_assert_eq(rw_put_le32(b + 1, 0x11223344u), b + 5);
    cr_assert_arr_eq(b, ((uint8_t[]){0xaa, 0x44, 0x33, 0x22, 0x11, 0xaa}), 6);
}

Test(le, put_le64_writes_little_endian_and_advances)
{
    uint8_t b[9] = {0};
    cr_assert_eq(rw_put_le64(b, 0x0102030405060708ull), b + 8);
    cr_assert_arr_eq(b, ((uint8_t[]){8, 7, 6, 5, 4, 3, 2, 1, 0}), 9);
}

Test(le, get_reads_little_endian_and_advances)
{
    static const uint8_t b[] = {0xef, 0xbe, 0xad, 0xde, 0xff, 0xff, 0xff, 0xff, 0x80};
    uint32_t v32;
    uint64_t v64;
    cr_assert_eq(rw_get_le32(&v32, b), b + 4);
    cr_assert_eq(v32, 0xdeadbeefu);
    cr_assert_eq(rw_get_le64(&v64, b + 1), b + 9);
    cr_assert_eq(v64, 0x80ffffffffdeadbeull);
}

Test(le, round_trips_extremes)
{
    static const uint64_t vals[] = {0, 1, 0xff, 0x100, UINT32_MAX, (uint64_t)UINT32_MAX + 1, UINT64_MAX};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        uint8_t b[8];
        uint64_t v;
        uint32_t w;
        rw_put_le64(b, vals[i]);
        rw_get_le64(&v, b);
        cr_assert_eq(v, vals[i]);
        rw_put_le32(b, (uint32_t)vals[i]);
        rw_get_le32(&w, b);
        cr_assert_eq(w, (uint32_t)vals[i]);
    }
}

static const struct rw_qp_id id = {0x04030201u, 0xfffffffeu,
                                   {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}};
static const uint8_t id_bytes[24] = {1, 2, 3, 4, 0xfe, 0xff, 0xff, 0xff,
                                     0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

Test(qp_id, encodes_24_bytes_in_order)
{
    uint8_t b[30];
    memset(b, 0xcc, sizeof(b));
    cr_assert_eq(rw_encode_qp_id(b, sizeof(b), &id), 24);
    cr_assert_arr_eq(b, id_bytes, 24);
    cr_assert_eq(b[24], 0xcc, "nothing written past the record");
}

Test(qp_id, encode_nospace_writes_nothing)
{
    uint8_t b[23];
    memset(b, 0xcc, sizeof(b));
    cr_assert_eq(rw_encode_qp_id(b, sizeof(b), &id), RAILWIRE_E_NOSPACE);
    for (size_t i = 0; i < sizeof(b); i++)
        cr_assert_eq(b[i], 0xcc);
    cr_assert_eq(rw_encode_qp_id(NULL, 0, &id), RAILWIRE_E_NOSPACE);
}

Test(qp_id, encode_invalid_arguments)
{
    uint8_t b[24];
    cr_assert_eq(rw_encode_qp_id(b, sizeof(b), NULL), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_encode_qp_id(NULL, 24, &id), RAILWIRE_E_INVALID);
}

Test(qp_id, decodes_and_needs_24_bytes)
{
    struct rw_qp_id got;
    for (size_t len = 0; len < 24; len++)
        cr_assert_eq(rw_decode_qp_id(id_bytes, len, &got), RAILWIRE_E_NEED_MORE, "len %zu", len);
    cr_assert_eq(rw_decode_qp_id(id_bytes, 24, &got), 24);
    cr_assert_eq(got.qpn, id.qpn);
    cr_assert_eq(got.psn, id.psn);
    cr_assert_arr_eq(got.gid, id.gid, 16);
    cr_assert_eq(rw_decode_qp_id(NULL, 24, &got), RAILWIRE_E_INVALID);
    cr_assert_eq(rw_decode_qp_id(id_bytes, 24, NULL), RAILWIRE_E_INVALID);
}

Test(qp_id, psn_above_2_pow_24_is_accepted_as_sent)
{
    static const uint8_t b[24] = {0, 0, 0, 0, 0x00, 0x00, 0x00, 0x01}; /* psn 2^24 */
    struct rw_qp_id got;
    cr_assert_eq(rw_decode_qp_id(b, 24, &got), 24);
    cr_assert_eq(got.psn, 1u << 24);
}

Test(reply, free_is_safe_on_zeroed_and_null)
{
    struct rw_server_reply r = {0};
    rw_server_reply_free(&r);
    rw_server_reply_free(NULL);
    cr_assert_eq(r.n_rails, 0);
    cr_assert_null(r.ro);
}

Test(eof, zero_bytes_of_a_server_reply_is_peer_rejected)
{
    cr_assert_eq(rw_eof_error(1, 0), RAILWIRE_E_PEER_REJECTED);
    cr_assert_eq(rw_eof_error(1, 1), RAILWIRE_E_TRUNCATED);
    cr_assert_eq(rw_eof_error(1, 393440), RAILWIRE_E_TRUNCATED);
    cr_assert_eq(rw_eof_error(0, 0), RAILWIRE_E_TRUNCATED, "an empty ack is truncated");
    cr_assert_eq(rw_eof_error(0, 5), RAILWIRE_E_TRUNCATED);
}

Test(eof, classes_have_their_wire_names)
{
    cr_assert_str_eq(railwire_error_class(RAILWIRE_E_PEER_REJECTED), "peer-rejected");
    cr_assert_str_eq(railwire_error_class(RAILWIRE_E_TRUNCATED), "truncated");
    cr_assert_str_eq(railwire_error_class(RAILWIRE_E_BAD_RAIL_COUNT), "bad-rail-count");
    cr_assert_str_eq(railwire_error_class(RAILWIRE_E_RAIL_COUNT_MISMATCH), "rail-count-mismatch");
    cr_assert_str_eq(railwire_error_class(RAILWIRE_E_BAD_LAYER_COUNT), "bad-layer-count");
    cr_assert_str_eq(railwire_error_class(RAILWIRE_E_REFUSED), "refused");
}
