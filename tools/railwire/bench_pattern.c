/* SPDX-License-Identifier: MIT */
#include "bench_pattern.h"


static uint64_t pattern_word(uint32_t seed, uint32_t layer, uint64_t word_index)
{
    uint64_t z = word_index + ((uint64_t)layer << 40) + ((uint64_t)seed << 56);

    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint8_t pattern_byte(uint32_t seed, uint32_t layer, uint64_t off)
{
    return (uint8_t)(pattern_word(seed, layer, off >> 3) >> (8 * (off & 7)));
}

static void store_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t load_le64(const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

void bench_pattern_fill(void *buf, size_t len, uint32_t seed, uint32_t layer, uint64_t offset)
{
    uint8_t *p = buf;
    size_t i = 0;

    while (i < len && ((offset + i) & 7))
        p[i] = pattern_byte(seed, layer, offset + i), i++;
    for (; i + 8 <= len; i += 8)
        store_le64(p + i, pattern_word(seed, layer, (offset + i) >> 3));
    for (; i < len; i++)
        p[i] = pattern_byte(seed, layer, offset + i);
}

int bench_pattern_check(const void *buf, size_t len, uint32_t seed, uint32_t layer,
                        uint64_t offset, size_t *bad_at, uint8_t *got, uint8_t *want)
{
    const uint8_t *p = buf;
    size_t i = 0;

    while (i < len && ((offset + i) & 7)) {
        if (p[i] != pattern_byte(seed, layer, offset + i))
            goto bad;
        i++;
    }
    for (; i + 8 <= len; i += 8) {
        if (load_le64(p + i) != pattern_word(seed, layer, (offset + i) >> 3)) {
            while (p[i] == pattern_byte(seed, layer, offset + i))
                i++;
            goto bad;
        }
    }
    for (; i < len; i++)
        if (p[i] != pattern_byte(seed, layer, offset + i))
            goto bad;
    return 0;
bad:
    *bad_at = i;
    *got = p[i];
    *want = pattern_byte(seed, layer, offset + i);
    return -1;
}
