#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`railwire serve` and `railwire bench` with RAILWIRE_LOG_FORMAT=json: every
log line they write is one JSON object, and a session's lines carry the
client's address as "peer".  Without the variable, serve's log lines keep
their text format ("2026-01-01T12:00:00.123Z info  server: ...").

The stop notice ("railwire serve: SIGTERM received, ...") goes through the
same log sink, so it is a JSON line too.

usage: serve_json_log_test.py --cli BIN"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--cli", required=True)
cli = ap.parse_args().cli
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def serve_and_bench(fmt):
    env = dict(os.environ, RAILWIRE_TRANSPORT="tcp")
    env.pop("RAILWIRE_LOG", None)
    env.pop("RAILWIRE_LOG_FORMAT", None)
    if fmt:
        env["RAILWIRE_LOG_FORMAT"] = fmt
    srv = subprocess.Popen([cli, "serve", "--dialect", "rw", "--listen", "127.0.0.1:0",
                            "--arena", "4M", "--fill"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    try:
        first = srv.stdout.readline().decode()
        m = re.match(r"listening on (\S+)", first)
        check(m is not None, f"serve did not start: {first!r}")
        if not m:
            return b"", b""
        b = subprocess.run([cli, "bench", "--connect", m.group(1), "--dialect", "rw", "--rails", "2", "--read",
                            "-s", "64K", "-n", "20", "--verify", "--json", "-v"],
                           env=env, capture_output=True, timeout=60)
        check(b.returncode == 0, f"bench exited {b.returncode}: {b.stderr[-500:]!r}")
        time.sleep(0.2)  # let the server log the session's end
        srv.send_signal(signal.SIGTERM)
        _, err = srv.communicate(timeout=30)
        check(srv.returncode == 0, f"serve exited {srv.returncode} after SIGTERM")
        return err, b.stderr
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()


srv_err, bench_err = serve_and_bench("json")
for who, err in (("serve", srv_err), ("bench", bench_err)):
    objs = []
    for raw in err.splitlines():
        try:
            objs.append(json.loads(raw.decode("utf-8")))
        except (ValueError, UnicodeDecodeError) as e:
            check(False, f"{who}: not a JSON line ({e}): {raw!r}")
    check(len(objs) >= 3, f"{who}: only {len(objs)} JSON log lines")
    for o in objs:
        check({"time", "level", "message"} <= o.keys(), f"{who}: fields missing in {o}")
    if who == "serve":
        sess = [o for o in objs if "connected" in o["message"]]
        check(len(sess) >= 1, "serve: no 'client ... connected' line")
        for o in sess:
            check(o.get("component") == "server" and re.fullmatch(r"127\.0\.0\.1:\d+", o.get("peer", "")),
                  f"serve: session line without component/peer: {o}")
    print(f"{who}: {len(objs)} JSON log lines")

srv_err, _ = serve_and_bench(None)
text = [l for l in srv_err.decode().splitlines() if not l.startswith("railwire serve: ")]
check(len(text) >= 3, f"text: only {len(text)} log lines")
for l in text:
    check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (error|warn |info |debug) \S.*", l),
          f"text format changed: {l!r}")

print("serve_json_log_test:", "FAILED" if failures else "ok")
sys.exit(1 if failures else 0)
