#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An engine's KV-cache traffic on its own asyncio event loop.

    python3 examples/kv_aio_client.py --connect 127.0.0.1:7000 --rails 2 --pages 1024

Each of --pages requests is a coroutine, as an engine's step would be:
it writes its page (random bytes, 16-64 KiB) to a slot of the server's
arena, reads it back into a second array and checks it, every transfer
awaited with a deadline (--deadline seconds).  They all run at once on one
event loop through railwire.aio, with no thread per request.  A last step
shows the bound an engine puts on a step: a read cancelled by its task
(asyncio.wait_for) cancels the transfer.  Exit status 0 if every page came
back intact.
"""
import argparse
import asyncio
import sys
import time

import numpy as np

import railwire
import railwire.aio

SLOT = 64 << 10


async def one_page(ars, src_mr, dst_mr, src, dst, i, size, deadline):
    off = i * SLOT
    await ars.write(src_mr, off, size, off, timeout=deadline)
    await ars.read(dst_mr, off, size, off, timeout=deadline)
    if not np.array_equal(src[off:off + size], dst[off:off + size]):
        raise AssertionError("page %d came back different" % i)


async def main_async(a):
    host, _, port = a.connect.rpartition(":")
    async with await railwire.aio.connect(host.strip("[]"), int(port), rails=a.rails,
                                          dialect="rw", transport=a.transport) as ars:
        rng = np.random.default_rng(a.seed)
        sizes = rng.integers(16 << 10, SLOT + 1, a.pages)
        src = rng.integers(0, 256, a.pages * SLOT, dtype=np.uint8)
        dst = np.zeros_like(src)
        src_mr, dst_mr = ars.register(src), ars.register(dst)
        t0 = time.monotonic()
        await asyncio.gather(*(one_page(ars, src_mr, dst_mr, src, dst, i, int(sizes[i]),
                                        a.deadline) for i in range(a.pages)))
        took = time.monotonic() - t0
        moved = 2 * int(sizes.sum())
        print("%d pages written and read back in %.3f s (%.2f GB/s), on one event loop"
              % (a.pages, took, moved / took / 1e9))
        # An engine bounds a step: cancelling the awaiting task cancels the transfer.
        try:
            await asyncio.wait_for(ars.read_batch(dst_mr, np.arange(a.pages) * SLOT,
                                                  np.arange(a.pages) * SLOT, SLOT), 1e-4)
            print("the bounded step finished within its bound")
        except asyncio.TimeoutError:
            print("the bounded step was cancelled; its unfinished transfers were cancelled too")
        while ars.pending:
            await asyncio.sleep(0.01)   # cancelled transfers still come back, then nothing more
        print("ok: every page came back intact")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connect", required=True, help="HOST:PORT of a kv_server.py (or railwire serve --dialect rw)")
    ap.add_argument("--rails", type=int, default=2)
    ap.add_argument("--pages", type=int, default=1024)
    ap.add_argument("--deadline", type=float, default=10.0, help="seconds per transfer")
    ap.add_argument("--transport", default="auto", choices=["auto", "tcp", "verbs"])
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    try:
        asyncio.run(main_async(a))
    except railwire.Error as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
