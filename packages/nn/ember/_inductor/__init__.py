"""ember.compile's default backend: fuses the elementwise groups of a captured graph into C++
kernels generated and compiled at run time (CuPy kernels for CUDA tensors), and runs the rest of
the graph as the eager ops it recorded. ``compile_fx`` is the entry point."""

from __future__ import annotations

import ctypes
import math
import operator

import ember
import ember.nn.functional as F
from ember import _C, fx
from ember.autograd import Function

from . import cpp
from .cupy import CudaRunner, cupy_usable
from .fusion import Group, _is_barrier, find_groups, rewrite

__all__ = ["CompiledGraph", "FusedKernel", "compile_fx"]


class FusedKernel:
    """One fused group as a callable of the rewritten graph: returns the group's outputs as a
    tuple. Under autograd it is a Function whose backward is the generated backward kernel."""

    def __init__(self, group: Group, layout, forward, backward, needs: list, cuda=None,
                 train_forward=None, n_saved: int = 0):
        self.__name__ = self.__qualname__ = f"fused_{group.index}"
        self.group = group
        self.layout = layout
        self.shape = group.shape
        self.dtype = getattr(ember, group.dtype)
        self.out_shapes = [tuple(o.meta["val"].shape) for o in group.outputs]
        self.in_shapes = [tuple(i.meta["val"].shape) for i in group.inputs]
        self._forward = forward
        self._backward = backward
        # the training forward also writes n_saved full-shape values its backward reads
        # (cpp.saved_members); None: the backward recomputes everything
        self._train_forward = train_forward
        self.n_saved = n_saved if train_forward is not None else 0
        self.needs = needs
        self.rows = set(cpp.row_inputs(group, layout, needs)) if layout is not None else set()
        self.cuda = cuda  # a CudaRunner for a group of CUDA tensors, else None (C++ kernels)
        # whether a call may run long: the kernels split over threads from the core's grain
        self.long_work = math.prod(group.shape) >= cpp.GRAIN
        ndim, reduced = len(group.shape), group.reduced or 0
        # the shape a reduction's gradient is broadcast from (its keepdim shape)
        self.kept_shape = tuple(group.shape[:ndim - reduced]) + (1,) * reduced

    def __repr__(self) -> str:
        return f"<{self.group.describe()}>"

    def __call__(self, *inputs):
        if _C._is_profiling():  # one profiler event per kernel call, named as in the report
            return _C._profiled(f"fused_{self.group.index}", self._run, inputs, {})
        return self._run(*inputs)

    def _run(self, *inputs):
        if self._backward is not None and ember.is_grad_enabled() and \
                any(t.requires_grad for t in inputs):
            return _FusedFunction.apply(self, *inputs)
        return self.forward(inputs)

    def forward(self, inputs) -> tuple:
        if self.cuda is not None:  # CuPy reads any strides and broadcasts
            outs = [ember.empty(s, dtype=self.dtype, device=inputs[0].device)
                    for s in self.out_shapes]
            self.cuda.forward(inputs, outs)
            return tuple(outs)
        return tuple(self._launch(self._forward, inputs, self.out_shapes))

    def _launch(self, address: int, inputs, out_shapes: list) -> list:
        """Runs the C++ kernel at `address` on the inputs (made contiguous) and on new tensors
        of `out_shapes`, returned; in the core, without the GIL when the kernel is long."""
        return _C._run_kernel(address, inputs, out_shapes, self.dtype, ember.get_num_threads(),
                              self.long_work)

    def train_forward(self, inputs) -> tuple[tuple, list]:
        """The outputs and the values saved for the backward (none without saves)."""
        if not self.n_saved:
            return self.forward(inputs), []
        values = self._launch(self._train_forward, inputs,
                              self.out_shapes + [self.shape] * self.n_saved)
        n = len(self.out_shapes)
        return tuple(values[:n]), values[n:]

    def backward(self, inputs, grads, saved=()) -> list:
        device = inputs[0].device
        grads = [ember.zeros(s, dtype=self.dtype, device=device) if g is None else g
                 for g, s in zip(grads, self.out_shapes)]
        wanted = [k for k, need in enumerate(self.needs) if need]
        # a row input's gradient comes summed, in its own shape; the others in the full shape
        shapes = [self.in_shapes[k] if k in self.rows else self.shape for k in wanted]
        if self.cuda is not None:
            grads = [g if g.is_contiguous() else g.contiguous() for g in grads]
            grads = [g.reshape(self.kept_shape) if o in self.group.reductions else g
                     for g, o in zip(grads, self.group.outputs)]
            outs = [ember.empty(s, dtype=self.dtype, device=device) for s in shapes]
            self.cuda.backward(inputs, grads, outs)
        else:
            outs = self._launch(self._backward, [*inputs, *saved, *grads], shapes)
        result: list = [None] * len(inputs)
        for k, g in zip(wanted, outs):
            shape = self.in_shapes[k]
            if k in self.rows or tuple(shape) == tuple(self.shape):
                result[k] = g
            else:
                result[k] = g.sum_to_size(*shape) if shape else g.sum()
        return result


def _address(lib, name: str) -> int:
    """The address of a generated kernel in its loaded library (kept loaded by cpp.build)."""
    return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value


class _FusedFunction(Function):
    @staticmethod
    def forward(ctx, kernel, *inputs):
        ctx.kernel = kernel
        outs, saved = kernel.train_forward(inputs)
        ctx.save_for_backward(*inputs, *saved)
        return outs

    @staticmethod
    def backward(ctx, *grads):
        if ember.is_grad_enabled():  # create_graph: the kernel's gradient has no graph itself
            raise RuntimeError("ember.compile does not support double backward through a fused "
                               "kernel (backward with create_graph=True); run the function "
                               "eagerly for higher-order gradients")
        kernel = ctx.kernel
        values = ctx.saved_tensors
        n = len(values) - kernel.n_saved
        in_grads = kernel.backward(values[:n], list(grads), values[n:])
        return (None, *[g if ctx.needs_input_grad[k + 1] else None
                        for k, g in enumerate(in_grads)])


class CompiledGraph:
    """The compiled form of one captured graph: the rewritten GraphModule (``.graph_module``,
    whose ``.code`` shows the calls of the fused kernels), the generated C++ (``.source``) and
    CuPy (``.cupy_sources``) sources, and the groups."""

    def __init__(self, graph_module, groups, source: str, cupy_sources: list):
        self.graph_module = graph_module
        self.groups = groups
        self.source = source
        self.cupy_sources = cupy_sources

    def __call__(self, *args):
        # forward itself: the rewritten graph is ember.compile's own module, with no hooks for
        # Module.__call__ to run (its bookkeeping cost 1.7 us a call)
        return self.graph_module.forward(*args)


def _linear_back(gm: fx.GraphModule, groups: list) -> bool:
    """Where a decomposed ``linear`` (matmul + bias add) fused with nothing, puts back the one
    F.linear call (an addmm: the bias is added inside the product)."""
    members = {m for g in groups for m in g.members}
    changed = False
    for node in list(gm.graph.nodes):
        parts = node.meta.get("linear")
        if parts is None or node in members or node.op != "call_function":
            continue
        with gm.graph.inserting_before(node):
            lin = gm.graph.call_function(F.linear, parts)
        lin.meta = {k: v for k, v in node.meta.items() if k != "linear"}
        node.replace_all_uses_with(lin)
        gm.graph.erase_node(node)
        changed = True
    if changed:  # the matmul and transpose the bias add read are dead now
        gm.graph.eliminate_dead_code(lambda n: n.is_impure() or _is_barrier(n))
    return changed


# Batch norm in eval mode as a per-channel affine map that fuses with the ops after it (ReLU):
# measured in benchmarks/bench_compile.py; switched off to compare.
BATCH_NORM_AS_AFFINE = True


def _batch_norm_coefficients(mean, var, weight, bias, eps: float, ndim: int):
    """Eval-mode batch norm's y = x * scale + shift, per channel (dim 1), shaped to broadcast
    against an ``ndim``-d input; computed in float64 and rounded once to the input's dtype."""
    dtype = mean.dtype
    scale = (var.double() + eps).rsqrt()
    if weight is not None:
        scale = scale * weight.double()
    shift = -mean.double() * scale
    if bias is not None:
        shift = shift + bias.double()
    shape = (mean.shape[0],) + (1,) * (ndim - 2)
    return scale.to(dtype).reshape(shape), shift.to(dtype).reshape(shape)


def _batch_norm_as_affine(gm: fx.GraphModule, grad_enabled: bool) -> bool:
    """Rewrites each BatchNorm module in eval mode (running statistics) over a float tensor as
    ``x * scale + shift``, the C per-channel coefficients computed in the graph from the module's
    current buffers, so that the elementwise ops after it fuse with it: one pass over the
    activation instead of two. Only without autograd (the graph is guarded on grad mode): the
    coefficients of a trained affine batch norm would otherwise need their own gradient."""
    from ember.nn.modules.normalization import _BatchNorm

    if grad_enabled or not BATCH_NORM_AS_AFFINE:
        return False
    changed = False
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op != "call_module" or len(node.args) != 1 or node.kwargs:
            continue
        module = gm.get_submodule(node.target)
        x = node.args[0]
        val = x.meta.get("val") if isinstance(x, fx.Node) else None
        if not isinstance(module, _BatchNorm) or module.training or \
                module.running_mean is None or val is None or val.dim() < 2 or \
                val.dtype not in (ember.float32, ember.float64) or \
                module.running_mean.dtype != val.dtype:
            continue
        prefix = f"{node.target}."
        with graph.inserting_before(node):
            params = [graph.get_attr(prefix + name) if getattr(module, name) is not None
                      else None for name in ("running_mean", "running_var", "weight", "bias")]
            coeffs = graph.call_function(_batch_norm_coefficients,
                                         (*params, float(module.eps), val.dim()))
            scale = graph.call_function(operator.getitem, (coeffs, 0))
            shift = graph.call_function(operator.getitem, (coeffs, 1))
            scaled = graph.call_function(operator.mul, (x, scale))
            out = graph.call_function(operator.add, (scaled, shift))
        with ember.no_grad():
            values = _batch_norm_coefficients(
                module.running_mean, module.running_var, module.weight, module.bias,
                float(module.eps), val.dim())
        for n, v in zip(params, (module.running_mean, module.running_var, module.weight,
                                 module.bias)):
            if n is not None:
                n.meta["val"] = v
        coeffs.meta["val"], scale.meta["val"], shift.meta["val"] = values, *values
        scaled.meta["val"] = val * values[0]
        out.meta["val"] = scaled.meta["val"] + values[1]
        node.replace_all_uses_with(out)
        graph.erase_node(node)
        changed = True
    return changed


def compile_fx(gm: fx.GraphModule, example_inputs, *, grad_enabled: bool | None = None):
    """Fuses ``gm`` (whose nodes carry ``meta['val']``) and returns a CompiledGraph."""
    if grad_enabled is None:
        grad_enabled = ember.is_grad_enabled()
    _batch_norm_as_affine(gm, grad_enabled)
    groups = find_groups(gm.graph, grad_enabled)
    if _linear_back(gm, groups):  # nodes changed: find the groups of the new graph
        groups = find_groups(gm.graph, grad_enabled)
    cpu_groups = [g for g in groups if g.device == "cpu"]
    cuda_groups = [g for g in groups if g.device == "cuda"]
    sources, layouts, kernels, cupy_sources, saves = [], {}, {}, [], {}
    for g in cpu_groups:
        layout = cpp.compute_layout(g.shape, [tuple(i.meta["val"].shape) for i in g.inputs],
                                    g.reduced)
        layouts[g.index] = layout
        sources.append(cpp.forward_source(g, layout, f"ember_fused_{g.index}"))
        if g.requires_grad:
            needs = [bool(i.meta["val"].requires_grad) for i in g.inputs]
            saves[g.index] = cpp.saved_members(g)
            if saves[g.index]:
                sources.append(cpp.forward_source(g, layout, f"ember_fused_{g.index}_train",
                                                  saves[g.index]))
            sources.append(cpp.backward_source(g, layout, f"ember_fused_{g.index}_backward",
                                               needs, saves[g.index]))
    source = "\n".join(sources)
    if cpu_groups:
        lib = cpp.build(source)
        for g in cpu_groups:
            fwd = _address(lib, f"ember_fused_{g.index}")
            bwd = train = None
            needs = [bool(i.meta["val"].requires_grad) for i in g.inputs]
            if g.requires_grad:
                bwd = _address(lib, f"ember_fused_{g.index}_backward")
                if saves[g.index]:
                    train = _address(lib, f"ember_fused_{g.index}_train")
            kernels[g.index] = FusedKernel(g, layouts[g.index], fwd, bwd, needs,
                                           train_forward=train,
                                           n_saved=len(saves.get(g.index, ())))
    fused = list(cpu_groups)
    # CUDA groups: CuPy kernels where CuPy runs them (the sources are made anyway, to be read);
    # a group CuPy cannot fuse (two reductions) or of no elements stays eager ops
    run_cuda = bool(cuda_groups) and cupy_usable()
    for g in cuda_groups:
        needs = [bool(i.meta["val"].requires_grad) for i in g.inputs]
        name = f"ember_fused_{g.index}"
        try:
            runner = CudaRunner(g, name, needs if g.requires_grad else None)
        except NotImplementedError:
            continue
        cupy_sources.append(runner.forward_source)
        if runner.backward_source is not None:
            cupy_sources.append(runner.backward_source)
        if run_cuda and 0 not in g.shape:
            kernels[g.index] = FusedKernel(g, None, None, runner.backward_source, needs,
                                           cuda=runner)
            fused.append(g)
    fused.sort(key=lambda g: g.index)
    for i, g in enumerate(fused):
        g.index = i
    kernels = [kernels[k] for k in sorted(kernels)]
    for i, k in enumerate(kernels):
        k.__name__ = k.__qualname__ = f"fused_{i}"
    graph = rewrite(gm, fused, kernels)
    new_gm = fx.GraphModule(gm, graph, type(gm).__name__)
    return CompiledGraph(new_gm, fused, source, cupy_sources)

