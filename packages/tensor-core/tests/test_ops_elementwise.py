"""Generic tests of the elementwise ops, driven by the op database (ember.testing.opdb).

Every op of ``ember._C._op_table()`` runs for every dtype against its NumPy reference on
broadcast, non-contiguous and zero-size samples, in each of its variants: function, method,
in-place (``x.op_()`` and ``ember.op_``), ``out=`` and Python operators (reflected and in-place).
"""

from __future__ import annotations

import functools
import operator

import numpy as np
import pytest

import ember
from ember.testing.opdb import (
    ALL_DTYPES,
    BINARY_OPS,
    EXPECTED_KINDS,
    FLOAT_DTYPES,
    OPS,
    PARAM_OPS,
    TABLE,
    UNARY_OPS,
    OpInfo,
    SampleInput,
    Unsupported,
    assert_close,
    cast_result,
    edtype,
    is_float,
    make_tensor,
    op_dtype_params,
    param_id,
    result_type,
    rng_for,
    round_to,
    sample_values,
    to_numpy,
    values,
)

ALL_OPS = list(OPS.values())


def _skip_if_known(op: OpInfo, test: str, dtype: str) -> None:
    reason = op.skip_reason(test, dtype)
    if reason:
        pytest.skip(reason)


def _check(op: OpInfo, args: tuple, result, what: str) -> None:
    expected, dtype = op.reference(args)
    rtol, atol = op.tolerance(dtype)
    assert_close(result, expected, dtype, rtol, atol, msg=f"{op.name} {what}")


def _expect_refusal(op: OpInfo, call, what: str) -> None:
    """The op refuses these dtypes: NotImplementedError (RuntimeError for the few errors PyTorch
    raises as RuntimeError: negation and subtraction of bools, relu of bools)."""
    exc = RuntimeError if op.name in ("neg", "sub", "relu") else NotImplementedError
    with pytest.raises(exc):
        call()


# ---------------------------------------------------------------------------------------------
# the database covers the table


def test_every_table_op_has_an_entry():
    missing = [row["name"] for row in TABLE if row["name"] not in OPS]
    assert not missing, f"ops declared in op_table.h without an entry in ember/testing/opdb.py: {missing}"


def test_entries_match_the_table():
    rows = {row["name"]: row for row in TABLE}
    for name, op in OPS.items():
        assert op.arity == rows[name]["arity"], name
        assert op.kind == rows[name]["kind"], name
        # an op whose dtype rule changed needs its entry looked at (reference, dtypes)
        assert EXPECTED_KINDS.get(name) == op.kind, (
            f"{name}: kind {op.kind} in op_table.h, opdb was written for {EXPECTED_KINDS.get(name)}"
        )


def test_table_has_no_duplicates():
    names = [row["name"] for row in TABLE]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("op", ALL_OPS, ids=param_id)
def test_variants_are_bound(op):
    fn = op.fn_name or op.name
    for name in (fn, fn + "_"):
        if name == fn + "_" and not op.inplace:  # as torch: no such name at all
            assert not hasattr(ember._C, name) and not hasattr(ember.Tensor, name), name
            continue
        assert callable(getattr(ember._C, name, None)), f"ember.{name} missing"
        if not name.startswith("_"):
            assert getattr(ember, name) is getattr(ember._C, name), f"ember.{name} not exported"
        assert callable(getattr(ember.Tensor, name, None)), f"Tensor.{name} missing"


# ---------------------------------------------------------------------------------------------
# values and dtypes against the reference


@pytest.mark.parametrize("op,dtype", op_dtype_params(ALL_OPS), ids=param_id)
def test_op_matches_reference(op, dtype):
    _skip_if_known(op, "reference", dtype)
    for sample in op.sample_inputs(dtype):
        args = sample.tensors((dtype,) * op.arity)
        try:
            op.reference(args)
        except Unsupported:
            assert not op.supports(dtype), f"{op.name} entry lists {dtype} yet refuses it"
            _expect_refusal(op, lambda args=args: op.fn(*args), f"{dtype}")
            return
        assert op.supports(dtype), f"{op.name} accepts {dtype}: add it to the entry's dtypes"
        _check(op, args, op.fn(*args), f"{dtype} {sample}")


@pytest.mark.parametrize("op,dtype", op_dtype_params(BINARY_OPS), ids=param_id)
def test_binary_type_promotion(op, dtype):
    """Every dtype pairing: the result dtype is torch.result_type's and the values are right."""
    rng = rng_for(op.name, dtype, "promotion")
    a = sample_values(rng, (3, 1), dtype, op.domain)
    for other in ALL_DTYPES:
        b = sample_values(rng, (4,), other, op.rhs_domain or op.domain)
        args = (make_tensor(a, dtype), make_tensor(b, other))
        try:
            op.reference(args)
        except Unsupported:
            _expect_refusal(op, lambda args=args: op.fn(*args), f"{dtype}, {other}")
            continue
        if op.name == "sub" and "bool" in (dtype, other):
            _expect_refusal(op, lambda args=args: op.fn(*args), f"{dtype}, {other}")
            continue
        _check(op, args, op.fn(*args), f"({dtype}, {other})")


@pytest.mark.parametrize("op,dtype", op_dtype_params(BINARY_OPS), ids=param_id)
def test_binary_scalar_operands(op, dtype):
    """Python numbers on either side and 0-d tensors of every dtype take part in promotion by
    category only."""
    if not op.supports(dtype):
        pytest.skip(f"{op.name} does not take {dtype}")
    _skip_if_known(op, "scalar", dtype)
    number_input, number_other = op.number_operands()
    t = make_tensor(sample_values(rng_for(op.name, dtype, "refused"), (2,), dtype, op.domain), dtype)
    if not number_other:  # torch's signature takes a Tensor there: so does ember's
        with pytest.raises(TypeError, match=rf"{op.name}\(\): argument 'other' .*must be Tensor"):
            op.fn(t, 2)
    if not number_input:
        with pytest.raises(TypeError, match=rf"{op.name}\(\): argument 'input' .*must be Tensor"):
            op.fn(2, t)
    for sample in op.scalar_samples(dtype):
        args = sample.tensors((dtype, dtype))
        if op.name == "sub" and any(isinstance(x, bool) for x in args):
            with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool"):
                op.fn(*args)
            continue
        try:
            op.reference(args)
        except Unsupported:
            _expect_refusal(op, lambda args=args: op.fn(*args), f"{sample}")
            continue
        _check(op, args, op.fn(*args), f"{dtype} {sample}")
    rng = rng_for(op.name, dtype, "zero-dim")
    a = make_tensor(sample_values(rng, (2, 3), dtype, op.domain), dtype)
    a_rhs = make_tensor(sample_values(rng, (2, 3), dtype, op.rhs_domain or op.domain), dtype)
    for other in ALL_DTYPES:
        z = make_tensor(sample_values(rng, (), other, op.rhs_domain or op.domain), other)
        z_lhs = make_tensor(sample_values(rng, (), other, op.domain), other)
        for args in ((a, z), (z_lhs, a_rhs)):
            try:
                op.reference(args)
            except Unsupported:
                _expect_refusal(op, lambda args=args: op.fn(*args), f"0-d {other}")
                continue
            if op.name == "sub" and "bool" in (dtype, other):
                _expect_refusal(op, lambda args=args: op.fn(*args), f"0-d {other}")
                continue
            _check(op, args, op.fn(*args), f"{dtype} with 0-d {other}")


# One op per dtype rule runs large in the quick suite; every op does under -m slow.
_LARGE_QUICK = {"exp", "neg", "isnan", "bitwise_not", "add", "div", "atan2", "lt",
                "logical_and", "bitwise_and", "bitwise_left_shift", "floor_divide"}
LARGE_PARAMS = [op if op.name in _LARGE_QUICK else pytest.param(op, marks=pytest.mark.slow)
                for op in ALL_OPS]


@pytest.mark.parametrize("op", LARGE_PARAMS, ids=param_id)
def test_large_input_runs_in_parallel_chunks(op):
    """More elements than one parallel chunk, contiguous and transposed."""
    dtype = "float32" if op.supports("float32") else "int32"
    _skip_if_known(op, "large", dtype)
    sample = op.large_sample(dtype)
    for layout in ("contiguous", "transposed"):
        args = tuple(make_tensor(a, dtype, layout) for a in sample.args)
        _check(op, args, op.fn(*args), f"large {layout}")


# ---------------------------------------------------------------------------------------------
# special values

SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-30, -1e-30, 1e30, -1e30,
            float("inf"), float("-inf"), float("nan")]  # fmt: skip

@pytest.mark.parametrize("op,dtype", op_dtype_params(
    [op for op in ALL_OPS if op.supports("float32")], ("float32", "float64")), ids=param_id)
def test_special_values(op, dtype):
    """nan, +-inf, +-0 and extreme magnitudes, through every floating op."""
    _skip_if_known(op, "special", dtype)
    v = np.array(SPECIALS, dtype=np.float64)
    if op.arity == 1:
        args = (make_tensor(v, dtype),)
    else:
        a, b = np.meshgrid(v, v, indexing="ij")
        args = (make_tensor(a, dtype), make_tensor(b, dtype))
    expected, rdt = op.reference(args)
    got = op.fn(*args)
    assert got.dtype.name == rdt
    g, e = to_numpy(got).astype(np.float64), expected.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(e)
    bad = ~both_nan & ~np.isclose(g, e, rtol=1e-5, atol=1e-30)
    if op.kind in ("CMP", "LOGICAL", "PRED"):
        bad = g != e
    assert not bad.any(), (
        f"{op.name}: mismatches at inputs "
        f"{[tuple(values(x)[np.nonzero(bad)][:5]) for x in args]}: got {g[bad][:5]}, "
        f"expected {e[bad][:5]}"
    )


def test_signed_zero_results():
    z = ember.tensor([0.0, -0.0])
    assert [np.signbit(v) for v in ember.neg(z).tolist()] == [True, False]
    assert [np.signbit(v) for v in ember.abs(ember.tensor([-0.0])).tolist()] == [False]
    assert ember.copysign(ember.tensor([1.0, 1.0]), z).tolist() == [1.0, -1.0]
    assert ember.signbit(z).tolist() == [False, True]


# ---------------------------------------------------------------------------------------------
# variants: method, in-place, out=, operators


def _for_each_dtype(op: OpInfo, check) -> None:
    """Runs check(op, dtype) for every dtype the op takes (one test per op: the checks are
    quick, pytest's per-test overhead is not)."""
    for dtype in ALL_DTYPES:
        if op.supports(dtype):
            check(op, dtype)


def _variant_samples(op: OpInfo, dtype: str) -> list[SampleInput]:
    return _cached_variant_samples(op.name, dtype)


@functools.cache
def _cached_variant_samples(name: str, dtype: str) -> list[SampleInput]:
    op = OPS[name]
    samples = list(op.sample_inputs(dtype))
    keep = [s for s in samples if s.desc in ("noncontig", "broadcast", "contig", "transposed")]
    return keep[:8] + [s for s in samples if s.desc == "noncontig-broadcast"]


@pytest.mark.parametrize("op", ALL_OPS, ids=param_id)
def test_method_variant(op):
    _for_each_dtype(op, _method_variant)


def _method_variant(op, dtype):
    for sample in _variant_samples(op, dtype):
        args = sample.tensors((dtype,) * op.arity)
        method = getattr(args[0], op.fn_name or op.name)
        _check(op, args, method(*args[1:]), f"method {sample}")


@pytest.mark.parametrize("op", ALL_OPS, ids=param_id)
@pytest.mark.parametrize("form", ["method", "function"])
def test_inplace_variant(op, form):
    if not op.inplace:
        pytest.skip(f"{op.name} has no in-place form (test_variants_are_bound)")
    _for_each_dtype(op, functools.partial(_inplace_variant, form=form))


def _inplace_variant(op, dtype, form):
    name = (op.fn_name or op.name) + "_"
    for sample in _variant_samples(op, dtype):
        args = sample.tensors((dtype,) * op.arity)
        x = args[0]
        expected, rdt = op.reference(args)
        if form == "method":
            call = getattr(x, name)
        else:
            call = functools.partial(getattr(ember._C, name), x)
        before, base = x._version, x._base
        if tuple(expected.shape) != tuple(x.shape):
            # the result does not fit self (or its dtype can't hold it: either error may be first)
            with pytest.raises(RuntimeError, match="output with shape|must match|can't be cast"):
                call(*args[1:])
            continue
        if not ember.can_cast(edtype(rdt), x.dtype):
            with pytest.raises(RuntimeError, match="result type .* can't be cast to the desired "
                                                   "output type"):
                call(*args[1:])
            continue
        ret = call(*args[1:])
        assert ret is x, f"{name} must return self"
        assert x._version == before + 1, f"{name} must bump the version once"
        rtol, atol = op.tolerance(x.dtype.name)
        assert_close(x, cast_result(expected, x.dtype.name), x.dtype.name, rtol, atol,
                     msg=f"{name} {sample}")
        if base is not None:  # a view: the write went through to its base
            assert base._version == x._version


@pytest.mark.parametrize("op", ALL_OPS, ids=param_id)
def test_out_variant(op):
    if not op.out:  # torch's TypeError for the keyword
        x = ember.ones(2)
        with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
            op.fn(*(x,) * op.arity, out=ember.empty(2, dtype=ember.bool))
        return
    _for_each_dtype(op, _out_variant)


def _out_variant(op, dtype):
    for sample in _variant_samples(op, dtype)[:4]:
        args = sample.tensors((dtype,) * op.arity)
        expected, rdt = op.reference(args)
        rtol, atol = op.tolerance(rdt)
        # out of the result dtype
        out = ember.empty(tuple(expected.shape), dtype=edtype(rdt))
        assert op.fn(*args, out=out) is out
        assert_close(out, expected, rdt, rtol, atol, msg=f"out= {sample}")
        assert out._version == 1
        # a non-contiguous out
        if expected.ndim == 2 and expected.size > 1:
            base = ember.zeros(tuple(reversed(expected.shape)), dtype=edtype(rdt))
            op.fn(*args, out=base.t())
            assert_close(base.t(), expected, rdt, rtol, atol, msg=f"out=.t() {sample}")
        # an empty out is resized to the result's shape
        out = ember.empty(0, dtype=edtype(rdt))
        op.fn(*args, out=out)
        assert_close(out, expected, rdt, rtol, atol, msg=f"resized out= {sample}")
        # a wider out dtype receives the cast result; a narrower category is refused
        wide = "float64" if is_float(rdt) or rdt != "bool" else "int64"
        out = ember.empty(tuple(expected.shape), dtype=edtype(wide))
        if dtype in op.exact_out and wide != rdt:  # torch: the result dtype only
            with pytest.raises(RuntimeError, match="Found dtype|does not support non-boolean"):
                op.fn(*args, out=out)
            continue
        op.fn(*args, out=out)
        # computed in the result dtype, then widened: the result dtype's tolerance applies
        assert_close(out, cast_result(expected, wide), wide, *op.tolerance(rdt),
                     msg=f"out={wide} {sample}")
        if rdt != "bool":
            out = ember.empty(tuple(expected.shape), dtype=ember.bool)
            refusal = ("Found dtype Bool" if dtype in op.exact_out
                       else "can't be cast to the desired output type Bool")
            with pytest.raises(RuntimeError, match=refusal):
                op.fn(*args, out=out)


BINARY_OPERATORS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "&": operator.and_,
    "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge,
}  # fmt: skip
INPLACE_OPERATORS = {
    "+": operator.iadd, "-": operator.isub, "*": operator.imul, "/": operator.itruediv,
    "//": operator.ifloordiv, "%": operator.imod, "**": operator.ipow, "&": operator.iand,
    "|": operator.ior, "^": operator.ixor, "<<": operator.ilshift, ">>": operator.irshift,
}  # fmt: skip
UNARY_OPERATORS = {"-x": operator.neg, "abs(x)": abs, "~x": operator.invert}

OPERATOR_OPS = [op for op in ALL_OPS if op.operator]


@pytest.mark.parametrize("op", OPERATOR_OPS, ids=param_id)
def test_python_operators(op):
    _for_each_dtype(op, _python_operators)


def _python_operators(op, dtype):
    if op.arity == 1:
        f = UNARY_OPERATORS[op.operator]
        for sample in _variant_samples(op, dtype):
            (x,) = sample.tensors((dtype,))
            _check(op, (x,), f(x), f"{op.operator} {sample}")
        return
    f = BINARY_OPERATORS[op.operator]
    for sample in _variant_samples(op, dtype):
        args = sample.tensors((dtype, dtype))
        _check(op, args, f(*args), f"{op.operator} {sample}")
    # reflected: a Python number on the left (an operator takes one on either side, whatever
    # the function's signature: 2 == t is t.__eq__(2))
    for sample in op.scalar_samples(dtype, signature=False):
        args = sample.tensors((dtype, dtype))
        if op.name == "sub" and any(isinstance(x, bool) for x in args):
            continue
        try:
            op.reference(args)
        except Unsupported:
            continue
        _check(op, args, f(*args), f"{op.operator} {sample}")


@pytest.mark.parametrize("op", [op for op in OPERATOR_OPS if op.operator in INPLACE_OPERATORS],
                         ids=param_id)
def test_inplace_python_operators(op):
    _for_each_dtype(op, _inplace_python_operators)


def _inplace_python_operators(op, dtype):
    f = INPLACE_OPERATORS[op.operator]
    rng = rng_for(op.name, dtype, "iop")
    a = sample_values(rng, (3, 4), dtype, op.domain)
    for other in (sample_values(rng, (4,), dtype, op.rhs_domain or op.domain),
                  sample_values(rng, (3, 4), dtype, op.rhs_domain or op.domain)):
        x = make_tensor(a, dtype, "transposed")
        y = make_tensor(other, dtype)
        expected, rdt = op.reference((x, y))
        if not ember.can_cast(edtype(rdt), x.dtype):
            with pytest.raises(RuntimeError, match="can't be cast"):
                f(x, y)
            continue
        keep = x
        x = f(x, y)
        assert x is keep, f"{op.operator}= must update the tensor in place"
        assert_close(x, cast_result(expected, dtype), dtype, *op.tolerance(dtype),
                     msg=f"{op.operator}=")


def test_operators_with_foreign_types_defer():
    t = ember.ones(2)
    with pytest.raises(TypeError):
        t + "a"
    with pytest.raises(TypeError):
        "a" * t
    with pytest.raises(TypeError):
        t + object()

    class Other:
        def __radd__(self, other):
            return "Other.__radd__"

        def __rmul__(self, other):
            return "Other.__rmul__"

    assert t + Other() == "Other.__radd__"
    assert t * Other() == "Other.__rmul__"
    assert (t == "a") is False
    assert (t != "a") is True


def test_operators_with_numpy_scalars():
    t = ember.tensor([1.0, 2.0])
    for s in (np.float32(2.0), np.float64(2.0), np.int64(2)):
        assert (t * s).tolist() == [2.0, 4.0]
        r = s * t
        assert isinstance(r, ember.Tensor), type(r)
        assert r.tolist() == [2.0, 4.0]
        assert r.dtype == ember.float32  # a NumPy scalar counts as a Python number
    assert (np.bool_(True) + ember.tensor([1, 2])).tolist() == [2, 3]


def test_unary_plus_and_hash():
    t = ember.tensor([1.0, -2.0])
    assert +t is t
    assert hash(t) == hash(t)
    assert len({t, ember.tensor([1.0, -2.0])}) == 2  # hashed by identity, like torch


# ---------------------------------------------------------------------------------------------
# arguments of add/sub/div


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
def test_add_sub_alpha(dtype):
    a = ember.tensor([[1, 2, 3], [4, 5, 6]], dtype=edtype(dtype))
    b = ember.tensor([10, 20, 30], dtype=edtype(dtype))
    na, nb = to_numpy(a).astype(np.float64), to_numpy(b).astype(np.float64)
    assert_close(ember.add(a, b, alpha=2), na + 2 * nb, dtype)
    assert_close(a.add(b, alpha=-1), na - nb, dtype)
    assert_close(ember.sub(a, b, alpha=3), na - 3 * nb, dtype)
    assert_close(a.sub(5, alpha=2), na - 10, dtype)
    x = a.clone()
    x.add_(b, alpha=2)
    assert_close(x, na + 2 * nb, dtype)
    x.sub_(b, alpha=2)
    assert_close(x, na, dtype)
    out = ember.empty(2, 3, dtype=edtype(dtype))
    ember.add(a, b, alpha=2, out=out)
    assert_close(out, na + 2 * nb, dtype)
    if is_float(dtype):
        assert_close(ember.add(a, b, alpha=0.5), na + 0.5 * nb, dtype)
    else:
        with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
            ember.add(a, b, alpha=0.5)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8", "uint8"])
@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_div_rounding_mode(dtype, mode):
    lo = 0 if dtype == "uint8" else -9
    a = np.arange(lo, 10, dtype=np.int64).astype(np.float64)
    b = np.array([3.0, -2.0, 4.0, 7.0, -5.0, 1.0] * 4)[: a.size] if lo < 0 else np.full(a.size, 3.0)
    ta, tb = make_tensor(a, dtype), make_tensor(b, dtype)
    with np.errstate(all="ignore"):
        if mode is None:
            rdt = dtype if is_float(dtype) else "float32"
            exp = a / b
        elif mode == "trunc":
            rdt, exp = dtype, np.trunc(a / b)
        else:
            rdt, exp = dtype, np.floor_divide(a, b)
    assert_close(ember.div(ta, tb, rounding_mode=mode), exp, rdt)
    assert_close(ta.div(tb, rounding_mode=mode), exp, rdt)
    x = ta.clone()
    if ember.can_cast(edtype(rdt), x.dtype):
        x.div_(tb, rounding_mode=mode)
        assert_close(x, exp, dtype)
    else:
        with pytest.raises(RuntimeError, match="result type Float can't be cast"):
            x.div_(tb, rounding_mode=mode)
    if mode == "floor":
        assert_close(ta // tb, exp, rdt)


def test_integer_floor_and_trunc_division_signs():
    a = ember.tensor([7, -7, 7, -7])
    b = ember.tensor([2, 2, -2, -2])
    assert ember.floor_divide(a, b).tolist() == [3, -4, -4, 3]
    assert ember.div(a, b, rounding_mode="trunc").tolist() == [3, -3, -3, 3]
    assert ember.remainder(a, b).tolist() == [1, 1, -1, -1]
    assert ember.fmod(a, b).tolist() == [1, -1, 1, -1]
    # the most negative value divided by -1 wraps, like PyTorch, rather than trapping
    m = ember.tensor([-128], dtype=ember.int8)
    assert ember.floor_divide(m, -1).tolist() == [-128]
    assert ember.remainder(m, -1).tolist() == [0]


def test_integer_pow_with_negative_tensor_exponent():
    base = ember.tensor([2, 1, -1, -1, 3])
    exp = ember.tensor([-1, -3, -3, -2, 0])
    assert (base**exp).tolist() == [0, 1, -1, 1, 1]
    assert (2 ** ember.tensor([-2, 0, 3])).tolist() == [0, 1, 8]


def test_bool_arithmetic_is_logical():
    t, f = ember.tensor([True, True, False]), ember.tensor([True, False, False])
    assert (t + f).dtype == ember.bool and (t + f).tolist() == [True, True, False]
    assert (t * f).tolist() == [True, False, False]
    assert ember.maximum(t, f).tolist() == [True, True, False]
    assert ember.minimum(t, f).tolist() == [True, False, False]
    assert (t & f).tolist() == [True, False, False]
    assert (t | f).tolist() == [True, True, False]
    assert (t ^ f).tolist() == [False, True, False]
    assert (~t).tolist() == [False, False, True]
    assert (t + 1).tolist() == [2, 2, 1] and (t + 1).dtype == ember.int64
    assert (t * 1.5).dtype == ember.float32


# ---------------------------------------------------------------------------------------------
# the parametrised ops: where, clamp/clip, lerp, nan_to_num, round

PARAM_LIST = list(PARAM_OPS.values())


@pytest.mark.parametrize("op,dtype", op_dtype_params(PARAM_LIST), ids=param_id)
def test_param_op_matches_reference(op, dtype):
    for sample in op.sample_inputs(dtype):
        args = op.args_for(sample, dtype)
        try:
            expected, rdt = op.reference(args, sample.kwargs)
        except Unsupported:
            assert not op.supports(dtype) or sample.kwargs.get("decimals"), (op.name, dtype)
            with pytest.raises(NotImplementedError):
                op.call(args, sample.kwargs)
            continue
        got = op.call(args, sample.kwargs)
        rtol, atol = op.tolerance(rdt)
        assert_close(got, expected, rdt, rtol, atol, msg=f"{op.name} {dtype} {sample}")


def test_where_forms():
    c = ember.tensor([True, False, True])
    a, b = ember.tensor([1.0, 2.0, 3.0]), ember.tensor([-1.0, -2.0, -3.0])
    assert ember.where(c, a, b).tolist() == [1.0, -2.0, 3.0]
    assert a.where(c, b).tolist() == [1.0, -2.0, 3.0]
    assert a.where(c, 0).tolist() == [1.0, 0.0, 3.0]
    assert ember.where(c, 1, 0).dtype == ember.int64
    assert ember.where(c, 1.0, 0).dtype == ember.float32
    assert ember.where(c, ember.tensor(1, dtype=ember.int8), 2).dtype == ember.int8
    # a uint8 condition is accepted as a mask (deprecated in PyTorch, still taken)
    u8 = ember.where(ember.tensor([1, 0], dtype=ember.uint8), 1.0, 2.0)
    assert u8.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_lerp_in_place_and_out_forms(dtype):
    s = make_tensor(np.array([0.3, 0.7, -1.2, 2.0]), dtype)
    e = make_tensor(np.array([1.1, -0.4, 2.5, 2.0]), dtype)
    w = make_tensor(np.array([0.1, 0.5, 0.9, 0.3]), dtype)
    sf, ef, wf = (to_numpy(t).astype(np.float64) for t in (s, e, w))
    for weight, wv in ((0.25, 0.25), (w, wf)):
        expected = sf + wv * (ef - sf)
        assert_close(s.lerp(e, weight), expected, dtype)
        y = s.clone()
        v = y._version
        assert y.lerp_(e, weight) is y and y._version > v
        assert_close(y, expected, dtype)
        out = ember.empty(4, dtype=edtype(dtype))
        assert ember.lerp(s, e, weight, out=out) is out
        assert_close(out, expected, dtype)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        s.clone().lerp_(ember.ones(2, 4, dtype=edtype(dtype)), 0.5)


@pytest.mark.parametrize("dtype", ["float32", "int32", "float16"])
def test_clamp_forms(dtype):
    x = make_tensor(np.array([-3, -1, 0, 2, 5], dtype=np.float64), dtype)
    exp = np.clip(to_numpy(x).astype(np.float64), -1, 2)
    assert_close(ember.clamp(x, -1, 2), exp, dtype)
    assert_close(ember.clip(x, -1, 2), exp, dtype)
    assert_close(x.clamp(-1, 2), exp, dtype)
    assert_close(x.clip(min=-1, max=2), exp, dtype)
    assert_close(x.clamp(min=-1), np.maximum(to_numpy(x), -1), dtype)
    assert_close(x.clamp(max=2), np.minimum(to_numpy(x), 2), dtype)
    out = ember.empty(5, dtype=edtype(dtype))
    assert ember.clamp(x, -1, 2, out=out) is out
    assert_close(out, exp, dtype)
    out = ember.empty(5, dtype=edtype(dtype))
    ember.clamp(x, max=2, out=out)
    assert_close(out, np.minimum(to_numpy(x), 2), dtype)
    for inplace in (lambda t: t.clamp_(-1, 2), lambda t: t.clip_(-1, 2),
                    lambda t: ember.clamp_(t, -1, 2)):
        y = x.clone()
        v = y._version
        assert inplace(y) is y
        assert_close(y, exp, dtype)
        assert y._version > v
    # a floating bound promotes an integer input (out of place) and is refused in place
    if not is_float(dtype):
        assert ember.clamp(x, -0.5, 1.5).dtype == ember.float32
        with pytest.raises(RuntimeError, match="result type Float can't be cast"):
            x.clone().clamp_(-0.5, 1.5)
    # tensor bounds broadcast
    lo = ember.tensor([[-1], [0]], dtype=edtype(dtype))
    r = ember.clamp(x, lo, ember.tensor(2, dtype=edtype(dtype)))
    assert tuple(r.shape) == (2, 5)
    with pytest.raises(TypeError, match="invalid combination"):  # a tensor beside a number
        ember.clamp(x, lo, 2)


def test_lerp_forms():
    s, e = ember.tensor([0.0, 1.0, 2.0]), ember.tensor([10.0, 11.0, 12.0])
    assert np.allclose(ember.lerp(s, e, 0.5).tolist(), [5.0, 6.0, 7.0])
    assert np.allclose(s.lerp(e, 0.25).tolist(), [2.5, 3.5, 4.5])
    assert np.allclose(s.lerp(e, ember.tensor([0.0, 1.0, 2.0])).tolist(), [0.0, 11.0, 22.0])
    out = ember.empty(3)
    assert ember.lerp(s, e, 1.0, out=out) is out
    assert out.tolist() == [10.0, 11.0, 12.0]  # weight 1 gives `end` exactly


def test_nan_to_num_forms():
    x = ember.tensor([float("nan"), float("inf"), -float("inf"), 1.0])
    big = float(np.finfo(np.float32).max)
    assert ember.nan_to_num(x).tolist() == [0.0, big, -big, 1.0]
    assert x.nan_to_num(nan=2.0, posinf=3.0, neginf=-3.0).tolist() == [2.0, 3.0, -3.0, 1.0]
    out = ember.empty(4)
    assert ember.nan_to_num(x, 1.0, out=out) is out
    assert out.tolist() == [1.0, big, -big, 1.0]
    y = x.clone()
    assert y.nan_to_num_(posinf=7.0) is y
    assert y.tolist() == [0.0, 7.0, -big, 1.0]
    h = ember.nan_to_num(x.half())
    assert h.dtype == ember.float16 and h.tolist() == [0.0, 65504.0, -65504.0, 1.0]
    i = ember.tensor([1, 2])
    assert ember.nan_to_num(i).tolist() == [1, 2] and ember.nan_to_num(i) is not i


def test_round_forms():
    x = ember.tensor([0.5, 1.5, 2.5, -0.5, 1.25, -1.25])
    f32 = [float(np.float32(v)) for v in (0.5, 1.5, 2.5, -0.5, 1.2, -1.2)]
    assert ember.round(x).tolist() == [0.0, 2.0, 2.0, -0.0, 1.0, -1.0]
    assert x.round().tolist() == [0.0, 2.0, 2.0, -0.0, 1.0, -1.0]
    assert x.round(decimals=1).tolist() == f32
    assert ember.round(ember.tensor([1234.5678]), decimals=-2).tolist() == [1200.0]
    out = ember.empty(6)
    assert ember.round(x, out=out) is out
    y = x.clone()
    assert y.round_() is y and y.tolist() == [0.0, 2.0, 2.0, -0.0, 1.0, -1.0]
    y = x.clone()
    y.round_(decimals=1)
    assert y.tolist() == f32
    assert ember.round(ember.tensor([3, -4])).tolist() == [3, -4]


# ---------------------------------------------------------------------------------------------
# in-place ops through views, and the version counter


def test_inplace_through_views_writes_the_base():
    base = ember.zeros(4, 6)
    base[1:3, ::2].add_(1)
    base.t()[0].sub_(5)  # column 0
    exp = np.zeros((4, 6))
    exp[1:3, ::2] += 1
    exp[:, 0] -= 5
    assert_close(base, exp, "float32")


def test_version_counter():
    x = ember.zeros(3, 4)
    assert x._version == 0
    v = x[1]
    x.add_(1)
    assert x._version == 1 and v._version == 1
    v.mul_(2)
    assert x._version == 2
    ember.exp(x, out=x)
    assert x._version == 3
    x[0, 0] = 5.0
    assert x._version == 4 and v._version == 4
    x += 1
    assert x._version == 5
    y = x + 1  # out-of-place ops leave the inputs' versions alone
    assert x._version == 5 and y._version == 0
    x.copy_(y)
    assert x._version == 6
    x.fill_(0)
    x.zero_()
    assert x._version == 8
    d = x.detach()  # detach shares data and version counter
    d.add_(1)
    assert x._version == 9


@pytest.mark.parametrize("dtype", ["float32", "int8", "int64", "complex128", "bool"])
@pytest.mark.parametrize("cols", [1, 31, 63, 64, 65, 200, 3000])
def test_copy_of_rows_and_runs(dtype, cols):
    # Same-dtype copies whose rows are contiguous on both sides go to memcpy (one run, or a row
    # at a time from 256 bytes): broadcast rows (a bias into Linear's output), a slice of a
    # wider matrix on either side, and whole contiguous runs, against NumPy.
    rng = np.random.default_rng(cols)
    src = (rng.standard_normal((7, cols)) * 50).astype(dtype)
    row = src[:1]
    wide = np.zeros((7, cols + 5), dtype)
    out = ember.tensor(wide)
    out[:, 2:cols + 2].copy_(ember.tensor(row).expand(7, cols))  # broadcast rows into a slice
    expected = wide.copy()
    expected[:, 2:cols + 2] = row
    np.testing.assert_array_equal(out.numpy(), expected)
    got = ember.empty(7, cols, dtype=getattr(ember, dtype))
    got.copy_(ember.tensor(np.concatenate([src, src], axis=1))[:, cols:])  # from a wider matrix
    np.testing.assert_array_equal(got.numpy(), src)
    flat = ember.empty(7 * cols, dtype=getattr(ember, dtype))
    flat.copy_(ember.tensor(src).reshape(-1))  # one contiguous run
    np.testing.assert_array_equal(flat.numpy(), src.reshape(-1))
    assert ember.tensor(src).t().contiguous().t().contiguous().numpy().tolist() == src.tolist()


@pytest.mark.parametrize("dtype", ["bool", "int16", "float32", "float64", "complex128"])
@pytest.mark.parametrize("shape", [(8, 512), (9, 513), (67, 131), (300, 257), (1030, 7), (2, 4096)])
def test_transposing_copy(dtype, shape):
    # x.t().contiguous() goes through 8 x 8 blocks within 1 KiB tiles (element sizes 1 to 16
    # bytes): shapes that end mid-block and mid-tile on both sides, from a whole matrix, a
    # column slice (rows longer than the tile's) and into a slice of a wider output, against
    # NumPy.
    rng = np.random.default_rng(shape[0] * 7 + shape[1])
    src = (rng.standard_normal((shape[0], shape[1] + 3)) * 50).astype(dtype)
    x = ember.tensor(src)
    np.testing.assert_array_equal(x.t().contiguous().numpy(), src.T)
    np.testing.assert_array_equal(x[:, 2:].t().contiguous().numpy(), src[:, 2:].T)
    wide = ember.zeros(shape[1] + 3, shape[0] + 5, dtype=getattr(ember, dtype))
    wide[:, 1:shape[0] + 1].copy_(x.t())
    expected = np.zeros((shape[1] + 3, shape[0] + 5), dtype)
    expected[:, 1:shape[0] + 1] = src.T
    np.testing.assert_array_equal(wide.numpy(), expected)


@pytest.mark.parametrize("op", [op for op in UNARY_OPS if op.supports("float32")], ids=param_id)
def test_unary_on_expanded_input(op):
    """A broadcast (stride-0) input is read correctly; writing into it is refused."""
    x = make_tensor(sample_values(rng_for(op.name, "expand"), (1, 4), "float32", op.domain),
                    "float32")
    xe = x.expand(3, 4)
    expected, rdt = op.reference((xe,))
    assert_close(op.fn(xe), expected, rdt, *op.tolerance(rdt))
    if rdt == "float32":
        with pytest.raises(RuntimeError, match="single memory location"):
            getattr(xe, (op.fn_name or op.name) + "_")()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_binary_mixed_layout_and_dtype(dtype):
    """A non-contiguous operand converted to the compute dtype on the way in."""
    a = make_tensor(np.arange(12.0).reshape(3, 4), "int32", "transposed")
    b = make_tensor(np.linspace(-1, 1, 4), dtype, "strided")
    r = a * b
    assert r.dtype.name == dtype
    expected = np.arange(12.0).reshape(3, 4) * to_numpy(b).astype(np.float64)
    assert_close(r, round_to(expected, dtype), dtype)


def test_result_type_reference_agrees_with_ember():
    """opdb's own promotion (used for every expected dtype above) against ember.result_type."""
    for a in ALL_DTYPES:
        for b in ALL_DTYPES:
            ta, tb = ember.ones(2, dtype=edtype(a)), ember.ones((), dtype=edtype(b))
            assert result_type(ta, tb) == ember.result_type(ta, tb).name, (a, b)
            assert result_type(tb, 1.5) == ember.result_type(tb, 1.5).name, (b,)


def test_sample_layouts_are_what_they_claim():
    a = np.arange(20.0).reshape(4, 5)
    assert make_tensor(a, "float32").is_contiguous()
    for layout in ("transposed", "strided"):
        t = make_tensor(a, "float32", layout)
        assert not t.is_contiguous(), layout
        assert t.tolist() == a.tolist()
    t = make_tensor(a, "float32", "offset")
    assert t.storage_offset() > 0 and t.tolist() == a.tolist()
    assert not make_tensor(np.arange(9.0), "int8", "strided").is_contiguous()


# ---------------------------------------------------------------------------------------------
# against PyTorch itself (where installed)

TORCH_SPECIALS = [float("nan"), float("inf"), float("-inf"), -0.0]


def _torch_close(got: ember.Tensor, want, dtype: str, op: OpInfo) -> None:
    g = np.array(got.float().tolist() if dtype in ("float16", "bfloat16") else got.tolist())
    w = np.array(want.float().tolist() if dtype in ("float16", "bfloat16") else want.tolist())
    assert g.shape == w.shape
    if is_float(dtype):
        rtol, atol = op.tolerance(dtype)
        np.testing.assert_allclose(g, w, rtol=max(2 * rtol, 1e-5), atol=max(2 * atol, 1e-6),
                                   equal_nan=True, err_msg=f"{op.name} {dtype}")
    else:
        np.testing.assert_array_equal(g, w, err_msg=f"{op.name} {dtype}")


@pytest.mark.parametrize("op", [op for op in ALL_OPS if op.fn_name is None], ids=param_id)
def test_op_matches_torch(op, torch):
    """Same dtype, same values (or both refuse) as PyTorch, for every input dtype."""
    for dtype in ALL_DTYPES:
        if op.skip_reason("torch", dtype):
            continue
        rng = rng_for(op.name, dtype, "torch")
        shapes = [(3, 4)] if op.arity == 1 else [(4, 1), (5,)]
        arrays = [sample_values(rng, s, dtype, op.domain if i == 0 else
                                (op.rhs_domain or op.domain)) for i, s in enumerate(shapes)]
        if is_float(dtype):
            arrays[0].reshape(-1)[: len(TORCH_SPECIALS)] = TORCH_SPECIALS
        args = [make_tensor(a, dtype) for a in arrays]
        targs = [torch.tensor(a.tolist(), dtype=getattr(torch, dtype)) for a in arrays]
        tfn = (getattr(torch.special, op.name.removeprefix("special_"))
               if op.name.startswith("special_") else getattr(torch, op.name))
        try:
            want = tfn(*targs)
        except (RuntimeError, TypeError) as e:
            with pytest.raises(type(e) if isinstance(e, NotImplementedError) else RuntimeError):
                op.fn(*args)
            continue
        got = op.fn(*args)
        assert got.dtype.name == str(want.dtype).split(".")[-1], (op.name, dtype)
        _torch_close(got, want, got.dtype.name, op)


def test_assert_close_detects_mismatches():
    """The comparison every test above relies on fails where it should."""
    t = ember.tensor([1.0, float("nan"), float("inf")])
    assert_close(t, np.array([1.0, np.nan, np.inf]), "float32")
    for bad in ([1.001, np.nan, np.inf], [1.0, 0.0, np.inf], [1.0, np.nan, 1e30],
                [1.0, np.nan, -np.inf]):
        with pytest.raises(AssertionError):
            assert_close(t, np.array(bad), "float32")
    with pytest.raises(AssertionError, match="dtype"):
        assert_close(t, np.array([1.0, np.nan, np.inf]), "float64")
    with pytest.raises(AssertionError, match="shape"):
        assert_close(t, np.array([[1.0, np.nan, np.inf]]), "float32")
    with pytest.raises(AssertionError):
        assert_close(ember.tensor([1, 2]), np.array([1, 3]), "int64")


# ---------------------------------------------------------------------------------------------
# libm's functions through glibc's vector math library (csrc/kernels/vector_libm.h)

# name -> (its exact value with mpmath, the interval sampled): every function libmvec
# vectorises for ember
VECTOR_LIBM = {
    "sin": (lambda m, v: m.sin(v), (-20, 20)), "cos": (lambda m, v: m.cos(v), (-20, 20)),
    "tan": (lambda m, v: m.tan(v), (-3, 3)), "asin": (lambda m, v: m.asin(v), (-1, 1)),
    "acos": (lambda m, v: m.acos(v), (-1, 1)), "atan": (lambda m, v: m.atan(v), (-50, 50)),
    "sinh": (lambda m, v: m.sinh(v), (-20, 20)), "cosh": (lambda m, v: m.cosh(v), (-20, 20)),
    "tanh": (lambda m, v: m.tanh(v), (-6, 6)), "asinh": (lambda m, v: m.asinh(v), (-50, 50)),
    "acosh": (lambda m, v: m.acosh(v), (1, 50)),
    "atanh": (lambda m, v: m.atanh(v), (-0.999, 0.999)),
    "exp": (lambda m, v: m.exp(v), (-40, 40)), "exp2": (lambda m, v: m.power(2, v), (-60, 60)),
    "expm1": (lambda m, v: m.expm1(v), (-5, 5)), "log": (lambda m, v: m.log(v), (1e-3, 100)),
    "log2": (lambda m, v: m.log(v, 2), (1e-3, 100)),
    "log10": (lambda m, v: m.log10(v), (1e-3, 100)),
    "log1p": (lambda m, v: m.log1p(v), (-0.9, 10)),
    "erf": (lambda m, v: m.erf(v), (-4, 4)), "erfc": (lambda m, v: m.erfc(v), (-3, 9)),
}


def _ulps(got: np.ndarray, exact: list, dtype) -> np.ndarray:
    """|got - exact| in units of the dtype's spacing at the exact value."""
    import mpmath

    out = np.empty(len(exact))
    for i, (g, e) in enumerate(zip(got.tolist(), exact)):
        spacing = np.spacing(dtype(abs(float(e))))  # subnormal spacing below the normal range
        out[i] = float(abs(mpmath.mpf(g) - e) / mpmath.mpf(float(spacing)))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(VECTOR_LIBM))
def test_libm_functions_within_four_ulps(name, dtype):
    """Against mpmath at 40 digits: within 4 ulps (glibc's bound for its vector functions; the
    scalar ones are within 1), on a contiguous tensor (the vectorised body) and one element at
    a time (the scalar function)."""
    mpmath = pytest.importorskip("mpmath")
    exact_of, (lo, hi) = VECTOR_LIBM[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    x = rng.uniform(lo, hi, 600).astype(dtype)
    with mpmath.workdps(40):
        exact = [exact_of(mpmath, mpmath.mpf(float(v))) for v in x]
        vector = getattr(ember, name)(ember.tensor(x)).numpy()
        worst = _ulps(vector, exact, dtype).max()
        assert worst <= 4, f"{name} {dtype.__name__}: {worst:.2f} ulps"
        scalar = np.array([getattr(ember, name)(ember.tensor(x[i:i + 1])).item()
                           for i in range(0, len(x), 37)], dtype=dtype)
        assert _ulps(scalar, exact[::37], dtype).max() <= 4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_libm_functions_special_values_vector_as_scalar(dtype):
    """NaN, inf, signed zeros, subnormals, huge arguments and overflow: the vectorised body
    (contiguous) gives what the scalar functions give (a strided view of the same values)."""
    specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 1e-40, -1e-40, 5e-324,
                1.0, -1.0, 2.0, 0.5, 1e5, 89.0, 710.0, -745.0, -1e-310, 1e300]
    x = np.repeat(np.array(specials, dtype=dtype), 2)  # long runs: the vector body covers most
    t = ember.tensor(x)
    for name in VECTOR_LIBM:
        vector = getattr(ember, name)(t).numpy()
        scalar = getattr(ember, name)(t[::2]).numpy()
        v = vector[::2]
        same = (v == scalar) & (np.signbit(v) == np.signbit(scalar))
        close = np.isclose(v, scalar, rtol=8 * np.finfo(dtype).eps, atol=0)
        both_nan = np.isnan(v) & np.isnan(scalar)
        assert (same | close | both_nan).all(), (name, x[::2][~(same | close | both_nan)])


def test_vector_libm_is_built_where_glibc_has_it():
    """x86-64 Linux with glibc >= 2.35 and GCC: the build's probe finds libmvec's functions
    (a probe that failed silently would cost 3-10x on sin, log, atan, ...)."""
    import os
    import platform

    libc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
    if platform.machine() != "x86_64" or not libc or not libc.startswith("glibc "):
        pytest.skip("not x86-64 glibc")
    if tuple(map(int, libc.split()[1].split(".")[:2])) < (2, 35):
        pytest.skip(f"{libc}: libmvec lacks most functions before 2.35")
    if "clang" in os.environ.get("CXX", "") + os.environ.get("CC", ""):
        pytest.skip("built by clang, which has no simd declarations for libm")
    if os.environ.get("EMBER_VECTOR_LIBM") == "0":
        pytest.skip("EMBER_VECTOR_LIBM=0")
    assert ember._C._has_vector_libm()


@pytest.mark.parametrize("name", ["pow", "atan2", "hypot"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_libm_functions_of_two_arguments_within_four_ulps(name, dtype):
    """pow, atan2 and hypot through libmvec's two-argument vector forms, against mpmath."""
    mpmath = pytest.importorskip("mpmath")
    rng = np.random.default_rng(sum(map(ord, name)))
    a = rng.uniform(0.01, 30, 500).astype(dtype)
    b = rng.uniform(-8, 8, 500).astype(dtype)
    f = {"pow": mpmath.power, "atan2": mpmath.atan2, "hypot": mpmath.hypot}[name]
    with mpmath.workdps(40):
        exact = [f(mpmath.mpf(float(x)), mpmath.mpf(float(y))) for x, y in zip(a, b)]
        got = getattr(ember, name)(ember.tensor(a), ember.tensor(b)).numpy()
        worst = _ulps(got, exact, dtype).max()
    assert worst <= 4, f"{name} {dtype.__name__}: {worst:.2f} ulps"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("exponent", [2, 3, -2, 2.0, 3.0, -2.0])
def test_pow_by_two_three_and_minus_two_is_products(dtype, exponent):
    """x ** 2, x ** 3 and x ** -2 are torch's products: x * x, (x * x) * x and 1 / (x * x),
    rounded in the dtype after each product, except float16, computed in float32 and rounded
    once (torch's Half kernel); the bits of NumPy's same arithmetic."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal(3001) * rng.choice([1e-20, 1e-3, 1.0, 1e3, 1e15], 3001)
    a[:7] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 3e38]
    x = ember.tensor(a).to(getattr(ember, dtype))
    v = x.float().numpy() if dtype in ("float16", "bfloat16") else x.numpy()
    compute = {"float32": np.float32, "float64": np.float64}.get(dtype, np.float32)
    v = v.astype(compute)

    def rounded(arr):  # to the dtype and back to the compute type
        if dtype == "float16":
            with np.errstate(over="ignore"):
                return arr.astype(np.float16).astype(compute)
        if dtype == "bfloat16":
            return round_to(arr, "bfloat16").astype(compute)
        return arr

    each = (lambda arr: arr) if dtype == "float16" else rounded  # float16: rounded once, at the end
    with np.errstate(over="ignore", divide="ignore", invalid="ignore", under="ignore"):
        square = each(v * v)
        want = {2: square, 3: each(square * v), -2: each(compute(1) / square)}[int(exponent)]
        want = rounded(want)
    got = (x ** exponent)
    assert got.dtype == x.dtype
    got = got.float().numpy() if dtype in ("float16", "bfloat16") else got.numpy()
    np.testing.assert_array_equal(got.astype(compute), want)
    # in place, and into a wider out=
    y = x.clone()
    y.pow_(exponent)
    np.testing.assert_array_equal(y.double().numpy(), got.astype(np.float64))
    out = ember.empty(3001, dtype=ember.float64)
    ember.pow(x, exponent, out=out)
    np.testing.assert_array_equal(out.numpy(), got.astype(np.float64))
