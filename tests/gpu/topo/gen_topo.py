#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the hand-described hwloc XML machines of the gpu topology tests.

  server8.xml  2 sockets (NUMA 0, 1); each socket has one PCIe host bridge
               with two root ports, each root port a PCIe switch holding
               2 GPUs and 2 NICs: switch k has cuda 2k, 2k+1 and mlx5_2k,
               mlx5_2k+1 (netdevs enp<bus>s0np0).
  host2s.xml   2 sockets, no GPU: mlx5_0 on socket 0; mlx5_1 and mlx5_2
               on socket 1, each under its own host bridge.

Run it from this directory to regenerate the files (they are committed)."""
import itertools

gp = itertools.count(1)


def cpus(first, n):
    return "0x%08x" % (((1 << n) - 1) << first)


def obj(kind, attrs, body="", indent=2):
    a = " ".join('%s="%s"' % kv for kv in attrs.items())
    pad = " " * indent
    if not body:
        return '%s<object type="%s" %s gp_index="%d"/>\n' % (pad, kind, a, next(gp))
    return '%s<object type="%s" %s gp_index="%d">\n%s%s</object>\n' % (
        pad, kind, a, next(gp), body, pad)


def cpuattrs(cs, ns):
    return {"cpuset": cs, "complete_cpuset": cs, "nodeset": ns, "complete_nodeset": ns}


def package(idx, first_cpu, ncpu, io, ind):
    cs, ns = cpus(first_cpu, ncpu), "0x%08x" % (1 << idx)
    body = obj("NUMANode", dict(os_index=str(idx), **cpuattrs(cs, ns),
                                local_memory=str(64 << 30)), indent=ind + 2)
    for c in range(first_cpu, first_cpu + ncpu):
        one = cpus(c, 1)
        pu = obj("PU", dict(os_index=str(c), **cpuattrs(one, ns)), indent=ind + 4)
        body += obj("Core", dict(os_index=str(c), **cpuattrs(one, ns)), pu, indent=ind + 2)
    body += io
    return obj("Package", dict(os_index=str(idx), **cpuattrs(cs, ns)), body, indent=ind)


def busid(bus, dev=0, fn=0):
    return "0000:%02x:%02x.%x" % (bus, dev, fn)


def bridge(bus_id, sec, sub, depth, body, ind):
    a = {"pci_busid": bus_id, "pci_type": "0604 [1000:c030] [0000:0000] 00",
         "pci_link_speed": "0.000000", "bridge_type": "1-1", "depth": str(depth),
         "bridge_pci": "0000:[%02x-%02x]" % (sec, sub)}
    return obj("Bridge", a, body, indent=ind)


def host_bridge(sec, sub, body, ind):
    a = {"bridge_type": "0-1", "depth": "0", "bridge_pci": "0000:[%02x-%02x]" % (sec, sub)}
    return obj("Bridge", a, body, indent=ind)


def gpu(bus, ordinal, ind):
    osd = obj("OSDev", {"name": "cuda%d" % ordinal, "subtype": "CUDA", "osdev_type": "5"},
              indent=ind + 2)
    a = {"pci_busid": busid(bus), "pci_type": "0302 [10de:2335] [10de:18be] a1",
         "pci_link_speed": "31.507692"}
    return obj("PCIDev", a, osd, indent=ind)


def nic(bus, rdma, ind):
    osd = obj("OSDev", {"name": rdma, "osdev_type": "3"}, indent=ind + 2)
    osd += obj("OSDev", {"name": "enp%ds0np0" % bus, "osdev_type": "2"}, indent=ind + 2)
    a = {"pci_busid": busid(bus), "pci_type": "0207 [15b3:1021] [15b3:0023] 00",
         "pci_link_speed": "31.507692"}
    return obj("PCIDev", a, osd, indent=ind)


def switch(k, root_bus, ind):
    """Root port at root_bus:0k, switch upstream port, 4 downstream ports."""
    up_bus = root_bus + 1 + k * 8
    body = ""
    for p in range(4):
        dbus = up_bus + 2 + p
        dev = gpu(dbus, 2 * k + p, ind + 6) if p < 2 else nic(dbus, "mlx5_%d" % (2 * k + p - 2),
                                                               ind + 6)
        body += bridge(busid(up_bus + 1, p), dbus, dbus, 3, dev, ind + 4)
    up = bridge(busid(up_bus), up_bus + 1, up_bus + 5, 2, body, ind + 2)
    return bridge(busid(root_bus, k % 2 + 1), up_bus, up_bus + 5, 1, up, ind)


def machine(pkgs, ncpu):
    cs, ns = cpus(0, ncpu), "0x%08x" % ((1 << len(pkgs)) - 1)
    m = obj("Machine", dict(os_index="0", **cpuattrs(cs, ns)), "".join(pkgs), indent=2)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n'
            '<topology version="2.0">\n%s</topology>\n' % m)


def server8():
    pk = []
    for s in range(2):
        root = 0x10 + 0x40 * s
        sw = switch(2 * s, root, 8) + switch(2 * s + 1, root, 8)
        io = host_bridge(root, root + 0x3f, sw, 6)
        pk.append(package(s, 8 * s, 8, io, 4))
    return machine(pk, 16)


def host2s():
    p0 = host_bridge(0x17, 0x18, bridge(busid(0x17, 1), 0x18, 0x18, 1,
                                        nic(0x18, "mlx5_0", 10), 8), 6)
    p1 = host_bridge(0x85, 0x86, bridge(busid(0x85, 1), 0x86, 0x86, 1,
                                        nic(0x86, "mlx5_1", 10), 8), 6)
    p1 += host_bridge(0xa3, 0xa4, bridge(busid(0xa3, 1), 0xa4, 0xa4, 1,
                                         nic(0xa4, "mlx5_2", 10), 8), 6)
    return machine([package(0, 0, 4, p0, 4), package(1, 4, 4, p1, 4)], 8)


if __name__ == "__main__":
    for name, fn in (("server8.xml", server8), ("host2s.xml", host2s)):
        gp = itertools.count(1)
        with open(name, "w") as f:
            f.write(fn())
