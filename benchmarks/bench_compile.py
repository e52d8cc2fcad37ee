"""ember.compile beside eager ember, torch eager and torch.compile (CPU): ratios.

Three models, inference (no_grad) and a training step (forward, mean-square or cross-entropy
loss, backward), with the same weights in both libraries:
  1. a GELU MLP: x + fc2(gelu_tanh(fc1(x))), the tanh GELU written out as in GPT-2's code
     (``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3))``): elementwise-heavy;
  2. a transformer block: LayerNorm, causal-free multi-head attention (softmax), residuals, and the
     GELU MLP: elementwise-heavy in its MLP;
  3. the digits CNN of examples/train_digits.py on scikit-learn's digits: convolutions and
     pooling, nothing much to fuse (no target).
The compiled model is ``ember`` in the tables; the peers are eager ember (target >= 1.5 for the
elementwise-heavy models), torch eager, and torch.compile where it works on this machine (its
failure is printed otherwise). The first call of each compiled model (capture, code generation,
C++ compilation) is timed on its own with an empty kernel cache and printed. Last, the two
elementwise-heavy models' matrix products are timed alone with the models' shapes: fusion leaves
them as they are, so eager time over theirs is the ceiling of what fusion can give (printed).

    python benchmarks/bench_compile.py [--quick] [--smoke] [--json PATH] [--threads N] [--no-torch]
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

import _harness as H  # noqa: E402
import numpy as np  # noqa: E402

import ember  # noqa: E402

TARGET = 1.5  # compiled / eager ember, elementwise-heavy models


def gelu_tanh(lib, x):
    return 0.5 * x * (1.0 + lib.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def make_models(lib):
    nn = lib.nn
    F = lib.nn.functional

    class GeluMLP(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.fc1 = nn.Linear(d, h)
            self.fc2 = nn.Linear(h, d)

        def forward(self, x):
            return x + self.fc2(gelu_tanh(lib, self.fc1(x)))

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.ln2 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.mlp = GeluMLP(d, 4 * d)
            self.heads = heads

        def forward(self, x):
            b, t, d = x.shape
            hd = d // self.heads
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q = q.view(b, t, self.heads, hd).transpose(1, 2)
            k = k.view(b, t, self.heads, hd).transpose(1, 2)
            v = v.view(b, t, self.heads, hd).transpose(1, 2)
            att = F.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd)), dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, d)
            x = x + self.proj(y)
            return self.mlp(self.ln2(x))

    return GeluMLP, Block


def _copy_weights(src, dst):
    import torch
    with torch.no_grad():
        for (_, p), (_, q) in zip(src.named_parameters(), dst.named_parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy().copy()))


def _torch_digit_net(torch):
    nn = torch.nn

    class DigitNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
            self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
            self.pool = nn.MaxPool2d(2)
            self.relu = nn.ReLU()
            self.fc1 = nn.Linear(32 * 2 * 2, 64)
            self.fc2 = nn.Linear(64, 10)

        def forward(self, x):
            x = self.pool(self.relu(self.conv1(x)))
            x = self.pool(self.relu(self.conv2(x)))
            x = x.reshape(x.shape[0], -1)
            return self.fc2(self.relu(self.fc1(x)))

    return DigitNet()


def _first_call(fn, *args):
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def bench_model(name, e_model, t_model, x_np, loss_kind, target, y_np=None):
    """Rows for inference and a training step of one model; returns (rows, first-call times,
    the median seconds by kind ("inference", "training step") and runner)."""
    torch = H.torch
    x = ember.tensor(x_np)
    y = None if y_np is None else ember.tensor(y_np)
    compiled = ember.compile(e_model)
    first = {}

    def e_loss(model):
        out = model(x)
        if loss_kind == "ce":
            return ember.nn.functional.cross_entropy(out, y)
        return (out * out).mean()

    def e_step(model):
        e_model.zero_grad(set_to_none=True)
        e_loss(model).backward()

    with ember.no_grad():
        first["ember inference"] = _first_call(compiled, x)
    first["ember training"] = _first_call(e_step, compiled)
    with ember.no_grad():
        fns = {"compiled": lambda: compiled(x), "eager": lambda: e_model(x)}
        ref = e_model(x).numpy()
        np.testing.assert_allclose(compiled(x).numpy(), ref, rtol=1e-4,
                                   atol=1e-5 * np.abs(ref).max())
    t_compiled = None
    note = "torch not installed"
    if torch is not None:
        tx = torch.from_numpy(x_np)
        ty = None if y_np is None else torch.from_numpy(y_np)
        _copy_weights(e_model, t_model)
        try:
            t_compiled = torch.compile(t_model)
            with torch.no_grad():
                first["torch.compile inference"] = _first_call(t_compiled, tx)
            note = ""
        except Exception as e:  # noqa: BLE001 - torch.compile needs a working toolchain
            t_compiled, note = None, f"torch.compile failed: {type(e).__name__}: " \
                                     f"{str(e).splitlines()[0][:80]}"

    inference = dict(fns)
    if torch is not None:
        inference["torch"] = lambda: t_model(tx)
        if t_compiled is not None:
            inference["torch.compile"] = lambda: t_compiled(tx)
    with ember.no_grad():
        if torch is not None:
            with torch.no_grad():
                t_inf = H.measure_all(inference)
        else:
            t_inf = H.measure_all(inference)

    training = {"compiled": lambda: e_step(compiled), "eager": lambda: e_step(e_model)}
    if torch is not None:
        def t_step(model):
            t_model.zero_grad(set_to_none=True)
            out = model(tx)
            loss = torch.nn.functional.cross_entropy(out, ty) if loss_kind == "ce" \
                else (out * out).mean()
            loss.backward()
        training["torch"] = lambda: t_step(t_model)
        if t_compiled is not None:
            try:
                first["torch.compile training"] = _first_call(t_step, t_compiled)
                training["torch.compile"] = lambda: t_step(t_compiled)
            except Exception as e:  # noqa: BLE001
                note = f"torch.compile training failed: {type(e).__name__}"
    t_train = H.measure_all(training)

    rows = []
    for kind, t in (("inference", t_inf), ("training step", t_train)):
        case = f"{name}, {kind}"
        rows.append(H.Row(case, t["compiled"], "ember eager", t["eager"], target))
        rows.append(H.Row(case, t["compiled"], "torch eager", t.get("torch"), None,
                          "" if torch is not None else "torch not installed"))
        rows.append(H.Row(case, t["compiled"], "torch.compile", t.get("torch.compile"), None,
                          "" if "torch.compile" in t else note or "torch.compile did not run"))
    return rows, first, {"inference": t_inf, "training step": t_train}


def matmul_floor(products):
    """How long a model's matrix products alone take, with the model's shapes: (inference,
    training step). ``products`` holds (A's shape, B's shape, whether A's gradient is wanted)
    for each product C = A @ B of the forward; a training step also computes dB = A^T @ dC (every
    B here is a weight or depends on one) and, where wanted, dA = dC @ B^T. Fusion does not touch
    these, so a step's eager time over them is the most any fusion can gain (Amdahl)."""
    rng = np.random.default_rng(1)

    def m(*shape):
        return ember.tensor(rng.standard_normal(shape).astype(np.float32))

    forward, backward = [], []
    for sa, sb, wants_da in products:
        a, w = m(*sa), m(*sb)
        g = m(*sa[:-1], sb[-1])
        forward.append((a, w))
        backward.append((a.transpose(-2, -1), g))
        if wants_da:
            backward.append((g, w.transpose(-2, -1)))

    def run(pairs):
        def go():
            for x, y in pairs:
                ember.matmul(x, y)
        return go
    t = H.measure_all({"inference": run(forward), "training": run(forward + backward)})
    return t["inference"], t["training"]


def mlp_products(d, h, batch):
    return [((batch, d), (d, h), False), ((batch, h), (h, d), True)]  # (the input needs no grad)


def block_products(d, heads, b, t):
    """qkv, the attention's two batched products, proj, fc1, fc2 (every A depends on a
    parameter, through ln1)."""
    n, hd, bh = b * t, d // heads, b * heads
    return [((n, d), (d, 3 * d), True), ((bh, t, hd), (bh, hd, t), True),
            ((bh, t, t), (bh, t, hd), True), ((n, d), (d, d), True),
            ((n, d), (d, 4 * d), True), ((n, 4 * d), (4 * d, d), True)]


def floor_lines(model, times, floors):
    """The model's lines of the fusion ceiling: its matrix products' time beside its steps."""
    lines = []
    for kind, floor in zip(("inference", "training step"), floors):
        eager, compiled = times[kind]["eager"], times[kind]["compiled"]
        lines.append(f"  {model}, {kind}: matrix products alone {H.fmt_time(floor)}, eager "
                     f"{H.fmt_time(eager)} ({floor / eager:.0%} of it), compiled "
                     f"{H.fmt_time(compiled)}: fusion can give at most {eager / floor:.2f}x")
    return lines


def main() -> int:
    s = H.setup(__doc__.splitlines()[0])
    with tempfile.TemporaryDirectory(prefix="ember-compile-bench-") as cache:
        os.environ["EMBER_COMPILE_CACHE_DIR"] = cache  # first calls compile from scratch
        print(f"kernel cache: a fresh folder ({cache}), removed at the end\n")
        return run_all(s)


def run_all(s) -> int:
    torch = H.torch
    small = s.smoke
    rng = np.random.default_rng(0)
    rows, firsts = [], {}

    EMLP, EBlock = make_models(ember)
    d, h, batch = (16, 32, 4) if small else (256, 1024, 256)
    t_mlp = None
    if torch is not None:
        TMLP, TBlock = make_models(torch)
        t_mlp = TMLP(d, h)
    r, f, times = bench_model(f"GELU MLP {d}-{h}-{d}, batch {batch}", EMLP(d, h), t_mlp,
                              rng.standard_normal((batch, d)).astype(np.float32), "mse", TARGET)
    rows += r
    firsts["GELU MLP"] = f
    floors = {"GELU MLP": matmul_floor(mlp_products(d, h, batch))}
    ceiling = floor_lines("GELU MLP", times, floors["GELU MLP"])

    d, heads, b, t = (16, 2, 2, 4) if small else (128, 4, 8, 64)
    t_block = TBlock(d, heads) if torch is not None else None
    r, f, times = bench_model(f"transformer block d={d}, {heads} heads, {b}x{t} tokens",
                              EBlock(d, heads), t_block,
                              rng.standard_normal((b, t, d)).astype(np.float32), "mse", TARGET)
    rows += r
    firsts["transformer block"] = f
    floors["transformer block"] = matmul_floor(block_products(d, heads, b, t))
    ceiling += floor_lines("transformer block", times, floors["transformer block"])

    from train_digits import DigitNet
    try:
        from sklearn.datasets import load_digits
        digits = load_digits()
        images = (digits.images / 16.0).astype(np.float32)[:, None]
        labels = digits.target.astype(np.int64)
    except ImportError:  # scikit-learn is optional: random images of the same shape
        images = rng.random((1797, 1, 8, 8), dtype=np.float32)
        labels = rng.integers(0, 10, 1797)
    n = 16 if small else 256
    r, f, _ = bench_model(f"digits CNN, batch {n}", DigitNet(),
                          _torch_digit_net(torch) if torch is not None else None,
                          np.ascontiguousarray(images[:n]), "ce", None,
                          np.ascontiguousarray(labels[:n]))
    rows += r
    firsts["digits CNN"] = f

    H.report("ember.compile (ember = compiled ember; target: >= 1.5x eager ember on the "
             "elementwise-heavy models)", rows)
    print("first call (capture + code generation + C++ compilation, empty cache):")
    for model, f in firsts.items():
        print(f"  {model}: " + ", ".join(f"{k} {v:.2f} s" for k, v in f.items()))
    print("\nthe ceiling: the elementwise-heavy models' matrix products (which fusion leaves as "
          "they are) timed alone")
    print("\n".join(ceiling) + "\n")
    H.summary()
    H.save_json({"first_call_seconds": firsts, "matmul_floor_seconds": floors})
    return 0


if __name__ == "__main__":
    sys.exit(main())
