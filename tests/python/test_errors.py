# SPDX-License-Identifier: MIT
"""Every RAILWIRE_E_* code has its own railwire.Error subclass carrying
.code and railwire_strerror's message, and real failures raise the class of
their code."""
import os
import re
import socket
import subprocess
import sys

import numpy as np
import pytest

import railwire
from railwire import _railwire
from conftest import ROOT, free_port, parse_hostport, wait_line

HEADER = os.path.join(ROOT, "include", "railwire", "error.h")
WIRE_PEER = os.path.join(ROOT, "tests", "e2e", "wire_peer.py")


def header_codes():
    text = open(HEADER).read()
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"RAILWIRE_E_(\w+)\s*=\s*(-?\d+)", text)}


def test_every_code_of_error_h_has_its_own_class():
    codes = header_codes()
    assert len(codes) >= 26
    assert _railwire.ERROR_CODES == codes, "the extension's code table differs from error.h"
    classes = set()
    for name, code in codes.items():
        cls = railwire.errors.BY_CODE.get(code)
        assert cls is not None, "RAILWIRE_E_%s has no exception class" % name
        assert issubclass(cls, railwire.Error) and cls is not railwire.Error
        assert cls.code_name == name
        classes.add(cls)
        e = railwire.error_for_code(code, "doing something")
        assert type(e) is cls and e.code == code
        assert e.error_class == railwire.error_class(code)
        assert str(e) == "doing something: %s: %s" % (railwire.error_class(code),
                                                       railwire.strerror(code))
        assert getattr(railwire, cls.__name__) is cls, "%s is not exported" % cls.__name__
    assert len(classes) == len(codes), "two codes share a class"
    unknown = railwire.error_for_code(-4242)
    assert type(unknown) is railwire.Error and unknown.code == -4242


def test_named_classes_and_builtin_bases():
    assert railwire.PeerRejected.code_name == "PEER_REJECTED"
    assert railwire.Refused.code_name == "REFUSED"
    assert railwire.Truncated.code_name == "TRUNCATED"
    assert railwire.Timeout.code_name == "TIMEOUT"
    assert railwire.ConnectError.code_name == "CONNECT"
    assert railwire.AllRailsDown.code_name == "ALL_RAILS_DOWN"
    assert railwire.RemoteAccess.code_name == "REMOTE_ACCESS"
    assert railwire.InvalidArgument.code_name == "INVALID"
    assert issubclass(railwire.InvalidArgument, ValueError)
    assert issubclass(railwire.Timeout, TimeoutError)
    assert issubclass(railwire.ConnectError, ConnectionError)


def check(excinfo, cls):
    e = excinfo.value
    assert type(e) is cls, "%s raised instead of %s: %s" % (type(e).__name__, cls.__name__, e)
    assert e.code == _railwire.ERROR_CODES[cls.code_name]
    assert railwire.strerror(e.code) in str(e)


def test_connect_refused_is_connect_error():
    s, port = free_port()
    with pytest.raises(railwire.Error) as ei:
        railwire.connect("127.0.0.1", port, transport="tcp", connect_timeout=2)
    s.close()
    check(ei, railwire.ConnectError)


def test_silent_server_is_timeout():
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(4)  # accepts (in the kernel) but never answers the handshake
    with pytest.raises(railwire.Error) as ei:
        railwire.connect("127.0.0.1", ls.getsockname()[1], transport="tcp", connect_timeout=0.3)
    ls.close()
    check(ei, railwire.Timeout)


def test_rail_cap_is_peer_rejected(arena):
    with railwire.Server("rw", arena=arena, transport="tcp", max_rails=1) as srv:
        with pytest.raises(railwire.Error) as ei:
            railwire.connect(*srv.address, rails=2, dialect="rw", transport="tcp")
        check(ei, railwire.PeerRejected)


def test_dialect_mismatch(arena):
    with railwire.Server("rw", arena=arena, transport="tcp") as srv:
        with pytest.raises(railwire.Error) as ei:
            railwire.connect(*srv.address, dialect="ro", transport="tcp")
        check(ei, railwire.BadLayerCount)
    with railwire.Server("ro", layers=[arena], transport="tcp") as srv:
        with pytest.raises(railwire.Error) as ei:
            railwire.connect(*srv.address, dialect="rw", transport="tcp")
        check(ei, railwire.Refused)


@pytest.mark.parametrize("behaviour,cls", [("reject", railwire.PeerRejected),
                                           ("refuse", railwire.Refused),
                                           ("truncate", railwire.Truncated),
                                           ("mismatch", railwire.RailCountMismatch)])
def test_misbehaving_peer(behaviour, cls):
    """tests/e2e/wire_peer.py speaks the server side from WIRE.md alone."""
    p = subprocess.Popen([sys.executable, WIRE_PEER, "server", "--dialect", "ro", "--behaviour",
                          behaviour, "--count", "1", "--timeout", "20"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        line = wait_line(p, "{")
        host, port = line.split('"')[3].rsplit(":", 1)
        with pytest.raises(railwire.Error) as ei:
            railwire.connect(host, int(port), rails=2, dialect="ro", transport="tcp",
                             connect_timeout=5)
        check(ei, cls)
    finally:
        p.kill()
        p.wait()
        p.stdout.close()


def test_remote_access(rw, arena):
    buf = bytearray(8192)
    mr = rw.register(buf)
    with pytest.raises(railwire.Error) as ei:
        rw.read(mr, 0, 8192, arena.size - 100)          # past the arena's end
    check(ei, railwire.RemoteAccess)
    # asynchronously: the completion carries the error
    h = rw.submit_write(mr, 0, 100, arena.size, user_data=5)
    (c,) = rw.wait(timeout=10)
    assert c.handle == h and c.user_data == 5
    assert c.status == c.error.code == _railwire.ERROR_CODES["REMOTE_ACCESS"]
    assert type(c.error) is railwire.RemoteAccess


def test_ro_layer_errors(arena):
    with railwire.Server("ro", layers=[arena, arena[:4096]], transport="tcp") as srv, \
            railwire.connect(*srv.address, dialect="ro", transport="tcp") as rs:
        mr = rs.register(bytearray(4096))
        with pytest.raises(railwire.Error) as ei:
            rs.read(mr, 0, 10, 0, layer=2)                  # no such layer
        check(ei, railwire.RemoteAccess)
        with pytest.raises(railwire.Error) as ei:
            rs.write(mr, 0, 10, 0, layer=0)                 # layers are read-only
        check(ei, railwire.RemoteAccess)
        rs.read(mr, 0, 4096, 0, layer=1)
        assert bytes(mr.obj) == arena[:4096].tobytes()


def test_invalid_arguments(rw):
    mr = rw.register(bytearray(100))
    cases = [
        lambda: rw.read(mr, 0, 0, 0),                       # zero length
        lambda: rw.read(mr, 50, 51, 0),                     # outside the region
        lambda: rw.read(mr, -1, 10, 0),                     # negative offset
        lambda: rw.submit_read(mr, 0, 10, -5),
        lambda: rw.wait(max=0),
        lambda: rw.wait(timeout=-1),
        lambda: railwire.connect("127.0.0.1", 1, rails=0),
        lambda: railwire.connect("127.0.0.1", 1, rails=9),
        lambda: railwire.connect("127.0.0.1", 1, dialect="xx"),
        lambda: railwire.connect("127.0.0.1", 1, transport="carrier-pigeon"),
        lambda: railwire.connect("127.0.0.1", 1, connect_timeout=0),
        lambda: railwire.connect("127.0.0.1", 1, busy_poll_us=-1),
        lambda: railwire.connect("127.0.0.1", 1, busy_poll_us=1000001),
        lambda: railwire.connect("127.0.0.1", 1, busy_poll_us=2.5),
        lambda: railwire.Server("rw", arena=bytearray(10), busy_poll_us=-3),
        lambda: railwire.Server("rw", arena=b"read-only bytes"),
        lambda: railwire.Server("ro", layers=[]),
        lambda: railwire.Server("rw", listen="nowhere"),
    ]
    for i, f in enumerate(cases):
        with pytest.raises(railwire.Error) as ei:
            f()
        assert type(ei.value) is railwire.InvalidArgument, "case %d: %r" % (i, ei.value)
        assert ei.value.code == _railwire.E_INVALID


def test_limit_and_closed(arena):
    with pytest.raises(railwire.Error) as ei:
        railwire.Server("rw", arena=arena, max_bytes=1000)
    check(ei, railwire.LimitExceeded)
    with railwire.Server("rw", arena=arena, transport="tcp") as srv:
        rs = railwire.connect(*srv.address, dialect="rw", transport="tcp")
        mr = rs.register(bytearray(100))
        rs.close()
        assert rs.closed and mr.closed
        for f in (lambda: rs.read(mr, 0, 10, 0), lambda: rs.poll(), lambda: rs.wait(),
                  lambda: rs.stats(), lambda: rs.register(bytearray(10))):
            with pytest.raises(railwire.Error) as ei:
                f()
            check(ei, railwire.Closed)
        rs.close()  # idempotent


def test_server_gone_is_all_rails_down(arena):
    srv = railwire.Server("rw", arena=arena, transport="tcp")
    rs = railwire.connect(*srv.address, rails=2, dialect="rw", transport="tcp")
    mr = rs.register(bytearray(4096))
    rs.read(mr, 0, 4096, 0)
    srv.close()
    with pytest.raises(railwire.Error) as ei:
        for _ in range(100):     # until the rails notice the server is gone
            rs.read(mr, 0, 4096, 0, timeout=20)
    check(ei, railwire.AllRailsDown)
    assert all(s["state"] == "down" for s in rs.stats())
    rs.close()
