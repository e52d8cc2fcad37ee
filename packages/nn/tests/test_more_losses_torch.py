"""CTC, multi-label soft margin and multi-margin losses, and the padding modules, against
PyTorch (skipped without torch); CTC gradients by gradcheck in float64."""

import pytest
from _parity import close, to_torch

import ember
import ember.nn.functional as F
from ember import nn
from ember.autograd import gradcheck

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss(reduction):
    t, n, c = 12, 3, 5
    logits = ember.randn(t, n, c)
    lp = logits.log_softmax(2)
    targets = ember.tensor([[1, 2, 2, 3], [4, 1, 0, 0], [3, 3, 3, 0]])
    in_lens, tg_lens = [12, 10, 9], [4, 2, 3]
    # NOTE: torch's ctc backward returns the gradient of the loss composed with log_softmax
    # (it assumes normalised log_probs); compare gradients w.r.t. the logits, where both agree
    elg = logits.detach().requires_grad_()
    tlg = to_torch(logits, torch, True)
    elp, tlp = elg.log_softmax(2), tlg.log_softmax(2)
    eo = nn.CTCLoss(reduction=reduction)(elp, targets, ember.tensor(in_lens),
                                         ember.tensor(tg_lens))
    to = torch.nn.CTCLoss(reduction=reduction)(tlp, torch.tensor(targets.tolist()),
                                               torch.tensor(in_lens), torch.tensor(tg_lens))
    close(eo, to, rtol=1e-4, atol=1e-4)
    eo.sum().backward()
    to.sum().backward()
    close(elg.grad, tlg.grad, rtol=1e-3, atol=1e-4)
    # concatenated 1-D targets give the same losses
    flat = ember.tensor([1, 2, 2, 3, 4, 1, 3, 3, 3])
    close(F.ctc_loss(lp, flat, in_lens, tg_lens, reduction=reduction), to, rtol=1e-4,
          atol=1e-4)


def test_ctc_impossible_and_gradcheck():
    lp = ember.randn(2, 1, 3).log_softmax(2)
    tg = ember.tensor([[1, 1]])  # needs 3 frames
    loss = F.ctc_loss(lp, tg, [2], [2], reduction="none")
    assert loss.item() == float("inf")
    assert F.ctc_loss(lp, tg, [2], [2], reduction="sum", zero_infinity=True).item() == 0.0
    x = ember.randn(6, 2, 4, dtype=ember.float64, requires_grad=True)
    tg2 = ember.tensor([[1, 2], [3, 0]])
    assert gradcheck(lambda x: F.ctc_loss(x.log_softmax(2), tg2, [6, 5], [2, 1]), (x,))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_margin_losses(reduction):
    x = ember.randn(4, 5)
    y = (ember.rand(4, 5) > 0.5).float()
    w = ember.rand(5) + 0.5
    tx = to_torch(x, torch)
    close(nn.MultiLabelSoftMarginLoss(w, reduction=reduction)(x, y),
          torch.nn.MultiLabelSoftMarginLoss(to_torch(w, torch), reduction=reduction)(
              tx, to_torch(y, torch)))
    t = ember.tensor([0, 4, 2, 1])
    for p in (1, 2):
        close(nn.MultiMarginLoss(p=p, margin=0.7, weight=w, reduction=reduction)(x, t),
              torch.nn.MultiMarginLoss(p=p, margin=0.7, weight=to_torch(w, torch),
                                       reduction=reduction)(tx, torch.tensor(t.tolist())))


@pytest.mark.parametrize("name,args,shape", [
    ("ZeroPad2d", ((1, 2, 0, 1),), (1, 2, 3, 3)), ("ConstantPad1d", (2, 3.5), (1, 2, 4)),
    ("ReflectionPad2d", (1,), (1, 2, 3, 4)), ("ReplicationPad1d", ((2, 1),), (1, 2, 4)),
    ("CircularPad2d", (1,), (1, 1, 3, 3)), ("ReplicationPad3d", (1,), (1, 1, 2, 3, 3)),
])
def test_padding_modules(name, args, shape):
    x = ember.randn(*shape)
    em, tm = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(em) == repr(tm)
    close(em(x), tm(to_torch(x, torch)))


def test_max_unpool_and_area_and_buffer():
    x = ember.randn(2, 3, 6, 6)
    out, idx = nn.MaxPool2d(2, return_indices=True)(x)
    tout, tidx = torch.nn.MaxPool2d(2, return_indices=True)(to_torch(x, torch))
    close(nn.MaxUnpool2d(2)(out, idx), torch.nn.MaxUnpool2d(2)(tout, tidx))
    assert repr(nn.MaxUnpool2d(2)) == repr(torch.nn.MaxUnpool2d(2))
    x1 = ember.randn(2, 3, 8)
    o1, i1 = F.max_pool1d(x1, 2, return_indices=True)
    to1, ti1 = torch.nn.functional.max_pool1d(to_torch(x1, torch), 2, return_indices=True)
    close(F.max_unpool1d(o1, i1, 2, output_size=[9]),
          torch.nn.functional.max_unpool1d(to_torch(o1, torch), ti1, 2, output_size=[9]))
    close(F.interpolate(x, size=(4, 3), mode="area"),
          torch.nn.functional.interpolate(to_torch(x, torch), size=(4, 3), mode="area"))
    m = nn.Module()
    m.stat = nn.Buffer(ember.ones(2))
    m.tmp = nn.Buffer(ember.zeros(1), persistent=False)
    assert list(m.state_dict()) == ["stat"] and [n for n, _ in m.named_buffers()] == ["stat",
                                                                                     "tmp"]


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("mode,pad", [("bilinear", "zeros"), ("bilinear", "border"),
                                      ("nearest", "zeros")])
def test_affine_grid_and_grid_sample(align, mode, pad):
    theta = ember.tensor([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.2]],
                          [[1.2, 0.1, 0.3], [-0.1, 0.8, 0.05]]])
    grid = F.affine_grid(theta, (2, 3, 5, 6), align_corners=align)
    tgrid = torch.nn.functional.affine_grid(to_torch(theta, torch), (2, 3, 5, 6),
                                            align_corners=align)
    close(grid, tgrid)
    x = ember.randn(2, 3, 4, 7)
    ex = x.detach().requires_grad_()
    eg = (grid * 1.1).detach().requires_grad_()
    tx = to_torch(x, torch, True)
    tg = (tgrid * 1.1).detach().requires_grad_()
    eo = F.grid_sample(ex, eg, mode=mode, padding_mode=pad, align_corners=align)
    to = torch.nn.functional.grid_sample(tx, tg, mode=mode, padding_mode=pad,
                                         align_corners=align)
    close(eo, to)
    gout = ember.randn(*eo.shape)
    eo.backward(gout)
    to.backward(to_torch(gout, torch))
    close(ex.grad, tx.grad, rtol=1e-4, atol=1e-4)
    if mode == "bilinear":
        close(eg.grad, tg.grad, rtol=1e-3, atol=1e-3)


def test_extra_layers():
    x = ember.randn(2, 6, 4, 4).abs() + 0.1
    tx = to_torch(x, torch)
    for em, tm in [(nn.ChannelShuffle(3), torch.nn.ChannelShuffle(3)),
                   (nn.LPPool2d(2, 2), torch.nn.LPPool2d(2, 2)),
                   (nn.LPPool2d(3, (2, 1), stride=1), torch.nn.LPPool2d(3, (2, 1), stride=1)),
                   (nn.RReLU().eval(), torch.nn.RReLU().eval())]:
        assert repr(em) == repr(tm)
        close(em(x - 0.5), tm(tx - 0.5))
    x1 = ember.randn(2, 3, 8).abs()
    close(nn.LPPool1d(2, 3)(x1), torch.nn.LPPool1d(2, 3)(to_torch(x1, torch)))
    r = nn.RReLU()(-ember.ones(1000))
    assert (r >= -1 / 3).all().item() and (r <= -1 / 8).all().item()
    a, p, n = ember.randn(4, 5), ember.randn(4, 5), ember.randn(4, 5)
    ta, tp, tn = (to_torch(t, torch) for t in (a, p, n))
    close(nn.TripletMarginWithDistanceLoss(swap=True)(a, p, n),
          torch.nn.TripletMarginWithDistanceLoss(swap=True)(ta, tp, tn))
    cos = nn.TripletMarginWithDistanceLoss(
        distance_function=lambda u, v: 1 - F.cosine_similarity(u, v), margin=0.5)
    tcos = torch.nn.TripletMarginWithDistanceLoss(
        distance_function=lambda u, v: 1 - torch.nn.functional.cosine_similarity(u, v),
        margin=0.5)
    close(cos(a, p, n), tcos(ta, tp, tn))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multilabel_margin_loss(reduction):
    x = ember.randn(3, 5)
    t = ember.tensor([[3, 0, -1, 1, 2], [1, 2, 4, 0, -1], [-1, 0, 0, 0, 0]])
    ex = x.detach().requires_grad_()
    tx = to_torch(x, torch, True)
    eo = nn.MultiLabelMarginLoss(reduction=reduction)(ex, t)
    to = torch.nn.MultiLabelMarginLoss(reduction=reduction)(tx, torch.tensor(t.tolist()))
    close(eo, to)
    eo.sum().backward()
    to.sum().backward()
    close(ex.grad, tx.grad)
