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
# shellcheck source=ci/rxe-bench-host.sh
. "$(dirname "${BASH_SOURCE[0]}")/rxe-bench-host.sh"
rxe_bench_run verbs-posters "PO_SIZE PO_ROUNDS PO_CMD_TIMEOUT" "$@"
