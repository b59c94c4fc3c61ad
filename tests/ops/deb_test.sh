#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian packages, built and installed for real, but into scratch roots
# (dpkg --root), never into this system:
#  1. packaging/build-debs.sh builds librailwire1, librailwire-dev and
#     railwire-tools; each holds what it should, with the right Depends
#     (dpkg-shlibdeps for the ELF files, = same version between ours);
#  2. dpkg refuses railwire-tools or librailwire-dev without librailwire1,
#     installs all three, and refuses to remove librailwire1 under them;
#  3. the installed command runs, its unit points at it, its man pages read;
#  4. tests/consumer/project builds against the installed packages with
#     find_package(railwire CONFIG) and with pkg-config (shared and static),
#     and runs against the installed librailwire.so.1;
#  5. dpkg removes all three and leaves no file behind.
# The scratch roots' dpkg databases list only the host packages ours depend
# on (copied from the host's), so dependency checks are real.  Maintainer
# scripts run without chroot (--force-script-chrootless) with a stub
# ldconfig first in PATH, so nothing runs against the host's files.
# usage: deb_test.sh SOURCE_DIR CONSUMER_PROJECT C_COMPILER
set -euo pipefail
src=$1 project=$2 cc=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/railwire-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
for t in dpkg dpkg-deb dpkg-query cpack; do
  command -v $t >/dev/null || fail "$t not found: run scripts/deps.sh"
done
version=$(sed -n 's/^project(railwire VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || fail "no project version in $src/CMakeLists.txt"
debver=$version-1

echo "== 1. build"
CC=$cc bash "$src/packaging/build-debs.sh" "$work/build" > "$work/build.log" 2>&1 \
  || { cat "$work/build.log"; fail "packaging/build-debs.sh failed"; }
pkgs=$work/build/packages
lib=$pkgs/librailwire1_${debver}_$(dpkg --print-architecture).deb
dev=${lib/librailwire1_/librailwire-dev_}
tools=${lib/librailwire1_/railwire-tools_}
for d in "$lib" "$dev" "$tools"; do [ -f "$d" ] || fail "$d was not built: $(ls "$pkgs")"; done
field() { dpkg-deb -f "$1" "$2"; }
files() { dpkg-deb -c "$1" | awk '{print $6}' | grep -v '/$'; }
has() { grep -qE "$2" <<< "$(files "$1")" || fail "$(basename "$1") lacks $2"; }
lacks() { ! grep -qE "$2" <<< "$(files "$1")" || fail "$(basename "$1") should not hold $2"; }
has "$lib" '/usr/lib/[^/]+/librailwire\.so\.1$'
has "$lib" '/usr/lib/[^/]+/librailwire\.so\.1\.[0-9.]+$'
lacks "$lib" 'librailwire\.(a|so)$|/include/|/bin/|\.pc$'
for f in '/usr/include/railwire\.h$' '/usr/include/railwire/railset\.h$' '/librailwire\.so$' \
         '/librailwire\.a$' '/pkgconfig/railwire\.pc$' '/cmake/railwire/railwireConfig\.cmake$' \
         '/cmake/railwire/railwireTargets\.cmake$'; do has "$dev" "$f"; done
lacks "$dev" 'librailwire\.so\.1|/bin/'
for f in '^\./usr/bin/railwire$' '/lib/systemd/system/railwire-serve@\.service$' \
         '/man1/railwire\.1\.gz$' '/man1/railwire-serve\.1\.gz$' '/man1/railwire-bench\.1\.gz$' \
         '/man1/railwire-decode\.1\.gz$' '/man1/railwire-devices\.1\.gz$' '/man7/railwire\.7\.gz$' \
         '/examples/railwire-serve\.env$'; do has "$tools" "$f"; done
lacks "$tools" 'librailwire\.so|/include/'
for d in "$lib" "$dev" "$tools"; do
  has "$d" "/usr/share/doc/$(field "$d" Package)/copyright$"
done
dep_lib=$(field "$lib" Depends) dep_dev=$(field "$dev" Depends) dep_tools=$(field "$tools" Depends)
grep -q 'libc6 (>= ' <<< "$dep_lib" || fail "librailwire1 Depends '$dep_lib' lacks libc6 (shlibdeps)"
if objdump -p "$work/build/librailwire.so" | grep -q 'NEEDED *libibverbs'; then
  grep -q 'libibverbs1' <<< "$dep_lib" || fail "librailwire1 links libibverbs but Depends is '$dep_lib'"
fi
grep -qF "librailwire1 (= $debver)" <<< "$dep_dev" || fail "librailwire-dev Depends '$dep_dev'"
grep -qF "librailwire1 (= $debver)" <<< "$dep_tools" || fail "railwire-tools Depends '$dep_tools'"
dpkg-deb -e "$lib" "$work/lib-control"
grep -qx "librailwire 1 librailwire1 (>= $debver)" "$work/lib-control/shlibs" \
  || fail "librailwire1 shlibs: $(cat "$work/lib-control/shlibs" 2>/dev/null)"
echo "librailwire1: $dep_lib"
echo "librailwire-dev: $dep_dev"
echo "railwire-tools: $dep_tools"

# A scratch root whose dpkg database holds the host packages that ours
# depend on, as the host has them.
mkroot() {  # mkroot DIR
  local r=$1 name
  mkdir -p "$r/var/lib/dpkg/info" "$r/var/lib/dpkg/updates" "$r/var/lib/dpkg/triggers"
  : > "$r/var/lib/dpkg/available"
  : > "$r/var/lib/dpkg/status"
  for name in $( (field "$lib" Depends; echo ,; field "$dev" Depends; echo ,; field "$tools" Depends) |
                 tr ',|' '\n\n' | sed 's/(.*//; s/ //g' | grep -v '^$' | grep -v railwire | sort -u); do
    [ "$(dpkg-query -W -f='${Status}' "$name" 2>/dev/null)" = "install ok installed" ] || continue
    dpkg-query -s "$name" >> "$r/var/lib/dpkg/status"
    echo >> "$r/var/lib/dpkg/status"
    : > "$r/var/lib/dpkg/info/$(dpkg-query -W -f='${binary:Package}' "$name").list"
  done
}
mkdir "$work/stub"
printf '#!/bin/sh\necho "ldconfig $*" >> "%s/ldconfig.calls"\n' "$work" > "$work/stub/ldconfig"
chmod +x "$work/stub/ldconfig"
rdpkg() {  # rdpkg ROOT ARGS...: dpkg on a scratch root
  local r=$1; shift
  PATH=$work/stub:$PATH dpkg --root="$r" --force-script-chrootless --no-triggers "$@"
}

echo "== 2. install into a scratch root"
mkroot "$work/r0"
out=$(rdpkg "$work/r0" -i "$tools" 2>&1) && fail "railwire-tools installed without librailwire1"
grep -q "depends on librailwire1" <<< "$out" || fail "unexpected refusal: $out"
out=$(rdpkg "$work/r0" -i "$dev" 2>&1) && fail "librailwire-dev installed without librailwire1"
grep -q "depends on librailwire1" <<< "$out" || fail "unexpected refusal: $out"
root=$work/root
mkroot "$root"
rdpkg "$root" -i "$lib" "$dev" "$tools" > "$work/install.log" 2>&1 \
  || { cat "$work/install.log"; fail "dpkg -i of the three packages failed"; }
for p in librailwire1 librailwire-dev railwire-tools; do
  [ "$(dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Status}' $p)" = "install ok installed" ] \
    || fail "$p is not installed in the scratch root"
done
grep -q '^ldconfig' "$work/ldconfig.calls" || fail "librailwire1's postinst did not run ldconfig"
out=$(rdpkg "$root" -r librailwire1 2>&1) && fail "librailwire1 was removed under its dependents"
echo "installed; dpkg enforces the dependencies"

echo "== 3. the installed command, unit and man pages"
usr=$root/usr
[ "$("$usr/bin/railwire" --version)" = "railwire $version" ] || fail "installed railwire --version"
unit=$usr/lib/systemd/system/railwire-serve@.service
grep -qx 'ExecStart=/usr/bin/railwire serve $RAILWIRE_SERVE_ARGS' "$unit" \
  || fail "installed unit's ExecStart is not /usr/bin/railwire: $(grep ExecStart "$unit")"
for page in man1/railwire.1 man1/railwire-serve.1 man1/railwire-bench.1 man1/railwire-decode.1 \
            man1/railwire-devices.1 man7/railwire.7; do
  text=$(zcat "$usr/share/man/$page.gz")
  grep -q '^\.TH RAILWIRE' <<< "$text" || fail "$page.gz is not a man page"
done
zcat "$usr/share/man/man1/railwire-serve.1.gz" | grep -qF -- '\-\-listen' || fail "serve page lacks --listen"

echo "== 4. the outside consumer against the installed packages"
libdir=$(dirname "$(find "$usr/lib" -name librailwire.so.1 | head -n 1)")
cmake -S "$project" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$usr" -DCMAKE_C_COMPILER="$cc" \
  > "$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; fail "consumer configure failed"; }
grep -q "railwire_DIR:PATH=$libdir/cmake/railwire" "$work/cmake-build/CMakeCache.txt" \
  || fail "find_package did not find the installed package: $(grep railwire_DIR "$work/cmake-build/CMakeCache.txt")"
cmake --build "$work/cmake-build" > "$work/consumer.log" 2>&1 \
  || { cat "$work/consumer.log"; fail "consumer build failed"; }
LD_LIBRARY_PATH=$libdir "$work/cmake-build/consumer"
deps=$(LD_LIBRARY_PATH=$libdir ldd "$work/cmake-build/consumer")
grep -q "librailwire.so.1 => $libdir/" <<< "$deps" || fail "consumer does not use the installed library: $deps"
export PKG_CONFIG_PATH=$libdir/pkgconfig
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Wextra -Werror -o "$work/consumer-pc" "$project/consumer.c" \
  $(pkg-config --cflags --libs railwire)
LD_LIBRARY_PATH=$libdir "$work/consumer-pc"
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Wextra -Werror -o "$work/consumer-static" "$project/consumer.c" \
  $(pkg-config --cflags railwire) $(pkg-config --static --libs railwire | sed 's/-lrailwire\b/-l:librailwire.a/')
"$work/consumer-static"

echo "== 5. remove"
rdpkg "$root" -r railwire-tools librailwire-dev librailwire1 > "$work/remove.log" 2>&1 \
  || { cat "$work/remove.log"; fail "dpkg -r failed"; }
left=$(find "$root" -path "$root/var" -prune -o \( -type f -o -type l \) -print)
[ -z "$left" ] || fail "files left after removal: $left"
echo "deb_test: ok"
