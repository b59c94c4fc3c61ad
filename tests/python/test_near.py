# SPDX-License-Identifier: MIT
"""connect(near=...): the accepted forms connect (the rails keep the usual
placement when the topology knows none of this host's interfaces), bad
strings and types are refused before anything is dialled."""
import os

import numpy as np
import pytest

import railwire

TOPO = os.path.join(os.path.dirname(__file__), "..", "gpu", "topo", "host2s.xml")


@pytest.mark.parametrize("near", ["numa:0", "numa:1", "auto", None])
def test_near_connects_and_reads(rw_server, arena, near, monkeypatch):
    monkeypatch.setenv("RAILWIRE_HWLOC_XML", TOPO)
    with railwire.connect(*rw_server.address, rails=2, dialect="rw", transport="tcp",
                          near=near) as rs:
        buf = np.zeros(1 << 20, dtype=np.uint8)
        mr = rs.register(buf)
        rs.read(mr, 0, 1 << 20, remote_offset=5)
        assert bytes(buf) == bytes(arena[5:5 + (1 << 20)])


@pytest.mark.parametrize("near", ["gpu:0", "cuda:", "numa:x", "Auto", "cuda:1 "])
def test_bad_near_is_refused(rw_server, near):
    with pytest.raises(railwire.InvalidArgument):
        railwire.connect(*rw_server.address, dialect="rw", transport="tcp", near=near)


def test_near_must_be_a_string(rw_server):
    with pytest.raises(railwire.InvalidArgument):
        railwire.connect(*rw_server.address, dialect="rw", transport="tcp", near=3)
