"""Matrix products (mm, bmm, matmul/@, mv, dot, vdot, inner, outer/ger, addmm, addmv, baddbmm,
addbmm) checked against NumPy: dtypes, shapes with batch broadcasting, 1-d cases, transposed and
strided inputs, zero-size dims, out=, in-place forms, PyTorch's error messages."""

from __future__ import annotations

import numpy as np
import pytest

import ember

RNG = np.random.default_rng(1234)
INT_DTYPES = ["int64", "int32", "int16", "int8", "uint8"]
FLOAT_DTYPES = ["float32", "float64", "float16", "bfloat16"]
TOL = {"float32": 1e-4, "float64": 1e-10, "float16": 2e-2, "bfloat16": 8e-2}


# ---- conversions (through lists, so these tests depend on nothing but the core) ----
def E(a: np.ndarray, dtype: str | None = None) -> ember.Tensor:
    name = dtype or str(a.dtype)
    return ember.tensor(a.tolist(), dtype=getattr(ember, name)).reshape(a.shape)


def N(t: ember.Tensor) -> np.ndarray:
    if t.dtype in (ember.float16, ember.bfloat16):
        t = t.float()
    return np.array(t.tolist()).reshape(tuple(t.shape))


def sample(shape, dtype: str) -> np.ndarray:
    if dtype in INT_DTYPES:
        lo = 0 if dtype == "uint8" else -5
        return RNG.integers(lo, 6, size=shape).astype(dtype)
    return RNG.standard_normal(shape)  # float64; E() rounds to the dtype


def rounded(a: np.ndarray, dtype: str) -> np.ndarray:
    """The values an ember tensor of `dtype` made from `a` holds, as float64."""
    return N(E(a, dtype)).astype(np.float64)


def reference(fn, *arrays, dtype: str):
    if dtype in INT_DTYPES:  # wraps like the dtype does
        return fn(*[a.astype(np.int64) for a in arrays]).astype(dtype)
    return fn(*[rounded(a, dtype) for a in arrays])


def assert_close(got: ember.Tensor, ref: np.ndarray, dtype: str):
    assert got.dtype == getattr(ember, dtype)
    g = N(got)
    assert g.shape == np.shape(ref)
    if dtype in INT_DTYPES:
        np.testing.assert_array_equal(g, ref)
    else:
        tol = TOL[dtype]
        np.testing.assert_allclose(g, ref, rtol=tol, atol=tol * 10)


# ---------------------------------------------------------------------------------------------
# matmul over shapes and dtypes

MATMUL_SHAPES = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)),  # batch folded into rows
    ((5, 2, 3), (3,)),
    ((3,), (5, 3, 4)),
    ((2, 3), (5, 3, 4)),  # broadcast matrix against a batch
    ((5, 2, 3), (5, 3, 4)),
    ((1, 2, 3), (5, 3, 4)),  # batch dim of size 1 broadcasts
    ((4, 1, 2, 3), (5, 3, 4)),  # batch dims broadcast both ways
    ((7, 5, 33, 17), (1, 17, 9)),
    ((0, 3), (3, 4)),
    ((2, 0), (0, 4)),  # K == 0: zeros
    ((2, 3), (3, 0)),
    ((0, 2, 3), (3, 4)),
    ((3, 0, 2, 3), (1, 3, 5)),
    ((1, 1), (1, 1)),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_matches_numpy(sa, sb, dtype):
    a, b = sample(sa, dtype), sample(sb, dtype)
    got = ember.matmul(E(a, dtype), E(b, dtype))
    assert_close(got, reference(np.matmul, a, b, dtype=dtype), dtype)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_matmul_operator(dtype):
    a, b = sample((4, 2, 3), dtype), sample((3, 5), dtype)
    ta, tb = E(a, dtype), E(b, dtype)
    assert_close(ta @ tb, reference(np.matmul, a, b, dtype=dtype), dtype)
    assert_close(ta.matmul(tb), reference(np.matmul, a, b, dtype=dtype), dtype)
    assert_close(tb.__rmatmul__(ta), reference(np.matmul, a, b, dtype=dtype), dtype)


def test_matmul_operator_with_non_tensor_is_type_error():
    t = ember.ones(2, 2)
    with pytest.raises(TypeError):
        t @ 2  # noqa: B018
    with pytest.raises(TypeError):
        2 @ t  # noqa: B018
    with pytest.raises(TypeError):
        t @ [[1.0, 0.0], [0.0, 1.0]]  # noqa: B018


def test_large_products_match_numpy():
    a, b = RNG.standard_normal((300, 70)), RNG.standard_normal((70, 257))
    assert_close(ember.mm(E(a, "float32"), E(b, "float32")), rounded(a, "float32") @ rounded(b, "float32"), "float32")
    ai, bi = RNG.integers(-100, 100, (130, 300)), RNG.integers(-100, 100, (300, 270))
    assert_close(ember.mm(E(ai, "int64"), E(bi, "int64")), ai @ bi, "int64")
    assert_close(ember.mm(E(ai, "int32"), E(bi, "int32")), (ai @ bi).astype(np.int32), "int32")


def test_integer_overflow_wraps_like_the_dtype():
    a8 = np.full((2, 3), 100, np.int8)
    got = ember.mm(E(a8), E(np.ones((3, 2), np.int8)))
    np.testing.assert_array_equal(N(got), np.full((2, 2), 44))  # 300 mod 256
    u8 = ember.mm(E(np.full((2, 3), 100, np.uint8)), E(np.ones((3, 2), np.uint8)))
    np.testing.assert_array_equal(N(u8), np.full((2, 2), 44))
    big = np.array([[2**62, 2**62]], dtype=np.int64)
    got = ember.mm(E(big), E(np.array([[2], [2]], dtype=np.int64)))
    assert N(got)[0, 0] == 0  # 2**64 wraps to 0


# ---------------------------------------------------------------------------------------------
# the other products


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32"])
def test_mm_bmm_mv_dot(dtype):
    a, b = sample((4, 3), dtype), sample((3, 5), dtype)
    assert_close(ember.mm(E(a, dtype), E(b, dtype)), reference(np.matmul, a, b, dtype=dtype), dtype)
    assert_close(E(a, dtype).mm(E(b, dtype)), reference(np.matmul, a, b, dtype=dtype), dtype)
    b1, b2 = sample((6, 4, 3), dtype), sample((6, 3, 2), dtype)
    assert_close(ember.bmm(E(b1, dtype), E(b2, dtype)), reference(np.matmul, b1, b2, dtype=dtype), dtype)
    assert_close(E(b1, dtype).bmm(E(b2, dtype)), reference(np.matmul, b1, b2, dtype=dtype), dtype)
    v = sample((3,), dtype)
    assert_close(ember.mv(E(a, dtype), E(v, dtype)), reference(np.matmul, a, v, dtype=dtype), dtype)
    assert_close(E(a, dtype).mv(E(v, dtype)), reference(np.matmul, a, v, dtype=dtype), dtype)
    w = sample((3,), dtype)
    d = ember.dot(E(v, dtype), E(w, dtype))
    assert d.dim() == 0
    assert_close(d, reference(np.dot, v, w, dtype=dtype), dtype)
    assert_close(ember.vdot(E(v, dtype), E(w, dtype)), reference(np.dot, v, w, dtype=dtype), dtype)
    assert_close(E(v, dtype).dot(E(w, dtype)), reference(np.dot, v, w, dtype=dtype), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_inner_outer(dtype):
    a, b = sample((2, 4, 3), dtype), sample((5, 3), dtype)
    assert_close(ember.inner(E(a, dtype), E(b, dtype)), reference(np.inner, a, b, dtype=dtype), dtype)
    v, w = sample((3,), dtype), sample((3,), dtype)
    assert_close(ember.inner(E(v, dtype), E(w, dtype)), reference(np.inner, v, w, dtype=dtype), dtype)
    # a 0-d operand multiplies
    s = ember.inner(ember.tensor(2, dtype=getattr(ember, dtype)), E(b, dtype))
    assert_close(s, reference(lambda x: 2 * x, b, dtype=dtype), dtype)
    x, y = sample((4,), dtype), sample((6,), dtype)
    assert_close(ember.outer(E(x, dtype), E(y, dtype)), reference(np.outer, x, y, dtype=dtype), dtype)
    assert_close(ember.ger(E(x, dtype), E(y, dtype)), reference(np.outer, x, y, dtype=dtype), dtype)
    assert_close(E(x, dtype).outer(E(y, dtype)), reference(np.outer, x, y, dtype=dtype), dtype)


def test_outer_promotes_like_torch():
    r = ember.outer(ember.tensor([1, 2]), ember.tensor([0.5, 1.0, 2.0]))
    assert r.dtype == ember.float32
    np.testing.assert_allclose(N(r), np.outer([1, 2], [0.5, 1.0, 2.0]))


# ---------------------------------------------------------------------------------------------
# beta * input + alpha * product


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64"])
def test_addmm_addmv_baddbmm_addbmm(dtype):
    beta, alpha = (2, 3) if dtype in INT_DTYPES else (0.5, -1.5)
    m1, m2 = sample((4, 3), dtype), sample((3, 5), dtype)
    for inp in (sample((4, 5), dtype), sample((5,), dtype), sample((4, 1), dtype)):
        got = ember.addmm(E(inp, dtype), E(m1, dtype), E(m2, dtype), beta=beta, alpha=alpha)
        ref = reference(lambda i, x, y: beta * i + alpha * (x @ y), inp, m1, m2, dtype=dtype)
        assert_close(got, ref, dtype)
    v, c = sample((3,), dtype), sample((4,), dtype)
    got = ember.addmv(E(c, dtype), E(m1, dtype), E(v, dtype), beta=beta, alpha=alpha)
    assert_close(got, reference(lambda i, x, y: beta * i + alpha * (x @ y), c, m1, v, dtype=dtype), dtype)
    b1, b2, c3 = sample((6, 4, 3), dtype), sample((6, 3, 5), dtype), sample((6, 4, 5), dtype)
    got = ember.baddbmm(E(c3, dtype), E(b1, dtype), E(b2, dtype), beta=beta, alpha=alpha)
    assert_close(got, reference(lambda i, x, y: beta * i + alpha * (x @ y), c3, b1, b2, dtype=dtype), dtype)
    c2 = sample((4, 5), dtype)
    got = ember.addbmm(E(c2, dtype), E(b1, dtype), E(b2, dtype), beta=beta, alpha=alpha)
    ref = reference(lambda i, x, y: beta * i + alpha * (x @ y).sum(0), c2, b1, b2, dtype=dtype)
    assert_close(got, ref, dtype)


def test_default_scales_and_methods():
    m1, m2, c = sample((4, 3), "float64"), sample((3, 5), "float64"), sample((4, 5), "float64")
    np.testing.assert_allclose(N(E(c).addmm(E(m1), E(m2))), c + m1 @ m2)
    np.testing.assert_allclose(N(E(c).addmm(E(m1), E(m2), beta=0, alpha=2)), 2 * (m1 @ m2))
    b1, b2 = sample((2, 4, 3), "float64"), sample((2, 3, 5), "float64")
    np.testing.assert_allclose(N(E(c).addbmm(E(b1), E(b2))), c + (b1 @ b2).sum(0))
    c3 = sample((2, 4, 5), "float64")
    np.testing.assert_allclose(N(E(c3).baddbmm(E(b1), E(b2), alpha=0.5)), c3 + 0.5 * (b1 @ b2))
    v, c1 = sample((3,), "float64"), sample((4,), "float64")
    np.testing.assert_allclose(N(E(c1).addmv(E(m1), E(v))), c1 + m1 @ v)


def test_inplace_forms():
    m1, m2, c = sample((4, 3), "float64"), sample((3, 5), "float64"), sample((4, 5), "float64")
    t = E(c)
    version = t._version
    assert t.addmm_(E(m1), E(m2), beta=2, alpha=-1) is t
    np.testing.assert_allclose(N(t), 2 * c - m1 @ m2)
    assert t._version > version
    b1, b2, c3 = sample((2, 4, 3), "float64"), sample((2, 3, 5), "float64"), sample((2, 4, 5), "float64")
    t3 = E(c3)
    t3.baddbmm_(E(b1), E(b2), beta=0.5)
    np.testing.assert_allclose(N(t3), 0.5 * c3 + b1 @ b2)
    t2 = E(c)
    t2.addbmm_(E(b1), E(b2))
    np.testing.assert_allclose(N(t2), c + (b1 @ b2).sum(0))
    v, c1 = sample((3,), "float64"), sample((4,), "float64")
    t1 = E(c1)
    t1.addmv_(E(m1), E(v), alpha=3)
    np.testing.assert_allclose(N(t1), c1 + 3 * (m1 @ v))
    # the function forms exist too
    t4 = E(c)
    assert ember.addmm_(t4, E(m1), E(m2)) is t4
    # the product may read self
    sq = sample((4, 4), "float64")
    ts = E(sq)
    ts.addmm_(ts, ts)
    np.testing.assert_allclose(N(ts), sq + sq @ sq)


def test_inplace_needs_exact_shape():
    with pytest.raises(RuntimeError, match=r"Bad in-place call: input tensor size \[1, 5\] and output tensor size \[2, 5\] should match"):
        ember.ones(1, 5).addmm_(ember.ones(2, 3), ember.ones(3, 5))


def test_beta_zero_ignores_input_and_alpha_zero_ignores_product():
    nan = float("nan")
    got = ember.addmm(ember.full((2, 2), nan), ember.ones(2, 2), ember.ones(2, 2), beta=0)
    np.testing.assert_array_equal(N(got), np.full((2, 2), 2.0))
    got = ember.addmm(ember.ones(2, 2), ember.full((2, 2), nan), ember.ones(2, 2), alpha=0)
    np.testing.assert_array_equal(N(got), np.ones((2, 2)))


def test_integer_scales_truncate_like_torch():
    one = ember.ones(2, 2, dtype=ember.int64)
    got = ember.addmm(one, one, one, beta=2.7, alpha=1.9)
    np.testing.assert_array_equal(N(got), np.full((2, 2), 4))  # 2 * 1 + 1 * 2


# ---------------------------------------------------------------------------------------------
# layouts: transposed operands go to BLAS with a flag, strided ones are copied


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "float16"])
def test_transposed_and_strided_operands(dtype):
    a, b = sample((6, 5), dtype), sample((7, 6), dtype)
    ta, tb = E(a, dtype), E(b, dtype)
    cases = [
        (ember.mm(ta.t(), tb.t()), reference(lambda x, y: x.T @ y.T, a, b, dtype=dtype)),
        (ember.mm(tb[:, ::2], ta[::2, :]), reference(lambda x, y: x[:, ::2] @ y[::2, :], b, a, dtype=dtype)),
        (ember.mm(tb[::2], ta), reference(lambda x, y: x[::2] @ y, b, a, dtype=dtype)),
        (ember.mv(ta.t(), ta[:, 1]), reference(lambda x: x.T @ x[:, 1], a, dtype=dtype)),
        (ember.dot(ta[:, 1], ta[:, 2]), reference(lambda x: x[:, 1] @ x[:, 2], a, dtype=dtype)),
        (ember.mm(ta[1:2, :], ta.t()), reference(lambda x: x[1:2] @ x.T, a, dtype=dtype)),
        (ember.mm(ta[:, 1:2].t(), ta), reference(lambda x: x[:, 1:2].T @ x, a, dtype=dtype)),
        (ember.matmul(ta.t().unsqueeze(0).expand(3, 5, 6), tb.t()), reference(lambda x, y: np.broadcast_to(x.T, (3, 5, 6)) @ y.T, a, b, dtype=dtype)),
    ]
    c = sample((3, 4, 5), dtype)
    tc = E(c, dtype)
    cases.append((ember.matmul(tc.transpose(1, 2), tc), reference(lambda x: x.transpose(0, 2, 1) @ x, c, dtype=dtype)))
    cases.append((ember.bmm(tc.permute(2, 1, 0)[:3], tc.permute(2, 0, 1)[:3]), reference(lambda x: x.transpose(2, 1, 0)[:3] @ x.transpose(2, 0, 1)[:3], c, dtype=dtype)))
    for got, ref in cases:
        assert_close(got, ref, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_products_with_one_row_or_column(dtype):
    """One column or one row of result (Linear(k, 1), a vector's product) is a matrix-vector
    product for BLAS: every operand layout (transposed, a column of a wider matrix), beta 0 over
    NaN (not read), beta and alpha scaling the rest, against NumPy in float64."""
    a, b = sample((9, 7), dtype), sample((7, 5), dtype)
    ta, tb = E(a, dtype), E(b, dtype)
    tat, tbt = E(a.T.copy(), dtype).t(), E(b.T.copy(), dtype).t()  # transposed storage
    A, B = rounded(a, dtype).astype(np.float64), rounded(b, dtype).astype(np.float64)
    nan = float("nan")
    for x, y, want in [
        (ta, tb[:, 2:3], A @ B[:, 2:3]),  # N == 1, column of a wider matrix (stride 5)
        (tat, tbt[:, 2:3], A @ B[:, 2:3]),  # N == 1, both transposed
        (ta[3:4], tb, A[3:4] @ B),  # M == 1
        (tat[3:4], tbt, A[3:4] @ B),  # M == 1, both transposed
        (ta[3:4], tb[:, 1:2], A[3:4] @ B[:, 1:2]),  # 1 x 1
    ]:
        got = ember.mm(x, y, out=ember.full(tuple(want.shape), nan, dtype=x.dtype))
        np.testing.assert_allclose(N(got), want, rtol=TOL[dtype])
        c = sample(tuple(want.shape), dtype)
        got = ember.addmm(E(c, dtype), x, y, beta=0.5, alpha=2.0)
        np.testing.assert_allclose(N(got), 0.5 * rounded(c, dtype) + 2.0 * want,
                                   rtol=TOL[dtype], atol=TOL[dtype])
    # into a column of a wider out= (its row stride)
    o = ember.full((9, 3), nan, dtype=ta.dtype)
    ember.mm(ta, tb[:, :1], out=o[:, 1:2])
    np.testing.assert_allclose(N(o[:, 1:2]), A @ B[:, :1], rtol=TOL[dtype])
    assert np.isnan(N(o[:, 0])).all() and np.isnan(N(o[:, 2])).all()


def test_inputs_are_not_modified():
    a, b = sample((4, 3), "float32"), sample((3, 5), "float32")
    ta, tb = E(a, "float32"), E(b, "float32")
    ember.mm(ta.t().t(), tb)
    ember.addmm(ember.zeros(4, 5), ta, tb, beta=2)
    np.testing.assert_array_equal(N(ta), rounded(a, "float32"))
    np.testing.assert_array_equal(N(tb), rounded(b, "float32"))


# ---------------------------------------------------------------------------------------------
# out=


def test_out_into_transposed_and_strided_tensors():
    a, b = sample((4, 3), "float32"), sample((3, 5), "float32")
    ref = rounded(a, "float32") @ rounded(b, "float32")
    ta, tb = E(a, "float32"), E(b, "float32")
    o = ember.empty(5, 4).t()  # column-major out: computed as C^T = B^T A^T
    assert ember.mm(ta, tb, out=o) is o
    np.testing.assert_allclose(N(o), ref, rtol=1e-5, atol=1e-5)
    big = ember.zeros(4, 10)
    o2 = big[:, ::2]
    ember.mm(ta, tb, out=o2)
    np.testing.assert_allclose(N(big)[:, ::2], ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(N(big)[:, 1::2], 0)


def test_out_is_resized():
    b1, b2 = sample((6, 4, 3), "float64"), sample((6, 3, 5), "float64")
    o = ember.empty(0, dtype=ember.float64)
    r = ember.matmul(E(b1), E(b2), out=o)
    assert r is o and tuple(o.shape) == (6, 4, 5)
    np.testing.assert_allclose(N(o), b1 @ b2)
    o = ember.empty(3, 3, dtype=ember.float64)
    ember.mm(E(b1[0]), E(b2[0]), out=o)
    assert tuple(o.shape) == (4, 5)
    d = ember.empty(3, dtype=ember.float64)
    ember.dot(E(b1[0, 0]), E(b1[0, 1]), out=d)
    assert d.dim() == 0
    np.testing.assert_allclose(d.item(), b1[0, 0] @ b1[0, 1])


@pytest.mark.parametrize(
    "name,args",
    [
        ("mm", lambda: (ember.ones(2, 3), ember.ones(3, 4))),
        ("bmm", lambda: (ember.ones(2, 2, 3), ember.ones(2, 3, 4))),
        ("matmul", lambda: (ember.ones(2, 2, 3), ember.ones(3))),
        ("mv", lambda: (ember.ones(2, 3), ember.ones(3))),
        ("dot", lambda: (ember.ones(3), ember.ones(3))),
        ("vdot", lambda: (ember.ones(3), ember.ones(3))),
        ("inner", lambda: (ember.ones(2, 3), ember.ones(4, 3))),
        ("outer", lambda: (ember.ones(2), ember.ones(3))),
        ("addmm", lambda: (ember.ones(2, 4), ember.ones(2, 3), ember.ones(3, 4))),
        ("addmv", lambda: (ember.ones(2), ember.ones(2, 3), ember.ones(3))),
        ("baddbmm", lambda: (ember.ones(2, 2, 4), ember.ones(2, 2, 3), ember.ones(2, 3, 4))),
        ("addbmm", lambda: (ember.ones(2, 4), ember.ones(2, 2, 3), ember.ones(2, 3, 4))),
    ],
)
def test_out_matches_functional(name, args):
    fn = getattr(ember, name)
    expected = fn(*args())
    out = ember.empty(0)
    assert fn(*args(), out=out) is out
    np.testing.assert_array_equal(N(out), N(expected))


def test_out_aliasing_an_input():
    a = sample((4, 4), "float64")
    t = E(a)
    ember.mm(t, t, out=t)
    np.testing.assert_allclose(N(t), a @ a)
    c, m = sample((4, 4), "float64"), sample((4, 4), "float64")
    tc = E(c)
    ember.addmm(tc, tc, E(m), beta=2, out=tc)
    np.testing.assert_allclose(N(tc), 2 * c + c @ m)


def test_out_dtype_must_match():
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got double instead"):
        ember.mm(ember.ones(2, 3), ember.ones(3, 5), out=ember.empty(2, 5, dtype=ember.float64))


# ---------------------------------------------------------------------------------------------
# zero-size


def test_zero_size():
    assert tuple(ember.mm(ember.ones(0, 3), ember.ones(3, 4)).shape) == (0, 4)
    z = ember.mm(ember.ones(2, 0), ember.ones(0, 4))
    np.testing.assert_array_equal(N(z), np.zeros((2, 4)))
    zi = ember.mm(ember.ones(2, 0, dtype=ember.int32), ember.ones(0, 4, dtype=ember.int32))
    np.testing.assert_array_equal(N(zi), np.zeros((2, 4)))
    assert ember.dot(ember.ones(0), ember.ones(0)).item() == 0
    assert tuple(ember.bmm(ember.ones(0, 2, 3), ember.ones(0, 3, 4)).shape) == (0, 2, 4)
    a = ember.addmm(ember.full((2, 4), 3.0), ember.ones(2, 0), ember.ones(0, 4), beta=2)
    np.testing.assert_array_equal(N(a), np.full((2, 4), 6.0))
    s = ember.addbmm(ember.full((2, 4), 3.0), ember.ones(0, 2, 3), ember.ones(0, 3, 4))
    np.testing.assert_array_equal(N(s), np.full((2, 4), 3.0))


# ---------------------------------------------------------------------------------------------
# errors (PyTorch's messages)


@pytest.mark.parametrize(
    "fn,match",
    [
        (lambda: ember.mm(ember.ones(2, 3), ember.ones(4, 5)), r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
        (lambda: ember.mm(ember.ones(3), ember.ones(3, 5)), "self must be a matrix"),
        (lambda: ember.mm(ember.ones(3, 3), ember.ones(3)), "mat2 must be a matrix"),
        (lambda: ember.mm(ember.ones(2, 3), ember.ones(3, 5, dtype=ember.float64)), "expected m1 and m2 to have the same dtype, but got: float != double"),
        (lambda: ember.matmul(ember.ones(2, 3, dtype=ember.int64), ember.ones(3, 5)), "expected m1 and m2 to have the same dtype, but got: long int != float"),
        (lambda: ember.matmul(ember.tensor(1.0), ember.ones(2, 2)), "both arguments to matmul need to be at least 1D, but they are 0D and 2D"),
        (lambda: ember.matmul(ember.ones(2, 2), ember.tensor(1.0)), "both arguments to matmul need to be at least 1D, but they are 2D and 0D"),
        (lambda: ember.matmul(ember.ones(3), ember.ones(4)), r"inconsistent tensor size, expected tensor \[3\] and src \[4\]"),
        (lambda: ember.matmul(ember.ones(2, 3), ember.ones(4)), r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
        (lambda: ember.matmul(ember.ones(3), ember.ones(4, 5)), r"mat1 and mat2 shapes cannot be multiplied \(1x3 and 4x5\)"),
        (lambda: ember.matmul(ember.ones(2, 2, 3), ember.ones(4, 5)), r"mat1 and mat2 shapes cannot be multiplied \(4x3 and 4x5\)"),
        (lambda: ember.matmul(ember.ones(2, 2, 3), ember.ones(2, 4, 5)), r"Expected size for first two dimensions of batch2 tensor to be: \[2, 3\] but got: \[2, 4\]\."),
        (lambda: ember.matmul(ember.ones(2, 2, 3), ember.ones(3, 3, 5)), r"The size of tensor a \(2\) must match the size of tensor b \(3\) at non-singleton dimension 0"),
        (lambda: ember.matmul(ember.ones(3), ember.ones(3, dtype=ember.float64)), "dot : expected both vectors to have same dtype, but found Float and Double"),
        (lambda: ember.matmul(ember.ones(2, 2, 3), ember.ones(2, 3, 5, dtype=ember.float64)), "expected scalar type Float but found Double"),
        (lambda: ember.bmm(ember.ones(2, 3), ember.ones(3, 5)), "batch1 must be a 3D tensor"),
        (lambda: ember.bmm(ember.ones(2, 2, 3), ember.ones(3, 5)), "batch2 must be a 3D tensor"),
        (lambda: ember.bmm(ember.ones(2, 2, 3), ember.ones(3, 3, 5)), r"Expected size for first two dimensions of batch2 tensor to be: \[2, 3\] but got: \[3, 3\]\."),
        (lambda: ember.mv(ember.ones(2, 3), ember.ones(4)), r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
        (lambda: ember.mv(ember.ones(3), ember.ones(3)), "vector \\+ matrix @ vector expected, got 1, 1, 1"),
        (lambda: ember.mv(ember.ones(2, 3), ember.ones(3, dtype=ember.float64)), "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
        (lambda: ember.dot(ember.ones(3, 1), ember.ones(3)), "1D tensors expected, but got 2D and 1D tensors"),
        (lambda: ember.dot(ember.ones(3), ember.ones(4)), "inconsistent tensor size"),
        (lambda: ember.inner(ember.ones(2, 3), ember.ones(4)), r"inner\(\) the last dimension must match on both input tensors but got shapes \[2, 3\] and \[4\]"),
        (lambda: ember.outer(ember.ones(2, 3), ember.ones(4)), "outer: Expected 1-D argument self, but got 2-D"),
        (lambda: ember.addmm(ember.ones(2, 5), ember.ones(3), ember.ones(3, 5)), "mat1 must be a matrix, got 1-D tensor"),
        (lambda: ember.addmm(ember.ones(3, 5), ember.ones(2, 3), ember.ones(3, 5)), r"The expanded size of the tensor \(2\) must match the existing size \(3\) at non-singleton dimension 0"),
        (lambda: ember.addmm(ember.ones(2, 5, dtype=ember.float64), ember.ones(2, 3), ember.ones(3, 5)), "self and mat2 must have the same dtype, but got Double and Float"),
        (lambda: ember.addmv(ember.ones(3), ember.ones(2, 3), ember.ones(3)), r"size mismatch, got input \(3\), mat \(2x3\), vec \(3\)"),
        (lambda: ember.baddbmm(ember.ones(2, 2, 5, dtype=ember.float64), ember.ones(2, 2, 3), ember.ones(2, 3, 5)), "Input dtypes must be the same, got: input double, batch1: float, batch2: float"),
        (lambda: ember.addbmm(ember.ones(2, 5), ember.ones(2, 2, 3), ember.ones(3, 3, 5)), "batch1 and batch2 must have same number of batches, got 2 and 3"),
        (lambda: ember.addbmm(ember.ones(2, 5), ember.ones(2, 2, 3), ember.ones(2, 4, 5)), r"Incompatible matrix sizes for bmm \(2x3 and 4x5\)"),
    ],
)
def test_errors(fn, match):
    with pytest.raises(RuntimeError, match=match):
        fn()


@pytest.mark.parametrize(
    "fn,kernel",
    [
        (lambda b: ember.mm(b(2, 3), b(3, 2)), "addmm_impl_cpu_"),
        (lambda b: ember.matmul(b(2, 3), b(3, 2)), "addmm_impl_cpu_"),
        (lambda b: ember.bmm(b(2, 2, 3), b(2, 3, 2)), "bmm"),
        (lambda b: ember.dot(b(3), b(3)), "dot"),
        (lambda b: ember.mv(b(2, 3), b(3)), "addmv_impl_cpu"),
        (lambda b: ember.addmm(b(2, 2), b(2, 3), b(3, 2)), "addmm_impl_cpu_"),
        (lambda b: ember.baddbmm(b(2, 2, 2), b(2, 2, 3), b(2, 3, 2)), "baddbmm"),
    ],
)
def test_bool_is_not_implemented(fn, kernel):
    def b(*shape):
        return ember.ones(*shape, dtype=ember.bool)

    # NotImplementedError is a RuntimeError, as in PyTorch
    with pytest.raises(RuntimeError, match=f'"{kernel}" not implemented for \'Bool\''):
        fn(b)


def test_arguments_must_be_tensors():
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.mm(ember.ones(2, 2), [[1.0, 2.0], [3.0, 4.0]])


# ---------------------------------------------------------------------------------------------
# the autograd hook sees every product when an input requires grad


def test_products_call_the_autograd_hook(recording_hook):
    a = ember.ones(2, 3).requires_grad_(True)
    b = ember.ones(3, 4)
    r = ember.mm(a, b)
    assert recording_hook[-1][0] == "mm"
    np.testing.assert_array_equal(N(r), np.full((2, 4), 3.0))
    a @ b  # noqa: B018
    assert recording_hook[-1][0] == "matmul"
    ember.addmm(ember.zeros(2, 4), a, b, beta=0.5, alpha=2)
    assert recording_hook[-1] == ("addmm", 3, {"beta": 0.5, "alpha": 2})
    for name, args in [
        ("bmm", (ember.ones(1, 2, 3).requires_grad_(True), ember.ones(1, 3, 2))),
        ("mv", (a, ember.ones(3))),
        ("dot", (ember.ones(3), ember.ones(3).requires_grad_(True))),
        ("outer", (ember.ones(3).requires_grad_(True), ember.ones(2))),
    ]:
        getattr(ember, name)(*args)
        assert recording_hook[-1][0] == name
    with ember.no_grad():
        n = len(recording_hook)
        ember.mm(a, b)
        assert len(recording_hook) == n
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
        ember.mm(a, b, out=ember.empty(2, 4))
    c = ember.zeros(2, 4).requires_grad_(True)
    c.addmm_(ember.ones(2, 3), b)
    assert recording_hook[-1][0] == "addmm_"
