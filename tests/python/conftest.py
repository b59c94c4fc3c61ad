# SPDX-License-Identifier: MIT
"""Shared fixtures of the Python suites.

ctest runs them with PYTHONPATH=<build>/python and RAILWIRE_CLI=<the
railwire command>; run by hand, `PYTHONPATH=build/python python3 -m pytest
tests/python` from the repository root finds build/tools/railwire/railwire
itself.
"""
import os
import socket
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    import railwire  # noqa: F401
except ImportError:  # run by hand without PYTHONPATH: try the default build tree
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))
    import railwire  # noqa: F401

import numpy as np  # noqa: E402


def cli_path():
    """The `railwire` command of this build, or None."""
    p = os.environ.get("RAILWIRE_CLI") or os.path.join(ROOT, "build", "tools", "railwire", "railwire")
    return p if os.access(p, os.X_OK) else None


@pytest.fixture
def cli():
    p = cli_path()
    if not p:
        pytest.fail("the railwire command was not found: build it, or set RAILWIRE_CLI")
    return p


@pytest.fixture
def arena():
    """A 4 MiB RW arena of random bytes."""
    return np.random.default_rng(1).integers(0, 256, 4 << 20, dtype=np.uint8)


@pytest.fixture
def rw_server(arena):
    with railwire.Server("rw", arena=arena, transport="tcp") as srv:
        yield srv


@pytest.fixture
def rw(rw_server):
    with railwire.connect(*rw_server.address, rails=2, dialect="rw", transport="tcp") as rs:
        yield rs


def free_port():
    """A loopback port bound (so nothing else takes it) but not listening:
    connecting there is refused at once.  Returns (socket, port)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    return s, s.getsockname()[1]


def wait_line(proc, prefix, timeout=20.0):
    """Reads proc's stdout until a line starting with `prefix`; returns it."""
    import selectors
    import time
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    end = time.monotonic() + timeout
    buf = b""
    while time.monotonic() < end:
        if not sel.select(timeout=max(0.0, end - time.monotonic())):
            continue
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            break
        buf += chunk
        for line in buf.decode(errors="replace").splitlines():
            if line.startswith(prefix):
                return line
    raise AssertionError("no line starting with %r from %s within %.0f s (got %r)"
                         % (prefix, proc.args, timeout, buf[-500:]))


def parse_hostport(line):
    """'listening on HOST:PORT ...' -> (host, port)."""
    word = line.split()[2]
    host, _, port = word.rpartition(":")
    return host.strip("[]"), int(port)


@pytest.fixture
def serve_rw(cli):
    """Starts `railwire serve --dialect rw` in a child process; yields
    (proc, (host, port)); the child is stopped at the end."""
    procs = []

    def start(arena="16M"):
        p = subprocess.Popen([cli, "serve", "--dialect", "rw", "--listen", "127.0.0.1:0",
                              "--arena", arena, "--fill", "--transport", "tcp"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        procs.append(p)
        return p, parse_hostport(wait_line(p, "listening on"))

    yield start
    for p in procs:
        if p.poll() is None:
            import signal
            p.send_signal(signal.SIGCONT)
            p.terminate()
            p.wait(timeout=20)
        p.stdout.close()
