/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the client stream and client ids decoders.
 * Input: want | the client's bytes (request byte, then u8 n | n x QP id). */
#include "fuzz_common.h"

FUZZ_QUIET_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct rw_qp_id ids[RW_MAX_RW_RAILS], ids2[RW_MAX_RW_RAILS];
    uint8_t out[2 + RW_MAX_RW_RAILS * RW_QP_ID_SIZE];
    unsigned want;
    ssize_t n, m;

    if (size < 1)
        return 0;
    want = data[0];
    data++;
    size--;
    n = rw_decode_client_stream(data, size, want, ids);
    /* The stream is the request byte followed by exactly the ids message. */
    m = size ? rw_decode_client_ids(data + 1, size - 1, want, ids2) : RAILWIRE_E_NEED_MORE;
    if (size && data[0] != want) {
        FUZZ_CHECK(n == RAILWIRE_E_RAIL_COUNT_MISMATCH);
        return 0;
    }
    FUZZ_CHECK(n == m + 1 || (n < 0 && n == m));
    if (n < 0) {
        FUZZ_CHECK(n == RAILWIRE_E_NEED_MORE || n == RAILWIRE_E_RAIL_COUNT_MISMATCH);
        return 0;
    }
    FUZZ_CHECK((size_t)n == 2 + want * RW_QP_ID_SIZE && (size_t)n <= size);
    FUZZ_CHECK(memcmp(ids, ids2, want * sizeof(ids[0])) == 0);
    FUZZ_CHECK(rw_encode_request(out, sizeof(out), want) == 1);
    m = rw_encode_client_ids(out + 1, sizeof(out) - 1, ids, want);
    FUZZ_CHECK(m + 1 == n);
    FUZZ_CHECK(memcmp(out, data, (size_t)n) == 0);
    FUZZ_CHECK(rw_decode_client_stream(data, (size_t)n - 1, want, ids2) == RAILWIRE_E_NEED_MORE);
    return 0;
}
