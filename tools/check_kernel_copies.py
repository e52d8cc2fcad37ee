#!/usr/bin/env python3
"""Lists the header functions that the AVX2/AVX-512 kernel copies call out of line.

    tools/check_kernel_copies.py BUILD_TEMP   (the objects folder: tmp/ beside dev_build.sh's lib/)

An inline function of a shared header (kernels/, core/) that a wide copy of csrc/ops/cpu/ does
not inline is emitted in several objects, and the linker keeps the default copy's code (setup.py
links it first, so that no AVX code can run on a CPU without AVX). That is safe but slow where the
call sits in a hot loop: the loop runs scalar, at the baseline's instruction set. This script
prints, per wide object, each such function and how often it is called, so that a hot one can be
marked EMBER_ALWAYS_INLINE (kernels/vexp.h). It needs binutils (nm, objdump).
"""

from __future__ import annotations

import collections
import glob
import os
import subprocess
import sys


def weak_symbols(obj: str) -> set[str]:
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[1:2] == ["W"]}


def demangle(names: list[str]) -> list[str]:
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    return out.stdout.splitlines()


def shared_calls(obj: str) -> collections.Counter:
    weak = weak_symbols(obj)
    dump = subprocess.run(["objdump", "-dr", obj], capture_output=True, text=True, check=True)
    calls: collections.Counter = collections.Counter()
    for line in dump.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] in ("R_X86_64_PLT32", "R_X86_64_PC32"):
            target = parts[2].split("-0x")[0].split("+0x")[0]
            if target in weak and target.startswith("_ZN5ember"):
                calls[target] += 1
    return calls


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    objs = sorted(glob.glob(os.path.join(sys.argv[1], "**", "ops", "cpu", "*.avx*.o"),
                            recursive=True))
    if not objs:
        print(f"no wide kernel objects (*.avx2.o, *.avx512.o) under {sys.argv[1]}", file=sys.stderr)
        return 2
    found = False
    for obj in objs:
        calls = shared_calls(obj)
        # The copy's own namespaces are its own code; everything else is shared.
        names = [n for n in calls if "cpu_avx" not in n]
        for name, pretty in sorted(zip(names, demangle(names)), key=lambda p: -calls[p[0]]):
            if "cpu_avx" in pretty:
                continue
            found = True
            print(f"{os.path.relpath(obj, sys.argv[1])}: {calls[name]:4d} x {pretty[:150]}")
    if not found:
        print("no out-of-line calls from the wide copies into shared header functions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
