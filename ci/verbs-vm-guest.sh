#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs INSIDE the soft-RoCE guest (started by ci/verbs-vm.sh); not for hosts:
# the last step takes a rail's link down.
#
#   verbs-vm-guest.sh BUILD_DIR
#
# Steps: `railwire devices`; the verbs suites; `railwire serve` + `railwire
# bench --verify` as separate processes (RW and RO, 1 and 2 rails); the
# benchmark against perftest (RAILWIRE_VM_BENCH=0 skips it); TLS
# (ci/verbs-vm-tls-guest.sh); the link-down suite.  Exit status 0 only if every step passed.
set -u
build=${1:?usage: verbs-vm-guest.sh BUILD_DIR}
rw=$build/tools/railwire/railwire
tdir=$build/tests/verbs
out=${RXEVM_OUT:-/tmp/rwvm-out}
mkdir -p "$out"
work=$(mktemp -d /tmp/rwvm.XXXXXX)

read -r -a A <<< "$RXEVM_A_DEVS"
read -r -a B <<< "$RXEVM_B_DEVS"
read -r -a BIP <<< "$RXEVM_B_IPS"
read -r -a ANET <<< "$RXEVM_A_NETDEVS"
G=$RXEVM_GID_INDEX
export RAILWIRE_TEST_DEVS_A=$(IFS=,; echo "${A[*]}")
export RAILWIRE_TEST_DEVS_B=$(IFS=,; echo "${B[*]}")
# The guest has no NIC and no default route: nothing there routes this
# address, so a QP aimed at it must fail at RTR (verbs_transport checks it).
export RAILWIRE_TEST_UNROUTED_IPV4=198.19.200.1

pass=0 fail=0 failed_steps=""
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
step() {  # step NAME CMD...
  local name=$1 t0 rc
  shift
  echo "=== $name"
  t0=$(now)
  "$@"
  rc=$?
  if [ $rc = 0 ]; then
    echo "--- PASS $name ($(elapsed "$t0") s)"
    pass=$((pass + 1))
  else
    echo "--- FAIL $name (status $rc, $(elapsed "$t0") s)"
    fail=$((fail + 1))
    failed_steps="$failed_steps [$name]"
  fi
}

# shellcheck source=ci/rxe-guest-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/rxe-guest-lib.sh"

# ---------------------------------------------------------------- devices
devices_check() {
  "$rw" devices > "$work/devices.txt" || return 1
  cat "$work/devices.txt"
  local want=$(( ${#A[@]} + ${#B[@]} ))
  local got
  got=$(grep -c "railwire uses GID index $G: ::ffff:198.18" "$work/devices.txt")
  [ "$got" = "$want" ] || { echo "expected $want ports choosing GID $G, got $got"; return 1; }
  "$rw" devices --json > "$work/devices.json" || return 1
  [ "$(grep -o "\"gid_index\": $G," "$work/devices.json" | wc -l)" = "$want" ] ||
    { echo "JSON does not pick GID $G on every port"; cat "$work/devices.json"; return 1; }
  grep -q '"class": "link-local"' "$work/devices.json" || { echo "no link-local entry listed"; return 1; }
  # An override is reported as such.
  RAILWIRE_GID_INDEX=0 "$rw" devices | grep -q "forced by RAILWIRE_GID_INDEX" ||
    { echo "RAILWIRE_GID_INDEX override not shown"; return 1; }
}
step "railwire devices" devices_check

# ---------------------------------------------------------------- suites
suite() { "$tdir/$1" --jobs 1 --verbose=1 --xml="$out/$1.xml"; }
step "suite verbs_transport" suite verbs_transport
# rdma_rxe is a software provider, so multi-rail posts go through poster
# threads (src/verbs/poster.c); run the transport suite once more with every
# post inline.
step "suite verbs_transport (RAILWIRE_VERBS_POST_THREAD=0)" env RAILWIRE_VERBS_POST_THREAD=0 \
  "$tdir/verbs_transport" --jobs 1 --verbose=1 --xml="$out/verbs_transport_inline.xml"
# The railset suite runs with the VM's GID index forced (the override path);
# the transport suite above lets railwire choose (the ranking path).
step "suite verbs_railset" env RAILWIRE_TEST_GID_INDEX="$G" "$tdir/verbs_railset" --jobs 1 \
  --verbose=1 --xml="$out/verbs_railset.xml"
# GPU memory on verbs: DMA-BUF (udmabuf where the kernel has it), rxe's
# refusal of DMA-BUF with a clear error, and the fallback, over the stand-in
# CUDA driver.
if [ -x "$tdir/verbs_mem" ] && [ -f "$tdir/librailwire_cuda_standin.so" ]; then
  step "suite verbs_mem" env RAILWIRE_TEST_STANDIN="$tdir/librailwire_cuda_standin.so" \
    "$tdir/verbs_mem" --jobs 1 --verbose=1 --xml="$out/verbs_mem.xml"
fi
# A verbs server publishing the stand-in's CUDA memory (public API).
if [ -x "$tdir/verbs_server_mem" ] && [ -f "$tdir/librailwire_cuda_standin.so" ]; then
  step "suite verbs_server_mem" env RAILWIRE_TEST_STANDIN="$tdir/librailwire_cuda_standin.so" \
    RAILWIRE_TEST_GID_INDEX="$G" "$tdir/verbs_server_mem" --jobs 1 --verbose=1 \
    --xml="$out/verbs_server_mem.xml"
fi

# ------------------------------------------- serve + bench, two processes
port=7400
serve_start() {  # serve_start LOG ARGS...: sets srv_pid, srv_port
  local log=$1
  shift
  port=$((port + 1))
  "$rw" serve --listen "127.0.0.1:$port" --transport verbs "$@" > "$log" 2>&1 &
  srv_pid=$!
  srv_port=$port
  wait_listen "$port" || { cat "$log"; return 1; }
}
serve_stop() {
  kill -TERM "$srv_pid" 2>/dev/null
  wait "$srv_pid"
}
bench_dev_args() {  # bench_dev_args RAIL...: --device for each
  local r
  for r in "$@"; do printf -- '--device %s ' "${A[$r]}"; done
}
two_process() {
  local rc=0 dev01="--device ${B[0]} --device ${B[1]:-${B[0]}}"
  serve_start "$work/serve-rw.log" --dialect rw --arena 16M --fill $dev01 || return 1
  # Reads first: they check the --fill pattern, which the writes overwrite.
  # --span >= depth x size: concurrent writes must not share a remote range,
  # or a read-back may see another write's bytes.
  for op in read write; do
    for rails in 1 2; do
      # shellcheck disable=SC2046
      "$rw" bench --connect "127.0.0.1:$srv_port" --dialect rw --transport verbs \
        $(bench_dev_args 0 1) --rails $rails --$op --verify -s 256K -n 40 -q 4 --span 4M --quiet ||
        { echo "bench --$op --verify over $rails rail(s) failed"; rc=1; }
    done
  done
  serve_stop || { echo "serve (rw) did not stop cleanly"; rc=1; }
  grep -q "verbs rail(s) up" "$work/serve-rw.log" || { echo "server log shows no verbs rails"; rc=1; }
  # RO: two layer files, read back over two rails.
  head -c $((1024 * 1024)) /dev/urandom > "$work/layer0"
  head -c $((512 * 1024)) /dev/urandom > "$work/layer1"
  serve_start "$work/serve-ro.log" --dialect ro --layer "$work/layer0" --layer "$work/layer1" \
    $dev01 || return 1
  "$rw" bench --connect "127.0.0.1:$srv_port" --dialect ro --transport verbs \
    $(bench_dev_args 0 1) --rails 2 --read -s 128K -n 40 -q 4 --quiet ||
    { echo "RO bench over 2 rails failed"; rc=1; }
  serve_stop || { echo "serve (ro) did not stop cleanly"; rc=1; }
  [ $rc = 0 ] || { echo "--- server logs"; cat "$work"/serve-*.log; }
  return $rc
}
step "railwire serve + railwire bench --verify (separate processes)" two_process
step "TLS: verbs control connection (PSK), tcp rails with and without kernel TLS" \
  bash "$(dirname "${BASH_SOURCE[0]}")/verbs-vm-tls-guest.sh" "$build"

# ---------------------------------------------------------------- bench
# MB/s by wall clock, setup excluded, median of ROUNDS interleaved rounds:
#  perftest: its own figures come from rdtsc and are unreliable under TCG, so
#   the client process is timed and setup cancelled out by running N1 and N2
#   iterations: MB/s = (N2 - N1) * size / (t(N2) - t(N1));
#  railwire: `railwire bench --json` times its transfers with
#   clock_gettime(CLOCK_MONOTONIC) around the data phase (no setup inside).
ROUNDS=${RAILWIRE_VM_BENCH_ROUNDS:-3}
wall() {  # wall CMD...: runs it, prints its wall-clock seconds; fails if it fails
  local t0 rc
  t0=$(now)
  "$@" > "$work/last.log" 2>&1
  rc=$?
  [ $rc = 0 ] || { cat "$work/last.log" >&2; return $rc; }
  awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.4f", b - a }'
}
perftest_once() {  # perftest_once TOOL RAIL SIZE N PORT -> seconds of the client
  local tool=$1 r=$2 s=$3 n=$4 p=$5 sp t
  "$tool" -d "${B[$r]}" -x "$G" -p "$p" -s "$s" -n "$n" -F > "$work/pts.log" 2>&1 &
  sp=$!
  wait_listen "$p" || { kill $sp 2>/dev/null; cat "$work/pts.log" >&2; return 1; }
  t=$(wall "$tool" -d "${A[$r]}" -x "$G" -p "$p" -s "$s" -n "$n" -F "${BIP[$r]}") ||
    { kill $sp 2>/dev/null; wait $sp; return 1; }
  wait $sp || return 1
  echo "$t"
}
perftest_pair_once() {  # perftest_pair_once TOOL SIZE N PORT -> seconds, rails 0 and 1 at once
  local tool=$1 s=$2 n=$3 p=$4 s0 s1 c0 c1 t0 ok=0
  "$tool" -d "${B[0]}" -x "$G" -p "$p" -s "$s" -n "$n" -F > "$work/pts0.log" 2>&1 &
  s0=$!
  "$tool" -d "${B[1]}" -x "$G" -p $((p + 1)) -s "$s" -n "$n" -F > "$work/pts1.log" 2>&1 &
  s1=$!
  wait_listen "$p" && wait_listen $((p + 1)) || { kill $s0 $s1 2>/dev/null; return 1; }
  t0=$(now)
  "$tool" -d "${A[0]}" -x "$G" -p "$p" -s "$s" -n "$n" -F "${BIP[0]}" > "$work/ptc0.log" 2>&1 &
  c0=$!
  "$tool" -d "${A[1]}" -x "$G" -p $((p + 1)) -s "$s" -n "$n" -F "${BIP[1]}" > "$work/ptc1.log" 2>&1 &
  c1=$!
  wait $c0 || ok=1
  wait $c1 || ok=1
  awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.4f", b - a }'
  wait $s0 || ok=1
  wait $s1 || ok=1
  [ $ok = 0 ] || cat "$work"/ptc*.log >&2
  return $ok
}
perftest_pair_mbs() {  # perftest_pair_mbs TOOL SIZE N1 N2 PORT -> aggregate MB/s (PORT..PORT+3)
  local t1 t2
  t1=$(perftest_pair_once "$1" "$2" "$3" "$5") &&
    t2=$(perftest_pair_once "$1" "$2" "$4" $(($5 + 2))) || return 1
  awk -v s="$2" -v n1="$3" -v n2="$4" -v t1="$t1" -v t2="$t2" \
    'BEGIN { d = t2 - t1; if (d <= 0) { print "nan"; exit } printf "%.1f", 2 * (n2 - n1) * s / d / 1e6 }'
}
pt_port=18515
perftest_mbs() {  # perftest_mbs TOOL RAIL SIZE N1 N2 PORT -> MB/s (uses PORT and PORT+1)
  local t1 t2
  t1=$(perftest_once "$1" "$2" "$3" "$4" "$6") &&
    t2=$(perftest_once "$1" "$2" "$3" "$5" $(($6 + 1))) || return 1
  awk -v s="$3" -v n1="$4" -v n2="$5" -v t1="$t1" -v t2="$t2" \
    'BEGIN { d = t2 - t1; if (d <= 0) { print "nan"; exit } printf "%.1f", (n2 - n1) * s / d / 1e6 }'
}
rw_mbs() {  # rw_mbs OP PORT SIZE N DEPTH RAIL... -> MB/s of the data phase
  local op=$1 p=$2 s=$3 n=$4 q=$5 secs
  shift 5
  # shellcheck disable=SC2046
  "$rw" bench --connect "127.0.0.1:$p" --dialect rw --transport verbs \
    $(bench_dev_args "$@") --rails $# --"$op" -s "$s" -n "$n" -q "$q" --quiet --json \
    > "$work/rwb.json" 2> "$work/rwb.err" || { cat "$work/rwb.err" "$work/rwb.json" >&2; return 1; }
  secs=$(grep -o '"seconds": [0-9.e+-]*' "$work/rwb.json" | head -1 | awk '{ print $2 }')
  [ -n "$secs" ] || { echo "no seconds in bench JSON" >&2; cat "$work/rwb.json" >&2; return 1; }
  awk -v s="$s" -v n="$n" -v t="$secs" 'BEGIN { if (t <= 0) t = 1e-9; printf "%.1f", n * s / t / 1e6 }'
}
median() { printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : 0) }'; }

bench() {
  local res=$out/bench-verbs.txt rc=0 s op n1 n2 rn q k v
  local -A mb
  # One server per device set, so that rail i meets B's device i.
  serve_start "$work/sb0.log" --dialect rw --arena 64M --device "${B[0]}" || return 1
  local p0=$srv_port s0=$srv_pid
  serve_start "$work/sb1.log" --dialect rw --arena 64M --device "${B[1]}" || return 1
  local p1=$srv_port s1=$srv_pid
  serve_start "$work/sb01.log" --dialect rw --arena 64M --device "${B[0]}" --device "${B[1]}" ||
    return 1
  local p01=$srv_port s01=$srv_pid
  for s in 65536 1048576; do
    # perftest: N1/N2 far enough apart that setup jitter (~0.3 s) does not
    # dominate; railwire times its data phase itself, so N2 transfers suffice.
    if [ $s -ge 1048576 ]; then n1=10 n2=70 rn=40 q=8; else n1=64 n2=512 rn=512 q=16; fi
    for op in read write; do
      local pt=() pt01=() r0=() r1=() r01=()
      for k in $(seq "$ROUNDS"); do
        pt_port=$((pt_port + 2))
        v=$(perftest_mbs ib_${op}_bw 0 $s $n1 $n2 $pt_port) && pt+=("$v") ||
          { echo "perftest ib_${op}_bw $s failed"; rc=1; }
        pt_port=$((pt_port + 4))
        v=$(perftest_pair_mbs ib_${op}_bw $s $n1 $n2 $pt_port) && pt01+=("$v") ||
          { echo "perftest ib_${op}_bw $s on 2 rails failed"; rc=1; }
        v=$(rw_mbs $op $p0 $s $rn $q 0) && r0+=("$v") || { echo "railwire rail 0 $op $s failed"; rc=1; }
        v=$(rw_mbs $op $p1 $s $rn $q 1) && r1+=("$v") || { echo "railwire rail 1 $op $s failed"; rc=1; }
        v=$(rw_mbs $op $p01 $s $((2 * rn)) $((2 * q)) 0 1) && r01+=("$v") ||
          { echo "railwire 2 rails $op $s failed"; rc=1; }
      done
      echo "  $op $s: perftest ${pt[*]} | perftest 2 rails at once ${pt01[*]} | rail0 ${r0[*]} | rail1 ${r1[*]} | 2 rails ${r01[*]} (MB/s per round)"
      mb[pt,$op,$s]=$(median "${pt[@]}")
      mb[pt01,$op,$s]=$(median "${pt01[@]}")
      mb[r0,$op,$s]=$(median "${r0[@]}")
      mb[r1,$op,$s]=$(median "${r1[@]}")
      mb[r01,$op,$s]=$(median "${r01[@]}")
    done
  done
  kill -TERM $s0 $s1 $s01 2>/dev/null
  wait $s0 $s1 $s01 2>/dev/null
  {
    echo "soft-RoCE (rdma_rxe, Linux 6.1) in qemu TCG, 2 vCPUs, path MTU 4096; MB/s by wall"
    echo "clock, setup excluded, median of $ROUNDS interleaved rounds."
    printf '%-6s %-6s %8s %8s %7s | %8s %8s %8s %7s | %8s %7s\n' op size perftest \
      railwire ratio1 rw-rail1 rw-sum rw-2rail ratio2 pt-2rail pt-ratio
    for s in 65536 1048576; do
      for op in read write; do
        awk -v op=$op -v s=$s -v pt="${mb[pt,$op,$s]:-0}" -v a="${mb[r0,$op,$s]:-0}" \
            -v b="${mb[r1,$op,$s]:-0}" -v c="${mb[r01,$op,$s]:-0}" \
            -v p2="${mb[pt01,$op,$s]:-0}" 'BEGIN {
          r1 = pt > 0 ? a / pt : 0; sum = a + b; r2 = sum > 0 ? c / sum : 0
          pr = pt > 0 ? p2 / (2 * pt) : 0
          printf "%-6s %-6s %8.1f %8.1f %7.2f | %8.1f %8.1f %8.1f %7.2f | %8.1f %7.2f\n", op,
                 (s >= 1048576 ? s / 1048576 "MiB" : s / 1024 "KiB"), pt, a, r1, b, sum, c, r2,
                 p2, pr }'
      done
    done
    echo "ratio1 = railwire on rail 0 / perftest on rail 0 (target >= 0.95)"
    echo "ratio2 = railwire striped over rails 0+1 / (railwire rail 0 alone + rail 1 alone)"
    echo "         (target >= 0.9)"
    echo "pt-ratio = perftest on both rails at once / (2 x perftest on rail 0): what this VM"
    echo "         allows two rails at all (same-run reference for ratio2)"
  } > "$res"
  cat "$res"
  return $rc
}
if [ "${RAILWIRE_VM_BENCH:-1}" != 0 ]; then
  step "benchmark: railwire bench vs perftest" bench
fi
# rdma_rxe's own counters (retransmissions, sequence errors, drops): context
# for any rail failure above.
echo "=== rdma_rxe counters (non-zero)"
for d in "${A[@]}" "${B[@]}"; do
  for c in /sys/class/infiniband/$d/ports/1/hw_counters/*; do
    v=$(cat "$c" 2>/dev/null) || continue
    [ "$v" != 0 ] && echo "  $d ${c##*/} $v"
  done
done

# ---------------------------------------------------------------- link down (last)
linkdown() {
  RAILWIRE_TEST_LINKDOWN_NETDEV=${ANET[1]} RAILWIRE_TEST_LINKDOWN_RAIL=1 suite verbs_linkdown
}
if [ ${#A[@]} -ge 2 ]; then
  step "suite verbs_linkdown (takes ${ANET[1]} down)" linkdown
fi

echo "verbs-vm: $pass passed, $fail failed${failed_steps:+:$failed_steps}"
rm -rf "$work"
[ $fail = 0 ]
