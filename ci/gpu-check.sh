#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The GPU check of issue 17, for a machine with an NVIDIA GPU and its driver
# (no CUDA toolkit, no CMake, no Criterion needed): compiles
# tests/gpu/gpu_real_check.c with src/gpu and src/common by hand and runs it
# against libcuda.so.1 (or RAILWIRE_CUDA_LIBRARY).  It checks a cuMemAlloc'ed
# buffer's descriptor, tries the DMA-BUF export, and stages 64 KiB, 1 MiB and
# 16 MiB host -> device -> host, verified byte for byte, printing GB/s next to
# a host memcpy of the same run.  Exit status: the check's (0 ok, 1 a check
# failed, 2 no driver or GPU).
#
#   ci/gpu-check.sh [OUT_DIR]      (default: build-gpu-check)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
out=${1:-$repo/build-gpu-check}
mkdir -p "$out"
cc=${CC:-cc}
# shellcheck disable=SC2046
"$cc" -std=c11 -O2 -D_GNU_SOURCE -DRAILWIRE_BUILDING=1 -DRAILWIRE_VERSION='"gpu-check"' \
  -I"$repo/include" -I"$repo/src" -o "$out/gpu_real_check" \
  "$repo/tests/gpu/gpu_real_check.c" "$repo"/src/gpu/*.c "$repo"/src/common/*.c \
  -ldl -lpthread
RAILWIRE_LOG=${RAILWIRE_LOG:-info} "$out/gpu_real_check"
