#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A real Prometheus (Debian's `prometheus` package) scrapes
`railwire serve --metrics`: the test starts both on loopback (free ports,
Prometheus' storage in a temporary directory, scrape_interval 1s), runs
`railwire bench --write` against the server, and asks Prometheus' HTTP API
(/api/v1/query) for railwire_server_written_bytes_total until it equals the
bytes the bench wrote.  Every wait is bounded.

usage: prometheus_test.py --cli BIN   (exit 77: prometheus is missing)"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import metrics_common as mc
from metrics_common import check

ap = argparse.ArgumentParser()
ap.add_argument("--cli", required=True)
cli = ap.parse_args().cli

prom_bin = shutil.which("prometheus")
if not prom_bin:
    print("SKIP: prometheus not found (Debian package prometheus; scripts/deps.sh installs it)")
    sys.exit(77)

SIZE, ITERS = 1 << 20, 24
WROTE = SIZE * ITERS


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(port, path, timeout=5):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.status, r.read().decode()


def query(port, expr):
    """The instant vector of expr as a list of (labels, float value)."""
    _, body = api(port, "/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    doc = json.loads(body)
    if doc.get("status") != "success":
        raise RuntimeError(f"query {expr}: {body[:300]}")
    return [(r["metric"], float(r["value"][1])) for r in doc["data"]["result"]]


def wait_for(what, fn, seconds):
    """Calls fn until it returns a true value or `seconds` pass; returns the
    last value (None after an exception: not up yet, connection refused)."""
    deadline = time.monotonic() + seconds
    last, err = None, None
    while time.monotonic() < deadline:
        try:
            last, err = fn(), None
        except Exception as e:
            last, err = None, e
        if last:
            return last
        time.sleep(0.5)
    print(f"waited {seconds} s for {what}: last {last!r} {err or ''}")
    return last


srv = mc.Serve(cli)
tmp = tempfile.mkdtemp(prefix="railwire-prom-")
prom = None
try:
    pport = free_port()
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: railwire\n    static_configs:\n"
                f"      - targets: ['127.0.0.1:{srv.metrics_port}']\n")
    log = open(os.path.join(tmp, "prometheus.log"), "wb")
    prom = subprocess.Popen([prom_bin, f"--config.file={cfg}",
                             f"--storage.tsdb.path={os.path.join(tmp, 'data')}",
                             f"--web.listen-address=127.0.0.1:{pport}"],
                            stdout=log, stderr=subprocess.STDOUT)
    ready = wait_for("Prometheus to be ready", lambda: api(pport, "/-/ready")[0] == 200, 60)
    check(ready, "Prometheus did not become ready within 60 s")
    up = wait_for("the first scrape", lambda: [v for _, v in query(pport, 'up{job="railwire"}')
                                                if v == 1], 30)
    check(up, "Prometheus never scraped railwire serve successfully (up != 1)")

    b = mc.bench(cli, srv.control, ["--dialect", "rw", "--write", "--rails", "2", "-s",
                                    str(SIZE), "-n", str(ITERS)])
    check(b.returncode == 0, f"bench exited {b.returncode}: {b.stderr[-400:]!r}")

    expr = 'railwire_server_written_bytes_total{job="railwire",transport="tcp"}'
    got = wait_for(f"{expr} == {WROTE}",
                   lambda: [v for _, v in query(pport, expr) if v == WROTE], 30)
    check(got, f"Prometheus never saw {expr} == {WROTE}: {query(pport, expr)}")
    opened = query(pport, 'railwire_server_sessions_opened_total{job="railwire"}')
    check(opened and opened[0][1] >= 1, f"sessions opened as Prometheus sees them: {opened}")
    info = query(pport, "railwire_build_info")
    check(info and info[0][0].get("version"), f"railwire_build_info: {info}")
    if got:
        print(f"Prometheus: {expr} = {WROTE}")
finally:
    if prom:
        prom.terminate()
        try:
            prom.wait(timeout=30)
        except subprocess.TimeoutExpired:
            prom.kill()
            prom.wait()
        if mc.failures:
            with open(os.path.join(tmp, "prometheus.log"), "rb") as f:
                print("prometheus log (tail):", f.read()[-2000:].decode(errors="replace"))
    rc = srv.stop()
    shutil.rmtree(tmp, ignore_errors=True)
check(rc == 0, f"serve exited {rc} after SIGTERM")
if mc.failures:
    print(f"prometheus_test: {len(mc.failures)} check(s) failed")
    sys.exit(1)
print("prometheus_test: all checks passed")
