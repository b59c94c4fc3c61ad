#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs INSIDE the soft-RoCE guest (ci/rxe-qp-timeout.sh starts it): the
# 1-rail 1 MiB WRITE bench, healing off so a rail error is a failed run,
# ROUNDS times at each QP ACK timeout (RAILWIRE_QP_TIMEOUT), interleaved,
# with rdma_rxe's counters (retransmissions, sequence errors, duplicate
# requests) summed per setting.  Prints one summary table.
set -u
build=${1:?usage: rxe-qp-timeout-guest.sh BUILD_DIR [ROUNDS] [TIMEOUTS]}
rounds=${2:-20}
read -r -a T <<< "${3:-14 18}"
rw=$build/tools/railwire/railwire
read -r -a A <<< "$RXEVM_A_DEVS"
read -r -a B <<< "$RXEVM_B_DEVS"
out=${RXEVM_OUT:-/tmp/rwvm-out}
mkdir -p "$out"
counters() {  # counters DEV...: "name value" lines summed over the devices
  local d c
  for d in "$@"; do
    for c in /sys/class/infiniband/$d/ports/1/hw_counters/*; do
      echo "${c##*/} $(cat "$c" 2>/dev/null || echo 0)"
    done
  done | awk '{ s[$1] += $2 } END { for (k in s) print k, s[k] }' | sort
}
"$rw" serve --listen 127.0.0.1:7600 --transport verbs --dialect rw --arena 64M \
  --device "${B[0]}" > /tmp/qpt-serve.log 2>&1 &
srv=$!
for i in $(seq 100); do grep -q ":1DB0 00000000:0000 0A" /proc/net/tcp && break; sleep 0.05; done
declare -A fails runs
for t in "${T[@]}"; do fails[$t]=0; runs[$t]=0; : > "/tmp/qpt-d-$t"; done
for r in $(seq "$rounds"); do
  for t in "${T[@]}"; do
    counters "${A[0]}" "${B[0]}" > /tmp/qpt-before
    if ! RAILWIRE_QP_TIMEOUT=$t "$rw" bench --connect 127.0.0.1:7600 --dialect rw --transport verbs \
        --device "${A[0]}" --rails 1 --write -s 1M -q 8 -n 60 --no-heal --quiet --json \
        > /tmp/qpt-b.json 2> /tmp/qpt-b.err; then
      fails[$t]=$((fails[$t] + 1))
      echo "round $r timeout $t: FAILED: $(tail -1 /tmp/qpt-b.err)"
    fi
    runs[$t]=$((runs[$t] + 1))
    counters "${A[0]}" "${B[0]}" > /tmp/qpt-after
    awk 'NR == FNR { b[$1] = $2; next } { print $1, $2 - b[$1] }' /tmp/qpt-before /tmp/qpt-after >> "/tmp/qpt-d-$t"
  done
done
kill -TERM $srv; wait $srv
{
  echo "rdma_rxe 1-rail 1 MiB WRITE bench (-n 60 -q 8, healing off), $rounds interleaved rounds per QP timeout"
  for t in "${T[@]}"; do
    echo "QP timeout $t: ${fails[$t]} of ${runs[$t]} runs failed; rxe counters summed over the runs (client + server device):"
    awk '{ s[$1] += $2 } END { for (k in s) if (s[k]) print "  " k, s[k] }' "/tmp/qpt-d-$t" | sort
  done
} | tee "$out/qp-timeout.txt"
