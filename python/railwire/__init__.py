# SPDX-License-Identifier: MIT
"""railwire: move bytes between machines' memory over several network rails
at once (RDMA verbs, or TCP with the same semantics).

    import numpy as np, railwire

    with railwire.connect("10.0.0.7", 7000, rails=2, dialect="rw") as rs:
        pages = np.zeros((4096, 65536), dtype=np.uint8)
        mr = rs.register(pages)                       # no copy: the array's own memory
        handles = rs.submit_batch(railwire.READ, mr,
                                  local_offsets=np.arange(4096) * 65536,
                                  remote_offsets=remote_offsets, lengths=65536)
        done = 0
        while done < len(handles):
            for c in rs.wait(timeout=10.0, max=4096):
                if c.error:
                    raise c.error
                done += 1

Transfers never copy through Python: registered buffers are used in place.
Every blocking call releases the GIL; a Railset may be used from many
threads at once; Ctrl-C interrupts waits promptly.  Failures raise
railwire.Error subclasses, one per RAILWIRE_E_* code (see railwire.errors).
"""
from . import _railwire
from . import errors
from ._args import busy_poll, dialect_value, transport_value, ms, per_rail
from .errors import *  # noqa: F401,F403  (the exception classes)
from .errors import Error, InvalidArgument, error_for_code
from .server import Server
from .tls import TLS, client_kwargs as _tls_client_kwargs

Railset = _railwire.Railset
MemoryRegion = _railwire.MemoryRegion
Completion = _railwire.Completion

#: opcodes of submit_batch
READ = _railwire.READ
WRITE = _railwire.WRITE
MAX_RAILS = _railwire.MAX_RAILS
LOG_ERROR = _railwire.LOG_ERROR
LOG_WARN = _railwire.LOG_WARN
LOG_INFO = _railwire.LOG_INFO
LOG_DEBUG = _railwire.LOG_DEBUG

strerror = _railwire.strerror
error_class = _railwire.error_class
set_log_level = _railwire.set_log_level

__version__ = "1.0.0"


def _optional_positive(v, what):
    if v is None:
        return 0
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise InvalidArgument("%s must be a positive int or None (got %r)" % (what, v))
    return v


def connect(host, port, *, rails=1, dialect="ro", transport="auto", local_addrs=None,
            devices=None, slice_size=None, queue_depth=None, connect_timeout=5.0,
            op_timeout=10.0, busy_poll_us=None, tls=None, near=None):
    """Connects to a railwire server and brings up `rails` rails with one
    handshake; returns a Railset (a context manager), or raises:
    ConnectError (nothing listens / unreachable / bad name), PeerRejected
    (the server closed before its reply: a cap, the rail count, the
    dialect), Refused, Truncated, Timeout, InvalidArgument, ...

    dialect: "ro" (read-only layers) or "rw" (a read-write arena), as the
    server's port speaks.  transport: "auto" (verbs if an active RDMA port
    exists, else tcp), "tcp" or "verbs".  local_addrs (tcp) / devices
    (verbs, "dev[:port]"): rail i uses entry i mod len.  slice_size
    (bytes) and queue_depth (slices in flight per rail): None keeps the
    library's defaults (512 KiB, 16).  connect_timeout (seconds) bounds the
    TCP connect and each handshake step; op_timeout (seconds): a slice
    outstanding longer marks its rail dead (its slices move to the others).
    busy_poll_us: how long a thread waiting for completions keeps polling
    before it sleeps while transfers are in flight (microseconds, 0 = sleep
    at once; None = the library's 50): waking a sleeping thread costs more
    than a small transfer.  tls: a railwire.TLS for TLS 1.3 on the control
    connection and every tcp rail (None: plain).  near: place the rails on
    the NICs nearest "cuda:N" (a GPU), "numa:N" (a NUMA node) or "auto"
    (the CUDA device current on this thread, else this CPU's NUMA node);
    None keeps the usual placement, and local_addrs / devices win over it
    (docs/gpu.md).
    """
    if isinstance(rails, bool) or not isinstance(rails, int):
        raise InvalidArgument("rails must be an int (1..%d)" % MAX_RAILS)
    if not 1 <= rails <= MAX_RAILS:
        raise InvalidArgument("rails=%d: a railset has 1..%d rails" % (rails, MAX_RAILS))
    cto = ms(connect_timeout, "connect_timeout")
    if near is not None and not isinstance(near, str):
        raise InvalidArgument('near must be a str: "cuda:N", "numa:N" or "auto" (or None)')
    return _railwire._connect(
        host=str(host), port=str(int(port)) if not isinstance(port, str) else port,
        rails=rails, dialect=dialect_value(dialect), transport=transport_value(transport),
        local_addrs=per_rail(local_addrs, rails, "local_addrs"),
        devices=per_rail(devices, rails, "devices"),
        slice_size=_optional_positive(slice_size, "slice_size"),
        queue_depth=_optional_positive(queue_depth, "queue_depth"),
        connect_timeout_ms=cto, io_timeout_ms=cto,
        op_timeout_ms=ms(op_timeout, "op_timeout"), busy_poll_us=busy_poll(busy_poll_us),
        near=near, **_tls_client_kwargs(tls))


from . import aio  # noqa: E402  (railwire.aio: asyncio, needs connect above)

__all__ = ["connect", "Server", "TLS", "Railset", "MemoryRegion", "Completion", "READ", "WRITE",
           "MAX_RAILS", "strerror", "error_class", "set_log_level", "error_for_code",
           "errors", "aio"] + errors.__all__
