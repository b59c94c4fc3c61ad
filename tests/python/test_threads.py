# SPDX-License-Identifier: MIT
"""8 Python threads on one Railset at once: asynchronous submits with their
own waits and polls, and synchronous reads and writes, all interleaved.
Every completion is returned exactly once, every synchronous call gets its
own transfer's completion, and every byte is checked."""
import threading

import numpy as np

import railwire

THREADS = 8
ROUNDS = 40
PAGE = 16 << 10


def test_eight_threads_submit_wait_and_sync_at_once(rw, arena):
    # thread t owns arena[t*span, (t+1)*span): the lower half for its
    # synchronous writes, the upper half (never written) for async reads
    span = arena.size // THREADS
    half = span // 2
    expect = arena.copy()
    results = {}
    errors = []
    delivered = []            # (user_data, handle) of every completion any wait/poll returned
    submitted = []            # handles of every async submit
    checks = []               # (local array, local offset, remote offset) of every async read
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def worker(t):
        try:
            rng = np.random.default_rng(100 + t)
            local = np.zeros(2 * PAGE + ROUNDS * 5 * PAGE, dtype=np.uint8)
            mr = rw.register(local)
            base = t * span
            mine = set()
            start.wait()
            for r in range(ROUNDS):
                # a synchronous write of fresh bytes, then a synchronous read back
                n = int(rng.integers(1, PAGE))
                off = int(rng.integers(0, half - n))
                local[:n] = rng.integers(0, 256, n, dtype=np.uint8)
                rw.write(mr, 0, n, base + off, timeout=30)
                rw.read(mr, PAGE, n, base + off, timeout=30)
                if not np.array_equal(local[PAGE:PAGE + n], local[:n]):
                    raise AssertionError("thread %d round %d: sync read-back differs" % (t, r))
                # asynchronous reads of the upper half into this round's own slots
                slot = 2 * PAGE + r * 5 * PAGE
                offs = base + half + rng.integers(0, half - PAGE, 5)
                hs = rw.submit_batch(railwire.READ, mr, slot + np.arange(4) * PAGE, offs[:4], PAGE,
                                     user_data=t)
                h1 = rw.submit_read(mr, slot + 4 * PAGE, PAGE, int(offs[4]), user_data=t)
                with lock:
                    submitted.extend(hs + [h1])
                    checks.extend((local, slot + i * PAGE, int(offs[i])) for i in range(5))
                mine.update(hs + [h1])
                # wait or poll: completions of any thread may come back here
                got = rw.wait(timeout=5, max=3) if r % 2 else rw.poll(max=8)
                with lock:
                    delivered.extend((c.user_data, c.handle) for c in got)
                    for c in got:
                        if c.status:
                            raise c.error
            results[t] = mine
        except BaseException as e:  # noqa: B902 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
        assert not th.is_alive(), "a thread hung"
    assert not errors, errors
    # what is left over is returned by a final drain, to anyone
    while True:
        got = rw.wait(timeout=10, max=256)
        if not got:
            break
        delivered.extend((c.user_data, c.handle) for c in got)
        assert all(c.status == 0 for c in got)
    assert rw.pending == 0
    handles = [h for _, h in delivered]
    assert len(handles) == len(set(handles)), "a completion was returned twice"
    assert sorted(handles) == sorted(submitted), \
        "async completions lost (or a synchronous one leaked into poll/wait)"
    # user_data routes each completion back to its submitter's handles
    for t, h in delivered:
        assert h in results[t]
    for local, lo, ro in checks:
        assert np.array_equal(local[lo:lo + PAGE], expect[ro:ro + PAGE]), "an async read differs"


def test_threads_waiting_while_others_submit(rw):
    """A thread blocked in wait() does not block submitters (the lock is
    released between short waits), and gets their completions."""
    mr = rw.register(bytearray(1 << 20))
    got = []
    stop = threading.Event()

    def waiter():
        while not stop.is_set() or rw.pending:
            got.extend(rw.wait(timeout=0.2, max=64))

    w = threading.Thread(target=waiter)
    w.start()
    handles = []
    for i in range(200):
        handles.append(rw.submit_read(mr, (i % 16) * 65536, 65536, i * 4096))
    stop.set()
    w.join(60)
    assert not w.is_alive()
    assert sorted(c.handle for c in got) == sorted(handles)
    assert all(c.status == 0 for c in got)
