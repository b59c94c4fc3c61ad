#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds railwire and runs every test stage; exits non-zero on any failure.
#   1. release build, warnings as errors: unit, golden, end-to-end, install
#      consumer suites (ctest); the verbs suites skip here without RDMA devices
#   1b. abi: the release build's librailwire.so.1 against the committed ABI
#      baseline (scripts/abi-check.sh, docs/abi.md)
#   2. AddressSanitizer + UndefinedBehaviorSanitizer build: the same suites
#      (LeakSanitizer included)
#   3. ThreadSanitizer build: the multi-threaded railset suite (tests/threads)
#   4. libFuzzer harnesses, briefly (tests/fuzz/run.sh --seconds N for longer)
#   5. the verbs suite and benchmark inside a soft-RoCE (rdma_rxe) VM
# Skip stages with RAILWIRE_SKIP=abi,asan,tsan,fuzz,vm (comma list) for a quick local run.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh || exit 1
jobs=$(nproc)
# Only sanitizer builds read these.  Criterion reports a test's result before
# the test process exits, so a leak found at exit would not fail the test:
# every sanitizer report is also written under $san_logs, and any file there
# fails the stage.
san_logs=$(pwd)/build-asan/sanitizer-reports

skip=",${RAILWIRE_SKIP:-},"
passed=0 failed=0 failed_names=()
stage() {  # stage NAME CMD...
  local name=$1; shift
  echo "===== stage: $name"
  if "$@"; then passed=$((passed + 1)); echo "===== stage $name: ok"
  else failed=$((failed + 1)); failed_names+=("$name"); echo "===== stage $name: FAILED"; fi
}
build_and_test() {  # build_and_test DIR CMAKE_ARGS...
  local dir=$1; shift
  cmake -S . -B "$dir" -DRAILWIRE_WERROR=ON "$@" &&
    cmake --build "$dir" -j"$jobs" &&
    ctest --test-dir "$dir" --output-on-failure --timeout 900
}
stage release build_and_test build -DCMAKE_BUILD_TYPE=RelWithDebInfo
# The shared library against the committed ABI baseline (abidiff; the
# release build's flags are the baseline's, so this only relinks if needed).
case $skip in *,abi,*) ;; *)
  stage abi bash scripts/abi-check.sh build ;;
esac
sanitizer_stage() {
  rm -rf "$san_logs" && mkdir -p "$san_logs" || return 1
  local rc=0
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:log_path=$san_logs/asan \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$san_logs/ubsan \
  build_and_test build-asan -DCMAKE_BUILD_TYPE=Debug -DRAILWIRE_SANITIZE=ON || rc=1
  if [ -n "$(ls -A "$san_logs")" ]; then
    echo "sanitizer reports:"; cat "$san_logs"/*; rc=1
  fi
  return $rc
}
case $skip in *,asan,*) ;; *)
  stage asan-ubsan sanitizer_stage ;;
esac
tsan_stage() {
  # Criterion does not start under TSan: tests/threads (and tests/tls/tls_threads.c)
  # hold plain programs.
  cmake -S . -B build-tsan -DRAILWIRE_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DRAILWIRE_TSAN=ON &&
    cmake --build build-tsan -j"$jobs" --target railset_threads railset_fd_threads tcp_loop_threads \
      tls_threads tcp_cli_loop_threads tcp_cli_attend_threads gpu_threads gpu_server_threads &&
    ctest --test-dir build-tsan -L threads --output-on-failure --timeout 900
}
case $skip in *,tsan,*) ;; *)
  stage tsan tsan_stage ;;
esac
case $skip in *,fuzz,*) ;; *)
  stage fuzz bash tests/fuzz/run.sh --build-dir build-fuzz --seconds "${RAILWIRE_FUZZ_SECONDS:-10}" ;;
esac
case $skip in *,vm,*) ;; *)
  stage verbs-vm bash ci/verbs-vm.sh build ;;
esac
echo "railwire test stages: ${failed_names[*]:+failed: ${failed_names[*]}}"
echo "stages: $passed passed, $failed failed"
[ "$failed" = 0 ]
