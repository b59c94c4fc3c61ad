# SPDX-License-Identifier: MIT
"""CUDA memory from Python, against the stand-in driver (its device memory
is PROT_NONE to the CPU, so any host access by railwire crashes the test):
an object exposing __cuda_array_interface__ over stand-in device memory
registers as CUDA memory and round-trips through a tcp railset (staged),
checked through the stand-in's own copies; a Server publishes CUDA layers
and a CUDA arena (staged on tcp), READ and WRITE with host and CUDA
clients."""
import ctypes
import os

import numpy as np
import pytest

import railwire

STANDIN = os.environ.get("RAILWIRE_TEST_CUDA_STANDIN", "")
pytestmark = pytest.mark.skipif(not STANDIN, reason="stand-in driver not built")
os.environ["RAILWIRE_CUDA_LIBRARY"] = STANDIN  # before anything loads the driver

N = 2 * 1024 * 1024 + 4099


class Standin:
    """The few driver calls a test needs, through ctypes (the same library
    railwire loads, so the same state)."""

    def __init__(self):
        self.cu = ctypes.CDLL(STANDIN)
        assert self.cu.cuInit(0) == 0
        dev = ctypes.c_int()
        assert self.cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
        ctx = ctypes.c_void_p()
        assert self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
        assert self.cu.cuCtxSetCurrent(ctx) == 0
        self.stream = ctypes.c_void_p()
        assert self.cu.cuStreamCreate(ctypes.byref(self.stream), 0) == 0

    def alloc(self, n):
        d = ctypes.c_uint64()
        assert self.cu.cuMemAlloc_v2(ctypes.byref(d), ctypes.c_size_t(n)) == 0
        return d.value

    def to_host(self, d, n):
        out = (ctypes.c_ubyte * n)()
        assert self.cu.cuMemcpyDtoHAsync_v2(out, ctypes.c_uint64(d), ctypes.c_size_t(n),
                                            self.stream) == 0
        assert self.cu.cuStreamSynchronize(self.stream) == 0
        return bytes(out)

    def to_dev(self, d, data):
        buf = (ctypes.c_ubyte * len(data)).from_buffer_copy(data)
        assert self.cu.cuMemcpyHtoDAsync_v2(ctypes.c_uint64(d), buf, ctypes.c_size_t(len(data)),
                                            self.stream) == 0
        assert self.cu.cuStreamSynchronize(self.stream) == 0


class DeviceArray:
    """What CuPy, Numba and torch expose for device memory."""

    def __init__(self, ptr, n):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (n,), "typestr": "|u1",
                                         "strides": None, "version": 3}


def test_cuda_array_interface_round_trip(rw, arena):
    sd = Standin()
    d = sd.alloc(N)
    mr = rw.register(DeviceArray(d, N))
    assert mr.nbytes == N
    rw.read(mr, 0, N, 1000)
    assert sd.to_host(d, N) == arena[1000:1000 + N].tobytes(), "READ into CUDA memory differs"
    data = np.random.default_rng(7).integers(0, 256, N, dtype=np.uint8).tobytes()
    sd.to_dev(d, data)
    rw.write(mr, 0, N, 5)
    assert arena[5:5 + N].tobytes() == data, "WRITE from CUDA memory differs"
    mr.close()


def test_rail_stats_count_the_staged_registration(rw):
    sd = Standin()
    d = sd.alloc(8192)
    mr = rw.register(DeviceArray(d, 8192))
    for rail in rw.stats():
        assert rail["regs_staged"] == 1
        assert rail["regs_host"] + rail["regs_dmabuf"] + rail["regs_peermem"] == 0
    mr.close()


def test_server_publishes_a_cuda_arena():
    """RW: the arena is CUDA memory; a host client and a CUDA client READ
    and WRITE it, checked through the stand-in's copies."""
    sd = Standin()
    d = sd.alloc(N)
    want = np.random.default_rng(3).integers(0, 256, N, dtype=np.uint8).tobytes()
    sd.to_dev(d, want)
    with railwire.Server("rw", arena=DeviceArray(d, N), transport="tcp",
                         staging_bytes=256 << 10) as srv:
        st = srv.stats()
        assert st["regs_staged"] == 1 and st["regs_host"] == 0
        assert st["staging_bound"] == 256 << 10
        with railwire.connect(*srv.address, rails=2, dialect="rw", transport="tcp") as rs:
            host = np.zeros(N, dtype=np.uint8)
            mh = rs.register(host)
            rs.read(mh, 0, N - 7, 7)
            assert host[:N - 7].tobytes() == want[7:], "READ of a CUDA arena differs"
            data = np.random.default_rng(4).integers(0, 256, 100_000, dtype=np.uint8)
            host[:data.size] = data
            rs.write(mh, 0, data.size, 12345)
            assert sd.to_host(d + 12345, data.size) == data.tobytes(), "WRITE differs"
            dl = sd.alloc(N)
            md = rs.register(DeviceArray(dl, N))
            rs.read(md, 0, N, 0)
            want = want[:12345] + data.tobytes() + want[12345 + data.size:]
            assert sd.to_host(dl, N) == want, "CUDA <- CUDA READ differs"
            back = np.random.default_rng(5).integers(0, 256, 4096, dtype=np.uint8).tobytes()
            sd.to_dev(dl, back)
            rs.write(md, 0, 4096, N - 4096)
            assert sd.to_host(d + N - 4096, 4096) == back, "CUDA -> CUDA WRITE differs"
            md.close()
            mh.close()
        st = srv.stats()
        assert st["staging_allocated"] <= st["staging_bound"]
        assert st["staging_in_use"] == 0


def test_server_publishes_cuda_layers_next_to_host_layers():
    sd = Standin()
    d = sd.alloc(65536)
    want = bytes(range(256)) * 256
    sd.to_dev(d, want)
    hostl = np.arange(65536, dtype=np.uint8)[::-1].copy()
    with railwire.Server("ro", layers=[DeviceArray(d, 65536), hostl], transport="tcp") as srv:
        st = srv.stats()
        assert (st["regs_staged"], st["regs_host"]) == (1, 1)
        with railwire.connect(*srv.address, rails=1, dialect="ro", transport="tcp") as rs:
            out = np.zeros(65536, dtype=np.uint8)
            mr = rs.register(out)
            rs.read(mr, 0, 65536, 0, layer=0)
            assert out.tobytes() == want
            rs.read(mr, 0, 65536, 0, layer=1)
            assert out.tobytes() == hostl.tobytes()
            mr.close()


def test_server_rejects_a_read_only_cuda_arena():
    sd = Standin()
    d = sd.alloc(4096)

    class ReadOnly:
        __cuda_array_interface__ = {"data": (d, True), "shape": (4096,), "typestr": "|u1",
                                    "strides": None, "version": 3}
    with pytest.raises(railwire.Error):
        railwire.Server("rw", arena=ReadOnly(), transport="tcp")
