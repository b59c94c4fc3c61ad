# SPDX-License-Identifier: MIT
# Builds and runs railwire's benchmarks (Release build in build-bench/ unless
# BUILD_DIR is set) and prints the ratios against references measured in the
# same run.  Nothing here asserts a figure.
#
#   bash bench/run.sh                 # defaults: 1024 MiB per run, median of 5
#   TOTAL_MIB=256 REPEAT=3 bash bench/run.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build-bench}"
total="${TOTAL_MIB:-1024}"
repeat="${REPEAT:-5}"
connects="${CONNECTS:-50}"

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DRAILWIRE_TESTS=ON >/dev/null
cmake --build "$build" --target railwire_tcp_bench railwire_cli -j2 >/dev/null

echo "== machine: $(nproc) CPU(s), $(uname -sr), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== bench/tcp_bench.c"
"$build/bench/railwire_tcp_bench" --total-mib "$total" --repeat "$repeat" --connects "$connects"
echo
echo "== railwire bench --loopback (the CLI, same transport), 1 MiB, depth 8"
for rails in 1 2; do
  for op in --read --write; do
    "$build/tools/railwire/railwire" bench --loopback --transport tcp --rails "$rails" "$op" \
      -s 1M -q 8 -n 2000 --quiet | sed -n '/^ *size/,/^$/{/^$/!p}' | sed "s/^/  [$rails rail(s) $op] /"
  done
done
