#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The verbs CI stage: boots the soft-RoCE qemu guest (../shared/tools/rxe-vm/)
# with the build directory inside it and runs ci/verbs-vm-guest.sh there:
# `railwire devices`, the verbs suites (tests/verbs), `railwire serve` +
# `railwire bench --verify` as separate processes, the perftest comparison
# and, last, the link-down test.  Exits non-zero on any failure.
#
#   ci/verbs-vm.sh BUILD_DIR
#
# Environment: RXEVM_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/railwire-rxe-vm),
# RXEVM_ACCEL (default tcg: KVM aborted or hung on the CI machines, see
# docs/verbs.md), RAILWIRE_VM_SCRIPT (path of run-in-rxe-vm.sh),
# RAILWIRE_VM_TIMEOUT (seconds, default 900), RAILWIRE_VM_BENCH=0 skips the
# benchmark.  Results land in BUILD_DIR/verbs-vm-out/.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
build=$(cd "$1" && pwd -P)
vm=${RAILWIRE_VM_SCRIPT:-$repo/../shared/tools/rxe-vm/run-in-rxe-vm.sh}
if [ ! -f "$vm" ]; then
  echo "verbs-vm: $vm not found: the soft-RoCE VM tool lives in ../shared/tools/rxe-vm/" >&2
  exit 1
fi
for f in tools/railwire/railwire tests/verbs/verbs_transport tests/verbs/verbs_railset \
         tests/verbs/verbs_linkdown; do
  if [ ! -x "$build/$f" ]; then
    echo "verbs-vm: $build/$f is missing: build the tree (with libibverbs-dev) first" >&2
    exit 1
  fi
done

# Only what runs in the guest travels (the binaries link railwire statically;
# the VM tool copies the system libraries ldd finds).
stage=$build/verbs-vm-stage
rm -rf "$stage"
mkdir -p "$stage/tools/railwire" "$stage/tests/verbs"
cp "$build/tools/railwire/railwire" "$stage/tools/railwire/"
cp "$build"/tests/verbs/verbs_transport "$build"/tests/verbs/verbs_railset \
   "$build"/tests/verbs/verbs_linkdown "$stage/tests/verbs/"
# GPU memory on verbs (issue 17): the suite and the stand-in CUDA driver it
# loads (tests/gpu/cuda_standin.c), when this build has them.
if [ -x "$build/tests/verbs/verbs_mem" ]; then
  cp "$build/tests/verbs/verbs_mem" "$stage/tests/verbs/"
  cp "$build"/tests/gpu/librailwire_cuda_standin.so "$stage/tests/verbs/" 2>/dev/null || true
fi
if [ -x "$build/tests/verbs/verbs_server_mem" ]; then
  cp "$build/tests/verbs/verbs_server_mem" "$stage/tests/verbs/"
  cp "$build"/tests/gpu/librailwire_cuda_standin.so "$stage/tests/verbs/" 2>/dev/null || true
fi

export RXEVM_CACHE=${RXEVM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/railwire-rxe-vm}
export RXEVM_ACCEL=${RXEVM_ACCEL:-tcg}
mkdir -p "$RXEVM_CACHE"
out=$build/verbs-vm-out
rm -rf "$out"
mkdir -p "$out"

t0=$(date +%s)
rc=0
bash "$vm" -t "${RAILWIRE_VM_TIMEOUT:-900}" -x "$stage" -x "$repo/ci" -o "$out" \
  -e "RAILWIRE_VM_BENCH=${RAILWIRE_VM_BENCH:-1}" -- \
  "bash $repo/ci/verbs-vm-guest.sh $stage" || rc=$?
t1=$(date +%s)

echo "verbs-vm: VM stage took $((t1 - t0)) s (exit status $rc)"
if [ -f "$out/bench-verbs.txt" ]; then
  echo "verbs-vm: benchmark summary:"
  cat "$out/bench-verbs.txt"
fi
exit $rc
