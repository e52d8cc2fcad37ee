"""SyncBatchNorm on 2 ranks under mpiexec (sync_bn_checks.py): the whole batch's statistics and
gradients, as one process's BatchNorm over the whole batch."""

from __future__ import annotations

import pytest
from _mpi import run_two_ranks

pytest.importorskip("ember.distributed", reason="ember-mp is not installed")


def test_two_ranks_under_mpiexec():
    out = run_two_ranks("sync_bn_checks.py")
    assert "ok syncbn rank 0/2" in out and "ok syncbn rank 1/2" in out, out[-4000:]
