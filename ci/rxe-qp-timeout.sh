#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Measures what a longer QP ACK timeout does on soft-RoCE (the rdma_rxe
# retransmit-timer bug described in docs/healing.md): boots the rxe VM and
# runs ci/rxe-qp-timeout-guest.sh there.  Not a CI stage (it measures).
#
#   bash ci/rxe-qp-timeout.sh BUILD_DIR [ROUNDS] ["14 18"]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
build=$(cd "${1:?usage: $0 BUILD_DIR [ROUNDS] [TIMEOUTS]}" && pwd -P)
vm=${RAILWIRE_VM_SCRIPT:-$repo/../shared/tools/rxe-vm/run-in-rxe-vm.sh}
stage=$build/qpt-stage
rm -rf "$stage" && mkdir -p "$stage/tools/railwire"
cp "$build/tools/railwire/railwire" "$stage/tools/railwire/"
export RXEVM_CACHE=${RXEVM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/railwire-rxe-vm}
export RXEVM_ACCEL=${RXEVM_ACCEL:-tcg}
out=$build/qpt-out
rm -rf "$out" && mkdir -p "$out"
bash "$vm" -t "${RAILWIRE_VM_TIMEOUT:-1800}" -x "$stage" -x "$repo/ci" -o "$out" -- \
  "bash $repo/ci/rxe-qp-timeout-guest.sh $stage ${2:-20} '${3:-14 18}'"
cat "$out/qp-timeout.txt"
