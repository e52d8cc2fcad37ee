#!/usr/bin/env python3
"""Cross-builds ember's core for aarch64 Linux and runs its tests there under qemu-user.

    tools/cross_aarch64.py --check            prints what is missing on this machine (nothing: ok)
    tools/cross_aarch64.py CACHE [PYTEST...]  set-up, build, tests (the nox session
                                              tests-emulated-aarch64; CACHE: a folder of its own)

On a Debian/Ubuntu x86-64 machine with the cross compiler (g++-aarch64-linux-gnu), qemu-user and
the arm64 architecture in dpkg (dpkg --add-architecture arm64 && apt-get update):
1. CACHE/sysroot: Debian's aarch64 CPython (apt-get download, dpkg -x: no root, nothing
   installed) and the test dependencies' aarch64 wheels from PyPI (NumPy, scipy-openblas32,
   pytest, ...) unpacked into its site-packages. Made once (again when WHEELS
   changes); delete CACHE to refresh it.
2. CACHE/lib: ember-tensor built by setup.py with Python's cross-compiling variables (setup.py's
   docstring), for the default (baseline) aarch64 target, armv8-a.
3. The tests of packages/tensor-core (with autograd, nn, data and mp from the source tree, as in
   a development checkout) under qemu-aarch64 emulating a Cortex-A72: an ARMv8.0-A core, NEON and
   nothing newer, so the build is shown to need no later extension. CACHE/bin/python starts
   the emulated interpreter and is its sys.executable, so the tests' child interpreters (and
   multiprocessing's) are emulated too.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "packages" / "tensor-core"
TRIPLET = "aarch64-linux-gnu"
QEMU_CPU = "cortex-a72"
# ember-tensor's dependencies (pybind11: the headers of compiled extensions), its tests', and
# setuptools for the tests that build extensions from a setup.py.
WHEELS = ["numpy", "scipy-openblas32", "pybind11", "pytest", "hypothesis", "mpmath", "setuptools"]
# Beyond what the interpreter's packages pull in: the C++ runtime of the extension.
EXTRA_DEBS = ["libstdc++6", "libgcc-s1"]
# Pure-Python packages the core's tests import when they are there, as a development checkout has.
SOURCE_PACKAGES = ["autograd", "nn", "data", "mp"]


def run(cmd: list[str], **kwargs) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kwargs).stdout


def missing() -> str:
    """What this machine lacks for the emulated aarch64 run, as a sentence ('' if nothing)."""
    tools = [f"{TRIPLET}-g++", "qemu-aarch64", "apt-get", "apt-cache", "dpkg"]
    absent = [t for t in tools if not shutil.which(t)]
    if absent:
        return (f"{', '.join(absent)} not found: the cross build needs Debian/Ubuntu's "
                "g++-aarch64-linux-gnu and qemu-user (apt-get install g++-aarch64-linux-gnu "
                "qemu-user)")
    if "arm64" not in run(["dpkg", "--print-foreign-architectures"]).split():
        return ("dpkg has no arm64 architecture, so apt cannot fetch the aarch64 Python: "
                "dpkg --add-architecture arm64 && apt-get update")
    return ""


def target_python() -> str:
    """The distribution's aarch64 python3 version ('3.11'), from the package python3-minimal."""
    out = run(["apt-cache", "depends", "python3-minimal:arm64"])
    found = re.search(r"python(3\.\d+)-minimal", out)
    if not found:
        raise SystemExit("apt knows no python3-minimal:arm64; run apt-get update")
    return found.group(1)


def debs(version: str) -> list[str]:
    """The aarch64 packages of the interpreter, its libraries and its headers."""
    roots = [f"python{version}-minimal:arm64", f"libpython{version}-stdlib:arm64",
             *(f"{p}:arm64" for p in EXTRA_DEBS)]
    out = run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
               "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", *roots])
    # Each package once, unindented, with its dependencies indented below it.
    names = {line for line in out.splitlines() if line.endswith(":arm64") and line[:1] != " "}
    # Package-management tools the libraries name as dependencies; the interpreter needs none.
    names = {n for n in names if not n.startswith(("dpkg", "tar", "install-info", "perl"))}
    # The headers alone (their dependencies would add the aarch64 C library's headers, which
    # the cross compiler has its own copy of).
    return sorted(names) + [f"libpython{version}-dev:arm64"]


def site_packages(sysroot: Path, version: str) -> Path:
    """Where Debian's interpreter finds the packages installed for it locally."""
    return sysroot / "usr" / "local" / "lib" / f"python{version}" / "dist-packages"


def make_sysroot(cache: Path) -> tuple[Path, str]:
    sysroot = cache / "sysroot"
    stamp = sysroot / ".ember-complete"  # the Python version, then the wheels it was made with
    if stamp.exists() and stamp.read_text().split()[1:] == WHEELS:
        return sysroot, stamp.read_text().split()[0]
    version = target_python()
    shutil.rmtree(sysroot, ignore_errors=True)
    for sub in ("debs", "wheels"):
        shutil.rmtree(cache / sub, ignore_errors=True)
        (cache / sub).mkdir(parents=True)
    print(f"aarch64 sysroot: Python {version} from apt, {', '.join(WHEELS)} from PyPI", flush=True)
    run(["apt-get", "download", *debs(version)], cwd=cache / "debs")
    for deb in sorted((cache / "debs").glob("*.deb")):
        run(["dpkg-deb", "-x", str(deb), str(sysroot)])
    run([sys.executable, "-m", "pip", "download", "-q", "-d", str(cache / "wheels"),
         "--only-binary=:all:", "--python-version", version, "--implementation", "cp",
         "--platform", "manylinux_2_28_aarch64", "--platform", "manylinux2014_aarch64", *WHEELS])
    # An empty dist-packages keeps the build machine's
    # (x86-64) one, which qemu would find through -L's fallback, off its path.
    site = site_packages(sysroot, version)
    site.mkdir(parents=True)
    (sysroot / "usr" / "lib" / "python3" / "dist-packages").mkdir(parents=True, exist_ok=True)
    for wheel in sorted((cache / "wheels").glob("*.whl")):
        with zipfile.ZipFile(wheel) as z:
            z.extractall(site)
    stamp.write_text(" ".join([version, *WHEELS]) + "\n")
    return sysroot, version


def build(cache: Path, sysroot: Path, version: str) -> Path:
    """ember-tensor for aarch64 into CACHE/lib (its Python files copied beside the extension)."""
    sysconfig_name = f"_sysconfigdata__linux_{TRIPLET}"
    lib = cache / "lib"
    shutil.rmtree(lib, ignore_errors=True)
    include = sysroot / "usr" / "include"
    # The target's sysconfig data alone on the path: the rest of its standard library must not
    # shadow the build machine's.
    data = cache / "sysconfig"
    data.mkdir(exist_ok=True)
    shutil.copy(sysroot / "usr" / "lib" / f"python{version}" / f"{sysconfig_name}.py", data)
    env = dict(os.environ,
               PYTHONPATH=str(data),
               _PYTHON_SYSCONFIGDATA_NAME=sysconfig_name,
               _PYTHON_HOST_PLATFORM="linux-aarch64",
               CPPFLAGS=f"-I{include / f'python{version}'} -I{include}",
               CCACHE_BASEDIR=str(ROOT), CCACHE_NOHASHDIR="1")
    started = time.monotonic()
    subprocess.run([sys.executable, "setup.py", "-q", "build", "--build-lib", str(lib),
                    "--build-temp", str(cache / "tmp")], cwd=CORE, env=env, check=True)
    print(f"aarch64 build: {time.monotonic() - started:.0f} s", flush=True)
    return lib


def interpreter(cache: Path, sysroot: Path, version: str) -> Path:
    """CACHE/bin/python: the emulated aarch64 interpreter, under its own name (sys.executable)."""
    wrapper = cache / "bin" / "python"
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    qemu = shutil.which("qemu-aarch64")
    target = sysroot / "usr" / "bin" / f"python{version}"
    wrapper.write_text(f'#!/bin/sh\nexec "{qemu}" -cpu {QEMU_CPU} -L "{sysroot}" -0 "$0" '
                       f'"{target}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def main(argv: list[str]) -> int:
    if argv[:1] == ["--check"]:
        print(missing())
        return 0
    if not argv or argv[0].startswith("-"):
        print(__doc__)
        return 2
    problem = missing()
    if problem:
        print(problem, file=sys.stderr)
        return 1
    cache = Path(argv[0]).resolve()
    sysroot, version = make_sysroot(cache)
    lib = build(cache, sysroot, version)
    python = interpreter(cache, sysroot, version)
    paths = [str(lib), *(str(ROOT / "packages" / p) for p in SOURCE_PACKAGES)]
    # The tests that compile extensions (ember.utils.cpp_extension) run the cross compiler: a
    # build-machine program started from the emulated one runs natively. It sees the build
    # machine's files, so the target's headers are named by their place in the sysroot.
    headers = [sysroot / "usr" / "include" / f"python{version}", sysroot / "usr" / "include",
               site_packages(sysroot, version) / "pybind11" / "include"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths),
               CXX=" ".join([f"{TRIPLET}-g++", *(f"-I{h}" for h in headers)]))
    env.pop("EMBER_TEST_EMULATOR", None)  # sys.executable is already the emulated interpreter
    check = ("import platform, ember; c = ember.backends.cpu.get_cpu_capability(); "
             "print(platform.machine(), 'kernels at', c); assert c == 'DEFAULT', c")
    subprocess.run([str(python), "-c", check], cwd=CORE, env=env, check=True)
    started = time.monotonic()
    # -P (Python 3.11+): the built package, not the source folder's ember/ (no _C in it), is the
    # one imported; -p no:cacheprovider: nothing is written into the source tree
    safe_path = ["-P"] if tuple(map(int, version.split("."))) >= (3, 11) else []
    r = subprocess.run([str(python), *safe_path, "-m", "pytest", "-p", "no:cacheprovider",
                        *argv[1:]], cwd=CORE, env=env)
    print(f"emulated aarch64 tests: {time.monotonic() - started:.0f} s", flush=True)
    return r.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
