#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Regenerates the committed ABI baseline, abi/librailwire.so.1.abi, and the
# saved 1.0 headers of the consumer test (tests/abi/1.0/include) from this
# tree.  Run it only for the release that defines the baseline (1.0, or a new
# soname); after a release, the baseline stays and scripts/abi-check.sh
# holds every later commit to it (docs/abi.md).
#   bash scripts/abi-baseline.sh [BUILD_DIR]    # default build-abi
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/abi-lib.sh
abi_need_tools
dir=${1:-build-abi}
lib=$(abi_build "$dir")
mkdir -p "$(dirname "$ABI_BASELINE")"
abi_dump "$lib" "$ABI_BASELINE"
rm -rf tests/abi/1.0/include
mkdir -p tests/abi/1.0/include
cp -r include/railwire.h include/railwire tests/abi/1.0/include/
echo "abi: wrote $ABI_BASELINE ($(grep -c '<elf-symbol ' "$ABI_BASELINE") symbols) and tests/abi/1.0/include"
