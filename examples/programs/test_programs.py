"""The programs of this folder (see README.md): each runs a few steps on small synthetic data,
and, where torch is installed, the same file loaded with torch's imports builds the same model;
given ember's initial weights it has the same first loss, the same gradient for every parameter
and the same parameters and buffers after one optimizer step (and the same learning rate after
one scheduler step).

The torch twin of a program is its source with the import lines turned to torch's
(``import ember as torch`` -> ``import torch``, ``ember.nn`` -> ``torch.nn``, ...): the code that
builds and trains the model is the same text in both. Comparisons run in float64 with dropout's
probability 0 (the two random generators draw differently); noise that a program draws itself
(the VAE's ``randn_like``) is the same array given to both.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import ember

HERE = Path(__file__).resolve().parent
RTOL, ATOL = 1e-7, 1e-9  # float64
PROGRAMS = ["mnist_cnn", "vae", "char_gpt", "resnet", "lstm_lm", "dcgan"]
# The tests alternate between ember and torch in one process; torch's OpenMP threads spin between
# its calls by default and then starve ember's threads (a 2-core machine runs this file 4 times
# slower). The setting has to be there before torch is first imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


# --------------------------------------------------------------------------------------------
# running a program


def run_program(name, *args, cwd):
    done = subprocess.run([sys.executable, str(HERE / f"{name}.py"), *map(str, args)], cwd=cwd,
                          env=dict(os.environ), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def save_data(path, **arrays):
    """A data file as the programs' --data reads it: a dict of tensors written by save."""
    ember.save({k: ember.from_numpy(v) for k, v in arrays.items()}, path)
    return path


def test_mnist_cnn_runs_and_resumes(tmp_path):
    rng = np.random.default_rng(0)
    data = save_data(tmp_path / "digits.pt", images=rng.integers(0, 256, (30, 28, 28), np.uint8),
                     labels=rng.integers(0, 10, 30))
    common = ["--data", data, "--batch-size", 8, "--test-batch-size", 10, "--epochs", 1,
              "--log-interval", 2]
    out = run_program("mnist_cnn", *common, "--save-model", "a.pt", cwd=tmp_path)
    assert out.count("Train Epoch: 1") == 2 and "Test set: Average loss" in out
    checkpoint = ember.load(tmp_path / "a.pt")
    assert checkpoint["epoch"] == 1 and checkpoint["scheduler"]["last_epoch"] == 1
    # DataLoader worker processes this time
    out = run_program("mnist_cnn", *common, "--resume", "a.pt", "--dry-run", "--num-workers", 2,
                      cwd=tmp_path)
    assert "Train Epoch: 2" in out and "Train Epoch: 1" not in out


def test_vae_runs(tmp_path):
    images = np.random.default_rng(0).uniform(size=(24, 1, 28, 28)).astype(np.float32)
    out = run_program("vae", "--data", save_data(tmp_path / "x.pt", images=images),
                      "--batch-size", 8, "--epochs", 1, "--hidden", 32, "--save-model", "vae.pt",
                      cwd=tmp_path)
    assert "Epoch: 1 Average loss" in out and "reloaded test loss" in out


def test_char_gpt_runs(tmp_path):
    (tmp_path / "input.txt").write_text("to be or not to be, that is the question. " * 8)
    out = run_program("char_gpt", "--data", "input.txt", "--block-size", 8, "--n-embd", 16,
                      "--sdpa", "--dtype", "bfloat16",
                      "--batch-size", 4, "--max-steps", 6, "--warmup", 2, "--eval-interval", 3,
                      "--sample", 12, "--checkpoint", "gpt.pt", cwd=tmp_path)
    assert out.count("train loss") == 2 and "sample:" in out
    state = ember.load(tmp_path / "gpt.pt")
    assert state["step"] == 6
    # the tied weight is one tensor of the checkpoint, saved once under two names
    assert state["model"]["head.weight"].data_ptr() == state["model"]["tok_emb.weight"].data_ptr()


def test_resnet_runs_and_resumes(tmp_path):
    rng = np.random.default_rng(0)
    data = save_data(tmp_path / "cifar.pt", images=rng.integers(0, 256, (12, 32, 32, 3), np.uint8),
                     labels=rng.integers(0, 10, 12))
    common = ["--data", data, "--batch-size", 4, "--width", 4, "--epochs", 1,
              "--checkpoint", "ckpt.pt"]
    out = run_program("resnet", *common, cwd=tmp_path)
    assert "Train Epoch: 0" in out and (tmp_path / "ckpt.pt").is_file()
    out = run_program("resnet", *common, "--resume", cwd=tmp_path)
    assert "resumed at epoch 1" in out and "Train Epoch: 1" in out


def test_lstm_lm_runs(tmp_path):
    rng = np.random.default_rng(0)
    (tmp_path / "corpus.txt").write_text("\n".join(
        " ".join(f"w{i}" for i in rng.integers(0, 30, rng.integers(3, 10))) for _ in range(40)))
    out = run_program("lstm_lm", "--data", "corpus.txt", "--emsize", 16, "--nhid", 16,
                      "--batch-size", 4, "--bptt", 8, "--epochs", 2, "--log-interval", 2,
                      "--save", "lm.pt", cwd=tmp_path)
    assert "end of epoch 2" in out and "best model" in out


def test_dcgan_runs(tmp_path):
    images = np.random.default_rng(0).uniform(-1, 1, (8, 3, 64, 64)).astype(np.float32)
    out = run_program("dcgan", "--data", save_data(tmp_path / "x.pt", images=images),
                      "--batch-size", 4, "--ngf", 4, "--ndf", 4, "--nz", 8, "--outf", tmp_path,
                      cwd=tmp_path)
    assert out.count("Loss_D") == 2
    assert (tmp_path / "netG_epoch_0.pth").is_file() and (tmp_path / "netD_epoch_0.pth").is_file()


# --------------------------------------------------------------------------------------------
# the same program in torch


_IMPORTS = [
    (re.compile(r"^(\s*)import ember as torch$", re.M), r"\1import torch"),
    (re.compile(r"^(\s*)import ember\.", re.M), r"\1import torch."),
    (re.compile(r"^(\s*)from ember([. ])", re.M), r"\1from torch\2"),
]


def load(name, flavour):
    """examples/programs/<name>.py as a module (not ``__main__``), with ember's imports or, for
    flavour "torch", torch's."""
    path = HERE / f"{name}.py"
    source = path.read_text()
    if flavour == "torch":
        for pattern, replacement in _IMPORTS:
            source = pattern.sub(replacement, source)
        assert "ember" not in re.sub(r"#.*|\"\"\"[\s\S]*?\"\"\"", "", source), name
    module = types.ModuleType(f"program_{flavour}_{name}")
    module.__file__ = str(path)
    module.library = pytest.importorskip("torch") if flavour == "torch" else ember
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def test_checkpoints_cross_between_ember_and_torch(tmp_path, capsys):
    # a checkpoint (model, Adadelta and StepLR states) written by the program under ember
    # resumes under torch, and torch's resumes under ember
    twin = load("mnist_cnn", "torch")
    rng = np.random.default_rng(0)
    data = save_data(tmp_path / "digits.pt", images=rng.integers(0, 256, (24, 28, 28), np.uint8),
                     labels=rng.integers(0, 10, 24))
    common = ["--data", data, "--batch-size", 8, "--test-batch-size", 8, "--epochs", 1]
    run_program("mnist_cnn", *common, "--save-model", "ember.pt", cwd=tmp_path)
    capsys.readouterr()
    twin.main(list(map(str, [*common, "--resume", tmp_path / "ember.pt",
                             "--save-model", tmp_path / "torch.pt"])))
    assert "Train Epoch: 2" in capsys.readouterr().out
    assert twin.library.load(tmp_path / "torch.pt")["scheduler"]["last_epoch"] == 2
    out = run_program("mnist_cnn", *common, "--resume", "torch.pt", cwd=tmp_path)
    assert "Train Epoch: 3" in out


# Small runs of each whole program (float32, dropout on, shuffling, augmentation, sampling)
_SMALL_RUNS = {
    "mnist_cnn": ["--samples", 48, "--batch-size", 8, "--epochs", 2, "--log-interval", 1],
    "vae": ["--samples", 48, "--batch-size", 8, "--epochs", 1, "--hidden", 32,
            "--log-interval", 1],
    "char_gpt": ["--max-steps", 6, "--eval-interval", 2, "--block-size", 8, "--sample", 10],
    "resnet": ["--samples", 16, "--batch-size", 4, "--width", 4, "--epochs", 2,
               "--log-interval", 1],
    "lstm_lm": ["--emsize", 16, "--nhid", 16, "--batch-size", 4, "--epochs", 2,
                "--log-interval", 5],
    "dcgan": ["--samples", 8, "--batch-size", 4, "--ngf", 4, "--ndf", 4, "--nz", 8],
}
_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")


@pytest.mark.parametrize("name", PROGRAMS)
def test_whole_program_prints_what_torch_prints(name, capsys):
    # ember draws torch's random numbers for a seed (initialisation, random data, DataLoader
    # shuffling, dropout masks, augmentation, sampling): the same program under each library,
    # same seed, prints the same log, its numbers equal up to float32 rounding
    printed = {}
    for flavour in ("ember", "torch"):
        module = load(name, flavour)
        capsys.readouterr()
        module.main(list(map(str, _SMALL_RUNS[name])))
        printed[flavour] = capsys.readouterr().out
    ours, theirs = printed["ember"], printed["torch"]
    assert _NUMBER.sub("#", ours) == _NUMBER.sub("#", theirs)
    assert len(_NUMBER.findall(ours)) >= 2
    np.testing.assert_allclose([float(v) for v in _NUMBER.findall(ours)],
                               [float(v) for v in _NUMBER.findall(theirs)], rtol=1e-4, atol=1e-6,
                               err_msg=f"{ours}\n---- torch:\n{theirs}")


def test_torch_twins_differ_only_in_imports():
    # what the comparisons rest on: every line that names ember is an import line
    for name in PROGRAMS:
        code = re.sub(r"\"\"\"[\s\S]*?\"\"\"", "", (HERE / f"{name}.py").read_text())
        for line in code.splitlines():
            if "ember" in line:
                assert re.match(r"\s*(import ember|from ember)", line), (name, line)


def _numpy(t):
    return t.detach().cpu().numpy().copy()


def _no_dropout(model):
    for m in model.modules():
        if type(m).__name__.startswith("Dropout"):
            m.p = 0.0
        if type(m).__name__ in ("LSTM", "GRU", "RNN"):
            m.dropout = 0.0


def _assert_close(ours, theirs, what):
    assert ours.keys() == theirs.keys() and ours, f"{what}: names differ"
    for name, value in ours.items():
        if value is None or theirs[name] is None:
            assert value is None and theirs[name] is None, f"{what} of {name}"
        else:
            np.testing.assert_allclose(value, theirs[name], rtol=RTOL, atol=ATOL,
                                       err_msg=f"{what} of {name}")


def _twins(name, make_model):
    """The model built by both flavours of the program, torch's given ember's weights."""
    torch = pytest.importorskip("torch")
    mods = {f: load(name, f) for f in ("ember", "torch")}
    ember.manual_seed(0)
    torch.manual_seed(0)
    models = {f: make_model(m).double() for f, m in mods.items()}
    models["torch"].load_state_dict({k: torch.from_numpy(_numpy(v))
                                     for k, v in models["ember"].state_dict().items()})
    for model in models.values():
        _no_dropout(model)
    return mods, models


def compare(name, make_model, make_inputs, loss_of, make_optimizer, make_scheduler=None,
            before_step=None):
    """One training step of both twins: loss, every gradient, the state after the step and,
    with make_scheduler, the learning rates after one scheduler step. make_inputs(rng) gives
    numpy arrays."""
    mods, models = _twins(name, make_model)
    arrays = make_inputs(np.random.default_rng(0))
    results = {}
    for flavour, mod in mods.items():
        model = models[flavour]
        inputs = [mod.library.from_numpy(a.copy()) for a in arrays]
        optimizer = make_optimizer(mod, model)
        scheduler = make_scheduler(mod, optimizer) if make_scheduler else None
        optimizer.zero_grad()
        loss = loss_of(mod, model, *inputs)
        loss.backward()
        grads = {n: None if p.grad is None else _numpy(p.grad)
                 for n, p in model.named_parameters()}
        if before_step:
            before_step(mod, model)
        optimizer.step()
        lrs = []
        if scheduler:
            scheduler.step()
            lrs = [group["lr"] for group in optimizer.param_groups]
        results[flavour] = (loss.item(), grads, lrs,
                            {k: _numpy(v) for k, v in model.state_dict().items()})
    (loss, grads, lrs, state), (tloss, tgrads, tlrs, tstate) = results["ember"], results["torch"]
    np.testing.assert_allclose(loss, tloss, rtol=RTOL, atol=ATOL, err_msg="first loss")
    _assert_close(grads, tgrads, "gradient")
    _assert_close(state, tstate, "value after one step")
    np.testing.assert_allclose(lrs, tlrs, rtol=1e-15, err_msg="learning rates")
    return mods


def _clip(norm):
    return lambda m, model: m.library.nn.utils.clip_grad_norm_(model.parameters(), norm)


def test_mnist_cnn_matches_torch():
    compare("mnist_cnn", lambda m: m.Net(),
            lambda rng: [rng.standard_normal((4, 1, 28, 28)), rng.integers(0, 10, 4)],
            lambda m, model, x, y: m.F.nll_loss(model(x), y),
            lambda m, model: m.optim.Adadelta(model.parameters(), lr=1.0),
            lambda m, opt: m.StepLR(opt, step_size=1, gamma=0.7))


def test_vae_matches_torch(monkeypatch):
    torch = pytest.importorskip("torch")
    eps = np.random.default_rng(1).standard_normal((4, 8))
    # reparameterize's noise: the same numbers in both
    monkeypatch.setattr(ember, "randn_like", lambda t: ember.from_numpy(eps.copy()))
    monkeypatch.setattr(torch, "randn_like", lambda t: torch.from_numpy(eps.copy()))

    def loss_of(m, model, x):
        recon, mu, logvar = model(x)
        return m.loss_function(recon, x, mu, logvar)

    compare("vae", lambda m: m.VAE(hidden=32, latent=8),
            lambda rng: [rng.uniform(size=(4, 1, 28, 28))], loss_of,
            lambda m, model: m.optim.Adam(model.parameters(), lr=1e-3))


@pytest.mark.parametrize("sdpa", [False, True], ids=["written_out", "sdpa"])
def test_char_gpt_matches_torch(sdpa):
    mods = compare(
        "char_gpt",
        lambda m: m.GPT(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16, sdpa=sdpa),
        lambda rng: [rng.integers(0, 11, (3, 8)), rng.integers(0, 11, (3, 8))],
        lambda m, model, x, y: model(x, y)[1],
        lambda m, model: model.configure_optimizers(0.1, 1e-3, (0.9, 0.95)),
        lambda m, opt: m.LambdaLR(opt, m.lr_lambda(warmup=2, max_steps=10)),
        before_step=_clip(0.5))  # well below the gradient's norm: the clip acts
    # the program's generation runs (top-k, multinomial) and respects the block size
    ember.manual_seed(0)
    model = mods["ember"].GPT(vocab_size=11, block_size=8, n_embd=16)
    out = model.generate(ember.zeros((1, 1), dtype=ember.long), 12, top_k=3)
    assert tuple(out.shape) == (1, 13) and 0 <= int(out.min()) and int(out.max()) < 11


def test_char_gpt_under_autocast_matches_torch():
    # the program's --dtype bfloat16: each module's output has torch's dtype, the loss and every
    # gradient agree to bfloat16's precision (same weights, float32 parameters)
    mods, models = _twins("char_gpt", lambda m: m.GPT(11, 8, n_layer=2, n_head=2, n_embd=16))
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 11, (3, 8)), rng.integers(0, 11, (3, 8))
    results = {}
    for flavour, m in mods.items():
        model, lib = models[flavour].float(), m.library
        dtypes = []
        for name, module in list(model.named_modules())[1:]:  # the GPT itself gives a pair
            module.register_forward_hook(lambda mod, inputs, out, name=name, record=dtypes.append:
                                         record((name, str(out.dtype).split(".")[-1])))
        with lib.autocast(device_type="cpu", dtype=lib.bfloat16):
            _, loss = model(lib.from_numpy(x), lib.from_numpy(y))
        loss.backward()
        results[flavour] = (loss.item(), dtypes,
                            {n: _numpy(p.grad) for n, p in model.named_parameters()})
    (loss, dtypes, grads), (tloss, tdtypes, tgrads) = results["ember"], results["torch"]
    assert dtypes == tdtypes and ("blocks.0.attn.qkv", "bfloat16") in dtypes
    np.testing.assert_allclose(loss, tloss, rtol=1e-4)
    assert grads.keys() == tgrads.keys()
    for name, g in grads.items():
        scale = np.abs(tgrads[name]).max()
        assert np.abs(g - tgrads[name]).max() <= 3e-2 * scale, f"gradient of {name}"


def test_resnet_matches_torch():
    compare("resnet", lambda m: m.resnet18(num_classes=10, width=4),
            lambda rng: [rng.standard_normal((4, 3, 32, 32)), rng.integers(0, 10, 4)],
            lambda m, model, x, y: m.nn.CrossEntropyLoss()(model(x), y),
            lambda m, model: m.optim.SGD(model.parameters(), lr=0.1, momentum=0.9,
                                         weight_decay=5e-4, nesterov=True),
            lambda m, opt: m.optim.lr_scheduler.MultiStepLR(opt, [1], gamma=0.1))


def test_lstm_lm_matches_torch():
    ntokens, bptt = 30, 6

    def loss_of(m, model, data):
        # two steps of truncated BPTT: the second starts from the first's hidden state,
        # detached, so its gradient stops there
        hidden = model.init_hidden(data.size(1))
        inputs, _ = m.get_batch(data, 0, bptt)
        _, hidden = model(inputs, hidden)
        hidden = m.repackage_hidden(hidden)
        assert all(not h.requires_grad for h in hidden)
        inputs, targets = m.get_batch(data, bptt, bptt)
        output, _ = model(inputs, hidden)
        return m.nn.NLLLoss()(output.view(-1, ntokens), targets)

    compare("lstm_lm", lambda m: m.RNNModel(ntokens, 16, 16, 2, dropout=0.0),
            lambda rng: [rng.integers(0, ntokens, (2 * bptt + 1, 4))], loss_of,
            lambda m, model: m.optim.SGD(model.parameters(), lr=1.0), before_step=_clip(0.25))


def test_dcgan_matches_torch():
    # the program's own train_step: D's two BCE terms and its Adam step, then G's
    def make(m):
        both = m.nn.ModuleDict({"G": m.Generator(nz=8, ngf=4), "D": m.Discriminator(ndf=4)})
        return both.apply(m.weights_init)

    mods, models = _twins("dcgan", make)
    rng = np.random.default_rng(0)
    real, noise = rng.uniform(-1, 1, (4, 3, 64, 64)), rng.standard_normal((4, 8, 1, 1))
    results = {}
    for flavour, m in mods.items():
        G, D = models[flavour]["G"], models[flavour]["D"]
        optimizers = [m.optim.Adam(net.parameters(), lr=2e-4, betas=(0.5, 0.999)) for net in (G, D)]
        losses = m.train_step(G, D, m.nn.BCELoss(), *optimizers,
                              m.library.from_numpy(real.copy()), m.library.from_numpy(noise.copy()))
        results[flavour] = (
            losses, {n: _numpy(p.grad) for n, p in models[flavour].named_parameters()},
            {k: _numpy(v) for k, v in models[flavour].state_dict().items()})
    (losses, grads, state), (tlosses, tgrads, tstate) = results["ember"], results["torch"]
    np.testing.assert_allclose(losses, tlosses, rtol=RTOL, atol=ATOL, err_msg="losses")
    _assert_close(grads, tgrads, "gradient")
    _assert_close(state, tstate, "value after the step")
