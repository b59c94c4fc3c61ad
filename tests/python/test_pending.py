# SPDX-License-Identifier: MIT
"""Transfers that do not finish for a while (the server process is stopped
with SIGSTOP): Ctrl-C interrupts waits promptly, timeouts leave the
transfer pending, and every such transfer is still returned by a later
wait once the server runs again."""
import os
import signal
import threading
import time

import pytest

import railwire


def wait_stopped(pid, timeout=10.0):
    """SIGSTOP is asynchronous: waits until /proc says the process is stopped."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open("/proc/%d/stat" % pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] in ("T", "t"):
                return
        time.sleep(0.005)
    raise AssertionError("process %d did not stop" % pid)


@pytest.fixture
def stopped(serve_rw):
    proc, addr = serve_rw()
    rs = railwire.connect(*addr, rails=2, dialect="rw", transport="tcp", op_timeout=60)
    mr = rs.register(bytearray(1 << 20))
    rs.read(mr, 0, 1 << 20, 0)  # the server works
    os.kill(proc.pid, signal.SIGSTOP)
    wait_stopped(proc.pid)

    def resume():
        os.kill(proc.pid, signal.SIGCONT)

    yield rs, mr, resume
    resume()
    rs.close()


def interrupt_after(seconds):
    t = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    t.start()
    return t


def test_ctrl_c_interrupts_wait_promptly_and_the_transfer_stays_accounted_for(stopped):
    rs, mr, resume = stopped
    h = rs.submit_read(mr, 0, 1 << 20, 0, user_data=99)
    t0 = time.monotonic()
    interrupt_after(0.3)
    with pytest.raises(KeyboardInterrupt):
        rs.wait(timeout=30)
    took = time.monotonic() - t0
    assert took < 2.0, "KeyboardInterrupt took %.2f s" % took
    assert rs.pending == 1
    resume()
    (c,) = rs.wait(timeout=20)
    assert (c.handle, c.user_data, c.status) == (h, 99, 0)


def test_ctrl_c_interrupts_a_synchronous_read(stopped):
    rs, mr, resume = stopped
    t0 = time.monotonic()
    interrupt_after(0.3)
    with pytest.raises(KeyboardInterrupt):
        rs.read(mr, 0, 65536, 0, timeout=30)
    assert time.monotonic() - t0 < 2.0
    resume()
    (c,) = rs.wait(timeout=20)   # the interrupted read's completion, for the books
    assert c.status == 0 and c.length == 65536


def test_sync_timeout_leaves_the_transfer_pending(stopped):
    rs, mr, resume = stopped
    with pytest.raises(railwire.Timeout) as ei:
        rs.write(mr, 0, 4096, 0, timeout=0.2)
    assert ei.value.code == railwire._railwire.E_TIMEOUT
    h = ei.value.handle
    assert rs.wait(timeout=0.1) == []          # a timeout of wait() is an empty list
    # the region is in use: closing it is refused, not unsafe
    with pytest.raises(railwire.InvalidState):
        mr.close()
    resume()
    (c,) = rs.wait(timeout=20)
    assert c.handle == h and c.status == 0
    mr.close()
    assert mr.closed


def test_other_threads_submit_while_one_waits(stopped):
    rs, mr, resume = stopped
    rs.submit_read(mr, 0, 4096, 0)
    got = []
    w = threading.Thread(target=lambda: got.extend(rs.wait(timeout=20, max=10)))
    w.start()
    time.sleep(0.1)
    t0 = time.monotonic()
    for i in range(20):
        rs.submit_read(mr, 4096 * (i + 1), 4096, 0)
    assert time.monotonic() - t0 < 1.0, "submits were blocked by the waiting thread"
    resume()
    w.join(30)
    while len(got) < 21:
        more = rs.wait(timeout=20, max=64)
        assert more
        got.extend(more)
    assert len({c.handle for c in got}) == 21
