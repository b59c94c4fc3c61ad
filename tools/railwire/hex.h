/* SPDX-License-Identifier: MIT */
/* Hex text to bytes for `railwire decode --hex`. */
#ifndef RAILWIRE_TOOL_HEX_H
#define RAILWIRE_TOOL_HEX_H

#include <stddef.h>
#include <stdint.h>

enum tool_hex_status {
    TOOL_HEX_OK = 0,
    TOOL_HEX_BAD_CHAR = 1, /* a character that is neither a hex digit nor whitespace */
    TOOL_HEX_ODD = 2,      /* an odd number of hex digits */
    TOOL_HEX_NOMEM = 3,
};

/* Converts `len` bytes of hex text (either case; ASCII whitespace anywhere is
 * ignored) into bytes.  On TOOL_HEX_OK *out is a malloc'd buffer the caller
 * frees (NULL when there are no digits) and *outlen its length.  On
 * TOOL_HEX_BAD_CHAR *where is the offending character's offset in `text`; on
 * TOOL_HEX_ODD it is the offset of the last digit, the one without a pair. */
enum tool_hex_status tool_hex_parse(const char *text, size_t len, uint8_t **out, size_t *outlen,
                                    size_t *where);

#endif
