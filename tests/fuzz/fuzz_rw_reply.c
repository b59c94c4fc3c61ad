/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the RW server reply decoder. */
#include "fuzz_reply.h"

FUZZ_QUIET_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reply(data, size, rw_decode_rw_reply, 0);
    return 0;
}
