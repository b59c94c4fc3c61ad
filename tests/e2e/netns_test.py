# SPDX-License-Identifier: MIT
"""Fault injection end to end, in network namespaces this script creates
(and removes): a client namespace and a server namespace joined by one veth
pair for the control connection and one per rail, each with its own 198.18.x
addresses (used only inside these namespaces).  `railwire serve` runs in the
server namespace, `railwire bench --verify` in the client namespace, and
nftables injects the faults mid-run:

  - a rail's connection reset (nft `reject with tcp reset`),
  - a rail silently dropping every packet (nft `drop`),
  - a rail's link taken down (`ip link set ... down`),
  - every rail dead at once,
  - a dead address (SYNs dropped): connect times out.

Skips (exit 77) when not root or when `ip`/`nft` or namespaces are missing.
usage: netns_test.py --railwire PATH [--rails N] [-k NAME ...]
"""
import argparse
import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # keep the source tree clean
from e2e_common import Serve, SKIP, bench_json, check, peer, run, run_tests

RW = None
N_RAILS = 2
TAG = "%d" % (os.getpid() % 100000)
NS_S = "rwt-s" + TAG
NS_C = "rwt-c" + TAG
TMP = None


def sh(*args, ns=None, check_rc=True):
    cmd = list(args)
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check_rc and p.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), p.stderr.strip()))
    return p


def c_addr(k):
    return "198.18.%d.1" % k


def s_addr(k):
    return "198.18.%d.2" % k


def veth(k, side):
    # pair 0: control; pair k >= 1: rail k-1.  Names <= 15 characters.
    return "rwt%s%s%d" % (TAG, side, k)


def teardown():
    for ns in (NS_S, NS_C):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def setup():
    teardown()
    sh("ip", "netns", "add", NS_S)
    sh("ip", "netns", "add", NS_C)
    for ns in (NS_S, NS_C):
        sh("ip", "link", "set", "lo", "up", ns=ns)
    for k in range(N_RAILS + 1):
        sh("ip", "link", "add", veth(k, "c"), "type", "veth", "peer", "name", veth(k, "s"))
        sh("ip", "link", "set", veth(k, "c"), "netns", NS_C)
        sh("ip", "link", "set", veth(k, "s"), "netns", NS_S)
        sh("ip", "addr", "add", c_addr(k) + "/24", "dev", veth(k, "c"), ns=NS_C)
        sh("ip", "addr", "add", s_addr(k) + "/24", "dev", veth(k, "s"), ns=NS_S)
        sh("ip", "link", "set", veth(k, "c"), "up", ns=NS_C)
        sh("ip", "link", "set", veth(k, "s"), "up", ns=NS_S)
    nft_reset()


def nft_reset():
    sh("nft", "flush", "ruleset", ns=NS_S)
    sh("nft", "add", "table", "inet", "rwt", ns=NS_S)
    sh("nft", "add chain inet rwt in { type filter hook input priority 0; policy accept; }", ns=NS_S)
    sh("nft", "add chain inet rwt out { type filter hook output priority 0; policy accept; }",
       ns=NS_S)


def nft(rule):
    sh("nft", "add rule inet rwt " + rule, ns=NS_S)


def fault_reset(rail):
    # every packet from that rail's client address is answered with a RST
    nft("in ip saddr %s tcp flags != rst reject with tcp reset" % c_addr(rail + 1))


def fault_drop(rail):
    nft("in ip saddr %s drop" % c_addr(rail + 1))
    nft("out ip daddr %s drop" % c_addr(rail + 1))


def fault_link_down(rail):
    sh("ip", "link", "set", veth(rail + 1, "c"), "down", ns=NS_C)


def link_up_all():
    for k in range(N_RAILS + 1):
        sh("ip", "link", "set", veth(k, "c"), "up", ns=NS_C)


def psk_file():
    """A PSK file (mode 0600) for the TLS variants: one identity, 32 random bytes."""
    path = os.path.join(TMP, "fleet.psk")
    if not os.path.exists(path):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("netns:%s\n" % os.urandom(32).hex())
    return path


def serve(dialect, tls=False):
    args = ["--dialect", dialect, "--listen", s_addr(0) + ":0", "--transport", "tcp"]
    if tls:
        args += ["--tls-psk", psk_file()]
    for r in range(N_RAILS):
        args += ["--rail-addr", s_addr(r + 1)]
    if dialect == "rw":
        args += ["--arena", "64M", "--fill"]
    else:
        for l in range(2):
            path = os.path.join(TMP, "layer%d.bin" % l)
            if not os.path.exists(path):
                rc, _, err = peer(["pattern", "--out", path, "--size", str(8 << 20), "--layer",
                                   str(l)], timeout=300)
                check(rc == 0, err)
            args += ["--layer", path]
    return Serve(RW, args, netns=NS_S)


def bench_args(s, dialect, op, extra=()):
    a = ["--connect", s.addr, "--dialect", dialect, "--rails", str(N_RAILS), op, "--verify",
         "--transport", "tcp", "--op-timeout", "2500", "-s", "1M", "-q", "8"]
    for r in range(N_RAILS):
        a += ["--local-addr", c_addr(r + 1)]
    a += ["--span", "8M" if dialect == "ro" else "64M"]
    return a + list(extra)


def run_with_fault(dialect, op, fault, rail, seconds=6.0, at=1.5, want_rc=0, tls=False):
    """Runs bench for `seconds` and injects `fault` on `rail` after `at` s
    (with tls: the server and the bench on TLS 1.3 with a PSK)."""
    nft_reset()
    link_up_all()
    s = serve(dialect, tls)
    try:
        timer = threading.Timer(at, fault, args=(rail,))
        timer.start()
        try:
            extra = ["-D", str(seconds)] + (["--tls-psk", psk_file()] if tls else [])
            rc, j, err = bench_json(RW, bench_args(s, dialect, op, extra),
                                    timeout=120, netns=NS_C, want_rc=want_rc)
        except AssertionError as e:
            raise AssertionError("%s\nserver log (last 6000 bytes):\n%s" % (e, s.log()[-6000:]))
        finally:
            timer.cancel()
            timer.join()
        return j, err, s.log()
    finally:
        s.close()
        nft_reset()
        link_up_all()


def check_survived(j, rail, what):
    check(j is not None, what + ": no JSON")
    check(j["failed"] == 0 and j["verify"] == "ok", "%s: %s" % (what, j))
    r = j["results"][0]
    check(r["transfers"] > 0, "%s: nothing moved: %s" % (what, r))
    st = j["rail_stats"]
    check(st[rail]["state"] == "down", "%s: rail %d still up: %s" % (what, rail, st))
    check(all(x["state"] == "up" for i, x in enumerate(st) if i != rail),
          "%s: another rail went down: %s" % (what, st))
    print("  %s: %d transfers ok, %.2f GB/s; rail %d down (%s), %d slices reissued" % (
        what, r["transfers"], r["gbps"], rail, st[rail]["down_reason"],
        st[rail]["reissued"]), flush=True)


def test_rail_reset_mid_run_write():
    j, err, _ = run_with_fault("rw", "--write", fault_reset, 1)
    check_survived(j, 1, "RW write, rail 1 reset")


def test_rail_reset_mid_run_read():
    j, err, _ = run_with_fault("ro", "--read", fault_reset, 0)
    check_survived(j, 0, "RO read, rail 0 reset")


def test_tls_rail_reset_mid_run_read():
    j, err, _ = run_with_fault("ro", "--read", fault_reset, 0, tls=True)
    check_survived(j, 0, "TLS: RO read, rail 0 reset")
    check(all(x["tls"] in ("user", "kernel") for x in j["rail_stats"]), j["rail_stats"])


def test_tls_rail_blackhole_mid_run_write():
    j, err, _ = run_with_fault("rw", "--write", fault_drop, 1, tls=True)
    check_survived(j, 1, "TLS: RW write, rail 1 dropping")
    check(all(x["tls"] in ("user", "kernel") for x in j["rail_stats"]), j["rail_stats"])


# A relay for rail 1's connections (in the client's namespace, reached
# through an nft redirect) that flips one byte of the server's TLS stream
# once, past FLIP_AT bytes; argv: listen port.
FLIP_PROXY = r'''
import socket, struct, sys, threading
FLIP_AT = 300000
flipped = [False]
lock = threading.Lock()
def pump(a, b, flip):
    n = 0
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            if flip:
                with lock:
                    if not flipped[0] and n + len(d) > FLIP_AT:
                        i = max(0, FLIP_AT - n)
                        d = d[:i] + bytes([d[i] ^ 0x20]) + d[i + 1:]
                        flipped[0] = True
                        print("flipped", flush=True)
            n += len(d)
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("0.0.0.0", int(sys.argv[1])))
ls.listen(64)
print("ready", flush=True)
while True:
    c, _ = ls.accept()
    dst = c.getsockopt(socket.SOL_IP, 80, 16)  # SO_ORIGINAL_DST
    port, ip = struct.unpack("!2xH4s8x", dst)
    u = socket.socket()
    u.setsockopt(socket.SOL_SOCKET, 36, 0x42)  # SO_MARK: not redirected again
    u.connect((socket.inet_ntoa(ip), port))
    threading.Thread(target=pump, args=(u, c, True), daemon=True).start()
    threading.Thread(target=pump, args=(c, u, False), daemon=True).start()
'''


def test_tls_flipped_byte_kills_the_rail_not_the_data():
    port = 47000 + os.getpid() % 1000
    sh("nft", "add", "table", "ip", "rwflip", ns=NS_C)
    sh("nft", "add chain ip rwflip out { type nat hook output priority -100; }", ns=NS_C)
    sh("nft", "add rule ip rwflip out ip daddr %s meta mark != 0x42 tcp dport != %d "
       "redirect to :%d" % (s_addr(2), port, port), ns=NS_C)
    proxy = subprocess.Popen(["ip", "netns", "exec", NS_C, sys.executable, "-c", FLIP_PROXY,
                              str(port)], stdout=subprocess.PIPE, text=True)
    try:
        check(proxy.stdout.readline().strip() == "ready", "the flipping relay did not start")
        j, err, log = run_with_fault("ro", "--read", lambda r: None, 1, seconds=5.0, tls=True)
        check(j is not None and j["failed"] == 0 and j["verify"] == "ok",
              "a flipped byte got through or failed transfers: %s" % j)
        st = j["rail_stats"][1]
        check(st["last_down_reason"] is not None or st["reissued"] > 0 or st["heals"] > 0,
              "rail 1 never died: %s" % st)
        check("TLS" in err or "TLS" in log, "no TLS error logged:\n%s\n%s" % (err[-2000:],
                                                                             log[-2000:]))
        proxy.kill()
        check("flipped" in proxy.stdout.read(), "the relay never flipped a byte")
        print("  flipped byte: rail 1 %s, %d reissued, %d heal(s); %d transfers verified" % (
            st["last_down_reason"], st["reissued"], st["heals"], j["results"][0]["transfers"]),
            flush=True)
    finally:
        proxy.kill()
        proxy.wait()
        sh("nft", "delete", "table", "ip", "rwflip", ns=NS_C, check_rc=False)


def test_rail_drop_mid_run_read():
    j, err, _ = run_with_fault("rw", "--read", fault_drop, 1)
    check_survived(j, 1, "RW read, rail 1 dropping")


def test_rail_drop_mid_run_write():
    j, err, _ = run_with_fault("rw", "--write", fault_drop, 0)
    check_survived(j, 0, "RW write, rail 0 dropping")


def test_rail_link_down_mid_run():
    j, err, _ = run_with_fault("ro", "--read", fault_link_down, 1)
    check_survived(j, 1, "RO read, rail 1 link down")


def test_all_rails_dead_fails_every_transfer():
    def kill_all(_):
        for r in range(N_RAILS):
            fault_drop(r)
    j, err, _ = run_with_fault("rw", "--read", kill_all, 0, seconds=6.0, want_rc=1)
    check(j is not None, "no JSON: " + err)
    check(j["failed"] > 0, "no transfer failed with every rail dead: %s" % j)
    check(all(x["state"] == "down" for x in j["rail_stats"]), j["rail_stats"])
    check(j["first_error"], j)
    # every transfer accounted for: none is left hanging and none succeeded
    # after the rails died (the run ended by itself, within the timeout)
    print("  every rail dead: %d ok before, %d failed; first error: %s" % (
        j["results"][0]["transfers"], j["failed"], j["first_error"]), flush=True)


def test_dead_address_connect_times_out():
    nft_reset()
    nft("in tcp dport 7999 drop")
    try:
        t0 = time.monotonic()
        rc, out, err = run([RW, "bench", "--connect", s_addr(0) + ":7999", "--transport", "tcp",
                            "--connect-timeout", "1000", "-n", "1"], timeout=60, netns=NS_C)
        check(rc == 1, "exit %d: %s" % (rc, err))
        check("error: connect to" in err and ": timeout:" in err, err)
        print("  dead address: bench gave up after %.1f s: %s" % (
            time.monotonic() - t0, err.strip().splitlines()[-1]), flush=True)
    finally:
        nft_reset()


def main():
    global RW, N_RAILS, TMP
    ap = argparse.ArgumentParser()
    ap.add_argument("--railwire", required=True)
    ap.add_argument("--rails", type=int, default=2)
    ap.add_argument("-k", action="append")
    a = ap.parse_args()
    RW = os.path.abspath(a.railwire)
    N_RAILS = a.rails
    if os.geteuid() != 0:
        print("SKIP netns fault tests: not root (they create network namespaces)")
        return SKIP
    for tool in ("ip", "nft"):
        if not shutil.which(tool):
            print("SKIP netns fault tests: `%s` not found (install iproute2 and nftables)" % tool)
            return SKIP
    try:
        setup()
    except Exception as e:  # noqa: BLE001
        teardown()
        print("SKIP netns fault tests: cannot build the namespaces: %s" % e)
        return SKIP
    atexit.register(teardown)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    tests = [v for k, v in sorted(globals().items()) if k.startswith("test_") and callable(v)]
    with tempfile.TemporaryDirectory(prefix="rwt-netns-") as d:
        TMP = d
        try:
            return run_tests(tests, a.k)
        finally:
            teardown()


if __name__ == "__main__":
    sys.exit(main())
