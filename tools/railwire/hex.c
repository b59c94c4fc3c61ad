/* SPDX-License-Identifier: MIT */
#include "hex.h"

#include <stdlib.h>

static int digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

enum tool_hex_status tool_hex_parse(const char *text, size_t len, uint8_t **out, size_t *outlen,
                                    size_t *where)
{
    size_t digits = 0, n = 0, last = 0;
    uint8_t *buf;
    int hi = -1;

    *out = NULL;
    *outlen = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (space(c))
            continue;
        if (digit(c) < 0) {
            *where = i;
            return TOOL_HEX_BAD_CHAR;
        }
        digits++;
        last = i;
    }
    if (digits % 2) {
        *where = last;
        return TOOL_HEX_ODD;
    }
    if (digits == 0)
        return TOOL_HEX_OK;
    buf = malloc(digits / 2);
    if (!buf)
        return TOOL_HEX_NOMEM;
    for (size_t i = 0; i < len; i++) {
        int d = digit((unsigned char)text[i]);
        if (d < 0)
            continue;
        if (hi < 0) {
            hi = d;
        } else {
            buf[n++] = (uint8_t)(hi << 4 | d);
            hi = -1;
        }
    }
    *out = buf;
    *outlen = n;
    return TOOL_HEX_OK;
}
