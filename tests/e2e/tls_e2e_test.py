# SPDX-License-Identifier: MIT
"""End-to-end tests of `railwire serve` with TLS 1.3 (issue 18), each bad
input next to a legitimate client served meanwhile:
  - the WIRE.md-only peer (wire_peer.py) through Python's ssl module gets
    its session, on 1 and 3 rails, by certificate;
  - a plain client at a TLS listener, a TLS client at a plain listener, a
    truncated ClientHello, expired / not-yet-valid / unknown-CA / missing
    client certificates: each a clear "TLS" error on the server's side (and
    the client's), in bounded time, the server unharmed;
  - --tls-allow: an identity not allowed is refused after the handshake,
    logged with its identity and counted (refusals_total{class="identity"});
  - failed authentications lock the address out, other addresses served;
  - a flood of ClientHellos from one address does not keep another
    address's client out;
  - a key that does not match its certificate, a group-readable PSK file:
    exit 2 with a usage error;
  - SIGHUP reloads: a broken file keeps the old credentials (logged), a good
    one is taken, established sessions keep running.
usage: tls_e2e_test.py --railwire PATH --mkcerts PATH [-k NAME ...]
"""
import argparse
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request

sys.dont_write_bytecode = True  # keep the source tree clean
from e2e_common import Serve, check, peer, run, run_tests, Skip

RW = None     # the railwire binary
CERTS = None  # directory of the test certificates (tests/tls/tls_certs.h)


def cp(name):
    return os.path.join(CERTS, name)


def server_tls():
    return ["--tls-cert", cp("server.pem"), "--tls-key", cp("server.key"), "--tls-ca", cp("ca.pem")]


def client_tls(cert="client", ca="ca.pem", name="server.test"):
    a = ["--tls-ca", cp(ca), "--tls-server-name", name]
    if cert:
        a += ["--tls-cert", cp(cert + ".pem"), "--tls-key", cp(cert + ".key")]
    return a


def serve(extra=(), tls=True, metrics=False):
    args = ["--dialect", "rw", "--listen", "127.0.0.1:0", "--arena", "16M", "--fill",
            "--io-timeout", "3000", "--first-byte-timeout", "1000"]
    if tls:
        args += server_tls()
    if metrics:
        args += ["--metrics", "127.0.0.1:0"]
    return Serve(RW, args + list(extra))


def legit(s, rails=1, **kw):
    """A legitimate TLS client gets its session."""
    rc, out, err = peer(["client", "--connect", s.addr, "--dialect", "rw", "--rails",
                         str(rails), "--timeout", "10"] + client_tls(**kw), timeout=60)
    j = json.loads(out)
    check(rc == 0 and j["result"] == "ok" and j["ack"] == 0,
          "legit TLS client: %s %s\nserver log:\n%s" % (out, err, s.log()[-3000:]))


def metrics(s):
    """The server's Prometheus text (its --metrics port is on stdout)."""
    line = s.p.stdout.readline()
    while line and "metrics on http://" not in line:
        line = s.p.stdout.readline()
    url = line.split("metrics on ", 1)[1].strip()
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def metric_value(text, name_labels):
    for line in text.splitlines():
        if line.startswith(name_labels + " "):
            return float(line.split()[-1])
    raise AssertionError("metric %s not found in:\n%s" % (name_labels, text))


def wait_log(s, needle, seconds=10):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if needle in s.log():
            return
        time.sleep(0.05)
    raise AssertionError("%r never in the server log:\n%s" % (needle, s.log()[-4000:]))


def client_hello_bytes():
    """A genuine TLS 1.3 ClientHello, as Python's ssl makes it."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, outg = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, outg, server_hostname="server.test")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outg.read()


def closed_within(sock, seconds):
    """True when the server ends the connection (EOF or reset) in time."""
    sock.settimeout(seconds)
    try:
        while True:
            b = sock.recv(4096)
            if not b:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


# --- sessions ------------------------------------------------------------------

def test_wire_peer_through_python_ssl_gets_its_session():
    s = serve(metrics=True)
    try:
        for rails in (1, 3):
            legit(s, rails)
        # tcp rails inside TLS too: 64 KiB READ over every rail, checked
        # against the pattern (--fill)
        for rails in (1, 2):
            rc, out, err = peer(["client", "--connect", s.addr, "--dialect", "rw", "--rails",
                                 str(rails), "--tcp-rails", "--read", "65536"] + client_tls(),
                                timeout=60)
            j = json.loads(out)
            check(rc == 0 and j["result"] == "ok" and j["tcp_rails"] == "attached",
                  "TLS tcp rails: %s %s\n%s" % (out, err, s.log()[-3000:]))
        log = s.log()
        check("TLS (TLS_AES_" in log and "cn:client-a.fleet.test" in log,
              "the server does not log the TLS identity:\n" + log)
        m = metrics(s)
        check(metric_value(m, "railwire_server_tls") == 1, m)
        check(metric_value(m, "railwire_server_tls_handshakes_total") == 4, m)
    finally:
        s.close()


def test_plain_client_at_tls_listener():
    s = serve()
    try:
        t0 = time.monotonic()
        rc, out, _ = peer(["client", "--connect", s.addr, "--dialect", "rw", "--timeout", "10"])
        j = json.loads(out)
        check(rc != 0 and j["result"] != "ok", "a plain client got a session: %s" % out)
        check(time.monotonic() - t0 < 8, "the plain client waited %.1f s" % (time.monotonic() - t0))
        wait_log(s, "is not speaking TLS")
        legit(s)
    finally:
        s.close()


def test_tls_client_at_plain_listener():
    s = serve(tls=False)
    try:
        rc, out, _ = peer(["client", "--connect", s.addr, "--dialect", "rw", "--timeout", "10"]
                          + client_tls())
        j = json.loads(out)
        check(rc != 0 and j["result"] == "tls" and "TLS" in j["error"],
              "a TLS client at a plain listener: %s" % out)
        wait_log(s, "the client speaks TLS but this listener is plain")
        rc, out, _ = peer(["client", "--connect", s.addr, "--dialect", "rw"])
        check(rc == 0, "a plain client after it: %s" % out)
    finally:
        s.close()


def test_truncated_client_hello():
    s = serve()
    try:
        hello = client_hello_bytes()
        sock = socket.create_connection((s.host, s.port))
        sock.sendall(hello[:len(hello) // 2])
        legit(s)  # served while the truncated one hangs
        check(closed_within(sock, 10), "the server kept a truncated ClientHello open")
        sock.close()
        wait_log(s, "did not complete the TLS handshake")
        legit(s)
    finally:
        s.close()


def test_bad_client_certificates():
    s = serve()
    try:
        cases = [("client-expired", "ca.pem", "has expired"),
                 ("client-future", "ca.pem", "is not valid yet"),
                 ("client-stranger", "ca.pem", "does not chain to the CA"),
                 (None, "ca.pem", "sent no certificate")]
        for cert, ca, want in cases:
            rc, out, _ = peer(["client", "--connect", s.addr, "--dialect", "rw", "--timeout",
                               "10"] + client_tls(cert=cert, ca=ca))
            j = json.loads(out)
            check(rc != 0 and j["result"] != "ok", "%s: accepted: %s" % (cert, out))
            wait_log(s, want)
            legit(s)
    finally:
        s.close()


def test_bad_server_certificates_seen_by_the_client():
    for cert, want in (("expired", "expired"), ("future", "not yet valid"),
                       ("stranger", "certificate verify failed")):
        s = Serve(RW, ["--dialect", "rw", "--listen", "127.0.0.1:0", "--arena", "64K",
                       "--tls-cert", cp(cert + ".pem"), "--tls-key", cp(cert + ".key"),
                       "--tls-ca", cp("ca.pem")])
        try:
            rc, out, _ = peer(["client", "--connect", s.addr, "--dialect", "rw", "--timeout",
                               "10"] + client_tls())
            j = json.loads(out)
            check(rc != 0 and j["result"] == "tls" and want in j["error"],
                  "%s server certificate: %s" % (cert, out))
        finally:
            s.close()


# --- authorisation, lockout, flood -------------------------------------------

def test_identity_not_allowed_is_refused_and_counted():
    s = serve(["--tls-allow", "gpu1.fleet.test", "--tls-allow", "*.other.test"], metrics=True)
    try:
        # client.pem: CN client-a.fleet.test, DNS SANs client-a.fleet.test and
        # alias.other.test: allowed by *.other.test.
        legit(s)
        s2 = serve(["--tls-allow", "gpu1.fleet.test"], metrics=True)
        try:
            rc, out, _ = peer(["client", "--connect", s2.addr, "--dialect", "rw", "--timeout",
                               "10"] + client_tls())
            j = json.loads(out)
            check(rc != 0 and j["result"] == "peer-rejected", "not allowed: %s" % out)
            wait_log(s2, "TLS identity cn:client-a.fleet.test")
            check("is not allowed (--tls-allow)" in s2.log(), s2.log())
            m = metrics(s2)
            check(metric_value(m, 'railwire_server_refusals_total{class="identity"}') == 1, m)
        finally:
            s2.close()
    finally:
        s.close()


def test_failed_authentications_lock_the_address_out():
    s = serve()
    try:
        bad = client_tls(cert="client-stranger")
        for i in range(16):
            # from 127.0.0.2; the legit client comes from 127.0.0.1
            rc, out, _ = run([sys.executable, "-c", LOCAL_CLIENT, s.host, str(s.port),
                              "127.0.0.2"] + bad, timeout=30)
            check("ok" not in out.split(), "attempt %d authenticated: %s" % (i, out))
        wait_log(s, "locked out")
        rc, out, _ = run([sys.executable, "-c", LOCAL_CLIENT, s.host, str(s.port),
                          "127.0.0.2"] + client_tls(), timeout=30)
        check("ok" not in out.split(), "a locked-out address got through: %s" % out)
        wait_log(s, "failed to authenticate (TLS) too often")
        legit(s)
    finally:
        s.close()


# A TLS handshake from a chosen source address (argv: host port source
# [--tls-ca F --tls-server-name N --tls-cert F --tls-key F]); prints "ok" or
# the error.
LOCAL_CLIENT = r"""
import socket, ssl, sys
host, port, src = sys.argv[1], int(sys.argv[2]), sys.argv[3]
opt = dict(zip(sys.argv[4::2], sys.argv[5::2]))
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.load_verify_locations(opt["--tls-ca"])
if "--tls-cert" in opt:
    ctx.load_cert_chain(opt["--tls-cert"], opt["--tls-key"])
try:
    s = socket.create_connection((host, port), timeout=10, source_address=(src, 0))
    t = ctx.wrap_socket(s, server_hostname=opt["--tls-server-name"])
    t.sendall(bytes([1]))
    b = t.recv(1)
    print("ok" if b else "closed")
except Exception as e:
    print("error: %s" % e)
"""


def test_client_hello_flood_does_not_keep_others_out():
    s = serve(["--max-sessions-per-peer", "64"], metrics=True)
    try:
        hello = client_hello_bytes()
        flood = []
        for _ in range(48):
            # from 127.0.0.3: a ClientHello, then silence (the server's
            # handshake waits for the client's Finished)
            f = socket.create_connection((s.host, s.port), source_address=("127.0.0.3", 0))
            f.sendall(hello)
            flood.append(f)
        t0 = time.monotonic()
        legit(s)
        legit(s, rails=2)
        took = time.monotonic() - t0
        for f in flood:
            f.close()
        m = metrics(s)
        check(metric_value(m, "railwire_server_tls_gate_waits_total") > 0,
              "the flood never waited for the handshake gate:\n" + m)
        # not a timing assertion: the legit client must not have waited for
        # the flood's handshakes to time out (3 s each, in rounds)
        check(took < 30, "the legit clients took %.1f s" % took)
    finally:
        s.close()


# --- credentials at start, reload -------------------------------------------

def test_bad_credentials_at_start_exit_2():
    psk = os.path.join(CERTS, "psk-open.txt")
    shutil.copy(cp("psk.txt"), psk)
    os.chmod(psk, 0o640)
    cases = [(["--tls-cert", cp("server.pem"), "--tls-key", cp("client.key"), "--tls-ca",
               cp("ca.pem")], "does not match"),
             (["--tls-psk", psk], "group or others"),
             (["--tls-cert", cp("server.pem")], "together"),
             (["--tls-allow", "x"], "needs TLS")]
    for args, want in cases:
        rc, out, err = run([RW, "serve", "--dialect", "rw", "--listen", "127.0.0.1:0", "--arena",
                            "64K"] + args, timeout=20)
        check(rc == 2 and want in err, "%s: exit %d: %s" % (args, rc, err))


def test_sighup_reloads_and_keeps_sessions():
    d = os.path.join(CERTS, "rot")
    os.makedirs(d, exist_ok=True)
    for n in ("server.pem", "server.key", "ca.pem"):
        shutil.copy(cp(n), os.path.join(d, n))
    s = Serve(RW, ["--dialect", "rw", "--listen", "127.0.0.1:0", "--arena", "64K",
                   "--tls-cert", os.path.join(d, "server.pem"), "--tls-key",
                   os.path.join(d, "server.key"), "--tls-ca", os.path.join(d, "ca.pem")])
    try:
        held = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__),
                                 "wire_peer.py"), "client", "--connect", s.addr, "--dialect",
                                 "rw", "--hold", "3"] + client_tls(),
                                stdout=subprocess.PIPE, text=True)
        wait_log(s, "rail(s) up")
        with open(os.path.join(d, "server.pem"), "w") as f:
            f.write("not a certificate\n")
        s.p.send_signal(signal.SIGHUP)
        wait_log(s, "keeping the previous TLS credentials")
        legit(s)  # the old credentials still serve
        shutil.copy(cp("server.pem"), os.path.join(d, "server.pem"))
        s.p.send_signal(signal.SIGHUP)
        wait_log(s, "TLS credentials reloaded")
        legit(s)
        out, _ = held.communicate(timeout=30)
        check(held.returncode == 0 and json.loads(out)["result"] == "ok",
              "the session established before the reloads: %s" % out)
    finally:
        s.close()


# --- the railwire client (bench) over TLS -------------------------------------

def bench(s, extra, want_rc=None):
    rc, out, err = run([RW, "bench", "--connect", s.addr, "--dialect", "rw", "--json",
                        "--quiet", "-n", "64", "-s", "256K"] + extra, timeout=120)
    j = json.loads(out) if out.strip() else None
    if want_rc is not None:
        check(rc == want_rc, "bench %s: exit %d\n%s\nserver:\n%s"
              % (extra, rc, err[-3000:], s.log()[-3000:]))
    return rc, j, err


def test_bench_over_tls_verified():
    s = serve(["--tls-psk", cp("psk.txt")])
    try:
        for op in ("--read", "--write"):
            rc, j, err = bench(s, ["--rails", "2", op, "--verify"] + client_tls()[2:] +
                               ["--tls-ca", cp("ca.pem"), "--tls-server-name", "server.test"],
                               want_rc=0)
            check(all(r["tls"] in ("user", "kernel") for r in j["rail_stats"]),
                  "rails not on TLS: %s" % j["rail_stats"])
            check(all(r["tls_ktls"] in ("none", "send", "recv", "both") for r in j["rail_stats"]),
                  j["rail_stats"])
        # PSK, the second identity of the file (a WRITE with read-back:
        # the arena no longer holds the --fill pattern after the WRITEs)
        rc, j, err = bench(s, ["--rails", "2", "--write", "--verify", "--tls-psk",
                               cp("psk.txt"), "--tls-psk-identity", "beta"], want_rc=0)
        check("psk:beta" in s.log(), "the server did not see identity beta:\n" + s.log()[-2000:])
        # plain: unchanged, and off
        s2 = serve(tls=False)
        try:
            rc, j, _ = bench(s2, ["--rails", "2", "--verify"], want_rc=0)
            check(all(r["tls"] == "off" for r in j["rail_stats"]), j["rail_stats"])
        finally:
            s2.close()
    finally:
        s.close()


def test_bench_tls_errors_name_what_to_check():
    s = serve(["--tls-psk", cp("psk.txt")])
    plain = serve(tls=False)
    try:
        cases = [(s, ["--tls-psk", cp("psk-wrong.txt")], "TLS"),
                 (s, ["--tls-psk", cp("psk-gamma.txt")], "gamma"),
                 (s, [], "this client is plain"),
                 (s, client_tls(cert="client-expired"), "expired"),
                 (s, client_tls(ca="other-ca.pem"), "does not chain"),
                 (s, client_tls(name="other.test"), "not for the name"),
                 (plain, client_tls(), "protocol version")]
        for srv, extra, want in cases:
            rc, j, err = bench(srv, extra)
            check(rc == 1 and want in err, "%s: exit %d, %r not in:\n%s" % (extra, rc, want, err))
            legit(s)
        rc, out, err = run([RW, "bench", "--connect", s.addr, "--tls-cert", cp("client.pem"),
                            "--tls-key", cp("server.key"), "--tls-ca", cp("ca.pem")], timeout=30)
        check(rc == 2 and "does not match" in err, "key mismatch: exit %d: %s" % (rc, err))
    finally:
        plain.close()
        s.close()


def main():
    global RW, CERTS
    ap = argparse.ArgumentParser()
    ap.add_argument("--railwire", required=True)
    ap.add_argument("--mkcerts", required=True)
    ap.add_argument("-k", action="append", help="run only tests whose name contains this")
    a = ap.parse_args()
    RW = os.path.abspath(a.railwire)
    os.environ.setdefault("RAILWIRE_TRANSPORT", "tcp")
    rc, out, err = run([a.mkcerts], timeout=60)
    if rc != 0:
        print("tls_mkcerts failed: %s" % err)
        return 1
    CERTS = out.strip()
    try:
        tests = [v for k, v in sorted(globals().items()) if k.startswith("test_") and callable(v)]
        return run_tests(tests, a.k)
    finally:
        shutil.rmtree(CERTS, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
