/* SPDX-License-Identifier: MIT */
/* The deterministic data pattern `railwire bench --verify` checks against,
 * and `--loopback` servers (and `railwire serve --fill`) are filled with.
 *
 * Byte at offset o of layer l under seed s is byte (o mod 8) (little-endian)
 * of splitmix64((o div 8) + (l << 40) + (s << 56)) (all mod 2^64), so every
 * byte depends on its position: a slice that lands at the wrong offset or in
 * the wrong layer is caught.  tests/e2e/wire_peer.py `pattern` writes the
 * same bytes into files for RO layers. */
#ifndef RAILWIRE_TOOL_BENCH_PATTERN_H
#define RAILWIRE_TOOL_BENCH_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/* Fills buf[0..len) with the pattern of (seed, layer) starting at `offset`. */
void bench_pattern_fill(void *buf, size_t len, uint32_t seed, uint32_t layer, uint64_t offset);

/* Checks buf[0..len) against the pattern.  Returns 0 if every byte matches;
 * else -1 with *bad_at the index of the first differing byte in buf and
 * *got / *want its value and the expected one. */
int bench_pattern_check(const void *buf, size_t len, uint32_t seed, uint32_t layer,
                        uint64_t offset, size_t *bad_at, uint8_t *got, uint8_t *want);

#endif
