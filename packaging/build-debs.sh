#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Debian packages librailwire1, librailwire-dev and railwire-tools
# from this source tree (docs/packages.md).
#   usage: packaging/build-debs.sh [BUILD_DIR]      (default: build-deb)
# The .deb files land in BUILD_DIR/packages/.  The tree is configured with
# CMAKE_INSTALL_PREFIX=/usr (multiarch libdir), Debian's build flags
# (dpkg-buildflags: hardening, -O2 -g) and no test suites; CPack strips the
# binaries and runs dpkg-shlibdeps for the dependencies.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-deb}
for tool in cmake cpack dpkg-buildflags dpkg-shlibdeps help2man; do
  command -v "$tool" >/dev/null || { echo "build-debs: $tool not found: run scripts/deps.sh" >&2; exit 1; }
done
CFLAGS="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
LDFLAGS=$(dpkg-buildflags --get LDFLAGS)
export CFLAGS LDFLAGS
# Reproducible man page dates: the last commit's time when there is one.
if [ -z "${SOURCE_DATE_EPOCH:-}" ] && git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  SOURCE_DATE_EPOCH=$(git -C "$src" log -1 --format=%ct)
  export SOURCE_DATE_EPOCH
fi
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
  -DRAILWIRE_TESTS=OFF >/dev/null
cmake --build "$build" -j"${RAILWIRE_JOBS:-$(nproc)}"
rm -rf "$build/packages"
cpack --config "$build/CPackConfig.cmake" -B "$build/packages" >/dev/null
ls "$build/packages"/*.deb
