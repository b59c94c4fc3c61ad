# SPDX-License-Identifier: MIT
"""The data pattern of `railwire bench --verify` (tools/railwire/bench_pattern.h),
for numpy buffers.

Byte o of layer l under seed s is byte (o mod 8), little-endian, of
splitmix64((o div 8) + (l << 40) + (s << 56)).  A Python server whose layers
hold fill(layer_buffer, layer=l) (seed 0) can be checked by the C client with
`railwire bench --connect ... --read --verify`, as an RW arena filled with
layer 0 can (what `railwire serve --fill` does).  Needs numpy.
"""
import numpy as np

_M64 = (1 << 64) - 1
_CHUNK_WORDS = 1 << 20  # 8 MiB of pattern per step bounds the temporaries


def _words(first, count, seed, layer):
    z = np.arange(first, first + count, dtype=np.uint64)
    z += np.uint64((layer << 40) + (seed << 56) & _M64)
    z += np.uint64(0x9E3779B97F4A7C15)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z.astype("<u8", copy=False).view(np.uint8)


def expected(length, seed=0, layer=0, offset=0):
    """Returns a new uint8 array: the `length` pattern bytes at `offset`."""
    out = np.empty(length, dtype=np.uint8)
    fill(out, seed, layer, offset)
    return out


def fill(buf, seed=0, layer=0, offset=0):
    """Writes the pattern of (seed, layer) from `offset` on into every byte
    of the writable buffer `buf` (bytearray, numpy array, mmap, ...)."""
    out = np.frombuffer(buf, dtype=np.uint8)
    if out.flags.writeable is False:
        raise ValueError("pattern.fill needs a writable buffer")
    pos = 0
    n = out.size
    with np.errstate(over="ignore"):
        while pos < n:
            start = offset + pos
            first = start // 8
            count = min(_CHUNK_WORDS, (offset + n + 7) // 8 - first)
            b = _words(first, count, seed, layer)
            skip = start - first * 8
            take = min(n - pos, b.size - skip)
            out[pos:pos + take] = b[skip:skip + take]
            pos += take


def check(buf, seed=0, layer=0, offset=0):
    """Returns None if `buf` holds the pattern at `offset`, else the index
    of the first byte that differs."""
    got = np.frombuffer(buf, dtype=np.uint8)
    want = expected(got.size, seed, layer, offset)
    bad = np.flatnonzero(got != want)
    return None if bad.size == 0 else int(bad[0])
