/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the RO server reply decoder. */
#include "fuzz_reply.h"

FUZZ_QUIET_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reply(data, size, rw_decode_ro_reply, 1);
    return 0;
}
