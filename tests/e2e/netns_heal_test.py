# SPDX-License-Identifier: MIT
"""Healing end to end, in the network namespaces of netns_test.py (a client
and a server namespace, one veth pair for a separate control link and one
per rail).  Faults are put where the field puts them:

  - the control connection on rail 0's own link, and that link black-holed
    (control included), then restored: no transfer fails, rail 1 never goes
    down, rail 0 heals;
  - rail 1 black-holed for 3 s, then restored: back to 2 live rails;
  - a 1-rail railset whose rail is reset for half a second: nothing fails;
  - the server killed and restarted on the same port (RO layers from
    files): the client heals; the server gone for good: every transfer fails
    with all-rails-down within the all-down bound;
  - rail 1's link flapping (down/up every 500 ms for 10 s): heal attempts
    stay within the damping bound, every transfer is verified.

With --measure N it also measures the time from a link's return to its
rail carrying data again (N trials, p50/p99) and the throughput while a
rail heals, as a ratio of the 2-rail figure in the same run.

Skips (exit 77) when not root or when `ip`/`nft` or namespaces are missing.
usage: netns_heal_test.py --railwire PATH [-k NAME ...] [--measure N]
"""
import argparse
import atexit
import calendar
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
import netns_test as nt  # noqa: E402  (namespaces, nftables, serve helpers)
from e2e_common import SKIP, Serve, check, run_tests  # noqa: E402

OP_TIMEOUT = 2500
# Client-side bounds used by every run here: short, so a heal attempt that
# hits a black hole gives up quickly.
TIMEOUTS = ["--op-timeout", str(OP_TIMEOUT), "--connect-timeout", "1500", "--io-timeout", "3000"]
LOG_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3})Z info  heal: rail (\d+) \(.*\) is "
                    r"back in service", re.M)


def bench(args, timeout=180):
    """Runs bench --json in the client namespace with info logging; returns
    (exit code, JSON or None, stderr)."""
    import json
    cmd = ["ip", "netns", "exec", nt.NS_C, "env", "RAILWIRE_LOG=info", nt.RW, "bench", "--json",
           "--quiet"] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    j = None
    if p.stdout.strip():
        j = json.loads(p.stdout)
    return p.returncode, j, p.stderr


def client_args(addr, dialect, op, rails=2, extra=()):
    a = ["--connect", addr, "--dialect", dialect, "--rails", str(rails), op, "--verify",
         "--transport", "tcp", "-s", "1M", "-q", "8"] + TIMEOUTS
    for r in range(rails):
        a += ["--local-addr", nt.c_addr(r + 1)]
    a += ["--span", "8M" if dialect == "ro" else "64M"]
    return a + list(extra)


def layer_args():
    args = []
    for l in range(2):
        path = os.path.join(nt.TMP, "layer%d.bin" % l)
        if not os.path.exists(path):
            rc, _, err = nt.peer(["pattern", "--out", path, "--size", str(8 << 20), "--layer",
                                  str(l)], timeout=300)
            check(rc == 0, err)
        args += ["--layer", path]
    return args


def serve_on_rail_links(port=0):
    """A server whose only NICs are its rails: the control port listens on
    both rail addresses (the client reaches it through rail 0's link)."""
    args = ["--dialect", "ro", "--transport", "tcp", "--io-timeout", "3000"]
    for r in range(nt.N_RAILS):
        args += ["--listen", "%s:%d" % (nt.s_addr(r + 1), port)]
    for r in range(nt.N_RAILS):
        args += ["--rail-addr", nt.s_addr(r + 1)]
    return Serve(nt.RW, args + layer_args(), netns=nt.NS_S)


def serve_ctrl_link(port=0, dialect="ro", tls=()):
    args = ["--dialect", dialect, "--transport", "tcp", "--io-timeout", "3000",
            "--listen", "%s:%d" % (nt.s_addr(0), port)] + list(tls)
    for r in range(nt.N_RAILS):
        args += ["--rail-addr", nt.s_addr(r + 1)]
    if dialect == "rw":
        args += ["--arena", "64M", "--fill"]
    else:
        args += layer_args()
    return Serve(nt.RW, args, netns=nt.NS_S)


def blackhole(rail):
    nt.fault_drop(rail)


def at(seconds, fn, *args):
    t = threading.Timer(seconds, fn, args=args)
    t.daemon = True
    t.start()
    return t


def heal_times(err):
    """(rail, unix time) of every 'is back in service' line of a bench log."""
    out = []
    for m in LOG_TS.finditer(err):
        t = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) + int(m.group(2)) / 1e3
        out.append((int(m.group(3)), t))
    return out


def fresh():
    nt.nft_reset()
    nt.link_up_all()


def check_clean(j, err, what):
    check(j is not None, "%s: no JSON; stderr:\n%s" % (what, err[-3000:]))
    check(j["failed"] == 0 and j["verify"] == "ok",
          "%s: failed %s, verify %s, first error %r\n%s" % (
              what, j["failed"], j["verify"], j["first_error"], err[-3000:]))
    check(j["results"][0]["transfers"] > 0, "%s: nothing moved" % what)


def test_control_on_rail0_link_blackholed_then_restored():
    fresh()
    s = serve_on_rail_links()
    try:
        timers = [at(2.0, blackhole, 0), at(12.0, nt.nft_reset)]
        rc, j, err = bench(client_args(s.addr, "ro", "--read", extra=["-D", "24"]))
        for t in timers:
            t.cancel()
        check_clean(j, err, "control on rail 0's link")
        st = j["rail_stats"]
        check(st[1]["state"] == "up" and st[1]["last_down_reason"] is None,
              "rail 1 went down although its link was fine: %s" % st[1])
        check(st[0]["state"] == "up" and st[0]["heals"] >= 1,
              "rail 0 was not healed after its link came back: %s" % st[0])
        check(st[0]["last_down_reason"] is not None, "rail 0 never went down: %s" % st[0])
        print("  rail 0: %d heal(s) in %d attempt(s), session %d; rail 1: session %d, "
              "control_up %s; %d transfers, 0 failed" % (
                  st[0]["heals"], st[0]["heal_attempts"], st[0]["session"], st[1]["session"],
                  st[1]["control_up"], j["results"][0]["transfers"]), flush=True)
    finally:
        s.close()
        fresh()


def test_rail1_blackholed_3s_comes_back(tls=()):
    fresh()
    s = serve_ctrl_link(tls=tls)
    try:
        restored = {}

        def restore():
            nt.nft_reset()
            restored["t"] = time.time()
        timers = [at(1.5, blackhole, 1), at(4.5, restore)]
        rc, j, err = bench(client_args(s.addr, "ro", "--read", extra=["-D", "12"] + list(tls)))
        for t in timers:
            t.cancel()
        check_clean(j, err, "rail 1 black-holed for 3 s" + (" (TLS)" if tls else ""))
        if tls:
            check(all(x["tls"] in ("user", "kernel") for x in j["rail_stats"]), j["rail_stats"])
        st = j["rail_stats"]
        check(all(x["state"] == "up" for x in st), "not back to 2 live rails: %s" % st)
        check(st[1]["heals"] >= 1, "rail 1 was never healed: %s" % st[1])
        back = [t for r, t in heal_times(err) if r == 1]
        check(back, "no heal of rail 1 in the log")
        print("  rail 1 back %.2f s after its link returned (%d heal attempt(s))%s" % (
            back[-1] - restored["t"], st[1]["heal_attempts"], " over TLS" if tls else ""),
            flush=True)
    finally:
        s.close()
        fresh()


def test_tls_rail1_blackholed_3s_comes_back():
    # The same under TLS 1.3 (PSK): the heal authenticates again.
    test_rail1_blackholed_3s_comes_back(tls=("--tls-psk", nt.psk_file()))


def test_one_rail_reset_for_half_a_second_loses_nothing():
    fresh()
    s = serve_ctrl_link(dialect="rw")
    try:
        timers = [at(1.5, nt.fault_reset, 0), at(2.0, nt.nft_reset)]
        rc, j, err = bench(client_args(s.addr, "rw", "--write", rails=1, extra=["-D", "6"]))
        for t in timers:
            t.cancel()
        check_clean(j, err, "1 rail reset for 0.5 s")
        st = j["rail_stats"]
        check(st[0]["state"] == "up" and st[0]["heals"] >= 1 and st[0]["last_down_reason"],
              "the rail did not go down and heal: %s" % st[0])
    finally:
        s.close()
        fresh()


def test_server_restart_heals_and_server_gone_fails_within_bound():
    fresh()
    s = serve_ctrl_link()
    port = s.port
    holder = {"s": s}
    try:
        def kill():
            holder["s"].stop(signal.SIGKILL)

        def restart():
            holder["s"] = serve_ctrl_link(port)
        timers = [at(2.0, kill), at(4.0, restart)]
        rc, j, err = bench(client_args(s.addr, "ro", "--read",
                                       extra=["-D", "12", "--all-down-timeout", "15000"]))
        for t in timers:
            t.cancel()
        check_clean(j, err, "server restart")
        st = j["rail_stats"]
        check(all(x["state"] == "up" and x["heals"] >= 1 for x in st),
              "the rails did not heal after the restart: %s" % st)
        print("  after the restart: heals %s, sessions %s" % (
            [x["heals"] for x in st], [x["session"] for x in st]), flush=True)

        # Gone for good: everything fails with all-rails-down, within the bound.
        bound = 3000
        killed = {}

        def kill_for_good():
            killed["t"] = time.monotonic()
            holder["s"].stop(signal.SIGKILL)
        t = at(2.0, kill_for_good)
        t0 = time.monotonic()
        rc, j, err = bench(client_args(holder["s"].addr, "ro", "--read",
                                       extra=["-D", "30", "--all-down-timeout", str(bound)]))
        t.cancel()
        ended = time.monotonic()
        check(rc == 1 and j is not None and j["failed"] > 0, "nothing failed: %s" % j)
        check("all-rails-down" in j["first_error"], "first error: %s" % j["first_error"])
        check(all(x["state"] == "down" for x in j["rail_stats"]), j["rail_stats"])
        took = ended - killed["t"]
        # Bound as documented: one op timeout for the rails to be declared
        # dead (here they are reset at once) plus the all-down bound; the
        # generous limit is only there to catch a hang.
        check(took < 30, "bench took %.1f s after the kill: a hang?" % took)
        print("  server gone: %d transfer(s) failed with all-rails-down; bench ended %.2f s after "
              "the kill (all-down bound %.1f s); run %.1f s" % (
                  j["failed"], took, bound / 1e3, ended - t0), flush=True)
    finally:
        holder["s"].close()
        fresh()


def test_flapping_link_is_damped():
    fresh()
    s = serve_ctrl_link()
    stop = threading.Event()

    def flap():
        # Each down phase takes rail 1's link down and, as a NIC losing its
        # link does to an RDMA QP, resets its connections; each up phase
        # brings both back.
        down = False
        end = time.monotonic() + 10
        while not stop.is_set() and time.monotonic() < end:
            if not down:
                nt.fault_reset(1)
                time.sleep(0.1)  # the next packet of each connection meets the reset
                nt.sh("ip", "link", "set", nt.veth(2, "c"), "down", ns=nt.NS_C)
                time.sleep(0.4)
            else:
                nt.sh("ip", "link", "set", nt.veth(2, "c"), "up", ns=nt.NS_C)
                nt.nft_reset()
                time.sleep(0.5)
            down = not down
        nt.nft_reset()
        nt.sh("ip", "link", "set", nt.veth(2, "c"), "up", ns=nt.NS_C)
    try:
        t = threading.Thread(target=flap)
        t0 = threading.Timer(1.5, t.start)
        t0.start()
        rc, j, err = bench(client_args(s.addr, "ro", "--read", extra=["-D", "18"]))
        stop.set()
        t0.cancel()
        if t.is_alive():
            t.join()
        check_clean(j, err, "flapping link")
        st = j["rail_stats"]
        # Damping: every attempt that fails, and every heal followed by a loss
        # within the stable window (10 s), doubles the delay (100 ms start,
        # jitter 0.5-1x), so T seconds of trouble allow at most about
        # log2(T / 0.05) + 1 attempts: 10 for the ~17 s here.
        check(st[1]["heal_attempts"] <= 10,
              "%d heal attempts in 18 s: damping does not work" % st[1]["heal_attempts"])
        check(st[0]["last_down_reason"] is None, "rail 0 went down: %s" % st[0])
        check(st[1]["heal_attempts"] >= 2 and st[1]["last_down_reason"],
              "the flapping never took rail 1 down, so damping was not exercised: %s" % st[1])
        print("  flapping: rail 1 %d heal attempt(s), %d heal(s), state %s" % (
            st[1]["heal_attempts"], st[1]["heals"], st[1]["state"]), flush=True)
    finally:
        stop.set()
        s.close()
        fresh()


def measure(n):
    """Heal latency over n trials and throughput while a rail heals."""
    fresh()
    s = serve_ctrl_link()
    lat = []
    try:
        for k in range(n):
            restored = {}

            def restore():
                nt.nft_reset()
                restored["t"] = time.time()
            timers = [at(1.0, blackhole, 1), at(4.0, restore)]
            rc, j, err = bench(client_args(s.addr, "ro", "--read", extra=["-D", "8"]))
            for t in timers:
                t.cancel()
            back = [t for r, t in heal_times(err) if r == 1 and t >= restored.get("t", 0)]
            if j and j["failed"] == 0 and back:
                lat.append(back[0] - restored["t"])
            print("  trial %d: %s" % (k, "%.3f s" % lat[-1] if back else "no heal"), flush=True)
        # Throughput while a rail heals vs the 2-rail figure, same run.
        rc, base, _ = bench(client_args(s.addr, "ro", "--read", extra=["-D", "6"]))
        timers = [at(0.5, blackhole, 1), at(3.0, nt.nft_reset)]
        rc, heal, _ = bench(client_args(s.addr, "ro", "--read", extra=["-D", "6"]))
        for t in timers:
            t.cancel()
    finally:
        s.close()
        fresh()
    lat.sort()
    if lat:
        p50 = lat[len(lat) // 2]
        p99 = lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))]
        print("heal latency over %d trials: p50 %.3f s, p99 %.3f s (min %.3f, max %.3f)" % (
            len(lat), p50, p99, lat[0], lat[-1]))
    g0 = base["results"][0]["gbps"]
    g1 = heal["results"][0]["gbps"]
    print("throughput: 2 rails %.3f GB/s; with rail 1 black-holed 2.5 s and healing %.3f GB/s: "
          "ratio %.2f (failed %d)" % (g0, g1, g1 / g0 if g0 else 0, heal["failed"]))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--railwire", required=True)
    ap.add_argument("-k", action="append")
    ap.add_argument("--measure", type=int, default=0)
    a = ap.parse_args()
    nt.RW = os.path.abspath(a.railwire)
    nt.N_RAILS = 2
    if os.geteuid() != 0:
        print("SKIP netns heal tests: not root (they create network namespaces)")
        return SKIP
    for tool in ("ip", "nft"):
        if not shutil.which(tool):
            print("SKIP netns heal tests: `%s` not found (install iproute2 and nftables)" % tool)
            return SKIP
    try:
        nt.setup()
    except Exception as e:  # noqa: BLE001
        nt.teardown()
        print("SKIP netns heal tests: cannot build the namespaces: %s" % e)
        return SKIP
    atexit.register(nt.teardown)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    with tempfile.TemporaryDirectory(prefix="rwt-heal-") as d:
        nt.TMP = d
        try:
            if a.measure:
                return measure(a.measure)
            tests = [v for k, v in sorted(globals().items())
                     if k.startswith("test_") and callable(v)]
            return run_tests(tests, a.k)
        finally:
            nt.teardown()


if __name__ == "__main__":
    sys.exit(main())
