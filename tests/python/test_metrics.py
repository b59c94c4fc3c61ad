# SPDX-License-Identifier: MIT
"""Railset.metrics(): the railset's counters in the Prometheus text format
(railwire_railset_metrics), with the bytes a WRITE and a READ moved."""
import re

import numpy as np

import railwire


def value(text, name, **labels):
    total = None
    for line in text.splitlines():
        m = re.match(r"(\w+)(\{[^}]*\})? (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            total = (total or 0) + float(m.group(3))
    return total


def test_metrics_text_counts_the_bytes_moved():
    arena = np.zeros(1 << 20, dtype=np.uint8)
    with railwire.Server("rw", arena=arena, transport="tcp") as srv:
        with railwire.connect(*srv.address, dialect="rw", rails=2,
                              transport="tcp") as rs:
            buf = bytearray(b"\x5a" * 300000)
            mr = rs.register(buf)
            rs.write(mr, 0, len(buf), 0)
            rs.read(mr, 0, 4096, 0)
            text = rs.metrics()
    assert text.startswith("# HELP railwire_build_info ")
    assert "# TYPE railwire_client_written_bytes_total counter" in text
    assert value(text, "railwire_client_written_bytes_total") == 300000
    assert value(text, "railwire_client_read_bytes_total") == 4096
    assert value(text, "railwire_client_rails", state="up") == 2
    assert value(text, "railwire_client_rail_up", rail="1") == 1


def test_server_metrics_text_counts_what_it_served():
    arena = np.zeros(1 << 20, dtype=np.uint8)
    with railwire.Server("rw", arena=arena, transport="tcp") as srv:
        with railwire.connect(*srv.address, dialect="rw", rails=2,
                              transport="tcp") as rs:
            buf = bytearray(b"\x3c" * 200000)
            mr = rs.register(buf)
            rs.write(mr, 0, len(buf), 0)
            rs.read(mr, 0, 8192, 0)
        text = srv.metrics()
        assert text.startswith("# HELP railwire_build_info ")
        assert "# TYPE railwire_server_written_bytes_total counter" in text
        assert value(text, "railwire_server_written_bytes_total", transport="tcp") == 200000
        assert value(text, "railwire_server_read_bytes_total", transport="tcp") == 8192
        assert value(text, "railwire_server_sessions_opened_total") == 1
    try:
        srv.metrics()
    except railwire.Closed:
        pass
    else:
        raise AssertionError("metrics() of a closed server did not raise Closed")
