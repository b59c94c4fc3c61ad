#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""RAILWIRE_LOG_FORMAT end to end: every line of the JSON format parses with
json.loads and carries what the message said; the default text format is
byte-for-byte the historical one; an unknown value warns and falls back.

usage: log_format_test.py --emit PATH_TO_log_emit"""
import argparse
import json
import os
import subprocess
import sys

p = argparse.ArgumentParser()
p.add_argument("--emit", required=True)
emit = p.parse_args().emit
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(fmt, *args):
    env = dict(os.environ, RAILWIRE_LOG="debug")
    env.pop("RAILWIRE_LOG_FORMAT", None)
    if fmt is not None:
        env["RAILWIRE_LOG_FORMAT"] = fmt
    r = subprocess.run([emit, *args], env=env, capture_output=True, timeout=30)
    check(r.returncode == 0, f"log_emit exited {r.returncode}")
    return r


warn_msg = "server: client 10.0.0.9:41234: rail 3 said \"no\" \\ tab\there\nnewline"

# 1. JSON: one object per line, fields and exact message text.
r = run("json")
lines = r.stderr.split(b"\n")
check(lines[-1] == b"", "stderr does not end with a newline")
objs = []
for raw in lines[:-1]:
    try:
        objs.append(json.loads(raw.decode("utf-8")))  # strict: must be UTF-8
    except (ValueError, UnicodeDecodeError) as e:
        check(False, f"not a JSON line ({e}): {raw!r}")
# 4 plain lines + RW_LOG_RL_BURST (5) from the storm of 15.
check(len(objs) == 9, f"{len(objs)} JSON lines, want 9")
for o in objs:
    check(isinstance(o, dict) and {"time", "level", "message"} <= o.keys(), f"fields missing: {o}")
    check(o["time"].endswith("Z") and len(o["time"]) == 24, f"time {o['time']!r}")
if len(objs) == 9:
    check([o["level"] for o in objs[:4]] == ["error", "warn", "info", "debug"], "levels")
    check(objs[0]["message"] == "plain" and "component" not in objs[0], f"line 1 {objs[0]}")
    w = objs[1]
    check(w["message"] == warn_msg, f"message not kept exactly: {w['message']!r}")
    check(w.get("component") == "server" and w.get("peer") == "10.0.0.9:41234"
          and w.get("rail") == 3, f"fields of line 2: {w}")
    check(objs[2]["message"].startswith("ctl \x01\x1f del \x7f utf8 \u00e9 bad \ufffd\ufffd\ufffd end"),
          f"line 3: {objs[2]['message']!r}")
    storm = objs[4:]
    check(all(o.get("peer", "").startswith("127.0.0.2:") for o in storm), "storm peers")

# 2. Truncated lines are still whole JSON objects, within their buffer.
r = run("json", "cut")
cut = r.stdout.split(b"\n")[:-1]
check(len(cut) > 10, f"only {len(cut)} cut lines")
for raw in cut:
    try:
        o = json.loads(raw.decode("utf-8"))
        check(o.get("truncated") is True, f"cut line without truncated: {raw[:80]!r}")
    except (ValueError, UnicodeDecodeError) as e:
        check(False, f"cut line is not JSON ({e}): {raw!r}")
    check(len(raw) + 2 <= 256 + 64, f"cut line of {len(raw)} bytes")

# 3. Text, the default: unchanged, byte for byte.
want = (b"railwire error: plain\n"
        b"railwire warn: " + warn_msg.encode() + b"\n"
        b"railwire info: ctl \x01\x1f del \x7f utf8 \xc3\xa9 bad \xff\xc0\xaf end\n"
        b"railwire debug: debug line\n")
for fmt in (None, "text", ""):
    r = run(fmt)
    check(r.stderr.startswith(want), f"text format (RAILWIRE_LOG_FORMAT={fmt!r}) changed: "
          f"{r.stderr[:200]!r}")
    n = r.stderr.count(b"\n")
    check(n == 10, f"text: {n} newlines, want 10 (9 lines, one with a newline inside)")

# 4. An unknown value: one warning naming it, then text.
r = run("yaml")
first, _, rest = r.stderr.partition(b"\n")
check(first == b"railwire warn: RAILWIRE_LOG_FORMAT='yaml' is not text or json; using text",
      f"no warning for a bad value: {first!r}")
check(rest.startswith(want), "bad value: not the text format")

print("log_format_test:", "FAILED" if failures else "ok")
sys.exit(1 if failures else 0)
