#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The man pages against the binary and the sources.

* every option `railwire [COMMAND] --help` prints appears in its built man
  page (and the check itself is shown to catch a missing option);
* each page is named and sectioned right, and groff reads it without warnings;
* railwire(7) describes every RAILWIRE_* variable that src/ or tools/ read
  with getenv() or rw_env_uint(), and every one `railwire --help` names.

usage: man_test.py --cli BIN --mandir BUILD/man --src SOURCE_DIR"""
import argparse
import pathlib
import re
import shutil
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--cli", required=True)
ap.add_argument("--mandir", required=True, type=pathlib.Path)
ap.add_argument("--src", required=True, type=pathlib.Path)
args = ap.parse_args()
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


# An option is a token that starts with - or -- after a non-word character
# ("-s,", "[--hex]", "`railwire bench --read"), never inside a word (ro-server).
OPT = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def help_options(sub):
    cmd = [args.cli] + ([sub] if sub else []) + ["--help"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, f"{' '.join(cmd)} exited {r.returncode}")
    return set(OPT.findall(r.stdout))


def man_text(path):
    """The page's text with roff escapes removed (no rendering: rendering
    hyphenates and reflows, which would split options)."""
    src = path.read_text()
    text = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", src)
    for esc, plain in (("\\-", "-"), ("\\,", ""), ("\\/", ""), ("\\&", ""), ("\\(aq", "'")):
        text = text.replace(esc, plain)
    return src, text


def missing(options, text):
    found = set(OPT.findall(text))
    return sorted(o for o in options if o not in found)


pages = {"railwire": "", "railwire-serve": "serve", "railwire-bench": "bench",
         "railwire-decode": "decode", "railwire-devices": "devices"}
opts = {}
for page, sub in pages.items():
    path = args.mandir / "man1" / f"{page}.1"
    if not path.exists():
        check(False, f"{path} was not built (is help2man installed?)")
        continue
    opts[page] = help_options(sub)
    src, text = man_text(path)
    check(len(opts[page]) >= 2, f"{page}: only {sorted(opts[page])} found in --help")
    gone = missing(opts[page], text)
    check(not gone, f"{page}(1) lacks options that `railwire {sub} --help` prints: {gone}")
    check(re.search(rf'^\.TH {re.escape(page.upper())} "1" ', src, re.M) is not None,
          f"{page}(1): wrong .TH line")
    name = "(?:" + re.escape(page) + "|" + re.escape(page.replace("-", "\\-")) + ")"
    check(re.search(r"^\.SH NAME\n" + name + r" \\- \S", src, re.M) is not None,
          f"{page}(1): no NAME line")
    check(".SH SYNOPSIS" in src and ".SH \"SEE ALSO\"" in src, f"{page}(1): SYNOPSIS or SEE ALSO missing")
    if not gone:
        print(f"{page}(1): {len(opts[page])} options, all present")

# The check is not vacuous: serve's options are not all in the bench page.
if "railwire-serve" in opts and (args.mandir / "man1/railwire-bench.1").exists():
    _, bench_text = man_text(args.mandir / "man1/railwire-bench.1")
    check("--arena" in missing(opts["railwire-serve"], bench_text),
          "the option check did not notice serve's --arena missing from railwire-bench(1)")
# Every subcommand page shows its full usage, all lines of it.
if (args.mandir / "man1/railwire-serve.1").exists():
    _, serve_text = man_text(args.mandir / "man1/railwire-serve.1")
    syn = serve_text.split(".SH SYNOPSIS", 1)[-1].split(".SH", 1)[0]
    check("--arena SIZE" in syn and "--layer FILE" in syn,
          "railwire-serve(1): SYNOPSIS lacks one of the two usage lines")

# railwire(7) and the environment the sources read.
page7 = args.mandir / "man7" / "railwire.7"
src7, text7 = man_text(page7)
env_sec = text7.split(".SH ENVIRONMENT", 1)[-1].split("\n.SH ", 1)[0]
documented = set(re.findall(r"^\.BR (RAILWIRE_[A-Z0-9_]+)", env_sec, re.M))
read = set()
for d in ("src", "tools"):
    for f in (args.src / d).rglob("*.c"):
        read |= set(re.findall(r'(?:getenv|rw_env_\w+)\(\s*"(RAILWIRE_[A-Z0-9_]+)"', f.read_text()))
check(len(read) >= 8, f"only {sorted(read)} found read in the sources")
check(not (read - documented), f"railwire(7) does not describe {sorted(read - documented)}")
r = subprocess.run([args.cli, "--help"], capture_output=True, text=True, timeout=30)
named = set(re.findall(r"RAILWIRE_[A-Z0-9_]+", r.stdout))
check(not (named - documented), f"`railwire --help` names {sorted(named - documented)}, "
      "which railwire(7) does not describe")
check(not (documented - read), f"railwire(7) describes {sorted(documented - read)}, "
      "which nothing reads")
print(f"railwire(7): {len(documented)} variables, the sources read {len(read)}")

groff = shutil.which("groff")
if groff:
    for page in sorted(args.mandir.glob("man[17]/*.[17]")):
        r = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", str(page)],
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 0 and not r.stderr.strip(), f"groff warns on {page.name}: {r.stderr}")
else:
    check(False, "groff not found (apt-get install groff-base): the pages were not rendered")

print("man_test:", "FAILED" if failures else "ok")
sys.exit(1 if failures else 0)
