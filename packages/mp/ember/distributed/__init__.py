"""ember.distributed: torch.distributed's process groups and collectives for ember tensors.

Backends, chosen per device type (``init_process_group(backend=...)``):

- ``mpi`` (CPU tensors, the default): MPI through mpi4py, from one machine to many; install
  ``ember-mp[mpi]`` (mpi4py and the MPICH wheel). Run under ``mpiexec -n N python train.py``, under
  ``python -m ember.distributed.run``, or alone as a world of one.
- ``nccl`` (CUDA tensors, the default for them): NCCL through CuPy.
- ``shm`` (CPU tensors, one machine): ember's own shared-memory all-reduce, faster than MPI's
  shared-memory path on one machine (docs/distributed.md has the figures).

Data-parallel training wraps the model in ``ember.nn.parallel.DistributedDataParallel``::

    dist.init_process_group()                 # under mpiexec, or the launcher's env://
    model = DistributedDataParallel(model)
    loss_fn(model(x), y).backward()           # gradients averaged over the ranks

The argument checks, errors and rank rules are torch's (``distributed_c10d``); the data moves in
the backend modules (``_mpi``, ``_nccl``, ``_shm``); processes meet through a store (``_store``).
"""

from __future__ import annotations

from ._store import FileStore, PrefixStore, Store, TCPStore
from .distributed_c10d import *  # noqa: F403 - torch.distributed's flat namespace
from .distributed_c10d import __all__ as _c10d_all

__all__ = [*_c10d_all, "FileStore", "PrefixStore", "Store", "TCPStore"]
