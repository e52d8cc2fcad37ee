"""DistributedDataParallel checks, run by every rank under ``mpiexec -n 2 python ddp_checks.py``
(tests/test_ddp.py). Every rank also trains a plain replica on the whole batch itself, the
single-process reference, and compares. Prints ``ok ddp rank R/N: C checks``."""

from __future__ import annotations

import sys

import numpy as np

import ember
import ember.distributed as dist
import ember.nn as nn
from ember.nn.parallel import DistributedDataParallel as DDP

checks = 0
B = 8  # per-rank batch


def mlp(seed: int):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3))


def batch(step: int, world: int):
    rng = np.random.default_rng(step)
    x = rng.standard_normal((world * B, 4)).astype(np.float32)
    y = rng.standard_normal((world * B, 3)).astype(np.float32)
    return ember.from_numpy(x), ember.from_numpy(y)


def close(a, b, what: str, rtol=1e-5, atol=1e-6) -> None:
    global checks
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol,
                               err_msg=what)
    checks += 1


def same_weights_as_one_process(bucket_cap_mb) -> None:
    """2 ranks with batch B each == one process with batch 2B, after 20 SGD steps."""
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(mlp(seed=rank), bucket_cap_mb=bucket_cap_mb)  # rank 0's weights win
    ref = mlp(seed=0)
    for p, q in zip(model.module.parameters(), ref.parameters()):
        close(p, q, "initial broadcast", 0, 0)
    opt = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ref_opt = ember.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.MSELoss()
    for step in range(20):
        x, y = batch(step, world)
        opt.zero_grad()
        loss_fn(model(x[rank * B:(rank + 1) * B]), y[rank * B:(rank + 1) * B]).backward()
        opt.step()
        ref_opt.zero_grad()
        loss_fn(ref(x), y).backward()
        ref_opt.step()
    for p, q in zip(model.module.parameters(), ref.parameters()):
        close(p, q, f"weights after 20 steps (bucket_cap_mb={bucket_cap_mb})")
    if bucket_cap_mb is not None:
        assert len(model._buckets) > 1, len(model._buckets)


def no_sync_accumulates() -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(mlp(seed=1))
    ref = mlp(seed=1)
    loss_fn = nn.MSELoss()
    (x1, y1), (x2, y2) = batch(100, world), batch(101, world)
    mine = slice(rank * B, (rank + 1) * B)
    with model.no_sync():
        loss_fn(model(x1[mine]), y1[mine]).backward()
    local = [p.grad.clone() for p in model.parameters()]
    loss_fn(model(x2[mine]), y2[mine]).backward()
    (loss_fn(ref(x1), y1) + loss_fn(ref(x2), y2)).backward()
    for p, q in zip(model.module.parameters(), ref.parameters()):
        close(p.grad, q.grad, "no_sync then sync")
    # inside no_sync the gradients stayed local (they differ between the ranks)
    everyone = [None] * world
    dist.all_gather_object(everyone, [g.numpy().tolist() for g in local])
    assert everyone[0] != everyone[1]


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        ember.manual_seed(5)
        self.body = nn.Linear(4, 8)
        self.head = nn.Linear(8, 3)
        self.extra = nn.Linear(8, 3)  # used on rank 0 only
        self.never = nn.Linear(8, 3)  # used nowhere
        self.register_buffer("count", ember.zeros(1))

    def forward(self, x, use_extra: bool):
        h = self.body(x).tanh()
        out = self.head(h)
        return out + self.extra(h) if use_extra else out


def unused_parameters() -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    local = TwoHeads()
    local.count.fill_(float(rank + 7))  # buffers differ: DDP's forward broadcasts rank 0's
    model = DDP(local, find_unused_parameters=True)
    x, y = batch(200, world)
    loss_fn = nn.MSELoss()
    mine = slice(rank * B, (rank + 1) * B)
    for _ in range(2):  # a second step: the reduction of the first one finished
        model.zero_grad()
        loss_fn(model(x[mine], rank == 0), y[mine]).backward()
    assert float(model.module.count.item()) == 7.0
    assert model.module.never.weight.grad is None  # unused on every rank: untouched
    # reference: the mean of what each rank's replica computes on its own data
    want = {}
    for r in range(world):
        rep = TwoHeads()
        loss_fn(rep(x[r * B:(r + 1) * B], r == 0), y[r * B:(r + 1) * B]).backward()
        for name, p in rep.named_parameters():
            if name.startswith("never"):
                continue
            g = p.grad if p.grad is not None else ember.zeros_like(p)
            want[name] = want.get(name, 0) + g / world
    for name, p in model.module.named_parameters():
        if name in want:
            close(p.grad, want[name], f"find_unused_parameters {name}")


def unused_without_detection_raises() -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(TwoHeads())
    x, y = batch(300, world)
    mine = slice(rank * B, (rank + 1) * B)
    nn.MSELoss()(model(x[mine], False), y[mine]).backward()  # extra and never get no gradient
    try:
        model(x[mine], False)
    except RuntimeError as e:
        assert "Expected to have finished reduction in the prior iteration" in str(e), str(e)
        assert "find_unused_parameters=True" in str(e)
    else:
        raise AssertionError("no error")
    global checks
    checks += 1


def different_models_raise() -> None:
    rank = dist.get_rank()
    try:
        DDP(nn.Linear(4, 3 + rank))
    except RuntimeError as e:
        assert "DDP expects same model across all ranks" in str(e), str(e)
    else:
        raise AssertionError("no error")
    global checks
    checks += 1


if __name__ == "__main__":
    dist.init_process_group(sys.argv[1] if len(sys.argv) > 1 else None)
    same_weights_as_one_process(None)
    same_weights_as_one_process(0.0002)  # a bucket per parameter or two
    no_sync_accumulates()
    unused_parameters()
    unused_without_detection_raises()
    different_models_raise()
    print(f"ok ddp rank {dist.get_rank()}/{dist.get_world_size()}: {checks} checks", flush=True)
    dist.destroy_process_group()
