# SPDX-License-Identifier: MIT
"""Registered buffers stay alive while registered, whatever Python drops,
and are released by MemoryRegion.close() or the railset's close."""
import gc
import mmap
import sys
import weakref

import numpy as np
import pytest

import railwire


class Buf(bytearray):
    """A bytearray that can be weakly referenced (to see when it is freed)."""


def test_buffer_alive_after_last_python_reference_is_dropped(rw, arena):
    b = Buf(b"\x5a" * 65536)
    alive = weakref.ref(b)
    mr = rw.register(b)
    del b
    gc.collect()
    assert alive() is not None, "the region must keep its buffer alive"
    # and the memory is still the registered one: a READ lands in it
    rw.read(mr, 0, 65536, 1000)
    assert bytes(alive()) == arena[1000:1000 + 65536].tobytes()
    mr.close()
    gc.collect()
    assert alive() is None, "close() must release the buffer"


def test_region_alive_after_its_python_reference_is_dropped(rw, arena):
    """Dropping the MemoryRegion object does not deregister: the railset
    holds it until its close, so in-flight transfers stay safe."""
    a = np.zeros(1 << 20, dtype=np.uint8)
    alive = weakref.ref(a)
    mr = rw.register(a)
    h = rw.submit_read(mr, 0, 1 << 20, 0)
    del a, mr
    gc.collect()
    assert alive() is not None
    (c,) = rw.wait(timeout=10)
    assert c.handle == h and c.status == 0
    assert np.array_equal(alive(), arena[:1 << 20])
    rw.close()
    gc.collect()
    assert alive() is None, "the railset's close must release every region's buffer"


def test_unreachable_railset_is_collected_and_releases_buffers(rw_server):
    a = np.zeros(4096, dtype=np.uint8)
    alive = weakref.ref(a)
    rs = railwire.connect(*rw_server.address, dialect="rw", transport="tcp")
    mr = rs.register(a)
    del a, mr, rs
    gc.collect()
    assert alive() is None, "a dropped railset (a cycle with its regions) must be collected"


def test_bytearray_cannot_be_resized_and_mmap_not_closed_while_registered(rw):
    b = bytearray(4096)
    mr = rw.register(b)
    with pytest.raises(BufferError):
        b.extend(b"x")
    m = mmap.mmap(-1, 4096)
    mr2 = rw.register(m)
    with pytest.raises(BufferError):
        m.close()
    mr.close()
    mr2.close()
    b.extend(b"x")
    m.close()


def test_region_refcounts_do_not_leak(rw):
    b = bytearray(4096)
    before = sys.getrefcount(b)
    for _ in range(100):
        with rw.register(b) as mr:
            rw.read(mr, 0, 4096, 0)
    assert sys.getrefcount(b) == before
    assert mr.closed and mr.nbytes == 0 and mr.obj is None


def test_server_keeps_its_memory_until_close():
    a = np.zeros(8192, dtype=np.uint8)
    alive = weakref.ref(a)
    srv = railwire.Server("rw", arena=a, transport="tcp")
    del a
    gc.collect()
    assert alive() is not None
    srv.close()
    srv.close()
    gc.collect()
    assert alive() is None
