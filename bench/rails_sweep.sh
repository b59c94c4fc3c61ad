#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The tcp client's rail-count sweep (issue 20), every figure from one run:
#  1. READ and WRITE at 4 KiB and 64 KiB (depth 64) and 1 MiB (depth 8) on
#     1, 2, 4, 8, 16 and 64 rails (`railwire bench --loopback`): each rail
#     count's figure against the best rail count's (target >= 0.9); and
#     R raw loopback TCP streams of 1 MiB sends (bench/rr_ref --stream -n R)
#     for each rail count R, the socket's own limit, against the 1 MiB rows.
#  2. 1-rail 4 KiB READ at depth 1, 8 and 64 against bench/rr_ref at the
#     same depth (target >= 0.9); and 1 rail at 64 KiB (depth 64) and 1 MiB
#     (depth 8) against rr_ref: one rail against the one socket it runs on.
#  3. The threads of a `railwire bench` process holding one 64-rail railset
#     while it transfers, and of bench/railsets_threads holding eight 8-rail
#     railsets (server in its own process; target <= cores + 2 each).
#  4. Client CPU seconds per GB of 1 MiB READs at depth 8 (server in its own
#     process) against the receiving thread of bench/rr_ref --stream.
#  5. Deep queues of large transfers: 64 MiB at depth 8 against depth 1, 1
#     and 2 rails, READ and WRITE, `railwire serve` and `railwire bench
#     --connect` as two processes (targets: GB/s >= 0.9 of depth 1; p99 at
#     depth 8 <= about 8 x the depth-1 p50).  Each run first moves 8 untimed
#     transfers (--warmup 8): a new connection's first ~150 ms ran at about
#     two thirds of its later speed, which put the depth-8 run's first
#     dozen transfers at its p99.  The last column, p99 over p50 of the same
#     depth-8 run, is how unevenly that run served its transfers; what the
#     p99(8)/p50(1) column adds to 8 beyond it is the two runs' speeds.
#     Each row is DEEP_PAIRS (default 3) alternating depth-1 and depth-8
#     runs, and each figure the median of its runs: one pair a minute apart
#     had put a faster phase of the machine in one run and a slower one in
#     the other (docs/benchmarks.md, twenty-second session).
# Prints markdown tables and draws OUT.png (ratio to the best rail count
# against rails) with gnuplot.  Nothing is asserted.  On a shared machine
# the absolute figures move with the load; compare ratios within one run.
#
# Section 1 runs ROUNDS rounds (default 3); each round walks the rail counts
# in a different order (ascending, descending, then rotated), and each cell is
# the median of its rounds, so a burst of another user's load lands on one
# figure of a cell rather than on a whole rail count.  Its spread (lowest and
# highest round, against the median) is printed beside the table.
#
#   bash bench/rails_sweep.sh                    # 2 s per measurement, 3 rounds
#   SECS=3 ROUNDS=1 RAILS_LIST="1 2 4" OUT=/tmp/sweep bash bench/rails_sweep.sh
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
secs="${SECS:-2}"
rounds="${ROUNDS:-3}"
deep_pairs="${DEEP_PAIRS:-3}"
rails_list="${RAILS_LIST:-1 2 4 8 16 64}"
out="${OUT:-$bench_build/rails_sweep}"
configs=("read 4K 64" "write 4K 64" "read 64K 64" "write 64K 64" "read 1M 8" "write 1M 8")
bench_need jq:jq gnuplot-nox:gnuplot
bench_build_all
tmp="$(mktemp -d)"
# sweep_run RAILS read|write SIZE DEPTH SECONDS: as lib.sh's rw_run, RW
# dialect (the RO dialect allows 8 rails at most).
sweep_run() {
  "$rw_cli" bench --loopback --transport tcp --dialect rw --rails "$1" "--$2" -s "$3" -q "$4" -D "$5" \
    --quiet --json 2>/dev/null | jq -r '.results[0] | "\(.transfers_per_s) \(.gbps)"' 2>/dev/null ||
    echo "nan nan"
}
srv_pid=""
trap '[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
cores=$(nproc)

echo "== machine: $cores CPU(s), $(uname -sr), load: $(cut -d' ' -f1-3 /proc/loadavg) (shared: absolute figures move with the other users' load)"

# --- 1. the rail-count sweep ---
# round_order ROUND: the rail counts in round ROUND's order: ascending,
# descending, then ascending rotated by one more place each round.
round_order() {
  local -a l=($rails_list)
  local n=${#l[@]} i k
  if (($1 == 1)); then k=0; elif (($1 == 2)); then
    for ((i = n - 1; i >= 0; i--)); do printf '%s ' "${l[i]}"; done
    return
  else k=$(($1 - 2)); fi
  for ((i = 0; i < n; i++)); do printf '%s ' "${l[(i + k) % n]}"; done
}
# median FILE RAILS COLUMN: the median of COLUMN over the rows of RAILS.
median() {
  awk -v r="$2" -v c="$3" '$1==r && $c!="nan" {print $c}' "$1" | sort -g |
    awk '{a[NR]=$1} END{if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}
# table_head LAST_HEADING LAST_ALIGN: a rail-count table's two heading
# lines, with one more column when LAST_HEADING is not empty.
table_head() {
  printf "| op, size, depth |"; for r in $rails_list; do printf " %s rail(s) |" "$r"; done; echo "$1"
  printf "| --- |"; for r in $rails_list; do printf " ---: |"; done; echo "$2"
}
# lower_ratio WORST RATIO: the lower of the two, a ratio that is not a
# positive number ("-", "nan") left out.
lower_ratio() { awk -v w="$1" -v x="$2" 'BEGIN{if(x+0>0 && x+0<w+0) w=x; print w}'; }
echo "== 1. rail counts $rails_list, $rounds round(s), $secs s per measurement" >&2
for ((round = 1; round <= rounds; round++)); do
  order=$(round_order "$round")
  for c in "${configs[@]}"; do
    read -r op size depth <<<"$c"
    for r in $order; do
      read -r ops gbps < <(sweep_run "$r" "$op" "$size" "$depth" "$secs") || true
      echo "$r ${ops:-nan} ${gbps:-nan} $round" >>"$tmp/rounds.$op.$size"
      printf "  round %s %-5s %4s q%-3s %3s rails: %10.0f transfers/s %7.3f GB/s\n" "$round" "$op" "$size" \
        "$depth" "$r" "${ops:-nan}" "${gbps:-nan}" >&2
    done
  done
done
for c in "${configs[@]}"; do
  read -r op size _ <<<"$c"
  for r in $rails_list; do
    echo "$r $(median "$tmp/rounds.$op.$size" "$r" 2) $(median "$tmp/rounds.$op.$size" "$r" 3)" >>"$tmp/sweep.$op.$size"
  done
done
echo
echo "### Rail-count sweep (transfers/s, median of $rounds round(s); in brackets: ratio to the best rail count, target >= 0.9)"
echo
table_head " worst ratio |" " ---: |"
for c in "${configs[@]}"; do
  read -r op size depth <<<"$c"
  f="$tmp/sweep.$op.$size"
  best=$(awk '$2+0>b{b=$2+0} END{print b+0}' "$f")
  printf "| %s %s q%s |" "${op^^}" "$size" "$depth"
  worst=9
  while read -r r ops _; do
    rat=$(ratio "$ops" "$best")
    printf " %.0f (%s) |" "$ops" "$rat"
    echo "$r $rat" >>"$tmp/plot.$op.$size"
    worst=$(lower_ratio "$worst" "$rat")
  done <"$f"
  printf " **%s** |\n" "$worst"
done

# drift_ratios FILE: each rail count's round-normalised ratio (see below),
# one "RAILS RATIO" line per rail count.  Each round's cells are divided by
# that round's geometric mean over the row (a round whose row lacks a cell
# is left out), each cell takes the median of its normalised rounds, and
# the medians are divided by their best.
drift_ratios() {
  awk -v list="$rails_list" '
    $2 != "nan" { v[$4, $1] = $2; seen[$4] = 1 }
    END {
      n = split(list, R, " ")
      for (k in seen) {
        s = 0; m = 0
        for (i = 1; i <= n; i++) if ((k, R[i]) in v) { s += log(v[k, R[i]]); m++ }
        if (m == n) g[k] = exp(s / m)
      }
      best = 0
      for (i = 1; i <= n; i++) {
        c = 0
        for (k in g) a[++c] = v[k, R[i]] / g[k]
        for (x = 2; x <= c; x++) for (y = x; y > 1 && a[y - 1] > a[y]; y--) { t = a[y]; a[y] = a[y - 1]; a[y - 1] = t }
        med[i] = c == 0 ? 0 : (c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2)
        if (med[i] > best) best = med[i]
      }
      for (i = 1; i <= n; i++) printf "%s %s\n", R[i], (best > 0 && med[i] > 0 ? sprintf("%.2f", med[i] / best) : "nan")
    }' "$1"
}
echo
echo "### The same rounds, each against its own row (round-normalised ratios)"
echo
echo "A shared machine runs for minutes at a time in faster and slower phases"
echo "(other users' load), and a row's rounds lie minutes apart while its"
echo "cells in one round lie seconds apart. Here each round's"
echo "cells are divided by that round's geometric mean over the row, each cell"
echo "takes the median of its rounds, and the row is put against its best cell."
echo "The table above stays the figure of record; this one shows how much of"
echo "its spread is the phases."
echo
table_head " worst ratio |" " ---: |"
for c in "${configs[@]}"; do
  read -r op size depth <<<"$c"
  printf "| %s %s q%s |" "${op^^}" "$size" "$depth"
  worst=9
  while read -r r rat; do
    printf " %s |" "$rat"
    worst=$(lower_ratio "$worst" "$rat")
  done < <(drift_ratios "$tmp/rounds.$op.$size")
  printf " **%s** |\n" "$worst"
done

echo
echo "Spread of the rounds: each cell's lowest and highest round against its median."
echo
table_head "" ""
for c in "${configs[@]}"; do
  read -r op size depth <<<"$c"
  printf "| %s %s q%s |" "${op^^}" "$size" "$depth"
  for r in $rails_list; do
    awk -v r="$r" '$1==r && $2!="nan" {print $2}' "$tmp/rounds.$op.$size" | sort -g |
      awk '{a[NR]=$1} END{if (NR == 0) {printf " nan |"; exit}
        m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2
        printf " %.2f-%.2f |", a[1]/m, a[NR]/m}'
  done
  echo
done

# --- 1b. the raw TCP limit at each rail count, 1 MiB ---
echo "== 1b. raw TCP streams, 1 MiB sends, one per rail" >&2
echo
echo "### Raw TCP at each rail count: R loopback streams of 1 MiB sends (rr_ref --stream -n R), GB/s"
echo
echo "How flat the socket itself is: the raw streams' ratio to their own best"
echo "stream count bounds what any rail count can reach against the best one."
echo
echo "| rails | raw TCP streams | raw ratio to its best | railwire READ 1M q8 | ratio | railwire WRITE 1M q8 | ratio |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for r in $rails_list; do
  raw=$("$rr_bin" --stream -s 1M -n "$r" -D "$secs" 2>/dev/null | jq -r '.gbps' 2>/dev/null || echo nan)
  echo "$r ${raw:-nan}" >>"$tmp/raw.streams"
done
raw_best=$(awk '$2!="nan" && $2+0>b{b=$2+0} END{print b+0}' "$tmp/raw.streams")
while read -r r raw; do
  rd=$(awk -v r="$r" '$1==r{print $3}' "$tmp/sweep.read.1M")
  wr=$(awk -v r="$r" '$1==r{print $3}' "$tmp/sweep.write.1M")
  printf "| %s | %.3f | %s | %.3f | %s | %.3f | %s |\n" "$r" "$raw" "$(ratio "$raw" "$raw_best")" \
    "${rd:-nan}" "$(ratio "${rd:-nan}" "$raw")" "${wr:-nan}" "$(ratio "${wr:-nan}" "$raw")"
done <"$tmp/raw.streams"

# --- 2. one rail, 4 KiB READ against rr_ref at the same depth ---
echo "== 2. 1-rail 4 KiB READ vs bench/rr_ref" >&2
echo
echo "### One rail, 4 KiB READ, against bench/rr_ref at the same depth (target >= 0.9)"
echo
echo "| depth | rr_ref transfers/s | railwire | ratio |"
echo "| ---: | ---: | ---: | ---: |"
for d in 1 8 64; do
  read -r rr _ < <(rr_run read 4K "$d" "$secs") || true
  read -r rw _ < <(sweep_run 1 read 4K "$d" "$secs") || true
  printf "| %s | %.0f | %.0f | **%s** |\n" "$d" "${rr:-nan}" "${rw:-nan}" "$(ratio "${rw:-nan}" "${rr:-nan}")"
done

# --- 2b. one rail at the sweep's other sizes against rr_ref ---
# Section 1's 1-rail cells against one loopback socket's own request/response
# rate at the same size and depth (rr_ref: one connection, the requests and
# answers of the same op), alternating, median of the rounds: how far one
# rail is from the single socket it runs on.
echo "== 2b. 1-rail 64 KiB and 1 MiB vs bench/rr_ref" >&2
echo
echo "### One rail against bench/rr_ref (one socket) at the sweep's sizes, median of $rounds round(s)"
echo
echo "| op, size, depth | rr_ref transfers/s | railwire 1 rail | ratio |"
echo "| --- | ---: | ---: | ---: |"
for c in "read 64K 64" "write 64K 64" "read 1M 8" "write 1M 8"; do
  read -r op size depth <<<"$c"
  : >"$tmp/one.rr"; : >"$tmp/one.rw"
  for ((round = 1; round <= rounds; round++)); do
    read -r rr _ < <(rr_run "$op" "$size" "$depth" "$secs") || true
    read -r rw _ < <(sweep_run 1 "$op" "$size" "$depth" "$secs") || true
    echo "1 ${rr:-nan}" >>"$tmp/one.rr"; echo "1 ${rw:-nan}" >>"$tmp/one.rw"
  done
  rr=$(median "$tmp/one.rr" 1 2); rw=$(median "$tmp/one.rw" 1 2)
  printf "| %s %s q%s | %.0f | %.0f | **%s** |\n" "${op^^}" "$size" "$depth" "$rr" "$rw" "$(ratio "$rw" "$rr")"
done

# A `railwire serve` of a 576 MiB RW arena (filled, so its pages exist) in its
# own process; sets srv_port.
serve_start() {
  "$rw_cli" serve --dialect rw --listen 127.0.0.1:0 --arena 576M --fill --max-rails 255 \
    >"$tmp/serve.out" 2>"$tmp/serve.err" &
  srv_pid=$!
  local i
  for i in $(seq 1 1200); do grep -q listening "$tmp/serve.out" && break; sleep 0.1; done
  srv_port=$(sed -n 's/^listening on [^ ]*:\([0-9]*\) .*/\1/p' "$tmp/serve.out")
}
serve_stop() { kill "$srv_pid" 2>/dev/null || true; wait "$srv_pid" 2>/dev/null || true; srv_pid=""; }

serve_start

# --- 3. threads of a process holding one 64-rail railset ---
echo "== 3. threads of a 64-rail railset" >&2
"$rw_cli" bench --connect "127.0.0.1:$srv_port" --dialect rw --rails 64 --read -s 64K -q 64 \
  -D "$(awk -v s="$secs" 'BEGIN{print s + 2}')" --quiet >/dev/null 2>&1 &
bpid=$!
sleep 1.5
maxthr=0
for i in 1 2 3 4 5 6 7 8; do
  n=$( (ls "/proc/$bpid/task" 2>/dev/null || true) | wc -l)
  [ "$n" -gt "$maxthr" ] && maxthr=$n
  sleep 0.2
done
wait "$bpid" || true
echo
echo "### Threads of a process holding one 64-rail railset while it transfers"
echo
echo "most threads seen: **$maxthr** (target <= cores + 2 = $((cores + 2)))"

# --- 3b. threads of a process holding eight 8-rail railsets ---
echo "== 3b. threads of eight 8-rail railsets" >&2
sets_json=$("$sets_bin" --connect "127.0.0.1:$srv_port" --railsets 8 --rails 8 --size 1048576 --depth 8 \
  --seconds "$secs" 2>"$tmp/sets.err" || true)
sets_thr=$(jq -r '.most_threads' <<<"$sets_json" 2>/dev/null || true)
sets_gbps=$(jq -r '.gbps' <<<"$sets_json" 2>/dev/null || true)
echo
echo "### Threads of a process holding eight 8-rail railsets while they transfer"
echo
if [ -n "$sets_thr" ]; then
  echo "most threads seen: **$sets_thr** (target <= cores + 2 = $((cores + 2))), while the"
  echo "eight railsets read 1 MiB at depth 8 each: $sets_gbps GB/s in all"
else
  echo "not measured: $(head -c 300 "$tmp/sets.err")"
fi

# --- 4. client CPU per GB at 1 MiB ---
echo "== 4. client CPU per GB" >&2
cpu_line=$( { /usr/bin/time -f "%U %S" "$rw_cli" bench --connect "127.0.0.1:$srv_port" --dialect rw \
  --read -s 1M -q 8 -D "$secs" --quiet --json 2>"$tmp/time.err" >"$tmp/cpu.json"; } 2>&1; tail -1 "$tmp/time.err")
gb=$(jq -r '.results[0] | .gbps * .seconds' "$tmp/cpu.json" 2>/dev/null || echo nan)
rw_cpu=$(awk -v l="$cpu_line" -v g="$gb" 'BEGIN{split(l,a," "); if(g+0>0) printf "%.4f", (a[1]+a[2])/g; else print "nan"}')
ref_cpu=$("$rr_bin" --stream -s 1048576 -D "$secs" | jq -r '.rx_cpu_s_per_gb' 2>/dev/null || echo nan)
echo
echo "### Client CPU seconds per GB, 1 MiB READs at depth 8 (server in its own process)"
echo
echo "| railwire bench process | raw TCP stream, receiving thread (rr_ref --stream) | ratio |"
echo "| ---: | ---: | ---: |"
echo "| $rw_cpu | $ref_cpu | $(ratio "$rw_cpu" "$ref_cpu") |"

# --- 5. deep queues of 64 MiB transfers ---
echo "== 5. 64 MiB at depth 1 and 8, $deep_pairs alternating pair(s)" >&2
echo
echo "### 64 MiB transfers at depth 8 against depth 1 (two processes, median of $deep_pairs alternating pair(s))"
echo
echo "| rails, op | depth 1 GB/s | p50 ms | depth 8 GB/s | p50 ms | p99 ms | GB/s ratio (>= 0.9) | p99(8) / p50(1) (<= ~8) | p99(8) / p50(8) | pairs' GB/s ratios |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
for r in 1 2; do
  for op in read write; do
    # The same 48 transfers at both depths, so both runs last about as long
    # (6 transfers at depth 1 took 0.2-0.4 s, where one stall of a loaded
    # machine moves the figure; docs/benchmarks.md, issue 20).
    : >"$tmp/deep.runs"
    pairs=""
    for ((k = 1; k <= deep_pairs; k++)); do
      for d in 1 8; do
        "$rw_cli" bench --connect "127.0.0.1:$srv_port" --dialect rw --rails "$r" "--$op" -s 64M \
          -q "$d" -n 48 --warmup 8 --span 512M --quiet --json 2>/dev/null >"$tmp/deep.$d.json" || true
        read -r g p q < <(jq -r '.results[0] | "\(.gbps) \(.p50_us / 1000) \(.p99_us / 1000)"' \
          "$tmp/deep.$d.json" 2>/dev/null || echo "nan nan nan")
        echo "$d ${g:-nan} ${p:-nan} ${q:-nan}" >>"$tmp/deep.runs"
        if [ "$d" = 1 ]; then g_d1=${g:-nan}; fi
      done
      pairs="$pairs${pairs:+ }$(ratio "${g:-nan}" "$g_d1")"
    done
    g1=$(median "$tmp/deep.runs" 1 2); p1=$(median "$tmp/deep.runs" 1 3)
    g8=$(median "$tmp/deep.runs" 8 2); p8=$(median "$tmp/deep.runs" 8 3); q8=$(median "$tmp/deep.runs" 8 4)
    printf "| %s %s | %.3f | %.0f | %.3f | %.0f | %.0f | **%s** | **%s** | %s | %s |\n" "$r" "${op^^}" "$g1" "$p1" "$g8" "$p8" "$q8" \
      "$(ratio "$g8" "$g1")" "$(ratio "$q8" "$p1")" "$(ratio "$q8" "$p8")" "$pairs"
  done
done
serve_stop

# --- the plot ---
{
  echo "set terminal pngcairo size 900,540"
  echo "set output '$out.png'"
  echo "set title 'tcp client on shared event loops: each rail count against the best ($cores CPUs)'"
  echo "set xlabel 'rails'; set ylabel 'transfers/s / best rail count'"
  echo "set logscale x 2; set yrange [0:1.1]; set key bottom left; set grid"
  printf "plot 0.9 title 'target 0.9' dt 2 lc rgb 'gray'"
  for c in "${configs[@]}"; do
    read -r op size depth <<<"$c"
    printf ", '%s' using 1:2 with linespoints title '%s %s q%s'" "$tmp/plot.$op.$size" "${op^^}" "$size" "$depth"
  done
  echo
} >"$tmp/plot.gp"
if gnuplot "$tmp/plot.gp" 2>/dev/null; then
  echo; echo "plot: $out.png"
else
  echo; echo "(gnuplot failed: no plot)"
fi
