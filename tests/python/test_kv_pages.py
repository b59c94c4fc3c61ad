# SPDX-License-Identifier: MIT
"""The KV-page pattern of an inference engine: 4096 pages of 16-64 KiB at
random offsets, written to a server's RW arena and read back in batches
(one submit_batch each), every byte checked."""
import numpy as np
import pytest

import railwire

PAGES = 4096
SLOT = 64 << 10           # each page lives in its own 64 KiB slot, at a random offset inside it
BATCH = 1024


def drain(rs, handles, timeout=60.0):
    """Waits for every handle; returns {handle: Completion}; fails on any error."""
    want = set(handles)
    got = {}
    while len(got) < len(want):
        done = rs.wait(timeout=timeout, max=4096)
        assert done, "no completion within %.0f s (%d of %d done)" % (timeout, len(got), len(want))
        for c in done:
            assert c.handle in want and c.handle not in got, "unexpected or repeated completion"
            assert c.status == 0 and c.error is None, c.error
            got[c.handle] = c
    return got


@pytest.fixture
def kv():
    rng = np.random.default_rng(4096)
    sizes = rng.integers(16 << 10, (64 << 10) + 1, PAGES)
    # remote: slot i of the arena holds a page at a random offset inside it
    remote_slot = rng.permutation(PAGES)
    remote = remote_slot * SLOT + rng.integers(0, SLOT - sizes + 1)
    # local: another permutation, another random placement
    local = rng.permutation(PAGES) * SLOT + rng.integers(0, SLOT - sizes + 1)
    arena = np.zeros(PAGES * SLOT, dtype=np.uint8)
    with railwire.Server("rw", arena=arena, transport="tcp") as srv, \
            railwire.connect(*srv.address, rails=2, dialect="rw", transport="tcp") as rs:
        yield rs, arena, sizes, local.astype(np.uint64), remote.astype(np.int64), rng


def test_kv_pages_write_then_read_in_batches(kv):
    rs, arena, sizes, local, remote, rng = kv
    src = rng.integers(0, 256, PAGES * SLOT, dtype=np.uint8)
    mr = rs.register(src)
    for b in range(0, PAGES, BATCH):
        sl = slice(b, b + BATCH)
        handles = rs.submit_batch(railwire.WRITE, mr, local[sl], remote[sl], sizes[sl],
                                  user_data=np.arange(b, b + BATCH))
        assert len(handles) == BATCH
        got = drain(rs, handles)
        # user_data came back with each page, and so did its length
        for h, i in zip(handles, range(b, b + BATCH)):
            assert got[h].user_data == i and got[h].length == sizes[i]
    for i in range(PAGES):
        r, l, n = int(remote[i]), int(local[i]), int(sizes[i])
        if not np.array_equal(arena[r:r + n], src[l:l + n]):
            pytest.fail("page %d: the server's arena differs from what was written" % i)

    dst = np.zeros_like(src)
    mr2 = rs.register(dst)
    # read back all 4096 in one batch, to other random local places
    dst_local = rng.permutation(PAGES) * SLOT + rng.integers(0, SLOT - sizes + 1)
    handles = rs.submit_batch(railwire.READ, mr2, dst_local, remote, sizes)
    got = drain(rs, handles)
    assert [got[h].user_data for h in handles] == list(range(PAGES))  # default: index in batch
    for i in range(PAGES):
        l, n = int(dst_local[i]), int(sizes[i])
        if not np.array_equal(dst[l:l + n], arena[int(remote[i]):int(remote[i]) + n]):
            pytest.fail("page %d read back differs" % i)
    st = rs.stats()
    assert sum(s["bytes_written"] for s in st) == int(sizes.sum())
    assert sum(s["bytes_read"] for s in st) == int(sizes.sum())
    assert all(s["bytes_read"] > 0 for s in st), "both rails should carry pages"


def test_batch_arguments_as_lists_and_scalars(kv):
    rs, arena, sizes, local, remote, rng = kv
    buf = bytearray(rng.integers(0, 256, 8 * 4096, dtype=np.uint8).tobytes())
    mr = rs.register(buf)
    handles = rs.submit_batch(railwire.WRITE, mr, [i * 4096 for i in range(8)],
                              range(0, 8 * 8192, 8192), 4096, user_data=7)
    got = drain(rs, handles)
    assert all(c.user_data == 7 for c in got.values())
    for i in range(8):
        assert arena[i * 8192:i * 8192 + 4096].tobytes() == bytes(buf[i * 4096:(i + 1) * 4096])
    assert rs.submit_batch(railwire.READ, mr, [], [], []) == []


def test_batch_is_refused_whole_when_one_op_is_bad(kv):
    rs, arena, sizes, local, remote, rng = kv
    buf = bytearray(4096 * 4)
    mr = rs.register(buf)
    with pytest.raises(railwire.InvalidArgument, match="op 2"):
        rs.submit_batch(railwire.READ, mr, [0, 4096, 16000, 0], [0, 1, 2, 3], 4096)
    with pytest.raises(railwire.InvalidArgument, match="negative"):
        rs.submit_batch(railwire.READ, mr, np.array([0, -1]), [0, 0], 10)
    with pytest.raises(railwire.InvalidArgument, match="entries"):
        rs.submit_batch(railwire.READ, mr, [0, 1], [0], 10)
    with pytest.raises(railwire.InvalidArgument, match="op 0"):
        rs.submit_batch(railwire.READ, mr, [0], [0], 0)
    with pytest.raises(TypeError):
        rs.submit_batch(railwire.READ, mr, np.zeros(2, dtype=np.float64), [0, 0], 10)
    with pytest.raises(railwire.InvalidArgument, match="opcode"):
        rs.submit_batch(7, mr, [0], [0], 10)
    assert rs.pending == 0, "nothing may have been submitted"
    assert rs.poll() == []
