# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Host side of the by-hand benchmarks that run in the soft-RoCE qemu guest
# (sourced by ci/verbs-perftest-compare.sh and ci/verbs-posters-compare.sh).
#
# rxe_bench_run NAME "VAR..." BUILD_DIR
#   Stages BUILD_DIR's `railwire` with ci/NAME-guest.sh and
#   ci/rxe-guest-lib.sh, boots the guest (../shared/tools/rxe-vm/, or
#   RAILWIRE_VM_SCRIPT) for at most RAILWIRE_VM_TIMEOUT seconds (default
#   1500), passes each of the VARs that is set into it, runs the guest script there
#   and prints BUILD_DIR/NAME-out/NAME.txt, the table it writes.  Exits with
#   the guest command's status.  RXEVM_ACCEL defaults to tcg, RXEVM_CACHE to
#   ${XDG_CACHE_HOME:-$HOME/.cache}/railwire-rxe-vm.
rxe_bench_run() {
  local name=$1 vars=$2 build repo vm stage out rc=0 t0 v
  local -a envs=()
  shift 2
  if [ $# -ne 1 ] || [ ! -d "$1" ]; then
    echo "usage: ci/$name-compare.sh BUILD_DIR" >&2
    exit 2
  fi
  build=$(cd "$1" && pwd -P)
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
  vm=${RAILWIRE_VM_SCRIPT:-$repo/../shared/tools/rxe-vm/run-in-rxe-vm.sh}
  [ -f "$vm" ] || { echo "$name: $vm not found (../shared/tools/rxe-vm/)" >&2; exit 1; }
  [ -x "$build/tools/railwire/railwire" ] ||
    { echo "$name: $build/tools/railwire/railwire is missing: build the tree first" >&2; exit 1; }

  stage=$build/$name-stage
  rm -rf "$stage"
  mkdir -p "$stage/tools/railwire" "$stage/ci"
  cp "$build/tools/railwire/railwire" "$stage/tools/railwire/"
  cp "$repo/ci/$name-guest.sh" "$repo/ci/rxe-guest-lib.sh" "$stage/ci/"

  export RXEVM_CACHE=${RXEVM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/railwire-rxe-vm}
  export RXEVM_ACCEL=${RXEVM_ACCEL:-tcg}
  mkdir -p "$RXEVM_CACHE"
  out=$build/$name-out
  rm -rf "$out"
  mkdir -p "$out"

  for v in $vars; do
    [ -n "${!v:-}" ] && envs+=(-e "$v=${!v}")
  done
  echo "$name: host load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
  t0=$(date +%s)
  bash "$vm" -t "${RAILWIRE_VM_TIMEOUT:-1500}" -x "$stage" -o "$out" "${envs[@]}" -- \
    "bash $stage/ci/$name-guest.sh $stage" || rc=$?
  echo "$name: VM run took $(( $(date +%s) - t0 )) s (exit status $rc);" \
       "host load now $(cut -d' ' -f1-3 /proc/loadavg)"
  [ -f "$out/$name.txt" ] && cat "$out/$name.txt"
  exit $rc
}
