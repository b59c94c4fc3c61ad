# SPDX-License-Identifier: MIT
# Helpers the soft-RoCE guest scripts share (sourced by ci/verbs-vm-guest.sh
# and ci/verbs-perftest-guest.sh, from the directory they run in).

wait_listen() {  # wait_listen PORT: until a TCP listener exists (10 s)
  local hex i
  hex=$(printf '%04X' "$1")
  for i in $(seq 200); do
    grep -q ":$hex 00000000:0000 0A" /proc/net/tcp 2>/dev/null && return 0
    sleep 0.05
  done
  echo "nothing listens on port $1" >&2
  return 1
}
