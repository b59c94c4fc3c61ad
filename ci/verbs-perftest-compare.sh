#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# railwire's verbs bench against perftest at small sizes (4 KiB, 64 KiB;
# READ and WRITE; message rate and MB/s, as ratios from the same run), in
# the soft-RoCE qemu guest (../shared/tools/rxe-vm/).  By hand only: too
# slow for CI, and nothing is asserted (docs/benchmarks-verbs.md).
#
#   ci/verbs-perftest-compare.sh BUILD_DIR
#
# Environment: PT_DEPTH (16), PT_ROUNDS (7), PT_SIZES ("4096 65536"),
# PT_OPS ("read write"), PT_CMD_TIMEOUT (90 s per guest command),
# RAILWIRE_VM_TIMEOUT (whole boot + run, default 1500 s), RXEVM_ACCEL (tcg),
# RXEVM_CACHE, RAILWIRE_VM_SCRIPT as in ci/verbs-vm.sh.  The table lands in
# BUILD_DIR/verbs-perftest-out/verbs-perftest.txt.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
build=$(cd "$1" && pwd -P)
vm=${RAILWIRE_VM_SCRIPT:-$repo/../shared/tools/rxe-vm/run-in-rxe-vm.sh}
[ -f "$vm" ] || { echo "verbs-perftest: $vm not found (../shared/tools/rxe-vm/)" >&2; exit 1; }
[ -x "$build/tools/railwire/railwire" ] ||
  { echo "verbs-perftest: $build/tools/railwire/railwire is missing: build the tree first" >&2; exit 1; }

stage=$build/verbs-perftest-stage
rm -rf "$stage"
mkdir -p "$stage/tools/railwire" "$stage/ci"
cp "$build/tools/railwire/railwire" "$stage/tools/railwire/"
cp "$repo/ci/verbs-perftest-guest.sh" "$repo/ci/rxe-guest-lib.sh" "$stage/ci/"

export RXEVM_CACHE=${RXEVM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/railwire-rxe-vm}
export RXEVM_ACCEL=${RXEVM_ACCEL:-tcg}
mkdir -p "$RXEVM_CACHE"
out=$build/verbs-perftest-out
rm -rf "$out"
mkdir -p "$out"

envs=()
for v in PT_DEPTH PT_ROUNDS PT_SIZES PT_OPS PT_CMD_TIMEOUT; do
  [ -n "${!v:-}" ] && envs+=(-e "$v=${!v}")
done
echo "verbs-perftest: host load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
t0=$(date +%s)
rc=0
bash "$vm" -t "${RAILWIRE_VM_TIMEOUT:-1500}" -x "$stage" -o "$out" "${envs[@]}" -- \
  "bash $stage/ci/verbs-perftest-guest.sh $stage" || rc=$?
echo "verbs-perftest: VM run took $(( $(date +%s) - t0 )) s (exit status $rc);" \
     "host load now $(cut -d' ' -f1-3 /proc/loadavg)"
[ -f "$out/verbs-perftest.txt" ] && cat "$out/verbs-perftest.txt"
exit $rc
