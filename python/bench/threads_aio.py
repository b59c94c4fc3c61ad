#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Python ops/s: synchronous reads from 1, 2, 4 and 8 threads, and the
asyncio loop (railwire.aio), in the same run against the same server.

One railwire.Server (RW, tcp, in this process: its C threads need no GIL)
serves every client.  Per configuration, for --seconds each:
  threads T   T Python threads on one Railset, each looping Railset.read()
              of one SIZE page (a random remote offset), ops/s summed;
  asyncio C   one event loop, C concurrent tasks each looping
              `await AsyncRailset.read(...)`, ops/s of all of them.
Sizes: 4 KiB for the thread sweep; 4 KiB and 64 KiB for asyncio, each next
to the 8-thread synchronous figure of the same size (the reference).

--module DIR imports railwire from DIR instead (e.g. a build of the tree
before the extension's lock went: the thread sweep then measures that
build; asyncio is skipped when DIR's railwire has no railwire.aio).

    PYTHONPATH=build/python python3 python/bench/threads_aio.py --seconds 2
"""
import argparse
import asyncio
import json
import sys
import threading
import time


def parse():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--rails", type=int, default=2)
    ap.add_argument("--threads", default="1,2,4,8")
    ap.add_argument("--concurrency", type=int, default=64, help="asyncio tasks in flight")
    ap.add_argument("--module", help="directory to import railwire from")
    ap.add_argument("--label", default="", help="tag of this run's JSON lines")
    return ap.parse_args()


def sync_threads(rw, np, rs, n_threads, size, seconds, arena_len):
    stop = time.monotonic() + seconds
    counts = [0] * n_threads
    errors = []
    start = threading.Barrier(n_threads + 1)

    def worker(t):
        try:
            rng = np.random.default_rng(t)
            local = np.zeros(size, dtype=np.uint8)
            mr = rs.register(local)
            start.wait()
            n = 0
            while time.monotonic() < stop:
                rs.read(mr, 0, size, int(rng.integers(0, arena_len // size)) * size, timeout=30)
                n += 1
            counts[t] = n
            mr.close()
        except BaseException as e:  # noqa: B902 - reported below
            errors.append(e)

    th = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for x in th:
        x.start()
    start.wait()
    t0 = time.monotonic()
    for x in th:
        x.join()
    if errors:
        raise errors[0]
    return sum(counts) / (time.monotonic() - t0)


def aio_run(rw, np, rs, concurrency, size, seconds, arena_len):
    import railwire.aio

    async def main():
        ars = railwire.aio.AsyncRailset(rs)
        local = np.zeros(concurrency * size, dtype=np.uint8)
        mr = ars.register(local)
        stop = time.monotonic() + seconds
        count = 0

        async def task(i):
            nonlocal count
            rng = np.random.default_rng(1000 + i)
            while time.monotonic() < stop:
                await ars.read(mr, i * size, size, int(rng.integers(0, arena_len // size)) * size,
                               timeout=30)
                count += 1

        t0 = time.monotonic()
        await asyncio.gather(*(task(i) for i in range(concurrency)))
        took = time.monotonic() - t0
        mr.close()
        return count / took

    return asyncio.run(main())


def main():
    a = parse()
    if a.module:
        sys.path.insert(0, a.module)
    import numpy as np
    import railwire as rw
    arena_len = 64 << 20
    arena = np.zeros(arena_len, dtype=np.uint8)
    label = a.label or ("module:" + a.module if a.module else "this tree")
    have_aio = hasattr(rw, "aio")
    with rw.Server("rw", arena=arena, transport="tcp") as srv:
        with rw.connect(*srv.address, rails=a.rails, dialect="rw", transport="tcp") as rs:
            ref = {}
            for t in [int(x) for x in a.threads.split(",")]:
                ops = sync_threads(rw, np, rs, t, 4096, a.seconds, arena_len)
                ref[(t, 4096)] = ops
                print(json.dumps({"run": label, "api": "sync", "threads": t, "size": 4096,
                                  "ops_per_s": round(ops)}), flush=True)
            if have_aio:
                for size in (4096, 65536):
                    if (8, size) not in ref:
                        ref[(8, size)] = sync_threads(rw, np, rs, 8, size, a.seconds, arena_len)
                        print(json.dumps({"run": label, "api": "sync", "threads": 8, "size": size,
                                          "ops_per_s": round(ref[(8, size)])}), flush=True)
                    ops = aio_run(rw, np, rs, a.concurrency, size, a.seconds, arena_len)
                    print(json.dumps({"run": label, "api": "asyncio", "tasks": a.concurrency,
                                      "size": size, "ops_per_s": round(ops),
                                      "vs_sync_8_threads": round(ops / ref[(8, size)], 2)}),
                          flush=True)


if __name__ == "__main__":
    main()
