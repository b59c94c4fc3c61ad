# SPDX-License-Identifier: MIT
"""Byte-for-byte round trips through every kind of Python buffer: WRITE from
it into a server's arena (checked in the server's own memory), READ back
into a fresh buffer of the same kind, compare."""
import mmap
import os

import numpy as np
import pytest

import railwire

N = 256 * 1024 + 123  # not a multiple of the slice or of 8


def payload(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def make_bytearray(data):
    return bytearray(data), lambda b: bytes(b)


def make_memoryview(data):
    return memoryview(bytearray(data)), lambda b: b.tobytes()


def make_memoryview_slice(data):
    backing = bytearray(b"\xee" * 1000 + data + b"\xee" * 1000)
    return memoryview(backing)[1000:1000 + len(data)], lambda b: b.tobytes()


def make_mmap_anon(data):
    m = mmap.mmap(-1, len(data))
    m[:] = data
    return m, lambda b: b[:]


def make_mmap_file(data):
    path = os.path.join(make_mmap_file.tmp, "buf.bin")
    with open(path, "wb") as f:
        f.write(data)
    fd = os.open(path, os.O_RDWR)
    try:
        m = mmap.mmap(fd, len(data))
    finally:
        os.close(fd)
    return m, lambda b: b[:]


def make_numpy_u8(data):
    return np.frombuffer(data, dtype=np.uint8).copy(), lambda b: b.tobytes()


def make_numpy_2d(data):
    # float32 rows: the registration is in bytes, whatever the dtype
    n = len(data) // 4 * 4
    a = np.frombuffer(data[:n], dtype=np.float32).copy().reshape(-1, 1)
    return a, lambda b: b.tobytes()


KINDS = {
    "bytearray": make_bytearray,
    "memoryview": make_memoryview,
    "memoryview-slice": make_memoryview_slice,
    "mmap-anonymous": make_mmap_anon,
    "mmap-file": make_mmap_file,
    "numpy-uint8": make_numpy_u8,
    "numpy-float32-2d": make_numpy_2d,
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_write_then_read_round_trip(kind, rw, arena, tmp_path):
    make_mmap_file.tmp = str(tmp_path)
    data = payload(N, 7)
    src, as_bytes = KINDS[kind](data)
    data = as_bytes(src)  # numpy-2d trims to whole floats
    remote = 123457
    mr = rw.register(src)
    assert mr.nbytes == len(data)
    rw.write(mr, 0, len(data), remote)
    assert arena[remote:remote + len(data)].tobytes() == data, "the server's memory differs"

    dst, as_bytes2 = KINDS[kind](b"\0" * len(data))
    mr2 = rw.register(dst)
    rw.read(mr2, 0, len(data), remote)
    assert as_bytes2(dst) == data
    # and a part of it, at an odd local offset
    rw.read(mr2, 3, 1000, remote + 50000)
    assert as_bytes2(dst)[3:1003] == data[50000:51000]
    mr.close()
    mr2.close()


def test_bytes_is_a_write_source_but_not_a_read_target(rw, arena):
    data = payload(10000, 3)
    mr = rw.register(data)
    assert mr.readonly
    rw.write(mr, 0, len(data), 0)
    assert arena[:len(data)].tobytes() == data
    with pytest.raises(railwire.InvalidArgument, match="read-only"):
        rw.read(mr, 0, 10, 0)
    with pytest.raises(railwire.InvalidArgument, match="read-only"):
        rw.submit_batch(railwire.READ, mr, [0], [0], 10)


def test_array_interface_object(rw, arena):
    class Wrapped:
        """Exposes memory through __array_interface__ only."""

        def __init__(self, a):
            self.a = a
            self.__array_interface__ = a.__array_interface__

    a = np.frombuffer(payload(5000, 9), dtype=np.uint8).copy()
    w = Wrapped(a)
    mr = rw.register(w)
    assert mr.nbytes == 5000 and mr.address == a.ctypes.data
    rw.write(mr, 0, 5000, 777)
    assert arena[777:5777].tobytes() == a.tobytes()
    w.a[:] = 0
    rw.read(mr, 0, 5000, 777)
    assert a.tobytes() == arena[777:5777].tobytes()


def test_non_contiguous_buffers_are_refused(rw):
    a = np.zeros((100, 100), dtype=np.uint8)
    with pytest.raises((BufferError, ValueError)):
        rw.register(a[:, ::2])
    with pytest.raises(railwire.InvalidArgument):
        rw.register(bytearray())
    with pytest.raises(TypeError):
        rw.register(12345)


def test_torch_cpu_tensor(rw, arena):
    torch = pytest.importorskip("torch")
    data = payload(1 << 16, 11)
    t = torch.frombuffer(bytearray(data), dtype=torch.uint8).clone()
    mr = rw.register(t)
    assert mr.nbytes == t.numel() and mr.address == t.data_ptr()
    rw.write(mr, 0, len(data), 1 << 20)
    assert arena[1 << 20:(1 << 20) + len(data)].tobytes() == data
    f = torch.zeros(len(data) // 4, dtype=torch.float32)
    mrf = rw.register(f)
    rw.read(mrf, 0, len(data), 1 << 20)
    assert f.numpy().tobytes() == data
    with pytest.raises(railwire.InvalidArgument, match="contiguous"):
        rw.register(torch.zeros(64, 64)[:, ::2])


def test_ro_layers_of_every_kind(tmp_path):
    """A Server publishes layers from numpy, bytearray, bytes and an mmap of
    a file; a client reads each one whole and compares."""
    file_data = payload(70000, 21)
    path = tmp_path / "layer.bin"
    path.write_bytes(file_data)
    with open(path, "rb") as f:
        fmap = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    layers = [np.frombuffer(payload(100000, 22), dtype=np.uint8).copy(),
              bytearray(payload(65536, 23)), payload(4097, 24), fmap]
    expect = [bytes(layers[0]), bytes(layers[1]), layers[2], file_data]
    with railwire.Server("ro", layers=layers, transport="tcp") as srv, \
            railwire.connect(*srv.address, rails=3, dialect="ro", transport="tcp") as rs:
        assert rs.layers == 4
        assert rs.rails == 3
        assert rs.transport == "tcp"
        for i, want in enumerate(expect):
            dst = bytearray(len(want))
            mr = rs.register(dst)
            rs.read(mr, 0, len(want), 0, layer=i)
            assert bytes(dst) == want, "layer %d differs" % i
            mr.close()
    fmap.close()  # the server released its export at close


@pytest.mark.parametrize("busy_poll_us", [0, None, 20000])
def test_busy_poll_setting_round_trips(busy_poll_us, arena):
    """busy_poll_us=0 (sleep at once), the default and a long window all
    move the same bytes, on the client and on the server."""
    with railwire.Server("rw", arena=arena, transport="tcp", busy_poll_us=busy_poll_us) as srv:
        with railwire.connect(*srv.address, dialect="rw", transport="tcp",
                              busy_poll_us=busy_poll_us) as rs:
            data = payload(64 * 1024, 11)
            src = rs.register(bytearray(data))
            dst = rs.register(bytearray(len(data)))
            rs.write(src, 0, len(data), 4096)
            rs.read(dst, 0, len(data), 4096)
            assert bytes(dst.obj) == data
            assert bytes(arena[4096:4096 + len(data)]) == data
