# SPDX-License-Identifier: MIT
"""railwire.Error and one subclass per RAILWIRE_E_* code of
include/railwire/error.h.

Every exception carries ``.code`` (the negative RAILWIRE_E_* value),
``.error_class`` (the C library's short class name, e.g. "peer-rejected")
and a message ending in railwire_strerror(code), which says what to check.
A few also derive from the matching built-in exception (InvalidArgument is a
ValueError, Timeout a TimeoutError, NoMemory a MemoryError, ConnectError a
ConnectionError) so generic handlers keep working.
"""
from . import _railwire


class Error(Exception):
    """Base class of every railwire failure."""

    #: name of the RAILWIRE_E_* code without the prefix, set on subclasses
    code_name = None

    def __init__(self, message, code=None):
        super().__init__(message)
        if code is None:
            code = _railwire.ERROR_CODES.get(self.code_name, 0)
        #: the RAILWIRE_E_* value (negative int)
        self.code = code
        #: short class name from railwire_error_class(), e.g. "timeout"
        self.error_class = _railwire.error_class(code)


def _define(name, code_name, doc, *bases):
    cls = type(name, (Error,) + bases, {"__doc__": doc, "code_name": code_name,
                                        "__module__": "railwire"})
    return cls


# The wire classes of spec/WIRE.md.
PeerRejected = _define("PeerRejected", "PEER_REJECTED",
                       "The server closed before its reply: a cap, the rail count or the "
                       "dialect; see the server's log.")
Truncated = _define("Truncated", "TRUNCATED", "The peer's reply ended inside a record.")
BadRailCount = _define("BadRailCount", "BAD_RAIL_COUNT", "RO rail count 0 or above 8.")
RailCountMismatch = _define("RailCountMismatch", "RAIL_COUNT_MISMATCH",
                            "The server framed or echoed another rail count than asked for.")
BadLayerCount = _define("BadLayerCount", "BAD_LAYER_COUNT",
                        "RO layer count 0 or above 4096 (also what a dialect mismatch looks like).")
Refused = _define("Refused", "REFUSED", "The server's ack was not STATUS_OK.")
# Codec plumbing.
NeedMore = _define("NeedMore", "NEED_MORE", "A decoder needs more bytes.")
NoSpace = _define("NoSpace", "NOSPACE", "An encoder's output buffer is too small.")
InvalidArgument = _define("InvalidArgument", "INVALID", "An invalid argument.", ValueError)
InvalidState = _define("InvalidState", "STATE",
                       "Not allowed in the object's current state (e.g. closing a region that "
                       "transfers still use).")
# Runtime.
NoMemory = _define("NoMemory", "NOMEM", "Out of memory.", MemoryError)
Timeout = _define("Timeout", "TIMEOUT", "A wait ran out of time.", TimeoutError)
ConnectError = _define("ConnectError", "CONNECT",
                       "Could not connect: refused, unreachable or a bad address.", ConnectionError)
IOFailure = _define("IOFailure", "IO", "A connection failed or was reset mid-operation.")
RailDown = _define("RailDown", "RAIL_DOWN", "The rail carrying an operation failed.")
AllRailsDown = _define("AllRailsDown", "ALL_RAILS_DOWN", "Every rail of the railset failed.")
RemoteAccess = _define("RemoteAccess", "REMOTE_ACCESS",
                       "Bad key, out of bounds, no such layer, or a WRITE to read-only memory.")
LimitExceeded = _define("LimitExceeded", "LIMIT", "A configured cap or queue bound was exceeded.")
NoDevice = _define("NoDevice", "NO_DEVICE", "No usable RDMA device or port.")
VerbsError = _define("VerbsError", "VERBS", "A libibverbs call failed (the log names which).")
QpRtrFailed = _define("QpRtrFailed", "QP_RTR",
                      "A queue pair failed to reach RTR: check MTU and GID on both sides.")
RetryExceeded = _define("RetryExceeded", "RETRY_EXCEEDED",
                        "Transport retries exceeded: check MTU, GID, cabling.")
Unsupported = _define("Unsupported", "UNSUPPORTED", "Not supported by this transport or build.")
Closed = _define("Closed", "CLOSED", "The object was closed (or closed while the operation was pending).")
ProtocolError = _define("ProtocolError", "PROTOCOL", "The peer sent bytes this side cannot accept.")
SystemCallFailed = _define("SystemCallFailed", "SYSTEM",
                           "An OS call failed (the log names which and errno).")
TLSError = _define("TLSError", "TLS",
                   "TLS failed: the handshake, the credentials or a bad record (the log says "
                   "what to check).")

#: RAILWIRE_E_* value -> exception class
BY_CODE = {}
for _cls in list(globals().values()):
    if isinstance(_cls, type) and issubclass(_cls, Error) and _cls.code_name:
        BY_CODE[_railwire.ERROR_CODES[_cls.code_name]] = _cls
del _cls

__all__ = ["Error", "error_for_code", "BY_CODE"] + sorted(c.__name__ for c in BY_CODE.values())


def error_for_code(code, context=None):
    """Returns (does not raise) the exception for RAILWIRE_E_* `code`: an
    instance of its subclass (Error itself for an unknown code), with the
    message "<context>: <class>: <strerror>"."""
    msg = "%s: %s" % (_railwire.error_class(code), _railwire.strerror(code))
    if context:
        msg = "%s: %s" % (context, msg)
    return BY_CODE.get(code, Error)(msg, code)


def _factory(code, message):
    return BY_CODE.get(code, Error)(message, code)


_railwire._set_error_factory(_factory)
