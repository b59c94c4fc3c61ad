#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs INSIDE the soft-RoCE guest (started by ci/verbs-posters-compare.sh):
# the verbs client's shared poster pool (src/verbs/poster.c) against one
# poster thread per ep, same run, interleaved rounds.  Not a test: nothing
# is asserted.
#
#   verbs-posters-guest.sh BUILD_DIR
#
# For 1, 2 and 4 rails (the 4 rails use each of the two device pairs twice)
# and READ/WRITE at PO_SIZE (default 1 MiB): `railwire bench --connect`
# against a `railwire serve` on the B devices, MB/s from the bench's own
# data-phase "seconds", once with the default pool (at most one thread per
# vCPU) and once with RAILWIRE_VERBS_POST_THREADS=64 (a thread per ep, the
# old behaviour), and the 2- and 4-rail figures against the sum of the
# 1-rail figures on each device (the "2-rail ratio").
set -u
build=${1:?usage: verbs-posters-guest.sh BUILD_DIR}
rw=$build/tools/railwire/railwire
out=${RXEVM_OUT:-/tmp/rwpo-out}
mkdir -p "$out"
work=$(mktemp -d /tmp/rwpo.XXXXXX)
S=${PO_SIZE:-1048576}
ROUNDS=${PO_ROUNDS:-3}
TO=${PO_CMD_TIMEOUT:-120}
read -r -a A <<< "$RXEVM_A_DEVS"
read -r -a B <<< "$RXEVM_B_DEVS"
# shellcheck source=ci/rxe-guest-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/rxe-guest-lib.sh"

# Server rail i is on B[i % 2]: rails "0 1 0 1" pair a0-b0, a1-b1 twice.
# A second server on B[1] alone serves the 1-rail figure of rail 1.
port=7600
"$rw" serve --listen "127.0.0.1:$port" --transport verbs --dialect rw --arena 64M \
  --device "${B[0]}" --device "${B[1]:-${B[0]}}" > "$work/serve.log" 2>&1 &
srv=$!
"$rw" serve --listen "127.0.0.1:$((port + 1))" --transport verbs --dialect rw --arena 64M \
  --device "${B[1]:-${B[0]}}" > "$work/serve1.log" 2>&1 &
srv1=$!
trap 'kill -TERM $srv $srv1 2>/dev/null; wait $srv $srv1 2>/dev/null' EXIT
wait_listen "$port" || { cat "$work/serve.log"; exit 1; }
wait_listen "$((port + 1))" || { cat "$work/serve1.log"; exit 1; }

# mbs MODE OP PORT RAIL... -> MB/s (MODE pool|perep)
mbs() {
  local mode=$1 op=$2 p=$3 n q secs env=()
  shift 3
  n=$(( 40 * $# )); q=$(( 8 * $# ))
  [ "$mode" = perep ] && env=(env RAILWIRE_VERBS_POST_THREADS=64)
  local devs=()
  for r in "$@"; do devs+=(--device "${A[$r]}"); done
  timeout "$TO" "${env[@]}" "$rw" bench --connect "127.0.0.1:$p" --dialect rw --transport verbs \
    "${devs[@]}" --rails $# --"$op" -s "$S" -n "$n" -q "$q" --quiet --json \
    > "$work/b.json" 2> "$work/b.err" || { cat "$work/b.err" >&2; echo nan; return; }
  secs=$(grep -o '"seconds": [0-9.e+-]*' "$work/b.json" | head -1 | awk '{ print $2 }')
  awk -v s="$S" -v n="$n" -v t="${secs:-0}" 'BEGIN { if (t <= 0) { print "nan"; exit } printf "%.1f", n * s / t / 1e6 }'
}
median() { printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "nan") }'; }

declare -A m
configs=("1a:0:0" "1b:1:1" "2:0:0 1" "4:0:0 1 0 1") # name:server:rails
for op in read write; do
  for k in $(seq "$ROUNDS"); do
    for c in "${configs[@]}"; do
      IFS=: read -r name sv rails <<< "$c"
      for mode in pool perep; do
        # shellcheck disable=SC2086
        v=$(mbs "$mode" "$op" $((port + sv)) $rails)
        m[$op.$name.$mode]="${m[$op.$name.$mode]:-} $v"
        echo "round $k $op $name rail(s) $mode: $v MB/s"
      done
    done
  done
done
res=$out/verbs-posters.txt
{
  echo "size $S, median of $ROUNDS interleaved rounds, MB/s; pool = shared poster threads (cap = $(nproc) vCPUs), perep = RAILWIRE_VERBS_POST_THREADS=64"
  echo
  echo "| op | mode | 1 rail (a0) | 1 rail (a1) | sum | 2 rails | 2-rail ratio | 4 rails (a0 a1 a0 a1) | 4 / sum |"
  echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  for op in read write; do
    for mode in pool perep; do
      # shellcheck disable=SC2086
      a=$(median ${m[$op.1a.$mode]}); b=$(median ${m[$op.1b.$mode]})
      # shellcheck disable=SC2086
      t=$(median ${m[$op.2.$mode]}); f=$(median ${m[$op.4.$mode]})
      awk -v op="$op" -v mo="$mode" -v a="$a" -v b="$b" -v t="$t" -v f="$f" 'BEGIN {
        s = a + b; printf "| %s | %s | %s | %s | %.1f | %s | **%.2f** | %s | %.2f |\n", op, mo, a, b, s, t, (s > 0 ? t / s : 0), f, (s > 0 ? f / s : 0) }'
    done
  done
} > "$res"
cat "$res"
