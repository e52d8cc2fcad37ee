"""ember.nn.utils: gradient clipping, parameter vectors, and rnn padding/packing."""

import math

import numpy as np
import pytest

import ember
import ember.autograd  # noqa: F401
from ember.nn import utils
from ember.nn.utils import rnn


def _params_with_grads(seed=0, shapes=((3, 4), (5,), ())):
    rng = np.random.default_rng(seed)
    ps = []
    for s in shapes:
        p = ember.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
        p.grad = ember.tensor(rng.standard_normal(s).astype(np.float32))
        ps.append(p)
    return ps


@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_against_numpy(norm_type, max_norm):
    ps = _params_with_grads()
    gs = [p.grad.numpy().copy().ravel() for p in ps]
    flat = np.concatenate(gs)
    total = np.abs(flat).max() if norm_type == math.inf else (
        (np.abs(flat) ** norm_type).sum() ** (1 / norm_type))
    out = utils.clip_grad_norm_(ps, max_norm, norm_type=norm_type)
    assert out.dim() == 0
    assert out.item() == pytest.approx(total, rel=1e-5)
    coef = min(1.0, max_norm / (total + 1e-6))
    for p, g in zip(ps, gs):
        np.testing.assert_allclose(p.grad.numpy().ravel(), g * coef, rtol=1e-5)


def test_clip_grad_norm_edge_cases():
    p = ember.ones(3, requires_grad=True)
    assert utils.clip_grad_norm_([p], 1.0).item() == 0.0  # no gradients
    p.grad = ember.tensor([3.0, 4.0, 0.0])
    assert utils.clip_grad_norm_(p, 1.0).item() == pytest.approx(5.0)  # a single tensor
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8, 0.0], rtol=1e-5)
    p.grad = ember.tensor([float("nan"), 1.0, 0.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    utils.clip_grad_norm_((q for q in [p]), 1.0, foreach=True)  # generators are accepted
    with pytest.warns(FutureWarning):
        utils.clip_grad_norm([p], 1.0)


def test_clip_grad_norm_torch_parity():
    torch = pytest.importorskip("torch")
    ps = _params_with_grads(1)
    tps = [torch.tensor(p.detach().numpy(), requires_grad=True) for p in ps]
    for tp, p in zip(tps, ps):
        tp.grad = torch.tensor(p.grad.numpy())
    for nt in (2.0, math.inf, 0.5):
        a = utils.clip_grad_norm_(ps, 0.3, nt).item()
        b = torch.nn.utils.clip_grad_norm_(tps, 0.3, nt).item()
        assert a == pytest.approx(b, rel=1e-5)
        for p, tp in zip(ps, tps):
            np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_value():
    ps = _params_with_grads(2)
    gs = [p.grad.numpy().copy() for p in ps]
    assert utils.clip_grad_value_(ps, 0.5) is None
    for p, g in zip(ps, gs):
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(g, -0.5, 0.5))


def test_parameters_vector_round_trip():
    ps = _params_with_grads(3)
    vec = utils.parameters_to_vector(ps)
    assert vec.shape == (18,)
    np.testing.assert_array_equal(vec.detach().numpy(),
                                  np.concatenate([p.detach().numpy().ravel() for p in ps]))
    utils.vector_to_parameters(vec * 2, ps)
    np.testing.assert_allclose(utils.parameters_to_vector(ps).detach().numpy(),
                               vec.detach().numpy() * 2)
    with pytest.raises(TypeError, match="expected ember.Tensor, but got: list"):
        utils.vector_to_parameters([1.0], ps)
    with pytest.raises(RuntimeError, match="18 elements"):
        utils.vector_to_parameters(ember.ones(5), ps)


def test_parameters_to_vector_is_differentiable():
    ps = _params_with_grads(4, ((2,), (3,)))
    for p in ps:
        p.grad = None
    (utils.parameters_to_vector(ps) * ember.arange(5.0)).sum().backward()
    np.testing.assert_allclose(ps[1].grad.numpy(), [2.0, 3.0, 4.0])


def _seqs():
    return [ember.tensor(np.arange(n * 2, dtype=np.float32).reshape(n, 2) + 10 * n)
            for n in (2, 4, 1)]


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence(batch_first, side):
    seqs = _seqs()
    out = rnn.pad_sequence(seqs, batch_first=batch_first, padding_value=-1.0, padding_side=side)
    want = np.full((3, 4, 2), -1.0, np.float32)
    for i, s in enumerate(seqs):
        n = s.shape[0]
        if side == "right":
            want[i, :n] = s.numpy()
        else:
            want[i, 4 - n:] = s.numpy()
    if not batch_first:
        want = want.transpose(1, 0, 2)
    np.testing.assert_array_equal(out.numpy(), want)
    with pytest.raises(ValueError, match="padding_side"):
        rnn.pad_sequence(seqs, padding_side="up")


@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_pad_round_trip(batch_first):
    seqs = _seqs()
    padded = rnn.pad_sequence(seqs, batch_first=batch_first)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        rnn.pack_padded_sequence(padded, [2, 4, 1], batch_first=batch_first)
    packed = rnn.pack_padded_sequence(padded, ember.tensor([2, 4, 1]), batch_first=batch_first,
                                      enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 2, 1, 1]
    assert packed.sorted_indices.tolist() == [1, 0, 2]
    assert packed.unsorted_indices.tolist() == [1, 0, 2]
    # time-major, longest first
    want = np.concatenate([seqs[1].numpy()[0:1], seqs[0].numpy()[0:1], seqs[2].numpy()[0:1],
                           seqs[1].numpy()[1:2], seqs[0].numpy()[1:2],
                           seqs[1].numpy()[2:3], seqs[1].numpy()[3:4]])
    np.testing.assert_array_equal(packed.data.numpy(), want)
    out, lengths = rnn.pad_packed_sequence(packed, batch_first=batch_first, total_length=6)
    assert lengths.tolist() == [2, 4, 1]
    assert out.shape == ((3, 6, 2) if batch_first else (6, 3, 2))
    np.testing.assert_array_equal(out.numpy()[:, :4] if batch_first else out.numpy()[:4],
                                  padded.numpy())
    with pytest.raises(ValueError, match="total_length"):
        rnn.pad_packed_sequence(packed, total_length=2)
    back = rnn.unpack_sequence(packed)
    for a, b in zip(back, seqs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_pack_sequence_and_gradient():
    seqs = [ember.ones(3, 2, requires_grad=True), ember.ones(2, 2, requires_grad=True)]
    packed = rnn.pack_sequence(seqs)
    assert packed.batch_sizes.tolist() == [2, 2, 1] and packed.sorted_indices is None
    (packed.data * 2).sum().backward()
    np.testing.assert_array_equal(seqs[1].grad.numpy(), np.full((2, 2), 2.0))
    with pytest.raises(RuntimeError, match="greater than 0"):
        rnn.pack_padded_sequence(ember.ones(3, 2), [3, 0])


def test_rnn_torch_parity():
    torch = pytest.importorskip("torch")
    seqs = _seqs()
    lengths = [2, 4, 1]
    padded = rnn.pad_sequence(seqs, batch_first=True)
    packed = rnn.pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
    tpadded = torch.nn.utils.rnn.pad_sequence([torch.tensor(s.numpy()) for s in seqs],
                                              batch_first=True)
    tpacked = torch.nn.utils.rnn.pack_padded_sequence(tpadded, lengths, batch_first=True,
                                                      enforce_sorted=False)
    np.testing.assert_array_equal(packed.data.numpy(), tpacked.data.numpy())
    assert packed.batch_sizes.tolist() == tpacked.batch_sizes.tolist()
    out, lens = rnn.pad_packed_sequence(packed, padding_value=7.0)
    tout, tlens = torch.nn.utils.rnn.pad_packed_sequence(tpacked, padding_value=7.0)
    np.testing.assert_array_equal(out.numpy(), tout.numpy())
    assert lens.tolist() == tlens.tolist()
