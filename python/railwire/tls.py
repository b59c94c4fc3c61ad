# SPDX-License-Identifier: MIT
"""TLS 1.3 options for connect() and Server() (docs/security.md)."""
import os

from .errors import InvalidArgument


class TLS:
    """TLS 1.3 credentials, by file name (PEM certificates and keys, or a PSK
    file of IDENTITY:HEXKEY lines, mode 0600).

    Certificates: cert, key and ca (a client checks the server's certificate
    against ca and server_name, default the host it connects to; a server
    requires client certificates that chain to ca).  Pre-shared keys: psk
    (a client uses the first line, or psk_identity; a server accepts every
    identity of its file).  The files are read when the railset connects or
    the server starts; a file that cannot be used raises InvalidArgument
    then (the log says why).
    """

    __slots__ = ("cert", "key", "ca", "psk", "psk_identity", "server_name")

    def __init__(self, cert=None, key=None, ca=None, psk=None, psk_identity=None,
                 server_name=None):
        for name, v in (("cert", cert), ("key", key), ("ca", ca), ("psk", psk),
                        ("psk_identity", psk_identity), ("server_name", server_name)):
            if v is not None and not isinstance(v, (str, os.PathLike)):
                raise InvalidArgument("TLS(%s=...) must be a str or a path (got %r)" % (name, v))
        if cert is None and key is None and ca is None and psk is None:
            raise InvalidArgument("TLS() needs cert/key/ca or psk")
        self.cert = None if cert is None else os.fspath(cert)
        self.key = None if key is None else os.fspath(key)
        self.ca = None if ca is None else os.fspath(ca)
        self.psk = None if psk is None else os.fspath(psk)
        self.psk_identity = psk_identity
        self.server_name = server_name

    def __repr__(self):
        return "TLS(%s)" % ", ".join("%s=%r" % (k, getattr(self, k)) for k in self.__slots__
                                     if getattr(self, k) is not None)


def client_kwargs(tls):
    """The _connect keyword arguments of a TLS object (or None)."""
    if tls is None:
        return {}
    if not isinstance(tls, TLS):
        raise InvalidArgument("tls must be a railwire.TLS or None (got %r)" % (tls,))
    return dict(tls_cert=tls.cert, tls_key=tls.key, tls_ca=tls.ca, tls_psk=tls.psk,
                tls_psk_identity=tls.psk_identity, tls_server_name=tls.server_name)


def server_kwargs(tls, tls_allow):
    """The _server_create keyword arguments of a TLS object and allow list."""
    if tls is None:
        if tls_allow:
            raise InvalidArgument("tls_allow needs tls=railwire.TLS(...)")
        return {}
    if not isinstance(tls, TLS):
        raise InvalidArgument("tls must be a railwire.TLS or None (got %r)" % (tls,))
    if tls.psk_identity is not None or tls.server_name is not None:
        raise InvalidArgument("psk_identity and server_name are client options")
    allow = None if tls_allow is None else [str(a) for a in tls_allow]
    return dict(tls_cert=tls.cert, tls_key=tls.key, tls_ca=tls.ca, tls_psk=tls.psk,
                tls_allow=allow)
