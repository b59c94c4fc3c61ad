#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compares the shared library built from this tree with the committed ABI
# baseline (abi/librailwire.so.1.abi) using abidiff.  Fails on an
# incompatible change (a removed or changed symbol, a changed public type:
# abidiff's ABI_INCOMPATIBLE_CHANGE bit, 8) and on any abidiff error (bits 1
# and 2).  Compatible changes (bit 4 alone: added functions, say) pass, with
# abidiff's report printed.
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
if [ $((rc & 8)) -ne 0 ]; then
  cat "$tmp/report"
  echo "abi: INCOMPATIBLE change against $ABI_BASELINE: see docs/abi.md (append fields, add"
  echo "     symbols in a new version node; never change or remove what 1.0 has)"
  exit 1
fi
if [ $((rc & 4)) -ne 0 ]; then
  cat "$tmp/report"
  echo "abi: compatible changes against $ABI_BASELINE (allowed)"
else
  echo "abi: no change against $ABI_BASELINE"
fi
exit 0
