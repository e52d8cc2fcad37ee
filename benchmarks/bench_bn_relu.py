"""Batch norm + ReLU in eval mode, fused by ember.compile, beside the unfused forms: ratios.

ember.compile rewrites an eval-mode BatchNorm as a per-channel affine map (``x * scale +
shift``), which then fuses with the ReLU after it: one pass over the activation instead of two
(``ember._inductor.BATCH_NORM_AS_AFFINE``). Timed, inference under no_grad, interleaved:
  - BN + ReLU alone on ResNet-sized activations (the part the fusion changes);
  - a conv stage (3 x [conv3x3, BN, ReLU]) and a ResNet-50 forward (where the convolutions
    dominate: the fusion's share of a whole model).
Peers: the same compiled model without the rewrite, eager ember, and torch eager.

    python benchmarks/bench_bn_relu.py [--quick] [--smoke] [--json PATH] [--threads N] [--no-torch]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch is imported (by _harness)
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402
import numpy as np  # noqa: E402

import ember  # noqa: E402
import ember._inductor as inductor  # noqa: E402


def make_models(lib):
    nn = lib.nn

    class BnRelu(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.bn = nn.BatchNorm2d(c)

        def forward(self, x):
            return lib.relu(self.bn(x))

    class ConvStage(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.layers = nn.Sequential(*[m for _ in range(3) for m in (
                nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())])

        def forward(self, x):
            return self.layers(x)

    return BnRelu, ConvStage


def _randomise_statistics(model, seed):
    """Running statistics and affine parameters away from their defaults (1, 0), same values in
    both libraries (the models are built with one seed and copied)."""
    rng = np.random.default_rng(seed)
    for name, t in model.state_dict().items():
        if name.endswith("running_var"):
            t.copy_(ember.tensor(rng.uniform(0.5, 2.0, t.shape).astype(np.float32)))
        elif name.endswith(("running_mean", "bias")) and t.dim() == 1:
            t.copy_(ember.tensor(rng.uniform(-0.5, 0.5, t.shape).astype(np.float32)))


def _to_torch(e_model, t_model, torch):
    state = {k: torch.from_numpy(v.numpy().copy()) for k, v in e_model.state_dict().items()}
    t_model.load_state_dict(state)
    return t_model.eval()


def _compiled(model, fuse_bn):
    inductor.BATCH_NORM_AS_AFFINE = fuse_bn
    try:
        c = ember.compile(model)
        with ember.no_grad():
            c(_compiled.example)  # captured and built now, with the switch as given
    finally:
        inductor.BATCH_NORM_AS_AFFINE = True
    return c


def bench_case(name, e_model, t_model, shape):
    torch = H.torch
    x_np = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x = ember.tensor(x_np)
    _compiled.example = x
    fused, unfused = _compiled(e_model, True), _compiled(e_model, False)
    with ember.no_grad():
        ref = e_model(x).numpy()
        for label, c in (("fused", fused), ("unfused", unfused)):
            err = np.abs(c(x).numpy() - ref).max() / max(np.abs(ref).max(), 1e-30)
            assert err < 1e-5, f"{name}: compiled ({label}) differs from eager by {err:.2e}"
    fns = {"fused": lambda: fused(x), "unfused": lambda: unfused(x), "eager": lambda: e_model(x)}
    if torch is not None:
        tx = torch.from_numpy(x_np)
        with torch.no_grad():
            t_ref = t_model(tx).numpy()
        err = np.abs(t_ref - ref).max() / max(np.abs(ref).max(), 1e-30)
        assert err < 1e-4, f"{name}: torch's result differs from ember's by {err:.2e}"
        fns["torch"] = lambda: t_model(tx)
    with ember.no_grad():
        if torch is not None:
            with torch.no_grad():
                t = H.measure_all(fns)
        else:
            t = H.measure_all(fns)
    rows = [(f"{name}: compiled, BN+ReLU fused", t["fused"], "compiled, unfused", t["unfused"]),
            (f"{name}: compiled, BN+ReLU fused", t["fused"], "eager ember", t["eager"])]
    if "torch" in t:
        rows.append((f"{name}: compiled, BN+ReLU fused", t["fused"], "torch eager", t["torch"]))
    H.report(f"{name}, {list(shape)}, inference", rows)


def main() -> int:
    s = H.setup(__doc__.splitlines()[0])
    torch = H.torch
    e_bn_relu, e_stage = make_models(ember)
    t_bn_relu, t_stage = make_models(torch) if torch is not None else (None, None)
    n = 1 if s.smoke else 8
    hw = 8 if s.smoke else 56
    cases = [("BN + ReLU", e_bn_relu, t_bn_relu, (n, 64, hw, hw), 64),
             ("conv stage", e_stage, t_stage, (n // 2 or 1, 64, hw, hw), 64)]
    for name, e_cls, t_cls, shape, c in cases:
        ember.manual_seed(0)
        e_model = e_cls(c).eval()
        _randomise_statistics(e_model, 1)
        t_model = _to_torch(e_model, t_cls(c), torch) if torch is not None else None
        bench_case(name, e_model, t_model, shape)
    if not s.smoke:
        from bench_models import resnet50  # the paper's model, one definition for both
        ember.manual_seed(0)
        e_model = resnet50(ember).eval()
        _randomise_statistics(e_model, 2)
        t_model = _to_torch(e_model, resnet50(torch), torch) if torch is not None else None
        bench_case("ResNet-50", e_model, t_model, (2, 3, 128, 128))
    H.save_json()
    return 0


if __name__ == "__main__":
    sys.exit(main())
