# SPDX-License-Identifier: MIT
"""Helpers of the metrics tests (metrics_test.py, prometheus_test.py):
start `railwire serve --metrics`, run `railwire bench`, talk raw HTTP.
Every wait is bounded."""
import os
import re
import shutil
import socket
import subprocess
import time

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


def tool_env():
    env = dict(os.environ, RAILWIRE_TRANSPORT="tcp")
    env.pop("RAILWIRE_LOG_FORMAT", None)
    return env


class Serve:
    """`railwire serve --dialect rw --metrics 127.0.0.1:0` on loopback."""

    def __init__(self, cli, extra=()):
        self.proc = subprocess.Popen(
            [cli, "serve", "--dialect", "rw", "--listen", "127.0.0.1:0", "--arena", "16M",
             "--fill", "--metrics", "127.0.0.1:0", *extra],
            env=tool_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.control = self.metrics_port = None
        deadline = time.monotonic() + 30
        lines = []
        while time.monotonic() < deadline and self.metrics_port is None:
            line = self.proc.stdout.readline().decode()
            if not line:
                break
            lines.append(line)
            m = re.match(r"listening on (\S+)", line)
            if m:
                self.control = m.group(1)
            m = re.match(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", line)
            if m:
                self.metrics_port = int(m.group(1))
        if self.control is None or self.metrics_port is None:
            self.stop()
            raise RuntimeError(f"serve did not start: {lines!r}")

    def stop(self):
        """SIGTERM, then the exit code (killed after 30 s)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.proc.returncode


def raw_http(port, request, timeout=10.0):
    """Sends request bytes to 127.0.0.1:port and returns everything the
    server sent until it closed (b"" on a reset before any byte)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.settimeout(timeout)
        try:
            s.sendall(request)
        except (BrokenPipeError, ConnectionResetError):
            pass
        out = b""
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                out += b
        except ConnectionResetError:
            pass
        return out


def status_of(resp):
    m = re.match(rb"HTTP/1\.1 (\d{3}) ", resp)
    return int(m.group(1)) if m else None


def scrape(port):
    """GET /metrics: returns the body text (raises on another status)."""
    resp = raw_http(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    if status_of(resp) != 200:
        raise RuntimeError(f"scrape: {resp[:200]!r}")
    return resp.split(b"\r\n\r\n", 1)[1].decode()


def sample(text, name, labels=None):
    """The value of one sample (labels a dict that must match a subset), or None."""
    for line in text.splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if labels and any(got.get(k) != v for k, v in labels.items()):
            continue
        return float(m.group(3))
    return None


def bench(cli, control, args, timeout=120):
    return subprocess.run([cli, "bench", "--connect", control, "--quiet", *args],
                          env=tool_env(), capture_output=True, timeout=timeout)


def promtool_check(text, what):
    """`promtool check metrics` on text; a failure names `what`."""
    p = subprocess.run([shutil.which("promtool") or "promtool", "check", "metrics"],
                       input=text.encode(), capture_output=True, timeout=60)
    check(p.returncode == 0,
          f"promtool check metrics on {what}: exit {p.returncode}: {(p.stdout + p.stderr)[-800:]!r}")
