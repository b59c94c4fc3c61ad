/* SPDX-License-Identifier: MIT */
/* The ack: one status byte, STATUS_OK or a refusal. */
#include "wire/wire.h"

#include "common/log.h"

ssize_t rw_encode_ack(uint8_t *out, size_t cap, uint8_t status)
{
    if (cap < 1)
        return RAILWIRE_E_NOSPACE;
    if (!out)
        return RAILWIRE_E_INVALID;
    out[0] = status;
    return 1;
}

ssize_t rw_decode_ack(const uint8_t *buf, size_t len, uint8_t *status)
{
    if (!status || (!buf && len))
        return RAILWIRE_E_INVALID;
    if (len < 1)
        return RAILWIRE_E_NEED_MORE;
    *status = buf[0];
    if (buf[0] != RW_STATUS_OK) {
        rw_debug("ack: status %u is a refusal", buf[0]);
        return RAILWIRE_E_REFUSED;
    }
    return 1;
}
