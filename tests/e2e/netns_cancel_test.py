# SPDX-License-Identifier: MIT
"""Cancel, per-transfer deadlines and a flapping link under a stalled rail, in the network
namespaces of netns_test.py (its helpers build and remove them):
`railwire serve` in the server namespace, netns_cancel_client.py (the
railwire Python package) in the client namespace; once the client's healthy
run is done, nftables drops every packet of rail 0 and the client runs one
phase (see netns_cancel_client.py for what each asserts).

Skips (exit 77) when not root, when `ip`/`nft` or namespaces are missing, or
when the Python package is not importable.
usage: netns_cancel_test.py --railwire PATH --pythonpath DIR [-k NAME ...]
"""
import argparse
import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import netns_test as nt  # noqa: E402
from e2e_common import SKIP, check, run_tests  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PYPATH = None


def run_phase(phase, restore=False):
    nt.nft_reset()
    nt.link_up_all()
    s = nt.serve("rw")
    env = dict(os.environ, PYTHONPATH=PYPATH, RAILWIRE_LOG="error")
    cmd = ["ip", "netns", "exec", nt.NS_C, sys.executable,
           os.path.join(HERE, "netns_cancel_client.py"), "--connect", s.addr,
           "--local-addrs", "%s,%s" % (nt.c_addr(1), nt.c_addr(2)), "--phase", phase]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = p.stdout.readline()
        check(line.startswith("ready"), "client did not get ready: %r %s" % (line, p.stderr.read()
                                                                              if p.poll() is not None else ""))
        print("  " + line.strip())
        nt.fault_drop(0)
        p.stdin.write("go\n")
        p.stdin.flush()
        if restore:
            # the client's cue to give the stalled rail its link back
            line = p.stdout.readline()
            check(line.startswith("restore"), "client did not ask for the restore: %r %s" % (
                line, p.stderr.read() if p.poll() is not None else ""))
            print("  " + line.strip())
            nt.nft_reset()
            p.stdin.write("go\n")
            p.stdin.flush()
        out, err = p.communicate(timeout=120)
        check(p.returncode == 0 and out.startswith("ok"),
              "client failed (rc %s):\n%s\n%s\nserver log:\n%s" % (p.returncode, out, err[-4000:],
                                                                  s.log()[-3000:]))
        print("  " + out.strip())
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        s.close()
        nt.nft_reset()


def test_deadline_on_a_stalled_rail():
    run_phase("deadline")


def test_cancel_under_load_with_a_stalled_rail():
    run_phase("cancel")


def test_a_dead_rails_queued_write_never_lands_after_the_link_returns():
    run_phase("flap", restore=True)


def main():
    global PYPATH
    ap = argparse.ArgumentParser()
    ap.add_argument("--railwire", required=True)
    ap.add_argument("--pythonpath", required=True)
    ap.add_argument("-k", action="append")
    a = ap.parse_args()
    nt.RW = os.path.abspath(a.railwire)
    nt.N_RAILS = 2
    PYPATH = os.path.abspath(a.pythonpath)
    if os.geteuid() != 0:
        print("SKIP netns cancel tests: not root (they create network namespaces)")
        return SKIP
    for tool in ("ip", "nft"):
        if not shutil.which(tool):
            print("SKIP netns cancel tests: `%s` not found (install iproute2 and nftables)" % tool)
            return SKIP
    probe = subprocess.run([sys.executable, "-c", "import railwire, numpy"],
                           env=dict(os.environ, PYTHONPATH=PYPATH), capture_output=True)
    if probe.returncode != 0:
        print("SKIP netns cancel tests: the railwire Python package (and numpy) are not "
              "importable from %s" % PYPATH)
        return SKIP
    try:
        nt.setup()
    except Exception as e:  # noqa: BLE001
        nt.teardown()
        print("SKIP netns cancel tests: cannot build the namespaces: %s" % e)
        return SKIP
    atexit.register(nt.teardown)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    tests = [v for k, v in sorted(globals().items()) if k.startswith("test_") and callable(v)]
    with tempfile.TemporaryDirectory(prefix="rwt-netns-") as d:
        nt.TMP = d
        try:
            return run_tests(tests, a.k)
        finally:
            nt.teardown()


if __name__ == "__main__":
    sys.exit(main())
