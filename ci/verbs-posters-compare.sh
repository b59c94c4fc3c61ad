#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The verbs client's shared poster threads against one poster thread per ep
# (1, 2 and 4 rails, READ and WRITE, MB/s and the 2-rail ratio, same run),
# in the soft-RoCE qemu guest (../shared/tools/rxe-vm/).  By hand only;
# nothing is asserted (docs/benchmarks-verbs.md).
#
#   ci/verbs-posters-compare.sh BUILD_DIR
#
# Environment: PO_SIZE (1048576), PO_ROUNDS (3), PO_CMD_TIMEOUT (120 s per
# bench), RAILWIRE_VM_TIMEOUT (whole boot + run, default 1500 s), RXEVM_ACCEL
# (tcg), RXEVM_CACHE, RAILWIRE_VM_SCRIPT as in ci/verbs-vm.sh.  The table
# lands in BUILD_DIR/verbs-posters-out/verbs-posters.txt.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
build=$(cd "$1" && pwd -P)
vm=${RAILWIRE_VM_SCRIPT:-$repo/../shared/tools/rxe-vm/run-in-rxe-vm.sh}
[ -f "$vm" ] || { echo "verbs-posters: $vm not found (../shared/tools/rxe-vm/)" >&2; exit 1; }
[ -x "$build/tools/railwire/railwire" ] ||
  { echo "verbs-posters: $build/tools/railwire/railwire is missing: build the tree first" >&2; exit 1; }

stage=$build/verbs-posters-stage
rm -rf "$stage"
mkdir -p "$stage/tools/railwire" "$stage/ci"
cp "$build/tools/railwire/railwire" "$stage/tools/railwire/"
cp "$repo/ci/verbs-posters-guest.sh" "$repo/ci/rxe-guest-lib.sh" "$stage/ci/"

export RXEVM_CACHE=${RXEVM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/railwire-rxe-vm}
export RXEVM_ACCEL=${RXEVM_ACCEL:-tcg}
mkdir -p "$RXEVM_CACHE"
out=$build/verbs-posters-out
rm -rf "$out"
mkdir -p "$out"

envs=()
for v in PO_SIZE PO_ROUNDS PO_CMD_TIMEOUT; do
  [ -n "${!v:-}" ] && envs+=(-e "$v=${!v}")
done
echo "verbs-posters: host load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
t0=$(date +%s)
rc=0
bash "$vm" -t "${RAILWIRE_VM_TIMEOUT:-1500}" -x "$stage" -o "$out" "${envs[@]}" -- \
  "bash $stage/ci/verbs-posters-guest.sh $stage" || rc=$?
echo "verbs-posters: VM run took $(( $(date +%s) - t0 )) s (exit status $rc);" \
     "host load now $(cut -d' ' -f1-3 /proc/loadavg)"
[ -f "$out/verbs-posters.txt" ] && cat "$out/verbs-posters.txt"
exit $rc
