"""Autocast and GradScaler on a CUDA GPU: torch's CUDA lists (float16 products, float32 for
exp/log/softmax/sum/norms/losses, promotion for addcmul/atan2/..., cat promoting by itself), gradients into float32
parameters, a GradScaler training loop. Skipped where no GPU is usable; compared with torch's
CUDA autocast where torch sees a GPU."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(), reason="no CUDA GPU")

f16, bf16, f32 = ember.float16, ember.bfloat16, ember.float32


def _inputs(mod, dtype_name="float32", device="cuda"):
    g = np.random.default_rng(0)
    arrays = {"a": g.standard_normal((4, 4)), "b": g.standard_normal((4, 4)),
              "B": g.standard_normal((2, 4, 4)), "v": g.standard_normal(4),
              "p": g.uniform(0.1, 0.9, (4, 4)), "x": g.standard_normal((1, 2, 5, 5)),
              "w": g.standard_normal((3, 2, 3, 3))}
    dtype = getattr(mod, dtype_name)
    out = {k: mod.tensor(v.astype(np.float32)).to(device).to(dtype) for k, v in arrays.items()}
    out["t"] = mod.tensor([0, 3, 1, 2]).to(device)
    return out


CALLS = [
    ("mm", lambda m, F, t: m.mm(t["a"], t["b"])),
    ("matmul operator", lambda m, F, t: t["a"] @ t["b"]),
    ("bmm", lambda m, F, t: m.bmm(t["B"], t["B"])),
    ("addmm", lambda m, F, t: m.addmm(t["v"], t["a"], t["b"])),
    ("mv", lambda m, F, t: m.mv(t["a"], t["v"])),
    ("conv2d", lambda m, F, t: F.conv2d(t["x"], t["w"])),
    ("linear", lambda m, F, t: F.linear(t["a"], t["b"], t["v"])),
    ("exp", lambda m, F, t: t["a"].exp()),
    ("log", lambda m, F, t: m.log(t["p"])),
    ("pow", lambda m, F, t: t["a"].pow(2)),
    ("softmax", lambda m, F, t: m.softmax(t["a"], 1)),
    ("log_softmax", lambda m, F, t: F.log_softmax(t["a"], 1)),
    ("sum", lambda m, F, t: t["a"].sum()),
    ("cumsum", lambda m, F, t: t["a"].cumsum(0)),
    ("layer_norm", lambda m, F, t: F.layer_norm(t["a"], (4,))),
    ("mse_loss", lambda m, F, t: F.mse_loss(t["a"], t["b"])),
    ("cross_entropy", lambda m, F, t: F.cross_entropy(t["a"], t["t"])),
    ("cat", lambda m, F, t: m.cat([t["a"], t["b"]])),
    ("relu (not listed)", lambda m, F, t: F.relu(t["a"])),
    ("add (not listed)", lambda m, F, t: t["a"] + t["b"]),
]


@pytest.mark.parametrize("name,call", CALLS, ids=[c[0] for c in CALLS])
@pytest.mark.parametrize("region", ["float16", "bfloat16"])
@pytest.mark.parametrize("inp", ["float32", "float16"])
def test_cuda_dtypes_match_torch(name, call, region, inp):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no GPU")
    ours = _inputs(ember, inp)
    theirs = _inputs(torch, inp)
    with torch.autocast("cuda", dtype=getattr(torch, region)):
        try:
            want = call(torch, torch.nn.functional, theirs)
        except RuntimeError as e:  # torch refuses the mix: ember must too
            with ember.autocast("cuda", dtype=getattr(ember, region)):
                with pytest.raises(RuntimeError, match=re.escape(str(e).splitlines()[0])):
                    call(ember, F, ours)
            return
    with ember.autocast("cuda", dtype=getattr(ember, region)):
        got = call(ember, F, ours)
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    tol = 2e-2 if "16" in region else 1e-5
    np.testing.assert_allclose(got.float().cpu().numpy(), want.float().cpu().numpy(),
                               rtol=tol, atol=tol)


def test_cuda_region_casts_as_listed_without_torch():
    t = _inputs(ember)
    with ember.autocast("cuda"):
        assert (t["a"] @ t["b"]).dtype == f16
        assert t["a"].half().exp().dtype == f32
        assert ember.softmax(t["a"].half(), 0).dtype == f32
        assert ember.cat([t["a"].half(), t["b"]]).dtype == f32
        # cat is not on CUDA's list (it promotes by itself): float16 parts in a bfloat16 region
        # stay float16, where the CPU's list refuses the mix
        with ember.autocast("cuda", dtype=ember.bfloat16):
            assert ember.cat([t["a"].half(), t["b"].half()]).dtype == f16
        # CPU tensors are not touched by a CUDA region
        assert (t["a"].cpu() @ t["b"].cpu()).dtype == f32
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(t["p"], t["p"])


def test_cuda_gradients_reach_float32_parameters():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to("cuda")
    x = ember.randn(5, 4).to("cuda")
    target = ember.tensor([0, 1, 2, 0, 1]).to("cuda")
    with ember.autocast("cuda"):
        out = model(x)
        loss = F.cross_entropy(out, target)
    assert out.dtype == f16 and loss.dtype == f32
    loss.backward()
    for p in model.parameters():
        assert p.grad.dtype == f32 and p.grad.is_cuda and bool(ember.isfinite(p.grad).all())


def test_cuda_grad_scaler_loop():
    scaler = ember.amp.GradScaler("cuda", init_scale=2.0**10, growth_interval=2)
    p = nn.Parameter(ember.zeros(3).to("cuda"))
    opt = ember.optim.SGD([p], lr=0.1)
    scales = []
    for step in range(5):
        opt.zero_grad()
        with ember.autocast("cuda"):
            loss = (p.half() * ember.ones(3).to("cuda")).sum()
        scaler.scale(loss.float()).backward()
        if step == 2:
            p.grad[0] = math.inf
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    assert scales == [1024.0, 2048.0, 1024.0, 1024.0, 2048.0]
    np.testing.assert_allclose(p.detach().cpu().numpy(), [-0.4] * 3, rtol=1e-6)
    assert scaler._scale.is_cuda
