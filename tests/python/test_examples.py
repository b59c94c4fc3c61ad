# SPDX-License-Identifier: MIT
"""examples/kv_server.py and examples/kv_client.py run as a pair, as the
README shows, so they cannot rot."""
import os
import signal
import subprocess
import sys

from conftest import ROOT, parse_hostport, wait_line

EXAMPLES = os.path.join(ROOT, "examples")


def test_kv_client_and_server_pair():
    srv = subprocess.Popen([sys.executable, os.path.join(EXAMPLES, "kv_server.py"), "--arena-mib",
                            "64", "--transport", "tcp"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    try:
        host, port = parse_hostport(wait_line(srv, "listening on"))
        cli = subprocess.run([sys.executable, os.path.join(EXAMPLES, "kv_client.py"), "--connect",
                              "%s:%d" % (host, port), "--rails", "2", "--pages", "1024",
                              "--transport", "tcp"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        out = cli.stdout.decode()
        assert cli.returncode == 0, out + cli.stderr.decode()
        assert "1024 pages" in out and "ok: every page came back intact" in out
        srv.send_signal(signal.SIGINT)
        rest, err = srv.communicate(timeout=30)
        assert srv.returncode == 0, err.decode()
        assert b"SIGINT: stopping" in rest
        assert b"arena: 0 of" not in rest, "the pages must have landed in the server's numpy arena"
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()


def test_kv_aio_client_against_kv_server():
    srv = subprocess.Popen([sys.executable, os.path.join(EXAMPLES, "kv_server.py"), "--arena-mib",
                            "64", "--transport", "tcp"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    try:
        host, port = parse_hostport(wait_line(srv, "listening on"))
        cli = subprocess.run([sys.executable, os.path.join(EXAMPLES, "kv_aio_client.py"),
                              "--connect", "%s:%d" % (host, port), "--rails", "2", "--pages",
                              "1000", "--transport", "tcp"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        out = cli.stdout.decode()
        assert cli.returncode == 0, out + cli.stderr.decode()
        assert "1000 pages written and read back" in out
        assert "ok: every page came back intact" in out
        srv.send_signal(signal.SIGINT)
        srv.communicate(timeout=30)
        assert srv.returncode == 0
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()


def test_readme_python_example_runs():
    text = open(os.path.join(ROOT, "README.md")).read()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=120)
    assert p.returncode == 0, p.stdout.decode(errors="replace")
