"""CuPy kernel source for a fused group on CUDA tensors: an ``ElementwiseKernel`` for an
elementwise group, a ``ReductionKernel`` for one ended by a single sum/mean/amax/amin, and an
``ElementwiseKernel`` for the backward of either. CuPy broadcasts the inputs itself, so the
source does not depend on the layout; ``CudaRunner`` launches them on ember tensors."""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass

from ember import fx

from .ops import CUDA_FORMULAS, reverse_sweep

_CTYPE = {"float32": "float32", "float64": "float64"}


@dataclass
class CupySource:
    kind: str            # "ElementwiseKernel" or "ReductionKernel"
    in_params: str
    out_params: str
    operation: str       # the elementwise body, or the map expression of a reduction
    name: str
    reduce_expr: str = ""
    post_map_expr: str = ""
    identity: str = ""
    preamble: str = ""

    def python(self) -> str:
        """The constructor call, as Python source."""
        if self.kind == "ElementwiseKernel":
            return (f"cupy.ElementwiseKernel({self.in_params!r}, {self.out_params!r}, "
                    f"{self.operation!r}, {self.name!r}, preamble={self.preamble!r})")
        return (f"cupy.ReductionKernel({self.in_params!r}, {self.out_params!r}, "
                f"{self.operation!r}, {self.reduce_expr!r}, {self.post_map_expr!r}, "
                f"{self.identity!r}, {self.name!r}, preamble={self.preamble!r})")

    def build(self):
        import cupy
        if self.kind == "ElementwiseKernel":
            return cupy.ElementwiseKernel(self.in_params, self.out_params, self.operation,
                                          self.name, preamble=self.preamble)
        return cupy.ReductionKernel(self.in_params, self.out_params, self.operation,
                                    self.reduce_expr, self.post_map_expr, self.identity,
                                    self.name, preamble=self.preamble)


def _const(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "T(nan(\"\"))"
        if math.isinf(v):
            return "T(" + ("" if v > 0 else "-") + "__longlong_as_double(0x7ff0000000000000LL))"
    return f"T({v!r})"


def _forward_body(group) -> tuple:
    """``(env, body)``: each elementwise member's value as a statement (``T v0 = ...;``) in
    graph order, and node -> its variable (the inputs are ``in0``, ``in1``, ...)."""
    env: dict = {n: f"in{k}" for k, n in enumerate(group.inputs)}
    body = []
    for node in group.members:
        if node in group.ops:
            op, operands = group.ops[node]
            var = f"v{len(body)}"
            args = map(_operand_spelling(env), operands)
            body.append(f"T {var} = {CUDA_FORMULAS[op].format(*args)};")
            env[node] = var
    return env, body


def _operand_spelling(env):
    """How an operand is spelled: its variable, or a constant."""
    return lambda a: env[a] if isinstance(a, fx.Node) else _const(a)


def cupy_source(group, name: str) -> CupySource:
    """The CuPy kernel of ``group``; a group with more than one reduction or with elementwise
    outputs next to a reduction raises NotImplementedError (its ops run eagerly on CUDA)."""
    env, body = _forward_body(group)
    in_params = ", ".join(f"T in{k}" for k in range(len(group.inputs)))
    if not group.reductions:
        outs = ", ".join(f"T out{m}" for m in range(len(group.outputs)))
        stores = [f"out{m} = {env[o]};" for m, o in enumerate(group.outputs)]
        return CupySource("ElementwiseKernel", in_params, outs, " ".join(body + stores), name)
    if len(group.reductions) != 1 or len(group.outputs) != 1:
        raise NotImplementedError("CuPy kernels fuse one reduction without other outputs")
    (node, (op, operand, _)), = group.reductions.items()
    map_expr = env[operand]
    preamble = ""
    if body:  # the elementwise part becomes a device function the map expression calls
        args = ", ".join(f"T in{k}" for k in range(len(group.inputs)))
        preamble = (f"template <typename T> __device__ T {name}_map({args}) {{ "
                    + " ".join(body) + f" return {map_expr}; }}")
        map_expr = f"{name}_map(" + ", ".join(f"in{k}" for k in range(len(group.inputs))) + ")"
    # CuPy's kernels have no INFINITY macro: the identity of amax/amin is built from its bits
    inf = "__longlong_as_double(0x7ff0000000000000LL)"
    reduce_expr, identity = {"sum": ("a + b", "0"), "mean": ("a + b", "0"),
                             "amax": ("(a != a || b != b) ? a + b : max(a, b)", f"-{inf}"),
                             "amin": ("(a != a || b != b) ? a + b : min(a, b)", inf)}[op]
    post = "y = a / _type_reduce(_in_ind.size() / _out_ind.size())" if op == "mean" else "y = a"
    return CupySource("ReductionKernel", in_params, "T y", map_expr, name, reduce_expr, post,
                      identity, preamble)


_FX_CALL = re.compile(r"ember::fx_ops::(\w+)\(")


def _cuda_spelling(expr: str, used: set) -> str:
    """A gradient expression of ops.GRADIENTS (C++ spelling: ember::fx_ops::<op>) with each op
    call renamed to the device function ``ember_fx_<op>`` the preamble defines."""
    def rename(m):
        used.add(m.group(1))
        return f"ember_fx_{m.group(1)}("
    return _FX_CALL.sub(rename, expr)


def _fx_preamble(used: set) -> str:
    lines = []
    for op in sorted(used):
        if op in ("pow", "maximum", "minimum", "add", "sub", "mul", "div"):
            lines.append(f"template <typename T> __device__ T ember_fx_{op}(T a, T b) "
                         f"{{ return {CUDA_FORMULAS[op].format('a', 'b')}; }}")
        else:
            lines.append(f"template <typename T> __device__ T ember_fx_{op}(T x) "
                         f"{{ return {CUDA_FORMULAS[op].format('x')}; }}")
    return "\n".join(lines)


def cupy_backward_source(group, name: str, needs: list) -> CupySource:
    """The backward kernel: params = the forward's inputs, then one gradient per output (a
    reduction's in its keepdim shape, so that it broadcasts), then one full-shape gradient per
    input with ``needs[k]``. The values are recomputed and the gradient formulas applied in
    reverse, as the C++ backward does."""
    env, body = _forward_body(group)
    adjoint: dict = {}
    count_reduced = math.prod(group.shape[len(group.shape) - (group.reduced or 0):])
    for m, out in enumerate(group.outputs):
        if out in group.reductions:
            op, target, _ = group.reductions[out]
            term = f"(gout{m} * T({1.0 / count_reduced!r}))" if op == "mean" else f"gout{m}"
        else:
            target, term = out, f"gout{m}"
        adjoint.setdefault(target, []).append(term)
    used: set = set()
    for a, expr in reverse_sweep(group, adjoint, _operand_spelling(env), env.__getitem__):
        body.append(f"T {a} = {_cuda_spelling(expr, used)};")
    wanted = [k for k in range(len(group.inputs)) if needs[k]]
    for k in wanted:
        terms = adjoint.get(group.inputs[k])
        value = _cuda_spelling(" + ".join(terms), used) if terms else "T(0)"
        body.append(f"gin{k} = {value};")
    in_params = ", ".join([f"T in{k}" for k in range(len(group.inputs))]
                          + [f"T gout{m}" for m in range(len(group.outputs))])
    out_params = ", ".join(f"T gin{k}" for k in wanted)
    return CupySource("ElementwiseKernel", in_params, out_params, " ".join(body), name,
                      preamble=_fx_preamble(used))


_kernels: dict = {}
_kernels_lock = threading.Lock()


def _built(source: CupySource):
    """One CuPy kernel object per source, shared by the runners of equal groups (CuPy compiles it
    once per dtype and keeps the binary in its own disk cache)."""
    key = source.python()
    with _kernels_lock:
        kernel = _kernels.get(key)
        if kernel is None:
            kernel = _kernels[key] = source.build()
    return kernel


def cupy_usable() -> bool:
    """Whether fused CUDA groups can run: CuPy on a real GPU (ember's simulated devices run
    CUDA tensors through NumPy, where the groups stay eager ops)."""
    from ember.cuda import _ops
    try:
        import cupy
    except ImportError:
        return False
    return _ops.xp() is cupy


class CudaRunner:
    """Launches one group's CuPy kernels on ember CUDA tensors, on ember's current stream:
    ``forward(inputs, outputs)`` and ``backward(inputs, grads, grads_in)`` (tensors already
    allocated by the caller in the shapes FusedKernel gives)."""

    def __init__(self, group, name: str, needs: list | None):
        self.forward_source = cupy_source(group, name)
        self.backward_source = (cupy_backward_source(group, name + "_backward", needs)
                                if needs is not None else None)
        self._forward_kernel = self._backward_kernel = None  # built on first launch
        self.reduction = None
        if group.reductions:
            (_, (op, _, keepdim)), = group.reductions.items()
            ndim = len(group.shape)
            self.reduction = (op, tuple(range(ndim - group.reduced, ndim)), keepdim)

    def forward(self, inputs, outputs) -> None:
        from ember.cuda import _ops
        device = outputs[0].get_device()
        kernel = self._forward_kernel
        if kernel is None:
            kernel = self._forward_kernel = _built(self.forward_source)
        with _ops._on_current_stream(device):
            views = [_ops.view(t) for t in inputs]
            if self.reduction is None:
                kernel(*views, *[_ops.view(t) for t in outputs])
            else:
                _, axes, keepdim = self.reduction
                kernel(*views, out=_ops.view(outputs[0]), axis=axes, keepdims=keepdim)

    def backward(self, inputs, grads, grads_in) -> None:
        from ember.cuda import _ops
        device = grads_in[0].get_device()
        kernel = self._backward_kernel
        if kernel is None:
            kernel = self._backward_kernel = _built(self.backward_source)
        with _ops._on_current_stream(device):
            kernel(*[_ops.view(t) for t in (*inputs, *grads, *grads_in)])
