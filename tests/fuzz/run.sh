#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer harnesses (clang, ASan+UBSan) and runs each in turn.
#
#   tests/fuzz/run.sh [--seconds N | --runs N] [--build-dir DIR] [--only HARNESS] [--jobs N]
#
#   --seconds N   run each harness for N seconds (default 10: about a minute in all)
#   --runs N      run each harness for N executions instead (e.g. 10000000)
#   --build-dir   where to configure and build (default: <source>/build-fuzz)
#   --only H      run only harness H (repeatable)
#
# The corpus grows in DIR/fuzz-corpus/<harness>/ (seeded from the wire vectors
# file); crashes go to DIR/fuzz-artifacts/.  Exits non-zero if any harness
# finds a failure.  Per-harness stats are printed at the end.
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$src/build-fuzz"
mode=seconds
amount=10
only=()
jobs=2

while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) mode=seconds; amount="$2"; shift 2 ;;
    --runs) mode=runs; amount="$2"; shift 2 ;;
    --build-dir) build="$2"; shift 2 ;;
    --only) only+=("$2"); shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$amount" in ''|*[!0-9]*) echo "run.sh: '$amount' is not a number" >&2; exit 2 ;; esac

harnesses=(fuzz_ro_reply fuzz_rw_reply fuzz_client fuzz_ack fuzz_hs_client fuzz_hs_server)
if [ ${#only[@]} -gt 0 ]; then harnesses=("${only[@]}"); fi

cmake -S "$src" -B "$build" -DRAILWIRE_FUZZ=ON -DCMAKE_C_COMPILER=clang \
  -DRAILWIRE_TESTS=OFF -DRAILWIRE_VERBS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz_harnesses -j "$jobs" >/dev/null

corpus="$build/fuzz-corpus"
artifacts="$build/fuzz-artifacts"
mkdir -p "$corpus" "$artifacts"
rm -rf "$corpus/seeds"
"$build/tests/fuzz/fuzz_seeds" "$corpus/seeds" >/dev/null

if [ "$mode" = seconds ]; then limit=(-max_total_time="$amount"); else limit=(-runs="$amount"); fi

failed=0
summary=()
for h in "${harnesses[@]}"; do
  bin="$build/tests/fuzz/$h"
  [ -x "$bin" ] || { echo "run.sh: no harness $h" >&2; exit 2; }
  mkdir -p "$corpus/$h" "$corpus/seeds/$h"
  log="$build/fuzz-$h.log"
  echo "== $h (${mode} ${amount})"
  rc=0
  "$bin" "${limit[@]}" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$h-" "$corpus/$h" "$corpus/seeds/$h" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 || true)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1 || true)
  cov=$({ grep -o 'cov: [0-9]*' "$log" || true; } | tail -1 | cut -d' ' -f2)
  if [ "$rc" -ne 0 ]; then
    failed=1
    echo "!! $h FAILED (exit $rc); log: $log; artifacts: $artifacts/$h-*"
    grep -E 'ERROR|invariant failed|SUMMARY' "$log" | head -5 || true
    summary+=("$h execs=${execs:-?} exec/s=${rate:-?} cov=${cov:-?} FAILED")
  else
    summary+=("$h execs=${execs:-?} exec/s=${rate:-?} cov=${cov:-?} ok")
  fi
done

echo "== summary"
printf '%s\n' "${summary[@]}"
exit "$failed"
