#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job on any machine: install what is missing, build, and run a
# striped 2-rail WRITE+READ benchmark with byte-for-byte verification against
# a loopback server started by the same command.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target railwire_cli >/dev/null
./build/tools/railwire/railwire bench --loopback --rails 2 --write -s 1M -q 8 -n 2000 --verify
./build/tools/railwire/railwire bench --loopback --rails 2 --read -s 1M -q 8 -n 2000 --verify
