"""Input chosen to break the core, as a hostile or careless user would: shapes, strides and
offsets whose arithmetic overflows an int64, data that is ragged, fill values a dtype cannot
hold, arguments past a matrix's edge. Each must raise PyTorch's exception (or give PyTorch's
result), never crash the process or return a wrong answer.

The reproducers of former crashes run in a child process first, so that a regression reports
every one of them instead of killing the test run at the first.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ember

INT64_MAX = 2**63 - 1

# Each former segfault or wrong shape, with the exception PyTorch raises for it and a piece of
# its message.
FORMER_CRASHES = [
    ("ember.tensor(1.0).unflatten(0, (1,))", "RuntimeError",  # (torch's handler's class)
     "unflatten got an unexpected error:\nDimension specified as 0 but tensor has no dimensions"),
    ("ember.zeros(10).as_strided((5,), (2**61 + 1,))[1]", "RuntimeError",
     "Storage size calculation overflowed with sizes=[5] and strides=[2305843009213693953]"),
    ("ember.empty_strided((3,), (2**61 + 1,)).tolist()", "RuntimeError",
     "Storage size calculation overflowed with sizes=[3] and strides=[2305843009213693953]"),
    ("ember.zeros(0).view(2**62, 4)[12345678]", "RuntimeError", "is invalid for input of size 0"),
    ("ember.zeros(0).reshape(2**32, 2**32)[5]", "RuntimeError", "is invalid for input of size 0"),
    ("ember.ones(1, 1).expand(-2, 1)", "RuntimeError",
     "Trying to create tensor with negative dimension -2: [-2, 1]"),
    ("ember.ones(1, 1).expand(2**62, 4)", "RuntimeError", "numel: integer multiplication overflow"),
    ("ember.ones(1, 1).expand(2**32, 2**32)", "RuntimeError",
     "numel: integer multiplication overflow"),
    ("ember.zeros(10).as_strided((5,), (3,), 2**62)", "RuntimeError",
     "Storage size calculation overflowed with sizes=[5] and strides=[3]"),
    ("ember.empty(2**62, 4)", "RuntimeError",
     "Storage size calculation overflowed with sizes=[4611686018427387904, 4]"),
    ("ember.empty(2**61)", "RuntimeError",
     "Storage size calculation overflowed with sizes=[2305843009213693952]"),
    ("ember.ones(0).unflatten(0, (2**62, 4, 0))", "RuntimeError",
     "unflatten: Provided sizes [4611686018427387904, 4, 0] don't multiply up to the size of "
     "dim 0 (0)"),
    ("ember.ones(1).repeat(2**62, 4)", "RuntimeError", "overflow"),
    ("ember.ones(3).resize_(2**62, 4)", "RuntimeError", "Storage size calculation overflowed"),
    ("ember.ones(3).set_(ember.ones(4).untyped_storage(), 0, (5,), (2**60,))", "RuntimeError",
     "Storage size calculation overflowed with sizes=[5] and strides=[1152921504606846976]"),
    ("ember.ones(3).set_(ember.ones(4).untyped_storage(), 2**62, (1,), (1,))", "RuntimeError",
     "Storage size calculation overflowed"),
    ("ember.tril_indices(2**62, 2**62)", "RuntimeError", "Storage size calculation overflowed"),
    ("ember.tensor([1, [2, 3]])", "TypeError", "cannot be interpreted as a number"),
    ("ember.tensor([[1], 2])", "TypeError", "not a sequence"),
    ("ember.tensor_split(ember.ones(4), 2**63 - 1)", "RuntimeError", "more than this machine"),
    ("ember.chunk(ember.ones(0), 2**62)", "RuntimeError", "more than this machine"),
    ("ember.split(ember.ones(1).expand(2**62), 1)", "RuntimeError", "more than this machine"),
]


def test_former_crashes_raise_torchs_errors_in_a_child_process():
    """All at once in one child process: a crash is reported with the case that caused it."""
    script = textwrap.dedent("""
        import json, sys
        import ember
        results = []
        for code in json.loads(sys.argv[1]):
            print("RUNNING", code, file=sys.stderr, flush=True)  # the last line names a crash
            try:
                eval(code)
                results.append(["returned", ""])
            except Exception as e:
                results.append([type(e).__name__, str(e)])
        print(json.dumps(results))
    """)
    codes = [code for code, _, _ in FORMER_CRASHES]
    proc = subprocess.run([sys.executable, "-c", script, json.dumps(codes)],
                          capture_output=True, text=True, timeout=300)
    last = proc.stderr.strip().splitlines()[-1:] or [""]
    assert proc.returncode == 0, f"the child died ({proc.returncode}) at: {last[0]}"
    for (code, cls, message), (got_cls, got_message) in zip(
            FORMER_CRASHES, json.loads(proc.stdout)):
        assert (got_cls, message in got_message) == (cls, True), (code, got_cls, got_message)


def test_views_of_empty_tensors_with_huge_sizes_stay_valid():
    """No element, so no storage reach: a zero makes other sizes legal as long as the running
    product does not overflow first (torch's sequential safe_multiplies)."""
    v = ember.zeros(0).view(2**62, 0, 4)
    assert tuple(v.shape) == (2**62, 0, 4) and v.numel() == 0 and v.sum().item() == 0
    assert ember.empty_strided((0, 2**62), (2**62, 2**62)).numel() == 0
    with pytest.raises(RuntimeError, match="numel: integer multiplication overflow"):
        ember.zeros(0).as_strided((2**62, 4, 0), (1, 1, 1))


# ---- as_strided / empty_strided against exact integer arithmetic ----------------------------

huge_ints = st.one_of(st.integers(0, 6), st.integers(0, INT64_MAX),
                      st.sampled_from([2**31, 2**32, 2**60, 2**61 + 1, 2**62, INT64_MAX]))


def _numel_overflows(sizes) -> bool:
    """c10's safe_multiplies_u64 then the int64 bound: a running product past 2**64 overflows
    even when a later size is 0."""
    product, overflow = 1, False
    for s in sizes:
        product *= s
        overflow |= product >= 2**64
        product %= 2**64
    return overflow or product > INT64_MAX


def _reach(sizes, strides, offset, itemsize):
    """Bytes of storage the geometry addresses, in Python's unbounded integers."""
    if any(s == 0 for s in sizes):
        return 0
    return (offset + 1 + sum((n - 1) * s for n, s in zip(sizes, strides))) * itemsize


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(huge_ints, min_size=0, max_size=3), data=st.data(),
       offset=huge_ints)
def test_as_strided_accepts_exactly_the_geometries_inside_the_storage(sizes, data, offset):
    strides = data.draw(st.lists(huge_ints, min_size=len(sizes), max_size=len(sizes)))
    base = ember.arange(24, dtype=ember.float32)
    need = _reach(sizes, strides, offset, 4)
    try:
        v = base.as_strided(sizes, strides, offset)
    except RuntimeError as e:
        assert need > 24 * 4 or _numel_overflows(sizes), (sizes, strides, offset, str(e))
        return
    assert need <= 24 * 4 and not _numel_overflows(sizes), (sizes, strides, offset)
    if 0 < v.numel() <= 10_000:  # every element readable, and where the arithmetic says
        ref = np.lib.stride_tricks.as_strided(
            np.arange(24, dtype=np.float32)[offset:], sizes,
            [4 * s if n > 1 else 0 for n, s in zip(sizes, strides)])  # a size-1 dim never steps
        np.testing.assert_array_equal(v.numpy(), ref)


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(huge_ints, min_size=1, max_size=3), data=st.data())
def test_empty_strided_refuses_what_overflows_and_allocates_the_rest(sizes, data):
    strides = data.draw(st.lists(huge_ints, min_size=len(sizes), max_size=len(sizes)))
    need = _reach(sizes, strides, 0, 8)
    refused = need > INT64_MAX or _numel_overflows(sizes)
    assume(refused or need <= 1 << 30)  # valid but huge: a real allocation, not the point here
    try:
        t = ember.empty_strided(sizes, strides, dtype=ember.float64)
    except RuntimeError as e:
        assert refused, (sizes, strides, str(e))
        return
    assert t.untyped_storage().nbytes() == need and not _numel_overflows(sizes)
    if need <= 1 << 20 and t.numel() <= 10_000:  # every element writable, then readable
        t.untyped_storage().fill_(0)
        assert t.sum().item() == 0 and len(t.flatten().tolist()) == t.numel()


@pytest.mark.parametrize("sizes,numel", [
    ((2**62, 4), 0), ((2**32, 2**32), 0), ((-1, 2**62, 4), 0), ((2**63 - 1, 2), 4),
    ((-1, 2**63 - 1), 3),
])
def test_view_of_sizes_whose_product_overflows_is_refused(sizes, numel):
    with pytest.raises(RuntimeError, match="is invalid for input of size|ambiguous"):
        ember.zeros(numel).view(*sizes)
    with pytest.raises(RuntimeError, match="is invalid for input of size|ambiguous"):
        ember.zeros(numel).reshape(*sizes)


# ---- silent wrong answers -------------------------------------------------------------------

MASK = [True, False, True]


@pytest.mark.parametrize("dtype,value", [
    (ember.uint8, -3.27), (ember.uint8, 256), (ember.int8, 200), (ember.int8, float("nan")),
    (ember.int16, 1e6), (ember.float16, 1e6), (ember.float16, 65520.0), (ember.bfloat16, 1e39),
    (ember.float32, 1e300), (ember.float16, 100000),
])
def test_fills_refuse_values_the_dtype_cannot_hold(dtype, value):
    """torch's fills check the value (c10's overflows): uint8 masked_fill of -3.27 is an error,
    not 253."""
    t = ember.zeros(3, dtype=dtype)
    m = ember.tensor(MASK)
    fills = [lambda: t.masked_fill(m, value),
             lambda: t.masked_fill(m, ember.tensor(value, dtype=ember.float64)),
             lambda: t.index_fill(0, ember.tensor([0]), value),
             lambda: t.index_fill_(0, ember.tensor([0]), value),
             lambda: t.scatter(0, ember.tensor([0]), value), lambda: t.fill_(value),
             lambda: ember.full((2,), value, dtype=dtype)]
    for fill in fills:
        with pytest.raises(RuntimeError, match="cannot be converted to type .* without overflow"):
            fill()
    assert t.tolist() == [0, 0, 0]  # nothing was written before the refusal


@pytest.mark.parametrize("dtype,value,expected", [
    (ember.uint8, -3, 253),  # negative integers may wrap into unsigned types (torch's rule)
    (ember.int8, -3.7, -3),  # in range: truncated
    (ember.float16, float("inf"), float("inf")),
    (ember.float32, 3e38, np.float32(3e38)),
    (ember.bool, 5, True),
])
def test_fills_take_values_the_dtype_can_hold(dtype, value, expected):
    t = ember.zeros(3, dtype=dtype).masked_fill(ember.tensor(MASK), value)
    assert t.tolist()[0] == expected and t.tolist()[1] == 0
    u = ember.zeros(3, dtype=dtype).index_fill(0, ember.tensor([2]), value)
    assert u.tolist()[2] == expected


def test_tensor_from_a_ragged_list_raises_instead_of_reshaping():
    for ragged in ([1, [2]], [[1], 2], [1, [2, 3]], [[1, 2], [3, [4]]], [True, [1]],
                   [ember.ones(2), 3]):
        with pytest.raises((TypeError, ValueError)):
            ember.tensor(ragged)
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1 \\(got 1\\)"):
        ember.tensor([[1, 2], [3]])
    assert ember.tensor([[1, 2], ember.tensor([3, 4])]).tolist() == [[1, 2], [3, 4]]
    assert ember.tensor([ember.tensor(1.5), 2]).tolist() == [1.5, 2.0]


def test_hstack_vstack_dstack_of_one_tensor():
    one = np.ones((1, 1), dtype=np.float32)
    for op in ("hstack", "vstack", "dstack", "column_stack"):
        for shape in ((1, 1), (3,), (2, 3), ()):
            x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
            got = getattr(ember, op)([ember.from_numpy(x)])
            np.testing.assert_array_equal(got.numpy(), getattr(np, op)([x]), err_msg=op)
    assert tuple(ember.hstack([ember.from_numpy(one)]).shape) == (1, 1)
    # atleast_* keep their own rule: one tensor in, one tensor out
    assert isinstance(ember.atleast_2d(ember.ones(3)), ember.Tensor)
    assert isinstance(ember.atleast_2d([ember.ones(3)]), tuple)


@pytest.mark.parametrize("k", [2**63 - 1, -(2**63), 2**62, -(2**62), 4, -4, 3, -3, 0])
def test_triu_tril_with_offsets_past_the_matrix(k):
    x = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    for op in ("triu", "tril"):
        np.testing.assert_array_equal(getattr(ember, op)(ember.from_numpy(x), k).numpy(),
                                      getattr(np, op)(x, max(min(k, 10), -10)), err_msg=op)


@pytest.mark.parametrize("row,col,offset", [
    (3, 3, 2**63 - 1), (3, 3, -(2**63)), (4, 3, 1), (3, 5, -2), (0, 4, 0), (5, 0, 1),
    (2**62, 5, -(2**62)), (3, 2**62, 2**62 + 1),
])
def test_tril_triu_indices_with_huge_arguments(row, col, offset):
    """A closed-form count, so huge rows neither hang nor overflow; NumPy is the oracle."""
    for op in ("tril_indices", "triu_indices"):
        try:
            got = getattr(ember, op)(row, col, offset)
        except RuntimeError as e:
            assert "overflowed" in str(e) and max(row, col) >= 2**62
            continue
        if max(row, col) < 1000:
            k = max(min(offset, 10), -10)
            ref = np.stack(getattr(np, op)(row, k, col)) if row and col else np.zeros((2, 0))
            np.testing.assert_array_equal(got.numpy(), ref, err_msg=op)
        else:  # every index inside the matrix and on the kept side of the diagonal
            r, c = got[0].numpy(), got[1].numpy()
            assert ((r < row) & (c < col)).all()
            assert ((c - r <= offset) if op == "tril_indices" else (c - r >= offset)).all()


def test_topk_of_a_0d_tensor_is_its_element():
    for k in (0, 1):
        values, indices = ember.topk(ember.tensor(1.5), k)
        assert values.item() == 1.5 and indices.item() == 0 and values.dim() == 0
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        ember.topk(ember.tensor(1.5), 2)
    values, indices = ember.topk(ember.tensor([1.5]), 0)
    assert tuple(values.shape) == (0,) and tuple(indices.shape) == (0,)


def test_index_add_out_of_range_is_an_index_error():
    """torch raises IndexError, and `except IndexError` must catch it."""
    for index in ([7], [-7], [0, 5]):
        with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 5"):
            ember.zeros(5).index_add(0, ember.tensor(index), ember.ones(len(index)))


@pytest.mark.parametrize("op,kernel", [
    (lambda A: ember.linalg.det(A), "lu_cpu"), (lambda A: ember.linalg.svd(A), "linalg_svd_cpu"),
    (lambda A: ember.linalg.svdvals(A), "linalg_svd_cpu"),
    (lambda A: ember.linalg.eigh(A), "linalg_eigh_cpu"), (lambda A: ember.linalg.qr(A), "geqrf_cpu"),
    (lambda A: ember.linalg.cholesky(A), "cholesky_cpu"),
    (lambda A: ember.linalg.solve(A, A), "lu_cpu"), (lambda A: ember.linalg.lu_factor(A), "lu_cpu"),
    (lambda A: ember.linalg.solve_triangular(A, A, upper=True), "triangular_solve_cpu"),
    (lambda A: ember.linalg.matrix_rank(A), "linalg_svd_cpu"),
])
@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
def test_low_precision_linalg_raises_not_implemented_as_torch(op, kernel, dtype):
    A = ember.eye(3, dtype=dtype)
    with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for'):
        op(A)


def test_low_precision_linalg_that_torch_computes_or_refuses_with_runtime_error():
    A = ember.eye(3, dtype=ember.float16) * 0.5
    for op in (ember.linalg.inv, ember.linalg.slogdet):
        with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got Half"):
            op(A)
    got = ember.linalg.matrix_exp(A)
    assert got.dtype == ember.float16
    np.testing.assert_allclose(got.float().numpy(), np.eye(3) * np.exp(0.5), rtol=1e-3)
    np.testing.assert_allclose(ember.linalg.matrix_norm(A).item(), np.sqrt(3) * 0.5, rtol=1e-3)


@pytest.mark.parametrize("call", [
    lambda: ember.kron(ember.ones(2), 1), lambda: ember.ones(2).kron(1.5),
    lambda: ember.atleast_2d(1), lambda: ember.atleast_3d([ember.ones(2), ember.float32]),
    lambda: ember.meshgrid([ember.ones(2), 3]), lambda: ember.broadcast_tensors(ember.ones(2), "a"),
    lambda: ember.isclose(1.0, ember.ones(2)), lambda: ember.allclose(ember.ones(2), True),
    lambda: ember.equal(ember.ones(2), (1, 2)), lambda: ember.cross((1, 2, 3), ember.ones(3)),
    lambda: ember.linalg.cross(ember.ones(3), [1, 2, 3]), lambda: ember.diff([1, 2]),
    lambda: ember.split([1, 2], 1), lambda: ember.chunk(True, 2), lambda: ember.movedim(3, 0, 1),
    lambda: ember.tile(2, (2,)), lambda: ember.rot90([[1]]), lambda: ember.trace([[1]]),
    lambda: ember.unbind(1), lambda: ember.broadcast_to([1], (2,)), lambda: ember.clamp_(None, 1),
    lambda: ember.fliplr(1.0), lambda: ember.diagflat(2), lambda: ember.swapdims((1,), 0, 0),
])
def test_a_wrong_argument_type_is_a_type_error(call):
    """torch's parser raises TypeError; ops written in Python used to fail inside with an
    AttributeError ('int' object has no attribute 'dim'), which `except TypeError` missed."""
    with pytest.raises(TypeError, match="must be Tensor|expected Tensor as element"):
        call()


# ---- results that differed from torch's (found by the fuzzer) ---------------------------------


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16, ember.float32, ember.float64])
def test_sign_of_nan_is_zero_as_torch(dtype):
    x = ember.tensor([math.nan, -math.nan, 2.5, -0.5, 0.0, math.inf] * 7, dtype=dtype)
    assert x.sign().float().tolist() == [0.0, 0.0, 1.0, -1.0, 0.0, 1.0] * 7
    assert x.clone().sign_().float().tolist() == [0.0, 0.0, 1.0, -1.0, 0.0, 1.0] * 7


def test_histogram_of_no_data_spans_zero_to_one():
    hist, edges = ember.histogram(ember.ones(0), 2)
    ref_hist, ref_edges = np.histogram(np.ones(0), 2)
    np.testing.assert_array_equal(hist.numpy(), ref_hist)
    np.testing.assert_array_equal(edges.numpy(), ref_edges)


def test_every_empty_tensor_is_contiguous():
    for t in (ember.zeros(2, 0, 3).transpose(0, 2), ember.zeros(2, 0, 4)[..., ::2],
              ember.zeros(0, 3).t()):
        assert t.is_contiguous()
    assert not ember.zeros(2, 3).t().is_contiguous()


def test_size_takes_ints_and_what_has_index():
    assert ember.Size([ember.tensor(3), True, 2]) == (3, 1, 2)
    assert all(type(s) is int for s in ember.Size([ember.tensor(3)]))
    for bad in ([1.5], [ember.tensor([2, 3])], ["a"]):
        with pytest.raises(TypeError, match="takes an iterable of 'int'"):
            ember.Size(bad)


def test_extra_positional_arguments_are_refused_not_ignored():
    x = ember.ones(2)
    for op in ("zeros_like", "ones_like", "empty_like"):
        with pytest.raises(TypeError, match=f"{op}\\(\\) takes 1 positional argument but 2"):
            getattr(ember, op)(x, 3)
    with pytest.raises(TypeError, match="full_like\\(\\) takes 2 positional arguments but 3"):
        ember.full_like(x, 3, 4)
    for method in ("contiguous", "is_contiguous"):  # memory_format is keyword-only (torch)
        with pytest.raises(TypeError):
            getattr(x, method)(3)
    assert ember.full_like(x, 3).tolist() == [3.0, 3.0]


def test_tensor_from_an_empty_tensor_copies_nothing():
    # memcpy from an empty tensor's null data pointer was undefined behaviour (UBSan, fuzzer)
    src = (ember.arange(0) * 0.5).to(ember.bfloat16).unsqueeze(0).expand(2, 0)
    with pytest.warns(UserWarning, match="copy construct"):
        t = ember.tensor(src)
    assert t.shape == (2, 0) and t.dtype == ember.bfloat16 and t.numel() == 0
