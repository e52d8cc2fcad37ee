"""A model's state_dict round-trips through ember.save/ember.load, and moves between ember and
PyTorch through safetensors files in both directions, giving the same outputs."""

import numpy as np
import pytest

import ember


def make_model(lib, seed=0):
    """The same small model in ember or torch: conv, batch norm (with buffers), embedding, LSTM,
    layer norm and linear layers."""
    nn = lib.nn
    lib.manual_seed(seed)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.embed = nn.Embedding(12, 6)
            self.rnn = nn.LSTM(6, 8, 2, batch_first=True)
            self.norm = nn.LayerNorm(8)
            self.head = nn.Sequential(nn.Linear(4 * 5 * 5 + 8, 16), nn.Tanh(), nn.Linear(16, 3))

        def forward(self, image, tokens):
            a = self.bn(self.conv(image)).relu().flatten(1)
            out, _ = self.rnn(self.embed(tokens))
            b = self.norm(out[:, -1])
            return self.head(lib.cat([a, b], dim=1))

    return Net()


def _inputs(seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((3, 1, 5, 5)).astype(np.float32), rng.integers(0, 12, (3, 7))


def _run(lib, model):
    image, tokens = _inputs()
    model.eval()
    with lib.no_grad():
        return model(lib.tensor(image), lib.tensor(tokens)).numpy()


def _train_a_bit(lib, model):
    """Change the weights and the batch-norm running statistics away from their defaults."""
    image, tokens = _inputs(seed=2)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    model.train()
    for _ in range(2):
        opt.zero_grad()
        model(lib.tensor(image), lib.tensor(tokens)).pow(2).mean().backward()
        opt.step()


def test_save_load_round_trip(tmp_path):
    model = make_model(ember)
    _train_a_bit(ember, model)
    expected = _run(ember, model)
    path = tmp_path / "model.pt"
    ember.save(model.state_dict(), path)
    state = ember.load(path)
    assert list(state) == list(model.state_dict())
    fresh = make_model(ember, seed=5)
    assert not np.allclose(_run(ember, fresh), expected)
    result = fresh.load_state_dict(state)
    assert not result.missing_keys and not result.unexpected_keys
    np.testing.assert_array_equal(_run(ember, fresh), expected)
    for (k, a), b in zip(model.state_dict().items(), fresh.state_dict().values()):
        assert a.dtype == b.dtype and ember.equal(a, b), k
    assert int(fresh.bn.num_batches_tracked) == 2


def test_torch_safetensors_into_ember(tmp_path):
    torch = pytest.importorskip("torch")
    st_torch = pytest.importorskip("safetensors.torch")
    from ember.utils.safetensors import load_file

    tmodel = make_model(torch)
    _train_a_bit(torch, tmodel)
    path = tmp_path / "torch.safetensors"
    st_torch.save_file(tmodel.state_dict(), str(path))
    emodel = make_model(ember, seed=7)
    result = emodel.load_state_dict(load_file(path))
    assert not result.missing_keys and not result.unexpected_keys
    np.testing.assert_allclose(_run(ember, emodel), _run(torch, tmodel), rtol=1e-5, atol=1e-5)


def test_ember_safetensors_into_torch(tmp_path):
    torch = pytest.importorskip("torch")
    st_torch = pytest.importorskip("safetensors.torch")
    from ember.utils.safetensors import save_file

    emodel = make_model(ember)
    _train_a_bit(ember, emodel)
    path = tmp_path / "ember.safetensors"
    save_file(emodel.state_dict(), path)
    tmodel = make_model(torch, seed=7)
    result = tmodel.load_state_dict(st_torch.load_file(str(path)))
    assert not result.missing_keys and not result.unexpected_keys
    assert tmodel.bn.num_batches_tracked.dtype == torch.int64
    np.testing.assert_allclose(_run(torch, tmodel), _run(ember, emodel), rtol=1e-5, atol=1e-5)
