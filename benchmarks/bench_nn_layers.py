"""ember.nn layers beside torch.nn (CPU): forward + backward of one layer or block, same weights
(copied through state_dict) and same inputs, in one process.

Rows: Conv2d+BatchNorm2d+ReLU block, LayerNorm (kernel) and LayerNorm composed from mean/var (the
measurement behind keeping the norm kernels), cross-entropy, LSTM, TransformerEncoderLayer; the
nanoGPT (CPU configuration: batch 12, block 64, width 128, 4 heads) layers: GELU (exact and tanh),
LayerNorm, scaled_dot_product_attention (causal) and one whole block; GNMT-like recurrent layers
(LSTM and GRU, hidden 256, seq 20, batch 64, 4 layers for the LSTM).
Ratio torch_time / ember_time (> 1: ember is faster). No targets yet.

    python benchmarks/bench_nn_layers.py [--quick] [--smoke] [--json PATH] [--threads N]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402
from bench_core import run_case  # noqa: E402
from bench_models import gpt_block  # noqa: E402

import ember  # noqa: E402


def sizes() -> dict[str, Any]:
    if H.SETTINGS.smoke:
        return {"conv": (2, 4, 8), "ln": (4, 8, 16), "ce": (16, 10), "lstm": (3, 2, 8, 8),
                "tr": (4, 2, 8, 2), "gpt": (2, 8, 16, 2), "gnmt": (3, 2, 8, 2)}
    # gpt: (batch, block, width, heads); gnmt: (seq, batch, hidden, LSTM layers)
    return {"conv": (32, 32, 32), "ln": (64, 256, 128), "ce": (4096, 1000),
            "lstm": (20, 16, 64, 128), "tr": (64, 16, 128, 4), "gpt": (12, 64, 128, 4),
            "gnmt": (20, 64, 256, 4)}


def _pair(e_mod, t_mod):
    """Copies ember's weights into torch's module (both in training mode, dropout off)."""
    import numpy as np

    torch = H.torch
    if torch is not None:
        sd = {k: torch.from_numpy(np.array(v.numpy(), copy=True))
              for k, v in e_mod.state_dict().items()}
        t_mod.load_state_dict(sd)
    return e_mod, t_mod


def _fb(mod, x):
    """Forward + backward; returns the (detached) output sum to compare."""
    out = mod(x)
    out = out[0] if isinstance(out, tuple) else out
    s = out.sum()
    s.backward()
    return s.detach()


def bench_layers(sz: dict[str, Any]) -> None:
    torch = H.torch
    from ember import nn

    tnn = torch.nn if torch else None
    rows: list[H.Row] = []

    def case(title, e_mod, t_mod, shape, rtol=1e-3, atol=1e-2):
        x = H.inputs(shape, seed=0)
        xe = x["ember"].requires_grad_()
        xt = x["torch"].requires_grad_() if torch else None
        return run_case(title, {"ember": lambda: _fb(e_mod, xe),
                                "torch": (lambda: _fb(t_mod, xt)) if torch else None},
                        {}, rtol=rtol, atol=atol)

    n, c, s = sz["conv"]
    e = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU())
    t = tnn.Sequential(tnn.Conv2d(c, c, 3, padding=1), tnn.BatchNorm2d(c), tnn.ReLU()) \
        if torch else None
    _pair(e, t)
    rows += case(f"Conv2d+BatchNorm2d+ReLU fwd+bwd, {n}x{c}x{s}x{s}", e, t, (n, c, s, s))

    shape = sz["ln"]
    e, t = _pair(nn.LayerNorm(shape[-1]), tnn.LayerNorm(shape[-1]) if torch else None)
    rows += case(f"LayerNorm fwd+bwd, {'x'.join(map(str, shape))}", e, t, shape)

    class ComposedLN(nn.LayerNorm):
        def forward(self, x):
            m = x.mean(-1, keepdim=True)
            v = x.var(-1, correction=0, keepdim=True)
            return (x - m) * (v + self.eps).rsqrt() * self.weight + self.bias

    e2 = ComposedLN(shape[-1])
    rows += case(f"LayerNorm composed from mean/var fwd+bwd, {'x'.join(map(str, shape))}", e2,
                 t, shape)

    sl, b, i, h = sz["lstm"]
    e, t = _pair(nn.LSTM(i, h), tnn.LSTM(i, h) if torch else None)
    rows += case(f"LSTM fwd+bwd, seq {sl}, batch {b}, {i}->{h}", e, t, (sl, b, i))

    sl, b, d, heads = sz["tr"]
    e = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0)
    t = tnn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0) if torch else None
    _pair(e, t)
    rows += case(f"TransformerEncoderLayer fwd+bwd, seq {sl}, batch {b}, d {d}", e, t,
                 (sl, b, d))
    H.report("layers (forward + backward)", rows)
    bench_gpt_layers(sz, case)
    bench_recurrent(sz, case)

    nb, nc = sz["ce"]
    x = H.inputs((nb, nc), seed=1)
    te = ember.arange(nb) % nc
    tt = torch.arange(nb) % nc if torch else None
    xe = x["ember"].requires_grad_()
    xt = x["torch"].requires_grad_() if torch else None

    def ce_e():
        loss = nn.functional.cross_entropy(xe, te, label_smoothing=0.1)
        loss.backward()
        return loss.detach()

    def ce_t():
        loss = torch.nn.functional.cross_entropy(xt, tt, label_smoothing=0.1)
        loss.backward()
        return loss.detach()

    H.report("losses", run_case(f"cross_entropy(label_smoothing=0.1) fwd+bwd, {nb}x{nc}",
                                {"ember": ce_e, "torch": ce_t if torch else None}, {},
                                rtol=1e-4, atol=1e-4))


def bench_gpt_layers(sz: dict[str, Any], case) -> None:
    """The layers of nanoGPT's CPU configuration, each on its real shape."""
    torch = H.torch
    from ember import nn

    tnn = torch.nn if torch else None
    b, t, d, heads = sz["gpt"]
    rows: list[H.Row] = []
    for approximate in ("none", "tanh"):
        e, tm = nn.GELU(approximate), tnn.GELU(approximate) if torch else None
        rows += case(f"GELU(approximate={approximate!r}) fwd+bwd, {b}x{t}x{4 * d}", e, tm,
                     (b, t, 4 * d), rtol=1e-4, atol=1e-3)
    e, tm = _pair(nn.LayerNorm(d), tnn.LayerNorm(d) if torch else None)
    rows += case(f"LayerNorm fwd+bwd, {b}x{t}x{d}", e, tm, (b, t, d))

    class Attention:  # q = k = v: the input, as (batch, heads, block, head width)
        def __init__(self, F):
            self.F = F

        def __call__(self, x):
            return self.F.scaled_dot_product_attention(x, x, x, is_causal=True)

    rows += case(f"scaled_dot_product_attention(is_causal=True) fwd+bwd, {b}x{heads}x{t}x"
                 f"{d // heads}", Attention(nn.functional),
                 Attention(torch.nn.functional) if torch else None, (b, heads, t, d // heads))
    e = gpt_block(nn, nn.functional, d, heads)
    tm = gpt_block(tnn, torch.nn.functional, d, heads) if torch else None
    _pair(e, tm)
    rows += case(f"GPT block (LN, causal attention, LN, GELU MLP) fwd+bwd, {b}x{t}x{d}", e, tm,
                 (b, t, d))
    H.report("nanoGPT layers (forward + backward)", rows)


def bench_recurrent(sz: dict[str, Any], case) -> None:
    """GNMT-like recurrent layers: LSTM/GRU run each layer as one core kernel (_rnn_layer)."""
    torch = H.torch
    from ember import nn

    tnn = torch.nn if torch else None
    sl, b, h, layers = sz["gnmt"]
    rows: list[H.Row] = []
    for name, n_layers in (("LSTM", 1), ("LSTM", layers), ("GRU", 1)):
        e = getattr(nn, name)(h, h, num_layers=n_layers)
        tm = getattr(tnn, name)(h, h, num_layers=n_layers) if torch else None
        _pair(e, tm)
        rows += case(f"{name} fwd+bwd, {n_layers} layer(s), seq {sl}, batch {b}, {h}->{h}", e, tm,
                     (sl, b, h), rtol=1e-3, atol=0.5)
    H.report("recurrent layers (forward + backward)", rows)


def main(argv: list[str] | None = None) -> int:
    H.setup("bench_nn_layers: ember.nn layers vs torch.nn (CPU), forward + backward", argv)
    sz = sizes()
    bench_layers(sz)
    H.summary()
    H.save_json({"sizes": {k: list(v) for k, v in sz.items()}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
