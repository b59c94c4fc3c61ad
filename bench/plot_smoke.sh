#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ctest bench_plot_smoke: `railwire bench --loopback ... --plot X.png` writes a
# PNG (and its .dat/.gp) when gnuplot is installed, and fails with a clear
# error naming gnuplot when it is not.  Asserts no figure.
#   plot_smoke.sh PATH/TO/railwire
set -euo pipefail
cli=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if command -v gnuplot >/dev/null; then
  "$cli" bench --loopback --transport tcp --rails 2 --read -s 4K -n 200 -q 4 --quiet \
    --plot "$tmp/sweep.png" >"$tmp/out.txt"
  [ "$(head -c 8 "$tmp/sweep.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
    { echo "not a PNG: $tmp/sweep.png"; exit 1; }
  grep -q '^4096 ' "$tmp/sweep.dat" || { echo "no 4 KiB row in sweep.dat"; exit 1; }
  [ -s "$tmp/sweep.gp" ]
  echo "ok: PNG written"
else
  if PATH=/nonexistent "$cli" bench --loopback --transport tcp -s 4K -n 10 --quiet \
       --plot "$tmp/x.png" >/dev/null 2>"$tmp/err.txt"; then
    echo "--plot without gnuplot should fail"; exit 1
  fi
  grep -q gnuplot "$tmp/err.txt" || { echo "the error does not name gnuplot:"; cat "$tmp/err.txt"; exit 1; }
  echo "ok: gnuplot missing, clear error"
fi
