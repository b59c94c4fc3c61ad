# SPDX-License-Identifier: MIT
"""Helpers shared by the Python-driven end-to-end suites: a tiny test runner
that prints one line per test and the closing 'N passed, N failed' line, and
process helpers for `railwire serve` / `railwire bench` / wire_peer.py."""
import json
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
WIRE_PEER = os.path.join(HERE, "wire_peer.py")
SKIP = 77


class Skip(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def run_tests(tests, only=None):
    """Runs each test function; returns the exit status (0, 1)."""
    passed = failed = skipped = 0
    for t in tests:
        name = t.__name__
        if only and not any(o in name for o in only):
            continue
        t0 = time.monotonic()
        try:
            t()
        except Skip as e:
            skipped += 1
            print("SKIP %s: %s" % (name, e), flush=True)
            continue
        except Exception as e:  # noqa: BLE001 - report and go on
            failed += 1
            print("FAIL %s: %s" % (name, e), flush=True)
            traceback.print_exc(file=sys.stdout)
            continue
        passed += 1
        print("PASS %s (%.1f s)" % (name, time.monotonic() - t0), flush=True)
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    print(line, flush=True)
    return 1 if failed else 0


class Serve:
    """A `railwire serve` child process; waits for its 'listening on' line."""

    def __init__(self, railwire, args, netns=None, timeout=20):
        cmd = [railwire, "serve"] + args
        if netns:
            cmd = ["ip", "netns", "exec", netns] + cmd
        self.errpath = "/tmp/rwt-serve-%d-%d.log" % (os.getpid(), int(time.monotonic() * 1e6))
        self.err = open(self.errpath, "w+")
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.err, text=True)
        line = self.p.stdout.readline()
        m = re.match(r"listening on (\S+):(\d+) ", line)
        if not m:
            self.stop()
            raise AssertionError("serve did not start: %r; log:\n%s" % (line, self.log()))
        self.host, self.port = m.group(1), int(m.group(2))
        self.addr = "%s:%d" % (self.host, self.port)

    def log(self):
        self.err.flush()
        with open(self.errpath) as f:
            return f.read()

    def stop(self, sig=None, timeout=20):
        """Stops the server (SIGTERM by default) and returns its exit code."""
        import signal
        if self.p.poll() is None:
            self.p.send_signal(sig or signal.SIGTERM)
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            rc = None
        self.p.stdout.close()
        return rc

    def close(self):
        self.stop()
        self.err.close()
        try:
            os.unlink(self.errpath)
        except OSError:
            pass


def run(cmd, timeout=120, netns=None):
    """Runs cmd; returns (exit code, stdout, stderr).  A hang past `timeout`
    is a test failure."""
    if netns:
        cmd = ["ip", "netns", "exec", netns] + cmd
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError("hung (no exit within %d s): %s" % (timeout, " ".join(cmd)))
    return p.returncode, p.stdout, p.stderr


def bench_json(railwire, args, timeout=120, netns=None, want_rc=None):
    rc, out, err = run([railwire, "bench", "--json", "--quiet"] + args, timeout, netns)
    if want_rc is not None:
        check(rc == want_rc, "bench %s: exit %d, expected %d\nstdout: %s\nstderr: %s"
              % (" ".join(args), rc, want_rc, out, err[-12000:]))
    try:
        j = json.loads(out) if out.strip() else None
    except ValueError:
        raise AssertionError("bench printed no JSON: %r\nstderr: %s" % (out, err[-2000:]))
    return rc, j, err


def peer(args, timeout=60):
    return run([sys.executable, WIRE_PEER] + args, timeout)
