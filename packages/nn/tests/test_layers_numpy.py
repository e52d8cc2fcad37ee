"""Layers and functional forms against NumPy references (no torch needed), and gradients of the
composed layers by gradcheck in float64."""

import math

import numpy as np
import pytest
from _parity import close

import ember
import ember.nn.functional as F
from ember import nn
from ember.autograd import gradcheck

D = ember.float64


def test_linear_bilinear():
    m = nn.Linear(4, 3)
    x = ember.randn(5, 4)
    close(m(x), x.numpy() @ m.weight.detach().numpy().T + m.bias.detach().numpy())
    x3 = ember.randn(2, 5, 4)
    close(m(x3), x3.numpy() @ m.weight.detach().numpy().T + m.bias.detach().numpy())
    b = nn.Bilinear(2, 3, 4)
    x1, x2 = ember.randn(5, 2), ember.randn(5, 3)
    ref = np.einsum("bi,oij,bj->bo", x1.numpy(), b.weight.detach().numpy(), x2.numpy()) + \
        b.bias.detach().numpy()
    close(b(x1, x2), ref)
    with pytest.raises(RuntimeError):
        m(ember.randn(2, 5))


def _conv2d_ref(x, w, b, stride, pad):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, f, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,fchw->nf", patch, w)
    return out + b.reshape(1, -1, 1, 1)


def test_conv2d_numpy():
    m = nn.Conv2d(2, 3, 3, stride=2, padding=1)
    x = ember.randn(2, 2, 7, 6)
    close(m(x), _conv2d_ref(x.numpy(), m.weight.detach().numpy(), m.bias.detach().numpy(), 2,
                            1), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(2, 3, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")


def test_conv_padding_modes_numpy():
    x = ember.randn(1, 1, 4, 5)
    for mode, npmode in [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")]:
        m = nn.Conv2d(1, 1, 3, padding=1, padding_mode=mode, bias=False)
        xp = np.pad(x.numpy(), ((0, 0), (0, 0), (1, 1), (1, 1)), mode=npmode)
        close(m(x), _conv2d_ref(xp, m.weight.detach().numpy(), np.zeros(1), 1, 0),
              rtol=1e-4, atol=1e-5)


def test_pooling_numpy():
    x = ember.randn(2, 3, 6, 4)
    xn = x.numpy()
    close(nn.MaxPool2d(2)(x), xn.reshape(2, 3, 3, 2, 2, 2).max((3, 5)))
    close(nn.AvgPool2d(2)(x), xn.reshape(2, 3, 3, 2, 2, 2).mean((3, 5)))
    close(nn.AdaptiveAvgPool2d(1)(x), xn.mean((2, 3), keepdims=True))
    close(nn.AdaptiveMaxPool2d((3, 2))(x), xn.reshape(2, 3, 3, 2, 2, 2).max((3, 5)))
    # a return_indices max pool: the flat index of each window's maximum in its plane
    values, idx = F.max_pool2d(x, 2, return_indices=True)
    close(values, xn.reshape(2, 3, 3, 2, 2, 2).max((3, 5)))
    flat = xn.reshape(2, 3, 24)
    np.testing.assert_array_equal(np.take_along_axis(flat, idx.numpy().reshape(2, 3, 6), 2),
                                  values.numpy().reshape(2, 3, 6))


def test_adaptive_pooling_none_keeps_the_input_size():
    # torch.nn.functional's rule: a None entry of output_size keeps that dim's size
    x = ember.randn(2, 3, 6, 4)
    xn = x.numpy()
    close(F.adaptive_avg_pool2d(x, (None, 2)), xn.reshape(2, 3, 6, 2, 2).mean(4))
    close(nn.AdaptiveMaxPool2d((3, None))(x), xn.reshape(2, 3, 3, 2, 4).max(3))
    x3 = ember.randn(1, 2, 4, 2, 6)
    close(F.adaptive_avg_pool3d(x3, (2, None, None)),
          x3.numpy().reshape(1, 2, 2, 2, 2, 6).mean(3))
    with pytest.raises(ValueError, match="Input dimension should be at least 3"):
        F.adaptive_avg_pool2d(ember.randn(4, 6), (None, 2))


def test_batchnorm_numpy():
    x = ember.randn(8, 3, 2, 2)
    xn = x.numpy().astype(np.float64)
    bn = nn.BatchNorm2d(3)
    mean = xn.mean((0, 2, 3), keepdims=True)
    var = xn.var((0, 2, 3), keepdims=True)
    close(bn(x), (xn - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    bn.eval()
    rm, rv = bn.running_mean.numpy().reshape(1, 3, 1, 1), bn.running_var.numpy().reshape(1, 3,
                                                                                         1, 1)
    close(bn(x), (xn - rm) / np.sqrt(rv + 1e-5), rtol=1e-4, atol=1e-5)


def test_layer_group_instance_norm_numpy():
    x = ember.randn(2, 4, 3, 3)
    xn = x.numpy().astype(np.float64)

    def norm(a, axes):
        return (a - a.mean(axes, keepdims=True)) / np.sqrt(a.var(axes, keepdims=True) + 1e-5)

    close(nn.LayerNorm([3, 3])(x), norm(xn, (2, 3)), rtol=1e-4, atol=1e-5)
    close(nn.GroupNorm(2, 4)(x), norm(xn.reshape(2, 2, -1), 2).reshape(xn.shape), rtol=1e-4,
          atol=1e-5)
    close(nn.InstanceNorm2d(4)(x), norm(xn, (2, 3)), rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="normalized_shape"):
        nn.LayerNorm(5)(x)
    with pytest.raises(ValueError, match="divisible by num_groups"):
        nn.GroupNorm(3, 4)


ACTS = [
    (nn.ReLU(), lambda a: np.maximum(a, 0)),
    (nn.ReLU6(), lambda a: np.clip(a, 0, 6)),
    (nn.LeakyReLU(0.1), lambda a: np.where(a > 0, a, 0.1 * a)),
    (nn.ELU(), lambda a: np.where(a > 0, a, np.expm1(a))),
    (nn.SELU(), lambda a: 1.0507009873554805 * np.where(a > 0, a, 1.6732632423543772 *
                                                        np.expm1(a))),
    (nn.CELU(2.0), lambda a: np.where(a > 0, a, 2.0 * np.expm1(a / 2.0))),
    (nn.GELU(), lambda a: 0.5 * a * (1 + np.vectorize(math.erf)(a / math.sqrt(2)))),
    (nn.GELU("tanh"), lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                                       (a + 0.044715 * a ** 3)))),
    (nn.SiLU(), lambda a: a / (1 + np.exp(-a))),
    (nn.Mish(), lambda a: a * np.tanh(np.log1p(np.exp(a)))),
    (nn.Sigmoid(), lambda a: 1 / (1 + np.exp(-a))),
    (nn.Tanh(), np.tanh),
    (nn.Hardtanh(), lambda a: np.clip(a, -1, 1)),
    (nn.Hardswish(), lambda a: a * np.clip(a + 3, 0, 6) / 6),
    (nn.Hardsigmoid(), lambda a: np.clip(a / 6 + 0.5, 0, 1)),
    (nn.Softplus(beta=2.0), lambda a: np.log1p(np.exp(2 * a)) / 2),
    (nn.Softsign(), lambda a: a / (1 + np.abs(a))),
    (nn.Threshold(0.5, -1.0), lambda a: np.where(a > 0.5, a, -1.0)),
    (nn.Softmax(1), lambda a: np.exp(a) / np.exp(a).sum(1, keepdims=True)),
    (nn.LogSoftmax(1), lambda a: a - np.log(np.exp(a).sum(1, keepdims=True))),
    (nn.PReLU(), lambda a: np.where(a > 0, a, 0.25 * a)),
]


@pytest.mark.parametrize("mod,ref", ACTS, ids=[type(m).__name__ for m, _ in ACTS])
def test_activations_numpy(mod, ref):
    x = ember.randn(4, 5, dtype=D) * 3
    close(mod.double()(x), ref(x.numpy()), rtol=1e-6, atol=1e-8)
    xg = x.detach().requires_grad_()
    assert gradcheck(lambda t: mod(t), (xg,))


@pytest.mark.parametrize("ctor,shape", [
    (lambda: nn.GroupNorm(2, 4), (2, 4, 3)), (lambda: nn.InstanceNorm1d(4, affine=True), (2, 4, 5)),
    (lambda: nn.LayerNorm(5), (3, 5)), (lambda: nn.BatchNorm1d(4), (6, 4)),
    (lambda: nn.Bilinear(5, 5, 2), None), (lambda: nn.Conv1d(4, 2, 3, padding=2,
                                                             padding_mode="reflect"), (2, 4, 5)),
    (lambda: nn.Upsample(scale_factor=2, mode="linear"), (1, 2, 4)),
    (lambda: nn.Unfold(2, padding=1), (1, 2, 3, 3)), (lambda: nn.RMSNorm(5), (2, 5)),
    (lambda: nn.MultiheadAttention(4, 2), None), (lambda: nn.GRU(3, 2), (3, 2, 3)),
])
def test_layer_gradcheck(ctor, shape):
    m = ctor().double()
    if isinstance(m, nn.Bilinear):
        a = ember.randn(3, 5, dtype=D, requires_grad=True)
        assert gradcheck(lambda t: m(t, t * 2), (a,))
    elif isinstance(m, nn.MultiheadAttention):
        a = ember.randn(3, 2, 4, dtype=D, requires_grad=True)
        assert gradcheck(lambda t: m(t, t, t)[0], (a,))
    elif isinstance(m, nn.GRU):
        a = ember.randn(*shape, dtype=D, requires_grad=True)
        assert gradcheck(lambda t: m(t)[0], (a,))
    else:
        a = ember.randn(*shape, dtype=D, requires_grad=True)
        assert gradcheck(lambda t: m(t), (a,))


def test_fold_is_adjoint_of_unfold():
    x = ember.randn(2, 3, 5, 6)
    cols = F.unfold(x, (2, 3), padding=1, stride=(1, 2))
    y = ember.randn(*cols.shape)
    lhs = (cols * y).sum().item()
    rhs = (x * F.fold(y, (5, 6), (2, 3), padding=1, stride=(1, 2))).sum().item()
    assert abs(lhs - rhs) < 1e-3 * max(1.0, abs(lhs))


def test_interpolate_nearest_numpy():
    x = ember.arange(12.0).reshape(1, 1, 3, 4)
    close(F.interpolate(x, scale_factor=2), x.numpy().repeat(2, 2).repeat(2, 3))
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(x)


def test_embedding_bag_numpy():
    w = ember.randn(5, 3)
    bag = nn.EmbeddingBag.from_pretrained(w, mode="sum")
    out = bag(ember.tensor([0, 1, 4, 2]), ember.tensor([0, 3]))
    wn = w.numpy()
    close(out, np.stack([wn[[0, 1, 4]].sum(0), wn[[2]].sum(0)]))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor"):
        bag(ember.tensor([0, 1]))


def test_interpolate_refuses_a_size_or_scale_of_another_rank():
    """torch's ValueError; before, a 1-d input used the first size and dropped the rest."""
    x = ember.ones(1, 1, 4)
    with pytest.raises(ValueError, match="Input and output must have the same number of spatial "
                                         "dimensions, but got input with spatial dimensions of "
                                         r"\[4\] and output size of \(2, 3\)"):
        F.interpolate(x, size=(2, 3))
    with pytest.raises(ValueError, match="Input and scale_factor must have the same number"):
        F.interpolate(x, scale_factor=(2.0, 3.0))
    with pytest.raises(ValueError, match="output size of \\(5,\\)"):
        F.interpolate(ember.ones(1, 1, 4, 4), size=(5,))
    assert tuple(F.interpolate(x, size=(6,)).shape) == (1, 1, 6)
    assert tuple(F.interpolate(ember.ones(1, 1, 4, 4), size=5).shape) == (1, 1, 5, 5)


def test_threshold_keeps_nan_inputs_and_a_nan_threshold_keeps_everything():
    """torch's kernel is `x <= threshold ? value : x`: comparisons with NaN are false."""
    x = np.array([1.0, 2.0, -1.0, np.nan, 0.5], dtype=np.float32)
    for thr in (0.5, float("nan"), float("inf"), -float("inf")):
        ref = np.where(x <= thr, -4.0, x).astype(np.float32)
        close(F.threshold(ember.from_numpy(x), thr, -4.0), ref)
        y = ember.from_numpy(x.copy())
        F.threshold(y, thr, -4.0, inplace=True)
        close(y, ref)
        close(nn.Threshold(thr, -4.0)(ember.from_numpy(x)), ref)


def test_lstm_one_graph_node_per_layer_and_direction():
    m = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    out, _ = m(ember.randn(7, 2, 3))
    names = [type(n).__name__ for n in _all_nodes(out.grad_fn)]
    assert names.count("RnnLayerBackward0") == 4
    assert "ThnnFusedLstmCellBackward0" not in names


def _all_nodes(root):
    seen, stack, nodes = set(), [root], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        stack.extend(f for f, _ in node.next_functions)
    return nodes


def test_gru_gradcheck_two_layers_bidirectional_with_initial_state():
    m = nn.GRU(2, 3, num_layers=2, bidirectional=True).double()
    x = ember.randn(3, 2, 2, dtype=ember.float64, requires_grad=True)
    h0 = ember.randn(4, 2, 3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda x, h0: m(x, h0), (x, h0))


def test_batch_norm_of_no_elements_keeps_the_running_statistics():
    """torch's shortcut for an empty batch: the input (scaled) back, no statistics taken, the
    running ones untouched (they became NaN or decayed towards 0)."""
    rm, rv = ember.full((3,), 2.0), ember.full((3,), 3.0)
    for shape in ((0, 3), (2, 3, 0)):
        out = F.batch_norm(ember.zeros(*shape), rm, rv, training=True)
        assert tuple(out.shape) == shape
    assert rm.tolist() == [2.0] * 3 and rv.tolist() == [3.0] * 3
    bn = ember.nn.BatchNorm1d(3)
    x = ember.zeros(2, 3, 0, requires_grad=True)
    bn(x).sum().backward()
    assert bn.running_mean.tolist() == [0.0] * 3 and bn.running_var.tolist() == [1.0] * 3
    assert tuple(x.grad.shape) == (2, 3, 0) and bn.weight.grad.tolist() == [0.0] * 3
