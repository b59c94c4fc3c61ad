# SPDX-License-Identifier: MIT
"""Argument conversions shared by connect() and Server()."""
import math

from . import _railwire
from .errors import InvalidArgument

_DIALECTS = {"ro": _railwire.DIALECT_RO, "rw": _railwire.DIALECT_RW}
_TRANSPORTS = {"auto": _railwire.TRANSPORT_AUTO, "tcp": _railwire.TRANSPORT_TCP,
               "verbs": _railwire.TRANSPORT_VERBS}


def dialect_value(d):
    try:
        return _DIALECTS[str(d).lower()]
    except KeyError:
        raise InvalidArgument("dialect %r: use 'ro' (read-only layers) or 'rw' (read-write "
                              "arena)" % (d,)) from None


def transport_value(t):
    try:
        return _TRANSPORTS[str(t).lower()]
    except KeyError:
        raise InvalidArgument("transport %r: use 'auto', 'tcp' or 'verbs'" % (t,)) from None


def ms(seconds, what):
    """Seconds (int or float, > 0) as whole milliseconds, at least 1."""
    try:
        s = float(seconds)
    except (TypeError, ValueError):
        raise InvalidArgument("%s must be a number of seconds (got %r)" % (what, seconds)) from None
    if not s > 0 or s > 86400 * 365:
        raise InvalidArgument("%s must be > 0 seconds (got %r)" % (what, seconds))
    return max(1, int(math.ceil(s * 1000)))


def busy_poll(us, what="busy_poll_us"):
    """None (the library's default, 50), or microseconds 0..1000000 (0 =
    sleep at once) as the C option's value (0 there means the default, so
    0 becomes -1)."""
    if us is None:
        return 0
    if isinstance(us, bool) or not isinstance(us, int) or not 0 <= us <= 1000000:
        raise InvalidArgument("%s must be None or an int of microseconds 0..1000000 (0 = sleep "
                              "at once; got %r)" % (what, us))
    return us if us else -1


def per_rail(values, rails, what):
    """None, or a list of `rails` entries: rail i gets values[i mod n]."""
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    values = list(values)
    if not values:
        raise InvalidArgument("%s must be None or a non-empty list" % what)
    return [None if v is None else str(v) for v in (values[i % len(values)] for i in range(rails))]


def split_hostport(s, what):
    """'host:port' or '[v6]:port' -> (host, port int)."""
    s = str(s)
    if s.startswith("["):
        host, sep, rest = s[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise InvalidArgument("%s %r: use [IPv6]:PORT" % (what, s))
        port = rest[1:]
    else:
        host, sep, port = s.rpartition(":")
        if not sep or not host:
            raise InvalidArgument("%s %r: use HOST:PORT" % (what, s))
    try:
        p = int(port)
    except ValueError:
        p = -1
    if not 0 <= p <= 65535:
        raise InvalidArgument("%s %r: the port must be 0..65535" % (what, s))
    return host, p
