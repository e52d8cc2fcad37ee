"""Training end to end on a CUDA device: the same seed, model, data and optimizer on the CPU and on
the device give the same losses and parameters. Runs on ember.cuda's simulated device where there
is no GPU (device memory is host memory; ops run through NumPy along the path CuPy takes on a GPU).
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.cuda._testing import GPU_WITHOUT_CUPY, REAL_GPU, devices

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_cuda_resnet_memory.py"


pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(512 << 20):
        yield


def cnn():
    # No bias before the batch norm: its gradient is rounding noise there, which Adam would
    # amplify into steps of size lr, different on each device.
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, stride=2, groups=2), nn.AvgPool2d(2, ceil_mode=True),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10), nn.LayerNorm(10))


class TextModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8, padding_idx=0)
        self.conv = nn.Conv1d(8, 8, 3, padding=1)
        self.head = nn.Linear(8, 5)

    def forward(self, tokens):
        h = self.embed(tokens).transpose(1, 2)
        h = F.gelu(self.conv(h)).amax(-1)
        return self.head(h)


def train(model_fn, inputs, target, device, optimizer, steps=4):
    ember.manual_seed(0)
    model = model_fn().to(device)
    opt = optimizer(model.parameters())
    x, y = inputs.to(device), target.to(device)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    params = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    return losses, params, {p.device for p in model.parameters()}


@pytest.mark.parametrize("optimizer", [
    lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-4),
    lambda ps: ember.optim.Adam(ps, lr=1e-2),
    lambda ps: ember.optim.AdamW(ps, lr=1e-2, amsgrad=True),
], ids=["sgd", "adam", "adamw"])
@pytest.mark.parametrize("task", ["cnn", "text"])
def test_training_on_the_device_matches_the_cpu(task, optimizer):
    g = ember.Generator().manual_seed(1)
    if task == "cnn":
        model_fn, x = cnn, ember.randn(6, 3, 12, 12, generator=g)
        y = ember.randint(0, 10, (6,), generator=g)
    else:
        model_fn, x = TextModel, ember.randint(0, 20, (6, 7), generator=g)
        y = ember.randint(0, 5, (6,), generator=g)
    cpu_losses, cpu_params, _ = train(model_fn, x, y, "cpu", optimizer)
    dev_losses, dev_params, devices = train(model_fn, x, y, "cuda", optimizer)
    assert devices == {ember.device("cuda", 0)}
    np.testing.assert_allclose(dev_losses, cpu_losses, rtol=1e-4)
    assert cpu_losses[-1] < cpu_losses[0]  # it learns
    for k in cpu_params:
        np.testing.assert_allclose(dev_params[k], cpu_params[k], rtol=1e-3, atol=1e-5, err_msg=k)


@pytest.mark.skipif(not BENCH.is_file(), reason="not run from a checkout with benchmarks/")
@pytest.mark.skipif(REAL_GPU, reason="the simulated device is this process's")
def test_bench_cuda_resnet_memory_smoke(tmp_path):
    env = dict(os.environ)
    paths = [str(Path(ember.__file__).parent.parent), str(Path(nn.__file__).parents[2])]
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, str(BENCH), "--smoke", "--no-torch"], env=env,
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ResNet-style step" in proc.stdout and "MiB" in proc.stdout
