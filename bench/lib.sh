# SPDX-License-Identifier: MIT
# Shared helpers of bench/small.sh and bench/compare.sh (sourced, not run).
# Each *_run prints "OPS_PER_S GBPS" (GB = 1e9 bytes) for one measurement.

bench_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bench_build="${BUILD_DIR:-$bench_root/build-bench}"
rw_cli="$bench_build/tools/railwire/railwire"
rr_bin="$bench_build/bench/railwire_rr_ref"
sets_bin="$bench_build/bench/railwire_railsets_threads"
ucx_port=$((20000 + $$ % 20000))

# Builds the Release tree with the CLI and the references.
bench_build_all() {
  cmake -S "$bench_root" -B "$bench_build" -DCMAKE_BUILD_TYPE=Release -DRAILWIRE_TESTS=ON >/dev/null &&
    cmake --build "$bench_build" --target railwire_cli railwire_rr_ref railwire_tcp_bench railwire_railsets_threads -j2 >/dev/null
}

# Installs the Debian packages given (name:command pairs) whose command is missing.
bench_need() {
  local missing=() p
  for p in "$@"; do command -v "${p#*:}" >/dev/null || missing+=("${p%%:*}"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# Median of the numbers on stdin (one a line).
median() { sort -g | awk '{v[NR]=$1} END{if(!NR){print "nan"; exit} print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }

# Bytes of a size with a K/M suffix.
to_bytes() { local s=$1; case $s in *K) echo $(( ${s%K} << 10 ));; *M) echo $(( ${s%M} << 20 ));; *) echo "$s";; esac; }

# rw_run RAILS read|write SIZE DEPTH SECONDS: railwire bench --loopback, tcp.
# Runs SECONDS, but at least 4 x DEPTH transfers (-n) so that large sizes are
# not measured on their ramp-up alone.
rw_run() {
  local bytes n len
  bytes=$(to_bytes "$3")
  n=$(awk -v b="$bytes" -v s="$5" -v q="$4" 'BEGIN{n=int(s*3e9/b); if(n<4*q)n=4*q; printf "%d", n}')
  len=(-D "$5")
  [ "$n" -le $((4 * $4)) ] && len=(-n "$n")
  "$rw_cli" bench --loopback --transport tcp --rails "$1" "--$2" -s "$3" -q "$4" "${len[@]}" --quiet --json 2>/dev/null |
    jq -r '.results[0] | "\(.transfers_per_s) \(.gbps)"' 2>/dev/null || echo "nan nan"
}

# rr_run read|write|stream SIZE DEPTH SECONDS: bench/rr_ref.c.
rr_run() {
  local mode=--rr op="--$1"
  [ "$1" = stream ] && { mode=--stream; op=; }
  "$rr_bin" $mode $op -s "$(to_bytes "$2")" -q "$3" -D "$4" | jq -r '"\(.ops_per_s) \(.gbps)"' 2>/dev/null || echo "nan nan"
}

# reap PID: waits up to 2 s for a server this script started, then stops it
# (a server whose client failed would wait for ever).
reap() {
  local i
  for i in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$1" 2>/dev/null || break; sleep 0.2; done
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# ucx_run get|put SIZE DEPTH SECONDS: UCX_TLS=tcp ucx_perftest, a server
# process and a client process on loopback.  ucx_perftest has no duration
# option: the iteration count is sized from a first guess of its rate.
ucx_run() {
  local t=ucp_get bytes n
  [ "$1" = put ] && t=ucp_put_bw
  bytes=$(to_bytes "$2")
  n=$(awk -v b="$bytes" -v s="$4" 'BEGIN{n=s*2.5e9/b; if(n>s*60000)n=s*60000; if(n<20)n=20; printf "%d", n}')
  ucx_port=$((ucx_port + 1)); [ $ucx_port -gt 60000 ] && ucx_port=20001
  UCX_TLS=tcp timeout 120 ucx_perftest -p "$ucx_port" >/dev/null 2>&1 &
  local srv=$!
  sleep 0.3
  local line
  line=$(UCX_TLS=tcp timeout 120 ucx_perftest 127.0.0.1 -p "$ucx_port" -t "$t" -s "$bytes" -n "$n" \
           -w $((n / 10 + 1)) -O "$3" -v -f 2>/dev/null | tail -1) || true
  reap "$srv"
  # CSV: iterations,p50_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr
  echo "$line" | awk -F, -v b="$bytes" 'NF>=8 && $1+0>0 && $8+0>0 {printf "%s %.6f\n", $8, $8*b/1e9; ok=1} END{if(!ok) print "nan nan"}'
}

# ratio A B: A/B with 2 decimals, "-" when either is not a number.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{if(a+0>0 && b+0>0) printf "%.2f", a/b; else printf "-"}'; }

# iperf3_run SIZE SECONDS: one iperf3 TCP stream on loopback with -l SIZE
# (iperf3's write size, which it caps at 1 MiB: larger sizes run with -l 1M);
# prints "SIZE_UNITS_PER_S GBPS" (bytes/s over SIZE, to sit beside transfers/s).
iperf3_run() {
  local bytes port=$((ucx_port + 20000)) out l
  bytes=$(to_bytes "$1")
  l=$bytes; [ "$l" -gt 1048576 ] && l=1048576
  ucx_port=$((ucx_port + 1))
  iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
  local srv=$!
  sleep 0.4
  local t; t=$(awk -v s="$2" 'BEGIN{t=int(s+0.999); print (t<1)?1:t}') # whole seconds only
  out=$(timeout 60 iperf3 -c 127.0.0.1 -p "$port" -t "$t" -l "$l" -J 2>/dev/null || true)
  reap "$srv"
  echo "$out" | jq -r --argjson b "$bytes" '.end.sum_received.bits_per_second / 8 |
    "\(. / $b) \(. / 1e9)"' 2>/dev/null || echo "nan nan"
}
