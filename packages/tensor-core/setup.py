"""Build of ember's C++ core (`ember._C`).

Every build is portable: the core is compiled for a baseline CPU (x86-64-v2 on x86-64), and the
kernels of csrc/ops/cpu/ once more for each wider instruction set (AVX2, AVX-512); the core picks
the best copy the CPU supports when it loads (csrc/runtime/cpu_capability.h, docs/architecture.md
"Build and CPU dispatch"). Objects are compiled in parallel into a fresh folder outside the
source tree, so no build ever reuses another's objects; ccache, when installed, makes recompiling
an unchanged file instant. Each file prints a line as it finishes (on the terminal too when pip
hides the build's output).

Environment knobs:
  EMBER_BUILD_JOBS=N        parallel compile jobs (default: the CPUs this process may use)
  EMBER_CPU_BASELINE=ARCH   -march of everything but the wider kernel copies (default x86-64-v2
                            when the compiler targets x86-64; the compiler's default elsewhere,
                            which on aarch64 is armv8-a, NEON included); `native` builds for this
                            machine only, without the wider copies
  EMBER_CPU_VARIANTS=LIST   the wider kernel copies on x86-64: "avx2,avx512" (default), "avx2", ""
  EMBER_VECTOR_LIBM=0       libm's functions as scalar calls, not glibc's vector forms
                            (csrc/kernels/vector_libm.h; used where a probe finds them)
  EMBER_CCACHE=0            compile without ccache even where it is installed
  EMBER_BUILD_PROGRESS=0    no per-file lines on the terminal (they still go to the build log)
  EMBER_SANITIZE=1          AddressSanitizer + UBSan, -O0 -g1 (the nox `sanitize` session)
  EMBER_DEBUG=1             -O0 -g
  EMBER_KEEP_SYMBOLS=1      a release build that keeps its symbol table (for perf's reports)

Cross-compiling (e.g. for aarch64 on x86-64) takes Python's own variables; the target
architecture is the compiler's, not this machine's:
  _PYTHON_SYSCONFIGDATA_NAME=_sysconfigdata__linux_aarch64-linux-gnu, with PYTHONPATH holding that
                            module (from the target Python's lib/python3.X/): it names the
                            compiler (aarch64-linux-gnu-gcc/g++) and the extension's file suffix
  _PYTHON_HOST_PLATFORM=linux-aarch64
  CPPFLAGS="-I<target>/usr/include/python3.X -I<target>/usr/include"  the target Python's headers
tools/cross_aarch64.py does all of it (the nox session tests-emulated-aarch64).
"""

from __future__ import annotations

import atexit
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from glob import glob
from typing import NamedTuple

import pybind11
from setuptools import Extension, setup
from setuptools.command.build import build
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

try:
    from setuptools.errors import CompileError
except ImportError:  # setuptools < 59
    from distutils.errors import CompileError

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = os.path.join(HERE, "csrc")
KERNEL_DIR = os.path.join("csrc", "ops", "cpu")  # compiled once per CPU capability
# The pybind11 bindings are compiled with -O1: a third less compile time than -O2/-O3 (most of it
# is pybind11's templates, again in every file), for about 4% more per-op overhead (a + b on 4
# floats: 0.80 -> 0.83 us). They hold no loop over elements.
BINDINGS_DIR = os.path.join("csrc", "python") + os.sep
# The CUDA elementwise kernels are compiled at run time (NVRTC) from the same op table and scalar
# math as the CPU kernels: these headers go into the core as text (csrc/cuda/elementwise_source.cpp
# includes the generated ember_device_sources.inc), name -> path.
DEVICE_SOURCES = {"kMathHeader": "csrc/kernels/math.h",
                  "kSpecialMathHeader": "csrc/kernels/special_math.h",
                  "kOpTableHeader": "csrc/ops/op_table.h"}
DEVICE_SOURCES_USER = os.path.join("csrc", "cuda", "elementwise_source.cpp")

# The wider kernel copies: name -> (-march level, its feature flags for compilers without the
# level names). "default" is the baseline copy, compiled with the rest of the core.
X86_LEVELS = {
    "x86-64-v2": ["-msse4.2", "-mpopcnt", "-mcx16", "-msahf"],
    "x86-64-v3": ["-msse4.2", "-mpopcnt", "-mcx16", "-msahf", "-mavx2", "-mfma", "-mbmi", "-mbmi2",
                  "-mf16c", "-mlzcnt", "-mmovbe", "-mxsave"],
    "x86-64-v4": ["-msse4.2", "-mpopcnt", "-mcx16", "-msahf", "-mavx2", "-mfma", "-mbmi", "-mbmi2",
                  "-mf16c", "-mlzcnt", "-mmovbe", "-mxsave", "-mavx512f", "-mavx512bw",
                  "-mavx512cd", "-mavx512dq", "-mavx512vl"],
}
VARIANTS = {"avx2": ("x86-64-v3", 1), "avx512": ("x86-64-v4", 2)}  # name -> (level, rank)
LEVEL_ORDER = list(X86_LEVELS)

COMMON_FLAGS = [
    "-std=c++17",
    "-fvisibility=hidden",
    "-g0",
    "-Wall",
    "-Wno-sign-compare",
    "-Wno-maybe-uninitialized",  # false positives through the inlined kernel templates
    "-Wno-bool-compare",
    "-fno-math-errno",  # lets std::sqrt and friends vectorise; errno is never read
    "-fno-trapping-math",  # lets float loops with fmin/fmax vectorise (PyTorch builds so too)
]


def env_flag(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


# ------------------------------------------------------------------------------------------------
# Progress: one line per finished file, on stderr (the build log; `pip install -v` shows it) and,
# when stderr is not a terminal (pip captures it), on the terminal the build was started from.

_tty = None


def _terminal():
    global _tty
    if _tty is None:
        _tty = False
        if env_flag("EMBER_BUILD_PROGRESS", "1") != "0" and not sys.stderr.isatty():
            try:
                _tty = open("/dev/tty", "w")  # noqa: SIM115  (kept for the whole build)
            except OSError:
                _tty = False
    return _tty


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
    tty = _terminal()
    if tty:
        try:
            tty.write(line + "\n")
            tty.flush()
        except OSError:
            pass


# ------------------------------------------------------------------------------------------------
# A check that keeps the wide copies from running anything before the CPU is known.


def elf_section_names(path: str) -> list[str]:
    """Section names of an ELF64 little-endian object file ([] for anything else)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    str_off = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)[0]
    names = []
    for i in range(shnum):
        name_off = struct.unpack_from("<I", data, shoff + i * shentsize)[0]
        end = data.index(b"\0", str_off + name_off)
        names.append(data[str_off + name_off : end].decode())
    return names


def check_no_static_init(obj: str, source: str) -> None:
    """A wider copy must not have static constructors: they run when the library loads, on CPUs
    that cannot execute the copy's instructions."""
    bad = [n for n in elf_section_names(obj) if n.startswith((".init_array", ".ctors"))]
    if bad:
        raise CompileError(
            f"{source}: a kernel file has static initialisation ({', '.join(bad)}); it would run "
            "AVX code on every CPU when ember loads. Move the static object out of csrc/ops/cpu/."
        )


# ------------------------------------------------------------------------------------------------


def write_device_sources(folder: str) -> None:
    """Writes DEVICE_SOURCES as C++ raw string literals into folder/ember_device_sources.inc."""
    parts = ["// Generated by setup.py from the headers named below; do not edit.\n"]
    for name, rel in DEVICE_SOURCES.items():
        with open(os.path.join(HERE, rel)) as f:
            text = f.read()
        if ')ember_src"' in text:
            raise CompileError(f"{rel} contains the raw-string delimiter )ember_src\"")
        parts.append(f'// {rel}\nconstexpr const char {name}[] = R"ember_src({text})ember_src";\n')
    content = "".join(parts)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "ember_device_sources.inc")
    if not os.path.exists(path) or open(path).read() != content:
        with open(path, "w") as f:
            f.write(content)


def compiler_accepts(cmd: list[str], flags: list[str],
                     code: str = "int main() { return 0; }") -> bool:
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "probe.cpp")
        with open(src, "w") as f:
            f.write(code + "\n")
        r = subprocess.run([*cmd, *flags, "-c", src, "-o", os.path.join(d, "probe.o")],
                           capture_output=True)
        return r.returncode == 0


def targets_x86_64(cmd: list[str]) -> bool:
    """Whether the compiler builds for x86-64 Linux: a cross compiler's target, not this machine."""
    return sys.platform.startswith("linux") and compiler_accepts(
        cmd, [], "#ifndef __x86_64__\n#error not x86-64\n#endif")


def vector_libm_links(cmd: list[str], target: list[str]) -> bool:
    """Whether glibc's vector math library has every variant csrc/kernels/vector_libm.h lets the
    kernels call (GCC on x86-64 Linux, glibc >= 2.35): a probe that references them all links."""
    if env_flag("EMBER_VECTOR_LIBM", "1") == "0" or not targets_x86_64(cmd):
        return False
    with open(os.path.join(CSRC, "kernels", "vector_libm.h")) as f:
        header = f.read()
    # X(name): one argument ("v" in the vector ABI's names), X2(name): two ("vv")
    names = [(n, "v") for n in re.findall(r"\bX\((\w+)\)", header)]
    names += [(n, "vv") for n in re.findall(r"\bX2\((\w+)\)", header)]
    # b: SSE4 (2 doubles, 4 floats), d: AVX2 (4, 8), e: AVX-512 (8, 16)
    symbols = [f"_ZGV{isa}N{lanes * (2 if single else 1)}{args}_{name}{'f' if single else ''}"
               for name, args in names for single in (False, True)
               for isa, lanes in (("b", 2), ("d", 4), ("e", 8))]
    code = ('extern "C" {\n' + "".join(f"void {s}();\n" for s in symbols) + "}\n"
            "void (*volatile kept[])() = {" + ", ".join(symbols) + "};\n"
            "int main() { return kept[0] == 0; }")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "probe.cpp")
        with open(src, "w") as f:
            f.write(code)
        r = subprocess.run([*cmd, *target, src, "-o", os.path.join(d, "probe"), "-lm"],
                           capture_output=True)
        return r.returncode == 0


def fresh_build_dir() -> str:
    path = tempfile.mkdtemp(prefix="ember-build-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


class Unit(NamedTuple):
    source: str  # relative to the package
    obj: str
    flags: list[str]
    label: str
    rank: int  # 0: the core or the default kernel copy; else a wider copy


class BuildOutOfTree(build):
    """Builds in a fresh temporary folder unless --build-base is given: setuptools' default
    `build/` in the source tree would hand stale objects and files to the next build."""

    def finalize_options(self):
        if self.build_base == "build":  # the default (a relative path in the source tree)
            self.build_base = fresh_build_dir()
        super().finalize_options()


class BuildCore(build_ext):
    """Compiles the core's objects itself (parallel, longest first, one progress line each,
    ccache, the kernel copies) and links them with setuptools."""

    def build_extension(self, ext: Extension) -> None:
        started = time.monotonic()
        cc = self.compiler_command()
        base, copies = self.target_flags(cc)
        mode = self.mode_flags()
        macros = [f"-D{k}={v}" for k, v in self.copy_macros(copies)]
        if vector_libm_links(cc, base):
            macros.append("-DEMBER_VECTOR_LIBM=1")
        includes = [f"-I{d}" for d in (*ext.include_dirs, *self.compiler.include_dirs)]
        jobs = self.job_count()
        generated = os.path.abspath(os.path.join(self.build_temp, "generated"))
        write_device_sources(generated)
        self.generated_include = f"-I{generated}"

        # The core and the default kernel copy first, the wider copies last in the link
        # (csrc/ops/cpu/kernel.h says why).
        units = []
        for src in ext.sources:
            rel = os.path.relpath(src, HERE) if os.path.isabs(src) else os.path.normpath(src)
            stem = os.path.join(self.build_temp, os.path.splitext(rel)[0])
            is_kernel = os.path.dirname(rel) == KERNEL_DIR
            flags = ["-DEMBER_CPU_NS=cpu_default", "-DEMBER_CPU_LEVEL=0"] if is_kernel else []
            units.append(Unit(rel, stem + ".o", [*base, *flags, *self.file_flags(rel)], rel, 0))
        for name, (level_flags, rank) in copies.items():
            for src in ext.sources:
                rel = os.path.relpath(src, HERE) if os.path.isabs(src) else os.path.normpath(src)
                if os.path.dirname(rel) == KERNEL_DIR:
                    stem = os.path.join(self.build_temp, os.path.splitext(rel)[0])
                    flags = [*level_flags, f"-DEMBER_CPU_NS=cpu_{name}",
                             f"-DEMBER_CPU_LEVEL={rank}"]
                    units.append(Unit(rel, f"{stem}.{name}.o", flags, f"{rel} ({name})", rank))

        uses_ccache = os.path.basename(cc[0]) == "ccache"
        progress(
            f"ember._C: compiling {len(units)} files on {jobs} job{'s' if jobs > 1 else ''}"
            f"{' with ccache' if uses_ccache else ''}; kernel copies: "
            f"{', '.join(['default', *copies]) or 'default'}"
        )
        env = dict(os.environ)
        if uses_ccache:
            # Paths relative to the package, so other checkouts share the cache.
            env.setdefault("CCACHE_BASEDIR", HERE)
            env.setdefault("CCACHE_NOHASHDIR", "1")

        def compile_one(unit: Unit):
            os.makedirs(os.path.dirname(unit.obj), exist_ok=True)
            cmd = [*cc, *includes, *macros, *COMMON_FLAGS, *mode, *unit.flags,
                   *ext.extra_compile_args, "-c", unit.source, "-o", unit.obj]
            t0 = time.monotonic()
            r = subprocess.run(cmd, cwd=HERE, env=env, capture_output=True, text=True)
            return unit, r, time.monotonic() - t0, cmd

        # Longest first (the kernel files, then the larger files), so no long file starts last.
        def weight(unit: Unit) -> int:
            size = source_bytes(unit.source)
            return size * (4 if os.path.dirname(unit.source) == KERNEL_DIR else 1)

        failed = []
        width = len(str(len(units)))
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(compile_one, u) for u in sorted(units, key=weight, reverse=True)]
            for done, future in enumerate(as_completed(futures), 1):
                unit, r, secs, cmd = future.result()
                progress(f"  [{done:{width}d}/{len(units)}] {secs:5.1f} s  {unit.label}")
                if r.stdout or r.stderr:
                    print(r.stdout + r.stderr, file=sys.stderr, flush=True)
                if r.returncode != 0:
                    failed.append((unit.label, shlex.join(cmd)))
        if failed:
            for label, cmd in failed:
                progress(f"failed: {label}\n  {cmd}")
            raise CompileError(f"{len(failed)} file(s) of ember._C failed to compile (above)")
        # (A sanitizer build adds its own module constructors to every object: they run no
        # kernel code, and such a build is for this machine only.)
        for unit in units:
            if unit.rank > 0 and not env_flag("EMBER_SANITIZE"):
                check_no_static_init(unit.obj, unit.source)

        ext_path = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(ext_path) or ".", exist_ok=True)
        self.compiler.link_shared_object(
            [u.obj for u in units],
            ext_path,
            libraries=self.get_libraries(ext),
            library_dirs=ext.library_dirs,
            extra_postargs=[*self.link_flags(), *ext.extra_link_args],
            target_lang="c++",
        )
        progress(f"ember._C: built in {time.monotonic() - started:.0f} s")

    # -- pieces ----------------------------------------------------------------------------------

    def compiler_command(self) -> list[str]:
        cmd = list(getattr(self.compiler, "compiler_so_cxx", None) or self.compiler.compiler_so)
        # Python's own CFLAGS bring -g and -O3; ours come later on the line and win.
        if (
            env_flag("EMBER_CCACHE", "1") != "0"
            and os.path.basename(cmd[0]) != "ccache"
            and shutil.which("ccache")
        ):
            cmd.insert(0, "ccache")
        return cmd

    def target_flags(self, cc: list[str]) -> tuple[list[str], dict[str, tuple[list[str], int]]]:
        """-march flags of the core, and of each wider kernel copy (name -> (flags, rank))."""
        x86_64 = targets_x86_64(cc)
        # GCC's aarch64 note that std::pair<double, double> is passed as of GCC 10 concerns calls
        # from code built by older compilers: the core's functions are internal to it.
        quiet = [] if x86_64 else ["-Wno-psabi"]
        march = env_flag("EMBER_CPU_BASELINE", "x86-64-v2" if x86_64 else "")
        if not march:
            return quiet, {}

        def level(name: str) -> list[str]:
            if name in X86_LEVELS and not compiler_accepts(cc, [f"-march={name}"]):
                return X86_LEVELS[name]  # a compiler older than the level names
            return [f"-march={name}"]

        base = [*quiet, *level(march)]
        copies: dict[str, tuple[list[str], int]] = {}
        if x86_64 and march in X86_LEVELS:
            wanted = env_flag("EMBER_CPU_VARIANTS", "avx2,avx512")
            for name in filter(None, (w.strip() for w in wanted.split(","))):
                if name not in VARIANTS:
                    raise ValueError(f"EMBER_CPU_VARIANTS: unknown copy {name!r} (avx2, avx512)")
                lvl, rank = VARIANTS[name]
                if LEVEL_ORDER.index(lvl) > LEVEL_ORDER.index(march):  # only above the baseline
                    copies[name] = (level(lvl), rank)
        return base, copies

    def copy_macros(self, copies) -> list[tuple[str, str]]:
        return [(f"EMBER_CPU_HAVE_{name.upper()}", "1") for name in copies]

    def mode_flags(self) -> list[str]:
        if env_flag("EMBER_SANITIZE"):
            # -O0 -g1: a quarter of the compile time of -O1 -g, with line numbers in the reports;
            # the sanitizer session runs a chosen subset of the tests, so the slower code costs
            # less than the compile time saved.
            return ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g1", "-O0"]
        if env_flag("EMBER_DEBUG"):
            return ["-O0", "-g"]
        return ["-O3"]

    def file_flags(self, rel: str) -> list[str]:
        """Flags of one file of the core (after mode_flags, so they win)."""
        release = not (env_flag("EMBER_SANITIZE") or env_flag("EMBER_DEBUG"))
        flags = ["-O1"] if release and rel.startswith(BINDINGS_DIR) else []
        if rel == DEVICE_SOURCES_USER:  # only this file: the folder's path would miss ccache
            flags.append(self.generated_include)
        return flags

    def link_flags(self) -> list[str]:
        exports = [f"-Wl,--version-script={os.path.join(CSRC, 'exports.map')}"]
        if env_flag("EMBER_SANITIZE"):
            return [*exports, "-fsanitize=address,undefined"]
        if env_flag("EMBER_DEBUG"):
            return exports
        if env_flag("EMBER_KEEP_SYMBOLS"):
            return exports
        return [*exports, "-s"]  # no symbol table in release builds: ~1.5 MB of the extension

    def job_count(self) -> int:
        if env_flag("EMBER_BUILD_JOBS"):
            return max(1, int(env_flag("EMBER_BUILD_JOBS")))
        if self.parallel and self.parallel is not True:
            return max(1, int(self.parallel))
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:
            return os.cpu_count() or 2


def unity_members() -> set[str]:
    """The binding files that csrc/python/unity_*.cpp include (compiled through those units, not
    on their own: see the units' header comment); each file of csrc/python/ must be in one."""
    members: dict[str, str] = {}
    folder = os.path.join(CSRC, "python")
    for unit in sorted(glob(os.path.join(folder, "unity_*.cpp"))):
        with open(unit, encoding="utf-8") as f:
            for line in f:
                if line.startswith('#include "python/') and line.rstrip().endswith('.cpp"'):
                    name = line.split('"')[1].split("/", 1)[1]
                    if name in members:
                        raise SystemExit(f"csrc/python/{name} is in both {members[name]} and "
                                         f"{os.path.basename(unit)}")
                    members[name] = os.path.basename(unit)
    loose = [os.path.basename(p) for p in glob(os.path.join(folder, "*.cpp"))
             if not os.path.basename(p).startswith("unity_") and os.path.basename(p) not in members]
    if loose:
        raise SystemExit(f"csrc/python/{', '.join(sorted(loose))}: not in a unity_*.cpp list; add "
                         "each to one (csrc/python/unity_ops.cpp says why)")
    return {os.path.join("csrc", "python", name) for name in members}


_in_unity = unity_members()


def source_bytes(rel: str) -> int:
    """A source file's size, a unity unit's being its members' (the build's scheduling weight)."""
    if os.path.basename(rel).startswith("unity_"):
        with open(os.path.join(HERE, rel), encoding="utf-8") as f:
            return sum(os.path.getsize(os.path.join(CSRC, line.split('"')[1]))
                       for line in f if line.startswith('#include "python/'))
    return os.path.getsize(os.path.join(HERE, rel))
sources = sorted(
    rel
    for rel in (os.path.relpath(p, HERE)
                for p in glob(os.path.join(CSRC, "**", "*.cpp"), recursive=True))
    if os.sep + "tests" + os.sep not in rel and rel not in _in_unity
)

# The public headers of compiled extensions (installed as package data, ember/include/ember/):
# the core includes the C table it hands them (ember/extension_abi.h) from there.
PUBLIC_INCLUDE = os.path.join(HERE, "ember", "include")

ext = Extension(
    "ember._C",
    sources,
    include_dirs=[CSRC, PUBLIC_INCLUDE, pybind11.get_include()],
    libraries=["dl"],
    language="c++",
)

# The scalar math and the op table, installed as ember/include/ember/<path>: ember.compile's
# generated kernels include them, so that a fused kernel computes the eager kernels' formulas.
KERNEL_HEADERS = ["kernels/math.h", "kernels/vexp.h", "kernels/special_math.h",
                  "kernels/vector_libm.h", "ops/op_table.h"]


class BuildPyWithHeaders(build_py):
    def run(self):
        super().run()
        for rel in KERNEL_HEADERS:
            dest = os.path.join(self.build_lib, "ember", "include", "ember", rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(os.path.join(CSRC, rel), dest)


setup(ext_modules=[ext], cmdclass={"build": BuildOutOfTree, "build_ext": BuildCore,
                                   "build_py": BuildPyWithHeaders})
