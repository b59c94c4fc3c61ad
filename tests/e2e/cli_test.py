# SPDX-License-Identifier: MIT
"""End-to-end tests of the `railwire` command over real loopback sockets:
`railwire serve` and `railwire bench` as separate processes, each against a
handshake peer written from spec/WIRE.md alone (wire_peer.py), --loopback
runs with --verify, --json, errors and signals.

usage: cli_test.py --railwire PATH [-k NAME ...]
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # keep the source tree clean
from e2e_common import Serve, bench_json, check, peer, run, run_tests, Skip, WIRE_PEER

RW = None          # path of the railwire binary
TMP = None         # scratch directory
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (info|warn|error|debug) ", re.M)


def pattern_file(name, size, layer):
    path = os.path.join(TMP, name)
    rc, _, err = peer(["pattern", "--out", path, "--size", str(size), "--layer", str(layer)])
    check(rc == 0, "pattern: %s" % err)
    return path


# --- railwire serve: arguments -------------------------------------------------

def test_serve_rejects_bad_arguments():
    empty = os.path.join(TMP, "empty.bin")
    open(empty, "wb").close()
    good = pattern_file("good.bin", 4096, 0)
    cases = [
        (["--dialect", "ro", "--listen", "127.0.0.1:0", "--layer", os.path.join(TMP, "missing")],
         1, "No such file"),
        (["--dialect", "ro", "--listen", "127.0.0.1:0", "--layer", empty], 1, "is empty"),
        (["--dialect", "ro", "--listen", "127.0.0.1:0", "--layer", TMP], 1, "not a regular file"),
        (["--dialect", "rw", "--listen", "127.0.0.1:0", "--arena", "12Q"], 2, "bad arena size"),
        (["--dialect", "rw", "--listen", "127.0.0.1:0", "--arena", "0"], 2, "must not be 0"),
        (["--dialect", "rw", "--listen", "127.0.0.1:0", "--arena", "99999999999T"], 2, "too large"),
        (["--dialect", "rw", "--listen", "localhost", "--arena", "1M"], 2, "HOST:PORT"),
        (["--dialect", "rw", "--listen", "127.0.0.1:70000", "--arena", "1M"], 2, "port"),
        (["--dialect", "rw", "--listen", "::1:7000", "--arena", "1M"], 2, "brackets"),
        (["--dialect", "rw", "--listen", "no.such.host.invalid:7000", "--arena", "1M"], 2,
         "bad listen address"),
        (["--dialect", "xx", "--listen", "127.0.0.1:0", "--arena", "1M"], 2, "bad dialect"),
        (["--dialect", "ro", "--listen", "127.0.0.1:0", "--arena", "1M"], 2, "--layer"),
        (["--dialect", "rw", "--listen", "127.0.0.1:0", "--layer", good], 2, "--arena"),
        (["--dialect", "rw", "--listen", "127.0.0.1:0", "--arena", "1M", "--transport", "ib"], 2,
         "bad transport"),
        (["--dialect", "rw", "--arena", "1M"], 2, "required"),
        (["--dialect", "rw", "--listen", "127.0.0.1:0", "--arena", "2M", "--max-bytes", "1M"], 1,
         "max_bytes"),
        (["--dialect", "rw", "--listen", "127.0.0.1:0", "--arena", "1M", "--max-rails", "0"], 2,
         "--max-rails"),
    ]
    for args, want_rc, want_msg in cases:
        rc, out, err = run([RW, "serve"] + args, timeout=20)
        check(rc == want_rc, "serve %s: exit %d, expected %d (%s)" % (args, rc, want_rc, err))
        check(want_msg in err, "serve %s: %r not in %r" % (args, want_msg, err))


def test_serve_help():
    rc, out, _ = run([RW, "serve", "--help"])
    check(rc == 0 and "--dialect" in out and "--max-clients" in out, "serve --help: %s" % out)
    rc, out, _ = run([RW, "bench", "--help"])
    check(rc == 0 and "--loopback" in out and "--verify" in out, "bench --help: %s" % out)


def test_serve_port_in_use_fails_cleanly():
    s = Serve(RW, ["--dialect", "rw", "--listen", "127.0.0.1:0", "--arena", "64K"])
    try:
        rc, _, err = run([RW, "serve", "--dialect", "rw", "--listen", s.addr, "--arena", "64K"],
                         timeout=20)
        check(rc == 1 and "error" in err, "second serve on %s: exit %d: %s" % (s.addr, rc, err))
    finally:
        s.close()


# --- railwire serve against the WIRE.md-only peer ------------------------------

def test_wire_peer_handshake_ro():
    l0 = pattern_file("ro0.bin", 100000, 0)
    l1 = pattern_file("ro1.bin", 5003, 1)
    s = Serve(RW, ["--dialect", "ro", "--listen", "127.0.0.1:0", "--layer", l0, "--layer", l1,
                   "--io-timeout", "1500"])
    try:
        for rails in (1, 2, 8):
            # The frozen handshake alone: the params decode per WIRE.md and the
            # server acks STATUS_OK (it does not wait for the tcp rails, which
            # this client never opens).
            rc, out, err = peer(["client", "--connect", s.addr, "--dialect", "ro", "--rails",
                                 str(rails), "--expect-layers", "2"])
            j = json.loads(out)
            check(rc == 0 and j["result"] == "ok" and j["ack"] == 0, "rails %d: %s" % (rails, out))
            check(len(j["rails"]) == rails, "rails %d: %s" % (rails, out))
            for r in j["rails"]:
                check(len(r["layers"]) == 2, "layer count: %s" % out)
                check(r["gid"] == "00000000000000000000ffff7f000001",
                      "tcp GID should be ::ffff:127.0.0.1: %s" % r["gid"])
            # With the tcp rails opened as well: ack 0, and a READ of layer 0
            # over every rail returns the file's bytes.
            rc, out, err = peer(["client", "--connect", s.addr, "--dialect", "ro", "--rails",
                                 str(rails), "--expect-layers", "2", "--tcp-rails", "--read",
                                 "4096"])
            j = json.loads(out)
            check(rc == 0 and j["result"] == "ok" and j["ack"] == 0, "rails %d: %s" % (rails, out))
        # RO: a rail count of 9 is rejected by closing: peer-rejected.
        rc, out, _ = peer(["client", "--connect", s.addr, "--dialect", "ro", "--rails", "9"])
        check(json.loads(out)["result"] == "peer-rejected", "9 rails: %s" % out)
        log = s.log()
        check("asked for 9 rails" in log, "server log does not say why it rejected:\n" + log)
        check(TS.search(log), "server log lines carry no timestamp:\n" + log)
    finally:
        s.close()


def test_wire_peer_handshake_rw():
    s = Serve(RW, ["--dialect", "rw", "--listen", "127.0.0.1:0", "--arena", "1M", "--fill",
                   "--io-timeout", "1500", "--max-rails", "16"])
    try:
        for rails in (1, 3, 16):
            # WIRE.md alone: params, ids, STATUS_OK.
            rc, out, _ = peer(["client", "--connect", s.addr, "--dialect", "rw", "--rails",
                               str(rails)])
            j = json.loads(out)
            check(rc == 0 and j["result"] == "ok" and j["ack"] == 0, "rails %d: %s" % (rails, out))
            rc, out, _ = peer(["client", "--connect", s.addr, "--dialect", "rw", "--rails",
                               str(rails), "--tcp-rails", "--read", "65536"])
            j = json.loads(out)
            check(rc == 0 and j["result"] == "ok", "rails %d: %s" % (rails, out))
            check(len(j["rails"]) == rails and all("rkey" in r for r in j["rails"]), out)
        # Over the rail cap: rejected by closing before the params.
        rc, out, _ = peer(["client", "--connect", s.addr, "--dialect", "rw", "--rails", "17"])
        check(json.loads(out)["result"] == "peer-rejected", "17 rails: %s" % out)
        check("rejecting client" in s.log(), "no rejection reason in the log:\n" + s.log())
    finally:
        s.close()


def test_wire_peer_closing_control_keeps_its_rails_for_the_linger():
    # WIRE.md lets a client close the control connection right after the
    # ack.  Its tcp rails keep working for the session linger (here 3 s),
    # then the server releases the session and says why.
    s = Serve(RW, ["--dialect", "rw", "--listen", "127.0.0.1:0", "--arena", "1M", "--fill",
                   "--session-linger", "3000"])
    try:
        rc, out, _ = peer(["client", "--connect", s.addr, "--dialect", "rw", "--rails", "2",
                           "--tcp-rails", "--read", "4096", "--close-after-ack", "6"], timeout=60)
        j = json.loads(out)
        check(rc == 0 and j["result"] == "ok", out)
        # Reading went on well past the close, and stopped at the linger.
        check(j["reads_after_close"] >= 10, "too few reads after the close: %s" % out)
        after = j["read_error_after"]
        check(after is not None and 2.5 <= after <= 5.5,
              "the rails should have been released about 3 s after the close: %s" % out)
        log = s.log()
        check("linger of 3000 ms ran out" in log,
              "the server log does not say why the session was released:\n" + log)
    finally:
        s.close()


def test_serve_listens_on_several_addresses():
    s = Serve(RW, ["--dialect", "rw", "--listen", "127.0.0.1:0", "--listen", "127.0.0.2:0",
                   "--arena", "1M", "--fill"])
    try:
        for host in ("127.0.0.1", "127.0.0.2"):
            rc, j, err = bench_json(RW, ["--connect", "%s:%d" % (host, s.port), "--rails", "2",
                                         "--read", "-s", "64K", "-n", "50", "--verify",
                                         "--transport", "tcp", "--dialect", "rw"])
            check(rc == 0 and j["verify"] == "ok" and j["failed"] == 0,
                  "through %s: %s %s" % (host, j, err[-500:]))
        # Mixed ports are refused with a clear message.
        rc, out, err = run([RW, "serve", "--dialect", "rw", "--arena", "1M", "--listen",
                            "127.0.0.1:7001", "--listen", "127.0.0.2:7002"])
        check(rc == 2 and "every --listen must use the port" in err, err)
    finally:
        s.close()


def test_serve_logs_sessions_and_stops_on_signals():
    for sig in (signal.SIGINT, signal.SIGTERM):
        s = Serve(RW, ["--dialect", "rw", "--listen", "127.0.0.1:0", "--arena", "4M",
                       "--max-rails", "2"])
        try:
            rc, j, err = bench_json(RW, ["--connect", s.addr, "--rails", "2", "--write", "-s",
                                         "64K", "-n", "20"], want_rc=0)
            rc, j, err = bench_json(RW, ["--connect", s.addr, "--rails", "3", "--dialect", "rw",
                                         "-n", "1"], want_rc=1)
            check("peer-rejected" in err, "over-cap bench: %s" % err)
            # a client still connected when the server stops
            holder = subprocess.Popen([RW, "bench", "--connect", s.addr, "--dialect", "rw",
                                       "-D", "30", "-s", "4K", "--quiet"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)
            rc = s.stop(sig)
            check(rc == 0, "serve exit %s after %s" % (rc, sig))
            hrc = holder.wait(timeout=60)
            check(hrc == 1, "bench whose server stopped should fail (exit 1), got %d" % hrc)
            log = s.log()
            check(re.search(r"client 127\.0\.0\.1:\d+: 2 tcp rail\(s\) up", log), log)
            check(re.search(r"rejecting client 127\.0\.0\.1:\d+: .*max_rails|rejecting client.*rail",
                            log), "no reason for the rejection:\n" + log)
            check("received, stopping" in log, log)
            check(TS.search(log), "no timestamps:\n" + log)
        finally:
            s.close()


# --- serve + bench as separate processes --------------------------------------

def test_serve_bench_ro_verify():
    l0 = pattern_file("v0.bin", 1 << 20, 0)
    l1 = pattern_file("v1.bin", 1 << 20, 1)
    s = Serve(RW, ["--dialect", "ro", "--listen", "127.0.0.1:0", "--layer", l0, "--layer", l1])
    try:
        for rails in (1, 2, 4):
            rc, j, err = bench_json(RW, ["--connect", s.addr, "--rails", str(rails), "--read",
                                         "--verify", "-s", "128K", "-q", "8", "-n", "200",
                                         "--span", "1M"], want_rc=0)
            check(j["verify"] == "ok" and j["failed"] == 0, j)
            check(j["results"][0]["transfers"] == 200, j)
            check(len(j["rail_stats"]) == rails, j)
    finally:
        s.close()


def test_bench_verify_detects_wrong_data():
    # A layer that does not hold the pattern: --verify must fail and say where.
    path = os.path.join(TMP, "zeros.bin")
    with open(path, "wb") as f:
        f.write(bytes(65536))
    s = Serve(RW, ["--dialect", "ro", "--listen", "127.0.0.1:0", "--layer", path])
    try:
        rc, j, err = bench_json(RW, ["--connect", s.addr, "--read", "--verify", "-s", "4K", "-n",
                                     "10", "--span", "64K"], want_rc=1)
        check(j["verify"] == "mismatch", j)
        check(re.search(r"mismatch in transfer #\d+ .*byte \d+ \(remote offset \d+\)",
                        j["first_error"]), j["first_error"])
    finally:
        s.close()


def test_serve_bench_rw_verify():
    s = Serve(RW, ["--dialect", "rw", "--listen", "127.0.0.1:0", "--arena", "32M", "--fill"])
    try:
        rc, j, _ = bench_json(RW, ["--connect", s.addr, "--rails", "2", "--read", "--verify",
                                   "--dialect", "rw", "-s", "1M", "-n", "100", "--span", "32M"],
                              want_rc=0)
        check(j["verify"] == "ok", j)
        for rails in (1, 4, 8):
            rc, j, _ = bench_json(RW, ["--connect", s.addr, "--rails", str(rails), "--write",
                                       "--verify", "-s", "3M", "-q", "4", "-n", "40", "--span",
                                       "32M"], want_rc=0)
            check(j["verify"] == "ok" and j["results"][0]["transfers"] == 40, j)
        # after those writes the arena no longer holds the fill pattern there
        rc, j, _ = bench_json(RW, ["--connect", s.addr, "--read", "--verify", "--dialect", "rw",
                                   "-s", "1M", "-n", "4", "--span", "32M"], want_rc=1)
        check(j["verify"] == "mismatch", j)
    finally:
        s.close()


def test_serve_cuda_arena_bench_verify():
    """`railwire serve --cuda 0`: the RW arena in (stand-in) CUDA memory,
    staged by the tcp server through a 64 KiB pinned pool; bench verifies
    READs of the filled arena and WRITE+READ round trips."""
    standin = os.environ.get("RAILWIRE_TEST_CUDA_STANDIN", "")
    if not standin:
        raise Skip("the stand-in CUDA driver was not built")
    old = os.environ.get("RAILWIRE_CUDA_LIBRARY")
    os.environ["RAILWIRE_CUDA_LIBRARY"] = standin
    try:
        s = Serve(RW, ["--dialect", "rw", "--listen", "127.0.0.1:0", "--transport", "tcp",
                       "--arena", "8M", "--fill", "--cuda", "0", "--staging", "64K"])
    finally:
        if old is None:
            del os.environ["RAILWIRE_CUDA_LIBRARY"]
        else:
            os.environ["RAILWIRE_CUDA_LIBRARY"] = old
    try:
        check("path staged" in s.log(), s.log())
        rc, j, _ = bench_json(RW, ["--connect", s.addr, "--rails", "2", "--read", "--verify",
                                   "--dialect", "rw", "--transport", "tcp", "-s", "1M",
                                   "-n", "20", "--span", "8M"], want_rc=0)
        check(j["verify"] == "ok", j)
        rc, j, _ = bench_json(RW, ["--connect", s.addr, "--rails", "2", "--write", "--verify",
                                   "--transport", "tcp", "-s", "300K", "-q", "4", "-n", "16",
                                   "--span", "8M"], want_rc=0)
        check(j["verify"] == "ok", j)
    finally:
        s.close()
    rc, out, err = run([RW, "serve", "--dialect", "ro", "--listen", "127.0.0.1:0", "--layer",
                        "/dev/null", "--cuda", "0"])
    check(rc == 2 and "--cuda" in err, (rc, err))
    env_old = os.environ.get("RAILWIRE_CUDA_LIBRARY")
    os.environ["RAILWIRE_CUDA_LIBRARY"] = "/nonexistent/libcuda-cli.so.1"
    try:
        rc, out, err = run([RW, "serve", "--dialect", "rw", "--listen", "127.0.0.1:0",
                            "--arena", "1M", "--cuda", "0"])
    finally:
        if env_old is None:
            del os.environ["RAILWIRE_CUDA_LIBRARY"]
        else:
            os.environ["RAILWIRE_CUDA_LIBRARY"] = env_old
    check(rc == 1 and "/nonexistent/libcuda-cli.so.1" in err, (rc, err))


def test_ipv6_listen_and_connect():
    try:
        t = socket.socket(socket.AF_INET6)
        t.bind(("::1", 0))
        t.close()
    except OSError:
        raise Skip("no IPv6 loopback here")
    s = Serve(RW, ["--dialect", "rw", "--listen", "[::1]:0", "--arena", "8M", "--fill",
                   "--rail-addr", "::1"])
    try:
        check(s.host == "[::1]", s.host)
        rc, j, _ = bench_json(RW, ["--connect", s.addr, "--rails", "2", "--read", "--verify",
                                   "--dialect", "rw", "-s", "256K", "-n", "50", "--span", "8M"],
                              want_rc=0)
        check(j["verify"] == "ok" and j["target"].startswith("[::1]:"), j)
    finally:
        s.close()


# --- bench against the WIRE.md-only server ------------------------------------

def fake_server(dialect, behaviour):
    p = subprocess.Popen([sys.executable, WIRE_PEER, "server", "--dialect", dialect,
                          "--behaviour", behaviour, "--layers", "3", "--timeout", "30"],
                         stdout=subprocess.PIPE, text=True)
    addr = json.loads(p.stdout.readline())["listening"]
    return p, addr


def test_bench_against_wire_peer_server():
    # (behaviour, what bench must report)
    cases = [("reject", "peer-rejected"), ("truncate", "truncated"),
             ("mismatch", "rail-count-mismatch"),
             # ack 1: refused, before any rail is dialled
             ("refuse", "refused"),
             # ack 0: the handshake completes, then the fake rails (a
             # loopback port where nothing listens) cannot be reached
             ("ok", "connect")]
    for dialect in ("ro", "rw"):
        for behaviour, want in cases:
            p, addr = fake_server(dialect, behaviour)
            try:
                rc, out, err = run([RW, "bench", "--connect", addr, "--dialect", dialect,
                                    "--rails", "2", "--transport", "tcp", "-n", "1",
                                    "--connect-timeout", "3000"], timeout=60)
                check(rc == 1, "%s/%s: exit %d\n%s" % (dialect, behaviour, rc, err))
                m = re.search(r"^error: connect to \S+ \(%s, 2 rails\): (\S+):" % dialect, err, re.M)
                check(m and m.group(1) == want, "%s/%s: want %s:\n%s" % (dialect, behaviour, want, err))
                rec = json.loads(p.stdout.readline())
                check(rec["rails_asked"] == 2, rec)
                if behaviour in ("ok", "refuse"):
                    # the client's second message as WIRE.md frames it
                    check(rec.get("echoed") == 2 and len(rec["client_ids"]) == 2, rec)
            finally:
                p.kill()
                p.wait()
                p.stdout.close()


# --- bench --loopback ---------------------------------------------------------

def test_bench_loopback_main_job():
    for args in (["--rails", "2", "--write", "--verify"], ["--rails", "2", "--read", "--verify"],
                 ["--rails", "1", "--read", "--verify", "-s", "64K", "-q", "16"],
                 ["--rails", "8", "--write", "--verify", "-s", "5M", "-q", "3", "-n", "30"],
                 ["--rails", "4", "--read", "--dialect", "rw", "--verify", "-s", "1", "-n", "500"]):
        rc, j, err = bench_json(RW, ["--loopback", "--transport", "tcp"] + args, want_rc=0)
        check(j["transport"] == "tcp" and j["loopback"] is True, j)
        check(j["verify"] == "ok" and j["failed"] == 0, j)
        r = j["results"][0]
        check(r["transfers"] > 0 and r["gbps"] > 0 and r["p99_us"] >= r["p50_us"] > 0, r)
        check(len(r["rail_gbps"]) == j["rails"], r)
        check(all(st["state"] == "up" for st in j["rail_stats"]), j)


def test_bench_table_output():
    rc, out, err = run([RW, "bench", "--loopback", "--rails", "2", "--write", "--verify", "-n",
                        "100", "--transport", "tcp"])
    check(rc == 0, err)
    for needle in ("transport tcp", "registration", "GB/s", "transfers/s", "p50 us", "p99 us",
                   "rail0 GB/s", "rail1 GB/s", "verify: ok"):
        check(needle in out, "%r not in the table:\n%s" % (needle, out))


def test_bench_sweep_is_bounded():
    rc, j, err = bench_json(RW, ["--loopback", "-a", "-D", "0.05", "-q", "2", "--rails", "2",
                                 "--transport", "tcp"], want_rc=0, timeout=180)
    sizes = [r["size"] for r in j["results"]]
    check(sizes == [4096 << i for i in range(15)], sizes)


def test_bench_duration_and_progress():
    rc, out, err = run([RW, "bench", "--loopback", "-D", "2.5", "-s", "64K", "--transport", "tcp"])
    check(rc == 0, err)
    check(re.search(r"\[\s+\d+\.\d s\] 64 KiB read: \d+ done, [\d.]+ GB/s", err),
          "no progress line:\n" + err)


def test_bench_warmup_runs_untimed_transfers_first():
    # 4 KiB READs are one slice each: the rails moved the warm-up's 40 and
    # the timed 100, while the result counts only the 100
    rc, j, err = bench_json(RW, ["--loopback", "--transport", "tcp", "--rails", "2", "--read",
                                 "--verify", "-s", "4K", "-q", "4", "-n", "100", "--warmup", "40"],
                            want_rc=0)
    check(j["warmup"] == 40 and j["verify"] == "ok" and j["failed"] == 0, j)
    check(j["results"][0]["transfers"] == 100, j["results"][0])
    check(sum(st["slices"] for st in j["rail_stats"]) == 140, j["rail_stats"])
    rc, j, err = bench_json(RW, ["--loopback", "--transport", "tcp", "-s", "4K", "-n", "10"],
                            want_rc=0)
    check(j["warmup"] == 0 and sum(st["slices"] for st in j["rail_stats"]) == 10, j)


def test_bench_usage_errors():
    for args in (["--rails", "9", "--loopback"], ["--rails", "256", "--loopback", "--dialect", "rw"],
                 ["--read", "--write", "--loopback"], [],
                 ["--loopback", "--connect", "127.0.0.1:1"], ["--loopback", "-s", "0"],
                 ["--loopback", "-s", "12X"], ["--connect", "nohost"], ["--loopback", "-D", "-1"],
                 ["--loopback", "--busy-poll-us", "1000001"], ["--loopback", "--busy-poll-us", "-5"],
                 ["--loopback", "--warmup", "x"], ["--loopback", "--warmup", "-1"]):
        rc, out, err = run([RW, "bench"] + args, timeout=20)
        check(rc == 2 and "error" in err, "bench %s: exit %d: %s" % (args, rc, err))


def test_bench_and_serve_take_busy_poll_us():
    # 0 (sleep at once) and a long window both move and verify every byte
    for us in ("0", "20000"):
        rc, out, err = run([RW, "bench", "--loopback", "--transport", "tcp", "-s", "4K", "-q", "32",
                            "-n", "2000", "--verify", "--busy-poll-us", us, "--json"], timeout=60)
        check(rc == 0, "bench --busy-poll-us %s: exit %d: %s" % (us, rc, err))
        j = json.loads(out)
        check(j["verify"] == "ok" and j["results"][0]["transfers"] == 2000, j)
    rc, out, err = run([RW, "serve", "--dialect", "rw", "--arena", "1M", "--busy-poll-us", "x"],
                       timeout=20)
    check(rc == 2 and "--busy-poll-us" in err, "serve --busy-poll-us x: exit %d: %s" % (rc, err))


def test_bench_connect_refused_is_reported():
    t = socket.socket()
    t.bind(("127.0.0.1", 0))          # bound, not listening: connect is refused
    port = t.getsockname()[1]
    try:
        rc, out, err = run([RW, "bench", "--connect", "127.0.0.1:%d" % port, "-n", "1"], timeout=30)
        check(rc == 1 and re.search(r"error: connect to .*: connect:", err), err)
    finally:
        t.close()


def main():
    global RW, TMP
    ap = argparse.ArgumentParser()
    ap.add_argument("--railwire", required=True)
    ap.add_argument("-k", action="append", help="run only tests whose name contains this")
    a = ap.parse_args()
    RW = os.path.abspath(a.railwire)
    os.environ.setdefault("RAILWIRE_TRANSPORT", "tcp")
    tests = [v for k, v in sorted(globals().items()) if k.startswith("test_") and callable(v)]
    with tempfile.TemporaryDirectory(prefix="rwt-cli-") as d:
        TMP = d
        return run_tests(tests, a.k)


if __name__ == "__main__":
    sys.exit(main())
