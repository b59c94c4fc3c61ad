# SPDX-License-Identifier: MIT
"""railwire.Server: publish Python memory to railwire clients."""
from . import _railwire
from .errors import InvalidArgument
from ._args import busy_poll, dialect_value, transport_value, ms, split_hostport
from .tls import server_kwargs


class Server:
    """Serves read-only layers (dialect "ro") or one read-write arena
    (dialect "rw") on a listening port, from background C threads (no GIL).

    layers: RO, a list of 1..4096 buffers (numpy arrays, bytearrays, bytes,
    mmaps of files, ...); layer i is layers[i].  arena: RW, one writable
    buffer.  The server holds every buffer, and a reference to its object,
    until close(); a client never touches memory after close() returns.
    A layer or the arena may be GPU memory: an object with
    __cuda_array_interface__ (CuPy, Numba, a CUDA torch tensor) is
    published as CUDA memory, never read through the host by Python or
    the CPU (verbs: DMA-BUF or nvidia-peermem; tcp: staged through at most
    staging_bytes of pinned host memory, None = the library's 64 MiB;
    docs/gpu.md).

    listen: "HOST:PORT" of the control port ("[::1]:0" for IPv6; port 0
    picks a free one, see .address).  rail_addrs: tcp, the addresses rail
    listeners bind to (rail i uses i mod n; default the listen host).
    devices: verbs, "dev[:port]" names.  Caps: max_clients (concurrent
    sessions, default 64), max_rails (rails per client, default 8),
    max_bytes (create fails with LimitExceeded above it).  io_timeout
    (seconds) bounds each handshake step.  busy_poll_us (tcp): how long an
    event-loop thread that just served requests keeps polling before it
    sleeps (microseconds, 0 = sleep at once; None = the library's 50; the
    loops are shared by the process's servers: the last one created sets it).
    tls: a railwire.TLS for TLS 1.3 on the control connection and every tcp
    rail (None: plain); tls_allow: the identities (certificate CN or DNS
    SAN, PSK identity, or "*.suffix") that may get a session (None: every
    authenticated client).

    Verbs note: a file mapped with mmap.ACCESS_READ is MAP_SHARED and some
    kernels refuse to register it; map with mmap.ACCESS_COPY (private).
    """

    def __init__(self, dialect, *, listen="127.0.0.1:0", layers=None, arena=None,
                 transport="auto", rail_addrs=None, max_clients=None, max_rails=None,
                 max_bytes=None, io_timeout=None, devices=None, gid_index=None,
                 busy_poll_us=None, tls=None, tls_allow=None, staging_bytes=None):
        d = dialect_value(dialect)
        host, port = split_hostport(listen, "listen")
        if layers is not None:
            layers = list(layers)
        for name, v in (("max_clients", max_clients), ("max_rails", max_rails),
                        ("max_bytes", max_bytes), ("staging_bytes", staging_bytes)):
            if v is not None and (not isinstance(v, int) or v < 1):
                raise InvalidArgument("%s must be a positive int or None (got %r)" % (name, v))
        self._host = host
        self._srv = _railwire._server_create(
            dialect=d, transport=transport_value(transport), host=host, port=str(port),
            layers=layers, arena=arena,
            rail_addrs=None if rail_addrs is None else [str(a) for a in rail_addrs],
            devices=None if devices is None else [str(a) for a in devices],
            max_clients=max_clients or 0, max_rails=max_rails or 0, max_bytes=max_bytes or 0,
            io_timeout_ms=0 if io_timeout is None else ms(io_timeout, "io_timeout"),
            gid_index=-1 if gid_index is None else int(gid_index),
            busy_poll_us=busy_poll(busy_poll_us), staging_bytes=staging_bytes or 0,
            **server_kwargs(tls, tls_allow))
        self.dialect = "rw" if d == _railwire.DIALECT_RW else "ro"

    @property
    def address(self):
        """(host, port) of the control port, as clients pass to connect()."""
        return (self._host, self._srv.port)

    @property
    def sessions(self):
        """Number of live client sessions."""
        return self._srv.sessions

    @property
    def closed(self):
        return self._srv.closed

    def stats(self):
        """The server's counters (railwire_server_stats) as a dict of ints,
        one key per field of struct railwire_server_stats: sessions,
        refusals, data served, and for the published memory the
        registrations by path (regs_host, regs_dmabuf, regs_peermem,
        regs_staged) and the tcp staging of CUDA memory (staging_bound,
        staging_chunk, staging_allocated, staging_in_use, staging_waits).
        Raises railwire.Closed once closed."""
        return self._srv.stats()

    def metrics(self):
        """The server's counters in the Prometheus text exposition format
        (a str, as `railwire serve --metrics` serves it on /metrics), for a
        daemon that exposes them on its own endpoint.  docs/metrics.md
        lists every metric.  Raises railwire.Closed once closed."""
        return self._srv.metrics()

    def close(self):
        """Stops accepting, ends every session and releases the buffers.
        Idempotent."""
        self._srv.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if self.closed:
            return "<railwire.Server closed>"
        return "<railwire.Server %s on %s:%d, %d session(s)>" % (
            self.dialect, self._host, self._srv.port, self.sessions)
