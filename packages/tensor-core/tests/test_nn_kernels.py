"""Core kernels of the nn layers: convolution, pooling, nll_loss, batch/layer norm, embedding.

Forward results are checked against NumPy references written here (sliding windows + einsum for
convolution, direct loops for pooling); backward kernels by central differences in float64 and by
the adjoint identity <conv(x), y> == <x, conv_transpose(y)>; PyTorch parity only when installed.
"""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import sliding_window_view

import ember

RNG = np.random.default_rng(1234)


def T(a):
    return ember.tensor(np.ascontiguousarray(a))


def tup(v, k):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * k


def randn(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


# ------------------------------------------------------------------------------------------------
# NumPy references


def conv_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    k = w.ndim - 2
    s, p, d = tup(stride, k), tup(padding, k), tup(dilation, k)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pi, pi) for pi in p])
    ext = [d[i] * (w.shape[2 + i] - 1) + 1 for i in range(k)]
    win = sliding_window_view(xp, ext, axis=tuple(range(2, 2 + k)))
    sl = (slice(None), slice(None))
    sl += tuple(slice(None, None, s[i]) for i in range(k))
    sl += tuple(slice(None, None, d[i]) for i in range(k))
    win = win[sl]
    C, outsz = x.shape[1], w.shape[0]
    cg, og = C // groups, outsz // groups
    sp, kl = "def"[:k], "xyz"[:k]
    outs = [
        np.einsum(
            f"nc{sp}{kl},oc{kl}->no{sp}", win[:, g * cg : (g + 1) * cg], w[g * og : (g + 1) * og]
        )
        for g in range(groups)
    ]
    y = np.concatenate(outs, axis=1)
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * k)
    return y


def conv_transpose_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    k = w.ndim - 2
    s, p, d, op = tup(stride, k), tup(padding, k), tup(dilation, k), tup(output_padding, k)
    N, C = x.shape[:2]
    insz = x.shape[2:]
    K = w.shape[2:]
    cg, og = C // groups, w.shape[1]
    full = [(insz[i] - 1) * s[i] + d[i] * (K[i] - 1) + 1 + op[i] for i in range(k)]
    kind = np.result_type(x, w).kind
    out = np.zeros((N, og * groups, *full),
                   np.int64 if kind in "iu" else np.complex128 if kind == "c" else np.float64)
    for g in range(groups):
        xg = x[:, g * cg : (g + 1) * cg]
        for kk in itertools.product(*[range(v) for v in K]):
            contrib = np.einsum("nc...,co->no...", xg, w[g * cg : (g + 1) * cg, :, *kk])
            sl = tuple(
                slice(kk[i] * d[i], kk[i] * d[i] + s[i] * (insz[i] - 1) + 1, s[i]) for i in range(k)
            )
            out[(slice(None), slice(g * og, (g + 1) * og)) + sl] += contrib
    L = [(insz[i] - 1) * s[i] - 2 * p[i] + d[i] * (K[i] - 1) + op[i] + 1 for i in range(k)]
    out = out[(slice(None), slice(None)) + tuple(slice(p[i], p[i] + L[i]) for i in range(k))]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * k)
    return out


def pool_out(n, k, p, s, d, ceil_mode):
    num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    o = num // s + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1
    return o


def max_pool_ref(x, kernel, stride=None, padding=0, dilation=1, ceil_mode=False):
    k = len(kernel)
    stride = stride or kernel
    s, p, d = tup(stride, k), tup(padding, k), tup(dilation, k)
    lead = x.shape[:-k]
    insz = x.shape[-k:]
    outsz = [pool_out(insz[i], kernel[i], p[i], s[i], d[i], ceil_mode) for i in range(k)]
    flat = x.reshape(-1, *insz)
    out = np.empty((flat.shape[0], *outsz), x.dtype)
    idx = np.empty((flat.shape[0], *outsz), np.int64)
    for pl in range(flat.shape[0]):
        for o in itertools.product(*[range(v) for v in outsz]):
            best, bi = None, None
            for kk in itertools.product(*[range(v) for v in kernel]):
                pos = [o[i] * s[i] - p[i] + kk[i] * d[i] for i in range(k)]
                if any(q < 0 or q >= insz[i] for i, q in enumerate(pos)):
                    continue
                v = flat[(pl, *pos)]
                if best is None or v > best or np.isnan(v):
                    best, bi = v, int(np.ravel_multi_index(pos, insz))
            out[(pl, *o)] = best
            idx[(pl, *o)] = bi
    return out.reshape(*lead, *outsz), idx.reshape(*lead, *outsz)


def avg_pool_ref(
    x,
    kernel,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    k = len(kernel)
    stride = stride or kernel
    s, p = tup(stride, k), tup(padding, k)
    lead = x.shape[:-k]
    insz = x.shape[-k:]
    outsz = [pool_out(insz[i], kernel[i], p[i], s[i], 1, ceil_mode) for i in range(k)]
    flat = x.reshape(-1, *insz)
    out = np.empty((flat.shape[0], *outsz), x.dtype)
    for o in itertools.product(*[range(v) for v in outsz]):
        st = [o[i] * s[i] - p[i] for i in range(k)]
        en = [min(st[i] + kernel[i], insz[i] + p[i]) for i in range(k)]
        padded = math.prod(en[i] - st[i] for i in range(k))
        st = [max(v, 0) for v in st]
        en = [min(en[i], insz[i]) for i in range(k)]
        win = flat[(slice(None),) + tuple(slice(st[i], en[i]) for i in range(k))]
        div = divisor_override or (padded if count_include_pad else win[0].size)
        out[(slice(None), *o)] = win.reshape(flat.shape[0], -1).sum(1) / div
    return out.reshape(*lead, *outsz)


def adaptive_ref(x, out_size, fn):
    k = len(out_size)
    insz = x.shape[-k:]
    lead = x.shape[:-k]
    flat = x.reshape(-1, *insz)
    out = np.empty((flat.shape[0], *out_size), x.dtype)
    for o in itertools.product(*[range(v) for v in out_size]):
        sl = tuple(
            slice((o[i] * insz[i]) // out_size[i], -(-((o[i] + 1) * insz[i]) // out_size[i]))
            for i in range(k)
        )
        win = flat[(slice(None),) + sl].reshape(flat.shape[0], -1)
        out[(slice(None), *o)] = fn(win, axis=1)
    return out.reshape(*lead, *out_size)


def numgrad(f, x, eps=1e-6):
    """Central differences of the scalar f() with respect to the array x (modified in place)."""
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + eps
        fp = f()
        x[i] = old - eps
        fm = f()
        x[i] = old
        g[i] = (fp - fm) / (2 * eps)
    return g


# ------------------------------------------------------------------------------------------------
# convolution

CONV_CASES = [
    # (input shape, weight shape, kwargs)
    ((2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, dilation=2, groups=2)),
    ((1, 3, 7), (2, 3, 1), dict()),
    ((2, 4, 7, 6), (6, 4, 3, 2), dict(stride=(2, 1), padding=(1, 0))),
    ((2, 6, 8, 7), (6, 2, 3, 3), dict(stride=2, padding=2, dilation=(1, 2), groups=3)),
    ((1, 4, 5, 5), (4, 1, 3, 3), dict(padding=1, groups=4)),  # depthwise
    ((2, 3, 5, 5), (5, 3, 1, 1), dict()),  # 1x1: the GEMM-only path
    (
        (1, 2, 5, 6, 4),
        (3, 2, 2, 3, 2),
        dict(stride=(1, 2, 1), padding=(1, 1, 0), dilation=(2, 1, 1)),
    ),
    ((2, 4, 4, 4, 4), (4, 2, 3, 3, 3), dict(padding=1, groups=2)),
]


@pytest.mark.parametrize("xs,ws,kw", CONV_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_forward(xs, ws, kw, dtype):
    x, w, b = randn(*xs, dtype=dtype), randn(*ws, dtype=dtype), randn(ws[0], dtype=dtype)
    k = len(ws) - 2
    fn = getattr(ember, f"conv{k}d")
    ref = conv_ref(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), **kw)
    got = fn(T(x), T(w), T(b), **kw)
    assert got.dtype == (ember.float32 if dtype == np.float32 else ember.float64)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got.numpy(), ref, rtol=tol, atol=tol)
    # the aten form, without bias
    g = kw.get("groups", 1)
    full = lambda v, d: list(tup(kw.get(v, d), k))  # noqa: E731
    got2 = ember.convolution(
        T(x),
        T(w),
        None,
        full("stride", 1),
        full("padding", 0),
        full("dilation", 1),
        False,
        [0] * k,
        g,
    )
    np.testing.assert_allclose(
        got2.numpy(), ref - b.reshape((1, -1) + (1,) * k), rtol=tol, atol=tol
    )


@pytest.mark.parametrize("stride,padding", [(1, 1), (2, 0)])
def test_conv_large_blocked_im2col(stride, padding):
    """Column matrices over 1 MiB are built a block of output rows at a time."""
    x, w, b = randn(3, 16, 66, 34), randn(4, 16, 3, 3), randn(4)
    got = ember.conv2d(T(x), T(w), T(b), stride=stride, padding=padding)
    np.testing.assert_allclose(got.numpy(), conv_ref(x, w, b, stride, padding), atol=1e-9)
    go = randn(*got.shape)
    xp = np.pad(x, [(0, 0), (0, 0), (padding, padding), (padding, padding)])
    win = sliding_window_view(xp, (3, 3), axis=(2, 3))[:, :, ::stride, ::stride]
    gw_ref = np.einsum("nchwij,nohw->ocij", win, go)
    _, gw, gb = ember.convolution_backward(
        T(go),
        T(x),
        T(w),
        [4],
        [stride] * 2,
        [padding] * 2,
        [1, 1],
        False,
        [0, 0],
        1,
        [False, True, True],
    )
    np.testing.assert_allclose(gw.numpy(), gw_ref, rtol=1e-9, atol=1e-8)
    np.testing.assert_allclose(gb.numpy(), go.sum((0, 2, 3)), rtol=1e-10)


def conv_backward_ref(x, w, go, stride, padding, dilation, groups):
    """Gradients of conv_ref: the input's as the transposed convolution of grad_output, the
    weight's as sum over samples and positions of grad_output times the input windows."""
    k = w.ndim - 2
    s, p, d = tup(stride, k), tup(padding, k), tup(dilation, k)
    op = [x.shape[2 + i] - ((go.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (w.shape[2 + i] - 1)
                            + 1) for i in range(k)]
    gi = conv_transpose_ref(go, w, None, s, p, op, groups, d)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pi, pi) for pi in p])
    ext = [d[i] * (w.shape[2 + i] - 1) + 1 for i in range(k)]
    win = sliding_window_view(xp, ext, axis=tuple(range(2, 2 + k)))
    win = win[(slice(None), slice(None)) + tuple(slice(None, None, s[i]) for i in range(k))
              + tuple(slice(None, None, d[i]) for i in range(k))]
    cg, og = x.shape[1] // groups, w.shape[0] // groups
    sp, kl = "def"[:k], "xyz"[:k]
    gw = np.concatenate([np.einsum(f"nc{sp}{kl},no{sp}->oc{kl}", win[:, g * cg:(g + 1) * cg],
                                   go[:, g * og:(g + 1) * og]) for g in range(groups)])
    return gi, gw


# The kernels chosen by shape (docs/architecture.md, "Convolution"): depthwise (one channel per
# group) runs direct loops; small outputs (<= 64 positions, groups 1, batch >= 2) fold the batch
# into one GEMM; the rest im2col + one GEMM per sample. Each path, forward and both gradients.
CONV_PATH_CASES = [
    ("depthwise 2-d", (3, 5, 9, 8), (5, 1, 3, 3), dict(stride=1, padding=1, dilation=1, groups=5)),
    ("depthwise strided", (2, 4, 9, 10), (4, 1, 3, 3), dict(stride=2, padding=1, dilation=1, groups=4)),
    ("depthwise dilated 1-d", (2, 3, 12), (3, 1, 3), dict(stride=1, padding=2, dilation=2, groups=3)),
    ("depthwise 3-d", (2, 2, 5, 4, 6), (2, 1, 2, 3, 3),
     dict(stride=(1, 2, 1), padding=(0, 1, 1), dilation=1, groups=2)),
    ("folded 1x1 at 2x2", (4, 6, 2, 2), (5, 6, 1, 1), dict(stride=1, padding=0, dilation=1, groups=1)),
    ("folded 3x3 at 4x4", (3, 4, 4, 4), (6, 4, 3, 3), dict(stride=1, padding=1, dilation=1, groups=1)),
    ("folded strided", (3, 4, 8, 7), (5, 4, 3, 3), dict(stride=2, padding=1, dilation=1, groups=1)),
    # 80 folded columns: the GEMMs' columns split over the threads (64 a chunk at least)
    ("folded, columns over threads", (20, 6, 2, 2), (5, 6, 3, 3),
     dict(stride=1, padding=1, dilation=1, groups=1)),
    ("per sample (large output)", (2, 3, 10, 9), (4, 3, 3, 3), dict(stride=1, padding=1, dilation=1, groups=1)),
]


@pytest.mark.parametrize("name,xs,ws,kw", CONV_PATH_CASES, ids=[c[0] for c in CONV_PATH_CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_paths_forward_and_gradients(name, xs, ws, kw, dtype):
    x, w = randn(*xs), randn(*ws)
    k = len(ws) - 2
    full = lambda v: list(tup(kw[v], k))  # noqa: E731
    args = (full("stride"), full("padding"), full("dilation"), False, [0] * k, kw["groups"])
    y = ember.convolution(T(x.astype(dtype)), T(w.astype(dtype)), None, *args).numpy()
    ref = conv_ref(x, w, None, kw["stride"], kw["padding"], kw["dilation"], kw["groups"])
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(y, ref, rtol=tol, atol=tol)
    go = randn(*ref.shape)
    gi, gw, gb = ember.convolution_backward(T(go.astype(dtype)), T(x.astype(dtype)),
                                            T(w.astype(dtype)), [ws[0]], *args, [True, True, True])
    gi_ref, gw_ref = conv_backward_ref(x, w, go, kw["stride"], kw["padding"], kw["dilation"],
                                       kw["groups"])
    np.testing.assert_allclose(gi.numpy(), gi_ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(gw.numpy(), gw_ref, rtol=tol, atol=tol * 10)
    np.testing.assert_allclose(gb.numpy(), go.sum(axis=tuple(i for i in range(go.ndim) if i != 1)),
                               rtol=tol, atol=tol)


def test_conv_folded_batch_in_chunks():
    """A batch too large for one folded column matrix is folded a chunk of samples at a time
    (the chunk size forced down to one sample here)."""
    code = """if True:
        import numpy as np, ember
        from numpy.lib.stride_tricks import sliding_window_view
        rng = np.random.default_rng(0)
        x, w, go = rng.standard_normal((5, 3, 4, 4)), rng.standard_normal((4, 3, 3, 3)), None
        y = ember.conv2d(ember.from_numpy(x), ember.from_numpy(w), padding=1).numpy()
        win = sliding_window_view(np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)]), (3, 3), axis=(2, 3))
        np.testing.assert_allclose(y, np.einsum("nchwij,ocij->nohw", win, w), atol=1e-10)
        go = rng.standard_normal(y.shape)
        _, gw, _ = ember.convolution_backward(ember.from_numpy(go), ember.from_numpy(x),
            ember.from_numpy(w), [4], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False])
        np.testing.assert_allclose(gw.numpy(), np.einsum("nchwij,nohw->ocij", win, go), atol=1e-9)
        print("ok")
    """
    env = dict(os.environ, EMBER_CONV_FOLD_CHUNK_BYTES="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_conv_random_shapes(data):
    """Random 1-d/2-d convolutions against the reference, and the adjoint identity."""
    k = data.draw(st.integers(1, 2))
    groups = data.draw(st.integers(1, 3))
    cin, cout = groups * data.draw(st.integers(1, 2)), groups * data.draw(st.integers(1, 2))
    n = data.draw(st.integers(1, 3))
    ks = [data.draw(st.integers(1, 3)) for _ in range(k)]
    s = [data.draw(st.integers(1, 3)) for _ in range(k)]
    d = [data.draw(st.integers(1, 2)) for _ in range(k)]
    p = [data.draw(st.integers(0, 2)) for _ in range(k)]
    size = [data.draw(st.integers(max(1, d[i] * (ks[i] - 1) + 1 - 2 * p[i]), 9)) for i in range(k)]
    x, w = randn(n, cin, *size), randn(cout, cin // groups, *ks)
    y = ember.convolution(T(x), T(w), None, s, p, d, False, [0] * k, groups).numpy()
    np.testing.assert_allclose(y, conv_ref(x, w, None, s, p, d, groups), atol=1e-10)
    y2 = randn(*y.shape)
    op = [
        size[i] - ((y.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (ks[i] - 1) + 1)
        for i in range(k)
    ]
    if all(o < max(s[i], d[i]) for i, o in enumerate(op)):
        xt = ember.convolution(T(y2), T(w), None, s, p, d, True, op, groups).numpy()
        np.testing.assert_allclose(np.vdot(y, y2), np.vdot(x, xt), rtol=1e-9, atol=1e-9)


def test_conv_unbatched_and_noncontiguous():
    x, w = randn(3, 6, 5), randn(4, 3, 2, 2)
    got = ember.conv2d(T(x), T(w), stride=1, padding=1)
    np.testing.assert_allclose(got.numpy(), conv_ref(x[None], w, padding=1)[0], atol=1e-10)
    xt = randn(1, 3, 5, 6)
    xe = T(xt).transpose(2, 3)  # non-contiguous
    np.testing.assert_allclose(
        ember.conv2d(xe, T(w)).numpy(), conv_ref(xt.transpose(0, 1, 3, 2), w), atol=1e-10
    )
    x1 = randn(2, 7)
    got1 = ember.conv1d(T(x1), T(randn(3, 2, 3)))
    assert got1.shape == (3, 5)


@pytest.mark.parametrize(
    "k,ks,dil",
    [
        (1, (3,), (1,)),
        (1, (4,), (1,)),
        (2, (3, 2), (1, 2)),
        (2, (2, 2), (3, 1)),
        (3, (2, 1, 3), (1, 1, 1)),
    ],
)
def test_conv_padding_same_and_valid(k, ks, dil):
    x = randn(2, 2, *([7] * k))
    w = randn(3, 2, *ks)
    fn = getattr(ember, f"conv{k}d")
    got = fn(T(x), T(w), padding="same", dilation=dil).numpy()
    assert got.shape == (2, 3) + x.shape[2:]
    # PyTorch's 'same': total padding d*(k-1), the odd extra element at the end
    pads = [(d * (kk - 1) // 2, d * (kk - 1) - d * (kk - 1) // 2) for kk, d in zip(ks, dil)]
    xp = np.pad(x, [(0, 0), (0, 0)] + pads)
    np.testing.assert_allclose(got, conv_ref(xp, w, dilation=dil), atol=1e-10)
    np.testing.assert_allclose(fn(T(x), T(w), padding="valid").numpy(), conv_ref(x, w), atol=1e-10)


def test_conv_half_types_and_empty():
    x, w = randn(1, 2, 5, 5, dtype=np.float32), randn(3, 2, 3, 3, dtype=np.float32)
    for dt in (ember.float16, ember.bfloat16):
        got = ember.conv2d(T(x).to(dt), T(w).to(dt))
        assert got.dtype == dt
        np.testing.assert_allclose(got.float().numpy(), conv_ref(x, w), rtol=5e-2, atol=5e-2)
    assert ember.conv2d(T(randn(0, 2, 5, 5)), T(randn(3, 2, 3, 3))).shape == (0, 3, 3, 3)
    z = ember.conv2d(T(randn(2, 0, 5, 5)), T(randn(3, 0, 3, 3)), T(np.ones(3)))
    assert z.shape == (2, 3, 3, 3) and np.all(z.numpy() == 1)


def crandn(*shape, dtype=np.complex128):
    return (randn(*shape) + 1j * randn(*shape)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("xs,ws,kw", CONV_CASES)
def test_conv_complex(xs, ws, kw, dtype):
    """Complex convolutions (three real ones of the parts, as torch) against the direct complex
    sum; the canonical aten form refuses complex, as torch's does."""
    x, w, b = crandn(*xs, dtype=dtype), crandn(*ws, dtype=dtype), crandn(ws[0], dtype=dtype)
    k = len(ws) - 2
    got = getattr(ember, f"conv{k}d")(T(x), T(w), T(b), **kw)
    assert got.dtype == (ember.complex64 if dtype == np.complex64 else ember.complex128)
    tol = 1e-4 if dtype == np.complex64 else 1e-10
    ref = conv_ref(x.astype(np.complex128), w.astype(np.complex128), b.astype(np.complex128), **kw)
    np.testing.assert_allclose(got.numpy(), ref, rtol=tol, atol=tol)
    with pytest.raises(NotImplementedError, match="not implemented for 'Complex"):
        ember.convolution(T(x), T(w), None, [1] * k, [0] * k, [1] * k, False, [0] * k, 1)


def test_conv_complex_forms_and_errors():
    x, w = crandn(2, 3, 9), crandn(2, 3, 4)
    for padding in ("same", "valid"):
        got = ember.conv1d(T(x), T(w), padding=padding, dilation=2).numpy()
        pad = (3, 3) if padding == "same" else (0, 0)
        ref = conv_ref(np.pad(x, [(0, 0), (0, 0), pad]), w, dilation=2)
        np.testing.assert_allclose(got, ref, atol=1e-10)
    np.testing.assert_allclose(ember.conv1d(T(x[0]), T(w)).numpy(), conv_ref(x, w)[0], atol=1e-10)
    # a non-finite part: torch's arithmetic (a - b + i (c - a - b)) spreads it to both parts
    x[0, 0, 4] = np.inf
    assert np.isnan(ember.conv1d(T(x), T(w)).numpy()[0, :, 1:5]).all()
    c64 = T(crandn(1, 2, 5, dtype=np.complex64))
    for weight, bias, role in ((T(crandn(3, 2, 2)), None, "weight"),
                               (T(randn(3, 2, 2, dtype=np.float32)), None, "weight"),
                               (T(crandn(3, 2, 2, dtype=np.complex64)), ember.zeros(3), "bias")):
        with pytest.raises(RuntimeError, match=f"Input type .* and {role} type .* should be the same"):
            ember.conv1d(c64, weight, bias)
    with pytest.raises(RuntimeError, match="should be the same"):  # a real input: the real path
        ember.conv1d(c64.real, T(crandn(3, 2, 2, dtype=np.complex64)))


CONVT_CASES = [
    ((2, 4, 5), (4, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ((1, 4, 6), (4, 1, 2), dict(stride=3, groups=2, dilation=2)),
    ((2, 4, 4, 5), (4, 3, 3, 2), dict(stride=(2, 1), padding=(1, 0), output_padding=(1, 0))),
    ((1, 6, 3, 4), (6, 2, 3, 3), dict(stride=2, groups=3, dilation=(2, 1), output_padding=(1, 1))),
    ((1, 2, 3, 3, 2), (2, 2, 2, 2, 2), dict(stride=2, padding=(0, 1, 0))),
]


@pytest.mark.parametrize("xs,ws,kw", CONVT_CASES)
def test_conv_transpose_forward(xs, ws, kw):
    k = len(ws) - 2
    x, w = randn(*xs), randn(*ws)
    b = randn(ws[1] * kw.get("groups", 1))
    ref = conv_transpose_ref(x, w, b, **kw)
    if k <= 2:
        got = getattr(ember, f"conv_transpose{k}d")(T(x), T(w), T(b), **kw)
    else:
        got = ember.conv_transpose3d(T(x), T(w), T(b), **kw)
    np.testing.assert_allclose(got.numpy(), ref, atol=1e-10)
    x, w, b = crandn(*xs), crandn(*ws), crandn(ws[1] * kw.get("groups", 1))
    got = getattr(ember, f"conv_transpose{k}d")(T(x), T(w), T(b), **kw)
    np.testing.assert_allclose(got.numpy(), conv_transpose_ref(x, w, b, **kw), atol=1e-10)


@pytest.mark.parametrize("xs,ws,kw", CONV_CASES)
def test_conv_adjoint_identity(xs, ws, kw):
    """<conv(x, w), y> == <x, conv_transpose(y, w)>: the transposed form is the adjoint."""
    k = len(ws) - 2
    x, w = randn(*xs), randn(*ws)
    y = conv_ref(x, w, **kw)
    y2 = randn(*y.shape)
    s, p, d = (
        tup(kw.get("stride", 1), k),
        tup(kw.get("padding", 0), k),
        tup(kw.get("dilation", 1), k),
    )
    # output_padding so that the transposed convolution gives back the input's size
    op = [
        xs[2 + i] - ((y.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (ws[2 + i] - 1) + 1)
        for i in range(k)
    ]
    if any(o >= max(s[i], d[i]) for i, o in enumerate(op)):
        pytest.skip("input size not reachable by a transposed convolution")
    xt = ember.convolution(
        T(y2), T(w), None, list(s), list(p), list(d), True, op, kw.get("groups", 1)
    )
    assert xt.shape == xs
    np.testing.assert_allclose(np.vdot(y, y2), np.vdot(x, xt.numpy()), rtol=1e-10)


BWD_CASES = [
    ((2, 4, 6), (4, 2, 3), dict(stride=2, padding=1, dilation=1, groups=2), False, (0,)),
    (
        (1, 2, 5, 4),
        (3, 2, 2, 3),
        dict(stride=(2, 1), padding=(1, 1), dilation=(1, 2), groups=1),
        False,
        (0, 0),
    ),
    ((1, 4, 3, 3), (4, 1, 3, 2), dict(stride=2, padding=1, dilation=1, groups=2), True, (1, 0)),
    (
        (1, 2, 3, 2, 3),
        (2, 2, 2, 2, 1),
        dict(stride=1, padding=(1, 0, 0), dilation=1, groups=1),
        False,
        (0, 0, 0),
    ),
]


@pytest.mark.parametrize("xs,ws,kw,transposed,op", BWD_CASES)
def test_convolution_backward_finite_differences(xs, ws, kw, transposed, op):
    k = len(ws) - 2
    s, p, d = (list(tup(kw[n], k)) for n in ("stride", "padding", "dilation"))
    g = kw["groups"]
    x, w = randn(*xs), randn(*ws)
    bsz = (ws[1] * g) if transposed else ws[0]
    b = randn(bsz)

    def fwd():
        return ember.convolution(T(x), T(w), T(b), s, p, d, transposed, list(op), g).numpy()

    go = randn(*fwd().shape)
    f = lambda: float(np.vdot(fwd(), go))  # noqa: E731
    gi, gw, gb = ember.convolution_backward(
        T(go), T(x), T(w), [bsz], s, p, d, transposed, list(op), g, [True, True, True]
    )
    np.testing.assert_allclose(gi.numpy(), numgrad(f, x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gw.numpy(), numgrad(f, w), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gb.numpy(), numgrad(f, b), rtol=1e-6, atol=1e-6)
    # the mask leaves entries out
    r = ember.convolution_backward(
        T(go), T(x), T(w), None, s, p, d, transposed, list(op), g, [False, True, False]
    )
    assert r[0] is None and r[2] is None
    np.testing.assert_allclose(r[1].numpy(), gw.numpy())


def test_conv_errors():
    x, w = T(randn(1, 4, 5, 5)), T(randn(8, 3, 3, 3))
    with pytest.raises(
        RuntimeError,
        match=r"Given groups=1, weight of size \[8, 3, 3, 3\], expected "
        r"input\[1, 4, 5, 5\] to have 3 channels, but got 4 channels instead",
    ):
        ember.conv2d(x, w)
    with pytest.raises(RuntimeError, match="expected weight to be divisible by 3"):
        ember.conv2d(x, T(randn(8, 2, 3, 3)), groups=3)
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        ember.conv2d(T(randn(1, 4, 2, 2)), T(randn(8, 4, 3, 3)))
    with pytest.raises(RuntimeError, match="should be the same"):
        ember.conv2d(T(randn(1, 4, 5, 5)), T(randn(8, 4, 3, 3, dtype=np.float32)))
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 8 elements"):
        ember.conv2d(T(randn(1, 4, 5, 5)), T(randn(8, 4, 3, 3)), T(randn(7)))
    with pytest.raises(
        RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\) input to conv2d"
    ):
        ember.conv2d(T(randn(5, 5)), T(randn(8, 4, 3, 3)))
    with pytest.raises(RuntimeError, match="non-positive stride"):
        ember.conv2d(T(randn(1, 4, 5, 5)), T(randn(8, 4, 3, 3)), stride=0)
    with pytest.raises(RuntimeError, match="negative padding"):
        ember.conv2d(T(randn(1, 4, 5, 5)), T(randn(8, 4, 3, 3)), padding=-1)
    with pytest.raises(RuntimeError, match="dilation should be greater than zero"):
        ember.conv2d(T(randn(1, 4, 5, 5)), T(randn(8, 4, 3, 3)), dilation=0)
    with pytest.raises(RuntimeError, match="non-positive groups"):
        ember.conv2d(T(randn(1, 4, 5, 5)), T(randn(8, 4, 3, 3)), groups=0)
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided"):
        ember.conv2d(T(randn(1, 4, 5, 5)), T(randn(8, 4, 3, 3)), stride=2, padding="same")
    with pytest.raises(RuntimeError, match="Invalid padding string"):
        ember.conv2d(T(randn(1, 4, 5, 5)), T(randn(8, 4, 3, 3)), padding="foo")
    with pytest.raises(
        RuntimeError, match="expected stride to be a single integer value or a list of 2"
    ):
        ember.conv2d(T(randn(1, 4, 5, 5)), T(randn(8, 4, 3, 3)), stride=(1, 1, 1))
    with pytest.raises(
        RuntimeError, match="output padding must be smaller than either stride or dilation"
    ):
        ember.conv_transpose2d(
            T(randn(1, 4, 5, 5)), T(randn(4, 2, 3, 3)), stride=2, output_padding=2
        )
    with pytest.raises(RuntimeError, match="Given transposed=1, weight of size"):
        ember.conv_transpose2d(T(randn(1, 4, 5, 5)), T(randn(3, 2, 3, 3)))
    with pytest.raises(NotImplementedError, match="slow_conv2d_cpu"):  # (integers: see below)
        ember.conv2d(T(np.ones((1, 4, 5, 5), bool)), T(np.ones((8, 4, 3, 3), bool)))
    with pytest.raises(RuntimeError, match="expected grad_output of size"):
        ember.convolution_backward(
            T(randn(1, 8, 2, 2)),
            T(randn(1, 4, 5, 5)),
            T(randn(8, 4, 3, 3)),
            None,
            [1, 1],
            [0, 0],
            [1, 1],
            False,
            [0, 0],
            1,
            [True, True, True],
        )


# ------------------------------------------------------------------------------------------------
# oneDNN: float32 convolutions go to the optional library where it is installed and faster
# (csrc/ops/conv.cpp, on_onednn); each pass is checked against the NumPy references and against
# ember's own kernels (the switch off), whichever kernel the shape selects.

needs_onednn = pytest.mark.skipif(not ember._C._onednn_available(),
                                  reason="oneDNN (onednn-cpu-gomp) is not installed")

ONEDNN_CASES = [
    ("3x3 padded", (3, 16, 9, 9), (32, 16, 3, 3), dict(stride=1, padding=1, dilation=1, groups=1)),
    ("strided, input rows past the last window", (2, 16, 12, 11), (8, 16, 3, 3),
     dict(stride=2, padding=0, dilation=1, groups=1)),
    ("image channels, 11x11/4", (2, 3, 40, 37), (16, 3, 11, 11),
     dict(stride=4, padding=2, dilation=1, groups=1)),
    ("grouped, dilated, asymmetric", (2, 32, 11, 9), (16, 8, 3, 2),
     dict(stride=(1, 2), padding=(2, 1), dilation=(2, 1), groups=4)),
    ("1-d", (3, 20, 30), (24, 20, 5), dict(stride=2, padding=2, dilation=1, groups=1)),
    ("3-d", (2, 16, 5, 6, 7), (16, 16, 3, 3, 3), dict(stride=1, padding=1, dilation=1, groups=1)),
    ("1x1 folded", (4, 64, 2, 2), (32, 64, 1, 1), dict(stride=1, padding=0, dilation=1, groups=1)),
    ("1x1 strided", (2, 32, 8, 8), (16, 32, 1, 1), dict(stride=2, padding=0, dilation=1, groups=1)),
    ("batch of one", (1, 16, 7, 7), (16, 16, 3, 3), dict(stride=1, padding=1, dilation=1, groups=1)),
]


@needs_onednn
@pytest.mark.parametrize("name,xs,ws,kw", ONEDNN_CASES, ids=[c[0] for c in ONEDNN_CASES])
def test_onednn_convolution_matches_references(name, xs, ws, kw):
    x, w, b = randn(*xs), randn(*ws), randn(ws[0])
    k = len(ws) - 2
    full = lambda v: list(tup(kw[v], k))  # noqa: E731
    args = (full("stride"), full("padding"), full("dilation"), False, [0] * k, kw["groups"])
    ref = conv_ref(x, w, b, kw["stride"], kw["padding"], kw["dilation"], kw["groups"])
    go = randn(*ref.shape)
    gi_ref, gw_ref = conv_backward_ref(x, w, go, kw["stride"], kw["padding"], kw["dilation"],
                                       kw["groups"])
    f32 = lambda a: T(a.astype(np.float32))  # noqa: E731
    results = {}
    for on in (True, False):
        with ember.backends.mkldnn.flags(enabled=on):
            y = ember.convolution(f32(x), f32(w), f32(b), *args).numpy()
            grads = ember.convolution_backward(f32(go), f32(x), f32(w), [ws[0]], *args,
                                               [True, True, True])
        results[on] = (y, *(g.numpy() for g in grads))
        scale = lambda r: 1e-4 * max(1.0, np.abs(r).max())  # noqa: E731
        for got, want in zip(results[on], (ref, gi_ref, gw_ref, go.sum(axis=(0, *range(2, go.ndim))))):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=scale(want))
    for a, b_ in zip(results[True], results[False]):
        np.testing.assert_allclose(a, b_, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(b_).max()))


@needs_onednn
def test_onednn_transposed_and_same_padding():
    x, w = randn(2, 16, 6, 5), randn(16, 8, 3, 3)
    for on in (True, False):
        with ember.backends.mkldnn.flags(enabled=on):
            y = ember.conv_transpose2d(T(x.astype(np.float32)), T(w.astype(np.float32)), stride=2,
                                       padding=1, output_padding=1).numpy()
            z = ember.conv2d(T(x.astype(np.float32)), T(randn(4, 16, 4, 4).astype(np.float32)),
                             padding="same")
        if on:
            first = (y, z.numpy())
    np.testing.assert_allclose(first[0], y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(first[1].shape, z.shape)
    ref = conv_transpose_ref(x, w, None, 2, 1, 1)
    np.testing.assert_allclose(first[0], ref, rtol=1e-4, atol=1e-4)


@needs_onednn
def test_onednn_takes_the_passes_chosen_for_it():
    """The kernel choice (csrc/ops/conv.cpp, on_onednn): which passes oneDNN runs, counted."""
    calls = ember._C._onednn_calls

    def passes(xs, ws, dtype=np.float32, **kw):
        x, w = T(randn(*xs).astype(dtype)), T(randn(*ws).astype(dtype))
        k = len(ws) - 2
        args = ([kw.get("stride", 1)] * k, [kw.get("padding", 0)] * k, [1] * k, False, [0] * k,
                kw.get("groups", 1))
        y = ember.convolution(x, w, None, *args)
        before = calls()
        ember.convolution(x, w, None, *args)
        fwd = calls() - before
        before = calls()
        ember.convolution_backward(ember.ones_like(y), x, w, None, *args, [True, False, False])
        adj = calls() - before
        before = calls()
        ember.convolution_backward(ember.ones_like(y), x, w, None, *args, [False, True, False])
        return fwd, adj, calls() - before

    assert passes((2, 16, 8, 8), (16, 16, 3, 3), padding=1) == (1, 1, 1)
    assert passes((2, 16, 8, 8), (16, 1, 3, 3), padding=1, groups=16) == (1, 1, 1)  # depthwise
    assert passes((2, 16, 8, 8), (16, 16, 3, 3), np.float64, padding=1) == (0, 0, 0)
    assert passes((2, 16, 12, 12), (32, 16, 1, 1)) == (0, 0, 0)  # 1x1 over 144 positions
    assert passes((2, 3, 16, 16), (16, 3, 3, 3), padding=1) == (1, 0, 1)  # into 3 channels
    assert passes((2, 32, 8, 8), (16, 32, 1, 1), stride=2) == (1, 0, 1)  # strided 1x1
    assert passes((4, 512, 2, 2), (256, 512, 1, 1)) == (1, 1, 0)  # wide, 4 positions
    with ember.backends.mkldnn.flags(enabled=False):
        assert passes((2, 16, 8, 8), (16, 16, 3, 3), padding=1) == (0, 0, 0)


@needs_onednn
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_onednn_random_geometries_match_own_kernels(data):
    """Random 1-d/2-d/3-d float32 convolutions (strides, padding, dilation, groups, batch, odd
    sizes, input rows past the last window): every pass with oneDNN on equals ember's own."""
    k = data.draw(st.integers(1, 3))
    groups = data.draw(st.sampled_from([1, 1, 2, 4]))
    cin = groups * data.draw(st.integers(1, 8))
    cout = groups * data.draw(st.integers(1, 8))
    n = data.draw(st.integers(1, 3))
    ks = [data.draw(st.integers(1, 3)) for _ in range(k)]
    st_ = [data.draw(st.integers(1, 3)) for _ in range(k)]
    d = [data.draw(st.integers(1, 2)) for _ in range(k)]
    p = [data.draw(st.integers(0, 2)) for _ in range(k)]
    size = [data.draw(st.integers(max(1, d[i] * (ks[i] - 1) + 1 - 2 * p[i]), 7 if k == 3 else 12))
            for i in range(k)]
    x = T(randn(n, cin, *size).astype(np.float32))
    w = T(randn(cout, cin // groups, *ks).astype(np.float32))
    args = (st_, p, d, False, [0] * k, groups)
    got = {}
    for on in (True, False):
        with ember.backends.mkldnn.flags(enabled=on):
            y = ember.convolution(x, w, None, *args)
            g = T(randn(*y.shape).astype(np.float32))
            gi, gw, _ = ember.convolution_backward(g if on else got[True][3], x, w, None, *args,
                                                   [True, True, False])
            got[on] = (y.numpy(), gi.numpy(), gw.numpy(), g)
    for a, b in zip(got[True][:3], got[False][:3]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(b).max())))


@needs_onednn
def test_onednn_everywhere_passes_the_convolution_tests():
    """EMBER_ONEDNN=all sends every float32 pass to oneDNN (the shapes the choice keeps for
    ember's kernels included): the reference and random-geometry tests pass that way too."""
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
         "onednn_random or onednn_convolution_matches or onednn_transposed or conv_paths"],
        capture_output=True, text=True, timeout=600, env={**os.environ, "EMBER_ONEDNN": "all"})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


CL = ember.channels_last


@pytest.mark.parametrize("weight_cl", [False, True])
@pytest.mark.parametrize("onednn", [True, False])
@pytest.mark.parametrize("groups,cin,cout,stride,bias", [
    (1, 16, 32, 1, True), (1, 3, 16, 2, False), (16, 16, 16, 1, True), (4, 16, 8, 2, True),
    (1, 32, 64, 1, False)])
def test_conv_channels_last_matches_contiguous(onednn, groups, cin, cout, stride, bias,
                                               weight_cl):
    """A channels_last input (torch's memory format) gives a channels_last result and gradient,
    the same values as the contiguous layout; through oneDNN in place where it is installed,
    else by ember's kernels on a copy."""
    x = randn(3, cin, 9, 7).astype(np.float32)
    w = randn(cout, cin // groups, 3, 3).astype(np.float32)
    b = randn(cout).astype(np.float32) if bias else None
    g = randn(3, cout, (9 + 2 - 3) // stride + 1, (7 + 2 - 3) // stride + 1).astype(np.float32)
    args = ([stride] * 2, [1, 1], [1, 1], False, [0, 0], groups)
    want = ember.convolution(T(x), T(w), None if b is None else T(b), *args).numpy()
    want_grads = ember.convolution_backward(T(g), T(x), T(w), [cout] if bias else None, *args,
                                            [True, True, bias])
    xc = T(x).contiguous(memory_format=CL)
    wl = T(w).contiguous(memory_format=CL) if weight_cl else T(w)
    with ember.backends.mkldnn.flags(enabled=onednn):
        y = ember.convolution(xc, wl, None if b is None else T(b), *args)
        grads = ember.convolution_backward(T(g).contiguous(memory_format=CL), xc, wl,
                                           [cout] if bias else None, *args, [True, True, bias])
    assert y.is_contiguous(memory_format=CL) and not y.is_contiguous()
    if weight_cl:  # the weight gradient in the weight's layout, as torch's
        assert grads[1].is_contiguous(memory_format=CL)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)
    assert grads[0].is_contiguous(memory_format=CL)
    for got, ref in zip(grads, want_grads):
        if ref is None:
            assert got is None
        else:
            np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_channels_last_matches_contiguous(dtype, training):
    """Batch norm reads and writes a channels_last input in place (ops/cpu/batch_norm.cpp's
    channels-last passes): the same values, running statistics and gradients as contiguous."""
    x = (randn(4, 24, 5, 7) * 3 + 1).astype(dtype)
    w, b = randn(24).astype(dtype), randn(24).astype(dtype)
    go = randn(4, 24, 5, 7).astype(dtype)
    rm, rv = randn(24).astype(dtype), np.abs(randn(24)).astype(dtype) + 0.5
    results = []
    for layout in (ember.contiguous_format, CL):
        m, v = T(rm.copy()), T(rv.copy())
        xi = T(x).contiguous(memory_format=layout)
        out, mean, invstd = ember.native_batch_norm(xi, T(w), T(b), m, v, training, 0.1, 1e-5)
        grads = ember.native_batch_norm_backward(
            T(go).contiguous(memory_format=layout), xi, T(w), m, v, mean if training else None,
            invstd if training else None, training, 1e-5, [True, True, True])
        assert out.is_contiguous(memory_format=layout)
        assert grads[0].is_contiguous(memory_format=layout)
        results.append([out.numpy(), m.numpy(), v.numpy(), *(t.numpy() for t in grads)])
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, c in zip(*results):
        np.testing.assert_allclose(a, c, rtol=tol, atol=tol)
    # the contiguous results against the formula, in double
    mean = x.mean(axis=(0, 2, 3)) if training else rm
    var = x.var(axis=(0, 2, 3)) if training else rv
    ref = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    ref = ref * w[None, :, None, None] + b[None, :, None, None]
    np.testing.assert_allclose(results[1][0], ref, rtol=10 * tol, atol=10 * tol)


def test_onednn_switch_and_reason():
    m = ember.backends.mkldnn
    assert m.enabled is True
    with m.flags(enabled=False):
        assert m.enabled is False and ember._C._onednn_enabled() is False
    assert m.enabled is True
    if m.is_available():
        assert m._unavailable_reason() == "" and m.version().startswith("3.")
    else:
        assert "oneDNN is not used" in m._unavailable_reason() and m.version() is None


def _run(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


def test_onednn_missing_library_falls_back_with_a_reason():
    code = """if True:
        import numpy as np, ember
        ember._C._set_onednn_library("/nonexistent/libdnnl.so.3")
        x = ember.tensor(np.ones((1, 16, 5, 5), np.float32))
        w = ember.tensor(np.ones((4, 16, 3, 3), np.float32))
        y = ember.conv2d(x, w, padding=1)
        assert float(y[0, 0, 2, 2]) == 144.0 and float(y[0, 0, 0, 0]) == 64.0
        assert not ember.backends.mkldnn.is_available()
        print(ember.backends.mkldnn._unavailable_reason())
    """
    r = _run(code)
    assert r.returncode == 0, r.stderr
    assert "/nonexistent/libdnnl.so.3" in r.stdout and "own kernels" in r.stdout


def test_onednn_environment_switch():
    r = _run("import ember; print(ember.backends.mkldnn.enabled)", EMBER_ONEDNN="0")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


@needs_onednn
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_onednn_child_after_threaded_parent_does_not_hang():
    """GNU OpenMP's workers do not survive fork(): a child of a parent that ran a convolution on
    two threads uses ember's own kernels (and finishes) rather than hanging in oneDNN."""
    code = """if True:
        import os, numpy as np, ember
        ember.set_num_threads(2)
        x = ember.tensor(np.random.default_rng(0).standard_normal((4, 16, 12, 12)).astype(np.float32))
        w = ember.tensor(np.random.default_rng(1).standard_normal((16, 16, 3, 3)).astype(np.float32))
        y = ember.conv2d(x, w, padding=1)
        pid = os.fork()
        if pid == 0:
            z = ember.conv2d(x, w, padding=1)
            os._exit(0 if np.allclose(z.numpy(), y.numpy(), rtol=1e-4, atol=1e-4) else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """
    r = _run(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0"


# ------------------------------------------------------------------------------------------------
# pooling

MAXPOOL_CASES = [
    ((2, 3, 9), (3,), dict(stride=(2,), padding=1)),
    ((1, 2, 8), (2,), dict(dilation=2, ceil_mode=True)),
    ((2, 2, 7, 6), (3, 2), dict(stride=(2, 2), padding=(1, 1), ceil_mode=True)),
    ((1, 2, 7, 7), (2, 2), dict(stride=(3, 2), dilation=(2, 1))),
    ((3, 5, 5), (2, 2), dict()),  # unbatched
    ((1, 2, 5, 4, 5), (2, 2, 3), dict(stride=(2, 1, 2), padding=(1, 0, 1), ceil_mode=True)),
]


@pytest.mark.parametrize("xs,ks,kw", MAXPOOL_CASES)
def test_max_pool(xs, ks, kw):
    k = len(ks)
    x = randn(*xs)
    ref, ridx = max_pool_ref(x, ks, **kw)
    v, i = getattr(ember, f"max_pool{k}d_with_indices")(T(x), ks, **kw)
    np.testing.assert_array_equal(v.numpy(), ref)
    assert i.dtype == ember.int64
    np.testing.assert_array_equal(i.numpy(), ridx)
    np.testing.assert_array_equal(getattr(ember, f"max_pool{k}d")(T(x), ks, **kw).numpy(), ref)
    # backward: scatter by the indices (checked by finite differences of sum(pool(x) * go))
    go = randn(*ref.shape)
    full = {n: list(tup(kw.get(n, d), k)) for n, d in (("padding", 0), ("dilation", 1))}
    stride = list(kw.get("stride", ks))
    gi = getattr(ember, f"max_pool{k}d_with_indices_backward")(
        T(go),
        T(x),
        list(ks),
        stride,
        full["padding"],
        full["dilation"],
        kw.get("ceil_mode", False),
        i,
    )
    f = lambda: float(np.vdot(max_pool_ref(x, ks, **kw)[0], go))  # noqa: E731
    np.testing.assert_allclose(gi.numpy(), numgrad(f, x), atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    hw=st.tuples(st.integers(1, 11), st.integers(1, 11)),
    k=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    pad=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    ceil_mode=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
    seed=st.integers(0, 2**16),
)
def test_max_pool2d_vectorised_kernel_ties_nan_inf(hw, k, stride, pad, ceil_mode, dtype, seed):
    """The float32/float64 2-d kernel (ops/cpu/max_pool.cpp) on small integers (many ties), NaNs
    and -infs: the first maximum in scan order, the last NaN, torch's index for an all -inf
    window, with and without indices, padded, strided and ceil-mode windows."""
    pad = (min(pad[0], k[0] // 2), min(pad[1], k[1] // 2))
    if any(hw[i] + 2 * pad[i] < k[i] for i in range(2)):
        return
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 3, (2, 3, *hw)).astype(dtype)
    x[rng.random(x.shape) < 0.05] = np.nan
    x[rng.random(x.shape) < 0.1] = -np.inf
    ref, ridx = max_pool_ref(x, k, stride, pad, 1, ceil_mode)
    v, i = ember.max_pool2d_with_indices(T(x), k, stride, pad, 1, ceil_mode)
    np.testing.assert_array_equal(v.numpy(), ref)
    np.testing.assert_array_equal(i.numpy(), ridx)
    np.testing.assert_array_equal(ember.max_pool2d(T(x), k, stride, pad, 1, ceil_mode).numpy(), ref)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("k,stride,pad,ceil_mode", [(3, 2, 1, False), (2, 2, 0, False),
                                                     (3, 2, 0, True), (3, 1, 1, False)])
def test_max_pool2d_channels_last(dtype, k, stride, pad, ceil_mode):
    """A channels_last input (ops/cpu/max_pool.cpp's channels-innermost kernel for floats) gives
    channels_last values and indices equal to the reference, and a channels_last gradient."""
    x = RNG.integers(-3, 3, (2, 20, 9, 11)).astype(dtype)  # ties everywhere
    if dtype != np.int32:
        x[0, 3, 2, 2] = np.nan
        x[1, 5, 4:7, 4:7] = -np.inf
    ref, ridx = max_pool_ref(x, (k, k), stride, pad, 1, ceil_mode)
    xc = T(x).contiguous(memory_format=CL)
    v, i = ember.max_pool2d_with_indices(xc, k, stride, pad, 1, ceil_mode)
    assert v.is_contiguous(memory_format=CL) and i.is_contiguous(memory_format=CL)
    np.testing.assert_array_equal(v.numpy(), ref)
    np.testing.assert_array_equal(i.numpy(), ridx)
    np.testing.assert_array_equal(ember.max_pool2d(xc, k, stride, pad, 1, ceil_mode).numpy(), ref)
    if dtype == np.int32:
        return
    go = randn(*ref.shape).astype(dtype)
    args = ([k, k], [stride] * 2, [pad] * 2, [1, 1], ceil_mode)
    gi = ember.max_pool2d_with_indices_backward(T(go).contiguous(memory_format=CL), xc, *args, i)
    want = ember.max_pool2d_with_indices_backward(T(go), T(x), *args, T(ridx))
    assert gi.is_contiguous(memory_format=CL)
    np.testing.assert_array_equal(gi.numpy(), want.numpy())


def test_max_pool_nan_int_and_float32():
    x = randn(1, 1, 4, 4)
    x[0, 0, 1, 1] = np.nan
    v, i = ember.max_pool2d_with_indices(T(x), 2)
    assert np.isnan(v.numpy()[0, 0, 0, 0]) and i.numpy()[0, 0, 0, 0] == 5
    vals = ember.max_pool2d(T(x), 2).numpy()  # the values-only path
    assert np.isnan(vals[0, 0, 0, 0]) and not np.isnan(vals[0, 0, 1, 1])
    x3 = randn(2, 3, 4, 6, 5)  # 3-d with a depth-1 window: also the values-only path
    np.testing.assert_array_equal(
        ember.max_pool3d(T(x3), (1, 2, 2)).numpy(), max_pool_ref(x3, (1, 2, 2))[0]
    )
    xi = RNG.integers(-50, 50, (2, 3, 6, 6))
    np.testing.assert_array_equal(
        ember.max_pool2d(T(xi), 3, 2).numpy(), max_pool_ref(xi, (3, 3), (2, 2))[0]
    )
    xf = randn(2, 3, 6, 6, dtype=np.float32)
    np.testing.assert_array_equal(ember.max_pool2d(T(xf), 2).numpy(), max_pool_ref(xf, (2, 2))[0])


AVG_CASES = [
    ((2, 3, 9), (3,), dict(stride=(2,), padding=1)),
    ((2, 3, 8), (3,), dict(stride=(2,), padding=1, ceil_mode=True, count_include_pad=False)),
    ((2, 2, 7, 6), (3, 2), dict(stride=(2, 2), padding=(1, 1), ceil_mode=True)),
    ((1, 2, 7, 7), (3, 3), dict(stride=(2, 2), padding=(1, 1), count_include_pad=False)),
    ((1, 2, 6, 6), (2, 3), dict(padding=(1, 1), divisor_override=5)),
    ((3, 5, 5), (2, 2), dict()),
    ((1, 2, 5, 4, 5), (2, 2, 3), dict(stride=(2, 1, 2), padding=(1, 0, 1), ceil_mode=True)),
]


@pytest.mark.parametrize("xs,ks,kw", AVG_CASES)
def test_avg_pool(xs, ks, kw):
    k = len(ks)
    x = randn(*xs)
    ref = avg_pool_ref(x, ks, **kw)
    got = getattr(ember, f"avg_pool{k}d")(T(x), ks, **kw)
    np.testing.assert_allclose(got.numpy(), ref, atol=1e-12)
    go = randn(*ref.shape)
    # avg_pool1d has no divisor_override (as torch's), nor has its backward
    dov = () if k == 1 else (kw.get("divisor_override"),)
    gi = getattr(ember, f"avg_pool{k}d_backward")(
        T(go),
        T(x),
        list(ks),
        list(kw.get("stride", ks)),
        list(tup(kw.get("padding", 0), k)),
        kw.get("ceil_mode", False),
        kw.get("count_include_pad", True),
        *dov,
    )
    f = lambda: float(np.vdot(avg_pool_ref(x, ks, **kw), go))  # noqa: E731
    np.testing.assert_allclose(gi.numpy(), numgrad(f, x), atol=1e-6)


@pytest.mark.parametrize(
    "xs,osz",
    [
        ((2, 3, 7), (3,)),
        ((2, 3, 5), (7,)),
        ((1, 2, 7, 5), (3, 2)),
        ((3, 6, 6), (4, 4)),
        ((1, 1, 5, 4, 6), (2, 3, 4)),
    ],
)
def test_adaptive_pools(xs, osz):
    k = len(osz)
    x = randn(*xs)
    ref = adaptive_ref(x, osz, np.mean)
    got = getattr(ember, f"adaptive_avg_pool{k}d")(T(x), osz)
    np.testing.assert_allclose(got.numpy(), ref, atol=1e-12)
    go = randn(*ref.shape)
    gi = getattr(ember, f"adaptive_avg_pool{k}d_backward")(T(go), T(x))
    f = lambda: float(np.vdot(adaptive_ref(x, osz, np.mean), go))  # noqa: E731
    np.testing.assert_allclose(gi.numpy(), numgrad(f, x), atol=1e-6)
    v, i = getattr(ember, f"adaptive_max_pool{k}d")(T(x), osz)
    np.testing.assert_array_equal(v.numpy(), adaptive_ref(x, osz, np.max))
    flat = x.reshape(-1, math.prod(x.shape[-k:]))
    np.testing.assert_array_equal(
        np.take_along_axis(flat, i.numpy().reshape(flat.shape[0], -1), 1),
        v.numpy().reshape(flat.shape[0], -1),
    )
    gi = getattr(ember, f"adaptive_max_pool{k}d_backward")(T(go), T(x), i)
    f = lambda: float(np.vdot(adaptive_ref(x, osz, np.max), go))  # noqa: E731
    np.testing.assert_allclose(gi.numpy(), numgrad(f, x), atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "pool,args",
    [
        ("avg", ((3, 3), dict(stride=(2, 2), padding=(1, 1), ceil_mode=True))),
        ("avg", ((3, 2), dict(stride=(2, 1), padding=(1, 1), count_include_pad=False))),
        ("avg", ((2, 3), dict(padding=(1, 1), divisor_override=5))),
        ("adaptive_avg", ((4, 5),)),
        ("adaptive_avg", ((1, 1),)),
        ("adaptive_max", ((4, 5),)),
    ],
)
def test_pools_keep_channels_last(pool, args, dtype):
    """A channels_last input to the 2-d averaging and adaptive pools gives channels_last values
    and gradients (pool.cpp's channel-row kernels), equal to the NumPy references."""
    x = randn(2, 19, 9, 11).astype(dtype)  # 19 channels: not a multiple of a vector's width
    xc = T(x).contiguous(memory_format=CL).requires_grad_()
    size, kw = args[0], (args[1] if len(args) > 1 else {})
    out = getattr(ember.nn.functional, f"{pool}_pool2d")(xc, size, **kw)
    if pool == "avg":
        ref = avg_pool_ref(x, size, **kw)
        f = lambda: float(np.vdot(avg_pool_ref(x, size, **kw), go))  # noqa: E731
    else:
        fn = np.mean if pool == "adaptive_avg" else np.max
        ref = adaptive_ref(x, size, fn)
        f = lambda: float(np.vdot(adaptive_ref(x, size, fn), go))  # noqa: E731
    assert out.is_contiguous(memory_format=CL)
    tol = 1e-12 if dtype == np.float64 else 1e-6
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=tol, atol=tol)
    go = randn(*ref.shape).astype(dtype)
    out.backward(T(go))
    assert xc.grad.is_contiguous(memory_format=CL)
    if dtype == np.float64:
        np.testing.assert_allclose(xc.grad.numpy(), numgrad(f, x), atol=1e-6)


def test_adaptive_none_entry_is_the_functional_layers():
    # as torch._C._nn's: None entries (keep the input's size) are ember.nn.functional's
    with pytest.raises(TypeError, match="argument 'output_size' \\(position 2\\) must be tuple of ints"):
        ember.adaptive_avg_pool2d(T(randn(1, 2, 5, 6)), (None, 3))


def test_pool_errors():
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        ember.max_pool2d(T(randn(1, 1, 4, 4)), 3, padding=2)
    with pytest.raises(
        RuntimeError,
        match=r"Given input size: \(1x2x2\). Calculated output size: "
        r"\(1x0x0\). Output size is too small",
    ):
        ember.max_pool2d(T(randn(1, 1, 2, 2)), 3)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        ember.avg_pool1d(T(randn(1, 1, 4)), 5)
    with pytest.raises(RuntimeError, match="stride should be greater than zero"):
        ember.max_pool2d(T(randn(1, 1, 4, 4)), 2, stride=0)
    with pytest.raises(RuntimeError, match="kernel size should be greater than zero"):
        ember.avg_pool2d(T(randn(1, 1, 4, 4)), 0)
    with pytest.raises(RuntimeError, match="dilation should be greater than zero"):
        ember.max_pool2d(T(randn(1, 1, 4, 4)), 2, dilation=0)
    with pytest.raises(RuntimeError, match="non-empty 3D or 4D"):
        ember.max_pool2d(T(randn(4, 4)), 2)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        ember.avg_pool2d(T(randn(1, 1, 4, 4)), 2, divisor_override=0)
    with pytest.raises(RuntimeError, match="output_size must be 2"):
        ember.adaptive_avg_pool2d(T(randn(1, 1, 4, 4)), (2,))
    with pytest.raises(RuntimeError, match="greater than or equal to 0"):
        ember.adaptive_avg_pool1d(T(randn(1, 1, 4)), -1)
    with pytest.raises(RuntimeError, match="Expected input to have non-zero size for non-batch"):
        ember.adaptive_max_pool2d(T(randn(1, 1, 0, 4)), 2)
    with pytest.raises(NotImplementedError):
        ember.max_pool2d(T(np.ones((1, 1, 4, 4), bool)), 2)
    x = T(randn(1, 1, 4, 4))
    v, i = ember.max_pool2d_with_indices(x, 2)
    bad = T(np.full((1, 1, 2, 2), 99, np.int64))
    with pytest.raises(RuntimeError, match="invalid max index"):
        ember.max_pool2d_with_indices_backward(v, x, [2, 2], [2, 2], [0, 0], [1, 1], False, bad)
    with pytest.raises(RuntimeError, match="expected grad_output of size"):
        ember.max_pool2d_with_indices_backward(x, x, [2, 2], [2, 2], [0, 0], [1, 1], False, i)


def test_pool_empty_batch():
    assert ember.max_pool2d(T(randn(0, 2, 4, 4)), 2).shape == (0, 2, 2, 2)
    assert ember.adaptive_avg_pool2d(T(randn(1, 0, 4, 4)), 2).shape == (1, 0, 2, 2)
    assert ember.adaptive_avg_pool2d(T(randn(1, 1, 4, 4)), 0).shape == (1, 1, 0, 0)


# ------------------------------------------------------------------------------------------------
# nll_loss


def nll_ref(x, t, w, reduction, ignore_index):
    C = x.shape[1] if x.ndim > 1 else x.shape[0]
    w = np.ones(C) if w is None else w
    if x.ndim == 1:
        x, t = x[None], np.asarray(t).reshape(1)
    xm = np.moveaxis(x, 1, -1).reshape(-1, C)
    tf = t.reshape(-1)
    keep = tf != ignore_index
    tsafe = np.where(keep, tf, 0)
    ww = np.where(keep, w[tsafe], 0.0)
    losses = -ww * xm[np.arange(len(tf)), tsafe]
    if reduction == 0:
        return losses.reshape(t.shape)
    if reduction == 2:
        return losses.sum()
    return losses.sum() / ww.sum()


@pytest.mark.parametrize("xs", [(5,), (6, 4), (3, 4, 5), (2, 3, 2, 3)])
@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(xs, reduction, weighted):
    x = randn(*xs)
    C = xs[1] if len(xs) > 1 else xs[0]
    tshape = () if len(xs) == 1 else (xs[0],) + xs[2:]
    t = RNG.integers(0, C, tshape)
    if t.size > 2:
        t.reshape(-1)[1] = -100
    w = RNG.random(C) + 0.5 if weighted else None
    ref = nll_ref(x, t, w, reduction, -100)
    got = ember.nll_loss(T(x), T(t), None if w is None else T(w), reduction, -100)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)
    go = randn(*np.shape(ref))
    gi = ember.nll_loss_backward(T(go), T(x), T(t), None if w is None else T(w), reduction, -100)
    f = lambda: float(np.vdot(nll_ref(x, t, w, reduction, -100), go))  # noqa: E731
    np.testing.assert_allclose(gi.numpy(), numgrad(f, x), atol=1e-6)
    out, tw = ember.nll_loss_forward(T(x), T(t), None if w is None else T(w), reduction, -100)
    gi2 = ember.nll_loss_backward(
        T(go), T(x), T(t), None if w is None else T(w), reduction, -100, tw
    )
    np.testing.assert_allclose(gi2.numpy(), gi.numpy())


def test_nll_loss_strings_ignore_and_float32():
    x = randn(4, 3, dtype=np.float32)
    t = np.array([0, 2, 1, 1])
    np.testing.assert_allclose(
        ember.nll_loss(T(x), T(t), reduction="sum").numpy(),
        nll_ref(x.astype(np.float64), t, None, 2, -100),
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        ember.nll_loss(T(x), T(t), ignore_index=1).numpy(),
        nll_ref(x.astype(np.float64), t, None, 1, 1),
        rtol=1e-6,
    )
    allign = ember.nll_loss(T(x), T(np.full(4, -100)))
    assert np.isnan(allign.item())
    assert ember.nll_loss(T(x), T(np.full(4, -100)), reduction=2).item() == 0


def test_nll_loss_errors():
    x = T(randn(3, 5))
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        ember.nll_loss(x, T(np.array([1, 5, 2])))
    with pytest.raises(IndexError, match="Target -3 is out of bounds."):
        ember.nll_loss(x, T(np.array([1, -3, 2])), reduction=0)
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        ember.nll_loss_backward(T(np.array(1.0)), x, T(np.array([1, 7, 2])))
    with pytest.raises(RuntimeError, match="size mismatch"):
        ember.nll_loss(x, T(np.array([1, 2])))
    with pytest.raises(RuntimeError):
        ember.nll_loss(x, T(np.array([1.0, 2, 3])))
    with pytest.raises(
        RuntimeError, match="weight tensor should be defined either for all 5 classes"
    ):
        ember.nll_loss(x, T(np.array([1, 2, 3])), T(randn(4)))
    with pytest.raises(ValueError):
        ember.nll_loss(x, T(np.array([1, 2, 3])), reduction="avg")
    with pytest.raises(RuntimeError, match="Expected target size"):
        ember.nll_loss(T(randn(3, 5, 2)), T(np.array([1, 2, 3])))


# ------------------------------------------------------------------------------------------------
# batch norm / layer norm


# (fewer than 16 elements per channel and sample run as (N, C * inner) columns; 20 and 289 one
# channel at a time)
@pytest.mark.parametrize("xs", [(6, 3), (4, 3, 5), (2, 3, 4, 3), (2, 3, 4, 5), (2, 3, 17, 17)])
@pytest.mark.parametrize("affine", [False, True])
def test_batch_norm_training(xs, affine):
    x = randn(*xs)
    C = xs[1]
    w, b = (randn(C), randn(C)) if affine else (None, None)
    rm, rv = np.zeros(C), np.ones(C)
    rme, rve = T(rm), T(rv)
    axes = (0,) + tuple(range(2, len(xs)))
    mean, var = x.mean(axes), x.var(axes)
    shape = (1, C) + (1,) * (len(xs) - 2)
    ref = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-5)
    if affine:
        ref = ref * w.reshape(shape) + b.reshape(shape)
    out, sm, si = ember.native_batch_norm(
        T(x), None if w is None else T(w), None if b is None else T(b), rme, rve, True, 0.1, 1e-5
    )
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-10)
    np.testing.assert_allclose(sm.numpy(), mean, atol=1e-12)
    np.testing.assert_allclose(si.numpy(), 1 / np.sqrt(var + 1e-5), rtol=1e-10)
    M = x.size // C
    np.testing.assert_allclose(rme.numpy(), 0.1 * mean, atol=1e-12)
    np.testing.assert_allclose(rve.numpy(), 0.9 + 0.1 * var * M / (M - 1), rtol=1e-12)
    # backward by finite differences
    go = randn(*xs)
    wv = w if affine else np.ones(C)
    bv = b if affine else np.zeros(C)

    def f():
        o = ember.native_batch_norm(T(x), T(wv), T(bv), None, None, True, 0.1, 1e-5)[0]
        return float(np.vdot(o.numpy(), go))

    gi, gw, gb = ember.native_batch_norm_backward(
        T(go), T(x), T(wv), None, None, sm, si, True, 1e-5, [True, True, True]
    )
    np.testing.assert_allclose(gi.numpy(), numgrad(f, x), atol=1e-5)
    np.testing.assert_allclose(gw.numpy(), numgrad(f, wv), atol=1e-5)
    np.testing.assert_allclose(gb.numpy(), numgrad(f, bv), atol=1e-5)


@pytest.mark.parametrize("xs", [(16, 8), (16, 8, 2, 2), (16, 8, 4, 4), (4, 8, 9, 9)])
def test_batch_norm_float32_keeps_deviations_of_a_large_mean(xs):
    """float32 values 1000 + N(0, 0.01): the mean is summed as deviations from the first row
    (where fewer than 16 elements per channel and sample run as columns), the variance as
    squares of deviations (the columns' combined with Chan's update), not E[x^2] - E[x]^2."""
    x32 = (1000 + 0.01 * randn(*xs)).astype(np.float32)
    x = x32.astype(np.float64)
    axes = (0,) + tuple(range(2, len(xs)))
    mean, var = x.mean(axes), x.var(axes)
    shape = (1, xs[1]) + (1,) * (len(xs) - 2)
    out, sm, si = ember.native_batch_norm(T(x32), None, None, None, None, True, 0.1, 1e-5)
    np.testing.assert_allclose(sm.numpy(), mean, rtol=1e-6)
    np.testing.assert_allclose(si.numpy(), 1 / np.sqrt(var + 1e-5), rtol=1e-4)
    ref = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-5)
    np.testing.assert_allclose(out.numpy(), ref, atol=0.02)
    go = randn(*xs).astype(np.float32)
    gi, gw, gb = ember.native_batch_norm_backward(
        T(go), T(x32), T(np.ones(xs[1], np.float32)), None, None, sm, si, True, 1e-5,
        [True, True, True])
    g = go.astype(np.float64)
    xhat = ref
    M = x.size // xs[1]
    np.testing.assert_allclose(gb.numpy(), g.sum(axes), rtol=1e-4, atol=1e-4)
    # (x - mean in float32, as torch's kernel: the mean's rounding, 3e-5 against a spread of
    # 0.01, moves each xhat by up to 0.3%)
    np.testing.assert_allclose(gw.numpy(), (g * xhat).sum(axes), rtol=0.01, atol=0.3)
    want = (g - g.mean(axes, keepdims=True)
            - xhat * (g * xhat).sum(axes, keepdims=True) / M) / np.sqrt(var.reshape(shape) + 1e-5)
    np.testing.assert_allclose(gi.numpy(), want, rtol=1e-2, atol=np.abs(want).max() * 0.02)


def test_batch_norm_of_no_elements_in_training_is_refused():
    """torch's native op has no statistics of no elements (F.batch_norm returns before it)."""
    for shape in ((2, 3, 0), (0, 3)):
        with pytest.raises(RuntimeError, match="input tensor must have at least one element"):
            ember.native_batch_norm(T(np.zeros(shape)), None, None, None, None, True, 0.1, 1e-5)


def test_batch_norm_eval():
    x = randn(4, 3, 5)
    rm, rv, w, b = randn(3), RNG.random(3) + 0.5, randn(3), randn(3)
    out, sm, si = ember.native_batch_norm(T(x), T(w), T(b), T(rm), T(rv), False, 0.1, 1e-5)
    sh = (1, 3, 1)
    ref = (x - rm.reshape(sh)) / np.sqrt(rv.reshape(sh) + 1e-5) * w.reshape(sh) + b.reshape(sh)
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-12)
    assert sm.shape == (0,) and si.shape == (0,)
    go = randn(4, 3, 5)
    gi, gw, gb = ember.native_batch_norm_backward(
        T(go), T(x), T(w), T(rm), T(rv), None, None, False, 1e-5, [True, True, True]
    )
    np.testing.assert_allclose(gi.numpy(), go * (w / np.sqrt(rv + 1e-5)).reshape(sh), atol=1e-12)
    np.testing.assert_allclose(gb.numpy(), go.sum((0, 2)), atol=1e-12)
    with pytest.raises(RuntimeError, match="expected weight to have 3 elements"):
        ember.native_batch_norm(T(x), T(randn(4)), None, None, None, True, 0.1, 1e-5)


@pytest.mark.parametrize("xs,ns", [((4, 5), (5,)), ((2, 3, 4), (3, 4)), ((3, 2, 6), (6,))])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm(xs, ns, affine):
    x = randn(*xs)
    w, b = (randn(*ns), randn(*ns)) if affine else (None, None)
    axes = tuple(range(len(xs) - len(ns), len(xs)))
    mean, var = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
    ref = (x - mean) / np.sqrt(var + 1e-5)
    if affine:
        ref = ref * w + b
    out, m, r = ember.native_layer_norm(
        T(x), list(ns), None if w is None else T(w), None if b is None else T(b), 1e-5
    )
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-10)
    np.testing.assert_allclose(m.numpy(), mean, atol=1e-12)
    np.testing.assert_allclose(r.numpy(), 1 / np.sqrt(var + 1e-5), rtol=1e-10)
    go = randn(*xs)
    wv = w if affine else np.ones(ns)
    bv = b if affine else np.zeros(ns)

    def f():
        return float(
            np.vdot(ember.native_layer_norm(T(x), list(ns), T(wv), T(bv), 1e-5)[0].numpy(), go)
        )

    gi, gw, gb = ember.native_layer_norm_backward(
        T(go), T(x), list(ns), m, r, T(wv), T(bv), [True, True, True]
    )
    np.testing.assert_allclose(gi.numpy(), numgrad(f, x), atol=1e-5)
    np.testing.assert_allclose(gw.numpy(), numgrad(f, wv), atol=1e-5)
    np.testing.assert_allclose(gb.numpy(), numgrad(f, bv), atol=1e-5)


def test_layer_norm_errors():
    with pytest.raises(
        RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"
    ):
        ember.native_layer_norm(T(randn(3, 5)), [4], None, None, 1e-5)
    with pytest.raises(
        RuntimeError, match="Expected weight to be of same shape as normalized_shape"
    ):
        ember.native_layer_norm(T(randn(3, 5)), [5], T(randn(4)), None, 1e-5)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("params", ["both", "weight", "bias", "none"])
def test_layer_norm_float32_rows(threads, params):
    """The float32 row kernels (vectorised, statistics in float32, weight/bias gradients summed
    per thread) against the float64 formulas; D = 203 leaves a tail after the vector lanes."""
    M, D = 97, 203
    x = randn(M, D) * 3 + 1
    w = randn(D) if params in ("both", "weight") else None
    b = randn(D) if params in ("both", "bias") else None
    go = randn(M, D)
    f32 = lambda a: None if a is None else T(a.astype(np.float32))  # noqa: E731
    old = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        out, m, r = ember.native_layer_norm(f32(x), [D], f32(w), f32(b), 1e-5)
        gi, gw, gb = ember.native_layer_norm_backward(f32(go), f32(x), [D], m, r, f32(w), f32(b),
                                                      [True, True, True])
    finally:
        ember.set_num_threads(old)
    xf = x.astype(np.float32).astype(np.float64)
    mean, var = xf.mean(1, keepdims=True), xf.var(1, keepdims=True)
    rstd = 1 / np.sqrt(var + 1e-5)
    xhat = (xf - mean) * rstd
    wv = np.ones(D) if w is None else w.astype(np.float32)
    ref = xhat * wv + (0 if b is None else b.astype(np.float32))
    assert out.dtype == m.dtype == r.dtype == ember.float32
    np.testing.assert_allclose(out.numpy(), ref, atol=2e-5)
    np.testing.assert_allclose(m.numpy(), mean, rtol=1e-5)
    np.testing.assert_allclose(r.numpy(), rstd, rtol=1e-5)
    gw_ = go.astype(np.float32) * wv
    ref_gi = rstd * (gw_ - gw_.mean(1, keepdims=True) - xhat * (gw_ * xhat).mean(1, keepdims=True))
    np.testing.assert_allclose(gi.numpy(), ref_gi, atol=2e-5)
    if w is None:
        assert gw is None
    else:
        np.testing.assert_allclose(gw.numpy(), (go.astype(np.float32) * xhat).sum(0), atol=1e-3)
    if b is None:
        assert gb is None
    else:
        np.testing.assert_allclose(gb.numpy(), go.astype(np.float32).sum(0), atol=1e-3)


# ------------------------------------------------------------------------------------------------
# embedding


def test_embedding_and_backward():
    w = randn(6, 4)
    idx = np.array([[1, 3, 1], [0, 5, 3]])
    got = ember.embedding(T(w), T(idx))
    np.testing.assert_array_equal(got.numpy(), w[idx])
    np.testing.assert_array_equal(ember.embedding(T(w), T(idx.astype(np.int32))).numpy(), w[idx])
    go = randn(2, 3, 4)
    ref = np.zeros_like(w)
    np.add.at(ref, idx, go)
    np.testing.assert_allclose(
        ember.embedding_dense_backward(T(go), T(idx), 6, -1, False).numpy(), ref
    )
    ref_pad = ref.copy()
    ref_pad[3] = 0
    np.testing.assert_allclose(
        ember.embedding_backward(T(go), T(idx), 6, 3, False, False).numpy(), ref_pad
    )
    counts = np.bincount(idx.ravel(), minlength=6)
    ref_scaled = ref / np.maximum(counts, 1)[:, None]
    np.testing.assert_allclose(
        ember.embedding_dense_backward(T(go), T(idx), 6, -1, True).numpy(), ref_scaled
    )


def test_embedding_errors():
    w = T(randn(3, 5))
    with pytest.raises(IndexError, match="index out of range in self"):
        ember.embedding(w, T(np.array([1, 3])))
    with pytest.raises(IndexError, match="index out of range in self"):
        ember.embedding(w, T(np.array([1, -1])))
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types"):
        ember.embedding(w, T(np.array([1.0, 2.0])))
    with pytest.raises(NotImplementedError):
        ember.embedding_backward(T(randn(2, 5)), T(np.array([1, 2])), 3, -1, False, True)


# ------------------------------------------------------------------------------------------------
# the autograd hook: ops hand their canonical call to the registered hook


def test_autograd_routing(recording_hook):
    calls = recording_hook
    x = T(randn(1, 2, 5, 5)).requires_grad_(True)
    w = T(randn(3, 2, 3, 3))
    y = ember.conv2d(x, w, padding=1)
    assert y.shape == (1, 3, 5, 5)
    assert calls[-1] == (
        "convolution",
        3,
        dict(
            stride=[1, 1],
            padding=[1, 1],
            dilation=[1, 1],
            transposed=False,
            output_padding=[0, 0],
            groups=1,
        ),
    )
    ember.conv_transpose1d(T(randn(1, 2, 5)), T(randn(2, 3, 3)).requires_grad_(True), stride=2)
    assert calls[-1][0] == "convolution" and calls[-1][2]["transposed"] is True
    v = ember.max_pool2d(x, 2)
    assert v.shape == (1, 2, 2, 2)
    assert calls[-1] == (
        "max_pool2d_with_indices",
        1,
        dict(kernel_size=[2, 2], stride=[2, 2], padding=[0, 0], dilation=[1, 1], ceil_mode=False),
    )
    ember.avg_pool2d(x, 3, 1, 1)
    assert calls[-1][0] == "avg_pool2d" and calls[-1][2]["divisor_override"] is None
    ember.adaptive_avg_pool2d(x, 2)
    assert calls[-1] == ("adaptive_avg_pool2d", 1, dict(output_size=[2, 2]))
    ember.adaptive_max_pool2d(x, 2)
    assert calls[-1][0] == "adaptive_max_pool2d"
    ember.nll_loss(T(randn(3, 4)).requires_grad_(True), T(np.array([0, 1, 2])))
    assert calls[-1] == ("nll_loss", 3, dict(reduction=1, ignore_index=-100))
    ember.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
    assert calls[-1] == ("native_batch_norm", 5, dict(training=True, momentum=0.1, eps=1e-5))
    ember.native_layer_norm(x, [5, 5], None, None, 1e-5)
    assert calls[-1] == ("native_layer_norm", 4, dict(eps=1e-5))
    ember.embedding(T(randn(4, 3)).requires_grad_(True), T(np.array([1, 2])))
    assert calls[-1][0] == "embedding"
    go = T(randn(1, 3, 5, 5)).requires_grad_(True)
    r = ember.convolution_backward(
        go, x, w, [3], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True]
    )
    assert calls[-1][0] == "convolution_backward" and len(r) == 3
    n = len(calls)
    with ember.no_grad():
        ember.conv2d(x, w)
    assert len(calls) == n
    # 'same' with an odd total padding: symmetric convolution + narrow through the hook
    w2 = T(randn(3, 2, 2, 3))
    y = ember.conv2d(x, w2, padding="same", dilation=(1, 2))
    assert calls[-1][0] == "convolution" and calls[-1][2]["padding"] == [1, 2]
    with ember.no_grad():
        ref = ember.conv2d(x, w2, padding="same", dilation=(1, 2))
    np.testing.assert_allclose(y.detach().numpy(), ref.numpy(), atol=1e-12)


# ------------------------------------------------------------------------------------------------
# PyTorch parity


def test_torch_parity():
    torch = pytest.importorskip("torch")
    x = randn(2, 4, 9, 8, dtype=np.float32)
    w = randn(6, 2, 3, 3, dtype=np.float32)
    b = randn(6, dtype=np.float32)
    kw = dict(stride=2, padding=1, dilation=(1, 2), groups=2)
    np.testing.assert_allclose(
        ember.conv2d(T(x), T(w), T(b), **kw).numpy(),
        torch.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), **kw).numpy(),
        rtol=1e-4,
        atol=1e-4,
    )
    wt = randn(4, 3, 3, 2, dtype=np.float32)
    kt = dict(stride=2, padding=1, output_padding=1, groups=2)
    np.testing.assert_allclose(
        ember.conv_transpose2d(T(x), T(wt), **kt).numpy(),
        torch.conv_transpose2d(torch.tensor(x), torch.tensor(wt), **kt).numpy(),
        rtol=1e-4,
        atol=1e-4,
    )
    y = torch.conv2d(torch.tensor(x), torch.tensor(w), **kw)
    go = randn(*y.shape, dtype=np.float32)
    args = ([6], [2, 2], [1, 1], [1, 2], False, [0, 0], 2, [True, True, True])
    ours = ember.convolution_backward(T(go), T(x), T(w), *args)
    theirs = torch.ops.aten.convolution_backward(
        torch.tensor(go), torch.tensor(x), torch.tensor(w), *args
    )
    for a, b_ in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b_.numpy(), rtol=1e-3, atol=1e-3)
    v, i = ember.max_pool2d_with_indices(T(x), 3, 2, 1, 1, True)
    tv, ti = torch._C._nn.max_pool2d_with_indices(torch.tensor(x), 3, 2, 1, 1, True)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_allclose(
        ember.avg_pool2d(T(x), 3, 2, 1, True, False).numpy(),
        torch._C._nn.avg_pool2d(torch.tensor(x), 3, 2, 1, True, False).numpy(),
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        ember.adaptive_avg_pool2d(T(x), (4, 3)).numpy(),
        torch._C._nn.adaptive_avg_pool2d(torch.tensor(x), (4, 3)).numpy(),
        rtol=1e-6,
    )
    lp = randn(7, 5, dtype=np.float32)
    t = np.array([0, 4, 2, -100, 1, 3, 3])
    for red in (0, 1, 2):
        np.testing.assert_allclose(
            ember.nll_loss(T(lp), T(t), None, red, -100).numpy(),
            torch._C._nn.nll_loss(torch.tensor(lp), torch.tensor(t), None, red, -100).numpy(),
            rtol=1e-6,
            atol=1e-6,  # (a float32 sum of terms of size 1 can cancel to 0.008: its rounding
        )  # depends on the order of the adds, which the kernel copy in use decides)
    outs = ember.native_batch_norm(T(x), None, None, None, None, True, 0.1, 1e-5)
    touts = torch.native_batch_norm(torch.tensor(x), None, None, None, None, True, 0.1, 1e-5)
    for a, b_ in zip(outs, touts):
        np.testing.assert_allclose(a.numpy(), b_.numpy(), rtol=1e-4, atol=1e-5)
    outs = ember.native_layer_norm(T(x), [9, 8], None, None, 1e-5)
    touts = torch.native_layer_norm(torch.tensor(x), [9, 8], None, None, 1e-5)
    for a, b_ in zip(outs, touts):
        np.testing.assert_allclose(a.numpy(), b_.numpy(), rtol=1e-4, atol=1e-5)


# Integer convolutions (torch's CPU kernels): int8-int64 and uint8 plain, int64 in every form;
# the products wrap in the dtype, against the NumPy references computed in int64 and wrapped.
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_integer_convolution(dtype, k):
    rng = np.random.default_rng(k * 10 + len(dtype))
    lo, hi = (0, 250) if dtype == "uint8" else (-120, 120)
    x = rng.integers(lo, hi, (2, 4) + (6,) * k).astype(dtype)
    w = rng.integers(lo, hi, (6, 2) + (3,) * k).astype(dtype)
    b = rng.integers(lo, hi, (6,)).astype(dtype)
    conv = getattr(ember, f"conv{k}d")
    for stride, padding in ((1, 0), (2, 1)):
        got = conv(T(x), T(w), T(b), stride=stride, padding=padding, groups=2)
        want = conv_ref(x.astype(np.int64), w.astype(np.int64), b.astype(np.int64), stride,
                        padding, groups=2).astype(dtype)
        assert got.dtype == getattr(ember, dtype)
        np.testing.assert_array_equal(got.numpy(), want)
    transpose = getattr(ember, f"conv_transpose{k}d")
    if dtype == "int64":  # dilated and transposed too
        got = conv(T(x), T(w), T(b), padding=1, dilation=2, groups=2)
        want = conv_ref(x, w, b, 1, 1, dilation=2, groups=2)
        np.testing.assert_array_equal(got.numpy(), want)
        wt = w[:4]  # (in 4, out 2 per group of 2)
        got = transpose(T(x), T(wt), stride=2, padding=1, output_padding=1, groups=2, dilation=2)
        want = conv_transpose_ref(x, wt, None, 2, 1, 1, groups=2, dilation=2)
        np.testing.assert_array_equal(got.numpy(), want)
    else:  # torch's refusals, by the name of the kernel each form goes to
        with pytest.raises(NotImplementedError, match="slow_conv_dilated<>"):
            conv(T(x), T(w), dilation=2, groups=2)
        with pytest.raises(NotImplementedError, match="slow_conv_transpose[23]d_out_cpu"):
            transpose(T(x), T(w[:4]), groups=2)


@pytest.mark.parametrize("dtype", ["bool", "uint16", "uint64"])
def test_convolution_refuses_bool_and_wide_unsigned(dtype):
    x, w = ember.ones(1, 2, 5, dtype=getattr(ember, dtype)), ember.ones(2, 2, 3, dtype=getattr(ember, dtype))
    with pytest.raises(NotImplementedError, match="\"slow_conv2d_cpu\" not implemented"):
        ember.conv1d(x, w)
    with pytest.raises(NotImplementedError, match="\"compute_columns3d\" not implemented"):
        ember.conv3d(x.reshape(1, 2, 5, 1, 1), w.reshape(2, 2, 3, 1, 1))
