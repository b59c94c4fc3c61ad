# SPDX-License-Identifier: MIT
"""The package installs two ways and works from there:
`cmake --install` of the build into a scratch prefix, and
`pip install --no-build-isolation` of a copy of the checkout (python/,
src/, include/ only: what a fresh clone has) into a scratch target.
ctest runs this in the release build only (RAILWIRE_BUILD_DIR set)."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

BUILD = os.environ.get("RAILWIRE_BUILD_DIR")
CMAKE = os.environ.get("RAILWIRE_CMAKE", "cmake")

SMOKE = """
import sys, numpy as np, railwire
assert railwire.__file__.startswith(sys.argv[1]), railwire.__file__
a = np.arange(1 << 16, dtype=np.uint32)
with railwire.Server("ro", layers=[a], transport="tcp") as s, \\
        railwire.connect(*s.address, rails=2, transport="tcp") as rs:
    b = np.zeros_like(a)
    rs.read(rs.register(b), 0, b.nbytes, 0)
    assert (a == b).all()
print("installed railwire works")
"""


def run_smoke(site):
    env = dict(os.environ, PYTHONPATH=site)
    p = subprocess.run([sys.executable, "-c", SMOKE, site], env=env, cwd="/",
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    assert p.returncode == 0, p.stdout.decode(errors="replace")
    assert b"installed railwire works" in p.stdout


@pytest.mark.skipif(not BUILD, reason="RAILWIRE_BUILD_DIR not set (ctest sets it)")
def test_cmake_install_into_a_prefix(tmp_path):
    prefix = tmp_path / "prefix"
    p = subprocess.run([CMAKE, "--install", BUILD, "--prefix", str(prefix)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    assert p.returncode == 0, p.stdout.decode(errors="replace")
    sites = [os.path.join(d, n) for d, dirs, _ in os.walk(prefix) for n in dirs
             if n in ("dist-packages", "site-packages")]
    assert len(sites) == 1, sites
    assert os.listdir(os.path.join(sites[0], "railwire"))
    run_smoke(sites[0])


def test_pip_install_from_a_fresh_copy(tmp_path):
    src = tmp_path / "railwire"
    for d in ("python", "src", "include"):
        shutil.copytree(os.path.join(ROOT, d), src / d,
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    shutil.copy(os.path.join(ROOT, "CMakeLists.txt"), src)
    target = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                        "--no-index", "--disable-pip-version-check", "--target", str(target),
                        str(src / "python")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    assert p.returncode == 0, p.stdout.decode(errors="replace")[-4000:]
    run_smoke(str(target))
