# SPDX-License-Identifier: MIT
# Shared by scripts/abi-baseline.sh and scripts/abi-check.sh (sourced): the
# one way the library is built and dumped for the ABI baseline, so the
# baseline and every check see the same build flags.
ABI_BASELINE=abi/librailwire.so.1.abi
# The flags of the release stage of scripts/test.sh: a build dir already
# configured by it is reused as is.
ABI_CMAKE_FLAGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRAILWIRE_WERROR=ON)

abi_need_tools() {
  command -v abidw >/dev/null && command -v abidiff >/dev/null && return 0
  echo "abi: abidw/abidiff are missing: apt-get install abigail-tools (scripts/deps.sh does)" >&2
  return 1
}

# abi_build DIR: configures DIR with ABI_CMAKE_FLAGS (CFLAGS from the
# environment are ignored: the baseline has none) and builds the shared
# library only.  Prints the library's path.
abi_build() {
  local dir=$1 type
  env -u CFLAGS -u CPPFLAGS -u LDFLAGS cmake -S . -B "$dir" "${ABI_CMAKE_FLAGS[@]}" >/dev/null || return 1
  type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$dir/CMakeCache.txt")
  if [ "$type" != RelWithDebInfo ]; then
    echo "abi: $dir is a $type build; the baseline is RelWithDebInfo" >&2
    return 1
  fi
  cmake --build "$dir" -j"$(nproc)" --target railwire >/dev/null || return 1
  local lib="$dir/librailwire.so.1"
  [ -e "$lib" ] || { echo "abi: $lib was not built (soname changed? see docs/abi.md)" >&2; return 1; }
  echo "$lib"
}

# abi_dump LIB OUT: the ABI of LIB as seen through the public headers only
# (types of src/ are dropped), without paths or line numbers, so the file
# changes only when the ABI does.
abi_dump() {
  abidw --headers-dir include --drop-private-types --drop-undefined-syms \
    --no-corpus-path --no-comp-dir-path --no-show-locs --no-elf-needed \
    --type-id-style hash --out-file "$2" "$1"
}
