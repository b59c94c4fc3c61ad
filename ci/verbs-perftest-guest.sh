#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs INSIDE the soft-RoCE guest (started by ci/verbs-perftest-compare.sh):
# railwire's verbs bench against perftest at small sizes, READ and WRITE,
# same device pair (rxe_a0 -> rxe_b0), same queue depth, interleaved rounds,
# and prints a table of ratios.  Not a test: nothing is asserted.
#
#   verbs-perftest-guest.sh BUILD_DIR
#
# Environment: PT_SIZES (default "4096 65536"), PT_OPS ("read write"),
# PT_DEPTH (16: perftest -t; railwire -q and --rail-depth), PT_ROUNDS (7),
# PT_CMD_TIMEOUT (seconds per command, 90).  perftest's outstanding READs
# (-o) are min(depth, 16): railwire's verbs QPs keep at most 16 READs
# outstanding (src/verbs/domain.c), so a deeper -o would compare different
# protocol settings.  railwire also runs once more per round with
# RAILWIRE_VERBS_POST_THREAD=0 (every post inline in the caller's thread
# instead of the per-ep poster thread it uses on software providers such as
# rxe): the "inline" columns say how much of a gap is that thread.
#
# How each side is timed (perftest's own figures come from rdtsc and the CPU
# MHz, which TCG makes unreliable; they are printed in the raw log only):
#  perftest   the client process is timed by wall clock with N1 and N2
#             iterations; msg/s = (N2 - N1) / (t(N2) - t(N1)): setup cancels.
#  railwire   (a) `railwire bench --json`'s own "seconds" around its data
#             phase (clock_gettime, setup excluded) for N2 transfers, and
#             (b) the same differential wall-clock timing as perftest (N1 and
#             N2 transfers), so both sides are also measured the same way.
set -u
build=${1:?usage: verbs-perftest-guest.sh BUILD_DIR}
rw=$build/tools/railwire/railwire
out=${RXEVM_OUT:-/tmp/rwpt-out}
mkdir -p "$out"
work=$(mktemp -d /tmp/rwpt.XXXXXX)
SIZES=${PT_SIZES:-4096 65536}
OPS=${PT_OPS:-read write}
D=${PT_DEPTH:-16}
OUTS=$(( D < 16 ? D : 16 ))
ROUNDS=${PT_ROUNDS:-7}
TO=${PT_CMD_TIMEOUT:-90}

read -r -a A <<< "$RXEVM_A_DEVS"
read -r -a B <<< "$RXEVM_B_DEVS"
read -r -a BIP <<< "$RXEVM_B_IPS"
G=$RXEVM_GID_INDEX

now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.4f", b - a }'; }
# shellcheck source=ci/rxe-guest-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/rxe-guest-lib.sh"
iters() {  # iters SIZE -> "N1 N2"
  if [ "$1" -le 8192 ]; then echo "1000 10000"; else echo "100 1000"; fi
}

# perftest ------------------------------------------------------------------
pt_port=18600
pt_once() {  # pt_once OP SIZE N -> seconds of the client process
  local tool=ib_$1_bw s=$2 n=$3 sp t0 t rc extra=()
  [ "$1" = read ] && extra=(-o "$OUTS")
  pt_port=$((pt_port + 1))
  timeout "$TO" "$tool" -d "${B[0]}" -x "$G" -p "$pt_port" -s "$s" -n "$n" -t "$D" "${extra[@]}" \
    -F > "$work/pts.log" 2>&1 &
  sp=$!
  wait_listen "$pt_port" || { kill "$sp" 2>/dev/null; wait "$sp"; cat "$work/pts.log" >&2; return 1; }
  t0=$(now)
  timeout "$TO" "$tool" -d "${A[0]}" -x "$G" -p "$pt_port" -s "$s" -n "$n" -t "$D" "${extra[@]}" \
    -F "${BIP[0]}" > "$work/ptc.log" 2>&1
  rc=$?
  t=$(since "$t0")
  wait "$sp" || rc=1
  [ $rc = 0 ] || { echo "$tool -s $s -n $n failed (status $rc)" >&2; cat "$work/ptc.log" >&2; return 1; }
  # perftest's own (rdtsc) message rate, for the raw log only.
  awk -v s="$s" -v n="$n" '$1 == s && $2 == n { print "  perftest says:", $0 }' "$work/ptc.log" >&2
  echo "$t"
}

# railwire ------------------------------------------------------------------
rw_port=7600
serve_start() {
  rw_port=$((rw_port + 1))
  # Every bench run is a new railset; on verbs the server cannot see rails
  # close, so sessions would linger 30 s and hit the per-peer cap of 16.
  timeout $((TO * 20)) "$rw" serve --listen "127.0.0.1:$rw_port" --transport verbs --dialect rw \
    --arena 64M --device "${B[0]}" --session-linger 0 --max-sessions-per-peer 0 \
    > "$work/serve.log" 2>&1 &
  srv_pid=$!
  wait_listen "$rw_port" || { cat "$work/serve.log" >&2; return 1; }
}
rw_once() {  # rw_once OP SIZE N [inline] -> "wall_seconds bench_seconds"
  local op=$1 s=$2 n=$3 t0 t secs pt=()
  [ "${4:-}" = inline ] && pt=(env RAILWIRE_VERBS_POST_THREAD=0)
  t0=$(now)
  timeout "$TO" "${pt[@]}" "$rw" bench --connect "127.0.0.1:$rw_port" --dialect rw --transport verbs \
    --device "${A[0]}" --rails 1 --"$op" -s "$s" -n "$n" -q "$D" --rail-depth "$D" --quiet --json \
    > "$work/rwb.json" 2> "$work/rwb.err" ||
    { echo "railwire bench --$op -s $s -n $n failed" >&2; cat "$work/rwb.err" "$work/rwb.json" >&2; return 1; }
  t=$(since "$t0")
  secs=$(grep -o '"seconds": [0-9.e+-]*' "$work/rwb.json" | head -1 | awk '{ print $2 }')
  [ -n "$secs" ] || { echo "no seconds in the bench JSON" >&2; cat "$work/rwb.json" >&2; return 1; }
  echo "$t $secs"
}

rate() {  # rate N1 N2 T1 T2 -> msg/s (differential)
  awk -v n1="$1" -v n2="$2" -v t1="$3" -v t2="$4" \
    'BEGIN { d = t2 - t1; if (d <= 0) print "nan"; else printf "%.1f", (n2 - n1) / d }'
}
median() { printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
           awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : 0) }'; }

serve_start || exit 1
declare -A PT RW RWW RWI RATIO RATIOW RATIOI
fails=0
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }'; }
echo "depth $D, $ROUNDS rounds, sizes $SIZES, ops $OPS; msg/s per round:"
for k in $(seq "$ROUNDS"); do
  for s in $SIZES; do
    read -r n1 n2 <<< "$(iters "$s")"
    for op in $OPS; do
      a=$(pt_once "$op" "$s" "$n1") && b=$(pt_once "$op" "$s" "$n2") &&
        c=$(rw_once "$op" "$s" "$n1") && e=$(rw_once "$op" "$s" "$n2") &&
        f=$(rw_once "$op" "$s" "$n2" inline) ||
        { fails=$((fails + 1)); echo "round $k $op $s: failed"; continue; }
      pt=$(rate "$n1" "$n2" "$a" "$b")
      rww=$(rate "$n1" "$n2" "${c%% *}" "${e%% *}")
      rwi=$(awk -v n="$n2" -v t="${e##* }" 'BEGIN { printf "%.1f", n / t }')
      rin=$(awk -v n="$n2" -v t="${f##* }" 'BEGIN { printf "%.1f", n / t }')
      r=$(ratio "$rwi" "$pt") rw2=$(ratio "$rww" "$pt") ri=$(ratio "$rin" "$pt")
      echo "round $k $op $s: perftest $pt | railwire $rwi (bench timing), $rww (wall," \
           "differential), $rin (inline posts) | ratios $r, $rw2, $ri"
      PT[$op,$s]+="$pt " RW[$op,$s]+="$rwi " RWW[$op,$s]+="$rww " RWI[$op,$s]+="$rin "
      RATIO[$op,$s]+="$r " RATIOW[$op,$s]+="$rw2 " RATIOI[$op,$s]+="$ri "
    done
  done
done
kill -TERM "$srv_pid" 2>/dev/null
wait "$srv_pid" 2>/dev/null

spread() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%s-%s", a, b }'; }
res=$out/verbs-perftest.txt
{
  echo "railwire verbs bench vs perftest: rdma_rxe (Linux 6.1) in qemu, rxe_a0 -> rxe_b0, 1 rail,"
  echo "depth $D (perftest -t $D, reads -o $OUTS; railwire -q $D --rail-depth $D), $ROUNDS interleaved rounds"
  printf '%-5s %-4s %9s %9s %8s %8s %6s %10s %6s %9s %6s\n' op size pt-msg/s rw-msg/s pt-MB/s \
    rw-MB/s ratio min-max wall inline/s inline
  for s in $SIZES; do
    for op in $OPS; do
      # shellcheck disable=SC2086
      awk -v op="$op" -v s="$s" -v pt="$(median ${PT[$op,$s]:-})" -v rwi="$(median ${RW[$op,$s]:-})" \
          -v r="$(median ${RATIO[$op,$s]:-})" -v mm="$(spread ${RATIO[$op,$s]:-})" \
          -v rw2="$(median ${RATIOW[$op,$s]:-})" -v rin="$(median ${RWI[$op,$s]:-})" \
          -v ri="$(median ${RATIOI[$op,$s]:-})" 'BEGIN {
        printf "%-5s %-4s %9.0f %9.0f %8.1f %8.1f %6.2f %10s %6.2f %9.0f %6.2f\n", op,
               s / 1024 "K", pt, rwi, pt * s / 1e6, rwi * s / 1e6, r, mm, rw2, rin, ri }'
    done
  done
  echo "ratio   = median over rounds of railwire msg/s (bench's own data-phase timing) / perftest"
  echo "          msg/s (differential wall clock); min-max: its spread over the rounds"
  echo "wall    = the same with railwire timed exactly like perftest (differential wall clock)"
  echo "inline  = railwire with RAILWIRE_VERBS_POST_THREAD=0 (msg/s, bench timing; ratio to perftest)"
  echo "MB/s = msg/s x size / 1e6 (medians).  Failed rounds: $fails"
} > "$res"
cat "$res"
rm -rf "$work"
[ "$fails" = 0 ]
