"""gradcheck / gradgradcheck (float64) of the gradient entries of the core's fused nn kernels
(autograd/_formulas_nn.py)."""

import math

import pytest

import ember
from ember._shape import _one_node
from ember.autograd import gradcheck, gradgradcheck

D = ember.float64


def _r(*shape):
    return ember.randn(*shape, dtype=D, requires_grad=True)


def _both(f, args):
    assert gradcheck(f, args)
    assert gradgradcheck(f, args)


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(dilation=2, padding=2),
                                dict(padding="same")])
def test_conv2d(kw):
    ember.manual_seed(0)
    x, w, b = _r(2, 3, 6, 5), _r(4, 3, 3, 3), _r(4)
    _both(lambda x, w, b: ember.conv2d(x, w, b, **kw), (x, w, b))


def test_conv1d_groups_no_bias():
    ember.manual_seed(1)
    x, w = _r(2, 4, 7), _r(6, 2, 3)
    _both(lambda x, w: ember.conv1d(x, w, None, 1, 1, 1, 2), (x, w))


def test_conv3d():
    ember.manual_seed(2)
    x, w, b = _r(1, 2, 4, 4, 4), _r(3, 2, 2, 2, 2), _r(3)
    assert gradcheck(lambda x, w, b: ember.conv3d(x, w, b, stride=2), (x, w, b))


@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_depthwise(stride):
    """One channel per group: the direct depthwise kernels (forward and both gradients)."""
    ember.manual_seed(5)
    x, w, b = _r(2, 3, 5, 6), _r(3, 1, 3, 3), _r(3)
    _both(lambda x, w, b: ember.conv2d(x, w, b, stride=stride, padding=1, groups=3), (x, w, b))


def test_conv_transpose2d_depthwise():
    ember.manual_seed(6)
    x, w = _r(2, 2, 3, 3), _r(2, 1, 3, 3)
    _both(lambda x, w: ember.conv_transpose2d(x, w, stride=2, padding=1, groups=2), (x, w))


def test_conv2d_small_output_folds_the_batch():
    """Outputs of a few positions with a batch: one GEMM over the folded batch."""
    ember.manual_seed(7)
    x, w, b = _r(3, 4, 3, 3), _r(5, 4, 2, 2), _r(5)
    _both(lambda x, w, b: ember.conv2d(x, w, b, stride=1), (x, w, b))


@pytest.mark.parametrize("k", [1, 2])
def test_conv_transpose(k):
    ember.manual_seed(3)
    x = _r(*((2, 3) + (4,) * k))
    w = _r(*((3, 2) + (3,) * k))
    b = _r(2)
    fn = getattr(ember, f"conv_transpose{k}d")
    _both(lambda x, w, b: fn(x, w, b, stride=2, padding=1, output_padding=1), (x, w, b))


@pytest.mark.parametrize("name,xs,ws,kw", [
    ("conv1d", (2, 4, 6), (6, 2, 3), dict(stride=2, padding=1, groups=2)),
    ("conv2d", (1, 2, 4, 5), (3, 2, 2, 3), dict(padding="same")),
    ("conv_transpose1d", (1, 3, 4), (3, 2, 3), dict(stride=2, output_padding=1)),
    ("conv_transpose2d", (1, 2, 3, 3), (2, 2, 2, 2), dict(padding=1, dilation=2)),
])
def test_conv_complex(name, xs, ws, kw):
    """Complex convolutions are real ones of the parts: autograd records those."""
    ember.manual_seed(8)
    cd = ember.complex128
    x, w = ember.randn(*xs, dtype=cd, requires_grad=True), ember.randn(*ws, dtype=cd, requires_grad=True)
    b = ember.randn(ws[1] if "transpose" in name else ws[0], dtype=cd, requires_grad=True)
    _both(lambda x, w, b: getattr(ember, name)(x, w, b, **kw), (x, w, b))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_max_pool(k):
    ember.manual_seed(4)
    x = _r(*((2, 2) + (5,) * k))
    fn = getattr(ember, f"max_pool{k}d")
    _both(lambda x: fn(x, 2, 1, 1), (x,))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_avg_pool(k):
    ember.manual_seed(5)
    x = _r(*((2, 2) + (5,) * k))
    fn = getattr(ember, f"avg_pool{k}d")
    _both(lambda x: fn(x, 3, 2, 1), (x,))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_adaptive_pools(k):
    ember.manual_seed(6)
    x = _r(*((2, 3) + ((7,) * k if k < 3 else (4, 5, 4))))
    avg = getattr(ember, f"adaptive_avg_pool{k}d")
    mx = getattr(ember, f"adaptive_max_pool{k}d")
    _both(lambda x: avg(x, (3,) * k), (x,))
    _both(lambda x: mx(x, (3,) * k)[0], (x,))


def test_max_pool_unbatched():
    ember.manual_seed(7)
    x = _r(3, 6, 6)
    _both(lambda x: ember.max_pool2d(x, 2), (x,))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_nll_loss(reduction):
    ember.manual_seed(8)
    x = _r(5, 4)
    t = ember.tensor([0, 3, 1, -100, 2])
    w = ember.rand(4, dtype=D) + 0.5
    _both(lambda x: ember.nll_loss(x, t, w, reduction, -100), (x,))
    x2 = _r(2, 3, 2, 2)
    t2 = ember.randint(0, 3, (2, 2, 2))
    _both(lambda x: ember.nll_loss(x, t2, None, reduction), (x2,))


def test_embedding():
    ember.manual_seed(9)
    w = _r(7, 3)
    idx = ember.tensor([[0, 2, 2], [6, 1, 0]])
    _both(lambda w: ember.embedding(w, idx), (w,))
    # padding_idx: its row is read by the forward but gets no gradient (as in torch)
    ember.embedding(w, idx, 2).sum().backward()
    assert w.grad[2].abs().sum().item() == 0
    assert w.grad[0].tolist() == [2.0, 2.0, 2.0]


def test_batch_norm():
    ember.manual_seed(10)
    x, w, b = _r(4, 3, 2, 2), _r(3), _r(3)
    rm, rv = ember.randn(3, dtype=D), ember.rand(3, dtype=D) + 0.5
    _both(lambda x, w, b: ember.native_batch_norm(x, w, b, rm.clone(), rv.clone(), True,
                                                  0.1, 1e-5)[0], (x, w, b))
    _both(lambda x: ember.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)[0],
          (x,))


def test_batch_norm_running_stats_updated_between_forward_and_backward():
    # gradient accumulation: the running statistics change in place in the second forward
    x = _r(4, 3)
    rm, rv = ember.zeros(3, dtype=D), ember.ones(3, dtype=D)
    y1 = ember.native_batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5)[0]
    y2 = ember.native_batch_norm(x * 2, None, None, rm, rv, True, 0.1, 1e-5)[0]
    ((y1 * y1).sum() + (y2 * y2).sum()).backward()
    assert x.grad is not None


def test_batch_norm_eval_backward_is_refused():
    x = _r(4, 3)
    y = ember.native_batch_norm(x, None, None, ember.zeros(3, dtype=D), ember.ones(3, dtype=D),
                                False, 0.1, 1e-5)[0]
    with pytest.raises(RuntimeError, match="eval mode"):
        y.sum().backward()


def test_layer_norm():
    ember.manual_seed(11)
    x, w, b = _r(2, 3, 4), _r(3, 4), _r(3, 4)
    _both(lambda x, w, b: ember.native_layer_norm(x, [3, 4], w, b, 1e-5)[0], (x, w, b))
    _both(lambda x: ember.native_layer_norm(x, [4], None, None, 1e-5)[0], (x,))


@pytest.mark.parametrize("bias", [True, False])
def test_fused_lstm_cell(bias):
    ember.manual_seed(12)
    n, h = 3, 4
    args = (_r(n, 4 * h), _r(n, 4 * h), _r(n, h)) + ((_r(4 * h), _r(4 * h)) if bias else ())
    # hy and cy (the workspace output carries no gradient of its own)
    _both(lambda *a: ember._C._thnn_fused_lstm_cell(*a)[:2], args)
    _both(lambda *a: ember._C._thnn_fused_lstm_cell(*a)[1], args)  # cy alone: hy's grad is zero


@pytest.mark.parametrize("bias", [True, False])
def test_fused_gru_cell(bias):
    ember.manual_seed(13)
    n, h = 3, 4
    args = (_r(n, 3 * h), _r(n, 3 * h), _r(n, h)) + ((_r(3 * h), _r(3 * h)) if bias else ())
    _both(lambda *a: ember._C._thnn_fused_gru_cell(*a)[0], args)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_kernel(causal):
    # output and logsumexp both: the logsumexp carries no gradient of its own
    ember.manual_seed(18)
    q, k, v = _r(2, 3, 2), _r(2, 4, 2), _r(2, 4, 3)
    _both(lambda q, k, v: ember._C._scaled_dot_product_flash_attention_for_cpu(
        q, k, v, 0.0, causal, scale=0.9)[0], (q, k, v))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_kernel(approximate):
    # the core's kernels (ember._C.gelu, gelu_backward in plain backward); the formula's core-op
    # form under gradgradcheck
    ember.manual_seed(16)
    x = (_r(4, 5) * 3).detach().requires_grad_()
    y = ember.nn.functional.gelu(x, approximate=approximate)
    assert type(y.grad_fn).__name__ == "GeluBackward0"
    _both(lambda x: ember._C.gelu(x, approximate=approximate), (x,))


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_rnn_layer(mode, reverse, bias):
    ember.manual_seed(17)
    G, T, N, F, H = (4 if mode == "LSTM" else 3), 3, 2, 3, 2
    b = (_r(G * H), _r(G * H)) if bias else (None, None)
    cx = _r(N, H) if mode == "LSTM" else None
    args = (_r(T, N, F), _r(G * H, F), _r(G * H, H)) + b + (_r(N, H), cx)
    tensors = [a for a in args if a is not None]

    def f(*ts):
        it = iter(ts)
        full = [next(it) if a is not None else None for a in args]
        out, hy, cy, _ = ember._C._rnn_layer(*full, mode, reverse)
        return (out, hy, cy) if mode == "LSTM" else (out, hy)

    assert type(f(*tensors)[0].grad_fn).__name__ == "RnnLayerBackward0"
    _both(f, tensors)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype,tol", [(ember.float64, 1e-12), (ember.float32, 1e-6)])
def test_rnn_layer_matches_the_step_by_step_path(mode, dtype, tol):
    """One node per layer against the fused cells recorded step by step (the path nn.LSTM/GRU
    take elsewhere): values and every gradient."""
    from ember.autograd._formulas_nn import _rnn_layer_steps

    ember.manual_seed(18)
    G, T, N, F, H = (4 if mode == "LSTM" else 3), 7, 5, 6, 8
    r = lambda *s: (ember.randn(*s, dtype=dtype) * 0.5).requires_grad_()  # noqa: E731
    args = [r(T, N, F), r(G * H, F), r(G * H, H), r(G * H), r(G * H), r(N, H),
            r(N, H) if mode == "LSTM" else None]
    lstm = mode == "LSTM"
    for reverse in (False, True):
        fused = ember._C._rnn_layer(*args, mode, reverse)[:3]
        steps = _rnn_layer_steps(*args, lstm, reverse)
        weights = [ember.randn(o.shape, dtype=dtype) for o in steps if o is not None]
        got = ember.autograd.grad([o for o in fused[:len(weights)]], [a for a in args if a is not None],
                                  weights)
        want = ember.autograd.grad([o for o in steps if o is not None],
                                   [a for a in args if a is not None], weights)
        for a, b in zip(fused, steps):
            if b is not None:
                assert float((a - b).abs().max()) < tol
        for a, b in zip(got, want):
            assert float((a - b).abs().max()) < tol * 10


def test_fused_cell_backward_kernels_refuse_graphs():
    x = _r(2, 3)
    with pytest.raises(RuntimeError, match="not differentiable"):
        ember._C._thnn_fused_gru_cell_backward(x, ember.zeros(2, 15, dtype=D), False)


def _gelu_values(x, approximate):  # the definition (ember.nn.functional composes the same)
    if approximate == "none":
        return x * 0.5 * (1.0 + (x * (1.0 / math.sqrt(2.0))).erf())
    return x * 0.5 * (1.0 + ((x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)).tanh())


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_one_node(approximate):
    ember.manual_seed(14)
    x = _r(3, 5) * 3

    def f(x):
        return _one_node("gelu", _gelu_values, True, x, approximate)

    assert type(f(x).grad_fn).__name__ == "GeluBackward0"
    _both(f, (x.detach().requires_grad_(),))


def test_silu_one_node():
    ember.manual_seed(15)
    x = (_r(4, 3) * 3).detach().requires_grad_()

    def f(x):
        return _one_node("silu", lambda x: x * x.sigmoid(), True, x)

    assert type(f(x).grad_fn).__name__ == "SiluBackward0"
    _both(f, (x,))


# the definitions of the other one-node activations (ember.nn.functional composes the same)
def _elu_values(x, alpha, scale, input_scale):
    return ember.where(x > 0, x * scale, (x.clamp(max=0) * input_scale).expm1() * alpha * scale)


def _softplus_values(x, beta, threshold):
    return ember.where(x * beta > threshold, x, (1 + (x * beta).exp()).log() / beta)


ONE_NODE = [
    ("elu", _elu_values, (1.0, 1.0, 1.0)),
    ("elu", _elu_values, (1.6732632423543772, 1.0507009873554805, 1.0)),  # selu
    ("celu", _elu_values, (0.5, 1.0, 2.0)),  # celu(alpha=0.5)
    ("softplus", _softplus_values, (1.0, 20.0)),
    ("softplus", _softplus_values, (2.0, 1.0)),
    ("mish", lambda x: x * _softplus_values(x, 1.0, 20.0).tanh(), ()),
    ("hardsigmoid", lambda x: (x / 6.0 + 0.5).clamp(0.0, 1.0), ()),
    ("hardswish", lambda x: x * (x + 3.0).clamp(0.0, 6.0) / 6.0, ()),
]


@pytest.mark.parametrize("name,values,args", ONE_NODE,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(ONE_NODE)])
def test_one_node_activation(name, values, args):
    ember.manual_seed(16)
    x = (_r(5, 4) * 3).detach().requires_grad_()

    def f(x):
        return _one_node(name, values, True, x, *args)

    _both(f, (x,))


@pytest.mark.parametrize("name,values,args", ONE_NODE + [("gelu", _gelu_values, ("none",)),
                                                        ("silu", lambda x: x * x.sigmoid(), ())],
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(ONE_NODE)] + ["gelu", "silu"])
def test_one_node_activation_forward_ad(name, values, args):
    from ember.autograd import forward_ad as fwad

    ember.manual_seed(17)
    x, t = ember.randn(6, dtype=D) * 3, ember.randn(6, dtype=D)
    with fwad.dual_level():
        y = _one_node(name, values, True, fwad.make_dual(x, t), *args)
        tangent = fwad.unpack_dual(y).tangent
    eps = 1e-6  # central difference of the definition along t
    fd = (values(x + t * eps, *args) - values(x - t * eps, *args)) / (2 * eps)
    assert float((tangent - fd).abs().max()) < 1e-6


def _bce_values(x, target):
    return -(target * x.log().clamp(min=-100) + (1 - target) * (1 - x).log().clamp(min=-100))


def test_binary_cross_entropy_node_gradients_inside_0_1():
    # the node F.binary_cross_entropy records (unreduced): input and target, twice differentiated
    x = ember.tensor([0.05, 0.4, 0.93], dtype=D, requires_grad=True)
    target = ember.tensor([0.0, 0.6, 1.0], dtype=D, requires_grad=True)
    _both(lambda a, b: _one_node("binary_cross_entropy", _bce_values, True, a, b), (x, target))


def test_binary_cross_entropy_node_gradient_at_0_and_1_is_torchs_finite_one():
    # torch's binary_cross_entropy_backward: (x - t) / max(x (1 - x), float32(1e-12))
    eps = float(ember.tensor(1e-12, dtype=ember.float32).item())
    x = ember.tensor([0.0, 1.0, 0.0, 1.0], dtype=D, requires_grad=True)
    t = ember.tensor([1.0, 0.0, 0.0, 1.0], dtype=D)
    _one_node("binary_cross_entropy", _bce_values, True, x, t).sum().backward()
    assert x.grad.tolist() == [-1 / eps, 1 / eps, 0.0, 0.0]


def test_binary_cross_entropy_node_forward_ad():
    from ember.autograd import forward_ad as fwad

    x, tx = ember.tensor([0.2, 0.7], dtype=D), ember.tensor([1.0, -2.0], dtype=D)
    target, tt = ember.tensor([0.0, 0.9], dtype=D), ember.tensor([0.5, 1.0], dtype=D)
    with fwad.dual_level():
        y = _one_node("binary_cross_entropy", _bce_values, True, fwad.make_dual(x, tx),
                      fwad.make_dual(target, tt))
        tangent = fwad.unpack_dual(y).tangent
    eps = 1e-6
    fd = (_bce_values(x + tx * eps, target + tt * eps) -
          _bce_values(x - tx * eps, target - tt * eps)) / (2 * eps)
    assert float((tangent - fd).abs().max()) < 1e-6


@pytest.mark.parametrize("x_shape", [(5,), (3, 5), (2, 3, 5)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_node(x_shape, bias):
    # F.linear records one node (input, weight, bias), twice differentiated, for 1-, 2- and 3-d
    # inputs; its values are x w^T + b
    ember.manual_seed(20)
    x, w = _r(*x_shape), _r(4, 5)
    args = (x, w, _r(4)) if bias else (x, w)

    def f(*a):
        return ember.nn.functional.linear(*a)

    _both(f, args)
    y = f(*args)
    assert type(y.grad_fn).__name__.startswith("Linear")
    want = x.detach().matmul(w.detach().t()) + (args[2].detach() if bias else 0)
    assert float((y.detach() - want).abs().max()) < 1e-12
    # one input requiring grad, the others constants
    _both(lambda w: ember.nn.functional.linear(x.detach(), w), (w,))


def _bce_logits_reference(x, target, pos_weight):
    # the definition: -(pw t log(sigmoid(x)) + (1 - t) log(1 - sigmoid(x)))
    s = x.sigmoid()
    pw = 1.0 if pos_weight is None else pos_weight
    return -(pw * target * s.log() + (1 - target) * (1 - s).log())


@pytest.mark.parametrize("with_pos_weight", [False, True])
def test_binary_cross_entropy_with_logits_node(with_pos_weight):
    # the one node F.binary_cross_entropy_with_logits records (unreduced): input, target and
    # pos_weight (broadcast over the rows), twice differentiated, and equal to the definition
    from ember.nn._functional.loss import _bce_with_logits_values

    ember.manual_seed(19)
    x, target = _r(3, 4) * 3, ember.rand(3, 4, dtype=D).requires_grad_()
    x = x.detach().requires_grad_()
    pw = (ember.rand(4, dtype=D) + 0.5).requires_grad_() if with_pos_weight else None

    def node(*a):
        return _one_node("binary_cross_entropy_with_logits", _bce_with_logits_values, True,
                         *(a if with_pos_weight else a + (None,)))

    args = (x, target, pw) if with_pos_weight else (x, target)
    _both(node, args)
    got = node(*args).detach()
    want = _bce_logits_reference(x.detach(), target.detach(),
                                 None if pw is None else pw.detach())
    assert float((got - want).abs().max()) < 1e-12
    y = node(*args)
    assert type(y.grad_fn).__name__.startswith("BinaryCrossEntropyWithLogits")


def test_binary_cross_entropy_with_logits_promotes_as_torch():
    # a float64 target (or pos_weight) makes a float64 loss, as torch's (1 - t) * x does
    x = ember.tensor([0.5, -1.0], dtype=ember.float32, requires_grad=True)
    t = ember.tensor([1.0, 0.0], dtype=ember.float64)
    F = ember.nn.functional
    loss = F.binary_cross_entropy_with_logits(x, t, reduction="none")
    assert loss.dtype == ember.float64
    assert F.binary_cross_entropy_with_logits(
        x, t.float(), pos_weight=ember.tensor([2.0, 2.0], dtype=ember.float64)).dtype == \
        ember.float64
    loss.sum().backward()
    assert x.grad.dtype == ember.float32
    s = [1 / (1 + math.exp(-0.5)), 1 / (1 + math.exp(1.0))]
    assert x.grad.tolist() == pytest.approx([s[0] - 1, s[1]], rel=1e-6)


def test_binary_cross_entropy_with_logits_is_finite_for_large_logits():
    x = ember.tensor([-800.0, -30.0, 0.0, 30.0, 800.0], dtype=D, requires_grad=True)
    t = ember.tensor([1.0, 0.0, 0.5, 1.0, 0.0], dtype=D)
    loss = ember.nn.functional.binary_cross_entropy_with_logits(x, t, reduction="none")
    assert loss.detach().tolist()[0] == 800.0 and loss.detach().tolist()[4] == 800.0
    assert abs(loss.detach().tolist()[2] - math.log(2)) < 1e-15
    loss.sum().backward()
    s = [0.0, 1 / (1 + math.exp(30.0)), 0.5, 1 / (1 + math.exp(-30.0)), 1.0]
    assert x.grad.tolist() == pytest.approx([a - b for a, b in zip(s, t.tolist())], abs=1e-15)


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("bounds", [(0.0, 6.0), (-0.5, 1.5)])
def test_hardtanh_kernels(inplace, bounds):
    """hardtanh/relu6 (in place too) through the one-pass kernels; their gradient kernel
    (hardtanh_backward) differentiated again for double backward."""
    ember.manual_seed(8)
    x = _r(4, 5)
    lo, hi = bounds
    f = lambda x: ember.nn.functional.hardtanh(x * 4, lo, hi, inplace=inplace)  # noqa: E731
    _both(f, (x,))


def test_hardtanh_gradient_is_zero_at_the_bounds_and_passes_nan():
    """torch's HardtanhBackward0: 0 where the input is at or beyond a bound, the gradient where
    it is strictly inside or NaN (hand-computed)."""
    x = ember.tensor([-1.0, 0.0, 3.0, 6.0, 7.0, float("nan")], requires_grad=True)
    ember.nn.functional.relu6(x).backward(ember.full((6,), 2.0))
    assert x.grad.tolist() == [0.0, 0.0, 2.0, 0.0, 0.0, 2.0]


def test_relu_gradient_through_threshold_backward():
    ember.manual_seed(9)
    x = _r(3, 7)
    _both(lambda x: ember.relu(x), (x,))
    _both(lambda x: (x * 1).relu_(), (x,))
    g = ember.tensor([1.0, 2.0, 3.0], dtype=D)
    y = ember.tensor([-1.0, 0.0, 0.5], dtype=D)
    assert ember._C.threshold_backward(g, y, 0).tolist() == [0.0, 0.0, 3.0]


COVERED = {"convolution", "convolution_backward", "nll_loss", "nll_loss_backward", "embedding",
           "embedding_dense_backward", "native_batch_norm", "native_layer_norm",
           "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "gelu", "silu", "elu", "celu",
           "softplus", "mish", "hardsigmoid", "hardswish", "binary_cross_entropy", "hardtanh",
           "hardtanh_", "hardtanh_backward", "threshold_backward", "_rnn_layer",
           "_scaled_dot_product_flash_attention_for_cpu", "binary_cross_entropy_with_logits",
           "linear"} | {
    f"{p}{k}d{s}" for k in (1, 2, 3)
    for p, s in [("max_pool", "_with_indices"), ("max_pool", "_with_indices_backward"),
                 ("avg_pool", ""), ("avg_pool", "_backward"), ("adaptive_avg_pool", ""),
                 ("adaptive_avg_pool", "_backward"), ("adaptive_max_pool", ""),
                 ("adaptive_max_pool", "_backward")]}


def test_every_nn_formula_is_covered():
    from ember.autograd._engine import _FORMULAS

    mine = {n for n, e in _FORMULAS.items() if e.vjp.__module__ == "ember.autograd._formulas_nn"}
    assert mine == COVERED
