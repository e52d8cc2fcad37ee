"""The PyTorch paper's Listings 1 and 2 (Paszke et al., 2019, section 4.1) run on ember.

The listings are kept as printed, with `torch` replaced by `ember`. Two misprints of the paper
are fixed where a program needs them to run at all, and only there:
- Listing 1 feeds the 4-d conv output ``t1`` into a ``torch.mm``-based layer: PyTorch raises on it
  too (tested below); the runnable variant flattens ``t2`` (the relu output) first.
- Listing 2 lacks a closing parenthesis in ``loss(discriminator(fake.detach(), fake_label)``.
"""

import math
import warnings

import pytest

import ember
from ember import nn, optim
from ember.nn import Module

# ---------------------------------------------------------------- Listing 1 (verbatim)


class LinearLayer(Module):
    def __init__(self, in_sz, out_sz):
        super().__init__()
        t1 = ember.randn(in_sz, out_sz)
        self.w = nn.Parameter(t1)
        t2 = ember.randn(out_sz)
        self.b = nn.Parameter(t2)

    def forward(self, activations):
        t = ember.mm(activations, self.w)
        return t + self.b


class FullBasicModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 128, 3)
        self.fc = LinearLayer(128, 10)

    def forward(self, x):
        t1 = self.conv(x)
        t2 = nn.functional.relu(t1)  # noqa: F841 (the paper's misprint)
        t3 = self.fc(t1)
        return nn.functional.softmax(t3)


# The same model with the paper's misprint fixed (relu output, flattened to (N, 128)).
class FixedBasicModel(FullBasicModel):
    def forward(self, x):
        t1 = self.conv(x)
        t2 = nn.functional.relu(t1)
        t3 = self.fc(t2.flatten(1))
        return nn.functional.softmax(t3)


def test_listing1_layer_parameters():
    ember.manual_seed(0)
    model = FullBasicModel()
    names = dict(model.named_parameters())
    assert set(names) == {"conv.weight", "conv.bias", "fc.w", "fc.b"}
    assert tuple(names["fc.w"].shape) == (128, 10) and tuple(names["fc.b"].shape) == (10,)
    assert all(p.requires_grad for p in model.parameters())
    out = model.fc(ember.randn(4, 128))
    assert tuple(out.shape) == (4, 10)


def test_listing1_as_printed_fails_like_pytorch():
    ember.manual_seed(0)
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        FullBasicModel()(ember.randn(2, 1, 3, 3))


def test_listing1_as_printed_fails_in_pytorch_too():
    torch = pytest.importorskip("torch")

    class TLinear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(128, 10))

        def forward(self, a):
            return torch.mm(a, self.w)

    with pytest.raises(RuntimeError, match="self must be a matrix"):
        TLinear()(torch.nn.Conv2d(1, 128, 3)(torch.randn(2, 1, 3, 3)))


def test_listing1_fixed_trains():
    ember.manual_seed(0)
    model = FixedBasicModel()
    x = ember.randn(8, 1, 3, 3)
    target = ember.randint(0, 10, (8,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns on softmax without dim=
        probs = model(x)
        assert tuple(probs.shape) == (8, 10)
        assert ember.allclose(probs.sum(1), ember.ones(8), atol=1e-5)
        opt = optim.SGD(model.parameters(), lr=0.1)
        losses = []
        for _ in range(5):
            opt.zero_grad()
            loss = nn.functional.nll_loss(ember.log(model(x) + 1e-9), target)
            loss.backward()
            assert model.fc.w.grad is not None and model.conv.weight.grad is not None
            opt.step()
            losses.append(float(loss))
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < losses[0]


# ---------------------------------------------------------------- Listing 2

NOISE = 4


def create_discriminator():
    return nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1), nn.Sigmoid())


def create_generator():
    return nn.Sequential(nn.Linear(NOISE, 16), nn.ReLU(), nn.Linear(16, 2))


def get_noise():
    return ember.randn(32, NOISE)


loss = nn.BCELoss()
real_label = ember.ones(32, 1)
fake_label = ember.zeros(32, 1)


def _snapshot(model):
    return [p.detach().clone() for p in model.parameters()]


def _changed(model, before):
    return [not ember.equal(p.detach(), b) for p, b in zip(model.parameters(), before)]


def test_listing2_gan_step():
    ember.manual_seed(0)
    # verbatim (with the closing parenthesis restored); zero_grad calls added around the
    # step, as any real training loop has them.
    discriminator = create_discriminator()
    generator = create_generator()
    optimD = optim.Adam(discriminator.parameters())
    optimG = optim.Adam(generator.parameters())

    record = {}

    def step(real_sample):
        # (1) Update Discriminator
        errD_real = loss(discriminator(real_sample), real_label)
        errD_real.backward()
        fake = generator(get_noise())
        errD_fake = loss(discriminator(fake.detach()), fake_label)
        errD_fake.backward()
        # the discriminator's losses reached no generator parameter through .detach()
        record["g_grads_after_D"] = [p.grad for p in generator.parameters()]
        g_before = _snapshot(generator)
        optimD.step()
        record["g_changed_by_optimD"] = _changed(generator, g_before)
        # (2) Update Generator
        errG = loss(discriminator(fake), real_label)
        d_before = _snapshot(discriminator)
        errG.backward()
        optimG.step()
        record["d_changed_by_optimG"] = _changed(discriminator, d_before)
        return float(errD_real), float(errD_fake), float(errG)

    for i in range(5):
        optimD.zero_grad()
        optimG.zero_grad()
        d0, g0 = _snapshot(discriminator), _snapshot(generator)
        real = ember.randn(32, 2) * 0.1 + 2.0
        errs = step(real)
        assert all(math.isfinite(e) and e > 0 for e in errs)
        assert all(g is None for g in record["g_grads_after_D"]), i
        assert not any(record["g_changed_by_optimD"])
        assert not any(record["d_changed_by_optimG"])
        assert all(_changed(discriminator, d0)) and all(_changed(generator, g0))
        assert all(p.grad is not None for p in generator.parameters())


def test_listing2_detach_cuts_the_graph():
    ember.manual_seed(1)
    generator = create_generator()
    discriminator = create_discriminator()
    fake = generator(get_noise())
    d = fake.detach()
    assert not d.requires_grad and fake.requires_grad
    loss(discriminator(d), fake_label).backward()
    assert all(p.grad is None for p in generator.parameters())
    assert all(p.grad is not None for p in discriminator.parameters())
    # without detach the same loss reaches the generator
    loss(discriminator(fake), fake_label).backward()
    assert all(p.grad is not None for p in generator.parameters())
