#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ctest bench_railsets_threads_smoke: bench/railsets_threads runs against a
# `railwire serve` of its own (two 2-rail railsets, briefly) and prints its
# JSON line; with no server listening it fails and prints no figures.
# Asserts no figure.
#   railsets_threads_smoke.sh PATH/TO/railwire PATH/TO/railwire_railsets_threads
set -euo pipefail
cli=$1 sets=$2
tmp=$(mktemp -d)
srv=""
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$tmp"' EXIT
"$cli" serve --dialect rw --listen 127.0.0.1:0 --arena 1M --fill >"$tmp/serve.out" 2>"$tmp/serve.err" &
srv=$!
for _ in $(seq 1 100); do grep -q listening "$tmp/serve.out" && break; sleep 0.1; done
port=$(sed -n 's/^listening on [^ ]*:\([0-9]*\) .*/\1/p' "$tmp/serve.out")
[ -n "$port" ] || { echo "the server did not start:"; cat "$tmp/serve.err"; exit 1; }
"$sets" --connect "127.0.0.1:$port" --railsets 2 --rails 2 --size 65536 --depth 2 --seconds 0.3 \
  >"$tmp/out.json"
grep -Eq '"railsets": 2, "rails": 2, .*"most_threads": [1-9][0-9]*, .*"gbps": [0-9.]+' "$tmp/out.json" ||
  { echo "unexpected output:"; cat "$tmp/out.json"; exit 1; }
kill "$srv"; wait "$srv" 2>/dev/null || true; srv=""
if "$sets" --connect "127.0.0.1:$port" --railsets 1 --rails 1 --seconds 0.1 >"$tmp/none.json" \
     2>"$tmp/none.err"; then
  echo "no server listening, yet it succeeded"; exit 1
fi
[ ! -s "$tmp/none.json" ] || { echo "figures printed for a failed run:"; cat "$tmp/none.json"; exit 1; }
grep -q "connect" "$tmp/none.err" || { echo "the error does not say what failed:"; cat "$tmp/none.err"; exit 1; }
echo "ok: $(cat "$tmp/out.json")"
