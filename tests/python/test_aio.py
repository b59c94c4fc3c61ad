# SPDX-License-Identifier: MIT
"""railwire.aio: awaits on asyncio's own loop through the railset fd.  A
KV-page loop of 1,000 concurrent reads verifies every page; batches,
writes, per-transfer deadlines, and cancelling the awaiting task (which
cancels the transfer) against a stopped server."""
import asyncio
import os
import signal
import threading

import numpy as np
import pytest

import railwire
import railwire.aio
from test_pending import wait_stopped

PAGE = 4096


def run(coro):
    return asyncio.run(coro)


def test_thousand_concurrent_reads_verify_every_page(arena):
    async def main():
        with railwire.Server("rw", arena=arena, transport="tcp") as srv:
            async with await railwire.aio.connect(*srv.address, rails=2, dialect="rw",
                                                  transport="tcp") as ars:
                n = 1000
                pages = arena.size // PAGE
                local = np.zeros(n * PAGE, dtype=np.uint8)
                mr = ars.register(local)
                rng = np.random.default_rng(7)
                remote = rng.integers(0, pages, n) * PAGE
                await asyncio.gather(*(ars.read(mr, i * PAGE, PAGE, int(remote[i]), timeout=30)
                                       for i in range(n)))
                for i in range(n):
                    assert np.array_equal(local[i * PAGE:(i + 1) * PAGE],
                                          arena[remote[i]:remote[i] + PAGE]), "page %d differs" % i
                assert ars.pending == 0
                # no thread per call: the loop thread alone waited
                assert threading.active_count() < 8
    run(main())


def test_batches_and_writes(arena):
    async def main():
        with railwire.Server("rw", arena=arena, transport="tcp") as srv:
            async with await railwire.aio.connect(*srv.address, rails=2, dialect="rw",
                                                  transport="tcp") as ars:
                src = np.random.default_rng(3).integers(0, 256, 64 * PAGE, dtype=np.uint8)
                back = np.zeros_like(src)
                mw, mb = ars.register(src), ars.register(back)
                offs = np.arange(64) * PAGE
                await ars.write_batch(mw, offs, offs + 512 * PAGE, PAGE)
                await ars.read_batch(mb, offs, offs + 512 * PAGE, PAGE, timeout=30)
                assert np.array_equal(src, back)
                await ars.write(mw, 0, PAGE, 0)
                await ars.read(mb, 0, PAGE, 0)
                assert np.array_equal(back[:PAGE], src[:PAGE])
                with pytest.raises(railwire.RemoteAccess):
                    await ars.read(mb, 0, PAGE, arena.size)     # out of the arena
                assert ars.stats()[0]["state"] == "up"
    run(main())


def test_healthy_run_fires_no_deadline(arena):
    async def main():
        with railwire.Server("rw", arena=arena, transport="tcp") as srv:
            async with await railwire.aio.connect(*srv.address, rails=2, dialect="rw",
                                                  transport="tcp") as ars:
                local = np.zeros(256 * PAGE, dtype=np.uint8)
                mr = ars.register(local)
                for _ in range(4):
                    await asyncio.gather(*(ars.read(mr, i * PAGE, PAGE, i * PAGE, timeout=30)
                                           for i in range(256)))
                assert np.array_equal(local, arena[:256 * PAGE])
    run(main())


@pytest.fixture
def stopped_server(serve_rw):
    proc, addr = serve_rw()

    def stop():
        os.kill(proc.pid, signal.SIGSTOP)
        wait_stopped(proc.pid)

    def resume():
        os.kill(proc.pid, signal.SIGCONT)

    yield addr, stop, resume
    resume()


def test_cancelling_the_task_cancels_the_transfers(stopped_server):
    addr, stop, resume = stopped_server

    async def body():
        ars = await railwire.aio.connect(*addr, rails=1, dialect="rw", transport="tcp",
                                         queue_depth=1, op_timeout=60)
        async with ars:
            local = np.zeros(8 * PAGE, dtype=np.uint8)
            mr = ars.register(local)
            await ars.read(mr, 0, PAGE, 0)               # the server works
            stop()
            tasks = [asyncio.ensure_future(ars.read(mr, i * PAGE, PAGE, i * PAGE))
                     for i in range(8)]
            await asyncio.sleep(0.2)
            assert not any(t.done() for t in tasks)
            for t in tasks:
                t.cancel()
            for t in tasks:
                with pytest.raises(asyncio.CancelledError):
                    await t
            # the 7 never posted (depth 1) complete at once as cancelled,
            # with nothing from the server: only the one on the wire is left
            for _ in range(200):
                if ars.pending <= 1:
                    break
                await asyncio.sleep(0.01)
            assert ars.pending == 1
            resume()
            for _ in range(2000):
                if ars.pending == 0:
                    break
                await asyncio.sleep(0.01)
            assert ars.pending == 0
            # the railset still works
            await ars.read(mr, 0, PAGE, 0, timeout=30)
    run(body())


def test_deadline_raises_timeout_on_a_stalled_server(stopped_server):
    addr, stop, resume = stopped_server

    async def body():
        async with await railwire.aio.connect(*addr, rails=1, dialect="rw", transport="tcp",
                                              queue_depth=1, op_timeout=1.0) as ars:
            local = np.zeros(4 * PAGE, dtype=np.uint8)
            mr = ars.register(local)
            await ars.read(mr, 0, PAGE, 0)
            stop()
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            # the first goes on the wire (finishes when its rail is declared dead:
            # op_timeout), the second waits for the rail: dropped at its deadline
            a = asyncio.ensure_future(ars.read(mr, 0, PAGE, 0, timeout=0.2))
            b = asyncio.ensure_future(ars.read(mr, PAGE, PAGE, PAGE, timeout=0.2))
            with pytest.raises(railwire.Timeout):
                await b
            with pytest.raises(railwire.Timeout):
                await a
            # documented bound: timeout + op_timeout (+ checking); generous slack
            assert loop.time() - t0 < 0.2 + 1.0 + 5.0
            resume()
    run(body())
