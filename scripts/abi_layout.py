#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Holds a library's ABI dump (abidw XML) to the baseline's, by railwire's
rules (docs/abi.md).  abidiff reports a moved or retyped struct member only
as a change (exit bit 4), never as incompatible (bit 8), and cannot tell an
appended member from an inserted one reliably; this does:

  - every baseline function is still exported, with the same version node,
    and the same parameter and return types (compared by what they are, so
    a struct that grew does not change the type of a pointer to it);
  - every member of a baseline struct keeps its name, offset and type;
    members named reserved* may be given a meaning (renamed or split) as
    long as what replaces them stays inside the struct's old size;
  - a struct grows only where the caller says its size (GROWABLE): members
    are appended past the old end; every other struct keeps its size;
  - enumerators keep their values.

Usage: abi_layout.py BASELINE.abi CURRENT.abi  (exit 0: compatible; 1: not,
each violation printed)."""
import sys
import xml.etree.ElementTree as ET

# Structs read or written through a size the caller passes: struct_size
# (options) or an element size argument (stats).
GROWABLE = {"railwire_railset_opts", "railwire_server_opts", "railwire_rail_stats",
            "railwire_server_stats"}


class Corpus:
    def __init__(self, path):
        root = ET.parse(path).getroot()
        self.types = {}
        self.structs = {}
        self.enums = {}
        self.funcs = {}
        for el in root.iter():
            tid = el.get("id")
            if tid and el.tag != "subrange":
                self.types[tid] = el
            if el.tag == "class-decl" and el.get("is-declaration-only") != "yes":
                self.structs[el.get("name")] = el
            elif el.tag == "enum-decl":
                self.enums[el.get("name")] = {e.get("name"): e.get("value")
                                              for e in el.findall("enumerator")}
            elif el.tag == "function-decl" and el.get("elf-symbol-id"):
                self.funcs[el.get("name")] = el

    def describe(self, tid, depth=0):
        """What a type is, as a string that does not depend on ids or on the
        members of the structs it names."""
        el = self.types.get(tid)
        if el is None or depth > 20:
            return "?" + str(tid)
        t = el.tag
        if t in ("type-decl", "class-decl", "union-decl", "enum-decl"):
            return "%s %s" % (t.split("-")[0], el.get("name"))
        if t == "typedef-decl":
            return "typedef " + el.get("name")
        if t == "pointer-type-def":
            return "ptr(%s)" % self.describe(el.get("type-id"), depth + 1)
        if t == "qualified-type-def":
            q = "".join(k for k in ("const", "volatile", "restrict") if el.get(k) == "yes")
            return "%s(%s)" % (q, self.describe(el.get("type-id"), depth + 1))
        if t == "array-type-def":
            dims = [s.get("length") for s in el.findall("subrange")]
            return "array%s(%s)" % (dims, self.describe(el.get("type-id"), depth + 1))
        if t == "function-type":
            ps = [self.describe(p.get("type-id"), depth + 1) for p in el.findall("parameter")]
            r = el.find("return")
            return "fn(%s)->%s" % (",".join(ps), self.describe(r.get("type-id"), depth + 1))
        return t + "?"

    def members(self, name):
        out = []
        for dm in self.structs[name].findall("data-member"):
            v = dm.find("var-decl")
            out.append((v.get("name"), int(dm.get("layout-offset-in-bits")),
                        self.describe(v.get("type-id"))))
        return out

    def signature(self, f):
        ps = [self.describe(p.get("type-id")) for p in f.findall("parameter")]
        return ps, self.describe(f.find("return").get("type-id"))


def check(base, cur):
    bad = []
    for name, f in base.funcs.items():
        g = cur.funcs.get(name)
        if g is None:
            bad.append("function %s is gone" % name)
            continue
        if f.get("elf-symbol-id") != g.get("elf-symbol-id"):
            bad.append("function %s: symbol %s is now %s" % (name, f.get("elf-symbol-id"),
                                                            g.get("elf-symbol-id")))
        if base.signature(f) != cur.signature(g):
            bad.append("function %s: signature %s is now %s" % (name, base.signature(f),
                                                               cur.signature(g)))
    for name in base.structs:
        if name not in cur.structs:
            bad.append("struct %s is no longer defined in the public headers" % name)
            continue
        old_size = int(base.structs[name].get("size-in-bits"))
        new_size = int(cur.structs[name].get("size-in-bits"))
        if new_size < old_size or (new_size != old_size and name not in GROWABLE):
            bad.append("struct %s: size %d bits is now %d (%s)" % (
                name, old_size, new_size,
                "grows only by appending" if name in GROWABLE else "fixed for 1.x"))
        old = base.members(name)
        new = {m[0]: m for m in cur.members(name)}
        reserved = []  # bit ranges of baseline reserved members
        for mname, off, typ in old:
            if mname.startswith("reserved"):
                reserved.append(off)
                continue
            m = new.get(mname)
            if m is None:
                bad.append("struct %s: member %s is gone" % (name, mname))
            elif m[1] != off or m[2] != typ:
                bad.append("struct %s: member %s at bit %d (%s) is now at bit %d (%s)" % (
                    name, mname, off, typ, m[1], m[2]))
        old_names = {m[0] for m in old}
        first_reserved = min(reserved) if reserved else None
        for mname, off, typ in cur.members(name):
            if mname in old_names:
                continue
            if off >= old_size:
                continue  # appended (the size check above says where that is allowed)
            if first_reserved is not None and off >= first_reserved:
                continue  # in the reserved space, which ends at the old size
            bad.append("struct %s: new member %s at bit %d is inside the 1.0 layout "
                       "(append past bit %d, or use reserved space)" % (name, mname, off, old_size))
    for name, vals in base.enums.items():
        cvals = cur.enums.get(name)
        if cvals is None:
            bad.append("enum %s is gone" % name)
            continue
        for k, v in vals.items():
            if cvals.get(k) != v:
                bad.append("enum %s: %s = %s is now %s" % (name, k, v, cvals.get(k)))
    return bad


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    bad = check(Corpus(sys.argv[1]), Corpus(sys.argv[2]))
    for b in bad:
        print("abi layout: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
