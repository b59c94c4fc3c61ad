#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One comparison, one run, one picture.  Measures on this machine, in one
# run, over loopback:
#   - railwire tcp (`railwire bench --loopback`), 1 and 2 rails, READ and
#     WRITE, depth 8 (and 1 rail at depth 64 up to 1 MiB);
#   - the raw TCP stream (bench/rr_ref.c --stream: SIZE-byte send()s and
#     MSG_WAITALL recv()s, 4 MiB socket buffers);
#   - iperf3 (one stream, -l SIZE);
#   - UCX over tcp: UCX_TLS=tcp ucx_perftest -t ucp_get and ucp_put_bw at
#     depth (-O) 8 and 64 (64: up to 1 MiB),
# at sizes 4 KiB..64 MiB, then prints a table of ratios (railwire against
# each reference at each size, same run) and writes PNG plots with gnuplot:
# GB/s against size and transfers/s against size, one line per system.
# Installs iperf3, ucx-utils, gnuplot-nox and jq when they are missing.
#
#   bash bench/compare.sh --quick        # about 2 minutes: 4 sizes to 16 MiB, 1 round
#   bash bench/compare.sh                # full: 8 sizes, 3 rounds (medians)
#   bash bench/compare.sh --out DIR      # where the data and PNGs go
#                                        # (default build-bench/compare)
#   bash bench/compare.sh --replot [--out DIR]   # table and plots again from
#                                        # DIR/raw.txt, measuring nothing
# ROUNDS=N and SECS=S override the rounds and the seconds per measurement.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
quick=0 replot=0
out="$bench_build/compare"
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --replot) replot=1 ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '3,22p' "$0"; exit 0 ;;
    *) echo "usage: $0 [--quick] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
if [ $quick = 1 ]; then
  sizes="4K 64K 1M 16M"; rounds="${ROUNDS:-1}"; secs="${SECS:-0.5}"
else
  sizes="4K 16K 64K 256K 1M 4M 16M 64M"; rounds="${ROUNDS:-3}"; secs="${SECS:-1.5}"
fi
raw="$out/raw.txt"
t_start=$(date +%s)
if [ $replot = 1 ]; then
  bench_need gnuplot-nox:gnuplot
  [ -s "$raw" ] || { echo "compare: no $raw to replot" >&2; exit 1; }
  sizes=$(awk '{print $3}' "$raw" | sort -n -u | tr '\n' ' ')
  rounds=$(awk '{print $1}' "$raw" | sort -n -u | tail -1)
else
  bench_need iperf3:iperf3 ucx-utils:ucx_perftest gnuplot-nox:gnuplot jq:jq
  bench_build_all
  mkdir -p "$out"
  : >"$raw"
fi

# Systems, in plot order: name, then how to measure one size.
systems=(rw1_read rw1_write rw2_read rw2_write rw1_read_q64 rw1_write_q64
         tcp_stream iperf3 ucx_get_q8 ucx_put_q8 ucx_get_q64 ucx_put_q64)
label() {
  case $1 in
    rw1_read) echo "railwire READ 1 rail q8" ;; rw1_write) echo "railwire WRITE 1 rail q8" ;;
    rw2_read) echo "railwire READ 2 rails q8" ;; rw2_write) echo "railwire WRITE 2 rails q8" ;;
    rw1_read_q64) echo "railwire READ 1 rail q64" ;; rw1_write_q64) echo "railwire WRITE 1 rail q64" ;;
    tcp_stream) echo "raw TCP stream" ;; iperf3) echo "iperf3 (-l <= 1M)" ;;
    ucx_get_q8) echo "UCX tcp get q8" ;; ucx_put_q8) echo "UCX tcp put q8" ;;
    ucx_get_q64) echo "UCX tcp get q64" ;; ucx_put_q64) echo "UCX tcp put q64" ;;
  esac
}
style() {  # gnuplot line style: railwire solid, references dashed
  case $1 in
    rw1_read) echo "lc rgb '#08519c' lw 2.5 pt 7" ;; rw1_write) echo "lc rgb '#6baed6' lw 2.5 pt 5" ;;
    rw2_read) echo "lc rgb '#006d2c' lw 2.5 pt 9" ;; rw2_write) echo "lc rgb '#74c476' lw 2.5 pt 11" ;;
    rw1_read_q64) echo "lc rgb '#54278f' lw 2 pt 13" ;; rw1_write_q64) echo "lc rgb '#9e9ac8' lw 2 pt 15" ;;
    tcp_stream) echo "lc rgb '#000000' lw 2 dt 2 pt 1" ;; iperf3) echo "lc rgb '#737373' lw 2 dt 2 pt 2" ;;
    ucx_get_q8) echo "lc rgb '#d94801' lw 1.5 dt 3 pt 6" ;; ucx_put_q8) echo "lc rgb '#fd8d3c' lw 1.5 dt 3 pt 4" ;;
    ucx_get_q64) echo "lc rgb '#a50f15' lw 1.5 dt 4 pt 8" ;; ucx_put_q64) echo "lc rgb '#fb6a4a' lw 1.5 dt 4 pt 10" ;;
  esac
}
measure() {  # measure SYSTEM SIZE -> "OPS_PER_S GBPS"
  local b; b=$(to_bytes "$2")
  case $1 in
    rw1_read) rw_run 1 read "$2" 8 "$secs" ;; rw1_write) rw_run 1 write "$2" 8 "$secs" ;;
    rw2_read) rw_run 2 read "$2" 8 "$secs" ;; rw2_write) rw_run 2 write "$2" 8 "$secs" ;;
    rw1_read_q64|rw1_write_q64)
      if [ "$b" -le $((1 << 20)) ]; then rw_run 1 "$(echo "$1" | cut -d_ -f2)" "$2" 64 "$secs"; else echo "nan nan"; fi ;;
    tcp_stream) rr_run stream "$2" 1 "$secs" ;;
    iperf3) iperf3_run "$2" "$secs" ;;
    ucx_get_q8) ucx_run get "$2" 8 "$secs" ;; ucx_put_q8) ucx_run put "$2" 8 "$secs" ;;
    # Depth 64 only up to 1 MiB, as for railwire: ucp_put_bw -O 64 of 64 MiB
    # did not finish within 120 s here.
    ucx_get_q64|ucx_put_q64)
      if [ "$b" -le $((1 << 20)) ]; then ucx_run "$(echo "$1" | cut -d_ -f2)" "$2" 64 "$secs"; else echo "nan nan"; fi ;;
  esac
}

echo "== machine: $(nproc) CPU(s), $(uname -sr), load: $(cut -d' ' -f1-3 /proc/loadavg)"
[ $replot = 1 ] || echo "== $( [ $quick = 1 ] && echo quick || echo full ) mode: sizes $sizes; $rounds round(s), $secs s per measurement"
for ((k = 1; k <= rounds && !replot; k++)); do
  for s in $sizes; do
    for sys in "${systems[@]}"; do
      read -r ops gbps < <(measure "$sys" "$s") || true
      ops=${ops:-nan} gbps=${gbps:-nan}
      echo "$k $sys $(to_bytes "$s") $ops $gbps" >>"$raw"
    done
    printf "  round %d, %s done (%d s)\n" "$k" "$s" $(($(date +%s) - t_start)) >&2
  done
done

# Medians per system and size -> $out/gbps.dat and $out/ops.dat (one column per system).
med() { awk -v s="$1" -v b="$2" -v c="$3" '$2==s && $3==b && $c!="nan" {print $c}' "$raw" | median; }
for kind in gbps ops; do
  col=5; [ $kind = ops ] && col=4
  { printf "size"; for sys in "${systems[@]}"; do printf "\t%s" "$sys"; done; echo
    for s in $sizes; do
      b=$(to_bytes "$s"); printf "%s" "$b"
      for sys in "${systems[@]}"; do printf "\t%s" "$(med "$sys" "$b" $col)"; done; echo
    done; } >"$out/$kind.dat"
done

pretty() { awk -v b="$1" 'BEGIN{if(b>=1048576) printf "%d MiB", b/1048576; else printf "%d KiB", b/1024}'; }
# The ratio table: railwire against each reference, same run (medians of rounds).
get() { awk -v s="$1" -v b="$2" 'NR==1{for(i=1;i<=NF;i++) if($i==s) c=i; next} $1==b{print $c}' "$out/gbps.dat"; }
echo
echo "GB/s (1e9 bytes/s), medians over $rounds round(s); ratios = railwire / reference at the same size:"
echo
echo "| size | READ 1 rail | WRITE 1 rail | READ 2 rails | WRITE 2 rails | raw TCP stream | iperf3 | UCX get q8 | UCX put q8 | READ 1r / stream | READ 1r / iperf3 | READ 1r / UCX get q8 | WRITE 1r / UCX put q8 | READ q64 / UCX get q64 | WRITE q64 / UCX put q64 |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for s in $sizes; do
  b=$(to_bytes "$s")
  r1=$(get rw1_read "$b"); w1=$(get rw1_write "$b"); r2=$(get rw2_read "$b"); w2=$(get rw2_write "$b")
  st=$(get tcp_stream "$b"); ip=$(get iperf3 "$b"); ug=$(get ucx_get_q8 "$b"); up=$(get ucx_put_q8 "$b")
  r64=$(get rw1_read_q64 "$b"); w64=$(get rw1_write_q64 "$b"); ug64=$(get ucx_get_q64 "$b"); up64=$(get ucx_put_q64 "$b")
  f() { awk -v v="$1" 'BEGIN{if(v+0>0) printf "%.2f", v; else printf "-"}'; }
  echo "| $(pretty "$b") | $(f "$r1") | $(f "$w1") | $(f "$r2") | $(f "$w2") | $(f "$st") | $(f "$ip") | $(f "$ug") | $(f "$up") | $(ratio "$r1" "$st") | $(ratio "$r1" "$ip") | $(ratio "$r1" "$ug") | $(ratio "$w1" "$up") | $(ratio "$r64" "$ug64") | $(ratio "$w64" "$up64") |"
done

# The plots.
plot() {  # plot DATAFILE PNG YLABEL TITLE
  local i=2 cmd="" sys
  for sys in "${systems[@]}"; do
    cmd="$cmd${cmd:+, }'$1' using 1:$i with linespoints $(style "$sys") title '$(label "$sys")'"
    i=$((i + 1))
  done
  gnuplot <<GP
set terminal pngcairo size 1100,700 font ",11"
set output '$2'
set title '$4'
set logscale x 2
set logscale y 10
set format x "%.0b%B"
set xlabel 'transfer size (bytes)'
set ylabel '$3'
set key outside right top
set grid
set datafile missing 'nan'
plot $cmd
GP
}
[ $replot = 1 ] || echo "$(date -u +%Y-%m-%d\ %H:%M) UTC, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)" >"$out/when.txt"
when=$(cat "$out/when.txt" 2>/dev/null || echo "date unknown")
plot "$out/gbps.dat" "$out/compare-gbps.png" "GB/s (1e9 bytes/s)" "loopback throughput by size ($when)"
plot "$out/ops.dat" "$out/compare-ops.png" "transfers (messages) per second" "loopback transfers/s by size ($when)"
echo
echo "== wrote $out/gbps.dat, $out/ops.dat, $out/compare-gbps.png, $out/compare-ops.png ($(($(date +%s) - t_start)) s)"
