/* SPDX-License-Identifier: MIT */
#include "verbs/params.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <railwire/error.h>

#include "common/log.h"

int rw_devspec_parse(const char *s, struct rw_devspec *out, size_t max)
{
    size_t n = 0;

    if (!s)
        return RAILWIRE_E_INVALID;
    for (;;) {
        while (*s == ' ' || *s == '\t')
            s++;
        const char *end = s + strcspn(s, ",");
        const char *colon = memchr(s, ':', (size_t)(end - s));
        const char *name_end = colon ? colon : end;
        while (name_end > s && (name_end[-1] == ' ' || name_end[-1] == '\t'))
            name_end--;
        size_t len = (size_t)(name_end - s);
        if (len == 0 || len >= RW_VERBS_DEV_NAME_MAX || n >= max)
            return RAILWIRE_E_INVALID;
        memcpy(out[n].dev, s, len);
        out[n].dev[len] = '\0';
        out[n].port = 0;
        if (colon) {
            unsigned long p = 0;
            const char *q = colon + 1;
            while (*q == ' ')
                q++;
            if (q == end || *q < '0' || *q > '9')
                return RAILWIRE_E_INVALID;
            while (q < end && *q >= '0' && *q <= '9') {
                p = p * 10 + (unsigned long)(*q - '0');
                if (p > 255)
                    return RAILWIRE_E_INVALID;
                q++;
            }
            while (q < end && (*q == ' ' || *q == '\t'))
                q++;
            if (q != end || p == 0)
                return RAILWIRE_E_INVALID;
            out[n].port = (unsigned)p;
        }
        n++;
        if (*end == '\0')
            break;
        s = end + 1;
    }
    return (int)n;
}

unsigned rw_mtu_bytes(int code)
{
    if (code < 1 || code > 5)
        return 0;
    return 128u << code;
}

int rw_mtu_code_floor(unsigned bytes)
{
    int code = 0;
    for (int c = 1; c <= 5; c++)
        if (rw_mtu_bytes(c) <= bytes)
            code = c;
    return code;
}

int rw_path_mtu(int active_code, unsigned cap_bytes, unsigned env_bytes)
{
    int code = active_code;
    int cap = rw_mtu_code_floor(cap_bytes ? cap_bytes : 4096);
    if (cap == 0)
        return 0;
    if (cap < code)
        code = cap;
    if (env_bytes) {
        int env = rw_mtu_code_floor(env_bytes);
        if (env == 0)
            return 0;
        if (env < code)
            code = env;
    }
    return code;
}

double rw_link_gbps(uint8_t active_speed, uint8_t active_width)
{
    double lane;
    int lanes;

    switch (active_speed) {
    case 1: lane = 2.5; break;
    case 2: lane = 5.0; break;
    case 4: lane = 10.0; break;
    case 8: lane = 10.3125; break;
    case 16: lane = 14.0625; break;
    case 32: lane = 25.78125; break;
    case 64: lane = 50.0; break;
    case 128: lane = 100.0; break;
    default: lane = 10.0; break;
    }
    switch (active_width) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: lanes = 1; break;
    }
    return lane * lanes;
}

int rw_env_uint(const char *name, unsigned long max, unsigned long *v)
{
    const char *s = getenv(name);
    char *end;

    if (!s || !*s)
        return 0;
    errno = 0;
    unsigned long x = strtoul(s, &end, 10);
    if (errno || *end || end == s || s[0] == '-' || x > max) {
        rw_err("verbs: %s='%s' is not a number in 0..%lu; fix or unset it", name, s, max);
        return RAILWIRE_E_INVALID;
    }
    *v = x;
    return 1;
}

int rw_verbs_gid_override(int cfg_index, const char **src)
{
    unsigned long v;
    int r;

    if (cfg_index >= 0) {
        *src = "the gid_index option";
        return cfg_index;
    }
    r = rw_env_uint("RAILWIRE_GID_INDEX", 0xffff, &v);
    if (r < 0)
        return r;
    if (r > 0) {
        *src = "RAILWIRE_GID_INDEX";
        return (int)v;
    }
    *src = NULL;
    return -1;
}
