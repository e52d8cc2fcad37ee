"""The fused LSTM and GRU cells (ops/rnn_kernels.cpp) against NumPy: the forward against the
cell equations, the backward kernels against central finite differences of those equations."""

import numpy as np
import pytest

import ember

C = ember._C


def _sig(x):
    return 1 / (1 + np.exp(-x))


def lstm_ref(ig, hg, cx, ib=None, hb=None):
    g = ig + hg + (0 if ib is None else ib + hb)
    i, f, c, o = np.split(g, 4, axis=1)
    i, f, c, o = _sig(i), _sig(f), np.tanh(c), _sig(o)
    cy = f * cx + i * c
    return o * np.tanh(cy), cy, np.concatenate([i, f, c, o], 1)


def gru_ref(ig, hg, hx, ib=None, hb=None):
    ir, iz, i_n = np.split(ig + (0 if ib is None else ib), 3, axis=1)
    hr, hz, hn = np.split(hg + (0 if hb is None else hb), 3, axis=1)
    r, z = _sig(ir + hr), _sig(iz + hz)
    n = np.tanh(i_n + r * hn)
    return (1 - z) * n + z * hx


def _num_grad(f, x, eps=1e-6):
    """d(sum(f(x) * weights)) / dx by central differences; f returns the weighted scalar."""
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        k = it.multi_index
        old = x[k]
        x[k] = old + eps
        up = f(x)
        x[k] = old - eps
        down = f(x)
        x[k] = old
        g[k] = (up - down) / (2 * eps)
    return g


def _t(a):
    return ember.from_numpy(np.ascontiguousarray(a))


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstm_cell_forward(bias, dtype):
    rng = np.random.default_rng(0)
    n, h = 5, 7
    a = [rng.standard_normal(s).astype(dtype) for s in [(n, 4 * h), (n, 4 * h), (n, h)]]
    b = [rng.standard_normal(4 * h).astype(dtype) for _ in range(2)] if bias else [None, None]
    hy, cy, ws = C._thnn_fused_lstm_cell(*map(_t, a), *(None if x is None else _t(x) for x in b))
    rhy, rcy, rws = lstm_ref(*a, *b)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(hy.numpy(), rhy, rtol=tol, atol=tol)
    np.testing.assert_allclose(cy.numpy(), rcy, rtol=tol, atol=tol)
    np.testing.assert_allclose(ws.numpy(), rws, rtol=tol, atol=tol)


def test_lstm_cell_backward_kernel_against_finite_differences():
    rng = np.random.default_rng(1)
    n, h = 3, 4
    ig, hg = rng.standard_normal((n, 4 * h)), rng.standard_normal((n, 4 * h))
    cx = rng.standard_normal((n, h))
    w_h, w_c = rng.standard_normal((n, h)), rng.standard_normal((n, h))
    _, cy, ws = C._thnn_fused_lstm_cell(_t(ig), _t(hg), _t(cx))
    gates, gcx, gb = C._thnn_fused_lstm_cell_backward_impl(_t(w_h), _t(w_c), _t(cx), cy, ws, True)

    def loss_gates(x):
        hy_, cy_, _ = lstm_ref(x, hg, cx)
        return (hy_ * w_h).sum() + (cy_ * w_c).sum()

    def loss_cx(x):
        hy_, cy_, _ = lstm_ref(ig, hg, x)
        return (hy_ * w_h).sum() + (cy_ * w_c).sum()

    np.testing.assert_allclose(gates.numpy(), _num_grad(loss_gates, ig.copy()), atol=1e-7)
    np.testing.assert_allclose(gcx.numpy(), _num_grad(loss_cx, cx.copy()), atol=1e-7)
    np.testing.assert_allclose(gb.numpy(), gates.numpy().sum(0), atol=1e-12)
    # a missing gradient (None) counts as zero
    g2, _, none = C._thnn_fused_lstm_cell_backward_impl(None, _t(w_c), _t(cx), cy, ws, False)
    g3, _, _ = C._thnn_fused_lstm_cell_backward_impl(_t(np.zeros((n, h))), _t(w_c), _t(cx), cy,
                                                      ws, False)
    assert none is None
    np.testing.assert_array_equal(g2.numpy(), g3.numpy())


@pytest.mark.parametrize("bias", [True, False])
def test_gru_cell_forward_and_backward(bias):
    rng = np.random.default_rng(2)
    n, h = 4, 3
    ig, hg, hx = (rng.standard_normal(s) for s in [(n, 3 * h), (n, 3 * h), (n, h)])
    ib, hb = (rng.standard_normal(3 * h), rng.standard_normal(3 * h)) if bias else (None, None)
    hy, ws = C._thnn_fused_gru_cell(_t(ig), _t(hg), _t(hx), *(None if b is None else _t(b)
                                                              for b in (ib, hb)))
    np.testing.assert_allclose(hy.numpy(), gru_ref(ig, hg, hx, ib, hb), atol=1e-12)
    w = rng.standard_normal((n, h))
    gi, gh, ghx, gib, ghb = C._thnn_fused_gru_cell_backward(_t(w), ws, bias)
    for got, arg in [(gi, 0), (gh, 1), (ghx, 2)]:
        args = [ig, hg, hx]

        def loss(x, arg=arg, args=args):
            a = list(args)
            a[arg] = x
            return (gru_ref(*a, ib, hb) * w).sum()

        np.testing.assert_allclose(got.numpy(), _num_grad(loss, args[arg].copy()), atol=1e-7)
    if bias:
        np.testing.assert_allclose(gib.numpy(), gi.numpy().sum(0), atol=1e-12)
        np.testing.assert_allclose(ghb.numpy(), gh.numpy().sum(0), atol=1e-12)
    else:
        assert gib is None and ghb is None


def test_cells_take_non_contiguous_and_half_inputs():
    rng = np.random.default_rng(3)
    n, h = 6, 5
    big = rng.standard_normal((4 * h, n)).astype(np.float32)
    ig = _t(big).t()  # a transposed view
    hg, cx = _t(rng.standard_normal((n, 4 * h)).astype(np.float32)), _t(
        rng.standard_normal((n, h)).astype(np.float32))
    hy, cy, _ = C._thnn_fused_lstm_cell(ig, hg, cx)
    rhy, rcy, _ = lstm_ref(big.T, hg.numpy(), cx.numpy())
    np.testing.assert_allclose(hy.numpy(), rhy, rtol=1e-5, atol=1e-6)
    hh, ch, _ = C._thnn_fused_lstm_cell(ig.to(ember.bfloat16), hg.to(ember.bfloat16),
                                        cx.to(ember.bfloat16))
    assert hh.dtype == ember.bfloat16
    np.testing.assert_allclose(hh.float().numpy(), rhy, atol=3e-2)


def test_cell_errors():
    f = ember.zeros(2, 8)
    with pytest.raises(RuntimeError, match=r"_thnn_fused_lstm_cell: expected input_gates and "
                                           r"hidden_gates of size \[2, 8\]"):
        C._thnn_fused_lstm_cell(ember.zeros(2, 9), f, ember.zeros(2, 2))
    with pytest.raises(RuntimeError, match="one dtype"):
        C._thnn_fused_lstm_cell(f, f.double(), ember.zeros(2, 2))
    with pytest.raises(RuntimeError, match="both biases or neither"):
        C._thnn_fused_lstm_cell(f, f, ember.zeros(2, 2), ember.zeros(8))
    with pytest.raises(RuntimeError, match="biases of size"):
        C._thnn_fused_lstm_cell(f, f, ember.zeros(2, 2), ember.zeros(7), ember.zeros(7))
    with pytest.raises(NotImplementedError, match="Long"):
        i = ember.zeros(2, 8, dtype=ember.int64)
        C._thnn_fused_lstm_cell(i, i, ember.zeros(2, 2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="2-D"):
        C._thnn_fused_gru_cell(ember.zeros(6), ember.zeros(6), ember.zeros(2))
    with pytest.raises(RuntimeError, match=r"workspace of size \[2, 10\]"):
        C._thnn_fused_gru_cell_backward(ember.zeros(2, 2), ember.zeros(2, 9), False)
    with pytest.raises(RuntimeError, match=r"workspace of size \[2, 8\]"):
        C._thnn_fused_lstm_cell_backward_impl(None, None, ember.zeros(2, 2), ember.zeros(2, 2),
                                              ember.zeros(2, 7), False)
