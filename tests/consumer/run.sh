#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# usage: run.sh BUILD_DIR CONSUMER_PROJECT_DIR C_COMPILER
set -euo pipefail
build=$1 project=$2 cc=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/railwire-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(find "$prefix" -name 'librailwire.so' -printf '%h\n' | head -n 1)
[ -n "$libdir" ] || { echo "FAIL: librailwire.so was not installed"; exit 1; }
for f in "$prefix/include/railwire.h" "$libdir/librailwire.a" "$libdir/pkgconfig/railwire.pc" \
         "$libdir/cmake/railwire/railwireConfig.cmake" "$prefix/bin/railwire"; do
  [ -e "$f" ] || { echo "FAIL: $f was not installed"; exit 1; }
done
soname=$(objdump -p "$libdir/librailwire.so" | awk '/SONAME/ {print $2}')
[ "$soname" = librailwire.so.1 ] || { echo "FAIL: SONAME is '$soname', want librailwire.so.1"; exit 1; }
# Only the public railwire_* API may leave the shared library.
leaked=$(nm -D --defined-only "$libdir/librailwire.so" | awk '{print $3}' | grep -v '^railwire_' | grep -v '^RAILWIRE_1\.0$' || true)
if [ -n "$leaked" ]; then echo "FAIL: internal symbols exported:"; echo "$leaked"; exit 1; fi

echo "== consumer via find_package(railwire CONFIG)"
cmake -S "$project" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/cmake-build/consumer"
# The CMake-built consumer must really use the shared library.
# (ldd's output is captured first: `ldd | grep -q` under pipefail fails when
# grep exits early and ldd gets SIGPIPE.)
deps=$(ldd "$work/cmake-build/consumer")
grep -q "librailwire.so.1 => $libdir" <<< "$deps" \
  || { echo "FAIL: consumer is not linked against the installed librailwire.so:"; echo "$deps"; exit 1; }

echo "== consumer via pkg-config"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Wextra -Werror -o "$work/consumer-pc" "$project/consumer.c" \
  $(pkg-config --cflags --libs railwire)
LD_LIBRARY_PATH="$libdir" "$work/consumer-pc"
echo "== static archive via pkg-config --static"
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Wextra -Werror -o "$work/consumer-static" "$project/consumer.c" \
  $(pkg-config --cflags railwire) $(pkg-config --static --libs railwire | sed 's/-lrailwire\b/-l:librailwire.a/')
"$work/consumer-static"
echo "install_consumer: all consumers built and ran"
