"""The ops ember.compile fuses, as data: which fx nodes are elementwise (and how they read
their operands), which are reductions, and the gradient of each elementwise op.

The C++ formula of an op is never written here: generated kernels call the op table's own
expression (op_table.h, included as package data), as ``ember::fx_ops::<name>(...)``, so a
fused kernel computes what the eager kernel computes. CuPy source (CUDA tensors) uses the
CUDA spellings in ``CUDA_FORMULAS``.
"""

from __future__ import annotations

import operator

# unary op-table ops that fuse (float types); every one has a gradient below or is inference-only
UNARY = {"exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
         "erf", "relu", "neg", "abs", "reciprocal", "square", "sign", "floor", "ceil", "trunc"}
BINARY = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"}
REDUCTIONS = {"sum", "mean", "amax", "amin"}

_PY_OPERATORS = {operator.add: "add", operator.sub: "sub", operator.mul: "mul",
                 operator.truediv: "div", operator.pow: "pow", operator.neg: "neg",
                 abs: "abs"}
_METHOD_ALIASES = {"true_divide": "div", "subtract": "sub", "multiply": "mul", "divide": "div",
                   "negative": "neg", "absolute": "abs"}


def elementwise_op(node) -> tuple[str, list] | None:
    """``(op, operands)`` when ``node`` is an elementwise op the fuser knows, else None.
    Operands are fx Nodes or Python numbers, in the op's order."""
    import ember
    if node.op == "call_function" and node.target in _PY_OPERATORS:
        name = _PY_OPERATORS[node.target]
    elif node.op == "call_method" and isinstance(node.target, str):
        name = _METHOD_ALIASES.get(node.target, node.target)
        if name not in UNARY and name not in BINARY:
            return None
    elif node.op == "call_function" and getattr(ember, getattr(node.target, "__name__", ""),
                                                None) is node.target:
        name = _METHOD_ALIASES.get(node.target.__name__, node.target.__name__)
        if name not in UNARY and name not in BINARY:
            return None
    else:
        return None
    if node.kwargs:
        return None  # alpha=, rounding_mode=, out=: left to the eager op
    args = list(node.args)
    arity = 1 if name in UNARY else 2
    if len(args) != arity:
        return None
    for a in args:
        if not (hasattr(a, "op") or (isinstance(a, (int, float)) and not isinstance(a, bool))):
            return None
    if not any(hasattr(a, "op") for a in args):
        return None
    return name, args


def reduction_op(node) -> tuple[str, object, tuple | None, bool] | None:
    """``(op, input, dims or None for all, keepdim)`` for sum/mean/amax/amin of one tensor
    without dtype=/out=, else None."""
    import ember
    if node.op == "call_method" and node.target in REDUCTIONS:
        name = node.target
    elif node.op == "call_function" and node.target in tuple(
            getattr(ember, r) for r in REDUCTIONS):
        name = node.target.__name__
    else:
        return None
    args, kwargs = list(node.args), dict(node.kwargs)
    if not args or not hasattr(args[0], "op"):
        return None
    inp, rest = args[0], args[1:]
    names = ["dim", "keepdim"]
    for i, v in enumerate(rest):
        if i >= len(names) or names[i] in kwargs:
            return None
        kwargs[names[i]] = v
    if set(kwargs) - {"dim", "keepdim"}:
        return None
    dim = kwargs.get("dim")
    if isinstance(dim, int) and not isinstance(dim, bool):
        dims = (dim,)
    elif isinstance(dim, (tuple, list)) and all(isinstance(d, int) for d in dim):
        dims = tuple(dim) if dim else None
    elif dim is None:
        dims = None
    else:
        return None
    keepdim = kwargs.get("keepdim", False)
    if not isinstance(keepdim, bool):
        return None
    return name, inp, dims, keepdim


# Gradients, as C++ expressions: fn(g, operands, y) -> one expression per operand (None for a
# constant operand is filled in by the caller). Functions are called as ember::fx_ops::<op>
# (the op table's own expressions); the CuPy kernels rename those calls (cupy.py).
def _pow_grads(g, ops, y):
    a, b = ops
    # a constant exponent of 2 or 3 (x ** 3 in a tanh-GELU): b * a or b * a * a, as the forward
    # spells small powers (cpp._POWERS): pow() is a libm call that cost the GELU backward 2x
    small = {"T(2)": a, "T(2.0)": a, "T(3)": f"({a} * {a})", "T(3.0)": f"({a} * {a})"}
    power = small.get(b, f"ember::fx_ops::pow({a}, {b} - T(1))")
    return (f"({g} * {b} * {power})", f"({g} * {y} * ember::fx_ops::log({a}))")


GRADIENTS = {
    "add": lambda g, o, y: (g, g),
    "sub": lambda g, o, y: (g, f"(-{g})"),
    "mul": lambda g, o, y: (f"({g} * {o[1]})", f"({g} * {o[0]})"),
    "div": lambda g, o, y: (f"({g} / {o[1]})", f"(-{g} * {o[0]} / ({o[1]} * {o[1]}))"),
    "pow": _pow_grads,
    "neg": lambda g, o, y: (f"(-{g})",),
    "exp": lambda g, o, y: (f"({g} * {y})",),
    "expm1": lambda g, o, y: (f"({g} * ({y} + T(1)))",),
    "log": lambda g, o, y: (f"({g} / {o[0]})",),
    "log1p": lambda g, o, y: (f"({g} / ({o[0]} + T(1)))",),
    "sqrt": lambda g, o, y: (f"({g} / (T(2) * {y}))",),
    "rsqrt": lambda g, o, y: (f"(T(-0.5) * {g} * {y} * {y} * {y})",),
    "sin": lambda g, o, y: (f"({g} * ember::fx_ops::cos({o[0]}))",),
    "cos": lambda g, o, y: (f"(-{g} * ember::fx_ops::sin({o[0]}))",),
    "tanh": lambda g, o, y: (f"({g} * (T(1) - {y} * {y}))",),
    "sigmoid": lambda g, o, y: (f"({g} * ((T(1) - {y}) * {y}))",),
    "erf": lambda g, o, y: (f"({g} * T(1.1283791670955126) * ember::fx_ops::exp(-{o[0]} * "
                            f"{o[0]}))",),
    "relu": lambda g, o, y: (f"({y} > T(0) ? {g} : T(0))",),
    "abs": lambda g, o, y: (f"({g} * ember::fx_ops::sign({o[0]}))",),
    "reciprocal": lambda g, o, y: (f"(-{g} * {y} * {y})",),
    "square": lambda g, o, y: (f"(T(2) * {g} * {o[0]})",),
    "sign": lambda g, o, y: ("T(0)",),
    "floor": lambda g, o, y: ("T(0)",),
    "ceil": lambda g, o, y: ("T(0)",),
    "trunc": lambda g, o, y: ("T(0)",),
}
DIFFERENTIABLE_REDUCTIONS = {"sum", "mean"}

def reverse_sweep(group, adjoint: dict, operand_text, value_of) -> list:
    """The backward of a group's elementwise members, last first: ``(name, expression)`` of
    each member's summed gradient (``a0``, ``a1``, ...), to declare in that order, while each
    member's gradient formulas (GRADIENTS) add terms to its operands' entries of ``adjoint``
    (node -> terms: the outputs' seeds on entry, the inputs' gradients on return). The C++ and
    the CuPy backward kernels both spell their source from it; ``operand_text(x)`` spells an
    operand, ``value_of(node)`` a member's value."""
    from ember import fx

    decls = []
    for node in reversed(group.members):
        if node not in group.ops or node not in adjoint:
            continue
        a = f"a{len(decls)}"
        decls.append((a, " + ".join(adjoint[node])))
        op, operands = group.ops[node]
        formulas = GRADIENTS[op](a, [operand_text(x) for x in operands], value_of(node))
        for x, gexpr in zip(operands, formulas):
            if isinstance(x, fx.Node):
                adjoint.setdefault(x, []).append(gexpr)
    return decls


# CUDA spellings for the CuPy kernels (CuPy's ElementwiseKernel compiles with NVRTC, which has
# CUDA's math functions; the same names as the op table's expressions use)
CUDA_FORMULAS = {
    "exp": "exp({0})", "log": "log({0})", "log1p": "log1p({0})", "expm1": "expm1({0})",
    "sqrt": "sqrt({0})", "rsqrt": "rsqrt({0})", "sin": "sin({0})", "cos": "cos({0})",
    "tanh": "tanh({0})", "sigmoid": "(T(1) / (T(1) + exp(-{0})))", "erf": "erf({0})",
    "relu": "({0} > T(0) || {0} != {0} ? {0} : T(0))", "neg": "(-{0})", "abs": "fabs({0})",
    "reciprocal": "(T(1) / {0})", "square": "({0} * {0})",
    "sign": "T(({0} > T(0)) - ({0} < T(0)))", "floor": "floor({0})", "ceil": "ceil({0})",
    "trunc": "trunc({0})",
    "add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "div": "({0} / {1})",
    "pow": "pow({0}, {1})",
    "maximum": "(({0} != {0} || {1} != {1}) ? {0} + {1} : max({0}, {1}))",
    "minimum": "(({0} != {0} || {1} != {1}) ? {0} + {1} : min({0}, {1}))",
}
