# SPDX-License-Identifier: MIT
# The performance ratios of issue 18, each measured in the same run and
# interleaved round by round (so a busy machine slows both sides of a ratio
# alike): encrypted 1-rail 1 MiB READ against bench/tls_ref (one OpenSSL
# TLS 1.3 connection streaming 1 MiB records over loopback, same cipher;
# also with --read-ahead, reading as railwire's rails do),
# encrypted against plain (1 MiB READ and WRITE on 1 and 2 rails, 4 KiB
# READ at depth 64), and connect time with and without TLS (1 and 8
# rails).  Prints each round's ratios, then min / median / max per ratio,
# then the heal time plain and over TLS (PSK) from bench/heal_bench.c
# (HEAL_REPS repetitions, default 100; its --cert/--key/--ca measure the
# certificate case).
# Nothing here asserts a figure.
#
#   bash bench/tls.sh                    # 5 rounds of 2 s per measurement
#   ROUNDS=3 SECONDS_EACH=1 bash bench/tls.sh
#   BUILD_DIR=build bash bench/tls.sh    # use an existing build
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build-bench}"
rounds="${ROUNDS:-5}"
secs="${SECONDS_EACH:-2}"
conn_iters="${CONNECT_ITERS:-5}"
heal_reps="${HEAL_REPS:-100}"

if [ -z "${BUILD_DIR:-}" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DRAILWIRE_TESTS=ON >/dev/null
  cmake --build "$build" --target railwire_tls_ref railwire_cli railwire_heal_bench -j2 >/dev/null
fi
cli="$build/tools/railwire/railwire"
ref="$build/bench/railwire_tls_ref"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(umask 077 && printf 'bench:%s\n' "$(openssl rand -hex 32)" >"$tmp/psk.txt")

# bench_gbps [--tls] ARGS...: GB/s of one `railwire bench --loopback` run.
bench_json() {
  local tls=()
  if [ "$1" = --tls ]; then tls=(--tls-psk "$tmp/psk.txt"); shift; fi
  timeout 120 "$cli" bench --loopback --transport tcp --quiet --json "${tls[@]}" "$@"
}
bench_gbps() { bench_json "$@" | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["gbps"])'; }
# connect_ms [--tls] RAILS: median connect_ms of CONNECT_ITERS short runs.
connect_ms() {
  local i out=()
  for ((i = 0; i < conn_iters; i++)); do
    out+=("$(bench_json "$@" -s 4K -n 1 -q 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["connect_ms"])')")
  done
  printf '%s\n' "${out[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
ratio() { python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print(f'{a/b:.3f}' if b else 'nan')" "$1" "$2"; }

echo "== machine: $(nproc) CPU(s), $(uname -sr), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== cipher: $("$ref" -s 1M -D 0.1 | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["cipher"], "ktls send/recv:", j["ktls_send"], j["ktls_recv"])')"
res="$tmp/ratios.txt"
: >"$res"
for ((r = 1; r <= rounds; r++)); do
  refg=$("$ref" -s 1M -D "$secs" | python3 -c 'import json,sys; print(json.load(sys.stdin)["gbps"])')
  t1r=$(bench_gbps --tls --rails 1 --read -s 1M -q 8 -D "$secs")
  refa=$("$ref" -s 1M -D "$secs" --read-ahead | python3 -c 'import json,sys; print(json.load(sys.stdin)["gbps"])')
  echo "round $r: tls_ref $refg GB/s (read-ahead: $refa), railwire TLS 1 rail 1 MiB READ $t1r GB/s"
  echo "tls_read_1rail_vs_ref $(ratio "$t1r" "$refg")" >>"$res"
  echo "tls_read_1rail_vs_ref_read_ahead $(ratio "$t1r" "$refa")" >>"$res"
  for rails in 1 2; do
    for op in read write; do
      p=$(bench_gbps --rails "$rails" --"$op" -s 1M -q 8 -D "$secs")
      t=$(bench_gbps --tls --rails "$rails" --"$op" -s 1M -q 8 -D "$secs")
      echo "  1 MiB $op $rails rail(s): plain $p GB/s, TLS $t GB/s"
      echo "tls_vs_plain_${op}_1M_${rails}rail $(ratio "$t" "$p")" >>"$res"
    done
  done
  p=$(bench_gbps --rails 1 --read -s 4K -q 64 -D "$secs")
  t=$(bench_gbps --tls --rails 1 --read -s 4K -q 64 -D "$secs")
  echo "  4 KiB read depth 64: plain $p GB/s, TLS $t GB/s"
  echo "tls_vs_plain_read_4K_q64 $(ratio "$t" "$p")" >>"$res"
  for rails in 1 8; do
    p=$(connect_ms --rails "$rails")
    t=$(connect_ms --tls --rails "$rails")
    echo "  connect $rails rail(s): plain $p ms, TLS $t ms"
    echo "tls_vs_plain_connect_ms_${rails}rail $(ratio "$t" "$p")" >>"$res"
  done
done
echo
echo "== ratios over $rounds round(s): min median max"
python3 - "$res" <<'EOF'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    k, v = line.split()
    rows.setdefault(k, []).append(float(v))
for k, v in rows.items():
    print(f"  {k:36s} {min(v):.3f} {statistics.median(v):.3f} {max(v):.3f}")
EOF
echo
echo "== heal time (rail loss to replacement in service, heal backoff 1 ms)"
"$build/bench/railwire_heal_bench" --reps "$heal_reps" 2>/dev/null
"$build/bench/railwire_heal_bench" --reps "$heal_reps" --psk "$tmp/psk.txt" 2>/dev/null
