"""ember: a PyTorch-style deep-learning framework. This distribution (ember-tensor) is the core:
n-d tensors with PyTorch's API over a C++ engine, usable alone as a NumPy replacement.

The other components live in their own distributions and appear here lazily, as in torch:
``ember.autograd`` and ``ember.func`` (ember-autograd), ``ember.nn`` / ``ember.optim`` /
``ember.distributions`` / ``ember.fx`` / ``ember.compile`` (ember-nn), ``ember.utils.data``
(ember-data), ``ember.multiprocessing`` and ``ember.distributed`` (ember-mp).
``ember.utils`` itself is the core's (``ember.utils.safetensors``), a namespace the other
distributions extend, and so is ``ember.cuda`` (imported on first touch too).
"""

# The names come from the core by `from ember._C import *` (see __all__ at the end):
# ruff: noqa: F405

import importlib
import importlib.util
import math as _math
import os
from pkgutil import extend_path

# Other ember-* distributions install sub-packages into this namespace, possibly from other
# directories (editable installs): let the import system find them all.
__path__ = extend_path(__path__, __name__)

from ember import _C  # noqa: E402
from ember._C import *  # noqa: E402,F401,F403
from ember._C import Tensor, dtype  # noqa: E402,F401
from ember._composite_ops.creation import asarray, frombuffer  # noqa: E402,F401
from ember._composite_ops.histograms import histogramdd  # noqa: E402,F401
from ember._composite_ops.linalg_forms import pca_lowrank, svd_lowrank  # noqa: E402,F401
from ember._composite_ops.numeric import gradient  # noqa: E402,F401
from ember._composite_ops.varargs import (  # noqa: E402,F401  (torch's Python functions over varargs)
    block_diag,
    cartesian_prod,
    chain_matmul,
    is_floating_point,
    is_signed,
    is_storage,
    is_tensor,
    numel,
    unravel_index,
)
from ember._device import Size, _make_device, device, layout, strided  # noqa: E402,F401
from ember._grad_mode import (  # noqa: E402,F401
    enable_grad,
    inference_mode,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ember._lobpcg import lobpcg  # noqa: E402,F401  (torch's, written in Python as torch's is)
from ember._memory_format import (  # noqa: E402,F401
    channels_last,
    channels_last_3d,
    contiguous_format,
    legacy_contiguous_format,
    memory_format,
    preserve_format,
)
from ember._padding import pad as _pad  # noqa: E402,F401
from ember._shape import *  # noqa: E402,F401,F403
from ember._shape import install as _install_shape_methods  # noqa: E402
from ember._sorting import allclose, diff, equal, isclose, msort  # noqa: E402,F401
from ember._sorting import install as _install_sorting  # noqa: E402
from ember._spectral import istft, stft  # noqa: E402,F401  (torch.stft / torch.istft)
from ember._tensor_methods import install as _install_methods  # noqa: E402
from ember._tensor_methods import refuse_out as _refuse_out  # noqa: E402
from ember._type_info import finfo, iinfo  # noqa: E402,F401
from ember.torch_version import TorchVersion as _TorchVersion  # noqa: E402

# a str that compares as a version: ember.__version__ >= (0, 1), as torch.__version__
__version__ = _TorchVersion("0.1.0")

# Python-level dtype aliases, as torch has them.
float = float32  # noqa: A001,F405
double = float64  # noqa: F405
half = float16  # noqa: F405
cfloat = complex64  # noqa: F405
cdouble = complex128  # noqa: F405
int = int32  # noqa: A001,F405
long = int64  # noqa: F405
short = int16  # noqa: F405
bool = _C.bool  # noqa: A001

# torch's constants (torch.pi, ...): Python floats; newaxis is None, as NumPy's
e, pi, inf, nan, newaxis = _math.e, _math.pi, _math.inf, _math.nan, None

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

# Spelled out (rather than a loop over linalg.TOP_LEVEL) so that type checkers see the names.
det, logdet, slogdet, inverse = linalg._det, linalg._logdet, linalg.slogdet, linalg._inverse
pinverse, svd, qr = linalg._pinverse, linalg._legacy_svd, linalg._legacy_qr
cross = linalg._legacy_cross
cholesky, cholesky_solve = linalg._legacy_cholesky, linalg._cholesky_solve
matrix_power, norm = linalg.matrix_power, linalg._legacy_norm
geqrf, orgqr, ormqr = linalg._geqrf, linalg.householder_product, linalg._ormqr
linalg._install(Tensor)
_refuse_out(Tensor)  # last: after every module above has installed its methods


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


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **kwargs):
    """Loads a checkpoint written by ember.save or torch.save; see ember.serialization."""
    from ember import serialization

    # resolved here (torch's environment variables) so that a warning names the caller's line
    weights_only = serialization._weights_only_setting(weights_only)
    return serialization.load(f, map_location, pickle_module, weights_only=weights_only,
                              mmap=mmap, **kwargs)


# Mixed precision (ember.amp) and the process-wide numerical settings, under torch's top-level
# names. ember.amp registers the core's autocast hook when imported.
from ember._global_flags import (  # noqa: E402,F401
    are_deterministic_algorithms_enabled,
    get_deterministic_debug_mode,
    get_float32_matmul_precision,
    get_num_interop_threads,
    has_lapack,
    has_mkl,
    has_openmp,
    has_spectral,
    init_num_threads,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    is_deterministic_algorithms_warn_only_enabled,
    is_distributed,
    is_warn_always_enabled,
    set_anomaly_enabled,
    set_deterministic_debug_mode,
    set_float32_matmul_precision,
    set_num_interop_threads,
    set_warn_always,
    typename,
    use_deterministic_algorithms,
)
from ember._stream import Event, Stream  # noqa: E402,F401  (torch.Stream, torch.Event)
from ember.amp.autocast_mode import (  # noqa: E402,F401
    autocast,
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    get_autocast_cpu_dtype,
    get_autocast_dtype,
    get_autocast_gpu_dtype,
    is_autocast_available,
    is_autocast_cache_enabled,
    is_autocast_cpu_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_cpu_dtype,
    set_autocast_cpu_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
    set_autocast_gpu_dtype,
)
from ember.amp.grad_scaler import GradScaler  # noqa: E402,F401  (torch.GradScaler)

# The core builds these Python objects for Tensor.device / Tensor.size() / Tensor.layout.
_C._make_device, _C.Size, _C.strided = _make_device, Size, strided


def set_default_device(device):
    """The device of the factory functions (``zeros``, ``ones``, ``rand``, ``tensor``, ``arange``,
    ...) called without ``device=``, as torch's; None goes back to the CPU. The ``*_like``
    factories and the ``new_*`` methods keep their input's device. ``with ember.device(d):``
    sets it for a block."""
    _C._set_default_device(device)


def get_default_device():
    """The device the factories create tensors on when given none: the CPU unless
    ``set_default_device`` (or a ``with ember.device(...)`` block) says otherwise."""
    d = _C._get_default_device()
    return _make_device("cpu") if d is None else d


def thread_safe_generator():
    """The generator a DataLoader *thread* worker's random calls should use (torch's), or None
    where the global generator is the right one. ember's DataLoader workers are processes, each
    with its own seeded global generator (as torch's process workers), so this is always None
    here: random calls then use the global generator, in a worker and in the main process."""
    return None


def get_device_module(device=None):
    """The module of a device type (ember.cuda for "cuda", ember.cpu for "cpu"); without an
    argument, the current accelerator's (CUDA when a GPU is usable), else ember.cpu."""
    import importlib

    from ember._device import device as device_class

    if device is None:
        kind = "cuda" if _C._cuda_is_available() else "cpu"
    elif hash(device) is None or not isinstance(device, (str, device_class)):
        # (torch looks the device up in a dict first: an unhashable one is a TypeError)
        raise RuntimeError(f"Invalid value of device '{device}', expect ember.device, str, or "
                           "None")
    else:
        kind = device.type if isinstance(device, device_class) else device_class(device).type
    if kind not in ("cpu", "cuda"):
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as "
                           f"'ember.{kind}'.")
    return importlib.import_module(f"ember.{kind}")


def _locate_openblas() -> str:
    """Path of the OpenBLAS shipped by scipy-openblas32, found without importing it."""
    spec = importlib.util.find_spec("scipy_openblas32")
    if spec is None or not spec.submodule_search_locations:
        return "libscipy_openblas.so"
    base = list(spec.submodule_search_locations)[0]
    return os.path.join(base, "lib", "libscipy_openblas.so")


_C._set_blas_library(_locate_openblas())  # loaded lazily, on the first matrix product


def _locate_onednn() -> str:
    """Where oneDNN may be, tried in order (colon-separated): $EMBER_ONEDNN_LIBRARY, then the
    lib/ folder of this environment and of the user's base, where the onednn-cpu-gomp wheel puts
    libdnnl.so.3, then the system's search. Nothing is opened here."""
    import sys

    candidates = [os.environ.get("EMBER_ONEDNN_LIBRARY", "")]
    user_base = getattr(sys.modules.get("site"), "USER_BASE", None)
    for prefix in (sys.prefix, user_base):
        if prefix:
            candidates.append(os.path.join(prefix, "lib", "libdnnl.so.3"))
    candidates.append("libdnnl.so.3")
    return ":".join(c for c in candidates if c and ":" not in c)


_C._set_onednn_library(_locate_onednn())  # loaded lazily, on the first float32 convolution


def _locate_cuda_libraries() -> dict[str, list[str]]:
    """CUDA libraries to try before the system's, per library: $EMBER_CUDA_RUNTIME /
    $EMBER_NVRTC, then those of the nvidia-* wheels (nvidia/<name>/lib/libcudart.so.N and
    libnvrtc.so.N, as CuPy installs them), found without importing anything."""
    import glob
    import sys

    found: dict[str, list[str]] = {}
    for stem, env in (("libcudart", "EMBER_CUDA_RUNTIME"), ("libnvrtc", "EMBER_NVRTC")):
        found[stem] = [os.environ[env]] if os.environ.get(env) else []
    for entry in sys.path:
        base = os.path.join(entry or ".", "nvidia")
        if os.path.isdir(base):
            for stem, paths in found.items():
                paths += sorted(glob.glob(os.path.join(base, "*", "lib", stem + ".so.*")),
                                reverse=True)
    return found


# libcudart itself is loaded on the first ember.cuda call (dlopen): one build, with or without GPU;
# libnvrtc (the CUDA elementwise kernels are compiled at run time) on the first such op.
_cuda_libraries = _locate_cuda_libraries()
_C._cuda_set_runtime_candidates(_cuda_libraries["libcudart"])
_C._cuda_set_nvrtc_candidates(_cuda_libraries["libnvrtc"])
del _cuda_libraries

# Components from other distributions, imported on first touch so `import ember` stays fast.
_COMPONENTS = {
    "autograd": ("ember.autograd", "ember-autograd"),
    "func": ("ember.func", "ember-autograd"),
    "nn": ("ember.nn", "ember-nn"),
    "optim": ("ember.optim", "ember-nn"),
    "distributions": ("ember.distributions", "ember-nn"),
    "fx": ("ember.fx", "ember-nn"),
    "compiler": ("ember.compiler", "ember-nn"),
    "_dynamo": ("ember._dynamo", "ember-nn"),
    "_inductor": ("ember._inductor", "ember-nn"),
    "utils": ("ember.utils", "ember-tensor"),
    "cuda": ("ember.cuda", "ember-tensor"),  # ember.utils.data comes from ember-data
    "cpu": ("ember.cpu", "ember-tensor"),
    "backends": ("ember.backends", "ember-tensor"),
    "quasirandom": ("ember.quasirandom", "ember-tensor"),
    "serialization": ("ember.serialization", "ember-tensor"),
    "amp": ("ember.amp", "ember-tensor"),
    "accelerator": ("ember.accelerator", "ember-tensor"),
    "testing": ("ember.testing", "ember-tensor"),
    "fft": ("ember.fft", "ember-tensor"),
    "library": ("ember.library", "ember-tensor"),
    "random": ("ember.random", "ember-tensor"),
    "functional": ("ember.functional", "ember-tensor"),
    "signal": ("ember.signal", "ember-tensor"),
    "version": ("ember.version", "ember-tensor"),
    "torch_version": ("ember.torch_version", "ember-tensor"),
    "profiler": ("ember.profiler", "ember-autograd"),
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
    if name == "vmap":  # torch.vmap is torch.func.vmap
        return __getattr__("func").vmap
    if name == "compile":  # torch.compile is torch._dynamo's optimize
        return __getattr__("_dynamo").optimize
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
    raise AttributeError(_missing(name))


def _missing(name: str) -> str:
    """The message for a top-level name ember lacks: whether torch has it, and if ember leaves
    it out on purpose, why (ember/_torch_names.py, generated from torch's names)."""
    message = f"module 'ember' has no attribute '{name}'"
    if name.startswith("_"):  # private names and protocol probes (submodules being imported)
        return message
    _torch_names = importlib.import_module("ember._torch_names")

    if name in _torch_names.LEFT_OUT:
        return (f"{message}: torch.{name} is left out of ember on purpose "
                f"({_torch_names.LEFT_OUT[name]})")
    if name in _torch_names.NAMES:
        return f"{message}: ember does not implement torch.{name} yet"
    return message


# --- __all__: generated by tools/gen_public_surface.py; do not edit by hand ---
__all__ = [
    "AcceleratorError", "Event", "Generator", "GradScaler", "OutOfMemoryError", "Size", "Stream",
    "Tensor", "UntypedStorage", "abs", "abs_", "absolute", "acos", "acos_", "acosh", "acosh_",
    "adaptive_avg_pool1d", "adaptive_avg_pool1d_backward", "adaptive_avg_pool2d",
    "adaptive_avg_pool2d_backward", "adaptive_avg_pool3d", "adaptive_avg_pool3d_backward",
    "adaptive_max_pool1d", "adaptive_max_pool1d_backward", "adaptive_max_pool2d",
    "adaptive_max_pool2d_backward", "adaptive_max_pool3d", "adaptive_max_pool3d_backward", "add",
    "add_", "addbmm", "addbmm_", "addcdiv", "addcmul", "addmm", "addmm_", "addmv", "addmv_",
    "addr", "adjoint", "all", "allclose", "amax", "amin", "aminmax", "amp", "angle", "angle_",
    "any", "arange", "arccos", "arccos_", "arccosh", "arccosh_", "arcsin", "arcsin_", "arcsinh",
    "arcsinh_", "arctan", "arctan2", "arctan_", "arctanh", "arctanh_",
    "are_deterministic_algorithms_enabled", "argmax", "argmin", "argsort", "argwhere",
    "as_strided", "as_strided_", "as_strided_scatter", "as_tensor", "asarray", "asin", "asin_",
    "asinh", "asinh_", "atan", "atan2", "atan2_", "atan_", "atanh", "atanh_", "atleast_1d",
    "atleast_2d", "atleast_3d", "autocast", "autocast_decrement_nesting",
    "autocast_increment_nesting", "avg_pool1d", "avg_pool1d_backward", "avg_pool2d",
    "avg_pool2d_backward", "avg_pool3d", "avg_pool3d_backward", "baddbmm", "baddbmm_",
    "bartlett_window", "bernoulli", "bfloat16", "bincount", "binomial", "bitwise_and",
    "bitwise_and_", "bitwise_left_shift", "bitwise_left_shift_", "bitwise_not", "bitwise_not_",
    "bitwise_or", "bitwise_or_", "bitwise_right_shift", "bitwise_right_shift_", "bitwise_xor",
    "bitwise_xor_", "blackman_window", "block_diag", "bmm", "bool", "broadcast_shapes",
    "broadcast_tensors", "broadcast_to", "bucketize", "can_cast", "cartesian_prod", "cat",
    "cdist", "cdouble", "ceil", "ceil_", "celu", "celu_", "cfloat", "chain_matmul",
    "channels_last", "channels_last_3d", "cholesky", "cholesky_inverse", "cholesky_solve",
    "chunk", "clamp", "clamp_", "clamp_max", "clamp_max_", "clamp_min", "clamp_min_",
    "clear_autocast_cache", "clip", "clip_", "clone", "column_stack", "combinations", "complex",
    "complex128", "complex64", "concat", "concatenate", "conj", "conj_physical", "conj_physical_",
    "constant_pad_nd", "contiguous_format", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "convolution", "convolution_backward", "copysign",
    "copysign_", "corrcoef", "cos", "cos_", "cosh", "cosh_", "cosine_similarity", "count_nonzero",
    "cov", "cross", "cummax", "cummin", "cumprod", "cumprod_", "cumsum", "cumsum_",
    "cumulative_trapezoid", "default_generator", "deg2rad", "deg2rad_", "det", "detach",
    "detach_", "device", "diag", "diag_embed", "diagflat", "diagonal", "diagonal_scatter", "diff",
    "digamma", "digamma_", "dist", "div", "div_", "divide", "dot", "double", "dsplit", "dstack",
    "dtype", "e", "einsum", "embedding", "embedding_backward", "embedding_dense_backward",
    "empty", "empty_like", "empty_permuted", "empty_strided", "enable_grad", "eq", "eq_", "equal",
    "erf", "erf_", "erfc", "erfc_", "erfinv", "erfinv_", "exp", "exp2", "exp2_", "exp_", "expm1",
    "expm1_", "extend_path", "eye", "fill", "fill_", "finfo", "fix", "fix_", "flatten", "flip",
    "fliplr", "flipud", "float", "float16", "float32", "float64", "float_power", "floor",
    "floor_", "floor_divide", "floor_divide_", "fmax", "fmax_", "fmin", "fmin_", "fmod", "fmod_",
    "frac", "frac_", "frexp", "frobenius_norm", "from_dlpack", "from_numpy", "frombuffer", "full",
    "full_like", "gather", "gcd", "gcd_", "ge", "ge_", "gelu", "gelu_backward", "geqrf", "ger",
    "get_autocast_cpu_dtype", "get_autocast_dtype", "get_autocast_gpu_dtype",
    "get_default_device", "get_default_dtype", "get_deterministic_debug_mode", "get_device",
    "get_device_module", "get_float32_matmul_precision", "get_num_interop_threads",
    "get_num_threads", "get_printoptions", "get_rng_state", "gradient", "greater",
    "greater_equal", "gt", "gt_", "half", "hamming_window", "hann_window", "hardshrink",
    "hardtanh", "hardtanh_", "hardtanh_backward", "has_lapack", "has_mkl", "has_openmp",
    "has_spectral", "hash_tensor", "heaviside", "histc", "histogram", "histogramdd", "hsplit",
    "hstack", "hypot", "hypot_", "i0", "i0_", "igamma", "igamma_", "igammac", "igammac_", "iinfo",
    "imag", "index_add", "index_add_", "index_copy", "index_copy_", "index_fill", "index_fill_",
    "index_put", "index_put_", "index_reduce", "index_select", "inf", "inference_mode",
    "init_num_threads", "initial_seed", "inner", "int", "int16", "int32", "int64", "int8",
    "inverse", "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "is_autocast_available",
    "is_autocast_cache_enabled", "is_autocast_cpu_enabled", "is_autocast_enabled", "is_complex",
    "is_conj", "is_deterministic_algorithms_warn_only_enabled", "is_distributed",
    "is_floating_point", "is_grad_enabled", "is_inference", "is_inference_mode_enabled", "is_neg",
    "is_nonzero", "is_same_size", "is_signed", "is_storage", "is_tensor",
    "is_warn_always_enabled", "isclose", "isfinite", "isin", "isinf", "isnan", "isneginf",
    "isposinf", "isreal", "istft", "kaiser_window", "kron", "kthvalue", "layout", "lcm", "lcm_",
    "ldexp", "ldexp_", "le", "le_", "legacy_contiguous_format", "lerp", "less", "less_equal",
    "lgamma", "lgamma_", "linalg", "linspace", "load", "lobpcg", "log", "log10", "log10_",
    "log1p", "log1p_", "log2", "log2_", "log_", "log_softmax", "logaddexp", "logaddexp2",
    "logaddexp2_", "logaddexp_", "logcumsumexp", "logdet", "logical_and", "logical_and_",
    "logical_not", "logical_not_", "logical_or", "logical_or_", "logical_xor", "logical_xor_",
    "logit", "logit_", "logspace", "logsumexp", "long", "lt", "lt_", "lu_unpack", "manual_seed",
    "masked_fill", "masked_fill_", "masked_scatter", "masked_scatter_", "masked_select", "matmul",
    "matrix_exp", "matrix_power", "max", "max_pool1d", "max_pool1d_with_indices",
    "max_pool1d_with_indices_backward", "max_pool2d", "max_pool2d_with_indices",
    "max_pool2d_with_indices_backward", "max_pool3d", "max_pool3d_with_indices",
    "max_pool3d_with_indices_backward", "maximum", "maximum_", "mean", "median", "memory_format",
    "meshgrid", "min", "minimum", "minimum_", "mm", "mode", "moveaxis", "movedim", "msort", "mul",
    "mul_", "multinomial", "multiply", "mv", "mvlgamma", "nan", "nan_to_num", "nan_to_num_",
    "nanmean", "nanmedian", "nanquantile", "nansum", "narrow", "narrow_copy", "native_batch_norm",
    "native_batch_norm_backward", "native_layer_norm", "native_layer_norm_backward", "ne", "ne_",
    "neg", "neg_", "negative", "negative_", "newaxis", "nextafter", "nll_loss", "nll_loss2d",
    "nll_loss_backward", "nll_loss_forward", "nll_loss_nd", "no_grad", "nonzero",
    "nonzero_static", "norm", "normal", "not_equal", "nuclear_norm", "numel", "ones", "ones_like",
    "orgqr", "ormqr", "outer", "pairwise_distance", "pca_lowrank", "pdist", "permute", "pi",
    "pinverse", "poisson", "polar", "polygamma", "positive", "pow", "pow_", "preserve_format",
    "prod", "promote_types", "put", "qr", "quantile", "rad2deg", "rad2deg_", "rand", "rand_like",
    "randint", "randint_like", "randn", "randn_like", "randperm", "ravel", "real", "reciprocal",
    "reciprocal_", "relu", "relu_", "remainder", "remainder_", "renorm", "repeat_interleave",
    "reshape", "resize_as_", "resolve_conj", "resolve_neg", "result_type", "roll", "rot90",
    "round", "round_", "row_stack", "rsqrt", "rsqrt_", "rsub", "save", "scalar_tensor", "scatter",
    "scatter_", "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_",
    "searchsorted", "seed", "select", "select_scatter", "selu", "selu_", "set_anomaly_enabled",
    "set_autocast_cache_enabled", "set_autocast_cpu_dtype", "set_autocast_cpu_enabled",
    "set_autocast_dtype", "set_autocast_enabled", "set_autocast_gpu_dtype", "set_default_device",
    "set_default_dtype", "set_deterministic_debug_mode", "set_float32_matmul_precision",
    "set_flush_denormal", "set_grad_enabled", "set_num_interop_threads", "set_num_threads",
    "set_printoptions", "set_rng_state", "set_warn_always", "sgn", "short", "sigmoid", "sigmoid_",
    "sign", "sign_", "signbit", "sin", "sin_", "sinc", "sinc_", "sinh", "sinh_", "slice_scatter",
    "slogdet", "softmax", "sort", "special", "split", "split_with_sizes", "sqrt", "sqrt_",
    "square", "square_", "squeeze", "stack", "std", "std_mean", "stft", "strided", "sub", "sub_",
    "subtract", "sum", "svd", "svd_lowrank", "swapaxes", "swapdims", "t", "take",
    "take_along_dim", "tan", "tan_", "tanh", "tanh_", "tensor", "tensor_split", "tensordot",
    "thread_safe_generator", "threshold", "threshold_", "threshold_backward", "tile", "to_dlpack",
    "topk", "torch_version", "trace", "transpose", "trapezoid", "trapz", "tril", "tril_",
    "tril_indices", "triu", "triu_", "triu_indices", "true_divide", "trunc", "trunc_", "typename",
    "uint16", "uint32", "uint64", "uint8", "unbind", "unflatten", "unique", "unique_consecutive",
    "unravel_index", "unsqueeze", "use_deterministic_algorithms", "vander", "var", "var_mean",
    "vdot", "view_as_complex", "view_as_real", "vsplit", "vstack", "where", "xlogy", "xlogy_",
    "zero_", "zeros", "zeros_like",
]
# --- end of generated __all__ ---
