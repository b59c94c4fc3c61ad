#!/bin/sh
# SPDX-License-Identifier: MIT
# What help2man reads for one man page: `railwire [SUBCOMMAND] --help`, with
# its first "usage:" turned into "Usage:" and the usage lines indented under
# it into "or:" lines (help2man's SYNOPSIS markers), and `railwire --version`
# under the page's name.  Nothing else is changed, so the page says what
# --help says.
#   RW_CLI   the railwire binary
#   RW_SUB   the subcommand (empty for railwire(1))
#   RW_PAGE  the page name (railwire, railwire-serve, ...)
set -eu
case "${1:-}" in
--version)
  "$RW_CLI" --version | sed "1s/^railwire /$RW_PAGE /" ;;
*)
  # shellcheck disable=SC2086 # RW_SUB is one word or empty
  "$RW_CLI" $RW_SUB --help | awk '
    NR == 1 && sub(/^usage:/, "Usage:") { usage = 1; print; next }
    usage && /^ +railwire / { sub(/^ +/, "    or: "); print; next }
    { usage = 0; print }' ;;
esac
