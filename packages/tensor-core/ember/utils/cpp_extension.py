"""ember.utils.cpp_extension: compile C++ ops against ember and import them (torch's API).

- ``load_inline(name, cpp_sources, functions=...)`` and ``load(name, sources)`` compile a
  pybind11 module with the system C++ compiler and import it. Builds are cached under
  ``$EMBER_EXTENSIONS_DIR`` (default ``~/.cache/ember/extensions``), keyed by a hash of the
  sources, the flags, ember's headers and the compiler, so a second call with the same sources
  only imports the module; a file lock per extension makes concurrent processes (DataLoader
  workers, distributed ranks) build it once and load the same file.
- ``CppExtension`` and ``BuildExtension`` build the same modules from a ``setup.py``.
- ``include_paths()`` gives the folders that hold ``<ember/extension.h>`` and pybind11.

A compile error raises RuntimeError("Error building extension 'name': ...") with the compiler's
messages, whose line numbers refer to the sources as given. docs/extensions.md is the guide.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from concurrent.futures import ThreadPoolExecutor

from ember.utils._cuda_kernels import cuda_kernel, cuda_module

__all__ = ["BuildExtension", "CppExtension", "cuda_kernel", "cuda_module",  # noqa: F822
           "get_default_build_root", "include_paths", "is_ninja_available", "load", "load_inline",
           "verify_ninja_availability"]

# Flags every extension is compiled with; `extra_cflags` come after them and win.
DEFAULT_CFLAGS = ["-O2", "-std=c++17", "-fPIC", "-fvisibility=hidden", "-g0"]
_HEADER_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "include")
_PREAMBLE = "#include <ember/extension.h>\n"


def include_paths(device_type: str = "cpu") -> list[str]:
    """The include folders an extension needs: ember's headers (``<ember/extension.h>``) and
    pybind11's. Only "cpu": ember compiles no CUDA sources (CUDA kernels are compiled at run
    time, see ``cuda_kernel``)."""
    import pybind11

    if device_type != "cpu":
        _refuse_cuda(True)
    return [_HEADER_DIR, pybind11.get_include()]


def get_default_build_root() -> str:
    """Where builds are cached: $EMBER_EXTENSIONS_DIR, else ~/.cache/ember/extensions (torch's
    TORCH_EXTENSIONS_DIR convention), one folder per Python version."""
    root = os.environ.get("EMBER_EXTENSIONS_DIR")
    if not root:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(cache, "ember", "extensions")
    return os.path.join(root, f"py{sys.version_info.major}{sys.version_info.minor}")


def is_ninja_available() -> bool:
    """ember builds without ninja (one compiler process per source, in parallel)."""
    return shutil.which("ninja") is not None


def verify_ninja_availability() -> None:
    if not is_ninja_available():
        raise RuntimeError("Ninja is required to load C++ extensions")


# ---- building ------------------------------------------------------------------------------------


def _compiler() -> list[str]:
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or \
        shutil.which("clang++")
    if not cxx:
        raise RuntimeError("ember.utils.cpp_extension: no C++ compiler found (install g++ or "
                           "clang++, or set CXX)")
    return shlex.split(cxx)


def _build_unavailable_reason() -> str | None:
    """Why an extension cannot be built here (no C++ compiler, no Python.h), or None. The tests
    of every package skip their compiled ops with this reason."""
    try:
        _compiler()
    except RuntimeError as e:
        return str(e)
    if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        return "Python's headers (Python.h) are not installed"
    return None


def _python_include() -> list[str]:
    paths = sysconfig.get_paths()
    return list(dict.fromkeys(p for p in (paths["include"], paths["platinclude"]) if p))


def _link_flags() -> list[str]:
    if sys.platform == "darwin":  # Python's symbols come from the interpreter at load time
        return ["-shared", "-undefined", "dynamic_lookup"]
    return ["-shared"]


def _header_digest() -> str:
    """A hash of ember's public headers: a new ember with changed headers rebuilds."""
    h = hashlib.sha256()
    for folder, _, files in sorted(os.walk(_HEADER_DIR)):
        for f in sorted(files):
            with open(os.path.join(folder, f), "rb") as fh:
                h.update(f.encode() + b"\0" + fh.read())
    return h.hexdigest()


def _build_key(name, sources_text, cflags, ldflags, includes) -> str:
    h = hashlib.sha256()
    for part in (name, *sources_text, *cflags, "--ldflags", *ldflags, "--includes", *includes,
                 _header_digest(), " ".join(_compiler()), sys.version, sysconfig.get_platform()):
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:16]


@contextlib.contextmanager
def _file_lock(path: str):
    """An exclusive lock held across processes (fcntl.flock; released if the process dies)."""
    import fcntl

    with open(path, "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _run(cmd, verbose: bool):
    if verbose:
        print(shlex.join(cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, capture_output=True, text=True)


def _build_error(name: str, cmd, result) -> RuntimeError:
    output = (result.stdout + result.stderr).strip()
    return RuntimeError(f"Error building extension '{name}':\n{output}\n\n"
                        f"The command was: {shlex.join(cmd)}")


def _compile_and_link(name, sources, target, workdir, cflags, ldflags, includes, verbose):
    """Compiles each source to an object (in parallel, one compiler per source), links them."""
    cc = _compiler()
    inc = [f"-I{d}" for d in (*includes, *include_paths(), *_python_include())]
    objects = [os.path.join(workdir, f"{i}_{os.path.splitext(os.path.basename(s))[0]}.o")
               for i, s in enumerate(sources)]

    def compile_one(pair):
        src, obj = pair
        cmd = [*cc, *DEFAULT_CFLAGS, *inc, *cflags, "-c", src, "-o", obj]
        return cmd, _run(cmd, verbose)

    jobs = max(1, min(len(sources), len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for cmd, result in pool.map(compile_one, zip(sources, objects)):
            if result.returncode != 0:
                raise _build_error(name, cmd, result)
            if verbose and (result.stdout or result.stderr):
                print(result.stdout + result.stderr, file=sys.stderr)
    cmd = [*cc, *objects, *_link_flags(), *ldflags, "-o", target]
    result = _run(cmd, verbose)
    if result.returncode != 0:
        raise _build_error(name, cmd, result)


def _import_from(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build_and_load(name, write_sources, sources_text, extra_cflags, extra_ldflags,
                    extra_include_paths, build_directory, verbose, keep_intermediates=True):
    """The cached build: `write_sources(folder)` writes or names the sources to compile (the
    objects are removed after the link; written sources too unless `keep_intermediates`)."""
    if not name.isidentifier():
        raise ValueError(f"extension name must be a Python identifier, got {name!r}")
    cflags = list(extra_cflags or [])
    ldflags = list(extra_ldflags or [])
    includes = [os.path.abspath(p) for p in (extra_include_paths or [])]
    key = _build_key(name, sources_text, cflags, ldflags, includes)
    root = build_directory or os.path.join(get_default_build_root(), name)
    os.makedirs(root, exist_ok=True)
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = os.path.join(root, key, name + suffix)
    if not os.path.exists(target):  # cached builds skip the lock and the compiler
        with _file_lock(os.path.join(root, "lock")):
            if not os.path.exists(target):  # another process may have built it meanwhile
                for stale in os.listdir(root):  # private folders of builds killed midway
                    if stale.startswith(f".{key}-"):
                        shutil.rmtree(os.path.join(root, stale), ignore_errors=True)
                # Built in a private folder, then renamed into place: a process that sees the
                # target sees a whole module, and a failed build leaves nothing behind.
                work = tempfile.mkdtemp(prefix=f".{key}-", dir=root)
                try:
                    sources = write_sources(work)
                    _compile_and_link(name, sources, os.path.join(work, name + suffix), work,
                                      cflags, ldflags, includes, verbose)
                    target_name = name + suffix
                    for f in os.listdir(work):
                        if f.endswith(".o") or (not keep_intermediates and f != target_name):
                            os.remove(os.path.join(work, f))
                    shutil.rmtree(os.path.join(root, key), ignore_errors=True)  # a gutted one
                    os.replace(work, os.path.join(root, key))
                finally:
                    shutil.rmtree(work, ignore_errors=True)
    elif verbose:
        print(f"ember.utils.cpp_extension: loading cached '{name}' from {target}",
              file=sys.stderr)
    return _import_from(name, target)


def _refuse_cuda(*device_arguments):
    """Raises for any CUDA/SYCL argument given (torch's load_inline takes them)."""
    if any(device_arguments):
        raise NotImplementedError(
            "ember.utils.cpp_extension compiles C++ sources only; CUDA kernels are compiled at "
            "run time from their source: ember.utils.cpp_extension.cuda_kernel(source, name)")


def load(name: str, sources, extra_cflags=None, extra_cuda_cflags=None, extra_sycl_cflags=None,
         extra_ldflags=None, extra_include_paths=None, build_directory=None,
         verbose: bool = False, with_cuda=None, with_sycl=None, is_python_module: bool = True,
         is_standalone: bool = False, keep_intermediates: bool = True):
    """Compiles the C++ files `sources` into the Python module `name` and imports it (cached:
    see the module's docstring). The sources define the module with
    ``PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)`` (or ``EMBER_EXTENSION_NAME``). The CUDA/SYCL
    arguments of torch's signature are refused."""
    _refuse_cuda(extra_cuda_cflags, extra_sycl_cflags, with_cuda, with_sycl,
                 any(str(s).endswith((".cu", ".cuh")) for s in
                     ([sources] if isinstance(sources, str) else sources)))
    if not is_python_module or is_standalone:
        raise NotImplementedError("ember.utils.cpp_extension.load builds Python modules only")
    if isinstance(sources, str):
        sources = [sources]
    paths = [os.path.abspath(s) for s in sources]
    texts = []
    for p in paths:
        with open(p, "rb") as f:
            texts.append(p.encode() + b"\0" + f.read())
    flags = [f"-DTORCH_EXTENSION_NAME={name}", f"-DEMBER_EXTENSION_NAME={name}",
             *(extra_cflags or [])]
    return _build_and_load(name, lambda work: paths, texts, flags, extra_ldflags,
                           extra_include_paths, build_directory, verbose, keep_intermediates)


def load_inline(name: str, cpp_sources, cuda_sources=None, sycl_sources=None, functions=None,
                extra_cflags=None, extra_cuda_cflags=None, extra_sycl_cflags=None,
                extra_ldflags=None, extra_include_paths=None, build_directory=None,
                verbose: bool = False, with_cuda=None, with_sycl=None,
                is_python_module: bool = True, keep_intermediates: bool = True,
                no_implicit_headers: bool = False):
    """Compiles C++ source strings into the Python module `name` and imports it.

    ``#include <ember/extension.h>`` is put before `cpp_sources` (unless
    `no_implicit_headers`), and, for `functions` (names,
    or a dict of name -> docstring), a ``PYBIND11_MODULE`` that binds each of them; without
    `functions` the sources define the module themselves. Cached by a hash of the sources and
    flags; compile errors raise RuntimeError with the compiler's messages (line numbers count
    from the start of the sources given). `keep_intermediates=False` removes the generated
    source once built. The CUDA/SYCL arguments of torch's signature are refused (see
    ``cuda_kernel``).

        >>> ext = load_inline("scale_ext", "ember::Tensor twice(ember::Tensor x) {...}",
        ...                   functions=["twice"])  # doctest: +SKIP
    """
    _refuse_cuda(cuda_sources, sycl_sources, extra_cuda_cflags, extra_sycl_cflags, with_cuda,
                 with_sycl)
    if not is_python_module:
        raise NotImplementedError("ember.utils.cpp_extension.load_inline builds Python modules "
                                  "only")
    if isinstance(cpp_sources, str):
        cpp_sources = [cpp_sources]
    if isinstance(functions, str):
        functions = [functions]
    if isinstance(functions, dict):
        docs = dict(functions)
    else:
        docs = {f: f for f in (functions or [])}
    for f in docs:
        if not f.isidentifier():
            raise ValueError(f"load_inline: functions must be C++ identifiers, got {f!r}")
    parts = [] if no_implicit_headers else [_PREAMBLE]
    for i, src in enumerate(cpp_sources):
        # Compiler messages point at the user's own lines ("cpp_sources[0]:3:5: error ...").
        label = "cpp_sources" if len(cpp_sources) == 1 else f"cpp_sources[{i}]"
        parts.append(f'#line 1 "{label}"\n{src}\n')
    if docs:
        parts.append('#line 1 "(generated bindings)"\n')
        parts.append("PYBIND11_MODULE(" + name + ", m) {\n  ember::init_extension();\n")
        for f, doc in docs.items():
            parts.append(f'  m.def("{f}", &{f}, {_cpp_string(doc)});\n')
        parts.append("}\n")
    text = "".join(parts)

    def write(work):
        path = os.path.join(work, "main.cpp")
        with open(path, "w") as fh:
            fh.write(text)
        return [path]

    flags = [f"-DTORCH_EXTENSION_NAME={name}", f"-DEMBER_EXTENSION_NAME={name}",
             *(extra_cflags or [])]
    return _build_and_load(name, write, [text], flags, extra_ldflags, extra_include_paths,
                           build_directory, verbose, keep_intermediates)


def _cpp_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# ---- setuptools --------------------------------------------------------------------------------


def CppExtension(name: str, sources, *args, **kwargs):
    """A setuptools Extension for a C++ ember extension: ember's and pybind11's include folders,
    C++17, -O2 (torch's CppExtension). Build it with ``cmdclass={"build_ext": BuildExtension}``."""
    from setuptools import Extension

    kwargs["include_dirs"] = [*kwargs.get("include_dirs", []), *include_paths()]
    kwargs["language"] = "c++"
    return Extension(name, sources, *args, **kwargs)


def _make_build_extension():
    from setuptools.command.build_ext import build_ext

    class BuildExtension(build_ext):
        """setuptools' build_ext with ember's flags (C++17, -O2, hidden visibility), the module
        name defined as TORCH_EXTENSION_NAME / EMBER_EXTENSION_NAME, and the extensions compiled
        in parallel (``-j``, default: every CPU)."""

        @classmethod
        def with_options(cls, **options):
            class WithOptions(cls):
                def __init__(self, *args, **kwargs):
                    kwargs.update(options)
                    super().__init__(*args, **kwargs)

            return WithOptions

        def __init__(self, *args, **kwargs):
            self.no_python_abi_suffix = kwargs.pop("no_python_abi_suffix", False)
            super().__init__(*args, **kwargs)

        def finalize_options(self):
            super().finalize_options()
            if not self.parallel:
                self.parallel = os.cpu_count() or 1

        def build_extension(self, ext):
            _refuse_cuda(any(s.endswith((".cu", ".cuh")) for s in ext.sources))
            short = ext.name.split(".")[-1]
            flags = [f for f in DEFAULT_CFLAGS if f != "-fPIC"]
            ext.extra_compile_args = [*flags, f"-DTORCH_EXTENSION_NAME={short}",
                                      f"-DEMBER_EXTENSION_NAME={short}",
                                      *(ext.extra_compile_args or [])]
            super().build_extension(ext)

        def get_ext_filename(self, ext_name):
            name = super().get_ext_filename(ext_name)
            if self.no_python_abi_suffix:
                suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
                name = name[: -len(suffix)] + os.path.splitext(suffix)[1]
            return name

    return BuildExtension


def __getattr__(name: str):
    # BuildExtension subclasses setuptools' build_ext: setuptools is imported only when a setup.py
    # asks for it, not by load_inline.
    if name == "BuildExtension":
        cls = _make_build_extension()
        globals()["BuildExtension"] = cls
        return cls
    raise AttributeError(f"module 'ember.utils.cpp_extension' has no attribute '{name}'")
