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
# shellcheck source=ci/rxe-bench-host.sh
. "$(dirname "${BASH_SOURCE[0]}")/rxe-bench-host.sh"
rxe_bench_run verbs-perftest "PT_DEPTH PT_ROUNDS PT_SIZES PT_OPS PT_CMD_TIMEOUT" "$@"
