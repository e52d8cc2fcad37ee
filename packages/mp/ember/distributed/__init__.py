"""ember.distributed: torch.distributed's collectives between the processes of one machine.

The ``shm`` backend moves data through shared memory (see ``_shm.py``); the processes find each
other with ``init_method`` as in torch (``env://`` reads MASTER_ADDR, MASTER_PORT, RANK and
WORLD_SIZE; ``tcp://host:port``; ``file:///path``). Data-parallel training averages gradients
with it::

    dist.init_process_group("shm", init_method="env://")
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)

Only the default group exists (``group=None``), collectives are synchronous (``async_op=True``
returns a completed ``Work``), and tensors are CPU tensors. A backend for several machines (MPI)
comes later.
"""

from __future__ import annotations

import datetime

import ember

from . import _rendezvous, _shm
from ._shm import ReduceOp

__all__ = [
    "ReduceOp",
    "Work",
    "all_gather",
    "all_reduce",
    "barrier",
    "broadcast",
    "destroy_process_group",
    "get_backend",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "is_available",
    "is_initialized",
]

default_pg_timeout = datetime.timedelta(minutes=30)
_group: _shm.ShmGroup | None = None


class Work:
    """What a collective called with ``async_op=True`` returns; it has already completed."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return _group is not None


def _default_group() -> _shm.ShmGroup:
    if _group is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return _group


def _check_group(group) -> None:
    if group is not None:
        raise ValueError("ember.distributed: only the default group (group=None) is supported")


def _done(async_op: bool):
    return Work() if async_op else None


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: datetime.timedelta | None = None, world_size: int = -1,
                       rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Joins this process to the default group (torch.distributed.init_process_group).

    ``backend``: ``"shm"`` (the default), processes on one machine. ``init_method``: ``env://``
    (the default), ``tcp://host:port`` or ``file:///path``. ``timeout`` bounds the rendezvous and
    each collective's wait for the other ranks (default 30 minutes); a rank whose process exits
    makes the others' collectives fail at once instead of waiting.
    """
    global _group
    if _group is not None:
        raise ValueError("trying to initialize the default process group twice!")
    backend = "shm" if backend is None else str(backend).lower()
    if backend != "shm":
        raise RuntimeError(f"ember.distributed has no {backend!r} backend: 'shm' (processes on one "
                           "machine) is the only one so far; a multi-machine backend (MPI) comes "
                           "later")
    if store is not None:
        raise ValueError("ember.distributed: store= is not supported; pass init_method")
    timeout = default_pg_timeout if timeout is None else timeout
    seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
    kind, where, rank, world_size = _rendezvous.parse(init_method or "env://", rank, world_size)
    prefix_box = []

    def create():
        prefix = _shm.new_prefix()
        name = f"/{prefix}_ctl"
        from ember.multiprocessing import reductions

        reductions._register_name(name)
        ctl = ember.UntypedStorage._new_using_filename_cpu(_shm._LINE * (world_size + 1), name)
        prefix_box.append(prefix)
        return name, ctl

    def open_(name):
        ctl = ember.UntypedStorage._new_shared_filename_cpu(name, _shm._LINE * (world_size + 1))
        prefix_box.append(name[1:-len("_ctl")])
        return ctl

    ctl, done = _rendezvous.rendezvous(kind, where, rank, world_size, seconds, create, open_)
    group = _shm.ShmGroup(rank, world_size, ctl, prefix_box[-1], seconds)
    group.sync(_shm._encode("barrier"))  # everyone has the control segment
    done()
    _group = group


def destroy_process_group(group=None) -> None:
    """Leaves the default group; its shared memory goes when the last rank has left."""
    global _group
    _check_group(group)
    if _group is not None:
        _group.close()
    _group = None


def get_backend(group=None) -> str:
    _check_group(group)
    _default_group()
    return "shm"


def get_rank(group=None) -> int:
    _check_group(group)
    return _default_group().rank


def get_world_size(group=None) -> int:
    _check_group(group)
    return _default_group().world


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Waits until every rank has called it."""
    _check_group(group)
    _default_group().barrier()
    return _done(async_op)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Combines ``tensor`` across the ranks with ``op``, in place: every rank gets the result."""
    _check_group(group)
    g = _default_group()
    if not isinstance(op, ReduceOp):
        raise ValueError(f"ember.distributed.all_reduce: op must be a ReduceOp, got {op!r}")
    if op is ReduceOp.AVG and not tensor.dtype.is_floating_point:
        raise ValueError(f"ember.distributed.all_reduce: ReduceOp.AVG needs a floating-point "
                         f"tensor, got {tensor.dtype}")
    g.all_reduce(tensor, op)
    return _done(async_op)


def broadcast(tensor, src: int, group=None, async_op: bool = False):
    """Copies rank ``src``'s ``tensor`` into every other rank's ``tensor``."""
    _check_group(group)
    g = _default_group()
    if not 0 <= src < g.world:
        raise ValueError(f"ember.distributed.broadcast: src={src} is not a rank of this group "
                         f"(world_size={g.world})")
    g.broadcast(tensor, src)
    return _done(async_op)


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """Fills ``tensor_list[r]`` with rank r's ``tensor``, on every rank."""
    _check_group(group)
    g = _default_group()
    if len(tensor_list) != g.world:
        raise ValueError(f"ember.distributed.all_gather: tensor_list has {len(tensor_list)} "
                         f"tensors, expected world_size={g.world}")
    for t in tensor_list:
        if tuple(t.shape) != tuple(tensor.shape) or t.dtype != tensor.dtype:
            raise ValueError("ember.distributed.all_gather: every output tensor must have the "
                             f"input's shape {tuple(tensor.shape)} and dtype {tensor.dtype}; got "
                             f"{tuple(t.shape)} {t.dtype}")
    g.all_gather(tensor_list, tensor)
    return _done(async_op)

