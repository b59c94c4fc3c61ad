# SPDX-License-Identifier: MIT
"""A handshake peer written only from spec/WIRE.md (not from railwire's code).

Modes:
  client   speak the client side of the frozen handshake to a server, check
           every byte it receives against WIRE.md, print one JSON line with
           the outcome and the decoded records.
  server   speak the server side with fake params, with a chosen behaviour
           (ok, reject, refuse, truncate, mismatch), print one JSON line per
           connection with what the client sent.
  pattern  write a file holding the `railwire bench` data pattern (so a
           `railwire serve --layer FILE` can be read with bench --verify).

TLS (client mode, --tls-ca with --tls-cert/--tls-key): the same bytes inside
TLS 1.3 through Python's ssl module, as docs/tcp-transport.md says: TLS
starts right after the TCP connect, on the control connection and on every
tcp rail, before any byte of WIRE.md or of the rail hello.  (Python's ssl
has no TLS 1.3 external PSK: certificates only.)

Stdlib only.  Exit status of `client`: 0 if the ack was STATUS_OK (and every
check passed), 1 otherwise (the JSON line says which class).
"""
import argparse
import json
import os
import random
import socket
import ssl
import struct
import sys
import time

STATUS_OK = 0
MAX_RO_RAILS = 8
MAX_LAYERS = 4096
QP_ID = struct.Struct("<II16s")          # qpn, psn, gid: 24 bytes
RW_PARAMS = struct.Struct("<II16sQI")    # qpn, psn, gid, base_addr, rkey: 36 bytes
LAYER = struct.Struct("<QI")             # base_addr, rkey: 12 bytes


class WireError(Exception):
    """A decoding failure, with its WIRE.md class name."""

    def __init__(self, cls, msg):
        super().__init__(msg)
        self.cls = cls


class Reader:
    """Reads exact byte counts from a socket; tells a clean end-of-stream at
    the first byte of the server's reply (peer-rejected) apart from one later
    (truncated)."""

    def __init__(self, sock):
        self.sock = sock
        self.total = 0

    def read(self, n, first_of_reply=False):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                if first_of_reply and not buf:
                    raise WireError("peer-rejected",
                                    "the server closed before its reply: see the server's log")
                raise WireError("truncated", "end of stream after %d of %d bytes" % (len(buf), n))
            buf += chunk
        self.total += n
        return buf


def split_hostport(s):
    if s.startswith("["):
        host, _, port = s[1:].partition("]:")
    else:
        host, _, port = s.rpartition(":")
    return host, int(port)


def gid_hex(g):
    return g.hex()


def fake_gid():
    # the IPv4-mapped loopback address (::ffff:127.0.0.1): whatever a peer
    # makes of a fake identity, it stays on this machine
    return bytes(10) + b"\xff\xff" + bytes([127, 0, 0, 1])


def tls_context(args):
    """The client's TLS 1.3 context, or None without --tls-ca."""
    if not args.tls_ca:
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_verify_locations(args.tls_ca)
    if args.tls_cert:
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
    return ctx


def tls_wrap(args, sock, host):
    """TLS over a connected socket (the handshake runs here), or the socket
    itself without TLS."""
    ctx = tls_context(args)
    if ctx is None:
        return sock
    try:
        return ctx.wrap_socket(sock, server_hostname=args.tls_server_name or host)
    except ssl.SSLError as e:
        sock.close()
        raise WireError("tls", "TLS: %s" % e)


def run_client(args):
    host, port = split_hostport(args.connect)
    n = args.rails
    out = {"mode": "client", "dialect": args.dialect, "rails_asked": n}
    try:
        sock = socket.create_connection((host, port), timeout=args.timeout)
        sock.settimeout(args.timeout)
        sock = tls_wrap(args, sock, host)
    except WireError as e:
        out.update(result=e.cls, error=str(e))
        print(json.dumps(out), flush=True)
        return 1
    except OSError as e:
        out.update(result="connect-failed", error=str(e))
        print(json.dumps(out), flush=True)
        return 1
    sock.settimeout(args.timeout)
    rd = Reader(sock)
    try:
        sock.sendall(bytes([n]))                           # the request
        count = rd.read(1, first_of_reply=True)[0]
        rails = []
        if args.dialect == "ro":
            if count == 0 or count > MAX_RO_RAILS:
                raise WireError("bad-rail-count", "RO rail count %d" % count)
            if count != n:
                raise WireError("rail-count-mismatch", "asked %d, got %d" % (n, count))
            for _ in range(count):
                qpn, psn, gid = QP_ID.unpack(rd.read(24))
                (n_layers,) = struct.unpack("<I", rd.read(4))
                if n_layers == 0 or n_layers > MAX_LAYERS:
                    raise WireError("bad-layer-count", "n_layers %d" % n_layers)
                layers = [list(LAYER.unpack(rd.read(12))) for _ in range(n_layers)]
                rails.append({"qpn": qpn, "psn": psn, "gid": gid_hex(gid), "layers": layers})
        else:
            if count != n:
                raise WireError("rail-count-mismatch", "asked %d, got %d" % (n, count))
            for _ in range(count):
                qpn, psn, gid, base, rkey = RW_PARAMS.unpack(rd.read(36))
                rails.append({"qpn": qpn, "psn": psn, "gid": gid_hex(gid),
                              "base_addr": base, "rkey": rkey})
        out["rails"] = rails
        # the second message: the count again, then one QP identity per rail
        msg = bytes([n]) + b"".join(
            QP_ID.pack(0x100 + i, random.getrandbits(24), fake_gid()) for i in range(n))
        sock.sendall(msg)
        rail_socks = []
        if args.tcp_rails:
            rail_socks = attach_tcp_rails(args, rails, msg)
            out["tcp_rails"] = "attached"
        ack = rd.read(1)[0]
        out["ack"] = ack
        if ack != STATUS_OK:
            raise WireError("refused", "ack %d" % ack)
        out["result"] = "ok"
        problems = check_expectations(args, rails)
        if args.read and rail_socks:
            problems += tcp_read_check(args, rails, rail_socks)
        if args.close_after_ack > 0 and not problems:
            # WIRE.md lets a client close the control connection after the
            # ack: the rails it opened must keep working (for the linger).
            sock.close()
            out["reads_after_close"], out["read_error_after"] = keep_reading(
                args, rails, rail_socks, args.close_after_ack)
        if problems:
            out["result"] = "unexpected"
            out["problems"] = problems
        if args.hold > 0:
            time.sleep(args.hold)
    except WireError as e:
        out.update(result=e.cls, error=str(e))
    except ssl.SSLError as e:
        out.update(result="tls", error="TLS: %s" % e)
    except socket.timeout:
        out.update(result="timeout", error="no bytes from the server within %.1f s" % args.timeout)
    except OSError as e:
        out.update(result="io", error=str(e))
    finally:
        sock.close()
    print(json.dumps(out), flush=True)
    return 0 if out["result"] == "ok" else 1


# --- the tcp transport's rails (docs/tcp-transport.md, not WIRE.md) --------
# With the tcp transport a railwire server grants the rails only once the
# client has opened them, so a client that stops at the frozen handshake is
# refused (ack 1).  --tcp-rails opens them: rail i connects to the IPv4 of
# the server's GID, port = qpn & 0xffff, and sends a 24-byte hello
# (u32 magic "RWT1" | u32 version 1 | u32 server qpn | u32 server psn |
#  u32 client qpn | u32 client psn), answered by one verdict byte (0 = ok).
TCP_MAGIC = 0x31545752
HELLO = struct.Struct("<IIIIII")
REQ = struct.Struct("<IIQQII")      # op, length, tag, remote_addr, rkey, 0
RESP = struct.Struct("<QII")        # tag, status, length


def gid_to_ipv4(gid_hex_str):
    g = bytes.fromhex(gid_hex_str)
    if g[:12] != bytes(10) + b"\xff\xff":
        raise WireError("unexpected", "GID %s is not IPv4-mapped" % gid_hex_str)
    return "%d.%d.%d.%d" % tuple(g[12:])


def attach_tcp_rails(args, rails, msg):
    socks = []
    for i, r in enumerate(rails):
        host = gid_to_ipv4(r["gid"])
        if host != "127.0.0.1":
            raise WireError("unexpected", "rail %d points at %s, not loopback" % (i, host))
        s = socket.create_connection((host, r["qpn"] & 0xFFFF), timeout=args.timeout)
        s = tls_wrap(args, s, host)
        cqpn, cpsn, _ = QP_ID.unpack(msg[1 + 24 * i:1 + 24 * (i + 1)])
        s.sendall(HELLO.pack(TCP_MAGIC, 1, r["qpn"], r["psn"], cqpn, cpsn))
        verdict = Reader(s).read(1)[0]
        if verdict != 0:
            raise WireError("refused", "rail %d: tcp verdict %d" % (i, verdict))
        socks.append(s)
    return socks


def tcp_read_check(args, rails, socks):
    """READ args.read bytes of layer 0 / the arena over every rail and compare
    them with the bench pattern (seed 0, layer 0)."""
    problems = []
    for i, (r, s) in enumerate(zip(rails, socks)):
        base, rkey = (r["layers"][0] if "layers" in r else (r["base_addr"], r["rkey"]))
        s.sendall(REQ.pack(0, args.read, 7 + i, base, rkey, 0))
        rd = Reader(s)
        tag, status, length = RESP.unpack(rd.read(16))
        if tag != 7 + i or status != 0 or length != args.read:
            problems.append("rail %d: READ answered tag %d status %d length %d"
                            % (i, tag, status, length))
            continue
        data = rd.read(length)
        want = pattern_bytes(0, 0, args.read)
        if data != want:
            at = next(k for k in range(length) if data[k] != want[k])
            problems.append("rail %d: READ byte %d is 0x%02x, pattern says 0x%02x"
                            % (i, at, data[at], want[at]))
    return problems


def keep_reading(args, rails, socks, seconds):
    """READs over every rail again and again for `seconds`; returns how many
    rounds passed and, if one failed, after how many seconds (else None)."""
    t0 = time.monotonic()
    rounds = 0
    while time.monotonic() - t0 < seconds:
        try:
            if tcp_read_check(args, rails, socks):
                return rounds, round(time.monotonic() - t0, 3)
        except (OSError, WireError):
            return rounds, round(time.monotonic() - t0, 3)
        rounds += 1
        time.sleep(0.05)
    return rounds, None


def check_expectations(args, rails):
    problems = []
    if args.dialect == "ro" and args.expect_layers:
        for i, r in enumerate(rails):
            if len(r["layers"]) != args.expect_layers:
                problems.append("rail %d: %d layers, expected %d"
                                % (i, len(r["layers"]), args.expect_layers))
    if args.dialect == "ro":
        # every rail publishes the same layers (each rail's MR of layer i)
        counts = {len(r["layers"]) for r in rails}
        if len(counts) > 1:
            problems.append("rails disagree on the layer count: %s" % sorted(counts))
    return problems


def server_params(dialect, n, n_layers, rail_port):
    # qpn: the tcp transport reads its low 16 bits as the rail's port; we name
    # a loopback port where nothing listens, so a tcp client's rails fail fast
    recs = []
    for i in range(n):
        qpn = (i + 1) << 16 | rail_port
        qp = QP_ID.pack(qpn, random.getrandbits(24), fake_gid())
        if dialect == "ro":
            body = qp + struct.pack("<I", n_layers) + b"".join(
                LAYER.pack(0x10000000 * (l + 1), 0x1000 + l) for l in range(n_layers))
        else:
            body = RW_PARAMS.pack(qpn, random.getrandbits(24), fake_gid(), 0x40000000, 0x2000)
        recs.append(body)
    return recs


def serve_one(conn, args, rail_port):
    conn.settimeout(args.timeout)
    rd = Reader(conn)
    rec = {"mode": "server", "behaviour": args.behaviour}
    try:
        n = rd.read(1)[0]
        rec["rails_asked"] = n
        if args.behaviour == "reject":
            rec["result"] = "closed-before-params"
            return rec
        if args.dialect == "ro" and (n == 0 or n > MAX_RO_RAILS):
            rec["result"] = "closed-bad-count"    # a server rejects by closing
            return rec
        count = n + 1 if args.behaviour == "mismatch" else n
        recs = server_params(args.dialect, count, args.layers, rail_port)
        reply = bytes([count]) + b"".join(recs)
        if args.behaviour == "truncate":
            conn.sendall(reply[:max(2, len(reply) // 2)])
            rec["result"] = "truncated-params"
            return rec
        conn.sendall(reply)
        if args.behaviour == "mismatch":
            rec["result"] = "sent-mismatch"
            return rec
        echo = rd.read(1)[0]
        rec["echoed"] = echo
        ids = []
        for _ in range(echo):
            qpn, psn, gid = QP_ID.unpack(rd.read(24))
            ids.append({"qpn": qpn, "psn": psn, "gid": gid_hex(gid)})
        rec["client_ids"] = ids
        ack = 1 if args.behaviour == "refuse" else STATUS_OK
        if echo != n:
            ack = 1
            rec["problem"] = "echoed count %d != requested %d" % (echo, n)
        conn.sendall(bytes([ack]))
        rec["ack"] = ack
        rec["result"] = "acked"
        if args.hold > 0:
            # keep the control connection as the session's liveness signal
            conn.settimeout(args.hold)
            try:
                while conn.recv(4096):
                    pass
            except OSError:
                pass
    except WireError as e:
        rec.update(result="client-" + e.cls, error=str(e))
    except socket.timeout:
        rec.update(result="timeout")
    except OSError as e:
        rec.update(result="io", error=str(e))
    finally:
        conn.close()
    return rec


def run_server(args):
    host, port = split_hostport(args.listen)
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    ls = socket.socket(fam, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, port))
    ls.listen(16)
    bound = ls.getsockname()[1]
    print(json.dumps({"listening": "%s:%d" % (("[%s]" % host) if fam == socket.AF_INET6 else host,
                                               bound)}), flush=True)
    ls.settimeout(args.timeout)
    # bound but not listening: a connect() there is refused at once
    dead = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    dead.bind(("127.0.0.1", 0))
    rail_port = dead.getsockname()[1]
    served = 0
    try:
        while args.count <= 0 or served < args.count:
            try:
                conn, _ = ls.accept()
            except socket.timeout:
                break
            print(json.dumps(serve_one(conn, args, rail_port)), flush=True)
            served += 1
    finally:
        ls.close()
        dead.close()
    return 0


def pattern_word(seed, layer, index):
    m = (1 << 64) - 1
    z = (index + (layer << 40) + (seed << 56)) & m
    z = (z + 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


def pattern_bytes(seed, layer, size, offset=0):
    first = offset // 8
    words = (offset + size + 7) // 8 - first
    data = b"".join(struct.pack("<Q", pattern_word(seed, layer, first + w)) for w in range(words))
    return data[offset - first * 8:offset - first * 8 + size]


def run_pattern(args):
    # the size is rounded up to whole 8-byte words, then cut
    words = (args.size + 7) // 8
    chunk = 1 << 16
    with open(args.out, "wb") as f:
        left = args.size
        for start in range(0, words, chunk):
            end = min(words, start + chunk)
            data = b"".join(struct.pack("<Q", pattern_word(args.seed, args.layer, w))
                            for w in range(start, end))
            f.write(data[:left])
            left -= min(left, len(data))
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("client")
    c.add_argument("--connect", required=True)
    c.add_argument("--dialect", choices=("ro", "rw"), required=True)
    c.add_argument("--rails", type=int, default=1)
    c.add_argument("--expect-layers", type=int, default=0)
    c.add_argument("--hold", type=float, default=0.0, help="keep the connection open after the ack")
    c.add_argument("--timeout", type=float, default=10.0)
    c.add_argument("--tls-ca", help="TLS 1.3: the CA the server's certificate chains to")
    c.add_argument("--tls-cert", help="TLS: this client's certificate (PEM)")
    c.add_argument("--tls-key", help="TLS: its key (PEM)")
    c.add_argument("--tls-server-name", help="TLS: the name to check (default: the host)")
    c.add_argument("--tcp-rails", action="store_true",
                   help="also open the tcp transport's rails (so the server can ack 0)")
    c.add_argument("--read", type=int, default=0,
                   help="with --tcp-rails: READ this many bytes of layer 0 / the arena on every "
                        "rail and compare them with the bench pattern")
    c.add_argument("--close-after-ack", type=float, default=0.0, metavar="SECONDS",
                   help="with --tcp-rails --read: close the control connection right after the "
                        "ack, then keep READing over the rails for SECONDS; reports how many "
                        "rounds passed and when one first failed")
    s = sub.add_parser("server")
    s.add_argument("--listen", default="127.0.0.1:0")
    s.add_argument("--dialect", choices=("ro", "rw"), required=True)
    s.add_argument("--behaviour", choices=("ok", "reject", "refuse", "truncate", "mismatch"),
                   default="ok")
    s.add_argument("--layers", type=int, default=1)
    s.add_argument("--count", type=int, default=1, help="connections to serve (0: until idle)")
    s.add_argument("--hold", type=float, default=0.0)
    s.add_argument("--timeout", type=float, default=30.0)
    p = sub.add_parser("pattern")
    p.add_argument("--out", required=True)
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--layer", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    return {"client": run_client, "server": run_server, "pattern": run_pattern}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
