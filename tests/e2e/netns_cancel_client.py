# SPDX-License-Identifier: MIT
"""The client half of netns_cancel_test.py, run inside the client namespace
with the railwire Python package: a healthy run (no deadline fires), then,
once the parent has stalled rail 0 (nft drop) and written "go", one phase:

  deadline  reads with a 200 ms deadline: those on the stalled rail end as
            Timeout within timeout + op_timeout (+ checking); the others
            succeed and verify;
  cancel    a load of reads with every third one cancelled at once: each
            cancelled one comes back within op_timeout (+ checking) of its
            cancel, no completion ever comes after a transfer's completion,
            and every other transfer verifies.
  flap      a WRITE striped over both rails: rail 0 dies by the op timeout
            with its slices still queued in its socket, and they finish on
            rail 1; a second WRITE of other bytes to the same place
            finishes; the client then prints "restore", the parent gives
            rail 0 its link back and writes "go", and after a wait longer
            than TCP's retransmission backoff the remote bytes must still be
            the second WRITE's: nothing the dead rail held ever lands.

Driven only by Railset.fileno() and poll(), no wait().  Prints "ready" after
the healthy run and "ok ..." at the end; exits non-zero on a failure.
usage: netns_cancel_client.py --connect HOST:PORT --local-addrs A,B --phase deadline|cancel|flap
"""
import argparse
import selectors
import sys
import time

import numpy as np

import railwire
from railwire import pattern

SIZE = 64 << 10
SPAN = 64 << 20
OP_TIMEOUT = 1.0
SLACK = 2.0          # scheduling on a shared machine; the bound itself is documented
E_TIMEOUT = railwire._railwire.E_TIMEOUT
E_CANCELED = railwire._railwire.E_CANCELED


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


class Run:
    def __init__(self, rs, slots):
        self.rs = rs
        self.local = np.zeros(slots * SIZE, dtype=np.uint8)
        self.mr = rs.register(self.local)
        self.free = list(range(slots))
        self.live = {}        # handle -> (slot, remote offset, t_submit, t_cancel)
        self.returned = set()
        self.sel = selectors.DefaultSelector()
        self.sel.register(rs.fileno(), selectors.EVENT_READ)
        self.n = 0

    def submit(self, timeout=None):
        slot = self.free.pop()
        off = (self.n * 7919 % (SPAN // SIZE)) * SIZE
        self.n += 1
        h = self.rs.submit_read(self.mr, slot * SIZE, SIZE, off, timeout=timeout)
        self.live[h] = [slot, off, time.monotonic(), None]
        return h

    def cancel(self, h):
        self.rs.cancel(h)
        self.live[h][3] = time.monotonic()

    def reap(self, wait_s):
        """Completions within wait_s: list of (completion, slot, off, t_submit, t_cancel)."""
        out = []
        if not self.sel.select(timeout=wait_s):
            return out
        for c in self.rs.poll(max=256):
            if c.handle in self.returned or c.handle not in self.live:
                fail("a second completion for transfer %d" % c.handle)
            self.returned.add(c.handle)
            slot, off, ts, tc = self.live.pop(c.handle)
            if c.status == 0:
                got = self.local[slot * SIZE:(slot + 1) * SIZE]
                if not np.array_equal(got, pattern.expected(SIZE, offset=off)):
                    fail("transfer %d (remote offset %d) read the wrong bytes" % (c.handle, off))
            self.free.append(slot)
            out.append((c, ts, tc))
        return out


def healthy(run):
    """2000 reads, 64 in flight, each with a 5 s deadline: none fires."""
    done = 0
    for _ in range(64):
        run.submit(timeout=5.0)
    while done < 2000:
        for c, _, _ in run.reap(20):
            if c.status:
                fail("healthy run: transfer %d: %s" % (c.handle, c.error))
            done += 1
            if run.n < 2000:
                run.submit(timeout=5.0)
    return done


def phase_deadline(run):
    hs = [run.submit(timeout=0.2) for _ in range(32)]
    timeouts = oks = 0
    end = time.monotonic() + 30
    while run.live and time.monotonic() < end:
        for c, ts, _ in run.reap(1):
            took = time.monotonic() - ts
            if c.status == E_TIMEOUT:
                timeouts += 1
                if took > 0.2 + OP_TIMEOUT + 0.1 + SLACK:
                    fail("a timed-out transfer came back %.2f s after its submit" % took)
            elif c.status == 0:
                oks += 1
            else:
                fail("transfer %d: unexpected %s" % (c.handle, c.error))
    if run.live:
        fail("%d transfers never came back" % len(run.live))
    if timeouts == 0:
        fail("no transfer on the stalled rail timed out (%d ok)" % oks)
    return "deadline: %d of %d timed out, %d verified" % (timeouts, len(hs), oks)


def phase_cancel(run):
    cancelled = ok = worst = 0
    stop = time.monotonic() + 3.0
    k = 0
    while time.monotonic() < stop or run.live:
        while run.free and time.monotonic() < stop:
            h = run.submit()
            k += 1
            if k % 3 == 0:
                run.cancel(h)
        got = run.reap(0.05 if time.monotonic() < stop else 10)
        if not got and time.monotonic() > stop + 20:
            fail("%d transfers never came back" % len(run.live))
        for c, ts, tc in got:
            if tc is not None:
                took = time.monotonic() - tc
                worst = max(worst, took)
                if took > OP_TIMEOUT + 0.1 + SLACK:
                    fail("a cancelled transfer came back %.2f s after its cancel" % took)
                if c.status not in (E_CANCELED, 0):
                    fail("cancelled transfer %d: %s" % (c.handle, c.error))
                cancelled += 1
            elif c.status:
                fail("transfer %d (not cancelled): %s" % (c.handle, c.error))
            else:
                ok += 1
    # nothing comes after: the fd may fire once more, poll returns nothing
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        if run.reap(0.1):
            fail("a completion after every transfer had come back")
    if run.rs.pending:
        fail("pending %d after the drain" % run.rs.pending)
    return "cancel: %d cancelled (slowest back %.2f s after its cancel), %d verified" % (
        cancelled, worst, ok)


def phase_flap(run):
    n = 1 << 20
    off = SPAN - n  # the arena's last MiB (each phase has a server of its own)
    first, second = 0x11, 0x22
    buf = np.full(2 * n, first, dtype=np.uint8)
    buf[n:] = second
    mr = run.rs.register(buf)
    t0 = time.monotonic()
    run.rs.write(mr, 0, n, off, timeout=60)
    took = time.monotonic() - t0
    states = [st.get("state") for st in run.rs.stats()]
    if took < OP_TIMEOUT * 0.9:
        fail("the first WRITE finished in %.2f s: none of it waited on the stalled rail" % took)
    run.rs.write(mr, n, n, off, timeout=60)
    print("restore (first WRITE %.2f s, rail states %s)" % (took, states), flush=True)
    if sys.stdin.readline().strip() != "go":
        fail("no go after the restore")
    # A segment lost at t goes out again at t + 0.2, 0.6, 1.4, 3.0, 6.2 s
    # (doubling from the 200 ms floor), so every queued byte of the dead
    # rail would have been sent again within this wait.
    time.sleep(8)
    back = np.zeros(n, dtype=np.uint8)
    run.rs.read(run.rs.register(back), 0, n, off, timeout=60)
    stale = int(np.count_nonzero(back == first))
    if stale:
        fail("%d of %d bytes at the remote are the first WRITE's again: the dead rail's queued "
             "bytes landed after the second WRITE" % (stale, n))
    if not (back == second).all():
        fail("the remote bytes are neither WRITE's")
    return "flap: first WRITE in %.2f s across the rail's death; the second WRITE's bytes held " \
           "after the link came back" % took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--connect", required=True)
    ap.add_argument("--local-addrs", required=True)
    ap.add_argument("--phase", choices=["deadline", "cancel", "flap"], required=True)
    a = ap.parse_args()
    host, _, port = a.connect.rpartition(":")
    rs = railwire.connect(host, int(port), rails=2, dialect="rw", transport="tcp",
                          local_addrs=a.local_addrs.split(","), op_timeout=OP_TIMEOUT,
                          queue_depth=8)
    run = Run(rs, 128)
    n = healthy(run)
    print("ready (healthy: %d reads, no deadline fired)" % n, flush=True)
    if sys.stdin.readline().strip() != "go":
        fail("no go")
    msg = {"deadline": phase_deadline, "cancel": phase_cancel, "flap": phase_flap}[a.phase](run)
    print("ok " + msg, flush=True)
    rs.close()


if __name__ == "__main__":
    main()
