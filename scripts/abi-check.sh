#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compares the shared library built from this tree with the committed ABI
# baseline (abi/librailwire.so.1.abi).  Fails on abidiff errors (exit bits 1
# and 2) and on ABI_INCOMPATIBLE_CHANGE (bit 8: a symbol removed).  abidiff
# reports a moved, retyped or inserted struct member only as ABI_CHANGE (bit
# 4), the same bit as an added function or a member appended to a struct
# the caller sizes, which are compatible here; so bit 4 alone does not fail,
# and scripts/abi_layout.py holds the dump to railwire's layout rules
# instead (docs/abi.md).  Every change is printed.
#   bash scripts/abi-check.sh [BUILD_DIR]    # default build-abi; CI passes build
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/abi-lib.sh
abi_need_tools || exit 1
[ -f "$ABI_BASELINE" ] || { echo "abi: no baseline $ABI_BASELINE (bash scripts/abi-baseline.sh)"; exit 1; }
dir=${1:-build-abi}
lib=$(abi_build "$dir") || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
abi_dump "$lib" "$tmp/current.abi" || { echo "abi: abidw failed on $lib"; exit 1; }
abidiff --no-show-locs "$ABI_BASELINE" "$tmp/current.abi" >"$tmp/report"
rc=$?
if [ $((rc & 3)) -ne 0 ]; then
  cat "$tmp/report"; echo "abi: abidiff failed (exit $rc)"; exit 1
fi
# abidiff's bit 8: a symbol removed.  The layout rules (members moved,
# retyped or inserted; fixed structs resized; signatures) are checked by
# scripts/abi_layout.py, since abidiff reports those only as changes.
/usr/bin/python3 scripts/abi_layout.py "$ABI_BASELINE" "$tmp/current.abi" >"$tmp/layout"
lrc=$?
if [ $((rc & 8)) -ne 0 ] || [ "$lrc" -ne 0 ]; then
  cat "$tmp/report" "$tmp/layout"
  echo "abi: INCOMPATIBLE change against $ABI_BASELINE (abidiff exit $rc, layout exit $lrc):"
  echo "     1.0's symbols, signatures and struct layouts stay; append members only to the"
  echo "     structs the caller sizes; add symbols in a new version node (docs/abi.md)"
  exit 1
fi
if [ "$rc" -ne 0 ]; then
  cat "$tmp/report"
  echo "abi: compatible changes against $ABI_BASELINE (allowed)"
else
  echo "abi: no change against $ABI_BASELINE"
fi
exit 0
