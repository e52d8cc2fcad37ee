"""ember.fft: torch.fft's discrete Fourier transforms and their helpers.

The transforms (as torch.fft, with its signatures, dtype rules, normalizations and error messages):

- complex to complex: ``fft``, ``ifft``, ``fft2``, ``ifft2``, ``fftn``, ``ifftn`` (a real input is
  transformed as a complex one with zero imaginary parts);
- real to half-spectrum: ``rfft``, ``rfft2``, ``rfftn`` and the inverse of a Hermitian signal,
  ``ihfft``, ``ihfft2``, ``ihfftn`` (complex results, the last dim cut to n // 2 + 1);
- half-spectrum to real: ``irfft``, ``irfft2``, ``irfftn`` and ``hfft``, ``hfft2``, ``hfftn``
  (real results of n points, n = 2 * (m - 1) by default).

``n`` / ``s`` zero-pads or truncates the input along each transformed dim (``-1`` in ``s``: that
dim's own size); ``dim`` picks the dims (``s`` alone: the last ``len(s)``); ``norm`` is ``None`` or
``"backward"`` (no scale forward, 1/n backward), ``"ortho"`` (1/sqrt(n) both ways) or
``"forward"`` (1/n forward). Types: float32 -> complex64, float64 -> complex128, integer and bool
inputs are first promoted to the default float dtype; float16 and bfloat16 raise as torch's CPU
build does. ``out=`` follows torch's rules (resized when its shape differs, cast when allowed).

The helpers, real-valued: ``fftfreq``, ``rfftfreq``, ``fftshift``, ``ifftshift``.

A complex transform of a power-of-two length (>= 64 points) over the last dim, or (up to 1024
points) down an inner dim, and an rfft of >= 256 points over the last dim, runs in the core's
FFT kernel (``_C._fft_c2c`` / ``_C._fft_r2c``: Stockham FFTs in SIMD lanes, vectorised per CPU;
``_core_kernel_takes`` says when). Other CPU transforms
are computed by pocketfft on zero-copy ``Tensor.numpy()`` views, in the input's precision
(complex64 stays complex64), straight into the memory that the result tensor wraps:
SciPy's C++ pocketfft when SciPy is installed (SIMD over rows, ember's thread count), else
NumPy's; CUDA tensors go through CuPy's cuFFT (``cupy.fft``) when CuPy is installed. Every
transform is differentiable (torch's convention for complex gradients; double backward too):
a transform is a plan of steps, and its gradient is the adjoint plan (``_adjoint``).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

import ember
from ember import _C

_from_numpy = _C.from_numpy  # (ember.from_numpy, without the module attribute lookup)

__all__ = [
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn",
    "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
    "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn",
    "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

# NumPy (>= 2.0) implements numpy.fft's functions with these generalized ufuncs: called directly
# they skip numpy.fft's per-call argument handling (half of the time of a small transform), and
# with a float32 factor they compute complex64 in single precision (numpy.fft.fft's own default
# factor, the int 1, takes complex64 through the complex128 loop). Where they are missing
# (NumPy 1.x), the public numpy.fft functions are used instead (in double; cast back).
try:
    from numpy.fft import _pocketfft_umath as _pfu
except ImportError:  # NumPy 1.x
    _pfu = None
if _pfu is not None and not all(
        hasattr(_pfu, f) for f in ("fft", "ifft", "rfft_n_even", "rfft_n_odd", "irfft")):
    _pfu = None

# SciPy, where installed, brings pocketfft's C++ version (scipy.fft's engine): it transforms
# several rows at once in SIMD lanes and splits batches over threads, where NumPy's C port runs
# one row at a time (a batch of 1024 transforms of 64 points: 80 us against 890). Its binding,
# called directly as NumPy's gufuncs are above, takes the normalisation as ember's plans encode
# it (0: none, 1: 1/sqrt(n), 2: 1/n) and writes into a given array. Looked up on the first
# transform (importing SciPy costs about 0.1 s), so `import ember` stays light.
_POCKETFFT = []  # [module or None], filled on first use


def _pocketfft():
    if not _POCKETFFT:
        try:
            from scipy.fft._pocketfft import pypocketfft as pp
        except Exception:  # not installed, or a SciPy without this binding
            pp = None
        if pp is not None and not all(hasattr(pp, f) for f in ("c2c", "r2c", "c2r")):
            pp = None
        _POCKETFFT.append(pp)
    return _POCKETFFT[0]

# ---- dtypes ----

_NP = {
    ember.float32: np.dtype(np.float32),
    ember.float64: np.dtype(np.float64),
    ember.complex64: np.dtype(np.complex64),
    ember.complex128: np.dtype(np.complex128),
}
_TO_COMPLEX = {ember.float32: ember.complex64, ember.float64: ember.complex128,
               ember.complex64: ember.complex64, ember.complex128: ember.complex128}
_TO_REAL = {ember.float32: ember.float32, ember.float64: ember.float64,
            ember.complex64: ember.float32, ember.complex128: ember.float64}
_NP_REAL = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64,
            np.dtype(np.float32): np.float32, np.dtype(np.float64): np.float64}
_NP_COMPLEX = {np.dtype(np.float32): np.dtype(np.complex64),
               np.dtype(np.float64): np.dtype(np.complex128),
               np.dtype(np.complex64): np.dtype(np.complex64),
               np.dtype(np.complex128): np.dtype(np.complex128)}


def _promote(dtype):
    """torch's promote_type_fft on the CPU: integers and bool to the default float dtype; only
    float32 / float64 / complex64 / complex128 are transformed."""
    if dtype in _NP:
        return dtype
    if dtype.is_floating_point or dtype.is_complex:
        raise RuntimeError(f"Unsupported dtype {dtype._torch_name}")
    return ember.get_default_dtype()


# ---- arguments ----

def _check_input(name, input):
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"fft_{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def _int_arg(name, arg, value):
    if type(value) is int:
        return value
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"fft_{name}(): argument '{arg}' must be int, not {type(value).__name__}")
    return operator.index(value)


def _ints_arg(name, arg, value):
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    if isinstance(value, Sequence) and not isinstance(value, str):
        if all(type(v) is int or (hasattr(v, "__index__") and not isinstance(v, bool))
               for v in value):
            return tuple(operator.index(v) for v in value)
    raise TypeError(f"fft_{name}(): argument '{arg}' must be tuple of ints, not "
                    f"{type(value).__name__}")


def _check_norm(name, norm):
    if norm is not None and not isinstance(norm, str):
        raise TypeError(f"fft_{name}(): argument 'norm' must be str, not {type(norm).__name__}")


def _args_1d(name, input, n, dim, norm):
    """The checks of torch's argument parser for the 1-d transforms."""
    if type(dim) is not int:
        dim = _int_arg(name, "dim", dim)
    if n is not None and type(n) is not int:
        n = _int_arg(name, "n", n)
    _check_norm(name, norm)
    _check_input(name, input)
    return n, dim


# A step's scale: 0 none, 1 by 1/sqrt(n), 2 by 1/n. torch's norm_from_string, for a transform
# that is "forward" (fft, rfft, hfft) or not (ifft, irfft, ihfft).
_SCALE_FORWARD = {None: 0, "backward": 0, "ortho": 1, "forward": 2}
_SCALE_BACKWARD = {None: 2, "backward": 2, "ortho": 1, "forward": 0}


def _scale(norm, forward):
    table = _SCALE_FORWARD if forward else _SCALE_BACKWARD
    scale = table.get(norm)
    if scale is None:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return scale


def _wrap_dim(dim, ndim):
    if -ndim <= dim < ndim:
        return dim if dim >= 0 else dim + ndim
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                     f"{ndim - 1}], but got {dim})")


def _check_points(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _shape_and_dims(input, s, dim):
    """torch's canonicalize_fft_shape_and_dim_args: the signal size along each transformed dim."""
    ndim = input.dim()
    sizes = tuple(input.shape)  # (ember.Size's indexing is slower)
    dims = None
    if dim is not None:
        dims = [_wrap_dim(d, ndim) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        if dims is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{ndim} dimensions.")
        if dims is None:
            dims = list(range(ndim - len(s), ndim))
        shape = [sizes[d] if n == -1 else n for n, d in zip(s, dims)]
    elif dims is None:
        dims = list(range(ndim))
        shape = list(sizes)
    else:
        shape = [sizes[d] for d in dims]
    for n in shape:
        _check_points(n)
    return shape, dims


def _c2r_shape_and_dims(fname, input, s, dim):
    """torch's canonicalize_fft_c2r_shape_and_dim_args: also the size of the real output's last
    transformed dim (2 * (m - 1) by default)."""
    shape, dims = _shape_and_dims(input, s, dim)
    if not shape:
        raise RuntimeError(f"{fname} must transform at least one axis")
    last = 2 * (input.size(dims[-1]) - 1) if s is None or s[-1] == -1 else shape[-1]
    _check_points(last)
    shape[-1] = last  # the c2r step pads / cuts its input to last // 2 + 1 itself
    return shape, dims


# ---- execution ----
# A plan is a list of steps (op, axis, n, scale): op "fft" / "ifft" (complex -> complex, the
# input padded or cut to n), "rfft" (real n -> complex n // 2 + 1), "irfft" (complex n // 2 + 1
# -> real n) or "conj"; the scale is applied with n.

_NUMPY_NORM = {
    "fft": ("backward", "ortho", "forward"),
    "rfft": ("backward", "ortho", "forward"),
    "ifft": ("forward", "ortho", "backward"),
    "irfft": ("forward", "ortho", "backward"),
}


def _out_shape(shape, op, axis, n):
    shape = list(shape)
    shape[axis] = n // 2 + 1 if op == "rfft" else n
    return shape


_FACTORS: dict = {}  # (real dtype, scale, n) -> the factor as a NumPy scalar of that dtype


def _factor(real, scale, n):
    key = (real, scale, n)
    f = _FACTORS.get(key)
    if f is None:
        # In the real dtype of the data, so that the gufunc picks the loop of that precision
        # (a float64 factor would take complex64 data through the complex128 loop).
        f = real(1.0 if scale == 0 else 1.0 / math.sqrt(n) if scale == 1 else 1.0 / n)
        if len(_FACTORS) < 1024:
            _FACTORS[key] = f
    return f


def _ufunc_step(a, op, axis, n, scale, o):
    """One transform with pocketfft's gufunc, into o (a new array if None), in a's precision."""
    dtype = a.dtype
    real = _NP_REAL[dtype]
    if op == "fft":
        ufunc, odt, m = _pfu.fft, dtype, n
    elif op == "ifft":
        ufunc, odt, m = _pfu.ifft, dtype, n
    elif op == "rfft":
        ufunc = _pfu.rfft_n_even if n % 2 == 0 else _pfu.rfft_n_odd
        odt, m = _NP_COMPLEX[dtype], n // 2 + 1
    else:
        ufunc, odt, m = _pfu.irfft, real, n
    shape = a.shape
    if o is None:
        o = np.empty(shape[:axis] + (m,) + shape[axis + 1:], odt)
    if axis == len(shape) - 1:  # the gufunc's default core dims: the last
        ufunc(a, _factor(real, scale, n), out=o)
    else:
        ufunc(a, _factor(real, scale, n), axes=[(axis,), (), (axis,)], out=o)
    return o


def _run_pocketfft(pp, a, plan, dest):
    """The plan with SciPy's pocketfft, and the core's kernel for the steps it takes
    (_core_steps_first): consecutive complex steps of one direction and scale over dims already of
    their length become one multi-dim call; the last call writes into dest when given, a complex
    step after the first into the array the step before made."""
    threads = _C.get_num_threads()
    plan = _core_steps_first(plan, a.shape)
    i, last = 0, len(plan)
    fresh = False  # whether a is an array of our own (else the input's memory)
    while i < last:
        op, axis, n, scale = plan[i]
        if op == "conj":
            a = np.conjugate(a, out=a if fresh else None)
            fresh = True
            i += 1
            continue
        m = n // 2 + 1 if op == "irfft" else n  # the points this step reads
        if a.shape[axis] != m:
            fresh = fresh or a.shape[axis] < m  # (a cut is a view of what it cuts)
            a = _np_resize(a, axis, m)
        if _core_step(op, a.shape, axis, n) and a.flags.c_contiguous:
            axes = [axis]  # the core steps after it of the same direction and scale: one call
            while (i + len(axes) < last and plan[i + len(axes)][0] == op
                   and plan[i + len(axes)][3] == scale
                   and _core_step(op, a.shape, *plan[i + len(axes)][1:3])
                   and a.shape[plan[i + len(axes)][1]] == plan[i + len(axes)][2]):
                axes.append(plan[i + len(axes)][1])
            a = _C._fft_c2c(_from_numpy(a), axes, scale, op == "fft").numpy()
            fresh = True
            i += len(axes)
            if i == last and dest is not None:
                dest[...] = a
                a = dest
            continue
        axes = [axis]
        if op in ("fft", "ifft"):
            while (i + len(axes) < last and plan[i + len(axes)][0] == op
                   and plan[i + len(axes)][3] == scale
                   and a.shape[plan[i + len(axes)][1]] == plan[i + len(axes)][2]):
                axes.append(plan[i + len(axes)][1])
        i += len(axes)
        o = dest if i == last else None
        if op in ("fft", "ifft"):
            if o is None and fresh:
                o = a
            a = pp.c2c(a, axes, op == "fft", scale, o, threads)
        elif _core_real_step(a.ndim, axis, n):  # rfft or irfft in the core's kernel
            x = _from_numpy(a)
            a = (_C._fft_r2c(x, [axis], scale, True) if op == "rfft"
                 else _C._fft_c2r(x, [axis], scale, n)).numpy()
            if o is not None:
                o[...] = a
                a = o
        elif op == "rfft":
            a = pp.r2c(a, axes, True, scale, o, threads)
        else:
            a = pp.c2r(a, axes, n, False, scale, o, threads)
        fresh = True
    return a


def _core_steps_first(plan, shape):
    """plan with, in each run of consecutive fft / ifft steps (transforms along different dims
    commute), the steps that the core's kernel takes moved first: the pocketfft steps
    after them then run as one call, the last one into the result."""
    core = [_core_step(op, shape, axis, n) for op, axis, n, _ in plan]
    if not any(core) or len(plan) == 1:
        return plan
    out, run = [], []
    for step, takes in zip(plan, core):
        if step[0] in ("fft", "ifft"):
            run.append((not takes, len(run), step))
            continue
        out += [s for *_, s in sorted(run)]
        run = []
        out.append(step)
    return out + [s for *_, s in sorted(run)]


def _np_resize(a, axis, m):
    """a cut or zero-padded to m entries along axis (NumPy)."""
    k = a.shape[axis]
    if k > m:
        return a[(slice(None),) * axis + (slice(0, m),)]
    shape = list(a.shape)
    shape[axis] = m
    r = np.zeros(shape, a.dtype)
    r[(slice(None),) * axis + (slice(0, k),)] = a
    return r


def _run_ufuncs(a, plan, dest, owned):
    """The plan with pocketfft's gufuncs: every step writes into a new array (or dest, for the
    last one). owned: a may be overwritten."""
    last = len(plan) - 1
    for i, (op, axis, n, scale) in enumerate(plan):
        o = dest if i == last else None
        if op == "conj":
            a = np.conjugate(a, out=o if o is not None else a if owned else None)
        else:
            a = _ufunc_step(a, op, axis, n, scale, o)
        owned = True
    return a


def _run_public(xp, a, plan, dest):
    """The plan with numpy.fft's (or cupy.fft's) public functions."""
    for op, axis, n, scale in plan:
        dtype = a.dtype
        if op == "conj":
            a = xp.conj(a)
            continue
        a = getattr(xp.fft, op)(a, n, axis, _NUMPY_NORM[op][scale])
        want = (_NP_REAL[np.dtype(dtype)] if op == "irfft" else _NP_COMPLEX[np.dtype(dtype)])
        if a.dtype != want:  # NumPy 1.x computes in double
            a = a.astype(want)
    if dest is not None:
        dest[...] = a
        return dest
    return a


# The core's own kernel (ops/cpu/fft.cpp, ATen's _fft_c2c) runs a complex transform of a
# power-of-two length where it beats pocketfft (one thread, measured by benchmarks/bench_fft.py):
# - along the last dim, n >= 64 points, any number of rows: its vector rows (SIMD lanes inside
#   each row, a row's planes in L1) take 256 rows of 1024 points in 0.33 ms where pocketfft
#   takes 0.60 and torch's MKL 0.37-0.42; one row of 1024 points 1.1-1.2x torch with the call,
#   1M points 1.1-1.2x;
# - down an inner dim (one with at least 8 contiguous columns after it), 2 to 1024 points: the
#   kernel transforms 16 neighbouring columns in SIMD lanes with no transposition (the first
#   pass of a 1024 x 1024 fft2: 3.3 ms against pocketfft's 5.6; 64 x 4096: 0.23 ms against
#   0.55). Longer columns outgrow the L2 cache and lose (65536 x 16: 7.3 ms against 6.8).
# - rfft along the last dim, n >= 256 points: the kernel's n/2-point complex FFT of the rows'
#   pairs of points (read as complex values, no copy) and a split into the even and odd points'
#   spectra (256 rows of 1024 points: 0.18 ms, pocketfft 0.32, torch 0.20); irfft the other way
#   round (the join, then an n/2-point inverse whose result is the real signal); hfft and
#   ihfft are these steps with a conj. Shorter rows stay with pocketfft.
_CORE_MIN_ROW_POINTS = 64
_CORE_MIN_REAL_POINTS = 256
_REAL_KERNEL_DTYPES = (ember.float32, ember.float64)
_CORE_MAX_COLUMN_POINTS = 1024
_CORE_MIN_COLUMNS = 8


def _core_kernel_applies(input, plan):
    return len(plan) == 1 and _core_kernel_takes(input, *plan[0][:3])


def _core_kernel_takes(input, op, axis, n):
    """Whether the core's kernel runs op over n points of input's dim axis (the conditions
    above; the cheapest refusals first: this runs for every transform)."""
    if n & (n - 1) or input.size(axis) != n:
        return False
    if op == "rfft":
        return _core_real_step(input.dim(), axis, n) and input.dtype in _REAL_KERNEL_DTYPES
    if op not in ("fft", "ifft"):
        return False
    if axis == input.dim() - 1:
        if n < _CORE_MIN_ROW_POINTS:
            return False
    elif not (_core_columns_take(input.shape, axis, n) and input.is_contiguous()):
        return False
    return input.dtype in _TO_COMPLEX


def _core_real_step(ndim, axis, n):
    """Whether the core's kernel runs an rfft or irfft of n points (real) along dim axis of an
    ndim-d tensor: the last dim, a power of two of _CORE_MIN_REAL_POINTS or more."""
    return axis == ndim - 1 and n >= _CORE_MIN_REAL_POINTS and not n & (n - 1)


def _core_step(op, shape, axis, n):
    """Whether a plan's step runs in the core's kernel: a complex transform of a power-of-two n
    along the last dim or down an inner dim that it takes (a contiguous array of this shape)."""
    if op not in ("fft", "ifft") or n & (n - 1):
        return False
    if axis == len(shape) - 1:
        return n >= _CORE_MIN_ROW_POINTS
    return _core_columns_take(shape, axis, n)


def _core_columns_take(shape, axis, n):
    """Whether the core's column kernel runs n points down dim axis of a contiguous array of
    this shape (axis not its last dim)."""
    if not 2 <= n <= _CORE_MAX_COLUMN_POINTS:
        return False
    columns = 1
    for size in shape[axis + 1:]:
        columns *= size
    return columns >= _CORE_MIN_COLUMNS


def _execute(name, input, work, plan, result_dtype, out):
    """Runs plan on input (promoted to the ember dtype `work`) and returns the result tensor, or
    out= filled with it."""
    if input.requires_grad and _C.is_grad_enabled():
        if out is not None:
            raise RuntimeError(f"fft_{name}(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires "
                               "grad.")
        return _transform_function().apply(input, name, work, tuple(plan), result_dtype)
    if input.is_cuda:
        return _execute_cuda(name, input, work, plan, out)
    if _core_kernel_applies(input, plan):
        x = input.detach() if input.requires_grad else input
        op, axis, _, scale = plan[0]
        if op == "rfft":
            result = _C._fft_r2c(x if x.dtype == work else x.to(work), [axis], scale, True)
        else:
            complex_dtype = _TO_COMPLEX[work]
            if x.dtype != complex_dtype:
                x = x.to(complex_dtype)
            result = _C._fft_c2c(x, [axis], scale, op == "fft")
        return result if out is None else _write_out(result, out, name)
    a = (input.detach() if input.requires_grad else input).numpy()  # zero copy
    want = _NP[work]
    if not plan or plan[0][0] != "rfft":
        want = _NP_COMPLEX[want]  # (a real input to a complex transform: as complex)
    owned = a.dtype != want
    if owned:
        a = a.astype(want)
    dest = None
    if out is not None and (out.dtype == result_dtype and not out.is_cuda and not out.requires_grad
                            and out.is_contiguous()
                            and tuple(out.shape) == _result_shape(a.shape, plan)):
        dest = out.numpy()  # the last step writes into out itself (NumPy copies an overlapping a)
    pp = _POCKETFFT[0] if _POCKETFFT else _pocketfft()
    if not plan:  # fftn / ifftn over no dims: a copy of the complex input
        r = a if owned else a.copy()
    elif pp is not None:
        r = _run_pocketfft(pp, a, plan, dest)
    elif len(plan) == 1 and _pfu is not None and plan[0][0] != "conj":
        r = _ufunc_step(a, *plan[0], dest)  # (the common case, without _run_ufuncs's loop)
    elif _pfu is not None:
        r = _run_ufuncs(a, plan, dest, owned)
    else:  # NumPy 1.x
        r = _run_public(np, a, plan, dest)
    if dest is not None and r is dest:
        return out
    result = _from_numpy(r)  # zero copy
    return result if out is None else _write_out(result, out, name)


# ---- gradients ----
# A plan is linear in its input, so its vector-Jacobian product is its adjoint: the steps in
# reverse order, each replaced by its adjoint (torch's fft_c2c/r2c/c2r backward formulas):
#   fft / ifft of n points (a pad or cut of the input to n, a DFT, a scale): the other DFT
#     with the same scale, cut or padded back to the input's length;
#   rfft: the one-sided half padded with zeros to n points, an inverse DFT, the real part;
#   irfft: a one-sided forward DFT of the real gradient, the entries that stand for two
#     frequencies of the Hermitian signal doubled;
#   conj: conj.
# The adjoint runs through the same differentiable transforms, so double backward works.

_TRANSFORM = []  # the autograd Function, made on first use (ember.autograd is imported then)


def _transform_function():
    if not _TRANSFORM:
        from ember.autograd import Function

        class _Transform(Function):
            @staticmethod
            def forward(ctx, x, name, work, plan, result_dtype):
                ctx.shape, ctx.name, ctx.plan = tuple(x.shape), name, plan
                return _execute(name, x.detach(), work, plan, result_dtype, None)

            @staticmethod
            def backward(ctx, grad):
                return (_adjoint(ctx.name, grad, ctx.shape, ctx.plan), None, None, None, None)

        _TRANSFORM.append(_Transform)
    return _TRANSFORM[0]


def _step(name, x, op, axis, n, scale):
    """One transform step on x (complex; real for rfft), differentiable."""
    result = x.dtype if op != "rfft" else _TO_COMPLEX[x.dtype]
    return _execute(name, x, x.dtype, [(op, axis, n, scale)], result, None)


def _resize(x, axis, m):
    """x cut or zero-padded to m entries along axis."""
    k = x.size(axis)
    if k == m:
        return x
    if k > m:
        return x.narrow(axis, 0, m)
    shape = list(x.shape)
    shape[axis] = m - k
    return ember.cat([x, ember.zeros(shape, dtype=x.dtype, device=x.device)], axis)


def _adjoint(name, g, shape, plan):
    shapes = [tuple(shape)]
    for op, axis, n, _ in plan:
        shapes.append(shapes[-1] if op == "conj" else tuple(_out_shape(shapes[-1], op, axis, n)))
    for (op, axis, n, scale), before in zip(reversed(plan), reversed(shapes[:-1])):
        m = before[axis]
        if op == "conj":
            g = ember.conj_physical(g)
        elif op in ("fft", "ifft"):
            g = _resize(_step(name, g, "ifft" if op == "fft" else "fft", axis, n, scale), axis, m)
        elif op == "rfft":
            g = ember.real(_step(name, _resize(g, axis, n), "ifft", axis, n, scale))
            g = _resize(g, axis, m)
        else:  # irfft
            h = _step(name, g, "rfft", axis, n, scale)
            double = n - (n // 2 + 1)  # the frequencies that stand for two of the full signal
            if double > 0:
                w = [1.0] * (n // 2 + 1)
                w[1:1 + double] = [2.0] * double
                view = [1] * h.dim()
                view[axis] = len(w)
                h = h * ember.tensor(w, dtype=g.dtype, device=g.device).reshape(view)
            g = _resize(h, axis, m)
    return g


def _result_shape(shape, plan):
    shape = list(shape)
    for op, axis, n, _ in plan:
        if op != "conj":
            shape = _out_shape(shape, op, axis, n)
    return tuple(shape)


def _execute_cuda(name, input, work, plan, out):  # pragma: no cover - needs a GPU and CuPy
    try:
        import cupy
    except ImportError as e:
        raise RuntimeError("ember.fft on CUDA tensors needs CuPy (its cupy.fft, which calls "
                           "cuFFT); it is not installed") from e
    x = input.detach() if input.requires_grad else input
    with cupy.cuda.Device(x.device.index or 0):
        a = cupy.asarray(x)  # zero copy, through __cuda_array_interface__
        want = _NP[work]
        if not plan or plan[0][0] != "rfft":
            want = _NP_COMPLEX[want]
        a = a.astype(want, copy=False)
        r = a.copy() if not plan else _run_public(cupy, a, plan, None)
        result = ember.from_dlpack(r)
    return result if out is None else _write_out(result, out, name)


def _write_out(result, out, name):
    from ember._shape import _write_out as write_out

    return write_out(result, out, name)


# ---- the 1-d transforms ----

_FAST_DTYPES = {"fft": (ember.complex64, ember.complex128),
                "ifft": (ember.complex64, ember.complex128),
                "irfft": (ember.complex64, ember.complex128),
                "rfft": (ember.float32, ember.float64)}


def _fast_1d(input, dim, op):
    """The usual 1-d call (fft/ifft/irfft of a complex tensor, rfft of a float32/float64 one, on
    the CPU, with no gradient to record, and n, norm and out left to their defaults) straight to
    its engine, without the general path's plan: that bookkeeping was half of a 64-point
    transform's time. None where the call needs the general path (which also raises its
    errors)."""
    if type(input) is not _C.Tensor or type(dim) is not int or input.requires_grad \
            or input.is_cuda or input.dtype not in _FAST_DTYPES.get(op, ()):
        return None
    nd = input.dim()
    d = dim + nd if dim < 0 else dim
    if not 0 <= d < nd:
        return None
    n = input.size(d)
    if n < 1 or op == "irfft" and n < 2:
        return None
    if op == "irfft":  # n real points from n / 2 + 1
        n = 2 * (n - 1)
        if _core_real_step(nd, d, n):
            return _C._fft_c2r(input, [d], 2, n)
    elif _core_kernel_takes(input, op, d, n):
        if op == "rfft":
            return _C._fft_r2c(input, [d], 0, True)
        return _C._fft_c2c(input, [d], 0 if op == "fft" else 2, op == "fft")
    pp = _POCKETFFT[0] if _POCKETFFT else _pocketfft()
    if pp is None:
        return None
    threads = _C.get_num_threads()
    if op == "rfft":
        return _from_numpy(pp.r2c(input.numpy(), (d,), True, 0, None, threads))
    if op == "irfft":
        return _from_numpy(pp.c2r(input.numpy(), (d,), n, False, 2, None, threads))
    forward = op == "fft"
    return _from_numpy(pp.c2c(input.numpy(), (d,), forward, 0 if forward else 2, None, threads))


def _fft_1d(name, forward, input, n, dim, norm, out):
    """fft and ifft: torch's fft_c2c for a complex input, fft_r2c (two-sided) for a real one."""
    if n is None and norm is None and out is None:
        r = _fast_1d(input, dim, name)
        if r is not None:
            return r
    n, dim = _args_1d(name, input, n, dim, norm)
    dtype = input.dtype
    is_complex = dtype.is_complex
    if is_complex:  # torch's fft_c2c
        work = dtype
        if work not in _NP:
            raise RuntimeError(f"Unsupported dtype {dtype._torch_name}")
    else:  # torch's fft_r2c, two-sided
        if out is not None and not out.dtype.is_complex:
            raise RuntimeError(f"{name} expects a complex output tensor, but got "
                               f"{out.dtype._torch_name}")
        work = _promote(dtype)
    d = _wrap_dim(dim, input.dim())
    if n is None:
        n = input.size(d)
    _check_points(n)
    scale = _scale(norm, forward)
    result_dtype = _TO_COMPLEX[work]
    if out is not None:
        if not out.dtype.is_complex:
            raise RuntimeError(f"{name} expects a complex output tensor, but got "
                               f"{out.dtype._torch_name}")
        if not forward and not is_complex and out.dtype != result_dtype:
            raise RuntimeError(f"Found dtype {out.dtype._torch_name} but expected "
                               f"{result_dtype._torch_name}")
    return _execute(name, input, work, [("fft" if forward else "ifft", d, n, scale)],
                    result_dtype, out)


def _r2c_1d(name, forward, input, n, dim, norm, out):
    """rfft (forward) and ihfft: torch's fft_r2c, one-sided."""
    if n is None and norm is None and out is None:
        r = _fast_1d(input, dim, name)
        if r is not None:
            return r
    n, dim = _args_1d(name, input, n, dim, norm)
    dtype = input.dtype
    if dtype.is_complex:
        raise RuntimeError(f"{name} expects a real input tensor, but got {dtype._torch_name}")
    if out is not None and not out.dtype.is_complex:
        raise RuntimeError(f"{name} expects a complex output tensor, but got "
                           f"{out.dtype._torch_name}")
    work = _promote(dtype)
    d = _wrap_dim(dim, input.dim())
    if n is None:
        n = input.size(d)
    _check_points(n)
    scale = _scale(norm, forward)
    result_dtype = _TO_COMPLEX[work]
    plan = [("rfft", d, n, scale)]
    if not forward:
        plan.append(("conj", d, n, 0))
        if out is not None and out.dtype != result_dtype:
            raise RuntimeError(f"Found dtype {out.dtype._torch_name} but expected "
                               f"{result_dtype._torch_name}")
    return _execute(name, input, work, plan, result_dtype, out)


def _c2r_1d(name, forward, input, n, dim, norm, out):
    """irfft and hfft (forward): torch's fft_c2r."""
    if not forward and n is None and norm is None and out is None:
        r = _fast_1d(input, dim, name)
        if r is not None:
            return r
    n, dim = _args_1d(name, input, n, dim, norm)
    if out is not None and not out.dtype.is_floating_point:
        raise RuntimeError(f"{name} expects a floating point output tensor, but got "
                           f"{out.dtype._torch_name}")
    work = _TO_COMPLEX[_promote(input.dtype)]
    d = _wrap_dim(dim, input.dim())
    if n is None:
        n = 2 * (input.size(d) - 1)
    _check_points(n)
    scale = _scale(norm, forward)
    plan = [("irfft", d, n, scale)]
    if forward:
        plan.insert(0, ("conj", d, n, 0))
    return _execute(name, input, work, plan, _TO_REAL[work], out)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-d discrete Fourier transform of input along dim (torch.fft.fft)."""
    return _fft_1d("fft", True, input, n, dim, norm, out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-d inverse discrete Fourier transform (torch.fft.ifft)."""
    return _fft_1d("ifft", False, input, n, dim, norm, out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-d FFT of a real input: the n // 2 + 1 non-negative frequencies (torch.fft.rfft)."""
    return _r2c_1d("rfft", True, input, n, dim, norm, out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of rfft: n real points, n = 2 * (input.size(dim) - 1) by default."""
    return _c2r_1d("irfft", False, input, n, dim, norm, out)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The FFT of a Hermitian signal given by its one-sided half: n real points."""
    return _c2r_1d("hfft", True, input, n, dim, norm, out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of hfft: the one-sided inverse FFT of a real input."""
    return _r2c_1d("ihfft", False, input, n, dim, norm, out)


# ---- the n-d transforms ----

def _nd_args(name, input, s, dim, norm):
    s = _ints_arg(name, "s", s)
    if dim is None and name[-1] == "2":  # fft2 and co.: dims required (None is fftn's default)
        raise TypeError(f"fft_{name}(): argument 'dim' must be tuple of ints, not NoneType")
    dim = _ints_arg(name, "dim", dim)
    _check_norm(name, norm)
    _check_input(name, input)
    return s, dim


def _check_out_complex(fname, out):
    if out is not None and not out.dtype.is_complex:
        raise RuntimeError(f"{fname} expects a complex output tensor, but got "
                           f"{out.dtype._torch_name}")


def _check_out_real(fname, out):
    if out is not None and not out.dtype.is_floating_point:
        raise RuntimeError(f"{fname} expects a floating point output tensor, but got "
                           f"{out.dtype._torch_name}")


def _fftn(name, forward, input, s, dim, norm, out):
    s, dim = _nd_args(name, input, s, dim, norm)
    shape, dims = _shape_and_dims(input, s, dim)
    work = _TO_COMPLEX[_promote(input.dtype)]
    scale = _scale(norm, forward)
    _check_out_complex("fftn", out)
    op = "fft" if forward else "ifft"
    # the last dims first: the inner (contiguous) loops of a row-major input come first
    plan = [(op, d, n, scale) for n, d in sorted(zip(shape, dims), key=lambda p: -p[1])]
    return _execute(name, input, work, plan, work, out)


def _rfftn(name, input, s, dim, norm, out):
    s, dim = _nd_args(name, input, s, dim, norm)
    if input.dtype.is_complex:
        raise RuntimeError(f"rfftn expects a real-valued input tensor, but got "
                           f"{input.dtype._torch_name}")
    shape, dims = _shape_and_dims(input, s, dim)
    if not shape:
        raise RuntimeError("rfftn must transform at least one axis")
    work = _promote(input.dtype)
    scale = _scale(norm, True)
    _check_out_complex("rfftn", out)
    plan = [("rfft", dims[-1], shape[-1], scale)]
    plan += [("fft", d, n, scale) for n, d in zip(shape[:-1], dims[:-1])]
    return _execute(name, input, work, plan, _TO_COMPLEX[work], out)


def _irfftn(name, input, s, dim, norm, out):
    s, dim = _nd_args(name, input, s, dim, norm)
    shape, dims = _c2r_shape_and_dims("irfftn", input, s, dim)
    work = _TO_COMPLEX[_promote(input.dtype)]
    scale = _scale(norm, False)
    _check_out_real("irfftn", out)
    plan = [("ifft", d, n, scale) for n, d in zip(shape[:-1], dims[:-1])]
    plan.append(("irfft", dims[-1], shape[-1], scale))
    return _execute(name, input, work, plan, _TO_REAL[work], out)


def _hfftn(name, input, s, dim, norm, out):
    s, dim = _nd_args(name, input, s, dim, norm)
    shape, dims = _c2r_shape_and_dims("hfftn", input, s, dim)
    work = _TO_COMPLEX[_promote(input.dtype)]
    scale = _scale(norm, True)
    _check_out_real("hfftn", out)
    plan = [("fft", d, n, scale) for n, d in zip(shape[:-1], dims[:-1])]
    plan.append(("conj", dims[-1], shape[-1], 0))
    plan.append(("irfft", dims[-1], shape[-1], scale))
    return _execute(name, input, work, plan, _TO_REAL[work], out)


def _ihfftn(name, input, s, dim, norm, out):
    s, dim = _nd_args(name, input, s, dim, norm)
    shape, dims = _shape_and_dims(input, s, dim)
    if not shape:
        raise RuntimeError("ihfftn must transform at least one axis")
    work = _promote(input.dtype)
    scale = _scale(norm, False)
    if work.is_complex:
        raise RuntimeError(f"Only supports floating-point dtypes, but found: "
                           f"{work._torch_name}")
    result_dtype = _TO_COMPLEX[work]
    # (torch 2.13's ihfftn over one dim with out= leaves out unwritten, and raises "Found dtype
    # <result> but expected <out>" when their dtypes differ: here out= is cast and filled as
    # for more dims.)
    _check_out_complex("ihfftn", out)
    plan = [("rfft", dims[-1], shape[-1], scale), ("conj", dims[-1], shape[-1], 0)]
    plan += [("ifft", d, n, scale) for n, d in zip(shape[:-1], dims[:-1])]
    return _execute(name, input, work, plan, result_dtype, out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-d discrete Fourier transform over dim (the last two by default)."""
    return _fftn("fft2", True, input, s, dim, norm, out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-d inverse discrete Fourier transform."""
    return _fftn("ifft2", False, input, s, dim, norm, out)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-d discrete Fourier transform over dim (all dims, or the last len(s), by default)."""
    return _fftn("fftn", True, input, s, dim, norm, out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-d inverse discrete Fourier transform."""
    return _fftn("ifftn", False, input, s, dim, norm, out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-d FFT of a real input, one-sided in the last of dim."""
    return _rfftn("rfft2", input, s, dim, norm, out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of rfft2."""
    return _irfftn("irfft2", input, s, dim, norm, out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-d FFT of a real input, one-sided in the last of dim."""
    return _rfftn("rfftn", input, s, dim, norm, out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of rfftn: real output, s[-1] = 2 * (m - 1) points by default in the last dim."""
    return _irfftn("irfftn", input, s, dim, norm, out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-d FFT of a Hermitian-symmetric input given by its one-sided half: real output."""
    return _hfftn("hfft2", input, s, dim, norm, out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of hfft2: the one-sided 2-d inverse FFT of a real input."""
    return _ihfftn("ihfft2", input, s, dim, norm, out)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-d FFT of a Hermitian-symmetric input given by its one-sided half: real output."""
    return _hfftn("hfftn", input, s, dim, norm, out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of hfftn: the one-sided n-d inverse FFT of a real input."""
    return _ihfftn("ihfftn", input, s, dim, norm, out)


# ---- the helpers ----

def _frequencies(name, n, d, dtype, device, requires_grad, out, count):
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"fft_{name}(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    k = ember.arange(count, dtype=dtype or ember.get_default_dtype(), device=device)
    if name == "fftfreq":  # 0, 1, ..., (n-1)//2, -(n//2), ..., -1
        k = ember.where(k > (n - 1) // 2, k - n, k)
    # as torch: a multiply by 1/(n d), not a division (n = 0: rfftfreq's one term is 0 * inf)
    result = k * (1.0 / (n * d) if n * d != 0 else float("inf"))
    if out is not None:
        out.resize_(result.shape).copy_(result)
        result = out
    return result.requires_grad_() if requires_grad else result


def fftfreq(n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None,
            requires_grad: bool = False, pin_memory: bool = False):
    """The sample frequencies of a signal of size n with sample spacing d (torch.fft.fftfreq)."""
    return _frequencies("fftfreq", n, d, dtype, device, requires_grad, out, n)


def rfftfreq(n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False, pin_memory: bool = False):
    """The non-negative sample frequencies, 0 to n // 2 (torch.fft.rfftfreq)."""
    return _frequencies("rfftfreq", n, d, dtype, device, requires_grad, out, n // 2 + 1)


def _shift(input, dim, sign):
    if dim is None:
        dims = tuple(range(input.dim()))
    elif isinstance(dim, int):
        dims = (dim,)
    elif isinstance(dim, Sequence):
        dims = tuple(dim)
    else:
        raise TypeError(f"dim must be an int, a sequence of ints or None, not {type(dim).__name__}")
    if not dims:
        return input.clone()
    shifts = tuple(sign * (input.shape[d] // 2) for d in dims)
    return ember.roll(input, shifts, dims)


def fftshift(input, dim=None):
    """The zero-frequency term moved to the centre of each dim in `dim` (all by default)."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """The inverse of fftshift."""
    return _shift(input, dim, -1)
