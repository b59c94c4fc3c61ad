# SPDX-License-Identifier: MIT
"""setuptools build of the railwire package, from a railwire checkout:

    pip install --no-build-isolation ./python

compiles the extension together with the C library's own sources (../src,
../include), so no prior CMake build is needed and nothing is downloaded.
The verbs transport is included when pkg-config finds libibverbs
(libibverbs-dev); RAILWIRE_VERBS=0 leaves it out.  RAILWIRE_SOURCE_DIR
points at another checkout.  The CMake build (PYTHONPATH=build/python, or
cmake --install) builds the same package from the same sources.
"""
import glob
import os
import re
import subprocess
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.environ.get("RAILWIRE_SOURCE_DIR", os.path.dirname(HERE)))
if not os.path.isfile(os.path.join(ROOT, "include", "railwire.h")):
    sys.exit("railwire setup.py: the C sources are not at %s (include/railwire.h is missing); "
             "build from a railwire checkout (pip install ./python from its root) or set "
             "RAILWIRE_SOURCE_DIR" % ROOT)


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(railwire VERSION ([0-9.]+)", f.read())
    return m.group(1) if m else "0.0.0"


def have_verbs():
    if os.environ.get("RAILWIRE_VERBS", "1") == "0":
        return False
    try:
        return subprocess.run(["pkg-config", "--exists", "libibverbs"]).returncode == 0
    except OSError:
        return os.path.exists("/usr/include/infiniband/verbs.h")


def have_pkg(name, env):
    """True when pkg-config knows `name` and the RAILWIRE_<env> variable is not 0."""
    if os.environ.get("RAILWIRE_" + env, "1") == "0":
        return False
    try:
        return subprocess.run(["pkg-config", "--exists", name]).returncode == 0
    except OSError:
        return False


verbs = have_verbs()
tls = have_pkg("openssl >= 3", "TLS")
hwloc = have_pkg("hwloc", "HWLOC")
layers = ["common", "wire", "gpu", "tcp", "transport", "rail/session", "rail/metrics",
          "rail/client", "rail/server"] + (["verbs"] if verbs else []) + (["tls"] if tls else [])
sources = sorted(glob.glob(os.path.join(HERE, "src", "*.c")))
for layer in layers:
    sources += sorted(glob.glob(os.path.join(ROOT, "src", layer, "*.c")))

ext = Extension(
    "railwire._railwire",
    # setuptools wants paths relative to this directory ("../src/..." is fine)
    sources=[os.path.relpath(p, HERE) for p in sources],
    include_dirs=[os.path.join(ROOT, "include"), os.path.join(ROOT, "src"), os.path.join(HERE, "src")],
    define_macros=[("_GNU_SOURCE", None), ("RAILWIRE_HAVE_VERBS", "1" if verbs else "0"),
                   ("RAILWIRE_HAVE_TLS", "1" if tls else "0"),
                   ("RAILWIRE_HAVE_HWLOC", "1" if hwloc else "0")],
    extra_compile_args=["-std=c11", "-fvisibility=hidden", "-Wall", "-Wextra"],
    libraries=(["ibverbs"] if verbs else []) + (["ssl", "crypto"] if tls else [])
    + (["hwloc"] if hwloc else []) + ["dl", "pthread"],
)

setup(version=version(), packages=["railwire"], ext_modules=[ext])
