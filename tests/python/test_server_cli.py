# SPDX-License-Identifier: MIT
"""A railwire.Server serving numpy memory to the C client: `railwire bench
--verify` checks every byte it reads against the bench pattern, which
railwire.pattern writes into the numpy layers (seed 0, layer l, as
`railwire bench --loopback` and `railwire serve --fill` do).  And the
other way round: the Python client checks a `railwire serve --fill` arena
with railwire.pattern, so both sides agree on the pattern."""
import json
import subprocess

import numpy as np
import pytest

import railwire
from railwire import pattern

LAYER = 1 << 20


def bench(cli, addr, *args):
    cmd = [cli, "bench", "--connect", "%s:%d" % addr, "--transport", "tcp", "--json", "--quiet"]
    cmd += [str(a) for a in args]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert p.returncode == 0, "%s failed (%d): %s" % (" ".join(cmd), p.returncode,
                                                      p.stderr.decode(errors="replace")[-2000:])
    out = json.loads(p.stdout)
    assert out["failed"] == 0
    return out


def test_pattern_matches_the_c_pattern_of_known_words():
    # splitmix64 of (0 + (0 << 40) + (0 << 56)) and of index 1 of layer 3, seed 0
    a = pattern.expected(16, seed=0, layer=0)
    assert a[:8].view("<u8")[0] == 0xE220A8397B1DCDAF
    b = pattern.expected(13, seed=0, layer=3, offset=5)
    c = pattern.expected(18, seed=0, layer=3)
    assert np.array_equal(b, c[5:18])


def test_c_client_verifies_numpy_ro_layers(cli):
    layers = [np.empty(LAYER, dtype=np.uint8) for _ in range(3)]
    for i, a in enumerate(layers):
        pattern.fill(a, seed=0, layer=i)
    with railwire.Server("ro", layers=layers, transport="tcp") as srv:
        out = bench(cli, srv.address, "--dialect", "ro", "--rails", 2, "--read", "-s", "64K",
                    "-q", 8, "-n", 300, "--span", "1M", "--verify")
        assert out["verify"] == "ok"
        assert out["results"][0]["transfers"] == 300
        assert out["rails"] == 2
        # a corrupted byte is caught, so the check above is real
        layers[0][12345] ^= 0xFF   # slot 0 of a depth-1 run reads layer 0
        cmd = [cli, "bench", "--connect", "%s:%d" % srv.address, "--transport", "tcp", "--dialect",
               "ro", "--read", "-s", "1M", "-q", 1, "-n", 3, "--span", "1M", "--verify",
               "--quiet"]
        p = subprocess.run([str(a) for a in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        assert p.returncode == 1 and b"mismatch" in p.stderr


def test_c_client_reads_and_writes_a_numpy_rw_arena(cli):
    arena = np.empty(4 * LAYER, dtype=np.uint8)
    pattern.fill(arena)                     # what `railwire serve --fill` holds
    with railwire.Server("rw", arena=arena, transport="tcp") as srv:
        out = bench(cli, srv.address, "--dialect", "rw", "--rails", 2, "--read", "-s", "256K",
                    "-q", 4, "-n", 100, "--span", "4M", "--verify")
        assert out["verify"] == "ok"
        before = arena.copy()
        out = bench(cli, srv.address, "--dialect", "rw", "--rails", 2, "--write", "-s", "64K",
                    "-q", 4, "-n", 100, "--span", "4M", "--verify")
        assert out["verify"] == "ok"
        assert not np.array_equal(arena, before), "the writes must land in the numpy arena"


def test_python_client_verifies_a_c_server(serve_rw):
    proc, addr = serve_rw(arena="8M")
    with railwire.connect(*addr, rails=2, dialect="rw", transport="tcp") as rs:
        buf = np.zeros(8 << 20, dtype=np.uint8)
        mr = rs.register(buf)
        hs = rs.submit_batch(railwire.READ, mr, np.arange(128) * 65536, np.arange(128) * 65536,
                             65536)
        n = 0
        while n < len(hs):
            got = rs.wait(timeout=20, max=128)
            assert got and all(c.status == 0 for c in got)
            n += len(got)
        assert pattern.check(buf) is None
        buf[77] ^= 1
        assert pattern.check(buf) == 77
