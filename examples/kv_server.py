#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A KV-cache tier in a few lines: publish a numpy array as a railwire RW
arena until SIGINT or SIGTERM.

    python3 examples/kv_server.py --listen 127.0.0.1:7000 --arena-mib 256

Prints "listening on HOST:PORT ..." once clients may connect.  Pair it with
examples/kv_client.py.
"""
import argparse
import signal
import sys

import numpy as np

import railwire


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT (port 0: any free port)")
    ap.add_argument("--arena-mib", type=int, default=256, help="arena size in MiB")
    ap.add_argument("--transport", default="auto", choices=("auto", "tcp", "verbs"))
    ap.add_argument("--max-clients", type=int, default=None)
    args = ap.parse_args(argv)

    # The arena is ordinary numpy memory: the server reads and writes it in
    # place, so this process can inspect what clients stored.
    arena = np.zeros(args.arena_mib << 20, dtype=np.uint8)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    with railwire.Server("rw", listen=args.listen, arena=arena, transport=args.transport,
                         max_clients=args.max_clients) as srv:
        host, port = srv.address
        print("listening on %s:%d (dialect rw, arena %d MiB)" % (host, port, args.arena_mib),
              flush=True)
        sig = signal.sigwait({signal.SIGINT, signal.SIGTERM})
        print("%s: stopping (%d live session(s))" % (signal.Signals(sig).name, srv.sessions), flush=True)
    nonzero = int(np.count_nonzero(arena))
    print("arena: %d of %d bytes written by clients are non-zero" % (nonzero, arena.size), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
