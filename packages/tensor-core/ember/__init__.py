"""ember: a PyTorch-style deep-learning framework. This distribution (ember-tensor) is the core:
n-d tensors with PyTorch's API over a C++ engine, usable alone as a NumPy replacement.

The other components live in their own distributions and appear here lazily, as in torch:
``ember.autograd`` (ember-autograd), ``ember.nn`` / ``ember.optim`` (ember-nn),
``ember.utils.data`` (ember-data), ``ember.multiprocessing`` and ``ember.distributed`` (ember-mp).
``ember.utils`` itself is the core's (``ember.utils.safetensors``), a namespace the other
distributions extend, and so is ``ember.cuda`` (imported on first touch too).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pkgutil import extend_path

# Other ember-* distributions install sub-packages into this namespace, possibly from other
# directories (editable installs): let the import system find them all.
__path__ = extend_path(__path__, __name__)

from ember import _C  # noqa: E402
from ember._C import *  # noqa: E402,F401,F403
from ember._C import Tensor, dtype  # noqa: E402,F401
from ember._device import Size, _make_device, device, strided  # noqa: E402,F401
from ember._grad_mode import (  # noqa: E402,F401
    enable_grad,
    inference_mode,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ember._padding import pad as _pad  # noqa: E402,F401
from ember._shape import *  # noqa: E402,F401,F403
from ember._shape import install as _install_shape_methods  # noqa: E402
from ember._sorting import allclose, diff, equal, isclose, msort  # noqa: E402,F401
from ember._sorting import install as _install_sorting  # noqa: E402
from ember._tensor_methods import install as _install_methods  # noqa: E402

__version__ = "0.1.0"

# Python-level dtype aliases, as torch has them.
float = float32  # noqa: A001,F405
double = float64  # noqa: F405
half = float16  # noqa: F405
int = int32  # noqa: A001,F405
long = int64  # noqa: F405
short = int16  # noqa: F405
bool = _C.bool  # noqa: A001

if _C._cpu_capability_note():  # EMBER_CPU_CAPABILITY holds an unknown value
    import warnings

    warnings.warn(_C._cpu_capability_note(), RuntimeWarning, stacklevel=2)

_install_methods(Tensor)
_install_shape_methods(Tensor)
_install_sorting(Tensor)

# Linear algebra (ember.linalg, pure Python over the core's LAPACK primitives) and its
# top-level aliases (ember.det, ember.svd, ...), also as Tensor methods; einsum and tensordot;
# ember.special, torch.special's names for the core's functions.
from ember import linalg, special  # noqa: E402,F401
from ember._einsum import einsum, tensordot  # noqa: E402,F401

globals().update(linalg.TOP_LEVEL)
linalg._install(Tensor)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """Printing options, as torch.set_printoptions (the formatter is imported on first use)."""
    from ember import _tensor_str

    _tensor_str.set_printoptions(precision, threshold, edgeitems, linewidth, profile, sci_mode)


def get_printoptions() -> dict:
    from ember import _tensor_str

    return _tensor_str.get_printoptions()


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True):
    """Saves `obj` in PyTorch's checkpoint format; see ember.serialization."""
    from ember import serialization

    serialization.save(obj, f, pickle_module, pickle_protocol, _use_new_zipfile_serialization)


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **kwargs):
    """Loads a checkpoint written by ember.save or torch.save; see ember.serialization."""
    from ember import serialization

    return serialization.load(f, map_location, pickle_module, weights_only=weights_only,
                              mmap=mmap, **kwargs)


# The core builds these Python objects for Tensor.device / Tensor.size() / Tensor.layout.
_C._make_device, _C.Size, _C.strided = _make_device, Size, strided


def _locate_openblas() -> str:
    """Path of the OpenBLAS shipped by scipy-openblas32, found without importing it."""
    spec = importlib.util.find_spec("scipy_openblas32")
    if spec is None or not spec.submodule_search_locations:
        return "libscipy_openblas.so"
    base = list(spec.submodule_search_locations)[0]
    return os.path.join(base, "lib", "libscipy_openblas.so")


_C._set_blas_library(_locate_openblas())  # loaded lazily, on the first matrix product


def _locate_cudart() -> list[str]:
    """CUDA runtimes to try before the system's libcudart: $EMBER_CUDA_RUNTIME, then those of the
    nvidia-cuda-runtime wheels (nvidia/<name>/lib/libcudart.so.N), found without importing."""
    import glob
    import sys

    found = [os.environ["EMBER_CUDA_RUNTIME"]] if os.environ.get("EMBER_CUDA_RUNTIME") else []
    for entry in sys.path:
        base = os.path.join(entry or ".", "nvidia")
        if os.path.isdir(base):
            found += sorted(glob.glob(os.path.join(base, "*", "lib", "libcudart.so.*")),
                            reverse=True)
    return found


# libcudart itself is loaded on the first ember.cuda call (dlopen): one build, with or without GPU.
_C._cuda_set_runtime_candidates(_locate_cudart())

# Components from other distributions, imported on first touch so `import ember` stays fast.
_COMPONENTS = {
    "autograd": ("ember.autograd", "ember-autograd"),
    "nn": ("ember.nn", "ember-nn"),
    "optim": ("ember.optim", "ember-nn"),
    "utils": ("ember.utils", "ember-tensor"),
    "cuda": ("ember.cuda", "ember-tensor"),  # ember.utils.data comes from ember-data
    "backends": ("ember.backends", "ember-tensor"),
    "multiprocessing": ("ember.multiprocessing", "ember-mp"),
    "distributed": ("ember.distributed", "ember-mp"),
}


# Each distribution's folder in ember's source tree.
_FOLDERS = {"ember-tensor": "tensor-core", "ember-autograd": "autograd", "ember-nn": "nn",
            "ember-data": "data", "ember-mp": "mp"}


def _not_installed(module: str, dist: str) -> str:
    """The message of the ImportError for a component whose distribution is missing."""
    return (
        f"{module} is provided by the {dist} distribution, which is not installed. From ember's "
        f"source tree: pip install ./packages/{_FOLDERS[dist]} (from a package index that has "
        f"it: pip install {dist})"
    )


def __getattr__(name: str):
    if name in _COMPONENTS:
        module, dist = _COMPONENTS[name]
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name is not None and not module.startswith(e.name) and e.name != module:
                raise
            raise ImportError(_not_installed(f"ember.{name}", dist)) from None
        globals()[name] = mod
        return mod
    raise AttributeError(f"module 'ember' has no attribute '{name}'")
