/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the ack decoder.  Input: the ack bytes. */
#include "fuzz_common.h"

FUZZ_QUIET_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t status = 0xaa, out[1];
    ssize_t n = rw_decode_ack(data, size, &status);

    if (size == 0) {
        FUZZ_CHECK(n == RAILWIRE_E_NEED_MORE && status == 0xaa);
        FUZZ_CHECK(rw_eof_error(0, 0) == RAILWIRE_E_TRUNCATED);
        return 0;
    }
    FUZZ_CHECK(status == data[0]);
    FUZZ_CHECK(data[0] == RW_STATUS_OK ? n == 1 : n == RAILWIRE_E_REFUSED);
    FUZZ_CHECK(rw_encode_ack(out, sizeof(out), status) == 1 && out[0] == data[0]);
    return 0;
}
