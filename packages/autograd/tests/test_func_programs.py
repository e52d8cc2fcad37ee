"""The programs of torch.func's tutorials (per-sample gradients of a CNN, model ensembling,
the empirical neural tangent kernel), written once for a library module and run on ember: checked
against plain autograd loops (no torch needed) and, where torch is installed, against torch.func
with the same weights."""

from __future__ import annotations

import numpy as np
import pytest

import ember

enn = pytest.importorskip("ember.nn")
import ember.nn.functional as eF  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.standard_normal((6, 1, 8, 8))
Y = RNG.integers(0, 10, 6)
XM = RNG.standard_normal((5, 6))


def cnn_class(nn, F):
    class SimpleCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, 1)
            self.conv2 = nn.Conv2d(4, 8, 3, 1)
            self.fc1 = nn.Linear(8 * 2 * 2, 16)
            self.fc2 = nn.Linear(16, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = F.relu(self.fc1(x.flatten(1)))
            return F.log_softmax(self.fc2(x), dim=1)

    return SimpleCNN


def mlp_class(nn, F):
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(6, 8)
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x)))

    return MLP


def seeded(lib, models, seed):
    """The same float64 weights in every library: drawn with NumPy in parameter order."""
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for m in models:
            m.double()
            for p in m.parameters():
                p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)) * 0.3))
    return models


def per_sample_grads(lib, F, func, model):
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def loss(p, b, x, y):
        return F.nll_loss(func.functional_call(model, (p, b), (x.unsqueeze(0),)), y.unsqueeze(0))

    return func.vmap(func.grad(loss), in_dims=(None, None, 0, 0))(
        params, buffers, lib.tensor(X), lib.tensor(Y))


def ensemble(lib, func, models):
    params, buffers = func.stack_module_state(models)
    out = func.vmap(lambda p, b, x: func.functional_call(models[0], (p, b), (x,)),
                    in_dims=(0, 0, None))(params, buffers, lib.tensor(XM))
    out.pow(2).sum().backward()
    return out, params


def ntk(lib, func, model):
    params = {k: v.detach() for k, v in model.named_parameters()}

    def f(p, x):
        return func.functional_call(model, p, (x.unsqueeze(0),)).squeeze(0)

    j1 = func.vmap(func.jacrev(f), (None, 0))(params, lib.tensor(XM[:3]))
    j2 = func.vmap(func.jacrev(f), (None, 0))(params, lib.tensor(XM[3:]))
    return sum(lib.einsum("Naf,Mbf->NMab", a.flatten(2), b.flatten(2))
               for a, b in zip(j1.values(), j2.values()))


def test_per_sample_gradients_equal_a_loop_of_backward():
    model = seeded(ember, [cnn_class(enn, eF)()], 1)[0]
    got = per_sample_grads(ember, eF, ember.func, model)
    for i in range(len(Y)):
        model.zero_grad()
        eF.nll_loss(model(ember.tensor(X[i:i + 1])), ember.tensor(Y[i:i + 1])).backward()
        for k, p in model.named_parameters():
            np.testing.assert_allclose(got[k][i].numpy(), p.grad.numpy(), rtol=1e-10,
                                       atol=1e-13)


def test_ensemble_equals_each_model_and_its_gradients():
    cls = mlp_class(enn, eF)
    models = seeded(ember, [cls() for _ in range(3)], 2)
    out, params = ensemble(ember, ember.func, models)
    x = ember.tensor(XM)
    for i, m in enumerate(models):
        y = m(x)
        np.testing.assert_allclose(out[i].detach().numpy(), y.detach().numpy(), rtol=1e-12)
        y.pow(2).sum().backward()
        for k, p in m.named_parameters():
            np.testing.assert_allclose(params[k].grad[i].numpy(), p.grad.numpy(), rtol=1e-10)


def test_ntk_equals_products_of_loop_jacobians():
    model = seeded(ember, [mlp_class(enn, eF)()], 3)[0]
    k = ntk(ember, ember.func, model)
    assert tuple(k.shape) == (3, 2, 3, 3)
    names = [n for n, _ in model.named_parameters()]

    def jac(x):  # rows of d out / d params by ordinary backward, one output at a time
        rows = []
        for a in range(3):
            model.zero_grad()
            model(ember.tensor(x))[a].backward()
            rows.append(np.concatenate([model.get_parameter(n).grad.numpy().ravel()
                                        for n in names]))
        return np.stack(rows)

    for n in range(3):
        for m in range(2):
            np.testing.assert_allclose(k[n, m].detach().numpy(),
                                       jac(XM[n]) @ jac(XM[3 + m]).T, rtol=1e-10)


def test_tutorial_programs_match_torch():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.func")
    tF = torch.nn.functional

    tcnn = seeded(torch, [cnn_class(torch.nn, tF)()], 1)[0]
    ecnn = seeded(ember, [cnn_class(enn, eF)()], 1)[0]
    gt = per_sample_grads(torch, tF, torch.func, tcnn)
    ge = per_sample_grads(ember, eF, ember.func, ecnn)
    for k in gt:
        np.testing.assert_allclose(ge[k].numpy(), gt[k].numpy(), rtol=1e-10, atol=1e-13)
    tcls, ecls = mlp_class(torch.nn, tF), mlp_class(enn, eF)
    ot, pt = ensemble(torch, torch.func, seeded(torch, [tcls() for _ in range(3)], 2))
    oe, pe = ensemble(ember, ember.func, seeded(ember, [ecls() for _ in range(3)], 2))
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-12)
    for k in pt:
        np.testing.assert_allclose(pe[k].grad.numpy(), pt[k].grad.numpy(), rtol=1e-10)
    kt = ntk(torch, torch.func, seeded(torch, [tcls()], 3)[0])
    ke = ntk(ember, ember.func, seeded(ember, [ecls()], 3)[0])
    np.testing.assert_allclose(ke.detach().numpy(), kt.numpy(), rtol=1e-10)
