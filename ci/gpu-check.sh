#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The GPU check of issue 17 (item 8), for a machine with an NVIDIA GPU and its
# driver; no CUDA toolkit, Criterion, hwloc, verbs or OpenSSL needed.  One run:
#  1. gpu_real_check, compiled by hand (cc only): driver load, descriptor of
#     cuMemAlloc memory, DMA-BUF export, staged H2D/D2H verified.
#  2. with CMake (else said so, and only step 1 runs): builds the library,
#     `railwire` and tests/gpu's check programs (-DRAILWIRE_TESTS=OFF
#     -DRAILWIRE_GPU_CHECK=ON, verbs/TLS/hwloc/python off).
#  3. verified round trips over tcp loopback, 1 and 2 rails, 64K/1M/16M:
#     client CUDA memory against a host server (gpu_verify_rt); `railwire
#     serve --cuda 0 --fill` with `railwire bench --verify` READ and WRITE
#     (host client); client CUDA memory against that server (CUDA<->CUDA).
#  4. figures: GB/s into CUDA memory as a ratio of the same transfers into
#     host memory, same run (gpu_bench_staged: client side, 1 and 2 rails;
#     gpu_bench_server_mem: server side, 2 rails), printed ready for
#     docs/gpu.md and written to OUT_DIR/gpu-figures.txt.
# Every step runs under `timeout`; a failed step is reported and the rest
# still run.  About 2-3 minutes on 16 cores (the build is most of it).
# Exit status: 0 all passed, 1 a step failed, 2 no CUDA driver or GPU.
#
#   ci/gpu-check.sh [OUT_DIR]      (default: build-gpu-check)
# Environment: RAILWIRE_CUDA_LIBRARY (driver file; default libcuda.so.1),
# JOBS (build jobs; default nproc), BENCH_SECS (seconds per bench case; 1),
# CMAKE (the cmake to use; default cmake), GPU_CHECK_BUILD (CMake build
# folder; default OUT_DIR/build).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
out=$(mkdir -p "${1:-$repo/build-gpu-check}" && cd "${1:-$repo/build-gpu-check}" && pwd -P)
cc=${CC:-cc}
jobs=${JOBS:-$(nproc)}
secs=${BENCH_SECS:-1}
cmake=${CMAKE:-cmake}
figs=$out/gpu-figures.txt
failed=()
say() { printf 'gpu-check: %s\n' "$*"; }

# step NAME SECONDS CMD...: runs CMD under timeout, output to OUT_DIR/NAME.log
# and the terminal; records a failure instead of stopping.
step() {
  local name=$1 t=$2 rc
  shift 2
  say "== $name (at most ${t}s)"
  set +e
  timeout --kill-after=10 "$t" "$@" 2>&1 | tee "$out/$name.log"
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" -eq 0 ]; then say "$name: ok"; return 0; fi
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then say "$name: TIMED OUT after ${t}s"
  else say "$name: FAILED (exit $rc; log: $out/$name.log)"; fi
  failed+=("$name")
  return "$rc"
}

standin=0
case "${RAILWIRE_CUDA_LIBRARY:-}" in *standin*) standin=1 ;; esac

# 1. The hand-compiled check: needs only cc and the driver.
"$cc" -std=c11 -O2 -D_GNU_SOURCE -DRAILWIRE_BUILDING=1 -DRAILWIRE_VERSION='"gpu-check"' \
  -I"$repo/include" -I"$repo/src" -o "$out/gpu_real_check" \
  "$repo/tests/gpu/gpu_real_check.c" "$repo"/src/gpu/*.c "$repo"/src/common/*.c \
  -ldl -lpthread
rc=0
step real_check 120 env RAILWIRE_LOG="${RAILWIRE_LOG:-info}" "$out/gpu_real_check" || rc=$?
if [ "$rc" -eq 2 ]; then
  say "no usable CUDA driver or GPU (libcuda.so.1 or RAILWIRE_CUDA_LIBRARY; see the log above)"
  exit 2
fi
driver=$(sed -n 's/^gpu-check: driver \([^,]*\),.*/\1/p' "$out/real_check.log" | head -1)
case "$driver" in *standin*) standin=1 ;; esac
gpu=$( (timeout 20 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null \
        || true) | head -1)

# 2. Build (CMake only).
if ! command -v "$cmake" >/dev/null; then
  say "CMAKE IS NOT INSTALLED: only the hand-compiled check ran; the round trips and"
  say "figures of steps 2-4 need cmake (apt-get install cmake, then run again)"
  { echo "### GPU check without CMake (driver: ${driver:-?}; GPU: ${gpu:-unknown})"
    [ "$standin" -eq 0 ] || echo "STAND-IN DRIVER: these figures say nothing about a GPU."
    grep ' bytes: staged' "$out/real_check.log" || true; } >"$figs"
  [ ${#failed[@]} -eq 0 ] || exit 1
  exit 0
fi
bld=${GPU_CHECK_BUILD:-$out/build}
step configure 300 "$cmake" -S "$repo" -B "$bld" -DCMAKE_BUILD_TYPE=Release \
  -DRAILWIRE_TESTS=OFF -DRAILWIRE_GPU_CHECK=ON -DRAILWIRE_VERBS=OFF -DRAILWIRE_TLS=OFF \
  -DRAILWIRE_HWLOC=OFF -DRAILWIRE_PYTHON=OFF || exit 1
step build 900 "$cmake" --build "$bld" -j "$jobs" --target railwire_cli gpu_verify_rt \
  gpu_bench_staged gpu_bench_server_mem || exit 1
rw=$bld/tools/railwire/railwire
g=$bld/tests/gpu

# 3a. Client CUDA memory against a host server in the same process.
for r in 1 2; do step "verify_client_cuda_r$r" 180 "$g/gpu_verify_rt" "$r" || true; done

# 3b. A server publishing CUDA memory (railwire serve --cuda 0 --fill).
timeout 1800 "$rw" serve --dialect rw --listen 127.0.0.1:0 --transport tcp --arena 64M --fill --cuda 0 \
  >"$out/serve.log" 2>&1 &
spid=$!
addr=
for _ in $(seq 1 300); do
  addr=$(sed -n 's/^listening on \([^ ]*\) .*/\1/p' "$out/serve.log" | head -1)
  [ -n "$addr" ] || ! kill -0 "$spid" 2>/dev/null && break
  sleep 0.1
done
if [ -z "$addr" ]; then
  say "railwire serve --cuda 0 did not start (log: $out/serve.log):"
  cat "$out/serve.log"
  failed+=(serve_cuda)
else
  say "railwire serve --cuda 0 --fill listening on $addr"
  # bench_step NAME ARGS: railwire bench --verify; passes on exit 0 and "verify: ok".
  bench_step() {
    local name=$1
    shift
    step "$name" 120 "$rw" bench --connect "$addr" --dialect rw --transport tcp --verify \
      --quiet "$@" || return 0
    grep -q '^verify: ok' "$out/$name.log" && return 0
    say "$name: FAILED (no \"verify: ok\" in $out/$name.log)"
    failed+=("$name")
  }
  # READs first (they check the --fill pattern), then CUDA<->CUDA (writes only
  # at >= 32 MiB), then bench's WRITEs (they overwrite the pattern from 0).
  for r in 1 2; do
    for s in 64K 1M 16M; do
      bench_step "serve_cuda_read_r${r}_$s" --read --rails "$r" -s "$s" -n 64 -q 4 --span 32M || true
    done
  done
  host=${addr%:*} port=${addr##*:}
  for r in 1 2; do
    step "verify_cuda_cuda_r$r" 180 "$g/gpu_verify_rt" "$r" "$host" "$port" || true
  done
  for r in 1 2; do
    for s in 64K 1M 16M; do
      bench_step "serve_cuda_write_r${r}_$s" --write --rails "$r" -s "$s" -n 32 -q 4 --span 32M || true
    done
  done
fi
[ -z "${spid:-}" ] || { kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true; }

# 4. Figures (ratios against host memory, same run).
for r in 1 2; do step "bench_staged_r$r" 180 "$g/gpu_bench_staged" "$r" "$secs" || true; done
step bench_server_mem_r2 300 "$g/gpu_bench_server_mem" 2 "$secs" 3 || true
{
  echo "### GPU check, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo
  echo "Driver: ${driver:-?}; GPU: ${gpu:-unknown (no nvidia-smi)}; $(nproc) cores; tcp loopback."
  if [ "$standin" -eq 1 ]; then
    echo "STAND-IN DRIVER: its \"device\" memory is host memory; these figures say"
    echo "nothing about a GPU's speed (they only show the script works)."
  fi
  echo
  echo "Client CUDA memory vs client host memory (gpu_bench_staged, ${secs}s per case):"
  echo '```'
  cat "$out/bench_staged_r1.log" "$out/bench_staged_r2.log" 2>/dev/null | grep -E '^(rails=| +[0-9])' || true
  echo '```'
  echo "Server CUDA memory (serve --cuda) vs server host memory (gpu_bench_server_mem):"
  echo '```'
  grep -E '^(rails=| +[0-9])' "$out/bench_server_mem_r2.log" 2>/dev/null || true
  echo '```'
  if [ ${#failed[@]} -eq 0 ]; then
    echo "Verified round trips (1 and 2 rails, 64K/1M/16M, READ and WRITE): all ok."
  else
    echo "FAILED steps: ${failed[*]} (logs in $out)."
  fi
} >"$figs"
say "== figures (also in $figs):"
cat "$figs"
if [ ${#failed[@]} -ne 0 ]; then
  say "FAILED: ${failed[*]}"
  exit 1
fi
say "all steps passed"
