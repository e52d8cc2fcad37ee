"""The PyTorch paper's Table 1 models (and a small GPT), trained by ember and by torch on a CPU.

Each model is written once against a framework namespace (``ember`` or ``torch``), so both run the
same code; torch's model gets ember's initial weights through ``state_dict``, and the inputs are
the same arrays. Before timing, the first training losses are compared (they must match to 1e-5
relative). Then one training step (zero_grad, forward, loss, backward, SGD step) and one inference
forward (eval mode, no grad) are timed, ember and torch interleaved, and the ratio
torch_time / ember_time is printed (> 1: ember is faster; the target is 1.0).

Sizes are the paper's scaled to a 2-core machine: 64x64 images (AlexNet 128x128) with batch 16,
VGG-19 at half width, GNMT-like with hidden 256 and 4+4 LSTM layers over 20 steps, NCF with batch
1024, and nanoGPT's CPU configuration (4 layers, 4 heads, 128 wide, block 64, batch 12).
Dropout is 0 in every model so that the two frameworks' losses can be compared. With ResNet-50
chosen, the peak RSS one training step adds is measured too, each framework in a fresh process
(target: not above torch's).

    python benchmarks/bench_models.py [--quick] [--smoke] [--threads N] [--models a,b] [--json P]
                                      [--device cuda]

``--device cuda`` runs both frameworks on the GPU instead (each timed call ends with a device
synchronise) at the sizes issue figures are quoted at: ResNet-50 with batch 32 at 224x224, the
other models as on the CPU.

With more than one thread, torch's OpenMP workers spin at barriers and slow torch down on a busy
machine; the script sets OMP_WAIT_POLICY=PASSIVE (unless already set) before torch is imported,
which is the fair comparison the project reports.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch is imported (by _harness)
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402
import numpy as np  # noqa: E402

import ember  # noqa: E402

# --------------------------------------------------------------------------------------------------
# The models, each built against a namespace `fw` (ember or torch): fw.nn, fw.nn.functional, ...


def alexnet(fw, image=128, classes=100):
    nn = fw.nn
    return nn.Sequential(
        nn.Conv2d(3, 64, 11, stride=4, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten(),
        nn.Dropout(0.0), nn.Linear(256 * 4, 1024), nn.ReLU(inplace=True),
        nn.Dropout(0.0), nn.Linear(1024, 1024), nn.ReLU(inplace=True),
        nn.Linear(1024, classes),
    )


def vgg19(fw, classes=100, width=0.5):
    nn = fw.nn
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M",
           512, 512, 512, 512, "M", 512, 512, 512, 512, "M"]
    layers, c = [], 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(2, 2))
        else:
            w = int(v * width)
            layers += [nn.Conv2d(c, w, 3, padding=1), nn.ReLU(inplace=True)]
            c = w
    layers += [nn.Flatten(), nn.Linear(c * 2 * 2, 512), nn.ReLU(inplace=True), nn.Dropout(0.0),
               nn.Linear(512, 512), nn.ReLU(inplace=True), nn.Dropout(0.0),
               nn.Linear(512, classes)]
    return nn.Sequential(*layers)


def resnet50(fw, classes=100):
    nn = fw.nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                                nn.BatchNorm2d(cout))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            return self.relu(out + identity)

    layers = [nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64),
              nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, padding=1)]
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def mobilenet_v2(fw, classes=100):
    nn = fw.nn

    def conv_bn(cin, cout, k, stride, groups=1, act=True):
        mods = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                nn.BatchNorm2d(cout)]
        return mods + ([nn.ReLU6(inplace=True)] if act else [])

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            mods = conv_bn(cin, hidden, 1, 1) if expand != 1 else []
            mods += conv_bn(hidden, hidden, 3, stride, groups=hidden)
            mods += conv_bn(hidden, cout, 1, 1, act=False)
            self.block = nn.Sequential(*mods)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.block(x) if self.residual else self.block(x)

    layers = conv_bn(3, 32, 3, 2)
    cin = 32
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(n):
            layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
            cin = c
    layers += conv_bn(cin, 1280, 1, 1)
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.0), nn.Linear(1280, classes)]
    return nn.Sequential(*layers)


def gnmt(fw, vocab=2000, hidden=256, layers=4):
    nn = fw.nn

    class GNMTLike(nn.Module):
        """Encoder LSTM stack, decoder LSTM stack, dot-product attention over the encoder's
        outputs, and a projection to the vocabulary (GNMT's shape at a small scale)."""

        def __init__(self):
            super().__init__()
            self.src_embed = nn.Embedding(vocab, hidden)
            self.tgt_embed = nn.Embedding(vocab, hidden)
            self.encoder = nn.LSTM(hidden, hidden, layers, batch_first=True)
            self.decoder = nn.LSTM(hidden, hidden, layers, batch_first=True)
            self.combine = nn.Linear(2 * hidden, hidden)
            self.project = nn.Linear(hidden, vocab)

        def forward(self, src, tgt):
            enc, state = self.encoder(self.src_embed(src))
            dec, _ = self.decoder(self.tgt_embed(tgt), state)
            scores = fw.bmm(dec, enc.transpose(1, 2)) / math.sqrt(hidden)
            context = fw.bmm(fw.softmax(scores, dim=-1), enc)
            out = fw.tanh(self.combine(fw.cat([dec, context], dim=-1)))
            return self.project(out)

    return GNMTLike()


def ncf(fw, users=6040, items=3706, factors=64, mlp=(256, 128, 64)):
    nn = fw.nn

    class NeuMF(nn.Module):
        def __init__(self):
            super().__init__()
            self.gmf_user = nn.Embedding(users, factors)
            self.gmf_item = nn.Embedding(items, factors)
            self.mlp_user = nn.Embedding(users, mlp[0] // 2)
            self.mlp_item = nn.Embedding(items, mlp[0] // 2)
            mods = []
            for a, b in zip(mlp[:-1], mlp[1:]):
                mods += [nn.Linear(a, b), nn.ReLU()]
            self.mlp = nn.Sequential(*mods)
            self.head = nn.Linear(factors + mlp[-1], 1)

        def forward(self, user, item):
            gmf = self.gmf_user(user) * self.gmf_item(item)
            deep = self.mlp(fw.cat([self.mlp_user(user), self.mlp_item(item)], dim=-1))
            return self.head(fw.cat([gmf, deep], dim=-1)).squeeze(-1)

    return NeuMF()


def gpt_block(nn, F, width, heads):
    """nanoGPT's Block, written once against a framework's nn / functional namespaces (also
    timed alone by bench_nn_layers.py)."""

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.c_attn, self.c_proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.c_fc, self.mlp_proj = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))

    return Block()


def gpt(fw, vocab=65, block=64, layers=4, heads=4, width=128):
    nn, F = fw.nn, fw.nn.functional

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, width)
            self.pos = nn.Embedding(block, width)
            self.blocks = nn.Sequential(*[gpt_block(nn, F, width, heads) for _ in range(layers)])
            self.ln_f = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab, bias=False)

        def forward(self, idx):
            t = idx.shape[1]
            x = self.tok(idx) + self.pos(fw.arange(t, device=idx.device))
            return self.head(self.ln_f(self.blocks(x)))

    return GPT()


# --------------------------------------------------------------------------------------------------
# Inputs and losses: numpy arrays shared by both frameworks


def _images(rng, batch, size, classes=100):
    return ((rng.standard_normal((batch, 3, size, size)).astype(np.float32),),
            rng.integers(0, classes, batch))


def _classify(fw, out, target):
    return fw.nn.functional.cross_entropy(out, target)


def _tokens(fw, out, target):
    return fw.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))


def _ncf_loss(fw, out, target):
    return fw.nn.functional.binary_cross_entropy_with_logits(out, target)


def _seq2seq_inputs(rng, batch=16, steps=20, vocab=2000):
    src = rng.integers(0, vocab, (batch, steps))
    tgt = rng.integers(0, vocab, (batch, steps))
    return (src, tgt), rng.integers(0, vocab, (batch, steps))


def _ncf_inputs(rng, batch=1024):
    return ((rng.integers(0, 6040, batch), rng.integers(0, 3706, batch)),
            rng.integers(0, 2, batch).astype(np.float32))


def _gpt_inputs(rng, batch=12, block=64, vocab=65):
    return (rng.integers(0, vocab, (batch, block)),), rng.integers(0, vocab, (batch, block))


# name -> (builder, inputs(rng, smoke), loss)
MODELS = {
    "alexnet": (alexnet, lambda rng, s: _images(rng, 2 if s else 16, 64 if s else 128), _classify),
    "vgg19": (vgg19, lambda rng, s: _images(rng, 2 if s else 16, 64), _classify),
    "resnet50": (resnet50, lambda rng, s: _images(rng, 2 if s else 16, 64), _classify),
    "mobilenet_v2": (mobilenet_v2, lambda rng, s: _images(rng, 2 if s else 16, 64), _classify),
    "gnmt": (gnmt, lambda rng, s: _seq2seq_inputs(rng, 2 if s else 16, 4 if s else 20), _tokens),
    "ncf": (ncf, lambda rng, s: _ncf_inputs(rng, 16 if s else 1024), _ncf_loss),
    "gpt": (gpt, lambda rng, s: _gpt_inputs(rng, 2 if s else 12, 16 if s else 64), _tokens),
}


# On the GPU: name -> inputs(rng, smoke) where the CPU sizes would leave the device idle.
GPU_INPUTS = {
    "resnet50": lambda rng, s: _images(rng, 2 if s else 32, 64 if s else 224),
}

DEVICE = "cpu"  # --device
CHANNELS_LAST = False  # --channels-last
# ratio torch / ember to reach: faster than torch on the CPU, within 1.1x of its time on a GPU
TARGET = {"cpu": 1.0, "cuda": 1 / 1.1}


def _to(fw, array):
    return fw.from_numpy(np.array(array, copy=True)).to(DEVICE)


def _synchronize(fw):
    if DEVICE != "cpu":
        fw.cuda.synchronize()


def _pair(name: str, smoke: bool):
    """Builds the model in both frameworks with ember's weights, and both sets of inputs."""
    build, make_inputs, loss_fn = MODELS[name]
    if DEVICE != "cpu":
        make_inputs = GPU_INPUTS.get(name, make_inputs)
    ember.manual_seed(0)
    e_model = build(ember).to(DEVICE)
    rng = np.random.default_rng(0)
    xs, target = make_inputs(rng, smoke)
    e = (e_model, tuple(_to(ember, a) for a in xs), _to(ember, target))
    t = None
    if H.torch is not None:
        torch = H.torch
        t_model = build(torch).to(DEVICE)
        t_model.load_state_dict(
            {k: _to(torch, v.cpu().numpy()) for k, v in e_model.state_dict().items()})
        t = (t_model, tuple(_to(torch, a) for a in xs), _to(torch, target))
    if CHANNELS_LAST:  # the models and their image inputs in both frameworks' channels_last
        e, t = _channels_last(ember, e), t and _channels_last(H.torch, t)
    return loss_fn, e, t


def _channels_last(fw, pair):
    model, xs, target = pair
    fmt = fw.channels_last
    xs = tuple(x.contiguous(memory_format=fmt) if x.dim() == 4 else x for x in xs)
    return model.to(memory_format=fmt), xs, target


def _train_step(fw, loss_fn, model, xs, target, opt):
    opt.zero_grad()
    loss = loss_fn(fw, model(*xs), target)
    loss.backward()
    opt.step()
    _synchronize(fw)
    return loss


def _infer(fw, model, xs):
    with fw.no_grad():
        out = model(*xs)
    _synchronize(fw)
    return out


def bench_model(name: str) -> list[H.Row]:
    smoke = H.SETTINGS.smoke
    loss_fn, e, t = _pair(name, smoke)
    torch = H.torch
    rows = []

    e_model, e_xs, e_target = e
    e_opt = ember.optim.SGD(e_model.parameters(), lr=1e-3, momentum=0.9)
    if t is not None:
        t_model, t_xs, t_target = t
        t_opt = torch.optim.SGD(t_model.parameters(), lr=1e-3, momentum=0.9)
        e_loss = _train_step(ember, loss_fn, e_model, e_xs, e_target, e_opt).item()
        t_loss = _train_step(torch, loss_fn, t_model, t_xs, t_target, t_opt).item()
        rel = abs(e_loss - t_loss) / max(abs(t_loss), 1e-12)
        print(f"{name}: first loss ember {e_loss:.7f}, torch {t_loss:.7f}, relative difference "
              f"{rel:.1e} {'(match)' if rel <= 1e-5 else '(DIFFERS: above 1e-5)'}")

    fns = {"ember": lambda: _train_step(ember, loss_fn, e_model, e_xs, e_target, e_opt)}
    if t is not None:
        fns["torch"] = lambda: _train_step(torch, loss_fn, t_model, t_xs, t_target, t_opt)
    times = H.measure_all(fns, warmup=1, settle=0.05)
    rows.append(H.Row(f"{name} train step", times["ember"], "torch", times.get("torch"),
                      TARGET[DEVICE]))

    e_model.eval()
    fns = {"ember": lambda: _infer(ember, e_model, e_xs)}
    if t is not None:
        t_model.eval()
        fns["torch"] = lambda: _infer(torch, t_model, t_xs)
    times = H.measure_all(fns, warmup=1, settle=0.05)
    rows.append(H.Row(f"{name} inference", times["ember"], "torch", times.get("torch"),
                      TARGET[DEVICE]))
    return rows


_MEMORY_CHILD = """
import sys
sys.path.insert(0, {here!r})
import numpy as np
import bench_models as B
fw = __import__({fw!r})
fw.set_num_threads(1)
build, make_inputs, loss_fn = B.MODELS[{name!r}]
fw.manual_seed(0)
model = build(fw)
xs, target = make_inputs(np.random.default_rng(0), {smoke!r})
xs, target = tuple(B._to(fw, a) for a in xs), B._to(fw, target)
opt = fw.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
def status_kib(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1])
open("/proc/self/clear_refs", "w").write("5")  # resets the peak (VmHWM) to the current RSS
before = status_kib("VmRSS:")
B._train_step(fw, loss_fn, model, xs, target, opt)
print(before * 1024, status_kib("VmHWM:") * 1024)
"""


def step_memory(name: str) -> list[H.Row]:
    """Peak RSS that one training step adds above the process's RSS before it (the model, its
    inputs and the libraries already loaded), each framework in a fresh child process (Linux:
    /proc/self/clear_refs resets the peak)."""
    import subprocess

    here = str(Path(__file__).resolve().parent)
    grown = {}
    for fw in ("ember", "torch") if H.torch is not None else ("ember",):
        code = _MEMORY_CHILD.format(here=here, fw=fw, name=name, smoke=H.SETTINGS.smoke)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.split()
        grown[fw] = int(out[1]) - int(out[0])
    return [H.Row(f"{name} peak RSS added by one training step", grown["ember"], "torch",
                  grown.get("torch"), 1.0, unit="B")]


def main(argv: list[str] | None = None) -> int:
    global DEVICE, CHANNELS_LAST
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--device" in argv:
        i = argv.index("--device")
        DEVICE = argv[i + 1]
        del argv[i:i + 2]
        if DEVICE not in ("cpu", "cuda"):
            raise SystemExit(f"--device: cpu or cuda, not {DEVICE!r}")
    if "--channels-last" in argv:
        argv.remove("--channels-last")
        CHANNELS_LAST = True
    chosen = list(MODELS)
    if "--models" in argv:
        i = argv.index("--models")
        chosen = argv[i + 1].split(",")
        del argv[i:i + 2]
        unknown = sorted(set(chosen) - set(MODELS))
        if unknown:
            raise SystemExit(f"unknown models {unknown}; choose from {sorted(MODELS)}")
    H.setup("bench_models: the paper's models (and a small GPT), training and inference, "
            f"ember vs torch ({DEVICE.upper()})", argv)
    if DEVICE == "cuda":
        print(f"GPU: {ember.cuda.get_device_name()}")
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}")
    if CHANNELS_LAST:
        print("memory format: channels_last (models and image inputs, both frameworks)")
    rows = []
    for name in chosen:
        rows += bench_model(name)
    H.report("training step (zero_grad, forward, loss, backward, SGD) and inference forward", rows)
    if "resnet50" in chosen and DEVICE == "cpu":
        H.report("memory (fresh process per framework; the ratio is torch / ember)",
                 step_memory("resnet50"))
    load = H.load_average()
    if load is not None:
        print(f"load average (1 min) after the run: {load:.2f}")
    H.summary()
    H.save_json({"models": chosen, "device": DEVICE})
    return 0


if __name__ == "__main__":
    sys.exit(main())
