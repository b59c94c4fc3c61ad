#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs docs/security.md's walkthrough commands (a CA, a server and a
# client certificate with `openssl`, a PSK file) in a temporary directory
# and checks that src/tls accepts what they make: a certificate handshake by
# name and by IP SAN, with the identities the docs promise, and a PSK
# handshake with the named identity.
# usage: walkthrough.sh TLS_CHECK_BINARY
set -euo pipefail
check=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "walkthrough: $*" >&2; exit 1; }

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout ca.key -out ca.pem -days 3650 -subj "/CN=railwire fleet CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout server.key -out server.csr -subj "/CN=store1.fleet.example" 2>/dev/null
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 365 -out server.pem -extfile <(printf '%s\n' \
    'subjectAltName=DNS:store1.fleet.example,IP:127.0.0.1' \
    'extendedKeyUsage=serverAuth' 'keyUsage=critical,digitalSignature') 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout client.key -out client.csr -subj "/CN=gpu17.fleet.example" 2>/dev/null
openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 365 -out client.pem -extfile <(printf '%s\n' \
    'subjectAltName=DNS:gpu17.fleet.example' \
    'extendedKeyUsage=clientAuth' 'keyUsage=critical,digitalSignature') 2>/dev/null
openssl verify -CAfile ca.pem server.pem client.pem >/dev/null || fail "openssl verify"
chmod 600 server.key client.key

certs=(--server-cert server.pem --server-key server.key --ca ca.pem
       --client-cert client.pem --client-key client.key)
out=$("$check" "${certs[@]}" --name store1.fleet.example) || fail "by name: $out"
grep -q '"server_sees": "cn:gpu17.fleet.example dns:gpu17.fleet.example"' <<<"$out" ||
    fail "identity: $out"
out=$("$check" "${certs[@]}" --name 127.0.0.1) || fail "by IP SAN: $out"
if out=$("$check" "${certs[@]}" --name other.example); then fail "wrong name accepted: $out"; fi
grep -q '"client": "name-mismatch"' <<<"$out" || fail "name mismatch: $out"

umask 077
printf 'gpu17:%s\n' "$(openssl rand -hex 32)" >> fleet.psk
printf 'gpu18:%s\n' "$(openssl rand -hex 32)" >> fleet.psk
chmod 600 fleet.psk
grep '^gpu17:' fleet.psk > gpu17.psk && chmod 600 gpu17.psk
out=$("$check" --server-psk fleet.psk --client-psk gpu17.psk) || fail "psk: $out"
grep -q '"server_sees": "psk:gpu17"' <<<"$out" || fail "psk identity: $out"
out=$("$check" --server-psk fleet.psk --client-psk fleet.psk --identity gpu18) ||
    fail "psk gpu18: $out"
grep -q '"server_sees": "psk:gpu18"' <<<"$out" || fail "psk identity gpu18: $out"
chmod 644 fleet.psk
if "$check" --server-psk fleet.psk --client-psk gpu17.psk >/dev/null 2>err.txt; then
    fail "a world-readable PSK file was accepted"
fi
grep -q 'readable by group or others' err.txt || fail "no permission message: $(cat err.txt)"
echo "walkthrough: ok"
