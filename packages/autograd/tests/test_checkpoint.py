"""ember.utils.checkpoint: the same gradients as the plain forward, fewer values kept (measured
exactly with the CPU allocator's count and with weak references to the segment's activations),
the forward's random numbers in the recomputation, and torch's errors and values."""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest

import ember
import ember.autograd as autograd
from ember.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

F64 = ember.float64
MODES = [True, False]


def live() -> int:
    gc.collect()
    return ember.cpu.memory_allocated()


def nbytes(t) -> int:
    return t.numel() * t.element_size()


class Chain:
    """depth tanh(h @ w) layers on (batch, width) float64, weights requiring grad."""

    def __init__(self, depth=4, batch=32, width=64, seed=0):
        ember.manual_seed(seed)
        self.ws = [(ember.randn(width, width, dtype=F64) * 0.1).requires_grad_()
                   for _ in range(depth)]
        self.x = ember.randn(batch, width, dtype=F64).requires_grad_()
        self.seen = []  # weak references to the activations of the last forward

    def segment(self, h):
        for w in self.ws:
            h = (h @ w).tanh()
            self.seen.append(weakref.ref(h))
        return h

    def grads(self, run):
        for t in self.ws + [self.x]:
            t.grad = None
        run().sum().backward()
        return [t.grad.numpy().copy() for t in self.ws + [self.x]]


@pytest.mark.parametrize("reentrant", MODES)
def test_same_gradients_as_without_checkpoint(reentrant):
    c = Chain()
    want = c.grads(lambda: c.segment(c.x))
    got = c.grads(lambda: checkpoint(c.segment, c.x, use_reentrant=reentrant))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("reentrant", MODES)
def test_activations_are_not_kept(reentrant):
    c = Chain(depth=4)
    base = live()
    y = c.segment(c.x)
    plain = live() - base
    del y
    c.seen.clear()
    base = live()
    y = checkpoint(c.segment, c.x, use_reentrant=reentrant)
    held = live() - base
    # without: the 4 tanh outputs (each saved by the next matmul or tanh's own backward)
    assert plain == 4 * nbytes(c.x)
    # with: the output and the random generator's state kept for the replay, nothing else
    assert held == nbytes(y) + nbytes(ember.get_rng_state())
    assert all(r() is None for r in c.seen[:-1])  # every inner activation was freed
    y.sum().backward()
    assert c.x.grad is not None


def test_preserve_rng_state_replays_dropout_masks():
    def drop(h):
        return h * (ember.rand_like(h) > 0.5) * 2.0

    for reentrant in MODES:
        x = ember.ones(200, dtype=F64).requires_grad_()
        y = checkpoint(drop, x, use_reentrant=reentrant)
        y.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())  # the forward's mask
        x.grad = None
        y = checkpoint(drop, x, use_reentrant=reentrant, preserve_rng_state=False)
        y.sum().backward()
        assert not np.array_equal(x.grad.numpy(), y.detach().numpy())


def test_reentrant_refuses_autograd_grad_non_reentrant_allows_it():
    c = Chain(depth=2)
    y = checkpoint(c.segment, c.x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="When use_reentrant=True, torch.utils.checkpoint is "
                                           "incompatible with .grad()"):
        autograd.grad(y.sum(), c.x)
    want = autograd.grad(c.segment(c.x).sum(), c.ws)
    got = autograd.grad(checkpoint(c.segment, c.x, use_reentrant=False).sum(), c.ws)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_non_reentrant_backward_twice_with_retain_graph():
    c = Chain(depth=2)
    y = checkpoint(c.segment, c.x, use_reentrant=False).sum()
    (g1,) = autograd.grad(y, c.x, retain_graph=True)
    (g2,) = autograd.grad(y, c.x)
    np.testing.assert_array_equal(g1.numpy(), g2.numpy())


def test_non_reentrant_kwargs_and_determinism_check():
    x = ember.ones(3, dtype=F64).requires_grad_()
    y = checkpoint(lambda a, scale: (a * scale).exp(), x, scale=2.0, use_reentrant=False)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2.0 * np.ones(3)))
    calls = []

    def changes(a):  # saves one more value on the second run
        calls.append(1)
        return a.exp().exp() if len(calls) > 1 else a.exp()

    y = checkpoint(changes, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="A different number of tensors was saved"):
        y.sum().backward()


def test_argument_errors_and_warning():
    x = ember.ones(2, dtype=F64).requires_grad_()
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed"):
        checkpoint(ember.sin, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        checkpoint(ember.sin, x, use_reentrant=True, foo=1)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(ember.sin, x, use_reentrant=True, debug=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint(ember.sin, x, use_reentrant=False)


@pytest.mark.parametrize("reentrant", MODES)
def test_checkpoint_sequential(reentrant):
    c = Chain(depth=6)
    def layer(w):
        return lambda h: (h @ w).tanh()

    layers = [layer(w) for w in c.ws]
    want = c.grads(lambda: c.segment(c.x))
    got = c.grads(lambda: checkpoint_sequential(layers, 3, c.x, use_reentrant=reentrant))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_checkpoint_sequential_of_nn_sequential_matches_torch():
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as tcp

    nn = pytest.importorskip("ember.nn")
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((8, 8)) * 0.3 for _ in range(4)]
    xn = rng.standard_normal((5, 8))
    e_model = nn.Sequential(*[nn.Linear(8, 8, bias=False) for _ in ws], nn.Tanh())
    t_model = torch.nn.Sequential(*[torch.nn.Linear(8, 8, bias=False) for _ in ws],
                                  torch.nn.Tanh()).double()
    e_model = e_model.double()
    with ember.no_grad():
        for m, w in zip(e_model, ws):
            m.weight.copy_(ember.tensor(w))
    with torch.no_grad():
        for m, w in zip(t_model, ws):
            m.weight.copy_(torch.tensor(w))
    for reentrant in MODES:
        xe = ember.tensor(xn).requires_grad_()
        xt = torch.tensor(xn).requires_grad_()
        checkpoint_sequential(e_model, 2, xe, use_reentrant=reentrant).pow(2).sum().backward()
        tcp.checkpoint_sequential(t_model, 2, xt, use_reentrant=reentrant).pow(2).sum().backward()
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
        for me, mt in zip(list(e_model)[:-1], list(t_model)[:-1]):
            np.testing.assert_allclose(me.weight.grad.numpy(), mt.weight.grad.numpy(),
                                       rtol=1e-12)
            me.weight.grad = None
            mt.weight.grad = None
