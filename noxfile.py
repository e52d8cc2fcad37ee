"""One session per job. `python3 -m nox --list` shows them; `python3 -m nox` runs `tests`.

A run builds each package's wheel once, the first time a session needs it (the core is compiled
once per run, whatever the sessions), and every session installs those wheels into a fresh
virtual environment: what is tested is what `pip install ./packages/<name>` gives a user.
"""

from __future__ import annotations

import atexit
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["tests"]

ROOT = Path(__file__).resolve().parent

# Package folder under packages/ -> the ember packages it declares as dependencies.
# Listed in dependency order: every package comes after the ones it depends on.
PACKAGES: dict[str, list[str]] = {
    "tensor-core": [],
    "autograd": ["tensor-core"],
    "data": ["tensor-core"],
    "mp": ["tensor-core"],
    "nn": ["tensor-core", "autograd"],
}
# mpmath: the arbitrary-precision oracle of the special functions' references
# (ember/testing/opdb.py)
TEST_DEPS = ["pytest", "hypothesis", "numpy", "mpmath"]
# Optional extras installed with a package wherever it is installed, so that their tests run:
# oneDNN's convolutions (onednn-cpu-gomp), SciPy's FFT, ember.distributed's mpi backend (mpi4py
# and the MPICH wheel).
EXTRAS = {"tensor-core": "[onednn,fft]", "mp": "[mpi]"}
# What the examples need (the README's main job): installed with ember-nn and ember-data so
# that the tests that run the examples on a few steps run rather than skip.
EXAMPLE_DEPS = ["scikit-learn", "matplotlib", "tqdm"]
# Folders of example programs with their own tests, run after the packages' tests wherever ember-nn
# and ember-data are installed: examples/programs/ (PyTorch-style training programs, each run a
# few steps and, with torch installed, compared with torch; no dependencies beyond TEST_DEPS).
EXAMPLE_TEST_FOLDERS = [ROOT / "examples" / "programs"]
TORCH = "torch==2.13.0"  # a peer for tests (optional) and benchmarks, never a dependency
DOCS = ["docs/architecture.md", "docs/user-guide.md"]


def present(name: str) -> bool:
    return (ROOT / "packages" / name / "pyproject.toml").is_file()


def present_packages() -> list[str]:
    return [name for name in PACKAGES if present(name)]


# What the wheels are built with: the build-system requirements of the packages' pyproject.toml
# (setuptools and pybind11 for the core, hatchling for the pure-Python packages).
BUILD_REQUIRES = ["setuptools>=68", "pybind11>=2.12", "wheel", "hatchling>=1.21"]
_wheels: dict[str, Path] = {}  # package folder name -> its wheel, built once per run


def wheels(session: nox.Session) -> dict[str, Path]:
    """Every present package's wheel, built by the first session that asks (in one pip call)."""
    if not _wheels:
        out = Path(tempfile.mkdtemp(prefix="ember-wheels-"))
        atexit.register(shutil.rmtree, out, ignore_errors=True)
        names = present_packages()
        session.log(f"building the wheels of {', '.join(names)} (once for this run)")
        # Built without isolation in one environment kept in .nox/ from run to run, whatever the
        # session: the compiler sees the same paths each time (relative to the checkout under
        # CCACHE_BASEDIR), so ccache, when installed, serves the files that did not change.
        python = build_environment(session)
        # -v: pip passes on the build's output, so the log shows the core's per-file progress.
        session.run(python, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(out), *(f"./packages/{name}" for name in names),
                    external=True, env={"CCACHE_BASEDIR": str(ROOT)})
        for name in names:
            dist = package_distribution(name).replace("-", "_")
            found = sorted(out.glob(f"{dist}-*.whl"))
            if len(found) != 1:
                session.error(f"expected one wheel of packages/{name} in {out}, found {found}")
            _wheels[name] = found[0]
    return _wheels


def build_environment(session: nox.Session) -> str:
    """The python of .nox/build-wheels (created the first time), with BUILD_REQUIRES."""
    env = ROOT / ".nox" / "build-wheels"
    python = env / "bin" / "python"
    if not python.exists():
        session.run("python", "-m", "venv", str(env))
    session.run(str(python), "-m", "pip", "install", "-q", *BUILD_REQUIRES, external=True)
    return str(python)


def package_distribution(name: str) -> str:
    for line in (ROOT / "packages" / name / "pyproject.toml").read_text().splitlines():
        if line.startswith("name ="):
            return line.split("=", 1)[1].strip().strip('"')
    raise ValueError(f"packages/{name}/pyproject.toml has no name")


def install(session: nox.Session, names: list[str], *extra: str, **kwargs) -> None:
    # One pip call with this run's wheels (and their extras), so that each package's ember
    # dependencies resolve to them and never to an index.
    built = wheels(session)
    session.install(*(f"{built[name]}{EXTRAS.get(name, '')}" for name in names), *extra,
                    **kwargs)


def test_deps() -> list[str]:
    return TEST_DEPS + ([TORCH] if os.environ.get("EMBER_TEST_TORCH") == "1" else [])


def run_tests(session: nox.Session, names: list[str], *args: str, **kwargs) -> None:
    """Run each package's tests/ from its own folder, so that its pytest configuration applies.

    Any non-zero pytest exit fails the session, 5 (no tests collected) included.
    """
    failed = []
    for name in names:
        folder = ROOT / "packages" / name
        if not (folder / "tests").is_dir():
            session.log(f"packages/{name} has no tests/ folder: skipped")
            continue
        with session.chdir(folder):
            try:
                session.run("pytest", "tests", *args, *session.posargs, **kwargs)
            except nox.command.CommandFailed:
                failed.append(name)
    if failed:
        # pytest's exit code 5 (no tests collected) is a failure too
        session.error(f"tests failed in {', '.join(failed)}")


@nox.session
def tests(session: nox.Session) -> None:
    """Every package present, installed together; each package's tests run in turn."""
    names = present_packages()
    if not names:
        session.error("no package under packages/ has a pyproject.toml")
    examples = EXAMPLE_DEPS if {"nn", "data"} <= set(names) else []
    install(session, names, *test_deps(), *examples)
    run_tests(session, names)
    for folder in EXAMPLE_TEST_FOLDERS if examples else []:
        if folder.is_dir():
            session.run("pytest", str(folder.relative_to(ROOT)), *session.posargs)


def package_tests(name: str) -> None:
    deps = PACKAGES[name]

    def session_fn(session: nox.Session) -> None:
        if not present(name):
            session.skip(f"packages/{name} does not exist yet")
        missing = [dep for dep in deps if not present(dep)]
        if missing:
            session.error(f"{name} depends on packages that are not there: {', '.join(missing)}")
        install(session, [*deps, name], *test_deps())
        run_tests(session, [name])

    session_fn.__doc__ = f"{name} alone, with only its declared deps: {', '.join(deps) or 'none'}."
    nox.session(name=f"tests-{name}")(session_fn)


for _name in PACKAGES:
    package_tests(_name)


# The array API standard's conformance suite (data-apis/array-api-tests) is not vendored: the
# session runs a checkout of it named by ARRAY_API_TESTS_DIR (with its array-api submodule, the
# spec), over ember.array_api, with the xfails file of the known gaps of the core.
ARRAY_API_XFAILS = ROOT / "packages" / "tensor-core" / "tests" / "array_api_xfails.txt"
# Defaults that `-- ARGS` can override (pytest keeps an option's last value): 20 examples a test
# (the suite's default is 100), and no Hypothesis deadline on shared machines.
ARRAY_API_ARGS = ["--max-examples", "20", "--disable-deadline"]


@nox.session(name="array_api_tests")
def array_api_tests(session: nox.Session) -> None:
    """The array API conformance suite over ember.array_api, where ARRAY_API_TESTS_DIR names a
    checkout of data-apis/array-api-tests (`git clone --recurse-submodules ...`); skipped without
    it. Not a default session. `-- ARGS` go to pytest (`-- --max-examples 200 -k fft`)."""
    location = os.environ.get("ARRAY_API_TESTS_DIR")
    if not location:
        session.skip("ARRAY_API_TESTS_DIR is not set: point it at a checkout of "
                     "https://github.com/data-apis/array-api-tests (with its submodules) to run "
                     "the array API conformance suite")
    suite = Path(location).expanduser().resolve()
    if not (suite / "array_api_tests").is_dir():
        session.error(f"ARRAY_API_TESTS_DIR={location}: no array_api_tests/ folder there")
    if not any((suite / "array-api").glob("src/array_api_stubs")):
        session.error(f"{suite}/array-api (the spec, a submodule of the suite) is empty: run "
                      "`git submodule update --init` there")
    # the suite's requirements (pytest, pytest-json-report, hypothesis, ndindex), and NumPy,
    # which ember.array_api's finfo/iinfo and ember.fft use
    install(session, ["tensor-core"], "-r", str(suite / "requirements.txt"), "numpy")
    with session.chdir(suite):
        session.run("pytest", "array_api_tests", "-p", "no:cacheprovider", "-rfEX",
                    "--xfails-file", str(ARRAY_API_XFAILS), *ARRAY_API_ARGS, *session.posargs,
                    env={"ARRAY_API_TESTS_MODULE": "ember.array_api"})


@nox.session
def bench(session: nox.Session) -> None:
    """Every benchmarks/bench_*.py in turn; `-- NAME...` runs only those whose name has NAME."""
    scripts = sorted((ROOT / "benchmarks").glob("bench_*.py"))
    if session.posargs:
        scripts = [s for s in scripts if any(arg in s.stem for arg in session.posargs)]
    if not scripts:
        session.skip("no benchmarks/bench_*.py to run")
    install(session, present_packages(), "numpy", TORCH)
    for script in scripts:
        session.run("python", str(script.relative_to(ROOT)))


@nox.session(name="api_coverage")
def api_coverage(session: nox.Session) -> None:
    """ember's coverage of torch's public names, per namespace (tools/api_coverage.py), over
    every present package: a table, then the first missing names of each namespace. torch's
    names come from the snapshot in tools/ (`-- --torch` installs torch and reads it instead);
    other arguments go to the tool (`-- --missing all --namespace Tensor`)."""
    args = [a for a in session.posargs if a != "--torch"]
    live = "--torch" in session.posargs
    install(session, present_packages(), *([TORCH] if live else []))
    session.run("python", "tools/api_coverage.py", *([] if live else ["--snapshot"]),
                *(args or ["--missing", "20"]))


@nox.session(name="fuzz-checkpoints")
def fuzz_checkpoints(session: nox.Session) -> None:
    """The crafted-checkpoint fuzzer's long form: 10,000 files through ember.load, each in a
    child process that may crash (`-- --files N --seed S` for other runs; the quick form is a
    test of tensor-core's suite)."""
    if not present("tensor-core"):
        session.skip("packages/tensor-core does not exist yet")
    install(session, ["tensor-core"], "numpy")
    with session.chdir(ROOT / "packages" / "tensor-core"):
        session.run("python", "tests/checkpoint_fuzz.py", *session.posargs)


@nox.session(name="tests-under-profiler")
def tests_under_profiler(session: nox.Session) -> None:
    """The core's tests with the profiler's switch on: every op goes through the profiler's
    hooks and `redispatch`, whose results and errors must be the direct path's."""
    install(session, present_packages(), *test_deps())
    run_tests(session, ["tensor-core"], env={"EMBER_TEST_UNDER_PROFILER": "1"})


@nox.session
def fuzz(session: nox.Session) -> None:
    """The op fuzzer's long form: 100,000 random calls over ember's API in worker processes
    (`-- --calls N --seed S`); compared with torch; fails on any crash or hang."""
    install(session, present_packages(), "numpy", TORCH)
    with session.chdir(ROOT / "packages" / "tensor-core"):
        args = session.posargs or ["--calls", "100000"]
        session.run("python", "tests/fuzz_ops.py", "--torch", *args)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the Python sources (configuration in ruff.toml)."""
    session.install("ruff")
    paths = ("packages", "benchmarks", "examples", "noxfile.py")
    targets = [p for p in paths if (ROOT / p).exists()]
    session.run("ruff", "check", *targets, *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """The README's examples: examples/demo.py and examples/train_digits.py (--quick).

    `nox -s demo -- full` trains the digits model fully; it runs when ember-nn and ember-data are
    present."""
    if not (ROOT / "examples" / "demo.py").is_file():
        session.skip("examples/demo.py does not exist yet")
    names = present_packages()
    digits = (ROOT / "examples" / "train_digits.py").is_file() and {"nn", "data"} <= set(names)
    install(session, names, *(EXAMPLE_DEPS if digits else []))
    session.run("python", "examples/demo.py")
    if digits:
        quick = [] if "full" in session.posargs else ["--quick"]
        session.run("python", "examples/train_digits.py", *quick)


@nox.session
def docs(session: nox.Session) -> None:
    """The docs exist, and the examples in docs/*.md and the package READMEs run (doctest)."""
    missing = [doc for doc in DOCS if not (ROOT / doc).is_file()]
    if missing:
        session.error(f"missing docs: {', '.join(missing)}")
    install(session, present_packages(), "pytest", "numpy")
    readmes = ["README.md"] + sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "packages").glob("*/README.md")
    )
    # Exit code 5: the files hold no examples yet, which is not a failure here.
    session.run(
        "pytest", "--doctest-glob=*.md", "docs", *readmes, *session.posargs, success_codes=[0, 5]
    )


def sanitizer_runtime(session: nox.Session, lib: str) -> str:
    cxx = shlex.split(os.environ.get("CXX", "g++"))
    out = subprocess.run([*cxx, f"-print-file-name={lib}"], capture_output=True, text=True)
    path = out.stdout.strip()
    if out.returncode != 0 or not os.path.isabs(path):
        session.error(f"{cxx[0]} does not ship {lib}; install its sanitizer runtime")
    return os.path.realpath(path)


# The tests the sanitizer session runs: those that drive the core's memory handling (views,
# strides, indexing, resizing, serialization, interop, threads, hostile input, the FFT kernel's
# hand-written indexing and the quick forms of both fuzzers). The whole suite under the
# sanitizers takes about 15 minutes on two cores, these about 3 (`nox -s sanitize -- all` runs
# everything).
SANITIZED_TESTS = [
    "test_hostile_input.py", "test_fuzz.py", "test_untrusted_checkpoints.py",
    "test_checkpoint_fuzz.py", "test_views_indexing.py", "test_indexing.py", "test_index_ops.py",
    "test_shape_ops.py", "test_resize.py", "test_out_resize.py", "test_serialization.py",
    "test_interop.py", "test_errors.py", "test_threads.py", "test_memory.py",
    "test_cuda_compiled_kernels.py", "test_fft_kernel.py",
]


@nox.session
def sanitize(session: nox.Session) -> None:
    """tensor-core built with ASan and UBSan (EMBER_SANITIZE=1): the C++ test programs, then the
    tests that drive its memory handling (`-- all`: every test not marked slow)."""
    if not present("tensor-core"):
        session.skip("packages/tensor-core does not exist yet")
    csrc = ROOT / "packages" / "tensor-core" / "csrc"
    # The C++ runtime's own test program (thread pool, fork, half types, RNG, BLAS) first.
    session.install("scipy-openblas32")
    blas = session.run(
        "python", "-c",
        "import scipy_openblas32, os; print(os.path.join(scipy_openblas32.get_lib_dir(), "
        "'libscipy_openblas.so'))",
        silent=True,
    ).strip()
    exe = Path(session.create_tmp()) / "test_runtime"
    session.run(
        os.environ.get("CXX", "g++"), "-std=c++17", "-O1", "-g",
        "-fsanitize=address,undefined", "-fno-omit-frame-pointer", f"-I{csrc}",
        str(csrc / "tests" / "test_runtime.cpp"),
        *(str(p) for p in sorted((csrc / "runtime").glob("*.cpp"))),
        "-o", str(exe), "-ldl", "-pthread", external=True,
    )
    session.run(str(exe), blas, external=True,
                env={"ASAN_OPTIONS": "detect_leaks=0", "UBSAN_OPTIONS": "halt_on_error=1"})
    # The CUDA caching allocator's bookkeeping over its host backend (no GPU needed).
    exe = Path(session.create_tmp()) / "test_cuda_allocator"
    session.run(
        os.environ.get("CXX", "g++"), "-std=c++17", "-O1", "-g",
        "-fsanitize=address,undefined", "-fno-omit-frame-pointer", f"-I{csrc}",
        str(csrc / "tests" / "test_cuda_allocator.cpp"),
        # the allocator, its backends and the CUDA state; the rest of cuda/ (device storages, the
        # compiled elementwise kernels) needs the core
        *(str(csrc / "cuda" / f"{name}.cpp") for name in (
            "caching_allocator", "cuda_context", "cudart_backend", "host_backend")),
        "-o", str(exe), "-ldl", "-pthread", external=True,
    )
    session.run(str(exe), external=True, env={"UBSAN_OPTIONS": "halt_on_error=1"})
    # Its own build of the core, not the run's wheel (other flags). setup.py builds out of the
    # source tree, so no object of another build can end up in it.
    session.install("./packages/tensor-core", *TEST_DEPS, env={"EMBER_SANITIZE": "1"})
    # Python itself is not instrumented, so the runtimes must be loaded first, ASan before UBSan.
    preload = " ".join(sanitizer_runtime(session, lib) for lib in ("libasan.so", "libubsan.so"))
    # --capture=sys: a sanitizer report is written to fd 2 just before the process dies, so
    # pytest must not be holding fd 2 in a capture file then.
    targets = ["tests"] if "all" in session.posargs else [f"tests/{t}" for t in SANITIZED_TESTS]
    with session.chdir(ROOT / "packages" / "tensor-core"):
        session.run(
            "pytest", *targets, "-m", "not slow", "--capture=sys",
            *(a for a in session.posargs if a != "all"),
            env={
                "LD_PRELOAD": preload,
                # max_allocation_size_mb: an absurd size the fuzzer asks for (mvlgamma's p =
                # 2**31 is a 16 GiB arange) fails as a MemoryError, as it does without ASan,
                # instead of ASan's shadow memory taking the machine's RAM and an OOM kill
                "ASAN_OPTIONS": "detect_leaks=0:allocator_may_return_null=1:"
                                "max_allocation_size_mb=4096",
                "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
            },
        )


CPU_LEVELS = ["default", "avx2", "avx512"]  # EMBER_CPU_CAPABILITY's values, lowest first


@nox.session(name="tests-cpu-levels")
def tests_cpu_levels(session: nox.Session) -> None:
    """tensor-core's tests at each CPU kernel level below this machine's best one.

    The `tests` session runs the best level; here EMBER_CPU_CAPABILITY forces each lower one
    (default is the x86-64-v2 baseline every build runs on)."""
    install(session, ["tensor-core"], *test_deps())
    best = session.run("python", "-c", "import ember; print(ember._C._best_cpu_capability())",
                       silent=True).strip().lower()
    lower = CPU_LEVELS[: CPU_LEVELS.index(best)]
    if not lower:
        session.skip(f"this CPU runs only the {best} kernels, which `tests` covers")
    for level in lower:
        session.log(f"EMBER_CPU_CAPABILITY={level}")
        # torch, where installed as a peer, runs its kernels at the same level
        run_tests(session, ["tensor-core"],
                  env={"EMBER_CPU_CAPABILITY": level, "ATEN_CPU_CAPABILITY": level})


# A CPU without AVX for qemu-user: Nehalem has x86-64-v2 (SSE4.2, POPCNT), the core's baseline.
EMULATED_CPU = "Nehalem-v2"
# Under emulation (about 10-40x slower) a subset that runs every kernel family of ops/cpu/ and
# the core's other compiled code: elementwise ops, reductions, softmax, nn kernels, indexing,
# sorting, random numbers, matrix products and copies.
EMULATED_TESTS = [
    "tests/test_ops_elementwise.py", "tests/test_add_alpha.py", "tests/test_reductions.py",
    "tests/test_softmax_backward.py", "tests/test_nn_kernels.py", "tests/test_rnn_kernels.py",
    "tests/test_index_ops.py", "tests/test_sorting.py", "tests/test_random.py",
    "tests/test_matmul.py", "tests/test_promotion.py", "tests/test_reduced_float_scalars.py",
    "tests/test_cpu_capability.py",
]


# Tests that qemu-user itself aborts on (an assertion in its plugin code, in a process forked
# after it ran threads), whatever the program, emulating x86-64 or aarch64: left out of `-- all`.
QEMU_ABORTS = [
    "--deselect=tests/test_threads_fork.py::test_fork_after_the_pool_ran",
    "--deselect=tests/test_threads_fork.py::test_fork_from_a_child_that_ran_the_pool",
]


@nox.session(name="tests-emulated-cpu")
def tests_emulated_cpu(session: nox.Session) -> None:
    """tensor-core's tests on an emulated x86-64-v2 CPU without AVX (qemu-user), from the wheel.

    The same wheel as every other session: its default kernels must run where AVX does not.
    `-- all` runs the whole suite (about 4 minutes); any other arguments go to pytest."""
    if platform.machine() != "x86_64":
        session.skip("emulates an x86-64 CPU: runs on x86-64 machines only")
    qemu = shutil.which("qemu-x86_64")
    if not qemu:
        session.skip("qemu-x86_64 is not installed (Debian/Ubuntu: apt-get install qemu-user)")
    install(session, ["tensor-core"], *TEST_DEPS)
    python = str(Path(session.virtualenv.bin) / "python")
    emulated = [qemu, "-cpu", EMULATED_CPU, python]
    # OpenBLAS (ember's and NumPy's) takes qemu-user's emulated Nehalem for a Haswell and dies
    # on AVX2: its own kernel choice is named, as its documentation says to when detection fails.
    # EMBER_TEST_EMULATOR: the tests that start fresh interpreters start them under qemu too.
    env = {"OPENBLAS_CORETYPE": "Nehalem", "EMBER_TEST_EMULATOR": shlex.join(emulated[:-1])}
    session.run(*emulated, "-c", "import ember; c = ember.backends.cpu.get_cpu_capability(); "
                "print('emulated CPU: kernels at', c); assert c == 'DEFAULT', c", external=True,
                env=env)
    args = [a for a in session.posargs if a != "all"]
    targets = ["tests", *QEMU_ABORTS] if "all" in session.posargs else EMULATED_TESTS
    with session.chdir(ROOT / "packages" / "tensor-core"):
        # -p no:cacheprovider: nothing is written into the source tree
        session.run(*emulated, "-m", "pytest", *targets, "-q", "-p", "no:cacheprovider",
                    "-m", "not slow", *args, external=True, env=env)


@nox.session(name="tests-emulated-aarch64")
def tests_emulated_aarch64(session: nox.Session) -> None:
    """tensor-core cross-built for aarch64 and tested under qemu-aarch64 (tools/cross_aarch64.py).

    Debian/Ubuntu x86-64 with g++-aarch64-linux-gnu, qemu-user and dpkg's arm64 architecture;
    the aarch64 Python and wheels are downloaded into this session's folder, never installed.
    The same test subset as tests-emulated-cpu; `-- all` runs the whole suite (about 90
    minutes); any other arguments go to pytest."""
    if platform.machine() != "x86_64":
        session.skip("cross-builds from x86-64 (on aarch64 the other sessions build natively)")
    tool = ["python", str(ROOT / "tools" / "cross_aarch64.py")]
    problem = session.run(*tool, "--check", silent=True).strip()
    if problem:
        session.skip(problem)
    session.install("setuptools>=68", "pybind11>=2.12")  # setup.py runs here, for the target
    args = [a for a in session.posargs if a != "all"]
    targets = ["tests", *QEMU_ABORTS] if "all" in session.posargs else EMULATED_TESTS
    session.run(*tool, str(Path(session.virtualenv.location) / "aarch64"), *targets, "-q",
                "-m", "not slow", *args)
