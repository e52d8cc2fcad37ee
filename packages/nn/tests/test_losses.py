"""Losses: NumPy references and errors (always), PyTorch parity (when torch is installed),
gradients by gradcheck in float64."""

import math

import numpy as np
import pytest
from _parity import close, to_torch

import ember
import ember.nn.functional as F
from ember import nn
from ember.autograd import gradcheck

RED = ["none", "mean", "sum"]


def _np_reduce(a, reduction):
    return {"none": a, "mean": a.mean(), "sum": a.sum()}[reduction]


@pytest.mark.parametrize("reduction", RED)
def test_regression_losses_numpy(reduction):
    x, t = ember.randn(4, 3), ember.randn(4, 3)
    xn, tn = x.numpy(), t.numpy()
    d = xn - tn
    close(nn.MSELoss(reduction=reduction)(x, t), _np_reduce(d * d, reduction))
    close(nn.L1Loss(reduction=reduction)(x, t), _np_reduce(np.abs(d), reduction))
    ad = np.abs(d)
    sl1 = np.where(ad < 0.5, 0.5 * ad * ad / 0.5, ad - 0.25)
    close(nn.SmoothL1Loss(reduction=reduction, beta=0.5)(x, t), _np_reduce(sl1, reduction))
    hub = np.where(ad < 0.7, 0.5 * ad * ad, 0.7 * (ad - 0.35))
    close(nn.HuberLoss(reduction=reduction, delta=0.7)(x, t), _np_reduce(hub, reduction))


def test_cross_entropy_numpy():
    x = ember.randn(5, 4)
    t = ember.tensor([0, 3, 1, 1, 2])
    xn = x.numpy().astype(np.float64)
    lsm = xn - np.log(np.exp(xn).sum(1, keepdims=True))
    ref = -lsm[np.arange(5), t.numpy()]
    close(F.cross_entropy(x, t, reduction="none"), ref)
    close(nn.CrossEntropyLoss()(x, t), ref.mean())
    close(F.nll_loss(ember.log_softmax(x, 1), t), ref.mean())


def test_bce_numpy_and_stability():
    p = ember.rand(6) * 0.98 + 0.01
    t = (ember.rand(6) > 0.5).float()
    pn, tn = p.numpy(), t.numpy()
    close(nn.BCELoss()(p, t), np.mean(-(tn * np.log(pn) + (1 - tn) * np.log(1 - pn))))
    logits = ember.tensor([-200.0, -5.0, 0.0, 5.0, 200.0], requires_grad=True)
    tt = ember.tensor([1.0, 0.0, 1.0, 1.0, 0.0])
    loss = nn.BCEWithLogitsLoss(reduction="none")(logits, tt)
    close(loss, [200.0, math.log1p(math.exp(-5.0)), math.log(2), math.log1p(math.exp(-5.0)),
                 200.0])
    loss.sum().backward()
    assert np.isfinite(logits.grad.numpy()).all()


def test_kl_div_numpy():
    x = ember.log_softmax(ember.randn(3, 4), 1)
    t = ember.softmax(ember.randn(3, 4), 1)
    xn, tn = x.numpy(), t.numpy()
    pw = tn * (np.log(tn) - xn)
    close(nn.KLDivLoss(reduction="batchmean")(x, t), pw.sum() / 3)
    close(nn.KLDivLoss(reduction="sum", log_target=True)(x, ember.log(t)), pw.sum())
    z = ember.zeros(3, 4)
    close(F.kl_div(x, z, reduction="sum"), 0.0)


def test_loss_errors():
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.mse_loss(ember.zeros(2), ember.zeros(2), reduction="avg")
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(ember.randn(3, 4), ember.tensor([0, 4, 1]))
    with pytest.raises(ValueError, match="Expected input batch_size"):
        F.nll_loss(ember.randn(3, 4), ember.tensor([0, 1]))
    with pytest.raises(ValueError, match="different to the input size"):
        F.binary_cross_entropy(ember.rand(3), ember.rand(4))
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(ember.tensor([1.5]), ember.tensor([1.0]))
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(ember.rand(3), ember.rand(4))
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(ember.randn(2, 3), ember.tensor([0, 1]), label_smoothing=1.5)
    with pytest.warns(UserWarning, match="target size"):
        F.mse_loss(ember.zeros(3, 1), ember.zeros(3))


D = ember.float64


@pytest.mark.parametrize("fn", [
    lambda x, t: F.mse_loss(x, t), lambda x, t: F.l1_loss(x, t),
    lambda x, t: F.smooth_l1_loss(x, t, beta=0.5), lambda x, t: F.huber_loss(x, t, delta=0.3),
    lambda x, t: F.binary_cross_entropy(x.sigmoid(), t.sigmoid()),
    lambda x, t: F.binary_cross_entropy_with_logits(x, t.sigmoid(), pos_weight=t.abs()),
    lambda x, t: F.kl_div(x.log_softmax(1), t.softmax(1), reduction="batchmean"),
    lambda x, t: F.cross_entropy(x, t.softmax(1), label_smoothing=0.2),
    lambda x, t: F.cosine_embedding_loss(x, t, ember.tensor([1, -1, 1], dtype=D), margin=0.1),
    lambda x, t: F.margin_ranking_loss(x[:, 0], t[:, 0], ember.tensor([1.0, -1.0, 1.0],
                                                                       dtype=D)),
    lambda x, t: F.triplet_margin_loss(x, t, t.flip(0), margin=2.0),
])
def test_loss_gradcheck(fn):
    x = ember.randn(3, 4, dtype=D, requires_grad=True)
    t = ember.randn(3, 4, dtype=D, requires_grad=True)
    assert gradcheck(fn, (x, t))


def test_cross_entropy_indices_gradcheck():
    x = ember.randn(4, 5, dtype=D, requires_grad=True)
    t = ember.tensor([0, 4, -100, 2])
    w = ember.rand(5, dtype=D) + 0.2
    assert gradcheck(lambda x: F.cross_entropy(x, t, w, label_smoothing=0.1), (x,))


# ------------------------------------------------------------------------------- torch parity

def _pairs(torch):
    return [
        ("MSELoss", {}, "reg"), ("L1Loss", {}, "reg"), ("SmoothL1Loss", {"beta": 0.3}, "reg"),
        ("HuberLoss", {"delta": 0.4}, "reg"), ("BCELoss", {}, "prob"),
        ("BCEWithLogitsLoss", {}, "logit"),
        ("BCEWithLogitsLoss", {"pos_weight": "pw"}, "logit"),
        ("KLDivLoss", {"reduction": "batchmean"}, "kl"),
        ("KLDivLoss", {"log_target": True}, "kllog"),
        ("SoftMarginLoss", {}, "sign"), ("HingeEmbeddingLoss", {"margin": 0.5}, "sign"),
        ("PoissonNLLLoss", {}, "reg"),
    ]


@pytest.mark.parametrize("reduction", RED)
def test_losses_torch(reduction):
    torch = pytest.importorskip("torch")
    x = ember.randn(4, 3)
    for name, kw, kind in _pairs(torch):
        if name == "KLDivLoss" and "reduction" in kw:
            if reduction != "mean":
                continue
        else:
            kw = dict(kw, reduction=reduction)
        if kind == "reg":
            inp, tgt = x, ember.randn(4, 3).abs()
        elif kind == "prob":
            inp, tgt = x.sigmoid(), ember.rand(4, 3)
        elif kind == "logit":
            inp, tgt = x * 5, ember.rand(4, 3)
        elif kind == "kl":
            inp, tgt = x.log_softmax(1), ember.randn(4, 3).softmax(1)
        elif kind == "kllog":
            inp, tgt = x.log_softmax(1), ember.randn(4, 3).log_softmax(1)
        else:
            inp, tgt = x, (ember.rand(4, 3) > 0.5).float() * 2 - 1
        ekw, tkw = dict(kw), dict(kw)
        if kw.get("pos_weight") == "pw":
            pw = ember.rand(3) + 0.5
            ekw["pos_weight"], tkw["pos_weight"] = pw, to_torch(pw, torch)
        e_in = inp.detach().requires_grad_()
        t_in = to_torch(inp, torch, True)
        eo = getattr(nn, name)(**ekw)(e_in, tgt)
        to = getattr(torch.nn, name)(**tkw)(t_in, to_torch(tgt, torch))
        close(eo, to)
        eo.sum().backward()
        to.sum().backward()
        close(e_in.grad, t_in.grad)


@pytest.mark.parametrize("reduction", RED)
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_torch(reduction, smoothing, weighted):
    torch = pytest.importorskip("torch")
    w = ember.rand(4) + 0.5 if weighted else None
    tw = to_torch(w, torch) if weighted else None
    cases = [(ember.randn(6, 4), ember.tensor([0, 3, -100, 1, 2, 3])),
             (ember.randn(2, 4, 3, 2), ember.randint(0, 4, (2, 3, 2))),
             (ember.randn(5, 4), ember.randn(5, 4).softmax(1)),
             (ember.randn(4), ember.tensor(2))]
    for x, t in cases:
        ex = x.detach().requires_grad_()
        tx = to_torch(x, torch, True)
        tt = to_torch(t, torch) if t.dtype.is_floating_point else torch.tensor(t.tolist())
        eo = nn.CrossEntropyLoss(w, reduction=reduction, label_smoothing=smoothing)(ex, t)
        to = torch.nn.CrossEntropyLoss(tw, reduction=reduction, label_smoothing=smoothing)(tx,
                                                                                           tt)
        close(eo, to)
        eo.sum().backward()
        to.sum().backward()
        close(ex.grad, tx.grad)


@pytest.mark.parametrize("reduction", RED)
def test_pair_losses_torch(reduction):
    torch = pytest.importorskip("torch")
    a, b, c = ember.randn(5, 4), ember.randn(5, 4), ember.randn(5, 4)
    y = ember.tensor([1.0, -1.0, 1.0, -1.0, -1.0])
    ta, tb, tc, ty = (to_torch(v, torch) for v in (a, b, c, y))
    close(nn.CosineEmbeddingLoss(0.2, reduction=reduction)(a, b, y),
          torch.nn.CosineEmbeddingLoss(0.2, reduction=reduction)(ta, tb, ty))
    close(nn.MarginRankingLoss(0.3, reduction=reduction)(a[:, 0], b[:, 0], y),
          torch.nn.MarginRankingLoss(0.3, reduction=reduction)(ta[:, 0], tb[:, 0], ty))
    for swap in (False, True):
        close(nn.TripletMarginLoss(1.5, swap=swap, reduction=reduction)(a, b, c),
              torch.nn.TripletMarginLoss(1.5, swap=swap, reduction=reduction)(ta, tb, tc))
    nllw = ember.rand(4) + 0.1
    lp = a.log_softmax(1)
    t = ember.tensor([0, 1, 2, 3, 1])
    close(nn.NLLLoss(nllw, reduction=reduction, ignore_index=2)(lp, t),
          torch.nn.NLLLoss(to_torch(nllw, torch), reduction=reduction, ignore_index=2)(
              to_torch(lp, torch), torch.tensor(t.tolist())))
