"""CuPy kernel source for a fused group on CUDA tensors: an ``ElementwiseKernel`` for an
elementwise group, a ``ReductionKernel`` for one ended by a single sum/mean/amax/amin. CuPy
broadcasts the inputs itself, so the source does not depend on the layout."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ember import fx

from .ops import CUDA_FORMULAS

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
            return "T(" + ("" if v > 0 else "-") + "INFINITY)"
    return f"T({v!r})"


def cupy_source(group, name: str) -> CupySource:
    """The CuPy kernel of ``group``; a group with more than one reduction or with elementwise
    outputs next to a reduction raises NotImplementedError (its ops run eagerly on CUDA)."""
    env: dict = {}
    for k, n in enumerate(group.inputs):
        env[n] = f"in{k}"
    body = []
    for node in group.members:
        if node in group.ops:
            op, operands = group.ops[node]
            args = [env[a] if isinstance(a, fx.Node) else _const(a) for a in operands]
            var = f"v{len(body)}"
            body.append(f"T {var} = {CUDA_FORMULAS[op].format(*args)};")
            env[node] = var
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
    reduce_expr, identity = {"sum": ("a + b", "0"), "mean": ("a + b", "0"),
                             "amax": ("(a != a || b != b) ? a + b : max(a, b)", "-INFINITY"),
                             "amin": ("(a != a || b != b) ? a + b : min(a, b)", "INFINITY")}[op]
    post = "y = a / _type_reduce(_in_ind.size() / _out_ind.size())" if op == "mean" else "y = a"
    return CupySource("ReductionKernel", in_params, "T y", map_expr, name, reduce_expr, post,
                      identity, preamble)
