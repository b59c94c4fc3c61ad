# SPDX-License-Identifier: MIT
"""railwire.TLS: connect(..., tls=...) and Server(..., tls=..., tls_allow=[...])
over TLS 1.3 (certificates and PSK), bytes round-trip, rails report TLS, a
plain client and an identity not allowed are refused."""
import os
import shutil
import subprocess

import pytest

import railwire

MKCERTS = os.environ.get("RAILWIRE_TLS_MKCERTS")


@pytest.fixture(scope="module")
def certs():
    if not MKCERTS or not os.path.exists(MKCERTS):
        pytest.skip("tls_mkcerts not built (TLS off)")
    d = subprocess.run([MKCERTS], capture_output=True, text=True, check=True).stdout.strip()
    yield lambda n: os.path.join(d, n)
    shutil.rmtree(d, ignore_errors=True)


def roundtrip(srv, tls, rails=2):
    host, port = srv.address
    with railwire.connect(host, port, rails=rails, dialect="rw", transport="tcp", tls=tls) as rw:
        data = os.urandom(300000)
        buf = bytearray(data)
        mr = rw.register(buf)
        rw.write(mr, 0, len(data), 4096)
        back = bytearray(len(data))
        mr2 = rw.register(back)
        rw.read(mr2, 0, len(data), 4096)
        assert bytes(back) == data
        st = rw.stats()
        assert all(r["tls"] in ("user", "kernel") for r in st), st
        assert all(r["tls_ktls"] in ("none", "send", "recv", "both") for r in st), st


def test_certificates(certs):
    arena = bytearray(1 << 20)
    t = railwire.TLS(cert=certs("server.pem"), key=certs("server.key"), ca=certs("ca.pem"))
    with railwire.Server("rw", arena=arena, transport="tcp", tls=t,
                         tls_allow=["*.fleet.test"]) as srv:
        roundtrip(srv, railwire.TLS(cert=certs("client.pem"), key=certs("client.key"),
                                    ca=certs("ca.pem"), server_name="server.test"))
        host, port = srv.address
        with pytest.raises(railwire.Error):
            railwire.connect(host, port, rails=1, dialect="rw", transport="tcp")


def test_psk_and_allow(certs):
    arena = bytearray(1 << 20)
    with railwire.Server("rw", arena=arena, transport="tcp", tls=railwire.TLS(psk=certs("psk.txt")),
                         tls_allow=["beta"]) as srv:
        roundtrip(srv, railwire.TLS(psk=certs("psk.txt"), psk_identity="beta"), rails=1)
        host, port = srv.address
        with pytest.raises(railwire.PeerRejected):
            railwire.connect(host, port, rails=1, dialect="rw", transport="tcp",
                             tls=railwire.TLS(psk=certs("psk.txt")))  # alpha: not allowed


def test_bad_options():
    with pytest.raises(railwire.InvalidArgument):
        railwire.TLS()
    with pytest.raises(railwire.InvalidArgument):
        railwire.Server("rw", arena=bytearray(4096), tls_allow=["x"])
