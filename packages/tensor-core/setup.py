"""Build of ember's C++ core (`ember._C`).

Environment knobs:
  EMBER_SANITIZE=1        build with AddressSanitizer + UBSan (the nox `sanitize` session)
  EMBER_CPU_BASELINE=...  -march value (default: native, since ember builds from source on the
                          machine that runs it; use e.g. x86-64-v2 to build a portable wheel)
  EMBER_DEBUG=1           -O0 -g
"""

import os
import sys
from glob import glob

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension
from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
sources = sorted(
    os.path.relpath(p, HERE)
    for p in glob(os.path.join(HERE, "csrc", "**", "*.cpp"), recursive=True)
    if os.sep + "tests" + os.sep not in p
)

compile_args = [
    "-fvisibility=hidden",
    "-Wall",
    "-Wno-sign-compare",
    "-Wno-maybe-uninitialized",  # false positives through the inlined kernel templates
    "-Wno-bool-compare",
    "-fno-math-errno",  # lets std::sqrt and friends vectorise; errno is never read
    "-fno-trapping-math",  # lets float loops with fmin/fmax vectorise (PyTorch builds so too)
]
link_args = []
march = os.environ.get("EMBER_CPU_BASELINE", "native")
if march and sys.platform.startswith("linux"):
    compile_args.append(f"-march={march}")
if os.environ.get("EMBER_SANITIZE"):
    # -O0 -g1: a quarter of the compile time of -O1 -g (23 CPU-minutes for the core), with line
    # numbers in the reports; the sanitizer session runs a chosen subset of the tests, so the
    # slower code costs less than the compile time saved.
    flags = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g1", "-O0"]
    compile_args += flags
    link_args += ["-fsanitize=address,undefined"]
elif os.environ.get("EMBER_DEBUG"):
    compile_args += ["-O0", "-g"]
else:
    compile_args += ["-O3"]
    link_args += ["-s"]  # no symbol table in release builds: ~1.5 MB of the extension

ext = Pybind11Extension(
    "ember._C",
    sources,
    include_dirs=[os.path.join(HERE, "csrc")],
    cxx_std=17,
    extra_compile_args=compile_args,
    extra_link_args=link_args,
    libraries=["dl"],
)

# Compile translation units in parallel (the core has a few dozen).
ParallelCompile("EMBER_BUILD_JOBS", default=os.cpu_count() or 2).install()

setup(ext_modules=[ext])
