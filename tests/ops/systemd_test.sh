#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The systemd unit railwire-serve@.service, as installed:
#  1. it has the directives the docs promise (env file per instance, the
#     hardening, LimitMEMLOCK, restart policy) and ExecStart is the installed
#     binary;
#  2. `systemd-analyze verify` accepts it with no message at all (unknown keys
#     are only warnings there, so any output fails), checking the man pages
#     its Documentation= names; verify needs ExecStart to exist, so it runs
#     on a copy whose ExecStart is the built binary;
#  3. the example env file's arguments start `railwire serve` (on another
#     port), SIGTERM stops it with status 0 (no restart under
#     Restart=on-failure), and a usage error exits 2
#     (RestartPreventExitStatus=2).
# usage: systemd_test.sh UNIT EXAMPLE_ENV CLI MANDIR INSTALLED_BINDIR
set -euo pipefail
unit=$1 example=$2 cli=$3 mandir=$4 bindir=$5
work=$(mktemp -d "${TMPDIR:-/tmp}/railwire-systemd.XXXXXX")
pid=
cleanup() { [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v systemd-analyze >/dev/null || fail "systemd-analyze not found: run scripts/deps.sh (package systemd)"

echo "== 1. directives"
for want in 'EnvironmentFile=/etc/railwire/%i.env' \
            "ExecStart=$bindir/railwire serve \$RAILWIRE_SERVE_ARGS" \
            'NoNewPrivileges=yes' 'ProtectSystem=strict' 'LimitMEMLOCK=infinity' \
            'Restart=on-failure' 'RestartPreventExitStatus=2' 'KillSignal=SIGTERM' \
            'WantedBy=multi-user.target'; do
  grep -qxF -- "$want" "$unit" || fail "$unit has no line '$want'"
done

echo "== 2. systemd-analyze verify"
mkdir "$work/units"
sed "s|^ExecStart=$bindir/railwire |ExecStart=$cli |" "$unit" > "$work/units/railwire-serve@.service"
grep -q "^ExecStart=$cli serve" "$work/units/railwire-serve@.service" || fail "ExecStart was not rewritten"
verify() {  # verify UNIT_DIR: prints everything systemd-analyze says
  MANPATH=$mandir SYSTEMD_LOG_COLOR=0 systemd-analyze verify --generators=no \
    "$1/railwire-serve@check.service" 2>&1
}
out=$(verify "$work/units") || fail "systemd-analyze verify failed:
$out"
[ -z "$out" ] || fail "systemd-analyze verify has something to say:
$out"
# The same check on a unit with a misspelt key must complain (so a silent
# verify above means something).
mkdir "$work/bad"
sed 's/^NoNewPrivileges=/NoNewPrivilege=/' "$work/units/railwire-serve@.service" \
  > "$work/bad/railwire-serve@.service"
out=$(verify "$work/bad" || true)
grep -q "NoNewPrivilege" <<< "$out" || fail "verify did not notice a misspelt key: '$out'"
echo "verify: clean (and a misspelt key is reported)"

echo "== 3. the example env file, SIGTERM, usage errors"
# systemd's env-file syntax: KEY=VALUE lines, '#' comments; the value is
# split on whitespace by ExecStart's unquoted $RAILWIRE_SERVE_ARGS.
args=
while IFS= read -r line; do
  case $line in ''|'#'*) continue ;; esac
  key=${line%%=*} val=${line#*=}
  case $key in
    RAILWIRE_SERVE_ARGS) args=$val ;;
    RAILWIRE_*) export "$key=$val" ;;
    *) fail "unexpected line in $example: $line" ;;
  esac
done < "$example"
[ -n "$args" ] || fail "$example sets no RAILWIRE_SERVE_ARGS"
# Same arguments on a free loopback port, so other tests are not disturbed.
read -r -a argv <<< "$args"
for i in "${!argv[@]}"; do
  [ "${argv[$i]}" != --listen ] || argv[i+1]=127.0.0.1:0
done
RAILWIRE_TRANSPORT=tcp "$cli" serve "${argv[@]}" > "$work/out" 2> "$work/err" &
pid=$!
for _ in $(seq 100); do
  grep -q '^listening on ' "$work/out" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
grep -q '^listening on ' "$work/out" || fail "serve with the example's arguments did not start:
$(cat "$work/err")"
kill -TERM "$pid"
rc=0
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "serve still runs 10 s after SIGTERM"
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "serve exited $rc after SIGTERM (want 0: Restart=on-failure would restart it)"
echo "example args: $(head -n 1 "$work/out"); SIGTERM -> exit 0"
rc=0
"$cli" serve --dialect rw --listen 127.0.0.1:0 --no-such-option >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a usage error exited $rc (want 2, which RestartPreventExitStatus names)"
echo "systemd_test: ok"
