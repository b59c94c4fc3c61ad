#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The dependency graph of src/ and its cycles.
#   includes: file -> header, from the #include "..." lines of src/ (a
#             header's edges are its own includes);
#   calls:    x.c -> y.c when x.c's object uses a function or variable that
#             y.c's object defines (nm over a build's object files; a
#             static inline function in a header is the header's, not an edge).
# Prints the edges of a folder (default src/rail/client) and every cycle
# (strongly connected component of more than one file) in both graphs.
#   bash scripts/include-graph.sh                   # build/, src/rail/client
#   BUILD_DIR=build-x bash scripts/include-graph.sh src/rail/server
#   EDGES=0 bash scripts/include-graph.sh           # cycles only
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
folder="${1:-src/rail/client}"
edges="${EDGES:-1}"
cd "$root"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# includes
for f in $(find src -name '*.[ch]' | sort); do
  sed -n 's/^#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | while read -r h; do
    if [ -f "src/$h" ]; then echo "$f src/$h"; elif [ -f "$(dirname "$f")/$h" ]; then echo "$f $(dirname "$f")/$h"; fi
  done
done > "$tmp/inc"
# calls (needs a build)
: > "$tmp/sym"
if [ -d "$build" ]; then
  find "$build" -path '*CMakeFiles/rw_*' -name '*.c.o' | sort | while read -r o; do
    src="src/${o##*/src/}"; src="${src%.o}"
    nm "$o" 2>/dev/null | awk -v s="$src" '$2 ~ /^[TDBRC]$/ {print "D", s, $3} $1 == "U" {print "U", s, $2}'
  done > "$tmp/sym"
fi
/usr/bin/python3 - "$tmp/inc" "$tmp/sym" "$folder" "$edges" <<'PY'
import sys, collections
inc, sym, folder, show = sys.argv[1], sys.argv[2], sys.argv[3].rstrip('/') + '/', sys.argv[4] == '1'
def graph_of(pairs):
    g = collections.defaultdict(set)
    for a, b in pairs:
        if a != b:
            g[a].add(b)
    return g
def sccs(g):
    idx, low, st, on, out, n = {}, {}, [], set(), [], [0]
    nodes = set(g) | {b for v in g.values() for b in v}
    def visit(v):
        stack = [(v, iter(sorted(g.get(v, ()))))]
        idx[v] = low[v] = n[0]; n[0] += 1; st.append(v); on.add(v)
        while stack:
            u, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                if stack:
                    low[stack[-1][0]] = min(low[stack[-1][0]], low[u])
                if low[u] == idx[u]:
                    comp = []
                    while True:
                        w = st.pop(); on.discard(w); comp.append(w)
                        if w == u: break
                    if len(comp) > 1: out.append(sorted(comp))
            elif nxt not in idx:
                idx[nxt] = low[nxt] = n[0]; n[0] += 1; st.append(nxt); on.add(nxt)
                stack.append((nxt, iter(sorted(g.get(nxt, ())))))
            elif nxt in on:
                low[u] = min(low[u], idx[nxt])
    for v in sorted(nodes):
        if v not in idx: visit(v)
    return out
inc_pairs = [l.split() for l in open(inc) if l.strip()]
defs, uses = {}, collections.defaultdict(set)
for l in open(sym):
    k, f, s = l.split()
    if k == 'D': defs.setdefault(s, f)
    else: uses[f].add(s)
call_pairs = [(f, defs[s]) for f, ss in uses.items() for s in ss if s in defs]
for name, pairs in (('includes', inc_pairs), ('calls', call_pairs)):
    g = graph_of(pairs)
    if show:
        print(f'== {name} of {folder}')
        for a in sorted(g):
            if a.startswith(folder):
                t = sorted(b.replace(folder, '') for b in g[a])
                print(f'  {a.replace(folder, "")} -> {" ".join(t)}')
    cyc = sccs(g)
    print(f'== {name}: {len(cyc)} cycle(s) in src/')
    for c in cyc:
        print('  ' + ' <-> '.join(c))
    if name == 'calls' and not pairs:
        print('  (no objects under the build dir: build first, or set BUILD_DIR)')
PY
