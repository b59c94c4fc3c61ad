# SPDX-License-Identifier: MIT
"""Railset.fileno(), Railset.cancel() and per-transfer timeout= on the
synchronous-thread API: a selectors loop driven by the fd alone; cancelled
transfers come back once, as Canceled, at once when nothing of them is on
the wire; a deadline on a stopped server ends as Timeout; errors for
unknown handles."""
import os
import selectors
import signal

import numpy as np
import pytest

import railwire
from test_pending import wait_stopped

PAGE = 4096


def test_selectors_loop_driven_by_fileno(rw, arena):
    fd = rw.fileno()
    assert isinstance(fd, int) and fd >= 0 and rw.fileno() == fd
    local = np.zeros(64 * PAGE, dtype=np.uint8)
    mr = rw.register(local)
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    done, submitted, total = 0, 0, 2000
    slot_off = {}

    def submit(slot):
        nonlocal submitted
        off = (submitted * 7919 % (arena.size // PAGE)) * PAGE
        slot_off[slot] = off
        rw.submit_read(mr, slot * PAGE, PAGE, off, user_data=slot, timeout=60)
        submitted += 1

    for s in range(64):
        submit(s)
    while done < total:
        assert sel.select(timeout=20), "the fd stayed quiet with transfers in flight"
        for c in rw.poll(max=64):
            assert c.status == 0 and c.bytes_moved == PAGE
            s = c.user_data
            assert np.array_equal(local[s * PAGE:(s + 1) * PAGE],
                                  arena[slot_off[s]:slot_off[s] + PAGE])
            done += 1
            if submitted < total:
                submit(s)
    assert rw.pending == 0
    sel.close()


def test_cancel_errors(rw):
    mr = rw.register(bytearray(PAGE))
    h = rw.submit_read(mr, 0, PAGE, 0)
    (c,) = rw.wait(timeout=20)
    assert c.handle == h and c.status == 0
    with pytest.raises(railwire.InvalidArgument):
        rw.cancel(h)                    # already returned
    with pytest.raises(railwire.InvalidArgument):
        rw.cancel(987654321)            # never submitted
    with pytest.raises(railwire.InvalidArgument):
        rw.submit_read(mr, 0, PAGE, 0, timeout=0)
    with pytest.raises(railwire.InvalidArgument):
        rw.submit_read(mr, 0, PAGE, 0, timeout=-1)


@pytest.fixture
def stalled(serve_rw):
    proc, addr = serve_rw()
    rs = railwire.connect(*addr, rails=1, dialect="rw", transport="tcp", queue_depth=1,
                          op_timeout=1.0)
    mr = rs.register(np.zeros(16 * PAGE, dtype=np.uint8))
    rs.read(mr, 0, PAGE, 0)  # the server works
    os.kill(proc.pid, signal.SIGSTOP)
    wait_stopped(proc.pid)

    def resume():
        os.kill(proc.pid, signal.SIGCONT)

    yield rs, mr, resume
    resume()
    rs.close()


def test_cancel_on_a_stalled_server(stalled):
    rs, mr, resume = stalled
    hs = [rs.submit_read(mr, i * PAGE, PAGE, i * PAGE, user_data=i) for i in range(6)]
    for h in hs:
        rs.cancel(h)
    # the 5 never posted (queue depth 1) come back at once, with nothing moved
    got = []
    while len(got) < 5:
        more = rs.wait(timeout=0.5, max=64)
        assert more, "cancelled transfers with nothing on the wire did not come back at once"
        got += more
    assert len(got) == 5 and {c.handle for c in got} == set(hs[1:])
    assert all(c.status == railwire._railwire.E_CANCELED and c.bytes_moved == 0 for c in got)
    assert all(isinstance(c.error, railwire.Canceled) for c in got)
    # the one on the wire comes back once its rail is declared dead (op_timeout 1 s)
    (c,) = rs.wait(timeout=20)
    assert c.handle == hs[0] and c.status == railwire._railwire.E_CANCELED
    assert rs.pending == 0
    assert rs.wait(timeout=0.3) == []   # nothing comes after a cancel's completion


def test_deadline_on_a_stalled_server(stalled):
    rs, mr, resume = stalled
    a = rs.submit_read(mr, 0, PAGE, 0, timeout=0.2)           # on the wire
    b = rs.submit_read(mr, PAGE, PAGE, PAGE, timeout=0.2)     # waits for the rail
    (c,) = rs.wait(timeout=20)
    assert c.handle == b and c.status == railwire._railwire.E_TIMEOUT
    assert isinstance(c.error, railwire.Timeout) and c.bytes_moved == 0
    (c,) = rs.wait(timeout=20)
    assert c.handle == a and c.status == railwire._railwire.E_TIMEOUT
    resume()
    # the railset heals and works again
    rs.read(mr, 0, PAGE, 0, timeout=30)
