#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Small transfers on tcp: railwire READ and WRITE of 4 KiB and 64 KiB at
# depth 64 (1 rail, or RAILS, `railwire bench --loopback`), in transfers/s, against two
# references measured in the same run, round after round:
#   - bench/rr_ref.c: a minimal pipelined request/response over one loopback
#     socket (32-byte request -> payload answer; a write sends its payload
#     with the request and gets a 32-byte answer).  Target: >= 0.8.
#   - UCX over tcp: UCX_TLS=tcp ucx_perftest -t ucp_get (READ) / ucp_put_bw
#     (WRITE), -O DEPTH, server and client processes.  Target: >= 3.
# Each ratio is taken within one round, and the median over rounds printed
# with its range.  Nothing is asserted.
#
#   bash bench/small.sh                  # 3 rounds of 2 s per measurement
#   ROUNDS=5 SECS=3 bash bench/small.sh
#   RAILS=2 bash bench/small.sh          # railwire on 2 rails (the references keep one socket)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rounds="${ROUNDS:-3}"
secs="${SECS:-2}"
depth="${DEPTH:-64}"
rails="${RAILS:-1}"
sizes="${SIZES:-4K 64K}"
bench_need jq:jq ucx-utils:ucx_perftest
bench_build_all
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "== machine: $(nproc) CPU(s), $(uname -sr), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== small transfers on tcp, depth $depth, railwire on $rails rail(s), $rounds round(s) of $secs s per measurement"
for ((k = 1; k <= rounds; k++)); do
  for op in read write; do
    uop=get; [ $op = write ] && uop=put
    for s in $sizes; do
      key="$op.$s"
      read -r rr _ < <(rr_run "$op" "$s" "$depth" "$secs") || true
      rr=${rr:-nan}
      read -r rw _ < <(rw_run "$rails" "$op" "$s" "$depth" "$secs") || true
      rw=${rw:-nan}
      read -r ux _ < <(ucx_run "$uop" "$s" "$depth" "$secs") || true
      ux=${ux:-nan}
      echo "$rr" >>"$tmp/$key.rr"; echo "$rw" >>"$tmp/$key.rw"; echo "$ux" >>"$tmp/$key.ux"
      ratio "$rw" "$rr" >>"$tmp/$key.r_rr"; echo >>"$tmp/$key.r_rr"
      ratio "$rw" "$ux" >>"$tmp/$key.r_ux"; echo >>"$tmp/$key.r_ux"
      printf "  round %d %-5s %4s: rr_ref %9.0f  railwire %9.0f  ucx %9.0f transfers/s\n" \
        "$k" "$op" "$s" "$rr" "$rw" "$ux" >&2
    done
  done
done

range() { sort -g "$1" | awk 'NF{v[++n]=$1} END{if(n) printf "%s-%s", v[1], v[n]; else printf "-"}'; }
echo
echo "| op, size (depth $depth) | rr_ref transfers/s | railwire | ratio vs rr_ref (>= 0.8) | UCX tcp | ratio vs UCX (>= 3) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for op in read write; do
  for s in $sizes; do
    key="$op.$s"
    printf "| %s %s | %.0f | %.0f | **%s** (%s) | %.0f | **%s** (%s) |\n" "${op^^}" "$s" \
      "$(median <"$tmp/$key.rr")" "$(median <"$tmp/$key.rw")" \
      "$(grep -v '^-' "$tmp/$key.r_rr" | median)" "$(range "$tmp/$key.r_rr")" \
      "$(median <"$tmp/$key.ux")" \
      "$(grep -v '^-' "$tmp/$key.r_ux" | median)" "$(range "$tmp/$key.r_ux")"
  done
done
echo "(medians over $rounds rounds; ratios are per round, median and range; UCX: ucp_get for READ, ucp_put_bw for WRITE)"
