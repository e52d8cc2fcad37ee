"""Compiled user extensions: <ember/extension.h>, ember.utils.cpp_extension and ember.library.

The ops are compiled here, at test time, with the system compiler (each build a few seconds, so
one small module serves most tests); without a C++ compiler or Python's headers these tests
skip. Results are checked against ember's own ops and NumPy.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember import library
from ember.utils import cpp_extension

_NO_BUILD = cpp_extension._build_unavailable_reason()
needs_compiler = pytest.mark.skipif(_NO_BUILD is not None, reason=str(_NO_BUILD))

OPS_SOURCE = r"""
// out = x + alpha * y, over the core's thread pool
ember::Tensor scale_add(ember::Tensor x, ember::Tensor y, double alpha) {
  EMBER_CHECK(x.sizes() == y.sizes(), "scale_add: x and y must have the same shape, got ",
              x.sizes(), " and ", y.sizes());
  EMBER_CHECK(x.dtype() == y.dtype(), "scale_add: expected one dtype, got ", x.dtype(),
              " and ", y.dtype());
  ember::Tensor xc = x.contiguous(), yc = y.contiguous();
  ember::Tensor out = ember::empty_like(xc);
  EMBER_DISPATCH_FLOATING_TYPES(x.dtype(), "scale_add", [&] {
    const scalar_t* a = xc.data_ptr<scalar_t>();
    const scalar_t* b = yc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    ember::parallel_for(0, out.numel(), 4096, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) o[i] = a[i] + static_cast<scalar_t>(alpha) * b[i];
    });
  });
  return out;
}

// What the extension sees of a tensor.
pybind11::tuple describe(ember::Tensor t) {
  return pybind11::make_tuple(t.sizes(), t.strides(), static_cast<int>(t.dtype()),
                              t.is_contiguous(), t.numel(), t.device().str(), t.element_size(),
                              t.dim(), t.requires_grad());
}

ember::Tensor make(const std::string& kind, std::vector<int64_t> sizes, int dtype) {
  auto st = static_cast<ember::ScalarType>(dtype);
  return kind == "zeros" ? ember::zeros(sizes, st) : ember::empty(sizes, st);
}

ember::Tensor same(ember::Tensor t) { return t; }

double first_as_float(ember::Tensor t) { return *t.data_ptr<float>(); }

int64_t size_of(ember::Tensor t, int64_t d) { return t.size(d); }

void raise_error(const std::string& kind) {
  EMBER_CHECK(kind != "runtime", "a runtime error");
  EMBER_CHECK_VALUE(kind != "value", "a value error");
  EMBER_CHECK_TYPE(kind != "type", "a type error");
  EMBER_CHECK_INDEX(kind != "index", "an index error");
  EMBER_CHECK_NOT_IMPLEMENTED(kind != "not_implemented", "not implemented");
}

// Sums [0, n) in chunks; the chunk holding `bad` throws an IndexError.
int64_t chunked_sum(int64_t n, int64_t bad) {
  std::vector<int64_t> partial(ember::get_num_threads() + 1, 0);
  std::atomic<int64_t> total{0};
  ember::parallel_for(0, n, 1000, [&](int64_t lo, int64_t hi) {
    int64_t s = 0;
    for (int64_t i = lo; i < hi; ++i) {
      EMBER_CHECK_INDEX(i != bad, "chunked_sum: index ", i, " is out of bounds");
      s += i;
    }
    total += s;
  });
  return total.load();
}
"""

OPS_FUNCTIONS = ["scale_add", "describe", "make", "same", "first_as_float", "size_of",
                 "raise_error", "chunked_sum"]


@pytest.fixture(scope="session")
def extensions_dir(tmp_path_factory):
    """A private build cache ($EMBER_EXTENSIONS_DIR) for the whole session."""
    path = str(tmp_path_factory.mktemp("ember_extensions"))
    old = os.environ.get("EMBER_EXTENSIONS_DIR")
    os.environ["EMBER_EXTENSIONS_DIR"] = path
    yield path
    if old is None:
        os.environ.pop("EMBER_EXTENSIONS_DIR", None)
    else:
        os.environ["EMBER_EXTENSIONS_DIR"] = old


@pytest.fixture(scope="session")
def ops(extensions_dir):
    return cpp_extension.load_inline("ember_test_ops", "#include <atomic>\n" + OPS_SOURCE,
                                     functions=OPS_FUNCTIONS)


# ---- <ember/extension.h> -------------------------------------------------------------------------


def test_include_paths_hold_the_headers():
    paths = cpp_extension.include_paths()
    assert os.path.isfile(os.path.join(paths[0], "ember", "extension.h"))
    assert os.path.isfile(os.path.join(paths[0], "ember", "extension_abi.h"))
    assert any(os.path.isfile(os.path.join(p, "pybind11", "pybind11.h")) for p in paths)


def test_abi_version_of_the_core_is_the_headers():
    with open(os.path.join(cpp_extension.include_paths()[0], "ember", "extension_abi.h")) as f:
        line = next(ln for ln in f if ln.startswith("#define EMBER_EXTENSION_ABI_VERSION"))
    assert int(line.split()[-1]) == ember._C._extension_abi_version
    assert type(ember._C._extension_api).__name__ == "PyCapsule"


OLDER_CORE = r"""
import ctypes, importlib.util, sys
import ember
api = ctypes.pythonapi
api.PyCapsule_GetPointer.restype = ctypes.c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_New.restype = ctypes.py_object
api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
name = b"ember._C._extension_api"
table = api.PyCapsule_GetPointer(ember._C._extension_api, name)
size = ctypes.c_uint32.from_address(table + 4).value
older = ctypes.create_string_buffer(ctypes.string_at(table, size), size)
ctypes.c_uint32.from_address(ctypes.addressof(older)).value = 0  # a core of ABI version 0
ember._C._extension_api = api.PyCapsule_New(ctypes.addressof(older), name, None)
spec = importlib.util.spec_from_file_location("ember_test_ops", sys.argv[1])
try:
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
except ImportError as e:  # pybind11 3 raises "initialization failed" from the module's error
    print(e.__cause__ or e)
"""


@needs_compiler
def test_an_extension_refuses_an_older_core(ops):
    """The table's version is checked when the module is imported (ember::init_extension)."""
    r = subprocess.run([sys.executable, "-c", OLDER_CORE, ops.__file__], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (
        f"this extension was built against ember's extension ABI "
        f"{ember._C._extension_abi_version}, but the installed ember provides ABI 0: upgrade "
        "ember or rebuild the extension")


@needs_compiler
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_compiled_op_matches_ember(ops, dtype):
    x = ember.randn(3, 5, dtype=dtype)
    y = ember.randn(3, 5, dtype=dtype)
    np.testing.assert_allclose(ops.scale_add(x, y, 0.5).numpy(), (x + 0.5 * y).numpy(),
                               rtol=1e-6)
    # strided inputs are made contiguous by the op
    xt, yt = x.t(), y.t()
    np.testing.assert_allclose(ops.scale_add(xt, yt, 2.0).numpy(), (xt + 2 * yt).numpy(),
                               rtol=1e-6)


@needs_compiler
def test_compiled_op_runs_on_the_thread_pool(ops):
    ember.set_num_threads(2)
    x = ember.randn(100_003)
    y = ember.randn(100_003)
    # atol: where the target has FMA (aarch64) the compiler fuses a + alpha * b into one rounding,
    # which differs from NumPy's two in the last bits of the product, not of a result near zero
    np.testing.assert_allclose(ops.scale_add(x, y, -1.5).numpy(),
                               x.numpy() - 1.5 * y.numpy(), rtol=1e-6, atol=1e-6)
    n = 50_000
    assert ops.chunked_sum(n, -1) == n * (n - 1) // 2


@needs_compiler
@pytest.mark.parametrize("make", [
    lambda: ember.arange(24.0).reshape(2, 3, 4),
    lambda: ember.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1),
    lambda: ember.arange(24, dtype=ember.int64).reshape(4, 6)[:, 1::2],
    lambda: ember.ones(1, 5, dtype=ember.float64).expand(3, 5),
    lambda: ember.tensor(3.0),
    lambda: ember.zeros(0, 3, dtype=ember.bool),
])
def test_the_extension_sees_the_tensor_as_ember_does(ops, make):
    t = make()
    sizes, strides, dtype, contiguous, numel, device, itemsize, dim, rg = ops.describe(t)
    assert sizes == list(t.shape)
    assert strides == list(t.stride())
    assert dtype == [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64,
                     ember.float16, ember.bfloat16, ember.float32, ember.float64].index(t.dtype)
    assert contiguous == t.is_contiguous()
    assert numel == t.numel() and dim == t.dim() and itemsize == t.element_size()
    assert device == "cpu" and rg is False


@needs_compiler
def test_tensors_made_by_the_extension_come_from_the_core(ops):
    before = ember.cpu.memory_allocated()
    z = ops.make("zeros", [3, 4], 9)  # float64
    assert type(z) is ember.Tensor and z.dtype == ember.float64 and z.shape == (3, 4)
    assert ember.cpu.memory_allocated() - before >= 3 * 4 * 8  # the core's allocator
    assert (z == 0).all()
    e = ops.make("empty", [2, 0, 5], 5)
    assert e.dtype == ember.int64 and e.shape == (2, 0, 5) and e.is_contiguous()
    z += 1  # an ordinary tensor
    assert z.sum().item() == 12
    # the core's checks reach the extension's caller as its usual exceptions
    with pytest.raises(RuntimeError, match="negative dimension"):
        ops.make("empty", [2, -1], 6)
    with pytest.raises(ValueError, match="unknown dtype code 42"):
        ops.make("zeros", [2], 42)


@needs_compiler
def test_a_tensor_goes_back_as_the_same_object(ops):
    x = ember.randn(3)
    assert ops.same(x) is x


@needs_compiler
@pytest.mark.parametrize("kind, exc", [("runtime", RuntimeError), ("value", ValueError),
                                       ("type", TypeError), ("index", IndexError),
                                       ("not_implemented", NotImplementedError)])
def test_checks_raise_torchs_exception_classes(ops, kind, exc):
    with pytest.raises(exc) as info:
        ops.raise_error(kind)
    assert type(info.value) is exc
    ops.raise_error("none")


@needs_compiler
def test_shape_error_inside_the_op_is_readable(ops):
    with pytest.raises(RuntimeError, match=r"scale_add: x and y must have the same shape, got "
                                           r"\[2, 3\] and \[3, 2\]"):
        ops.scale_add(ember.ones(2, 3), ember.ones(3, 2), 1.0)


@needs_compiler
def test_dtype_errors_name_the_op_and_the_dtype(ops):
    with pytest.raises(NotImplementedError, match="\"scale_add\" not implemented for 'Int'"):
        ops.scale_add(ember.ones(2, dtype=ember.int32), ember.ones(2, dtype=ember.int32), 1.0)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ops.first_as_float(ember.ones(2, dtype=ember.float64))
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)"):
        ops.size_of(ember.ones(2, 3), 2)
    assert ops.size_of(ember.ones(2, 3), -1) == 3


@needs_compiler
def test_an_exception_in_a_pool_chunk_reaches_python(ops):
    ember.set_num_threads(2)
    with pytest.raises(IndexError, match="chunked_sum: index 41234 is out of bounds"):
        ops.chunked_sum(50_000, 41_234)
    assert ops.chunked_sum(10, -1) == 45  # the pool still works


@needs_compiler
def test_a_non_tensor_argument_is_a_type_error(ops):
    with pytest.raises(TypeError, match="ember.Tensor"):
        ops.scale_add(np.ones(2, dtype=np.float32), ember.ones(2), 1.0)


# ---- building: cache, lock, errors -------------------------------------------------------------


@needs_compiler
def test_a_second_load_uses_the_cached_build(ops, monkeypatch):
    def no_compiler(*args, **kwargs):
        raise AssertionError("the cached build ran the compiler")

    monkeypatch.setattr(cpp_extension.subprocess, "run", no_compiler)
    again = cpp_extension.load_inline("ember_test_ops", "#include <atomic>\n" + OPS_SOURCE,
                                      functions=OPS_FUNCTIONS)
    assert again.__file__ == ops.__file__
    assert again.scale_add(ember.ones(2), ember.ones(2), 2.0).tolist() == [3.0, 3.0]


def test_the_build_key_follows_sources_and_flags():
    key = cpp_extension._build_key
    base = key("m", ["int f();"], ["-O2"], [], [])
    assert key("m", ["int f();"], ["-O2"], [], []) == base
    assert key("m", ["int g();"], ["-O2"], [], []) != base
    assert key("m", ["int f();"], ["-O3"], [], []) != base
    assert key("m", ["int f();"], ["-O2"], ["-lm"], []) != base
    assert key("n", ["int f();"], ["-O2"], [], []) != base


def test_the_cache_replaces_what_killed_builds_left(monkeypatch, tmp_path):
    """A build killed midway leaves its private folder, and a removed module a folder without
    it: the next build (under the lock) clears both and builds once; later loads do not."""
    built = []

    def fake_build(name, sources, target, workdir, *args):
        built.append(target)
        with open(target, "w") as f:
            f.write("module")

    monkeypatch.setattr(cpp_extension, "_compile_and_link", fake_build)
    monkeypatch.setattr(cpp_extension, "_import_from", lambda name, path: path)
    key = cpp_extension._build_key("m", ["src"], [], [], [])
    (tmp_path / f".{key}-killed").mkdir()
    (tmp_path / key).mkdir()
    (tmp_path / key / "main.cpp").write_text("left over")

    def load():
        return cpp_extension._build_and_load("m", lambda work: [], ["src"], [], [], [],
                                             str(tmp_path), False)

    path = load()
    assert len(built) == 1 and os.path.isfile(path)
    assert sorted(os.listdir(tmp_path)) == [key, "lock"]
    assert os.listdir(tmp_path / key) == [os.path.basename(path)]
    assert load() == path and len(built) == 1


def test_the_cache_folder_follows_ember_extensions_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_EXTENSIONS_DIR", str(tmp_path))
    assert cpp_extension.get_default_build_root().startswith(str(tmp_path))
    monkeypatch.delenv("EMBER_EXTENSIONS_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert cpp_extension.get_default_build_root().startswith(
        str(tmp_path / "cache" / "ember" / "extensions"))


@needs_compiler
def test_a_compile_error_shows_the_compilers_message(extensions_dir):
    source = "ember::Tensor broken(ember::Tensor x) {\n  return x.no_such_member();\n}\n"
    with pytest.raises(RuntimeError) as info:
        cpp_extension.load_inline("ember_test_broken", source, functions=["broken"])
    message = str(info.value)
    assert message.startswith("Error building extension 'ember_test_broken'")
    assert "cpp_sources:2:" in message  # the line in the source as given
    assert "no_such_member" in message
    # nothing half-built is left to be loaded later
    root = os.path.join(cpp_extension.get_default_build_root(), "ember_test_broken")
    assert [f for f in os.listdir(root) if f != "lock"] == []


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="identifier"):
        cpp_extension.load_inline("not-a-name", "", functions=[])
    with pytest.raises(NotImplementedError, match="cuda_kernel"):
        cpp_extension.load_inline("m", "", cuda_sources=["__global__ void k() {}"])
    with pytest.raises(NotImplementedError, match="cuda_kernel"):
        cpp_extension.load("m", ["kernel.cu"])
    with pytest.raises(NotImplementedError, match="cuda_kernel"):
        cpp_extension.include_paths("cuda")


RACE_SCRIPT = r"""
import sys, time
from ember.utils import cpp_extension
while time.time() < float(sys.argv[1]):  # both processes start building at the same moment
    time.sleep(0.001)
source = ("#include <ember/extension.h>\nint answer() { return 42; }\n"
          "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"answer\", &answer); }\n")
m = cpp_extension.load_inline("ember_test_race", source, verbose=True,
                              no_implicit_headers=True, keep_intermediates=False)
print(m.answer(), m.__file__)
"""


@needs_compiler
def test_two_processes_load_one_extension_at_once(tmp_path):
    """Both succeed and load one build: the second waits on the lock and finds it done. (The
    source defines its own module: no implicit header, no generated bindings.)"""
    import time

    env = dict(os.environ, EMBER_EXTENSIONS_DIR=str(tmp_path))
    start = str(time.time() + 1.0)
    procs = [subprocess.Popen([sys.executable, "-c", RACE_SCRIPT, start], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    for _, err, rc in results:
        assert rc == 0, err
    answers = [out.split() for out, _, _ in results]
    assert [a[0] for a in answers] == ["42", "42"]
    assert answers[0][1] == answers[1][1]  # the same file
    compiled = [err.count(" -c ") for _, err, _ in results]  # verbose prints each compile
    assert sorted(compiled) == [0, 1]
    root = os.path.join(str(tmp_path), f"py{sys.version_info.major}{sys.version_info.minor}",
                        "ember_test_race")
    assert sorted(os.listdir(root))[-1] == "lock" and len(os.listdir(root)) == 2
    # keep_intermediates=False: the build folder holds the module alone
    assert os.listdir(os.path.dirname(answers[0][1])) == [os.path.basename(answers[0][1])]


SETUP_SOURCE = r"""
#include <ember/extension.h>

ember::Tensor cube(ember::Tensor x) {
  EMBER_CHECK(x.dtype() == ember::kFloat64, "cube: expected a float64 tensor, got ", x.dtype());
  ember::Tensor xc = x.contiguous();
  ember::Tensor out = ember::empty_like(xc);
  const double* a = xc.data_ptr<double>();
  double* o = out.data_ptr<double>();
  for (int64_t i = 0; i < out.numel(); ++i) o[i] = a[i] * a[i] * a[i];
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("cube", &cube); }
"""

SETUP_PY = """
from setuptools import setup
from ember.utils.cpp_extension import BuildExtension, CppExtension

setup(name="cube_ext", ext_modules=[CppExtension("cube_ext", ["cube.cpp"])],
      cmdclass={"build_ext": BuildExtension})
"""


@needs_compiler
def test_a_setup_py_extension_builds_and_runs(tmp_path):
    (tmp_path / "cube.cpp").write_text(SETUP_SOURCE)
    (tmp_path / "setup.py").write_text(textwrap.dedent(SETUP_PY))
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    check = ("import ember, cube_ext\n"
             "x = ember.tensor([1.0, -2.0, 0.5], dtype=ember.float64)\n"
             "print(cube_ext.cube(x).tolist())\n"
             "try:\n    cube_ext.cube(x.float())\n"
             "except RuntimeError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert eval(lines[0]) == [1.0, -8.0, 0.125]
    assert lines[1] == "cube: expected a float64 tensor, got Float"


@needs_compiler
def test_load_builds_several_source_files(tmp_path, extensions_dir):
    """Two files, compiled side by side and linked into one module."""
    kernel, module = SETUP_SOURCE.split("PYBIND11_MODULE")
    (tmp_path / "cube.cpp").write_text(kernel)
    (tmp_path / "module.cpp").write_text("#include <ember/extension.h>\n"
                                         "ember::Tensor cube(ember::Tensor x);\n"
                                         "PYBIND11_MODULE" + module)
    mod = cpp_extension.load("ember_test_cube",
                             [str(tmp_path / "cube.cpp"), str(tmp_path / "module.cpp")])
    x = ember.linspace(-2, 2, 7, dtype=ember.float64)
    np.testing.assert_allclose(mod.cube(x).numpy(), x.numpy() ** 3)


# ---- ember.library ----------------------------------------------------------------------------


def test_custom_op_schema_is_inferred_from_annotations():
    from collections.abc import Sequence

    @library.custom_op("ember_test::mix", mutates_args=())
    def mix(x: ember.Tensor, y: ember.Tensor | None, xs: Sequence[ember.Tensor],
            n: int = 2, s: str = "a", b: bool = False, *, alpha: float = 1.0) -> ember.Tensor:
        return x

    assert mix.schema == ("ember_test::mix(Tensor x, Tensor? y, Tensor[] xs, SymInt n=2, "
                          "str s=\"a\", bool b=False, *, float alpha=1.0) -> Tensor")
    assert library.get_op("ember_test::mix") is mix
    assert "ember_test::mix" in library.list_ops()
    assert ember.library is library

    @library.custom_op("ember_test::add_one_", mutates_args=("x",))
    def add_one_(x: ember.Tensor) -> None:
        x.add_(1)

    assert add_one_.schema == "ember_test::add_one_(Tensor(a0!) x) -> ()"
    t = ember.zeros(2)
    assert add_one_(t) is None and t.tolist() == [1.0, 1.0]


def test_custom_op_schema_matches_torchs():
    torch = pytest.importorskip("torch")
    def f(x, y, n: int = 2, *, alpha: float = 1.0):
        return x

    numbers = {"n": int, "alpha": float}
    f.__annotations__ = {"x": ember.Tensor, "y": ember.Tensor | None, **numbers,
                         "return": ember.Tensor}
    g_ann = {"x": torch.Tensor, "y": torch.Tensor | None, **numbers, "return": torch.Tensor}
    ours = library.infer_schema(f, mutates_args=())
    f.__annotations__ = g_ann
    assert ours == str(torch.library.infer_schema(f, mutates_args=()))


def test_custom_op_checks_its_arguments_as_torch_does():
    @library.custom_op("ember_test::scale", mutates_args=())
    def scale(x: ember.Tensor, alpha: float) -> ember.Tensor:
        return x * alpha

    assert scale(ember.ones(2), 3).tolist() == [3.0, 3.0]  # an int is a float
    with pytest.raises(RuntimeError, match=r"ember_test::scale\(\) Expected a value of type "
                                           r"'float' for argument 'alpha' but instead found "
                                           r"type 'str'"):
        scale(ember.ones(2), "a")
    with pytest.raises(RuntimeError, match=r"expected at most 2 argument\(s\) but received 3"):
        scale(ember.ones(2), 1.0, 2)
    with pytest.raises(RuntimeError, match="is missing value for argument 'alpha'"):
        scale(ember.ones(2))
    with pytest.raises(RuntimeError, match="unexpected keyword argument 'beta'"):
        scale(ember.ones(2), 1.0, beta=2)
    assert scale(x=ember.ones(1), alpha=2.0).tolist() == [2.0]


def test_custom_op_definitions_are_checked():
    with pytest.raises(ValueError, match="namespace::op_name"):
        library.custom_op("noname", lambda x: x, mutates_args=())
    with pytest.raises(ValueError, match="Parameter x must have a type annotation"):
        @library.custom_op("ember_test::bad", mutates_args=())
        def bad(x, alpha: float) -> ember.Tensor:
            return x
    with pytest.raises(ValueError, match="unsupported type"):
        library.custom_op("ember_test::bad2", lambda x: x, mutates_args=(),
                          schema="(Matrix x) -> Tensor")
    explicit = library.custom_op("ember_test::two", lambda x, *, k=1: (x, x + k),
                                 mutates_args=(),
                                 schema="(Tensor x, *, int k=1) -> (Tensor, Tensor)")
    a, b = explicit(ember.zeros(2), k=5)
    assert b.tolist() == [5.0, 5.0] and explicit.returns == ["Tensor", "Tensor"]


def test_custom_op_runs_the_kernel_of_the_tensors_device():
    calls = []

    @library.custom_op("ember_test::where_am_i", mutates_args=(), device_types="cpu")
    def where_am_i(x: ember.Tensor) -> ember.Tensor:
        calls.append("cpu")
        return x.clone()

    @where_am_i.register_kernel("cuda")
    def _(x):
        calls.append("cuda")
        return x.clone()

    where_am_i(ember.ones(2))
    assert calls == ["cpu"]
    assert where_am_i.kernel("cpu") is not where_am_i.kernel("cuda")
    try:
        ember.cuda._use_host_backend(1 << 26, 1)  # simulated devices: no GPU needed
    except RuntimeError as e:
        pytest.skip(f"{e}: the host backend cannot be swapped in here")
    try:
        y = where_am_i(ember.ones(2, device="cuda"))
        assert calls == ["cpu", "cuda"] and y.device.type == "cuda"
        del y
    finally:
        ember.cuda._use_host_backend(0)

    only_cpu = library.custom_op("ember_test::only_cpu", lambda x: x, mutates_args=(),
                                 device_types="cpu", schema="(Tensor x) -> Tensor")
    only_cpu._kernels.clear()
    with pytest.raises(NotImplementedError, match="Could not run 'ember_test::only_cpu' with "
                                                  "arguments from the 'CPU' backend"):
        only_cpu(ember.ones(1))


@needs_compiler
def test_a_compiled_function_as_a_custom_op(ops):
    @library.custom_op("ember_test::scale_add", mutates_args=())
    def scale_add(x: ember.Tensor, y: ember.Tensor, alpha: float = 1.0) -> ember.Tensor:
        return ops.scale_add(x, y, alpha)

    x, y = ember.randn(4), ember.randn(4)
    np.testing.assert_allclose(scale_add(x, y, alpha=3.0).numpy(), (x + 3 * y).numpy(),
                               rtol=1e-6)


# ---- user CUDA kernels -------------------------------------------------------------------------


@pytest.mark.skipif(ember.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_kernels_without_a_gpu_say_what_they_need():
    with pytest.raises(RuntimeError, match="GPU|CUDA|CuPy"):
        cpp_extension.cuda_kernel('extern "C" __global__ void k() {}', "k")


def test_cuda_kernel_arguments_are_checked():
    from ember.utils import _cuda_kernels

    try:
        ember.cuda._use_host_backend(1 << 26, 2)
    except RuntimeError as e:
        pytest.skip(f"{e}: the host backend cannot be swapped in here")
    try:
        x = ember.arange(4.0, device="cuda:0")
        device, args = _cuda_kernels._launch_args((x, np.float32(2.0), np.int64(4)))
        assert device == 0
        np.testing.assert_array_equal(np.asarray(args[0]), [0.0, 1.0, 2.0, 3.0])
        assert args[1] == np.float32(2.0)
        with pytest.raises(ValueError, match="tensor on cpu"):
            _cuda_kernels._launch_args((ember.ones(2),))
        with pytest.raises(ValueError, match="one device"):
            _cuda_kernels._launch_args((x, ember.ones(2, device="cuda:1")))
        del x, args
    finally:
        ember.cuda._use_host_backend(0)


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU and CuPy")
def test_a_user_cuda_kernel_runs_on_ember_tensors():
    pytest.importorskip("cupy")
    kernel = cpp_extension.cuda_kernel(r"""
    extern "C" __global__ void axpy(const float* x, float a, float* y, long long n) {
      long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
      if (i < n) y[i] += a * x[i];
    }""", "axpy")
    n = 1000
    x = ember.randn(n, device="cuda")
    y = ember.ones(n, device="cuda")
    expected = 1 + 2 * x.cpu().numpy()
    kernel(((n + 255) // 256,), (256,), (x, np.float32(2.0), y, np.int64(n)))
    np.testing.assert_allclose(y.cpu().numpy(), expected, rtol=1e-6)


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU and CuPy")
def test_a_user_cuda_module_gives_kernels_that_run_on_ember_tensors():
    pytest.importorskip("cupy")
    module = cpp_extension.cuda_module(r"""
    extern "C" __global__ void fill(float* y, float v, long long n) {
      long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
      if (i < n) y[i] = v;
    }
    extern "C" __global__ void twice(float* y, long long n) {
      long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
      if (i < n) y[i] *= 2;
    }""")
    n = 300
    y = ember.empty(n, device="cuda")
    module.get_function("fill")(((n + 127) // 128,), (128,), (y, np.float32(1.5), np.int64(n)))
    module.get_function("twice")(((n + 127) // 128,), (128,), (y, np.int64(n)))
    np.testing.assert_array_equal(y.cpu().numpy(), np.full(n, 3.0, dtype=np.float32))
