"""The whole-layer LSTM/GRU kernel (ops/rnn_layer.cpp: _rnn_layer, _rnn_layer_backward) against a
NumPy loop over the cell equations, and its backward against central finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import ember

C = ember._C
RNG = np.random.default_rng(7)


def _sig(x):
    return 1 / (1 + np.exp(-x))


def layer_ref(mode, x, w_ih, w_hh, b_ih, b_hh, hx, cx, reverse):
    """(output, hy, cy) by the equations of torch.nn.LSTM / torch.nn.GRU, step by step."""
    T = x.shape[0]
    b_ih = 0 if b_ih is None else b_ih
    b_hh = 0 if b_hh is None else b_hh
    h, c = hx, cx
    out = np.zeros((T,) + hx.shape)
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        gi, gh = x[t] @ w_ih.T + b_ih, h @ w_hh.T + b_hh
        if mode == "LSTM":
            i, f, g, o = np.split(gi + gh, 4, axis=1)
            c = _sig(f) * c + _sig(i) * np.tanh(g)
            h = _sig(o) * np.tanh(c)
        else:
            ir, iz, i_n = np.split(gi, 3, axis=1)
            hr, hz, hn = np.split(gh, 3, axis=1)
            r, z = _sig(ir + hr), _sig(iz + hz)
            n = np.tanh(i_n + r * hn)
            h = (1 - z) * n + z * h
        out[t] = h
    return out, h, c


def _args(mode, T=4, N=3, F=5, H=6, bias=True):
    G = 4 if mode == "LSTM" else 3
    a = [RNG.standard_normal(s) * 0.5 for s in ((T, N, F), (G * H, F), (G * H, H))]
    b = [RNG.standard_normal(G * H) * 0.5 for _ in range(2)] if bias else [None, None]
    hx = RNG.standard_normal((N, H))
    cx = RNG.standard_normal((N, H)) if mode == "LSTM" else None
    return a + b + [hx, cx]


def _t(a):
    return None if a is None else ember.tensor(a)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_forward_matches_the_cell_equations(mode, reverse, bias):
    args = _args(mode, bias=bias)
    out, hy, cy, ws = C._rnn_layer(*map(_t, args), mode, reverse)
    ref_out, ref_h, ref_c = layer_ref(mode, *args, reverse)
    np.testing.assert_allclose(out.numpy(), ref_out, atol=1e-12)
    np.testing.assert_allclose(hy.numpy(), ref_h, atol=1e-12)
    if mode == "LSTM":
        np.testing.assert_allclose(cy.numpy(), ref_c, atol=1e-12)
    else:
        assert cy.shape == (0,)
    assert ws.shape == (4, 3, (5 if mode == "LSTM" else 4) * 6)


def _num_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        old = x[k]
        x[k] = old + eps
        up = f()
        x[k] = old - eps
        down = f()
        x[k] = old
        g[k] = (up - down) / (2 * eps)
    return g


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("reverse", [False, True])
def test_backward_matches_finite_differences(mode, reverse):
    args = _args(mode, T=3, N=2, F=3, H=2)
    go, gh = RNG.standard_normal((3, 2, 2)), RNG.standard_normal((2, 2))
    gc = RNG.standard_normal((2, 2)) if mode == "LSTM" else None

    def loss():
        out, h, c = layer_ref(mode, *args, reverse)
        return float(np.vdot(out, go) + np.vdot(h, gh) + (np.vdot(c, gc) if gc is not None else 0))

    out, _, _, ws = C._rnn_layer(*map(_t, args), mode, reverse)
    x, w_ih, w_hh, b_ih, b_hh, hx, cx = args
    grads = C._rnn_layer_backward(_t(go), _t(gh), _t(gc), _t(x), _t(w_ih), _t(w_hh), _t(hx), _t(cx),
                                  out, ws, mode, reverse, True)
    for got, a in zip(grads, args):
        if a is None:
            assert got is None
            continue
        np.testing.assert_allclose(got.numpy(), _num_grad(loss, a), atol=1e-7)


def test_backward_without_output_gradients_is_the_state_gradients_alone():
    args = _args("GRU")
    out, _, _, ws = C._rnn_layer(*map(_t, args), "GRU", False)
    x, w_ih, w_hh, b_ih, b_hh, hx, cx = args
    zero = np.zeros((4, 3, 6))
    a = C._rnn_layer_backward(None, _t(np.ones((3, 6))), None, _t(x), _t(w_ih), _t(w_hh), _t(hx),
                              None, out, ws, "GRU", False, False)
    b = C._rnn_layer_backward(_t(zero), _t(np.ones((3, 6))), None, _t(x), _t(w_ih), _t(w_hh),
                              _t(hx), None, out, ws, "GRU", False, False)
    for u, v in zip(a, b):
        if u is None:
            assert v is None
        else:
            np.testing.assert_array_equal(u.numpy(), v.numpy())
    assert a[3] is None and a[4] is None and a[6] is None


def test_empty_sequence_returns_the_initial_state():
    x, w_ih, w_hh, b_ih, b_hh, hx, cx = _args("LSTM", T=0)
    out, hy, cy, _ = C._rnn_layer(*map(_t, (x, w_ih, w_hh, b_ih, b_hh, hx, cx)), "LSTM", False)
    assert out.shape == (0, 3, 6)
    np.testing.assert_array_equal(hy.numpy(), hx)
    np.testing.assert_array_equal(cy.numpy(), cx)


def test_errors():
    x, w_ih, w_hh, b_ih, b_hh, hx, cx = map(_t, _args("LSTM"))
    with pytest.raises(ValueError, match="_rnn_layer: unknown mode 'RNN'"):
        C._rnn_layer(x, w_ih, w_hh, b_ih, b_hh, hx, cx, "RNN", False)
    with pytest.raises(RuntimeError, match=r"_rnn_layer: expected weight_hh of size \[24, 6\]"):
        C._rnn_layer(x, w_ih, w_hh[:20], b_ih, b_hh, hx, cx, "LSTM", False)
    with pytest.raises(RuntimeError, match=r"expected hx of size \[3, 6\], but got \[2, 6\]"):
        C._rnn_layer(x, w_ih, w_hh, b_ih, b_hh, hx[:2], cx, "LSTM", False)
    with pytest.raises(RuntimeError, match="LSTM needs cx"):
        C._rnn_layer(x, w_ih, w_hh, b_ih, b_hh, hx, None, "LSTM", False)
    with pytest.raises(RuntimeError, match="both biases or neither"):
        C._rnn_layer(x, w_ih, w_hh, b_ih, None, hx, cx, "LSTM", False)
    with pytest.raises(RuntimeError, match="expected all tensors of dtype Double, but got Float"):
        C._rnn_layer(x, w_ih.float(), w_hh, b_ih, b_hh, hx, cx, "LSTM", False)
    with pytest.raises(NotImplementedError, match="\"_rnn_layer\" not implemented for 'Half'"):
        C._rnn_layer(*(t.half() for t in (x, w_ih, w_hh, b_ih, b_hh, hx, cx)), "LSTM", False)
    with pytest.raises(RuntimeError, match=r"expected input \(T, N, I\)"):
        C._rnn_layer(x[0], w_ih, w_hh, b_ih, b_hh, hx, cx, "LSTM", False)
    out, _, _, ws = C._rnn_layer(x, w_ih, w_hh, b_ih, b_hh, hx, cx, "LSTM", False)
    with pytest.raises(RuntimeError, match=r"expected workspace of size \[4, 3, 30\]"):
        C._rnn_layer_backward(None, None, None, x, w_ih, w_hh, hx, cx, out, ws[:, :, :29], "LSTM",
                              False, True)


def test_backward_computes_only_the_gradients_asked_for():
    args = _args("LSTM")
    out, _, _, ws = C._rnn_layer(*map(_t, args), "LSTM", False)
    x, w_ih, w_hh, b_ih, b_hh, hx, cx = map(_t, args)
    go = _t(RNG.standard_normal((4, 3, 6)))
    full = C._rnn_layer_backward(go, None, None, x, w_ih, w_hh, hx, cx, out, ws, "LSTM", False, True)
    no_input = C._rnn_layer_backward(go, None, None, x, w_ih, w_hh, hx, cx, out, ws, "LSTM", False,
                                     True, need_input=False)
    states_only = C._rnn_layer_backward(go, None, None, x, w_ih, w_hh, hx, cx, out, ws, "LSTM",
                                        False, True, need_input=False, need_weights=False)
    assert no_input[0] is None and all(t is None for t in states_only[:5])
    for i in range(1, 7):
        np.testing.assert_array_equal(no_input[i].numpy(), full[i].numpy())
    for i in (5, 6):
        np.testing.assert_array_equal(states_only[i].numpy(), full[i].numpy())


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("N,H", [(1, 16), (7, 20), (13, 64), (130, 8)])
def test_float32_recurrent_product(mode, N, H):
    """float32 layers run the recurrent product through the packed kernel where the CPU has it
    (ops/cpu/packed_gemm.cpp: tiles of 6 rows, 64- or 16-column panels; a batch above 128 goes to
    OpenBLAS): forward against the cell equations, backward against the float64 kernel (itself
    checked by finite differences above), for batches and widths that leave partial tiles and
    a partial last panel."""
    args = _args(mode, T=5, N=N, F=9, H=H)
    f32 = [None if a is None else ember.tensor(a.astype(np.float32)) for a in args]
    out, hy, cy, ws = C._rnn_layer(*f32, mode, False)
    ref_out, ref_h, _ = layer_ref(mode, *args, False)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(hy.numpy(), ref_h, rtol=1e-4, atol=2e-5)
    go = RNG.standard_normal((5, N, H))
    x, w_ih, w_hh, b_ih, b_hh, hx, cx = args
    out64, _, _, ws64 = C._rnn_layer(*map(_t, args), mode, False)
    want = C._rnn_layer_backward(_t(go), None, None, _t(x), _t(w_ih), _t(w_hh), _t(hx), _t(cx),
                                 out64, ws64, mode, False, True)
    got = C._rnn_layer_backward(ember.tensor(go.astype(np.float32)), None, None, *f32[:3],
                                f32[5], f32[6], out, ws, mode, False, True)
    for g, w in zip(got, want):
        if w is None:
            assert g is None
            continue
        scale = max(1.0, float(np.abs(w.numpy()).max()))
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-4 * scale)
