#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The linker map and the public headers name the same symbols, and the
# shared library exports exactly those, each with a version node of the map:
#   check_map.sh INCLUDE_DIR MAP_FILE [LIBRARY]
# Fails (listing the names) when a RAILWIRE_API function of the headers is
# missing from the map (it would not be exported), when the map names a
# function no header declares, when the map holds a wildcard, or when the
# library exports anything else.
set -euo pipefail
inc=$1 map=$2 lib=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# RAILWIRE_API declarations: the name before the first "(" of each (the
# declarations may span lines; comments are dropped first).
find "$inc" -name '*.h' -print0 | xargs -0 cat |
  perl -0pe 's:/\*.*?\*/::gs' | sed -e '/^[[:space:]]*#/d' -e 's://.*$::' | tr '\n' ' ' |
  grep -o 'RAILWIRE_API[^;(]*(' |
  sed -E 's/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\($/\1/' | sort -u >"$tmp/headers"
# The map's global names: every "name;" outside "local:" sections.
perl -0pe 's:/\*.*?\*/::gs; s:#[^\n]*::g' "$map" |
  awk '/local:/ {loc=1} /global:/ {loc=0} /}/ {loc=0}
       { gsub(/global:|local:/, ""); n=split($0, w, /[ \t;{}]+/);
         for (i = 1; i <= n; i++) if (w[i] != "" && !loc && w[i] !~ /^RAILWIRE_[0-9.]+$/) print w[i] }' |
  sort -u >"$tmp/map"
if grep -q '[*?]' "$tmp/map"; then
  echo "FAIL: $map exports by wildcard: $(grep '[*?]' "$tmp/map" | tr '\n' ' ')"; fail=1
fi
[ -s "$tmp/headers" ] || { echo "FAIL: no RAILWIRE_API declaration found under $inc"; exit 1; }
missing=$(comm -23 "$tmp/headers" "$tmp/map")
extra=$(comm -13 "$tmp/headers" "$tmp/map")
if [ -n "$missing" ]; then
  echo "FAIL: declared RAILWIRE_API in $inc but not in $map (add them to a new version node):"
  echo "$missing" | sed 's/^/  /'; fail=1
fi
if [ -n "$extra" ]; then
  echo "FAIL: in $map but declared by no header under $inc:"; echo "$extra" | sed 's/^/  /'; fail=1
fi
if [ -n "$lib" ]; then
  # Defined dynamic symbols with their version: "name@@NODE" (the node
  # symbols themselves are skipped).
  nodes=$(grep -oE '^[[:space:]]*RAILWIRE_[0-9.]+' "$map" | tr -d ' \t' | sort -u)
  objdump -T "$lib" | awk '$2 ~ /g/ && $4 != "*UND*" && NF >= 7 {print $(NF-1), $NF}' |
    sed 's/^(\(.*\))$/\1/' >"$tmp/dyn"
  awk '{print $2}' "$tmp/dyn" | grep -vxF -f <(echo "$nodes") | sort -u >"$tmp/exported" || true
  bad=$(awk -v n="$nodes" 'BEGIN{split(n, a, "\n"); for (i in a) ok[a[i]]=1}
        !($1 in ok) && !($2 in ok) {print $2 " (version " $1 ")"}' "$tmp/dyn")
  if [ -n "$bad" ]; then
    echo "FAIL: $lib exports symbols outside the map's version nodes:"; echo "$bad" | sed 's/^/  /'; fail=1
  fi
  diff_lib=$(comm -3 "$tmp/map" "$tmp/exported")
  if [ -n "$diff_lib" ]; then
    echo "FAIL: $lib exports a different set than $map names (left: map only, right: library only):"
    echo "$diff_lib" | sed 's/^/  /'; fail=1
  fi
fi
[ "$fail" = 0 ] && echo "abi_map: $(wc -l <"$tmp/map") symbols; headers, map${lib:+ and library} agree"
exit "$fail"
