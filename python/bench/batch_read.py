#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Python batch READ against the C bench, same server, same railset
settings, same run.

One railwire.Server (RO, one numpy layer) serves both clients:
  C       `railwire bench --connect ... --read -s PAGE -q PAGES -n PAGES`: PAGES
          transfers in flight, as many as the batch has
  Python  one Railset.submit_batch of PAGES pages, then wait() until all done
Rounds alternate C, Python, C, ...; the medians give the ratio (target >= 0.9)
and the ns per page that submit_batch adds on top of railwire_submit_batch
(argument conversion from numpy arrays, checks, the handle list).

The C bench maps a fresh, untouched buffer in each run, so its READs also
pay the first-touch page faults of the target.  The Python "cold" figure
does the same (a fresh anonymous private mmap, as the C bench maps, registered
per round) and is the one the ratio uses; "warm" reuses one registered array, as an engine's KV pool
would; its C reference is one C bench run of WARM_PASSES x PAGES transfers
(the first pass cold, the rest on the then-touched buffer).

    PYTHONPATH=build/python python3 python/bench/batch_read.py --cli build/tools/railwire/railwire
"""
import argparse
import json
import mmap
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import railwire


def c_round(args, addr, passes=1):
    """GB/s of one C bench run of `passes` x PAGES transfers, PAGES in flight."""
    cmd = [args.cli, "bench", "--connect", "%s:%d" % addr, "--dialect", "ro", "--transport",
           args.transport, "--rails", str(args.rails), "--read", "-s", str(args.page_size),
           "-q", str(args.pages), "-n", str(args.pages * passes),
           "--span", str(args.pages * args.page_size), "--json", "--quiet"]
    if args.slice:
        cmd += ["--slice", str(args.slice)]
    if args.rail_depth:
        cmd += ["--rail-depth", str(args.rail_depth)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if p.returncode != 0:
        sys.exit("C bench failed: %s\n%s" % (" ".join(cmd), p.stderr.decode(errors="replace")))
    r = json.loads(p.stdout)["results"][0]
    if r["failed"] or r["transfers"] != args.pages * passes:
        sys.exit("C bench: %d failed, %d transfers" % (r["failed"], r["transfers"]))
    return r["gbps"]


def py_round(rs, mr, local, remote, args):
    """Returns (GB/s, submit_batch ns, ns inside railwire_submit_batch)."""
    t0 = time.perf_counter_ns()
    handles = rs.submit_batch(railwire.READ, mr, local, remote, args.page_size)
    t1 = time.perf_counter_ns()
    c_ns = rs._last_batch_c_ns
    left = len(handles)
    while left:
        done = rs.wait(timeout=30.0, max=args.pages)
        if not done:
            sys.exit("Python: no completion within 30 s")
        for c in done:
            if c.status:
                raise c.error
        left -= len(done)
    t2 = time.perf_counter_ns()
    return args.pages * args.page_size / (t2 - t0), t1 - t0, c_ns


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    default_cli = os.path.join(here, "..", "..", "build", "tools", "railwire", "railwire")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", default=os.environ.get("RAILWIRE_CLI", default_cli))
    ap.add_argument("--pages", type=int, default=4096)
    ap.add_argument("--page-size", type=int, default=64 << 10)
    ap.add_argument("--rails", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--warm-passes", type=int, default=5,
                    help="C bench passes per warm reference run (the first is cold)")
    ap.add_argument("--slice", type=int, default=0, help="striping slice (default: the library's)")
    ap.add_argument("--rail-depth", type=int, default=0, help="slices in flight per rail")
    ap.add_argument("--transport", default="tcp", choices=("auto", "tcp", "verbs"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    span = args.pages * args.page_size
    layer = np.empty(span, dtype=np.uint8)
    layer[:] = 0xA5                            # touched, so no read sees the zero page
    local_buf = np.zeros(span, dtype=np.uint8)
    offsets = np.arange(args.pages, dtype=np.uint64) * args.page_size  # the C bench's slots
    c_gbps, c_warm_gbps, py_gbps, warm_gbps, sub_ns, sub_c_ns = [], [], [], [], [], []
    with railwire.Server("ro", layers=[layer], transport=args.transport) as srv, \
            railwire.connect(*srv.address, rails=args.rails, dialect="ro", transport=args.transport,
                             slice_size=args.slice or None,
                             queue_depth=args.rail_depth or None) as rs:
        mr = rs.register(local_buf)
        py_round(rs, mr, offsets, offsets, args)  # warm-up: page faults, TCP windows
        for _ in range(args.rounds):
            c_gbps.append(c_round(args, srv.address))
            # untouched memory mapped exactly as the C bench maps its buffer
            cold = mmap.mmap(-1, span, flags=mmap.MAP_PRIVATE)
            with rs.register(cold) as cold_mr:
                g, s, c = py_round(rs, cold_mr, offsets, offsets, args)
            view = np.frombuffer(cold, dtype=np.uint8)
            ok = view[::4096].min() == 0xA5 == view[::4096].max()
            del view
            cold.close()
            if not ok:
                sys.exit("Python: the pages read differ from the layer")
            py_gbps.append(g)
            sub_ns.append(s)
            sub_c_ns.append(c)
            warm_gbps.append(py_round(rs, mr, offsets, offsets, args)[0])
            c_warm_gbps.append(c_round(args, srv.address, args.warm_passes))
        if not np.all(local_buf == 0xA5):
            sys.exit("Python: the pages read differ from the layer")
        transport = rs.transport
    res = {
        "pages": args.pages, "page_size": args.page_size, "rails": args.rails,
        "transport": transport, "rounds": args.rounds,
        "c_gbps_median": statistics.median(c_gbps), "py_gbps_median": statistics.median(py_gbps),
        "ratio": statistics.median(py_gbps) / statistics.median(c_gbps),
        "submit_batch_ns_per_page": statistics.median(sub_ns) / args.pages,
        "c_submit_batch_ns_per_page": statistics.median(sub_c_ns) / args.pages,
        "py_warm_gbps_median": statistics.median(warm_gbps),
        "c_warm_gbps_median": statistics.median(c_warm_gbps),
        "warm_ratio": statistics.median(warm_gbps) / statistics.median(c_warm_gbps),
        "c_warm_gbps": c_warm_gbps,
        "c_gbps": c_gbps, "py_gbps": py_gbps, "py_warm_gbps": warm_gbps,
    }
    res["added_ns_per_page"] = res["submit_batch_ns_per_page"] - res["c_submit_batch_ns_per_page"]
    if args.json:
        print(json.dumps(res))
    else:
        print("%d x %d KiB READ, %d %s rail(s), %d rounds (medians; GB/s = 1e9 bytes/s)"
              % (args.pages, args.page_size >> 10, args.rails, transport, args.rounds))
        print("  C bench, cold buffer   %7.3f GB/s   rounds: %s" % (
            res["c_gbps_median"], " ".join("%.2f" % g for g in c_gbps)))
        print("  Python, cold buffer    %7.3f GB/s   rounds: %s" % (
            res["py_gbps_median"], " ".join("%.2f" % g for g in py_gbps)))
        print("  ratio Python / C       %7.3f (target >= 0.9)" % res["ratio"])
        print("  C bench, %d passes     %7.3f GB/s   rounds: %s" % (
            args.warm_passes, res["c_warm_gbps_median"], " ".join("%.2f" % g for g in c_warm_gbps)))
        print("  Python, warm buffer    %7.3f GB/s   rounds: %s" % (
            res["py_warm_gbps_median"], " ".join("%.2f" % g for g in warm_gbps)))
        print("  ratio warm Python / C  %7.3f" % res["warm_ratio"])
        print("  submit_batch           %7.1f ns/page, of which railwire_submit_batch %.1f: "
              "the binding adds %.1f ns/page" % (res["submit_batch_ns_per_page"],
                                                 res["c_submit_batch_ns_per_page"],
                                                 res["added_ns_per_page"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
