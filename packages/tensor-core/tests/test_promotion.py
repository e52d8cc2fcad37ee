"""Type promotion: ember.promote_types / result_type / can_cast against PyTorch's rules.

The expected table is written out by hand (opdb.PROMOTE_TABLE, from c10/core/ScalarType.cpp);
where NumPy's promotion agrees with PyTorch's it is checked against NumPy as well, and with
torch installed every pairing is compared with torch itself.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
from ember.testing.opdb import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    PROMOTE_TABLE,
    category,
    edtype,
    is_float,
)

PAIRS = list(itertools.product(ALL_DTYPES, ALL_DTYPES))


@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types_table(a, b):
    assert ember.promote_types(edtype(a), edtype(b)) == edtype(PROMOTE_TABLE[a, b])


def test_promote_types_is_symmetric_and_idempotent():
    for a, b in PAIRS:
        ab = ember.promote_types(edtype(a), edtype(b))
        assert ab == ember.promote_types(edtype(b), edtype(a))
    for a in ALL_DTYPES:
        assert ember.promote_types(edtype(a), edtype(a)) == edtype(a)


def _numpy_agrees(a: str, b: str) -> bool:
    """Pairs where NumPy's promotion is PyTorch's: no bfloat16 (NumPy has none), and no integer
    with a float no wider than it (NumPy widens the float to hold every integer: int16 + float16
    is float32 there, float16 in PyTorch)."""
    if "bfloat16" in (a, b):
        return False
    ints = [d for d in (a, b) if d in INT_DTYPES]
    floats = [d for d in (a, b) if is_float(d)]
    if ints and floats:
        return np.dtype(ints[0]).itemsize < np.dtype(floats[0]).itemsize
    return True


@pytest.mark.parametrize("a,b", [p for p in PAIRS if _numpy_agrees(*p)])
def test_promote_types_agrees_with_numpy(a, b):
    assert ember.promote_types(edtype(a), edtype(b)).name == np.promote_types(a, b).name


def test_can_cast_follows_categories():
    for a, b in PAIRS:
        expected = category(a) <= category(b)  # no float -> int, no int -> bool
        assert ember.can_cast(edtype(a), edtype(b)) is expected, (a, b)


def test_dtype_arguments_accept_python_and_numpy_types():
    assert ember.promote_types(ember.int32, float) == ember.float64
    assert ember.promote_types(int, bool) == ember.int64
    assert ember.promote_types(np.dtype("int16"), np.float32) == ember.float32
    with pytest.raises(TypeError, match="expected an ember dtype"):
        ember.promote_types("float32", ember.int8)


# ---------------------------------------------------------------------------------------------
# result_type: dimensioned tensors, then 0-d tensors, then Python numbers


def _t(dt, dim=True):
    return ember.ones(2 if dim else (), dtype=edtype(dt))


@pytest.mark.parametrize("a,b", PAIRS)
def test_result_type_tensors_of_equal_rank(a, b):
    expected = edtype(PROMOTE_TABLE[a, b])
    assert ember.result_type(_t(a), _t(b)) == expected
    assert ember.result_type(_t(a, False), _t(b, False)) == expected


@pytest.mark.parametrize("a,b", PAIRS)
def test_result_type_zero_dim_only_raises_the_category(a, b):
    """A 0-d tensor beside a dimensioned one counts only if it is of a higher category."""
    r = ember.result_type(_t(a), _t(b, False)).name
    if category(b) > category(a):
        assert r == PROMOTE_TABLE[a, b]
    else:
        assert r == a


@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_result_type_python_numbers(dt):
    default = ember.get_default_dtype().name
    t = _t(dt)
    assert ember.result_type(t, True).name == dt
    assert ember.result_type(t, 5).name == ("int64" if dt == "bool" else dt)
    assert ember.result_type(t, 2.5).name == (dt if is_float(dt) else default)
    assert ember.result_type(2.5, t).name == (dt if is_float(dt) else default)
    # with a 0-d tensor the same tiers apply
    z = _t(dt, False)
    assert ember.result_type(z, 5).name == ("int64" if dt == "bool" else dt)


@pytest.mark.parametrize("default", FLOAT_DTYPES)
def test_result_type_follows_the_default_dtype(default, default_dtype):
    default_dtype(edtype(default))
    assert ember.result_type(_t("int32"), 1.5).name == default
    assert ember.result_type(_t("bool"), 1.5).name == default
    assert ember.result_type(_t("float16"), 1.5) == ember.float16  # a tensor's dtype wins
    assert (ember.tensor([1, 2]) / 2).dtype.name == default
    assert ember.exp(ember.tensor([1, 2])).dtype.name == default
    assert ember.sqrt(ember.tensor([True])).dtype.name == default


@pytest.mark.parametrize("a,b", PAIRS)
def test_op_results_follow_result_type(a, b):
    """The dtype an op returns is result_type's, for tensors and 0-d tensors alike."""
    for x, y in ((_t(a), _t(b)), (_t(a), _t(b, False)), (_t(a, False), _t(b))):
        r = ember.result_type(x, y)
        if r != ember.bool:  # bool - bool is refused
            assert ember.mul(x, y).dtype == r
        assert ember.maximum(x, y).dtype == r
        assert ember.eq(x, y).dtype == ember.bool
        assert ember.div(x, y).dtype == (r if r.is_floating_point else ember.get_default_dtype())


def test_examples_from_the_pytorch_docs():
    """The examples of PyTorch's "Type promotion" documentation."""
    float_tensor = ember.ones(1, dtype=ember.float)
    double_tensor = ember.ones(1, dtype=ember.double)
    int_tensor = ember.ones(1, dtype=ember.int)
    long_tensor = ember.ones(1, dtype=ember.long)
    uint_tensor = ember.ones(1, dtype=ember.uint8)
    bool_tensor = ember.ones(1, dtype=ember.bool)
    long_zerodim = ember.tensor(1, dtype=ember.long)
    int_zerodim = ember.tensor(1, dtype=ember.int)

    assert (5 + 5.0) == 10.0
    assert (int_tensor + 5).dtype == ember.int32
    assert (int_tensor + long_zerodim).dtype == ember.int32
    assert (long_tensor + int_tensor).dtype == ember.int64
    assert (bool_tensor + long_tensor).dtype == ember.int64
    assert (bool_tensor + uint_tensor).dtype == ember.uint8
    assert (float_tensor + double_tensor).dtype == ember.float64
    assert (bool_tensor + int_tensor).dtype == ember.int32
    assert ember.add(long_tensor, float_tensor).dtype == ember.float32
    assert (int_zerodim + 5).dtype == ember.int32  # was ember.tensor(1, int) + 5
    # in-place / out= may not lower the category
    int_tensor.add_(long_tensor)  # int64 result into int32: same category, allowed
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Int"):
        int_tensor.add_(1.5)
    float_tensor *= double_tensor
    float_tensor *= int_tensor
    float_tensor *= uint_tensor
    float_tensor *= bool_tensor
    int_tensor *= uint_tensor
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        long_tensor *= float_tensor


# ---------------------------------------------------------------------------------------------
# against PyTorch itself


def test_promote_types_and_can_cast_match_torch(torch):
    for a, b in PAIRS:
        tp = torch.promote_types(getattr(torch, a), getattr(torch, b))
        assert ember.promote_types(edtype(a), edtype(b)).name == str(tp).split(".")[-1], (a, b)
        assert ember.can_cast(edtype(a), edtype(b)) == torch.can_cast(
            getattr(torch, a), getattr(torch, b)
        ), (a, b)


@pytest.mark.parametrize("default", ["float32", "float64", "float16", "bfloat16"])
def test_result_type_matches_torch(torch, default, default_dtype):
    default_dtype(edtype(default))
    torch.set_default_dtype(getattr(torch, default))

    def operands(lib):
        yield from ((f"{dt}[2]", lib.ones(2, dtype=getattr(lib, dt))) for dt in ALL_DTYPES)
        yield from ((f"{dt}[]", lib.ones((), dtype=getattr(lib, dt))) for dt in ALL_DTYPES)
        yield from ((repr(v), v) for v in (True, 3, 2.5))

    mismatches = []
    for (name_a, ea), (_, ta) in zip(operands(ember), operands(torch)):
        for (name_b, eb), (_, tb) in zip(operands(ember), operands(torch)):
            if not isinstance(ea, ember.Tensor) and not isinstance(eb, ember.Tensor):
                continue
            e = ember.result_type(ea, eb).name
            t = str(torch.result_type(ta, tb)).split(".")[-1]
            if e != t:
                mismatches.append((name_a, name_b, e, t))
    assert not mismatches, mismatches[:10]
