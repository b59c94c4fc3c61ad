#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what railwire needs to build and test on Debian 12, only if missing.
#   cmake, gcc, clang (libFuzzer), pkg-config: the build
#   libcriterion-dev: the test suites
#   libssl-dev, openssl: TLS 1.3 (OpenSSL 3) and the certificates its tests make
#   libhwloc-dev, libudev-dev: NIC/GPU topology for placing rails (optional in the build; the
#     gpu tests use it); hwloc's static link (pkg-config --static, the consumer test) needs -ludev
#   libibverbs-dev, ibverbs-providers, rdma-core, ibverbs-utils, perftest: the verbs transport and its benchmark
#   python3: the independent handshake peer used by the end-to-end tests
#   iproute2, nftables: network-namespace fault tests (rail reset / packet drop)
#   qemu-system-x86, busybox-static: the soft-RoCE VM that runs the verbs suite
#   help2man, groff-base, man-db, gzip: the man pages (built from --help) and their checks
#   systemd: `systemd-analyze verify` on the unit (no running systemd needed)
#   prometheus: promtool (`promtool check metrics`) and the server the metrics
#     test scrapes `railwire serve --metrics` with
#   abigail-tools: abidw/abidiff, the ABI stage against abi/librailwire.so.1.abi
#   liburing-dev: bench/uring_rr.c, io_uring against epoll (optional in the build)
#   dpkg-dev, file: the Debian packages (cpack's dpkg-shlibdeps, dpkg-buildflags)
#   python3-dev, python3-setuptools, python3-numpy, python3-pytest, python3-pip: the
#     Python package (python/) and its tests; RAILWIRE_WITH_TORCH=1 also installs
#     python3-torch (about 140 MB to download, 600 MB installed, so not by default:
#     without it the tensor test skips)
set -euo pipefail
pkgs=(cmake make gcc clang pkg-config libcriterion-dev libssl-dev openssl libhwloc-dev libudev-dev libibverbs-dev ibverbs-providers
      rdma-core ibverbs-utils perftest python3 iproute2 nftables qemu-system-x86 busybox-static
      libclang-rt-14-dev help2man groff-base man-db gzip systemd prometheus dpkg-dev file
      python3-dev python3-setuptools python3-numpy python3-pytest python3-pip abigail-tools
      liburing-dev)
if [ "${RAILWIRE_WITH_TORCH:-0}" = 1 ]; then
  pkgs+=(python3-torch)
fi
missing=()
for p in "${pkgs[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
