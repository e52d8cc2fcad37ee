"""Training steps of small models, and optimizer steps, in ember beside PyTorch (CPU).

Each row times one full training step (zero_grad, forward, loss, backward, optimizer.step) on the
same weights and data in both libraries, or one optimizer step over a large parameter set, and
prints torch_time / ember_time (> 1: ember is faster; for a training step this is also the
ratio of samples/s ember / torch). Rows:

- CNN: conv 1->32 3x3, max-pool 2, conv 32->64 3x3, max-pool 2, fc 1600->128->10, 28x28 inputs,
  batch 64, SGD with momentum (target >= 0.8).
- MLP 784-512-512-10, batch 128, SGD with momentum (target >= 0.95).
- LSTM language model (2 layers, 256 hidden, sequence 35, batch 20, 10000-word vocabulary),
  SGD (target >= 0.8).
- Adam and SGD-momentum steps over 10M float32 parameters (10 tensors of 1M): ember's fused
  kernel against torch's default (single-tensor loop) and, for Adam, torch's fused=True.

    python benchmarks/bench_nn.py [--quick] [--smoke] [--json PATH] [--threads N]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402
from bench_core import run_case  # noqa: E402

import ember  # noqa: E402


def sizes() -> dict[str, Any]:
    if H.SETTINGS.smoke:
        return {"cnn_batch": 4, "mlp_batch": 4, "lstm": (5, 2, 16), "opt": (2, 1000)}
    return {"cnn_batch": 64, "mlp_batch": 128, "lstm": (35, 20, 256), "opt": (10, 1_000_000)}


def _copy_weights(tmodel, emodel) -> None:
    """ember's parameters take torch's values (same layer order and shapes)."""
    with ember.no_grad():
        for tp, ep in zip(tmodel.parameters(), emodel.parameters()):
            ep.copy_(ember.tensor(tp.detach().numpy()))


def _trainer(model, loss_fn, opt, x, y):
    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return step


def _cnn(nn):
    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))


def _mlp(nn):
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def _pair(build, shape, batch, requires=("nn.Sequential",)):
    """(ember step, torch step) for a classifier built by build(nn) on inputs of `shape`."""
    torch = H.torch
    if not H.has(ember, *requires):
        return None, None
    import ember.nn as enn
    import ember.optim as eoptim

    x = H.inputs((batch, *shape), seed=0)
    labels = [i % 10 for i in range(batch)]
    em = build(enn)
    estep = _trainer(em, enn.CrossEntropyLoss(), eoptim.SGD(em.parameters(), lr=0.01,
                                                            momentum=0.9),
                     x["ember"], ember.tensor(labels, dtype=ember.int64))
    tstep = None
    if torch:
        torch.manual_seed(0)
        tm = build(torch.nn)
        _copy_weights(tm, em)
        tstep = _trainer(tm, torch.nn.CrossEntropyLoss(),
                         torch.optim.SGD(tm.parameters(), lr=0.01, momentum=0.9),
                         x["torch"], torch.tensor(labels))
    return estep, tstep


def bench_models(sz: dict[str, Any]) -> None:
    rows: list[H.Row] = []
    b = sz["cnn_batch"]
    estep, tstep = _pair(_cnn, (1, 28, 28), b, ("nn.Conv2d", "nn.MaxPool2d", "nn.Sequential"))
    rows += run_case(f"CNN train step, batch {b}, 1x28x28, SGD momentum",
                     {"ember": estep, "torch": tstep}, {"torch": 0.8},
                     requires=("nn.Conv2d", "nn.Sequential", "optim.SGD"), rtol=1e-3,
                     settle=0.2)  # GEMM-heavy: let the other library's BLAS workers stop spinning
    b = sz["mlp_batch"]
    estep, tstep = _pair(_mlp, (784,), b)
    rows += run_case(f"MLP 784-512-512-10 train step, batch {b}, SGD momentum",
                     {"ember": estep, "torch": tstep}, {"torch": 0.95},
                     requires=("nn.Linear", "nn.Sequential", "optim.SGD"), rtol=1e-3,
                     settle=0.2)
    seq, batch, hidden = sz["lstm"]
    rows += run_case(f"LSTM LM train step, 2 x {hidden}, seq {seq}, batch {batch}",
                     {"ember": _lstm_step(ember, seq, batch, hidden),
                      "torch": _lstm_step(H.torch, seq, batch, hidden) if H.torch else None},
                     {"torch": 0.8}, requires=("nn.LSTM", "nn.Embedding", "optim.SGD"),
                     rtol=1e-2, atol=1e-2, settle=0.2)
    H.report("training steps (ratio = samples/s ember / torch)", rows)


def _lstm_step(lib, seq: int, batch: int, hidden: int, vocab: int = 10000):
    """A word-LM step (embedding -> 2-layer LSTM -> linear decoder); None when lib lacks LSTM."""
    if not H.has(lib, "nn.LSTM", "nn.Embedding"):
        return None
    nn = lib.nn
    if lib is not ember:
        lib.manual_seed(0)

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, hidden)
            self.rnn = nn.LSTM(hidden, hidden, 2)
            self.dec = nn.Linear(hidden, vocab)

        def forward(self, x):
            out, _ = self.rnn(self.emb(x))
            return self.dec(out).reshape(-1, vocab)

    model = LM()
    ids = [(i * 7919) % vocab for i in range(seq * batch)]
    x = lib.tensor(ids, dtype=lib.int64).reshape(seq, batch)
    y = lib.tensor(ids[1:] + ids[:1], dtype=lib.int64)
    return _trainer(model, nn.CrossEntropyLoss(), lib.optim.SGD(model.parameters(), lr=0.1), x,
                    y)


def bench_optimizers(sz: dict[str, Any]) -> None:
    torch = H.torch
    rows: list[H.Row] = []
    k, n = sz["opt"]
    total = f"{k * n / 1e6:g}M" if k * n >= 1e6 else str(k * n)

    def params(lib_key: str):
        ps = []
        for i in range(k):
            p = H.inputs((n,), seed=i)[lib_key]
            g = H.inputs((n,), seed=100 + i)[lib_key]
            p.requires_grad_(True)
            p.grad = g
            ps.append(p)
        return ps

    def stepper(opt, ps):
        def step():
            opt.step()
            return ps[0].detach()[:8]
        return step

    import ember.optim as eoptim
    for name, ekw, tkw, target in (("Adam", {}, {}, None),
                                   ("Adam", {}, {"fused": True}, None),
                                   ("SGD", {"momentum": 0.9}, {"momentum": 0.9}, None)):
        eps = params("ember")
        estep = stepper(getattr(eoptim, name)(eps, lr=1e-3, **ekw), eps)
        tstep = None
        if torch:
            tps = params("torch")
            tstep = stepper(getattr(torch.optim, name)(tps, lr=1e-3, **tkw), tps)
        label = f"{name}.step(), {total} float32 in {k} tensors"
        label += ", torch fused=True" if tkw.get("fused") else ", torch default"
        rows += run_case(label, {"ember": estep, "torch": tstep},
                         {"torch": target} if target else {}, rtol=1e-5, atol=1e-6)
    H.report("optimizer steps", rows)


def main(argv: list[str] | None = None) -> int:
    H.setup("bench_nn: training steps and optimizer steps, ember vs PyTorch (CPU)", argv)
    sz = sizes()
    bench_models(sz)
    bench_optimizers(sz)
    H.summary()
    H.save_json({"sizes": {k: list(v) if isinstance(v, tuple) else v for k, v in sz.items()}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
