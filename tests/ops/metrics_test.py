#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`railwire serve --metrics` and `railwire bench --metrics-dump`:

- the server's /metrics and the client's dump pass `promtool check metrics`,
  and every sample has HELP and TYPE lines;
- after a bench run the server's byte and request counters equal what the
  bench moved, and so does the client's dump;
- the HTTP listener's bounds: 405 (with Allow: GET) for POST and HEAD, 404
  for another path, 400 for a malformed request, 431 for a request over
  4 KiB, 503 past 8 connections; an idle client is closed within its 5 s
  while bench transfers keep being served;
- bad --metrics arguments and a port in use fail with a clear message;
- READ answers of 1 MiB leave `railwire serve` by reference to its arena
  by default, and copied with --copy-reads, as its counters say.

usage: metrics_test.py --cli BIN   (exit 77: promtool is missing)"""
import argparse
import re
import shutil
import socket
import subprocess
import sys
import time

import metrics_common as mc
from metrics_common import check

ap = argparse.ArgumentParser()
ap.add_argument("--cli", required=True)
cli = ap.parse_args().cli

if not shutil.which("promtool"):
    print("SKIP: promtool not found (Debian package prometheus; scripts/deps.sh installs it)")
    sys.exit(77)

TIMEOUT_S = 5.0   # METRICS_HTTP_TIMEOUT_MS
MAX_CONNS = 8     # METRICS_HTTP_MAX_CONNS


def every_sample_has_help_and_type(text, what):
    helps = set(re.findall(r"^# HELP (\S+) \S", text, re.M))
    types = set(re.findall(r"^# TYPE (\S+) (?:counter|gauge)$", text, re.M))
    names = set(re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]", text, re.M))
    check(names and names <= helps and names <= types,
          f"{what}: samples without HELP/TYPE: {sorted(names - (helps & types))}")


def test_exposition_and_counters(srv):
    text = mc.scrape(srv.metrics_port)
    mc.promtool_check(text, "the server's /metrics (idle)")
    every_sample_has_help_and_type(text, "server")
    check(mc.sample(text, "railwire_build_info") == 1, "railwire_build_info is not 1")
    check(mc.sample(text, "railwire_server_data_path_counted", {"transport": "tcp"}) == 1,
          "tcp server: railwire_server_data_path_counted is not 1")
    check(mc.sample(text, "railwire_server_registered_bytes") == 16 << 20,
          "registered bytes are not the 16 MiB arena")

    # The read first: the arena still holds the pattern --fill wrote.
    r = mc.bench(cli, srv.control, ["--dialect", "rw", "--read", "-s", "64K", "-n", "30",
                                    "--verify"])
    check(r.returncode == 0, f"bench --read exited {r.returncode}: {r.stderr[-400:]!r}")
    w = mc.bench(cli, srv.control, ["--dialect", "rw", "--write", "--rails", "2", "-s", "256K",
                                    "-n", "40", "--metrics-dump"])
    check(w.returncode == 0, f"bench --write exited {w.returncode}: {w.stderr[-400:]!r}")

    dump = w.stdout.decode()
    i = dump.find("# HELP")
    check(i >= 0, f"bench --metrics-dump printed no metrics: {dump[-400:]!r}")
    dump = dump[i:]
    mc.promtool_check(dump, "bench --metrics-dump")
    every_sample_has_help_and_type(dump, "client")
    wrote = sum(mc.sample(dump, "railwire_client_written_bytes_total", {"rail": str(k)}) or 0
                for k in range(2))
    check(wrote == 40 * 256 * 1024, f"client dump: written bytes {wrote}, expected {40 << 18}")
    check(mc.sample(dump, "railwire_client_rails", {"state": "up"}) == 2,
          "client dump: not 2 rails up")

    # The counters are read when a rail's answer is sent: the bench has
    # returned, so they are final.
    text = mc.scrape(srv.metrics_port)
    mc.promtool_check(text, "the server's /metrics (after bench)")
    got_w = mc.sample(text, "railwire_server_written_bytes_total", {"transport": "tcp"})
    got_r = mc.sample(text, "railwire_server_read_bytes_total", {"transport": "tcp"})
    check(got_w == 40 * 256 * 1024, f"server written bytes {got_w}, expected {40 << 18}")
    check(got_r == 30 * 64 * 1024, f"server read bytes {got_r}, expected {30 << 16}")
    reqs_r = mc.sample(text, "railwire_server_requests_total", {"op": "read"})
    check(reqs_r is not None and reqs_r >= 30, f"server READ requests {reqs_r} < 30")
    # the tcp queue budget: the default budget and share, a peak the READs
    # reached (answers are queued before the client takes them), nothing left
    budget = mc.sample(text, "railwire_server_queue_budget_bytes", {"transport": "tcp"})
    check(budget == 256 << 20, f"queue budget {budget}, expected the 256 MiB default")
    share = mc.sample(text, "railwire_server_queue_share_bytes", {"transport": "tcp"})
    check(share == 64 << 20, f"queue share {share}, expected the 64 MiB default")
    peak = mc.sample(text, "railwire_server_queued_peak_bytes", {"transport": "tcp"})
    check(peak is not None and 0 < peak <= budget, f"queued peak {peak}")
    queued = mc.sample(text, "railwire_server_queued_bytes", {"transport": "tcp"})
    check(queued is not None and queued <= peak, f"queued now {queued}, peak {peak}")
    opened = mc.sample(text, "railwire_server_sessions_opened_total")
    check(opened == 2, f"sessions opened {opened}, expected 2")
    check(mc.sample(text, "railwire_server_connections_accepted_total") == 2,
          "connections accepted is not 2")


def test_http_bounds(srv):
    p = srv.metrics_port
    resp = mc.raw_http(p, b"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")
    check(mc.status_of(resp) == 405 and b"\r\nAllow: GET\r\n" in resp,
          f"POST: expected 405 with Allow: GET, got {resp[:120]!r}")
    resp = mc.raw_http(p, b"HEAD /metrics HTTP/1.1\r\n\r\n")
    check(mc.status_of(resp) == 405, f"HEAD: expected 405, got {resp[:80]!r}")
    resp = mc.raw_http(p, b"GET /other HTTP/1.1\r\n\r\n")
    check(mc.status_of(resp) == 404, f"GET /other: expected 404, got {resp[:80]!r}")
    resp = mc.raw_http(p, b"GET /metricsX HTTP/1.1\r\n\r\n")
    check(mc.status_of(resp) == 404, f"GET /metricsX: expected 404, got {resp[:80]!r}")
    resp = mc.raw_http(p, b"GET /metrics?x=1 HTTP/1.0\r\n\r\n")
    check(mc.status_of(resp) == 200, f"GET /metrics?x=1: expected 200, got {resp[:80]!r}")
    for bad in (b"hello\r\n\r\n", b"GET /metrics\r\n\r\n", b"get /metrics HTTP/1.1\r\n\r\n",
                b"GET /metrics HTTP/2.0\r\n\r\n", b"GET /metr\0ics HTTP/1.1\r\n\r\n"):
        resp = mc.raw_http(p, bad)
        check(mc.status_of(resp) == 400, f"{bad!r}: expected 400, got {resp[:80]!r}")
    big = b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 5000 + b"\r\n\r\n"
    resp = mc.raw_http(p, big)
    check(mc.status_of(resp) == 431, f"a 5 KB request: expected 431, got {resp[:80]!r}")
    # One just under the cap is served.
    ok = b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 3900 + b"\r\n\r\n"
    resp = mc.raw_http(p, ok)
    check(mc.status_of(resp) == 200, f"a 3.9 KB request: expected 200, got {resp[:80]!r}")


def test_slow_clients(srv):
    """MAX_CONNS idle clients fill the listener: one more gets 503, bench
    transfers are served meanwhile, and the idle ones are closed by the
    server once their TIMEOUT_S has passed."""
    p = srv.metrics_port
    idle = []
    t0 = time.monotonic()
    for k in range(MAX_CONNS):
        s = socket.create_connection(("127.0.0.1", p), timeout=10)
        s.sendall(b"GET /met")  # a request that never ends
        idle.append(s)
        s.settimeout(0.05)
        try:
            early = s.recv(100)
        except socket.timeout:
            early = None
        check(early is None, f"idle client {k} was answered at once: {early!r}")
    time.sleep(0.3)  # let the listener accept them all
    resp = mc.raw_http(p, b"GET /metrics HTTP/1.1\r\n\r\n")
    check(mc.status_of(resp) == 503, f"connection {MAX_CONNS + 1}: expected 503, got {resp[:80]!r}")
    b = mc.bench(cli, srv.control, ["--dialect", "rw", "--write", "-s", "256K", "-n", "20"],
                 timeout=60)
    check(b.returncode == 0, f"bench during stalled scrapes exited {b.returncode}")
    # The bench was served while every idle client still held its slot.
    for k, s in enumerate(idle):
        try:
            still = s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except (BlockingIOError, TimeoutError):
            still = None
        check(still is None, f"idle client {k} was closed or answered ({still!r}) before the "
                             f"bench during stalled scrapes finished (stalled?)")
    for s in idle:
        s.settimeout(TIMEOUT_S + 5)
        try:
            got = s.recv(100)
        except socket.timeout:
            got = None
        except ConnectionResetError:
            got = b""
        waited = time.monotonic() - t0
        check(got == b"", f"an idle client was not closed by the server ({got!r} after {waited:.1f} s)")
        check(waited >= TIMEOUT_S - 0.5, f"an idle client was closed after {waited:.1f} s, before its timeout")
        s.close()
    text = mc.scrape(p)
    check(mc.sample(text, "railwire_server_sessions_opened_total") is not None,
          "no scrape after the idle clients were closed")


def test_bad_arguments():
    r = subprocess.run([cli, "serve", "--dialect", "rw", "--listen", "127.0.0.1:0", "--arena",
                        "1M", "--metrics", "no-port"], capture_output=True, timeout=30)
    check(r.returncode == 2 and b"--metrics" in r.stderr,
          f"--metrics no-port: exit {r.returncode}, {r.stderr[-200:]!r}")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    r = subprocess.run([cli, "serve", "--dialect", "rw", "--listen", "127.0.0.1:0", "--arena",
                        "1M", "--metrics", f"127.0.0.1:{port}"], capture_output=True,
                       env=mc.tool_env(), timeout=30)
    busy.close()
    check(r.returncode == 1 and f"--metrics 127.0.0.1:{port}: cannot listen".encode() in r.stderr
          and b"in use" in r.stderr,
          f"--metrics on a port in use: exit {r.returncode}, {r.stderr[-200:]!r}")
    r = subprocess.run([cli, "bench", "--loopback", "--json", "--metrics-dump"],
                       capture_output=True, timeout=30)
    check(r.returncode == 2 and b"--metrics-dump" in r.stderr,
          f"bench --json --metrics-dump: exit {r.returncode}, {r.stderr[-200:]!r}")


def test_zero_copy_reads():
    for extra, by_ref in (((), 20 << 20), (("--copy-reads",), 0)):
        srv = mc.Serve(cli, extra)
        try:
            r = mc.bench(cli, srv.control, ["--dialect", "rw", "--read", "--rails", "2", "-s",
                                            "1M", "-n", "20", "--verify"])
            check(r.returncode == 0, f"bench --read {extra}: exit {r.returncode}: "
                                     f"{r.stderr[-400:]!r}")
            text = mc.scrape(srv.metrics_port)
            got = mc.sample(text, "railwire_server_read_bytes_total", {"transport": "tcp"})
            ref = mc.sample(text, "railwire_server_read_bytes_by_reference_total",
                            {"transport": "tcp"})
            check(got == 20 << 20, f"serve {extra}: read bytes {got}, expected {20 << 20}")
            check(ref == by_ref, f"serve {extra}: read bytes by reference {ref}, expected {by_ref}")
        finally:
            check(srv.stop() == 0, f"serve {extra} exited badly after SIGTERM")


srv = mc.Serve(cli)
try:
    for t in (test_exposition_and_counters, test_http_bounds, test_slow_clients):
        print("---", t.__name__, flush=True)
        t(srv)
finally:
    rc = srv.stop()
check(rc == 0, f"serve exited {rc} after SIGTERM")
print("--- test_bad_arguments", flush=True)
test_bad_arguments()
print("--- test_zero_copy_reads", flush=True)
test_zero_copy_reads()
if mc.failures:
    print(f"metrics_test: {len(mc.failures)} check(s) failed")
    sys.exit(1)
print("metrics_test: all checks passed")
