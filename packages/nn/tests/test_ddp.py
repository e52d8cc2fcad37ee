"""DistributedDataParallel: the checks of ddp_checks.py on 2 ranks under mpiexec (weights after 20
steps equal to one process's with the whole batch, no_sync, unused parameters, errors), and a
world of one in this process."""

from __future__ import annotations

import numpy as np
import pytest
from _mpi import run_two_ranks

import ember

dist = pytest.importorskip("ember.distributed", reason="ember-mp is not installed")
nn = pytest.importorskip("ember.nn")


def test_two_ranks_under_mpiexec():
    out = run_two_ranks("ddp_checks.py")
    assert "ok ddp rank 0/2:" in out and "ok ddp rank 1/2:" in out, out[-4000:]


def test_world_of_one(tmp_path):
    from ember.nn.parallel import DistributedDataParallel as DDP

    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DDP(nn.Linear(2, 2))
    dist.init_process_group("shm", init_method=f"file://{tmp_path}/rdv", rank=0, world_size=1)
    try:
        ember.manual_seed(0)
        model = DDP(nn.Linear(3, 2), bucket_cap_mb=0)
        ember.manual_seed(0)
        ref = nn.Linear(3, 2)
        x = ember.from_numpy(np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32))
        model(x).square().sum().backward()
        ref(x).square().sum().backward()
        for p, q in zip(model.parameters(), ref.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)
        assert set(model.state_dict()) == {"module.weight", "module.bias"}
        with pytest.raises(RuntimeError, match="doesn't have any parameter that requires"):
            DDP(nn.ReLU())
    finally:
        dist.destroy_process_group()
