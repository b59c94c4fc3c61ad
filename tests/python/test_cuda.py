# SPDX-License-Identifier: MIT
"""CUDA memory from Python, against the stand-in driver (its device memory
is PROT_NONE to the CPU, so any host access by railwire crashes the test):
an object exposing __cuda_array_interface__ over stand-in device memory
registers as CUDA memory and round-trips through a tcp railset (staged),
checked through the stand-in's own copies; a server refuses CUDA memory
(not published yet)."""
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


def test_server_refuses_cuda_memory():
    sd = Standin()
    d = sd.alloc(4096)
    with pytest.raises(railwire.Error, match="CUDA"):
        railwire.Server("rw", arena=DeviceArray(d, 4096), transport="tcp")
