"""ember.nn layers beside torch.nn (CPU): forward + backward of one layer or block, same weights
(copied through state_dict) and same inputs, in one process.

Rows: Conv2d+BatchNorm2d+ReLU block, LayerNorm (kernel) and LayerNorm composed from mean/var (the
measurement behind keeping the norm kernels), cross-entropy, LSTM, TransformerEncoderLayer.
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

import ember  # noqa: E402


def sizes() -> dict[str, Any]:
    if H.SETTINGS.smoke:
        return {"conv": (2, 4, 8), "ln": (4, 8, 16), "ce": (16, 10), "lstm": (3, 2, 8, 8),
                "tr": (4, 2, 8, 2)}
    return {"conv": (32, 32, 32), "ln": (64, 256, 128), "ce": (4096, 1000),
            "lstm": (20, 16, 64, 128), "tr": (64, 16, 128, 4)}


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


def main(argv: list[str] | None = None) -> int:
    H.setup("bench_nn_layers: ember.nn layers vs torch.nn (CPU), forward + backward", argv)
    sz = sizes()
    bench_layers(sz)
    H.summary()
    H.save_json({"sizes": {k: list(v) for k, v in sz.items()}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
