"""bfloat16 CUDA ops: computed in float32, each bf16 result rounded once.

NumPy and CuPy have no bfloat16. :func:`ember.cuda._dispatch.dispatch` hands a call with bf16 CUDA
tensors to :func:`_in_float32`, which runs the op's implementation on float32 widenings of them
and narrows each bf16 result once, as the CPU kernels compute bf16 (in float32, one rounding per
result). The dtype rules and errors are the CPU's for the original arguments (``_meta``), and the
operands the CPU rounds to bf16 first (numbers, tensors of other dtypes, add/sub's alpha) are
rounded so here. The bit-level helpers (``_bits``, ``_widen``, ``_narrow``) live in ``_ops``.
"""

from __future__ import annotations

from collections.abc import Callable

from ember import _C
from ember.cuda._core_ops import _KIND, ELEMENTWISE, _scalar_at_own_value
from ember.cuda._ops import (
    _assign,
    _converted,
    _is_bf16,
    _is_tensor,
    _meta,
    _on_current_stream,
    _stand_in,
    _tensors,
)

# Ops that read and write bf16 bits themselves, or only compose other ops.
_NATIVE_BF16 = {"_copy_from", "_copy_", "fill_", "bernoulli", "normal", "_fused_sgd_",
                "_fused_adam_"}
# Ops whose CPU kernels convert every operand to the compute dtype first (a bf16 result: bf16).
_ROUNDED_OPERANDS = {*ELEMENTWISE, *(n + "_" for n in ELEMENTWISE), "where", "clamp", "clamp_"}
_BF16_ONE = _C.ones([], dtype=_C.bfloat16)
_BF16_MAX = 3.3895313892515355e38


def _has_bf16(args, kwargs) -> bool:
    # on every dispatched op: plain type and identity tests, no helper calls
    tensor, bf16 = _C.Tensor, _C.bfloat16
    for a in (*args, *kwargs.values()) if kwargs else args:
        if isinstance(a, tensor):
            if a.dtype == bf16 and a.get_device() >= 0:
                return True
        elif isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, tensor) and b.dtype == bf16 and b.get_device() >= 0:
                    return True
    return False


def _widened(a):
    """A bf16 CUDA tensor as a new float32 one (also inside lists and tuples), the dtype bf16
    (a `dtype=` argument) as float32; the rest as is."""
    if _is_bf16(a) and a.get_device() >= 0:
        return _converted(a, _C.float32)
    if a is _C.bfloat16:
        return _C.float32
    if isinstance(a, (list, tuple)) and any(_is_bf16(b) for b in a):
        return type(a)(_widened(b) for b in a)
    return a


def _rounds_operands(name: str, args, meta) -> bool:
    """Whether the CPU converts the operands to bf16 first: element-wise ops, where and clamp
    with a bf16 result, and comparisons whose common dtype is bf16."""
    if name not in _ROUNDED_OPERANDS:
        return False
    if _first_dtype(meta) == _C.bfloat16:
        return True
    if _KIND.get(name.rstrip("_")) in ("CMP", "LOGICAL") and len(args) == 2:
        return _C.result_type(*(_stand_in(a) for a in args)) == _C.bfloat16
    return False


def _rounded(a):
    """An operand a bf16 computation converts to bf16 first, as that bf16 value (in float32)."""
    if isinstance(a, bool) or (_is_tensor(a) and a.dtype == _C.bool):
        return a  # exact either way
    if isinstance(a, (int, float)):  # the CPU's conversion of a number operand (wrapped scalar)
        return _C.tensor(a, dtype=_C.bfloat16).item()
    if _is_tensor(a):
        if a.get_device() < 0:  # a 0-d CPU tensor joining as a number
            return a.to(dtype=_C.bfloat16).item()
        return _converted(_converted(a, _C.bfloat16), _C.float32)
    return a


def _first_dtype(meta):
    """The dtype of the first tensor in an op's (meta) result; None where it has none."""
    if _is_tensor(meta):
        return meta.dtype
    if isinstance(meta, (list, tuple)):
        for m in meta:
            d = _first_dtype(m)
            if d is not None:
                return d
    return None


def _narrowed(result, meta):
    """The tensors of `result` whose counterpart in `meta` is bf16, narrowed to bf16. Where the
    result has more entries than meta (its length depends on the data) the first entry's dtype
    stands for the rest."""
    if _is_tensor(result):
        if result.dtype == _C.float32 and _first_dtype(meta) == _C.bfloat16:
            return _converted(result, _C.bfloat16)
        return result
    if isinstance(result, (list, tuple)):
        seq = isinstance(meta, (list, tuple)) and len(meta) > 0
        items = [_narrowed(r, (meta[i] if i < len(meta) else meta[0]) if seq else meta)
                 for i, r in enumerate(result)]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    return result


def _bf16_arguments(name: str, args, kwargs):
    """The arguments where the CPU's bf16 arithmetic is not float32's on the same values."""
    if ("alpha" in kwargs and name in _ROUNDED_OPERANDS
            and _C.result_type(*(_stand_in(a) for a in args[:2])) == _C.bfloat16):
        # the CPU (as torch) rounds alpha to bf16, then computes a + alpha * b in float32
        kwargs = {**kwargs, "alpha": _C.tensor(kwargs["alpha"], dtype=_C.bfloat16).item()}
    if name == "nan_to_num" and _is_bf16(args[0]):  # infinities become bf16's extremes
        nan, posinf, neginf = (list(args[1:]) + [0.0, None, None][len(args) - 1:])[:3]
        args = (args[0], nan, _BF16_MAX if posinf is None else posinf,
                -_BF16_MAX if neginf is None else neginf)
    return args, kwargs


def _in_float32(impl: Callable, name: str, args, kwargs):
    """op(args) with bf16 CUDA tensors among them: the op run on their float32 widenings, each
    bf16 result narrowed once. The dtype rules and errors are the CPU's for the original
    arguments (_meta); an in-place op writes back into its bf16 tensor."""
    args, kwargs = _bf16_arguments(name, args, kwargs)
    try:
        meta = _meta(name, args, kwargs)
        meta_error = None
    except Exception as e:  # noqa: BLE001
        if "BFloat16" in str(e):  # the CPU refuses bf16 itself
            raise
        # The one-element stand-ins may not fit the call (an index into a larger dim): the op
        # on the float32 arguments checks them; the result is bf16 where every float tensor is.
        meta, meta_error = None, e
    wkwargs = {k: _widened(v) for k, v in kwargs.items()}
    if _rounds_operands(name, args, meta):
        keep = 1 if _scalar_at_own_value(name, args) else None
        wargs = [_widened(a) if i == keep or _is_bf16(a) else _rounded(a)
                 for i, a in enumerate(args)]
    else:
        wargs = [_widened(a) for a in args]
    try:
        result = impl(name, tuple(wargs), wkwargs)
    except Exception:
        if meta_error is not None:
            raise meta_error from None
        raise
    self = args[0] if args else None
    if name[-1] == "_" and name[0] != "_" and _is_bf16(self):
        with _on_current_stream(self.get_device()):
            _assign(self, wargs[0])
        return self
    if meta is None:
        floats = [t for t in _tensors((*args, *kwargs.values())) if t.is_floating_point()]
        if all(t.dtype == _C.bfloat16 for t in floats):
            meta = _BF16_ONE
    return _narrowed(result, meta)
