#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Offload KV-cache pages to a railwire RW server and fetch them back.

    python3 examples/kv_client.py --connect 127.0.0.1:7000 --rails 2 --pages 4096

Writes --pages pages of random sizes (16-64 KiB) from a numpy array to
random slots of the server's arena with one submit_batch, reads them all
back into a second array with another, and checks every byte.  Exit status
0 if every page came back intact.
"""
import argparse
import sys
import time

import numpy as np

import railwire

SLOT = 64 << 10


def wait_all(rs, handles, timeout):
    """Collects the completions of `handles`; raises the first failure."""
    left = len(handles)
    while left:
        done = rs.wait(timeout=timeout, max=4096)
        if not done:
            raise railwire.Timeout("no completion within %.0f s (%d pages left)" % (timeout, left))
        for c in done:
            if c.error is not None:
                raise c.error
        left -= len(done)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connect", required=True, help="HOST:PORT of a kv_server.py (or railwire serve --dialect rw)")
    ap.add_argument("--rails", type=int, default=2)
    ap.add_argument("--pages", type=int, default=4096)
    ap.add_argument("--transport", default="auto", choices=("auto", "tcp", "verbs"))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    host, _, port = args.connect.rpartition(":")

    rng = np.random.default_rng(args.seed)
    n = args.pages
    sizes = rng.integers(16 << 10, SLOT + 1, n)
    local = np.arange(n, dtype=np.uint64) * SLOT              # page i lives in local slot i
    pages = rng.integers(0, 256, n * SLOT, dtype=np.uint8)    # the "KV cache" on this side
    back = np.zeros_like(pages)

    with railwire.connect(host.strip("[]"), int(port), rails=args.rails, dialect="rw",
                          transport=args.transport) as rs:
        arena_slots = n  # the server's arena must hold n slots of 64 KiB
        remote = rng.permutation(arena_slots).astype(np.uint64) * SLOT
        src = rs.register(pages)       # registered in place: no copy of the pages
        dst = rs.register(back)
        t0 = time.perf_counter()
        wait_all(rs, rs.submit_batch(railwire.WRITE, src, local, remote, sizes), 30.0)
        t1 = time.perf_counter()
        wait_all(rs, rs.submit_batch(railwire.READ, dst, local, remote, sizes), 30.0)
        t2 = time.perf_counter()
        moved = int(sizes.sum())
        bad = [i for i in range(n)
               if not np.array_equal(pages[int(local[i]):int(local[i]) + sizes[i]],
                                     back[int(local[i]):int(local[i]) + sizes[i]])]
        print("%d pages (%.1f MiB) over %d %s rail(s): write %.2f GB/s, read %.2f GB/s"
              % (n, moved / 2**20, rs.rails, rs.transport, moved / (t1 - t0) / 1e9,
                 moved / (t2 - t1) / 1e9))
    if bad:
        print("FAILED: %d page(s) came back different, first: page %d" % (len(bad), bad[0]))
        return 1
    print("ok: every page came back intact")
    return 0


if __name__ == "__main__":
    sys.exit(main())
