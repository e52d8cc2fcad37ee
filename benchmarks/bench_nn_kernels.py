"""ember's nn core kernels beside PyTorch (CPU), on the same data in one process.

Rows: conv2d forward and backward (the ResNet stage-1 shape: batch 32, 64 -> 64 channels, 56x56,
3x3, padding 1), max_pool2d 2x2 on that activation, the layers of bench_models.py's models that
chose their kernels (depthwise and small-output convolutions, batch norm, ReLU6), nll_loss over
log_softmax (N=4096, C=1000); erf, gelu / gelu_backward (exact and tanh) and native_layer_norm /
its backward on nanoGPT's shapes (the MLP's 768x512 activation, the 768x128 residual stream).
Each prints the ratio torch_time / ember_time (> 1: ember is faster). No targets yet.

    python benchmarks/bench_nn_kernels.py [--quick] [--smoke] [--json PATH] [--threads N]
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
        return {"conv": (2, 4, 8, 8), "nll": (64, 10), "mlp": (16, 32), "ln": (16, 8)}
    return {"conv": (32, 64, 56, 56), "nll": (4096, 1000), "mlp": (768, 512), "ln": (768, 128)}


def bench_conv(sz: dict[str, Any]) -> None:
    torch = H.torch
    N, C, S, _ = sz["conv"]
    x = H.inputs((N, C, S, S), seed=0)
    w = H.inputs((C, C, 3, 3), seed=1)
    w["ember"] = w["ember"] * 0.05 if "ember" in w else None
    if torch:
        w["torch"] = w["torch"] * 0.05
    rows: list[H.Row] = []
    shape = f"{N}x{C}x{S}x{S}, {C}->{C}, 3x3, padding 1"
    rows += run_case(
        f"conv2d forward, {shape}",
        {
            "ember": lambda: ember.conv2d(x["ember"], w["ember"], padding=1),
            "torch": (lambda: torch.conv2d(x["torch"], w["torch"], padding=1)) if torch else None,
        },
        {},
        requires=("conv2d",),
        settle=0.2,
        rtol=1e-3,
        atol=1e-3,
    )
    g = H.inputs((N, C, S, S), seed=2)
    args = ([C], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True])
    # All three gradients are computed; grad_weight is the one compared.
    rows += run_case(
        f"convolution_backward (input, weight, bias), {shape}",
        {
            "ember": lambda: ember.convolution_backward(g["ember"], x["ember"], w["ember"], *args)[
                1
            ],
            "torch": (
                lambda: torch.ops.aten.convolution_backward(
                    g["torch"], x["torch"], w["torch"], *args
                )[1]
            )
            if torch
            else None,
        },
        {},
        requires=("convolution_backward",),
        settle=0.2,
        rtol=1e-3,
        atol=0.05 * N * S,  # sums over N*S*S terms of size ~1
    )
    rows += run_case(
        f"max_pool2d 2x2, {N}x{C}x{S}x{S}",
        {
            "ember": lambda: ember.max_pool2d(x["ember"], 2),
            "torch": (lambda: torch.max_pool2d(x["torch"], 2)) if torch else None,
        },
        {},
        requires=("max_pool2d",),
    )
    H.report("convolution and pooling", rows)


# The layer shapes behind the kernel choices of docs/architecture.md ("Convolution", "Batch norm
# and activations"): MobileNetV2's depthwise convolutions, ResNet-50's small late-stage outputs
# (where the batch is folded into one GEMM), batch norm and ReLU6 in training. Batch 16, as
# bench_models.py; each row is forward + backward.
MODEL_LAYERS = [
    # (label, input shape, conv weight shape or None, groups, stride)
    ("depthwise 3x3 stride 2", (16, 96, 32, 32), (96, 1, 3, 3), 96, 2),
    ("depthwise 3x3", (16, 192, 8, 8), (192, 1, 3, 3), 192, 1),
    ("depthwise 3x3", (16, 576, 4, 4), (576, 1, 3, 3), 576, 1),
    ("1x1 (batch folded)", (16, 2048, 2, 2), (512, 2048, 1, 1), 1, 1),
    ("3x3 (batch folded)", (16, 512, 2, 2), (512, 512, 3, 3), 1, 1),
    ("3x3 (batch folded)", (16, 256, 4, 4), (256, 256, 3, 3), 1, 1),
    ("1x1 (per sample)", (16, 192, 8, 8), (32, 192, 1, 1), 1, 1),
    ("batch_norm training", (16, 192, 8, 8), None, 0, 0),
    ("batch_norm training", (16, 256, 16, 16), None, 0, 0),
    ("relu6 in place, training", (16, 192, 8, 8), None, 0, 0),
]


def _model_layer(fw, label, xs, w, groups, stride):
    """The layer of one MODEL_LAYERS row in framework fw (ember or torch)."""
    if w is not None:
        return lambda v: fw.nn.functional.conv2d(v, w, padding=w.shape[-1] // 2, stride=stride,
                                                 groups=groups)
    if label.startswith("batch_norm"):
        return fw.nn.BatchNorm2d(xs[1])
    return lambda v: fw.nn.functional.relu6(v * 1, inplace=True)


def bench_model_layers() -> None:
    torch = H.torch
    rows: list[H.Row] = []
    for i, (label, xs, ws, groups, stride) in enumerate(MODEL_LAYERS):
        if H.SETTINGS.smoke:
            xs = (2, xs[1], min(xs[2], 4), min(xs[3], 4))
        x = H.inputs(xs, seed=10 + i)
        fns = {}
        for name in ("ember", "torch"):
            fw = ember if name == "ember" else torch
            if fw is None:
                fns[name] = None
                continue
            xi = x[name].requires_grad_()
            w = H.inputs(ws, seed=30 + i)[name].mul(0.1).requires_grad_() if ws else None
            f = _model_layer(fw, label, xs, w, groups, stride)

            def step(f=f, xi=xi):
                y = f(xi)
                y.sum().backward()
                return y.detach()

            fns[name] = step
        tail = f", weight {'x'.join(map(str, ws))}" if ws else ""
        rows += run_case(f"{label}, {'x'.join(map(str, xs))}{tail} fwd+bwd", fns, {},
                         rtol=1e-3, atol=1e-3)
    H.report("layers of the paper's models (forward + backward)", rows)


def bench_nll(sz: dict[str, Any]) -> None:
    torch, np = H.torch, H.np
    n, c = sz["nll"]
    x = H.inputs((n, c), seed=3)
    t = np.arange(n, dtype=np.int64) * 7 % c
    te = ember.tensor(t)
    tt = torch.from_numpy(t) if torch else None
    rows = run_case(
        f"nll_loss(log_softmax(x, 1), t), {n}x{c} float32",
        {
            "ember": lambda: ember.nll_loss(ember.log_softmax(x["ember"], 1), te),
            "torch": (lambda: torch.nn.functional.nll_loss(torch.log_softmax(x["torch"], 1), tt))
            if torch
            else None,
        },
        {},
        requires=("nll_loss", "log_softmax"),
        rtol=1e-4,
        atol=1e-4,
    )
    H.report("losses", rows)


def bench_activation_norm(sz: dict[str, Any]) -> None:
    """The float32 erf, the GELU kernels and layer norm's kernels, on nanoGPT's shapes."""
    torch = H.torch
    m, n = sz["mlp"]
    x, g = H.inputs((m, n), seed=4), H.inputs((m, n), seed=5)
    tF = torch.nn.functional if torch else None
    aten = torch.ops.aten if torch else None
    rows: list[H.Row] = []
    rows += run_case(f"erf, {m}x{n} float32",
                     {"ember": lambda: x["ember"].erf(),
                      "torch": (lambda: x["torch"].erf()) if torch else None}, {},
                     rtol=1e-5, atol=1e-6)
    for approximate in ("none", "tanh"):
        rows += run_case(
            f"gelu(approximate={approximate!r}), {m}x{n}",
            {"ember": lambda a=approximate: ember._C.gelu(x["ember"], approximate=a),
             "torch": (lambda a=approximate: tF.gelu(x["torch"], approximate=a))
             if torch else None},
            {}, rtol=1e-5, atol=1e-6)
        rows += run_case(
            f"gelu_backward(approximate={approximate!r}), {m}x{n}",
            {"ember": lambda a=approximate: ember._C.gelu_backward(g["ember"], x["ember"],
                                                                   approximate=a),
             "torch": (lambda a=approximate: aten.gelu_backward(g["torch"], x["torch"],
                                                                approximate=a)) if torch else None},
            {}, rtol=1e-5, atol=1e-5)
    rows_ln, d = sz["ln"]
    xl, gl = H.inputs((rows_ln, d), seed=6), H.inputs((rows_ln, d), seed=7)
    wl, bl = H.inputs((d,), seed=8), H.inputs((d,), seed=9)
    rows += run_case(
        f"native_layer_norm, {rows_ln}x{d}",
        {"ember": lambda: ember.native_layer_norm(xl["ember"], [d], wl["ember"], bl["ember"],
                                                  1e-5)[0],
         "torch": (lambda: torch.native_layer_norm(xl["torch"], [d], wl["torch"], bl["torch"],
                                                   1e-5)[0]) if torch else None},
        {}, rtol=1e-4, atol=1e-4)
    stats = {"ember": ember.native_layer_norm(xl["ember"], [d], wl["ember"], bl["ember"], 1e-5)}
    if torch:
        stats["torch"] = torch.native_layer_norm(xl["torch"], [d], wl["torch"], bl["torch"], 1e-5)
    mask = [True, True, True]
    rows += run_case(
        f"native_layer_norm_backward (input, weight, bias), {rows_ln}x{d}",
        {"ember": lambda: ember.native_layer_norm_backward(
            gl["ember"], xl["ember"], [d], stats["ember"][1], stats["ember"][2], wl["ember"],
            bl["ember"], mask)[0],
         "torch": (lambda: aten.native_layer_norm_backward(
             gl["torch"], xl["torch"], [d], stats["torch"][1], stats["torch"][2], wl["torch"],
             bl["torch"], mask)[0]) if torch else None},
        {}, rtol=1e-4, atol=1e-4)
    H.report("activations and layer norm (nanoGPT shapes)", rows)


def main(argv: list[str] | None = None) -> int:
    H.setup("bench_nn_kernels: ember's conv/pool/loss kernels vs PyTorch (CPU)", argv)
    sz = sizes()
    bench_conv(sz)
    bench_model_layers()
    bench_nll(sz)
    bench_activation_norm(sz)
    H.summary()
    H.save_json({"sizes": {k: list(v) for k, v in sz.items()}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
