"""SyncBatchNorm checks, run by every rank under ``mpiexec -n 2 python sync_bn_checks.py``
(tests/test_sync_batchnorm.py): each rank normalises its half of a batch with statistics over
the whole batch, so outputs, input gradients, summed weight gradients and running statistics
equal one BatchNorm's over the whole batch in one process. Prints ``ok syncbn rank R/N``."""

from __future__ import annotations

import sys

import numpy as np

import ember
import ember.autograd  # noqa: F401
import ember.distributed as dist
import ember.nn as nn


def main() -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4 * world, 3, 5, 5)) * 2 + 1
    g = rng.standard_normal(x.shape)
    per = 4

    ref = nn.BatchNorm2d(3).double()
    with ember.no_grad():
        ref.weight.copy_(ember.tensor([1.0, 2.0, 0.5], dtype=ember.float64))
    whole = ember.tensor(x, requires_grad=True)
    ref_out = ref(whole)
    ref_out.backward(ember.tensor(g))

    sbn = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm2d(3))).double()
    with ember.no_grad():
        sbn[0].weight.copy_(ember.tensor([1.0, 2.0, 0.5], dtype=ember.float64))
    mine = ember.tensor(x[rank * per:(rank + 1) * per], requires_grad=True)
    out = sbn(mine)
    out.backward(ember.tensor(g[rank * per:(rank + 1) * per]))

    sl = slice(rank * per, (rank + 1) * per)
    np.testing.assert_allclose(out.detach().numpy(), ref_out.detach().numpy()[sl], rtol=1e-10)
    np.testing.assert_allclose(mine.grad.numpy(), whole.grad.numpy()[sl], rtol=1e-9,
                               atol=1e-12)
    for name in ("weight", "bias"):
        summed = getattr(sbn[0], name).grad.clone()
        dist.all_reduce(summed)
        np.testing.assert_allclose(summed.numpy(), getattr(ref, name).grad.numpy(), rtol=1e-9)
    np.testing.assert_allclose(sbn[0].running_mean.numpy(), ref.running_mean.numpy(),
                               rtol=1e-10)
    np.testing.assert_allclose(sbn[0].running_var.numpy(), ref.running_var.numpy(), rtol=1e-10)
    assert int(sbn[0].num_batches_tracked.item()) == 1
    print(f"ok syncbn rank {rank}/{world}", flush=True)


if __name__ == "__main__":
    dist.init_process_group(sys.argv[1] if len(sys.argv) > 1 else None)
    try:
        main()
    finally:
        dist.destroy_process_group()
