#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs INSIDE the soft-RoCE guest (a step of ci/verbs-vm-guest.sh): TLS
# where the VM adds something the host tests cannot (issue 18).
#
#   verbs-vm-tls-guest.sh BUILD_DIR
#
# 1. verbs: the control connection runs TLS (PSK), so the QP numbers, keys
#    and base addresses go only to the authenticated client; a verified RW
#    bench over 2 rxe rails, the rails themselves reporting tls "off" (RoCE
#    is not encrypted, docs/security.md); a plain client at the TLS verbs
#    listener fails and names TLS.
# 2. tcp: a 1 MiB READ over TLS with kernel TLS allowed and with
#    RAILWIRE_TLS_KTLS=0, printing each rail's tls/tls_ktls and GB/s (kernel
#    TLS engages only where the guest has the tls and gcm(aes) modules; the
#    step asserts the user-space mode when it is turned off, and prints the
#    other).
set -u
build=${1:?usage: verbs-vm-tls-guest.sh BUILD_DIR}
rw=$build/tools/railwire/railwire
work=$(mktemp -d /tmp/rwvm-tls.XXXXXX)
read -r -a A <<< "$RXEVM_A_DEVS"
read -r -a B <<< "$RXEVM_B_DEVS"
# shellcheck source=ci/rxe-guest-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/rxe-guest-lib.sh"
rc=0
fail() { echo "FAIL: $*"; rc=1; }

(umask 077 && printf 'vmfleet:%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
  > "$work/psk.txt")
port=7480
"$rw" serve --listen "127.0.0.1:$port" --transport verbs --dialect rw --arena 16M --fill \
  --device "${B[0]}" --device "${B[1]:-${B[0]}}" --tls-psk "$work/psk.txt" > "$work/serve.log" 2>&1 &
sp=$!
if wait_listen "$port"; then
  timeout 120 "$rw" bench --connect "127.0.0.1:$port" --dialect rw --transport verbs \
    --device "${A[0]}" --device "${A[1]:-${A[0]}}" --rails 2 --write --verify -s 256K -n 40 -q 4 \
    --span 4M --tls-psk "$work/psk.txt" --json --quiet > "$work/verbs.json" ||
    fail "verified verbs bench with a TLS control connection"
  grep -q '"failed": 0' "$work/verbs.json" || fail "verbs bench over TLS: transfers failed"
  n_off=$(grep -o '"tls": "off"' "$work/verbs.json" | wc -l)
  [ "$n_off" = 2 ] || fail "verbs rails should report tls off (RoCE in the clear), saw $n_off"
  grep -q "psk:vmfleet" "$work/serve.log" || fail "the server did not log the client's PSK identity"
  timeout 60 "$rw" bench --connect "127.0.0.1:$port" --dialect rw --transport verbs \
    --device "${A[0]}" --rails 1 --read -s 64K -n 4 --quiet > /dev/null 2> "$work/plain.err" &&
    fail "a plain client was served by a TLS verbs listener"
  grep -q "TLS" "$work/plain.err" || fail "the plain client's error does not name TLS: $(cat "$work/plain.err")"
  echo "verbs with a TLS control connection: $(grep -o '"gbps": [0-9.]*' "$work/verbs.json" | head -1)"
else
  fail "serve --tls-psk (verbs) did not listen"
fi
kill -TERM "$sp" 2>/dev/null
wait "$sp" || fail "serve (verbs, TLS) did not stop cleanly"
[ $rc = 0 ] || { echo "--- server log"; tail -40 "$work/serve.log"; }

for k in 1 0; do
  RAILWIRE_TLS_KTLS=$k timeout 120 "$rw" bench --loopback --transport tcp --rails 1 --read -s 1M \
    -q 8 -D 2 --tls-psk "$work/psk.txt" --json --quiet > "$work/tcp$k.json" ||
    fail "tcp bench over TLS (RAILWIRE_TLS_KTLS=$k)"
  mode=$(grep -o '"tls": "[a-z]*", "tls_ktls": "[a-z]*"' "$work/tcp$k.json" | head -1)
  echo "tcp 1 MiB READ, RAILWIRE_TLS_KTLS=$k: $(grep -o '"gbps": [0-9.]*' "$work/tcp$k.json" | head -1), $mode"
  if [ "$k" = 0 ]; then
    [ "$mode" = '"tls": "user", "tls_ktls": "none"' ] || fail "RAILWIRE_TLS_KTLS=0 still reports $mode"
  fi
done
grep -v '\s0$' /proc/net/tls_stat 2>/dev/null | sed 's/^/  tls_stat: /'
rm -rf "$work"
exit $rc
