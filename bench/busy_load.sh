# SPDX-License-Identifier: MIT
# Busy polling on a machine with no idle core: each cell runs with the
# library's default spin (busy_poll_us 50) and with the spin off
# (--busy-poll-us 0, the reference: sleep at once), alternating, in the same
# run, first on the machine as it is and then beside one CPU-bound process
# per core.  A spin that gives its CPU away at every sched_yield shows as a
# loaded ratio far under 1 (before the quiet time of common/busy_poll.h:
# 0.02-0.2); the unloaded ratio is what the spin is for.
#
#   bash bench/busy_load.sh              # 2 rounds, 2 s per measurement
#   SECS=3 ROUNDS=3 bash bench/busy_load.sh
#   RW_CLI=/path/to/railwire bash bench/busy_load.sh   # another build's CLI
set -euo pipefail
. "$(dirname "$0")/lib.sh"

secs="${SECS:-2}"
rounds="${ROUNDS:-2}"
cells=("1 read 4K 1" "2 read 4K 1" "1 read 4K 64" "64 read 4K 64" "64 read 4K 1" "2 read 1M 8")
bench_need jq:jq
if [ -n "${RW_CLI:-}" ]; then rw_cli="$RW_CLI"; else bench_build_all; fi
hogs=()
stop_hogs() {
  local p
  for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${hogs[@]}"; do wait "$p" 2>/dev/null || true; done
  hogs=()
}
trap stop_hogs EXIT
cores=$(nproc)

# one RAILS OP SIZE DEPTH BUSY_POLL_US: transfers/s of one run ("nan" on failure).
one() {
  "$rw_cli" bench --loopback --transport tcp --dialect rw --rails "$1" "--$2" -s "$3" -q "$4" \
    -D "$secs" --busy-poll-us "$5" --quiet --json 2>/dev/null |
    jq -r '.results[0].transfers_per_s' 2>/dev/null || echo nan
}

# table TITLE: the cells, each mode alternating per round, medians.
table() {
  echo
  echo "### $1"
  echo
  echo "| rails, op, size, depth | spin 50 us (default) | spin off (reference) | ratio |"
  echo "| --- | ---: | ---: | ---: |"
  local c r spin off
  for c in "${cells[@]}"; do
    read -r rails op size depth <<<"$c"
    local -a s=() o=()
    for ((r = 1; r <= rounds; r++)); do
      s+=("$(one "$rails" "$op" "$size" "$depth" 50)")
      o+=("$(one "$rails" "$op" "$size" "$depth" 0)")
    done
    spin=$(printf '%s\n' "${s[@]}" | grep -v nan | median)
    off=$(printf '%s\n' "${o[@]}" | grep -v nan | median)
    printf "| %s %s %s q%s | %.0f | %.0f | **%s** |\n" "$rails" "${op^^}" "$size" "$depth" "$spin" "$off" \
      "$(awk -v a="$spin" -v b="$off" 'BEGIN{if (b + 0 > 0) printf "%.2f", a / b; else print "nan"}')"
  done
}

echo "== machine: $cores CPU(s), $(uname -sr), load: $(cut -d' ' -f1-3 /proc/loadavg)"
table "Busy polling as the machine is (transfers/s, median of $rounds round(s))"
for ((i = 0; i < cores; i++)); do
  bash -c 'while :; do :; done' &
  hogs+=($!)
done
table "Busy polling beside $cores CPU-bound process(es), one per core (transfers/s, median of $rounds round(s))"
stop_hogs
