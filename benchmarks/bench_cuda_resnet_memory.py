"""Peak reserved GPU memory of a ResNet-style training step: ember's caching allocator against
PyTorch's, target within 1.1x (peer/ember >= 0.91).

One model definition builds both networks (ember.nn follows torch.nn's names): a ResNet-18-style
stack of basic blocks (3x3 convolutions, batch norm, ReLU, identity and strided 1x1 shortcuts),
global average pooling and a linear classifier. Each framework starts from an empty cache, runs two
SGD-with-momentum steps (cross-entropy loss) and reports ``max_memory_reserved()``.

Without a GPU the torch row prints n/a; ember's figure is then measured on ember.cuda's simulated
device (the same allocator bookkeeping over host memory) at a small size. ``--smoke`` runs a tiny
model there, to keep the script working.

    python benchmarks/bench_cuda_resnet_memory.py [--smoke] [--json PATH] [--no-torch]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402

import ember  # noqa: E402
import ember.cuda  # noqa: E402
import ember.nn  # noqa: E402
import ember.nn.functional  # noqa: E402


def resnet(nn, F, widths, blocks_per_stage: int, classes: int):
    """A ResNet-style network built from the module namespace `nn` (ember.nn or torch.nn)."""

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.short = None
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                           nn.BatchNorm2d(cout))

        def forward(self, x):
            y = F.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return F.relu(y + (x if self.short is None else self.short(x)))

    layers = [nn.Conv2d(3, widths[0], 3, padding=1, bias=False), nn.BatchNorm2d(widths[0]),
              nn.ReLU()]
    cin = widths[0]
    for i, w in enumerate(widths):
        for j in range(blocks_per_stage):
            layers.append(Block(cin, w, 2 if (j == 0 and i > 0) else 1))
            cin = w
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def peak_reserved(lib, cuda, nn, F, cfg) -> int:
    """Two training steps from an empty cache; the peak of reserved device memory in bytes."""
    lib.manual_seed(0)
    model = resnet(nn, F, cfg["widths"], cfg["blocks"], 10).to("cuda")
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = lib.randn(cfg["batch"], 3, cfg["size"], cfg["size"], device="cuda")
    y = lib.randint(0, 10, (cfg["batch"],), device="cuda")
    cuda.synchronize()
    cuda.empty_cache()
    cuda.reset_peak_memory_stats()
    for _ in range(2):
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()
    cuda.synchronize()
    peak = cuda.max_memory_reserved()
    del model, opt, x, y
    cuda.empty_cache()
    return peak


def main(argv: list[str] | None = None) -> int:
    H.setup(__doc__.splitlines()[0], argv)
    smoke = H.SETTINGS.smoke
    gpu = ember.cuda.is_available()
    torch = H.torch
    torch_gpu = torch is not None and gpu and torch.cuda.is_available()
    if gpu:
        cfg = dict(widths=(64, 128, 256, 512), blocks=2, batch=32, size=224)
    else:
        ember.cuda._use_host_backend(4 << 30)
        cfg = (dict(widths=(4, 8), blocks=1, batch=2, size=8) if smoke
               else dict(widths=(16, 32, 64), blocks=2, batch=8, size=32))
    case = (f"ResNet-style step, widths {cfg['widths']}, batch {cfg['batch']}x3x{cfg['size']}^2"
            f", peak reserved")
    ember_peak = peak_reserved(ember, ember.cuda, ember.nn, ember.nn.functional, cfg)
    torch_peak = None
    note = ""
    if torch_gpu:
        torch_peak = peak_reserved(torch, torch.cuda, torch.nn, torch.nn.functional, cfg)
    elif not gpu:
        note = "no CUDA GPU: ember measured on the simulated device, torch not run"
    else:
        note = "torch with CUDA not installed"
    H.report("CUDA memory: ember's caching allocator vs torch's (peer/ember >= 0.91: within 1.1x)",
             [H.Row(case, ember_peak, "torch cuda", torch_peak, 1 / 1.1, note, unit="B")])
    H.summary()
    H.save_json()
    if not gpu:
        import gc

        gc.collect()
        ember.cuda._use_host_backend(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
