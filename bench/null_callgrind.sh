#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instructions per transfer of the railset over the null transport, counted
# by callgrind (repeatable on a loaded machine, unlike time).  Only the
# measured loop is collected (--toggle-collect=nb_measure, no warm-up pass),
# so callgrind's total divided by the transfers run is the cost of one
# submit -> post -> completion -> poll, null transport included (its share
# is shown in the per-function table).  Then, for one case: where the
# instructions go (self cost per transfer, per function), the calls per
# transfer of the allocator and the clock, and syscalls per transfer (strace,
# difference of two run lengths, so setup cancels out).
#
#   bash bench/null_callgrind.sh                       # build/, rails 1 and 8
#   RAILS="1 8 64" OPS=50000 DETAIL="multi 8" bash bench/null_callgrind.sh
#   BUILD_DIR=build-bench bash bench/null_callgrind.sh  # another build
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
ops="${OPS:-50000}"
rails_list="${RAILS:-1 8}"
cases="${CASES:-single pipelined batch multi}"
slices="${SLICES:-16}"
detail="${DETAIL:-single 1}"
top="${TOP:-14}"
bin="$build/bench/railwire_null_bench"
command -v valgrind >/dev/null || { echo "null_callgrind: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
[ -x "$bin" ] || cmake --build "$build" --target railwire_null_bench -j2 >/dev/null
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

run_cg() {  # run_cg CASE RAILS -> callgrind out file name on stdout (empty: n/a)
  local out="$tmp/cg.$1.$2.out" log="$tmp/bench.$1.$2.txt"
  valgrind --tool=callgrind --toggle-collect=nb_measure --callgrind-out-file="$out" \
    "$bin" cost --case "$1" --rails "$2" --runs 1 --ops "$ops" --slices "$slices" --no-warmup \
    >"$log" 2>"$tmp/vg.$1.$2.txt" || { cat "$tmp/vg.$1.$2.txt" >&2; exit 1; }
  if grep -q 'n/a' "$log"; then echo ""; else echo "$out"; fi
}
xfers_of() { [ "$1" = multi ] && echo $((ops / slices)) || echo "$ops"; }
slices_of() { [ "$1" = multi ] && echo "$slices" || echo 1; }

build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || echo "?")
echo "== instructions per transfer (callgrind; build $build, $build_type; $ops slices per case)"
printf "%-10s %5s %7s %12s %12s\n" case rails slices instr/xfer instr/slice
for c in $cases; do
  for r in $rails_list; do
    f=$(run_cg "$c" "$r")
    if [ -z "$f" ]; then
      printf "%-10s %5s %7s  n/a: API caps rails at 8\n" "$c" "$r" "$(slices_of "$c")"
      continue
    fi
    total=$(awk '/^summary:/{print $2}' "$f")
    awk -v t="$total" -v x="$(xfers_of "$c")" -v s="$(slices_of "$c")" -v c="$c" -v r="$r" \
      'BEGIN{printf "%-10s %5s %7s %12.1f %12.1f\n", c, r, s, t/x, t/x/s}'
  done
done

set -- $detail
dc=$1 dr=$2
f="$tmp/cg.$dc.$dr.out"
[ -f "$f" ] || f=$(run_cg "$dc" "$dr")
x=$(xfers_of "$dc")
echo
echo "== where the instructions go: $dc, $dr rail(s), self cost per transfer (top $top)"
callgrind_annotate --threshold=100 "$f" 2>/dev/null | sed -n '/file:function/,/^$/p' |
  awk -v x="$x" -v top="$top" '
    /^ *[0-9,]+ \(/ { n=$1; gsub(",", "", n); fn=$0; sub(/^ *[0-9,]+ +\( *[0-9.]+%\) +/, "", fn);
                      sub(/ \[.*$/, "", fn); sub(/^.*\//, "", fn);
                      if (shown++ < top) printf "%10.1f  %s\n", n/x, fn; rest += (shown > top) ? n : 0 }
    END { printf "%10.1f  (everything else)\n", rest/x }'
echo
echo "== calls per transfer: $dc, $dr rail(s)"
callgrind_annotate --tree=caller --threshold=100 "$f" 2>/dev/null | awk -v x="$x" '
  /^ *[0-9,]+ \( *[0-9.]+%\) +< / { if (match($0, /\(([0-9,]+)x\)/)) { s=substr($0, RSTART+1, RLENGTH-3);
                                       gsub(",", "", s); calls += s } next }
  /^ *[0-9,]+ \( *[0-9.]+%\) +\* / { fn=$0; sub(/^.*\* +/, "", fn); sub(/ \[.*$/, "", fn); sub(/^.*:/, "", fn);
                                      sub(/@.*$/, "", fn); sub(/^__/, "", fn); sub(/_avx.*$|_sse.*$|_erms$/, "", fn);
                                      if (fn ~ /^(malloc|calloc|realloc|free|clock_gettime|memset|memcpy|memmove|poll|nanosleep|read|write|n_ep_post|n_ep_poll|n_ep_arm|n_ep_wait_fd|rw_stripe_pick_rail|schedule_round)$/)
                                        n[fn] += calls;
                                      calls=0; next }
  /^$/ { calls=0 }
  END { for (f in n) if (n[f] > 0) printf "  %-22s %7.2f\n", f, n[f]/x }' | sort

if command -v strace >/dev/null; then
  echo
  echo "== syscalls per transfer: $dc, $dr rail(s) (strace -c, runs of $ops and $((2 * ops)) slices)"
  sc() { strace -f -c -o "$tmp/st.$1" "$bin" cost --case "$dc" --rails "$dr" --runs 1 --ops "$1" \
           --slices "$slices" --no-warmup >/dev/null 2>&1 || true
         awk '$NF=="total"{print $4}' "$tmp/st.$1"; }
  a=$(sc "$ops"); b=$(sc $((2 * ops)))
  awk -v a="$a" -v b="$b" -v x="$x" 'BEGIN{printf "  %.3f syscalls per transfer (%s and %s syscalls in the two runs)\n", (b-a)/x, a, b}'
fi
