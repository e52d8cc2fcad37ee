"""Every layer against PyTorch: same weights (copied through state_dict), same outputs and
gradients. Skipped when torch is not installed."""

import pytest
from _parity import check_module, close, copy_weights, to_torch

import ember
from ember import nn

torch = pytest.importorskip("torch")
tnn = torch.nn


def _x(*shape):
    return ember.randn(*shape)


CASES = [
    ("Linear", (5, 3), {}, (4, 5)),
    ("Linear", (5, 3), {"bias": False}, (2, 6, 5)),
    ("Bilinear", (3, 4, 2), {}, None),
    ("Conv1d", (3, 4, 3), {"stride": 2, "padding": 1}, (2, 3, 9)),
    ("Conv2d", (3, 4, 3), {}, (2, 3, 7, 6)),
    ("Conv2d", (4, 6, (3, 2)), {"stride": (2, 1), "padding": (1, 0), "dilation": 2,
                                "groups": 2}, (2, 4, 9, 8)),
    ("Conv2d", (3, 4, 3), {"padding": "same"}, (2, 3, 6, 6)),
    ("Conv2d", (3, 4, 4), {"padding": "same", "dilation": 2}, (1, 3, 7, 7)),
    ("Conv2d", (3, 4, 3), {"padding": 2, "padding_mode": "reflect"}, (2, 3, 6, 6)),
    ("Conv2d", (3, 4, 3), {"padding": 1, "padding_mode": "replicate"}, (2, 3, 6, 6)),
    ("Conv2d", (3, 4, 3), {"padding": 1, "padding_mode": "circular"}, (2, 3, 6, 6)),
    ("Conv3d", (2, 3, 2), {"stride": 2}, (1, 2, 5, 5, 5)),
    ("ConvTranspose1d", (3, 2, 3), {"stride": 2, "padding": 1, "output_padding": 1},
     (2, 3, 5)),
    ("ConvTranspose2d", (3, 4, 3), {"stride": 2}, (2, 3, 4, 5)),
    ("ConvTranspose2d", (4, 4, 3), {"groups": 2, "dilation": 2}, (1, 4, 4, 4)),
    ("MaxPool1d", (3,), {"stride": 2}, (2, 3, 9)),
    ("MaxPool2d", (2,), {}, (2, 3, 6, 6)),
    ("MaxPool2d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, (2, 3, 7, 7)),
    ("AvgPool1d", (3,), {"stride": 2, "padding": 1}, (2, 3, 9)),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False}, (2, 3, 7, 7)),
    ("AvgPool2d", (2,), {"divisor_override": 3}, (2, 3, 6, 6)),
    ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 9)),
    ("AdaptiveAvgPool2d", ((3, 2),), {}, (2, 3, 7, 5)),
    ("AdaptiveAvgPool2d", (1,), {}, (2, 3, 7, 5)),
    ("AdaptiveMaxPool2d", (3,), {}, (2, 3, 7, 8)),
    ("BatchNorm1d", (4,), {}, (8, 4)),
    ("BatchNorm1d", (4,), {}, (8, 4, 3)),
    ("BatchNorm2d", (3,), {}, (4, 3, 5, 5)),
    ("BatchNorm2d", (3,), {"affine": False}, (4, 3, 5, 5)),
    ("BatchNorm2d", (3,), {"momentum": None}, (4, 3, 5, 5)),
    ("BatchNorm2d", (3,), {"track_running_stats": False}, (4, 3, 5, 5)),
    ("LayerNorm", (6,), {}, (3, 4, 6)),
    ("LayerNorm", ((4, 6),), {"elementwise_affine": False}, (3, 4, 6)),
    ("LayerNorm", (6,), {"bias": False}, (3, 6)),
    ("GroupNorm", (2, 6), {}, (3, 6, 4, 4)),
    ("GroupNorm", (3, 6), {"affine": False}, (3, 6, 5)),
    ("InstanceNorm2d", (3,), {}, (2, 3, 5, 5)),
    ("InstanceNorm2d", (3,), {"affine": True, "track_running_stats": True}, (2, 3, 5, 5)),
    ("InstanceNorm1d", (3,), {}, (2, 3, 7)),
    ("RMSNorm", (6,), {}, (3, 6)),
    ("Flatten", (), {}, (2, 3, 4, 5)),
    ("Flatten", (0, 2), {}, (2, 3, 4, 5)),
    ("Unflatten", (1, (3, 4)), {}, (2, 12, 5)),
    ("Identity", (), {}, (3, 4)),
    ("PixelShuffle", (2,), {}, (2, 8, 3, 3)),
    ("PixelUnshuffle", (2,), {}, (2, 2, 4, 6)),
    ("Upsample", (), {"scale_factor": 2}, (2, 3, 4, 5)),
    ("Upsample", (), {"size": (7, 3)}, (2, 3, 4, 5)),
    ("Upsample", (), {"scale_factor": 2, "mode": "bilinear"}, (2, 3, 4, 5)),
    ("Upsample", (), {"size": (7, 9), "mode": "bilinear", "align_corners": True},
     (2, 3, 4, 5)),
    ("Upsample", (), {"scale_factor": 3, "mode": "linear"}, (2, 3, 4)),
    ("Upsample", (), {"scale_factor": 2, "mode": "bicubic"}, (2, 3, 4, 5)),
    ("Upsample", (), {"size": (7, 3), "mode": "bicubic", "align_corners": True}, (1, 2, 4, 5)),
    ("Upsample", (), {"scale_factor": 1.5, "mode": "bicubic"}, (1, 2, 4, 5)),
    ("Unfold", ((2, 3),), {"padding": 1, "stride": 2}, (2, 3, 6, 7)),
    ("Fold", ((5, 6), (2, 2)), {"stride": 1}, (2, 12, 20)),
    ("PReLU", (), {}, (3, 4)),
    ("PReLU", (3,), {"init": 0.1}, (2, 3, 4)),
]

ACTIVATIONS = [
    ("ReLU", ()), ("ReLU6", ()), ("LeakyReLU", (0.2,)), ("ELU", (0.7,)), ("SELU", ()),
    ("CELU", (0.5,)), ("GELU", ()), ("GELU", ("tanh",)), ("SiLU", ()), ("Mish", ()),
    ("Sigmoid", ()), ("Tanh", ()), ("Hardtanh", (-0.5, 0.7)), ("Hardswish", ()),
    ("Hardsigmoid", ()), ("Softplus", ()), ("Softplus", (2.0, 1.0)), ("Softsign", ()),
    ("Softmax", (1,)), ("LogSoftmax", (-1,)), ("Softmin", (0,)), ("Threshold", (0.1, -2.0)),
    ("LogSigmoid", ()), ("Tanhshrink", ()), ("Softshrink", (0.3,)), ("Hardshrink", (0.3,)),
    ("GLU", ()),
]


def _ids(cases):
    return [f"{c[0]}-{i}" for i, c in enumerate(cases)]


@pytest.mark.parametrize("name,args,kwargs,shape", CASES, ids=_ids(CASES))
def test_layer(name, args, kwargs, shape):
    em = getattr(nn, name)(*args, **kwargs)
    tm = getattr(tnn, name)(*args, **kwargs)
    if name == "Bilinear":
        check_module(em, tm, _x(5, 3), _x(5, 4), torch=torch)
        return
    if name.startswith(("BatchNorm", "InstanceNorm")):
        em.train()
        tm.train()
        for _ in range(2):
            check_module(em, tm, _x(*shape), torch=torch)
            for k, v in em.state_dict().items():
                close(v, tm.state_dict()[k])
            tm.load_state_dict({k: v.clone() for k, v in tm.state_dict().items()})
        em.eval()
        tm.eval()
        check_module(em, tm, _x(*shape), torch=torch)
        return
    check_module(em, tm, _x(*shape), torch=torch)


@pytest.mark.parametrize("name,args", ACTIVATIONS, ids=_ids(ACTIVATIONS))
def test_activation(name, args):
    x = ember.randn(4, 6) * 3
    check_module(getattr(nn, name)(*args), getattr(tnn, name)(*args), x, torch=torch)


ONE_NODE_ACTIVATIONS = [("GELU", (), "GeluBackward0"), ("GELU", ("tanh",), "GeluBackward0"),
                        ("SiLU", (), "SiluBackward0"), ("ELU", (0.7,), "EluBackward0"),
                        ("SELU", (), "EluBackward0"), ("CELU", (0.5,), "CeluBackward0"),
                        ("Softplus", (2.0, 1.0), "SoftplusBackward0"),
                        ("Mish", (), "MishBackward0"), ("Hardsigmoid", (), "HardsigmoidBackward0"),
                        ("Hardswish", (), "HardswishBackward0")]


@pytest.mark.parametrize("name,args,node", ONE_NODE_ACTIVATIONS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(ONE_NODE_ACTIVATIONS)])
def test_activation_is_one_node_with_torchs_gradient_at_its_kinks(name, args, node):
    # torch's node name; its gradient also where the pieces meet (0, +-3, the threshold)
    pts = [-40.0, -3.0, -2.9, -1.0, -0.5, 0.0, 0.5, 1.0, 2.9, 3.0, 40.0]
    x = ember.tensor(pts, requires_grad=True)
    y = getattr(nn, name)(*args)(x)
    assert type(y.grad_fn).__name__ == node
    y.sum().backward()
    tx = torch.tensor(pts, requires_grad=True)
    ty = getattr(tnn, name)(*args)(tx)
    assert type(ty.grad_fn).__name__ == node
    ty.sum().backward()
    close(y, ty)
    close(x.grad, tx.grad)


def test_softplus_large_inputs_finite_gradient():
    x = ember.tensor([-100.0, -30.0, 0.0, 30.0, 100.0], requires_grad=True)
    y = nn.Softplus()(x)
    y.sum().backward()
    tx = torch.tensor([-100.0, -30.0, 0.0, 30.0, 100.0], requires_grad=True)
    tnn.Softplus()(tx).sum().backward()
    close(y, tnn.Softplus()(tx))
    close(x.grad, tx.grad)


def test_maxpool_return_indices():
    x = _x(2, 3, 6, 6)
    eo, ei = nn.MaxPool2d(2, return_indices=True)(x)
    to, ti = tnn.MaxPool2d(2, return_indices=True)(to_torch(x, torch))
    close(eo, to)
    assert ei.tolist() == ti.tolist()
    eo, ei = nn.AdaptiveMaxPool2d(3, return_indices=True)(x)
    to, ti = tnn.AdaptiveMaxPool2d(3, return_indices=True)(to_torch(x, torch))
    assert ei.tolist() == ti.tolist()


def test_conv_transpose_output_size():
    em, tm = nn.ConvTranspose2d(3, 2, 3, stride=2), tnn.ConvTranspose2d(3, 2, 3, stride=2)
    copy_weights(em, tm, torch)
    x = _x(1, 3, 4, 4)
    eo = em(x, output_size=(10, 10))
    to = tm(to_torch(x, torch), output_size=(10, 10))
    close(eo, to)
    with pytest.raises(ValueError):
        em(x, output_size=(20, 20))


def test_embedding():
    em, tm = nn.Embedding(10, 3, padding_idx=1), tnn.Embedding(10, 3, padding_idx=1)
    copy_weights(em, tm, torch)
    idx = ember.tensor([[0, 1, 4], [9, 1, 1]])
    eo, to = em(idx), tm(torch.tensor(idx.tolist()))
    close(eo, to)
    eo.sum().backward()
    to.sum().backward()
    close(em.weight.grad, tm.weight.grad)
    assert em.weight[1].abs().sum().item() == 0


def test_embedding_max_norm():
    em, tm = nn.Embedding(6, 4, max_norm=1.0), tnn.Embedding(6, 4, max_norm=1.0)
    copy_weights(em, tm, torch)
    idx = ember.tensor([0, 2, 2, 5])
    close(em(idx), tm(torch.tensor(idx.tolist())))
    close(em.weight, tm.weight)


def test_embedding_from_pretrained():
    w = ember.randn(4, 3)
    e = nn.Embedding.from_pretrained(w)
    assert not e.weight.requires_grad
    close(e(ember.tensor([3])), w[3:4])
    assert nn.Embedding.from_pretrained(w, freeze=False).weight.requires_grad


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    em, tm = nn.EmbeddingBag(10, 3, mode=mode), tnn.EmbeddingBag(10, 3, mode=mode)
    copy_weights(em, tm, torch)
    inp = ember.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    offs = ember.tensor([0, 4])
    eo = em(inp, offs)
    to = tm(torch.tensor(inp.tolist()), torch.tensor(offs.tolist()))
    close(eo, to)
    eo.sum().backward()
    to.sum().backward()
    close(em.weight.grad, tm.weight.grad)
    inp2 = ember.tensor([[1, 2, 4], [4, 3, 2]])
    close(em(inp2), tm(torch.tensor(inp2.tolist())))


def test_dropout_statistics_and_eval():
    x = ember.ones(200, 100)
    d = nn.Dropout(0.3)
    y = d(x)
    kept = (y != 0).float().mean().item()
    assert abs(kept - 0.7) < 0.02
    assert set(round(v, 4) for v in y.unique().tolist()) <= {0.0, round(1 / 0.7, 4)}
    d.eval()
    assert d(x) is x
    y2 = nn.Dropout2d(0.5)(ember.ones(50, 40, 3, 3))
    per_channel = y2.reshape(50, 40, 9)
    assert ((per_channel == 0).all(-1) | (per_channel != 0).all(-1)).all().item()
    with pytest.raises(ValueError, match="dropout probability"):
        nn.Dropout(1.5)


def _mask_dims(out):
    """How many leading dimensions the dropout mask of an all-ones input varies over."""
    for kept in range(out.dim() + 1):
        if bool((out == out[(slice(None),) * kept + (slice(0, 1),) * (out.dim() - kept)]).all()):
            return kept
    return out.dim()


@pytest.mark.filterwarnings("ignore:dropout")
@pytest.mark.parametrize("name,shape", [
    ("dropout1d", (6, 40)), ("dropout1d", (6, 40, 5)),
    ("dropout2d", (60, 40)), ("dropout2d", (6, 40, 5)), ("dropout2d", (6, 40, 5, 3)),
    ("dropout3d", (6, 40, 5, 3)), ("dropout3d", (6, 40, 5, 3, 2)),
])
def test_feature_dropout_masks_as_torch(name, shape):
    # the dimensions a mask value covers follow torch's rules, deprecated inputs included
    # (dropout2d of a 2-D (N, C) input drops elements; of a 3-D input, channels of (N, C, L))
    import ember.nn.functional as F
    ours = getattr(F, name)(ember.ones(*shape), 0.5)
    theirs = getattr(torch.nn.functional, name)(torch.ones(*shape), 0.5)
    assert tuple(ours.shape) == shape
    assert _mask_dims(ours) == _mask_dims(theirs)


def test_feature_dropout_rejections_and_warnings_as_torch():
    import ember.nn.functional as F
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(ember.ones(2, 3, 4, 5))
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        F.dropout2d(ember.ones(4, 5))
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(ember.ones(4, 5, 6))


def test_functional_misc():
    import torch.nn.functional as TF

    import ember.nn.functional as F

    x, y = _x(4, 5), _x(4, 5)
    tx, ty = to_torch(x, torch), to_torch(y, torch)
    close(F.cosine_similarity(x, y), TF.cosine_similarity(tx, ty))
    close(F.pairwise_distance(x, y), TF.pairwise_distance(tx, ty))
    close(F.normalize(x), TF.normalize(tx))
    close(F.normalize(x, p=1, dim=0), TF.normalize(tx, p=1, dim=0))
    t = ember.tensor([0, 2, 1])
    assert F.one_hot(t).tolist() == TF.one_hot(torch.tensor([0, 2, 1])).tolist()
    assert F.one_hot(t, 5).shape == (3, 5)
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        F.one_hot(t, 2)
    close(F.pad(x, (1, 2)), TF.pad(tx, (1, 2)))
    q, k, v = _x(2, 3, 4, 8), _x(2, 3, 5, 8), _x(2, 3, 5, 8)
    tq, tk, tv = (to_torch(a, torch) for a in (q, k, v))
    close(F.scaled_dot_product_attention(q, k, v), TF.scaled_dot_product_attention(tq, tk, tv))
    q2 = _x(2, 5, 8)
    tq2 = to_torch(q2, torch)
    close(F.scaled_dot_product_attention(q2, q2, q2, is_causal=True),
          TF.scaled_dot_product_attention(tq2, tq2, tq2, is_causal=True))
    mask = ember.rand(5, 5) > 0.3
    mask = mask | ember.eye(5, dtype=ember.bool)
    close(F.scaled_dot_product_attention(q2, q2, q2, attn_mask=mask),
          TF.scaled_dot_product_attention(tq2, tq2, tq2,
                                          attn_mask=torch.tensor(mask.tolist())))


def test_training_trajectory_matches_torch():
    """300 plain SGD steps on XOR from the same initial weights: the same losses as torch."""
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
    tm = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    copy_weights(m, tm, torch)
    x = ember.tensor([[0.0, 0], [0, 1], [1, 0], [1, 1]])
    y = ember.tensor([[0.0], [1], [1], [0]])
    tx, ty = to_torch(x, torch), to_torch(y, torch)
    for _ in range(300):
        loss = nn.functional.mse_loss(m(x), y)
        m.zero_grad()
        loss.backward()
        tl = torch.nn.functional.mse_loss(tm(tx), ty)
        tm.zero_grad()
        tl.backward()
        with ember.no_grad():
            for p in m.parameters():
                p.sub_(p.grad * 0.1)
        with torch.no_grad():
            for p in tm.parameters():
                p.sub_(p.grad * 0.1)
    assert loss.item() < 1e-3
    close(loss, tl, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_padding_and_weights(mode):
    em = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=2)
    tm = tnn.EmbeddingBag(10, 3, mode=mode, padding_idx=2)
    copy_weights(em, tm, torch)
    inp, offs = ember.tensor([1, 2, 4, 5, 2, 3, 2, 9]), ember.tensor([0, 4, 6])
    ti, to_ = torch.tensor(inp.tolist()), torch.tensor(offs.tolist())
    close(em(inp, offs), tm(ti, to_))
    if mode == "sum":
        psw = ember.rand(8)
        close(em(inp, offs, psw), tm(ti, to_, to_torch(psw, torch)))
