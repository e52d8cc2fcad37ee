"""What the graph keeps, measured: a forward holds exactly the values its formulas need (counted
by hand from the gradient table), backward frees them as each node runs unless retain_graph, and
a training loop's memory stays flat from step to step.

Bytes come from ember.cpu.memory_allocated() (the CPU allocator's count of live storages), so the
expectations are exact: no RSS noise, no tolerance to hide a regression in.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import ember
import ember.autograd as autograd

F32 = 4  # bytes per float32 element


def live() -> int:
    gc.collect()
    return ember.cpu.memory_allocated()


def nbytes(*tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


class MLP:
    """Linear layers (addmm with w.t(), as nn.Linear) and a classifier head, with optional layer
    norm and dropout, built from core ops only. ``forward`` returns the mean NLL loss."""

    def __init__(self, batch, width, classes, depth, norm=False, dropout=False, seed=0):
        ember.manual_seed(seed)
        self.batch, self.width, self.classes, self.depth = batch, width, classes, depth
        self.norm, self.dropout = norm, dropout
        self.ws = [(ember.randn(width, width) * 0.05).requires_grad_() for _ in range(depth)]
        self.bs = [ember.zeros(width).requires_grad_() for _ in range(depth)]
        self.gammas = [ember.ones(width).requires_grad_() for _ in range(depth)] if norm else []
        self.betas = [ember.zeros(width).requires_grad_() for _ in range(depth)] if norm else []
        self.head = (ember.randn(classes, width) * 0.05).requires_grad_()
        self.x = ember.randn(batch, width)
        self.y = ember.randint(0, classes, (batch,))

    def params(self):
        return self.ws + self.bs + self.gammas + self.betas + [self.head]

    def forward(self):
        h = self.x
        for i in range(self.depth):
            h = ember.addmm(self.bs[i], h, self.ws[i].t())
            if self.norm:
                h = ember.native_layer_norm(h, [self.width], self.gammas[i], self.betas[i],
                                            1e-5)[0]
            h = ember.relu(h)
            if self.dropout:
                mask = ember.empty(self.batch, self.width).bernoulli_(0.9).div_(0.9)
                h = h * mask
        logp = ember.log_softmax(ember.mm(h, self.head.t()), 1)
        return ember.nll_loss(logp, self.y, None, "mean", -100)

    def saved_bytes(self) -> int:
        """What the gradient table says the forward keeps, beyond the inputs and parameters:
        - addmm(b, h, w.t()) keeps h (w's gradient reads it; x for the first layer, which
          exists already) and not w.t() (read only by h's gradient: x has none);
        - native_layer_norm keeps its input (addmm's output) and its mean and rstd outputs (one
          value per row each, as torch's), which its backward kernel reads;
        - relu keeps its output (without dropout, the next layer keeps the same tensor);
        - h * mask keeps only mask (h's gradient is g * mask; mask has no gradient), and the
          next layer keeps the product;
        - the head's mm keeps h (as addmm), log_softmax its output, nll_loss its input (the
          same output) and the target (exists already)."""
        act = self.batch * self.width * F32
        per_layer = act  # relu's output
        if self.norm:
            per_layer += act + 2 * self.batch * F32  # layer norm's input, mean and rstd
        if self.dropout:
            per_layer += 2 * act  # the mask and the product
        return self.depth * per_layer + self.batch * self.classes * F32


CONFIGS = [dict(norm=False, dropout=False), dict(norm=True, dropout=False),
           dict(norm=True, dropout=True)]


def _cfg_id(c):
    return "+".join(k for k, v in c.items() if v) or "plain"


@pytest.mark.parametrize("cfg", CONFIGS, ids=_cfg_id)
def test_forward_keeps_what_the_formulas_need_and_backward_frees_it(cfg):
    m = MLP(batch=512, width=512, classes=64, depth=6, **cfg)
    before = live()
    loss = m.forward()
    after_forward = live() - before
    assert after_forward == m.saved_bytes() + nbytes(loss)
    loss.backward()
    # the loss is still referenced: its graph is alive, but without its saved values; what is
    # left is the loss and the parameters' gradients
    after_backward = live() - before
    assert after_backward == nbytes(loss) + nbytes(*m.params())
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        loss.backward()


def test_retain_graph_keeps_the_saved_values_until_the_last_backward():
    m = MLP(batch=256, width=256, classes=32, depth=4, norm=True)
    before = live()
    loss = m.forward()
    loss.backward(retain_graph=True)
    grads = nbytes(*m.params())
    assert live() - before == m.saved_bytes() + nbytes(loss) + grads
    first = [p.grad.clone() for p in m.params()]
    loss.backward()
    for p, g in zip(m.params(), first):  # accumulated twice: the same gradient again
        np.testing.assert_allclose(p.grad.numpy(), 2 * g.numpy(), rtol=1e-5, atol=1e-6)
    del first, g
    assert live() - before == nbytes(loss) + grads


def test_autograd_grad_frees_the_saved_values_too():
    m = MLP(batch=256, width=256, classes=32, depth=3)
    before = live()
    loss = m.forward()
    gs = autograd.grad(loss, m.params())
    assert live() - before == nbytes(loss) + nbytes(*gs)


def test_training_loop_memory_is_flat_across_steps():
    m = MLP(batch=512, width=512, classes=64, depth=6, norm=True, dropout=True)
    params = m.params()
    lr = 0.01
    saved = m.saved_bytes()
    act = m.batch * m.width * F32
    base = live()  # parameters and data
    after_step, peaks = [], []
    loss = None
    for _ in range(5):
        for p in params:
            p.grad = None
        ember.cpu.reset_peak_memory_stats()
        loss = m.forward()  # the previous step's loss (and graph) is dropped only here
        loss.backward()
        with ember.no_grad():
            for p in params:
                p.sub_(p.grad * lr)
        peaks.append(ember.cpu.max_memory_allocated() - base)
        after_step.append(live() - base)
    # after every step: the loss and the gradients, nothing of the graph the loss still holds
    assert after_step == [nbytes(loss) + nbytes(*params)] * 5
    # a step's peak is one saved set plus the backward's working set (the gradients, the
    # gradient flowing through the chain, a formula's temporaries: a few activations), far from
    # two saved sets (the previous step's graph alive while the next one is built)
    bound = saved + nbytes(*params) + 4 * act
    assert all(p <= bound for p in peaks), (peaks, bound)
    assert bound < 2 * saved


# ---- which inputs a node keeps ----------------------------------------------------------------


def _held_by_graph(build):
    """Bytes alive after `build()` (which returns the output) beyond the output itself, once
    every other local of the build is gone."""
    before = live()
    out = build()
    return live() - before - nbytes(out), out


def test_product_with_a_constant_keeps_only_the_constant():
    w = ember.randn(1000, requires_grad=True)

    def build():
        h = w * 2.0  # keeps nothing
        mask = ember.ones(1000)
        return h * mask  # h's gradient reads mask; mask needs none, so h is not kept

    held, out = _held_by_graph(build)
    assert held == 1000 * F32
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full(1000, 2.0))


def test_matmul_keeps_only_the_operand_the_wanted_gradient_reads():
    w = ember.randn(64, 32, requires_grad=True)

    def build():
        x = ember.randn(128, 64)
        return ember.matmul(x, w)  # w's gradient reads x: x kept; w would be read by x's

    held, out = _held_by_graph(build)
    assert held == 128 * 64 * F32

    def build_other():
        x = ember.randn(128, 64, requires_grad=True)
        v = ember.randn(64, 32)
        return ember.matmul(x, v)  # x's gradient reads v; x is not read

    held, out = _held_by_graph(build_other)
    assert held == 64 * 32 * F32  # v (the graph holds the leaf x only weakly)


def test_first_linear_layer_does_not_keep_the_weight_transposed():
    # x needs no gradient: addmm keeps x for w's gradient, nothing for x's
    x = ember.randn(64, 16)
    w = ember.randn(8, 16, requires_grad=True)
    b = ember.zeros(8, requires_grad=True)
    y = ember.addmm(b, x, w.t())
    assert sorted(y.grad_fn._saved) == [1]
    y2 = ember.addmm(b, x.requires_grad_(), w.t())
    assert sorted(y2.grad_fn._saved) == [1, 2]


def test_relu_keeps_its_output_not_its_input():
    w = ember.randn(2000, requires_grad=True)

    def build():
        h = w * 3.0
        return ember.relu(h)  # relu's gradient reads its output: h itself is freed

    held, _ = _held_by_graph(build)
    assert held == 0  # the output it keeps is the output we hold


def test_in_place_product_copies_self_only_for_the_other_gradient():
    w = ember.randn(500, requires_grad=True)

    def build(rg):
        h = w * 1.0
        m = ember.full((500,), 2.0, requires_grad=rg)
        return h.mul_(m)

    held, _ = _held_by_graph(lambda: build(False))
    assert held == 500 * F32  # m (read by h's gradient); no copy of h
    held, _ = _held_by_graph(lambda: build(True))
    assert held == 2 * 500 * F32  # m (read by h's gradient) and the copy of h before the op


# ---- correctness of what is kept -----------------------------------------------------------


@pytest.mark.parametrize("op,expected", [("mul_", lambda x, w: x.sum()),
                                         ("div_", lambda x, w: -(x / (w * w)).sum()),
                                         ("pow_", lambda x, w: (x ** w * np.log(x)).sum())])
def test_in_place_op_on_a_tensor_without_grad_keeps_its_old_value(op, expected):
    # x needs no gradient, w does: w's gradient reads x's value from before the op
    xs = np.array([3.0, 1.5, 2.0])
    x = ember.tensor(xs)
    w = ember.tensor(2.0, requires_grad=True)
    getattr(x, op)(w)
    x.sum().backward()
    np.testing.assert_allclose(float(w.grad), expected(xs, 2.0), rtol=1e-6)


def test_saved_tensor_hooks_keep_the_broadcast_reduction():
    a = ember.ones(2, 3, requires_grad=True)
    b = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        h = b.unsqueeze(0)  # (1, 3), broadcast against a in the product
        e = h * a
    e.sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(a.grad.numpy(), [[1.0, 2.0, 3.0]] * 2)


def test_saved_index_is_version_checked_and_released():
    x = ember.randn(4, 5, requires_grad=True)
    idx = ember.tensor([0, 2, 2])
    y = x[idx, 1:3]  # the index (a tuple with a tensor in it) is saved
    idx.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    idx = ember.tensor([0, 2, 2])
    y = x[idx, 1:3]
    y.sum().backward()
    expected = np.zeros((4, 5))
    expected[0, 1:3] = 1
    expected[2, 1:3] = 2
    np.testing.assert_allclose(x.grad.numpy(), expected)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.sum().backward()


def test_double_backward_through_a_chain_that_saved_only_what_it_needs():
    # the second derivative of sum((x * c) @ w) w.r.t. x is 0, w.r.t. x and w mixed is c
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    w = ember.randn(4, 2, dtype=ember.float64, requires_grad=True)
    c = ember.randn(3, 4, dtype=ember.float64)
    y = ember.matmul(x * c, w).sum()
    (gx,) = autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(),
                               c.numpy() * w.detach().numpy().sum(1)[None, :])
    (gw,) = autograd.grad(gx.sum(), w)
    np.testing.assert_allclose(gw.numpy(), np.broadcast_to(c.numpy().sum(0)[:, None], (4, 2)))
