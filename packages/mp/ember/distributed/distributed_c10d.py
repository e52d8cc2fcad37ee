"""torch.distributed's process groups and collectives over ember's backends.

This module checks arguments (torch's exceptions and wording), turns global ranks into group
ranks, picks the backend by the tensors' device type, and leaves the data to the backend
(``_mpi``, ``_nccl``, ``_shm``). A group is a ``ProcessGroup`` holding one backend per device
type: ``"cpu:mpi,cuda:nccl"`` (the default) makes the MPI backend at init and the NCCL one on the
first collective on CUDA tensors, as torch makes its NCCL communicators.
"""

from __future__ import annotations

import datetime
import io
import os
import pickle
import warnings

import ember

from . import _store
from ._backend import DistBackendError, ReduceOp, Work, _make_nccl_premul_sum, check_op

default_pg_timeout = datetime.timedelta(minutes=30)


class Backend(str):
    """Backend names, as torch.distributed.Backend (``Backend("MPI") == "mpi"``)."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    SHM = "shm"
    backend_list = ["mpi", "nccl", "shm"]
    default_device_backend_map = {"cpu": "mpi", "cuda": "nccl"}

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {name!r}")
        return str.__new__(cls, name.lower())


class ProcessGroup:
    """A group of processes: its size, this process's rank in it, the global ranks of its
    members, and a backend per device type."""

    def __init__(self, ranks: list[int], group_rank: int, backends: dict, spec: dict,
                 store, timeout: float, gid: int, make_cuda=None) -> None:
        self._ranks = ranks
        self._rank = group_rank
        self._backends = backends
        self._spec = spec  # device type -> backend name
        self._store = store
        self._timeout = timeout
        self._gid = gid
        self._make_cuda = make_cuda  # builds the CUDA backend on first use

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return len(self._ranks)

    def name(self) -> str:
        return _backend_string(self._spec)

    def _get_backend(self, device_type: str, fn: str):
        b = self._backends.get(device_type)
        if b is None and device_type == "cuda" and self._make_cuda is not None:
            b = self._backends["cuda"] = self._make_cuda()
        if b is None:
            raise RuntimeError(f"ember.distributed.{fn}: no backend for {device_type} tensors in "
                               f"this group (backend {self.name()!r}); init_process_group("
                               f"backend='cpu:mpi,cuda:nccl') serves both")
        return b

    def __repr__(self) -> str:
        return f"<ProcessGroup {self._gid} ranks={self._ranks} backend={self.name()!r}>"


class _NonMember:
    def __repr__(self) -> str:
        return "<ember.distributed.GroupMember.NON_GROUP_MEMBER>"


class GroupMember:
    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = _NonMember()


class group:  # noqa: N801 - torch's name
    WORLD: ProcessGroup | None = None


_groups: list[ProcessGroup] = []


def _set_world(pg) -> None:
    GroupMember.WORLD = pg
    group.WORLD = pg


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return GroupMember.WORLD is not None


def is_mpi_available() -> bool:
    from . import _mpi

    return _mpi.available()


def is_nccl_available() -> bool:
    from . import _nccl

    return _nccl.available()


def is_gloo_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def _default_group() -> ProcessGroup:
    if GroupMember.WORLD is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return GroupMember.WORLD


def _seconds(timeout) -> float:
    if timeout is None:
        return default_pg_timeout.total_seconds()
    return timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)


def _parse_backend(backend) -> dict:
    """'mpi' / 'nccl' / 'shm' / 'cpu:mpi,cuda:nccl' / None -> {device type: backend name}."""
    if backend is None or str(backend).lower() == "undefined":
        return dict(Backend.default_device_backend_map)
    text = str(backend).lower()
    if ":" in text:
        spec = {}
        for part in text.split(","):
            device, _, name = part.strip().partition(":")
            if device not in ("cpu", "cuda") or not name:
                raise ValueError(f"ember.distributed: cannot read backend {backend!r}: expected "
                                 "'<device>:<backend>' pairs such as 'cpu:mpi,cuda:nccl'")
            spec[device] = name
    else:
        spec = {"cuda": text} if text == "nccl" else {"cpu": text}
    for device, name in spec.items():
        if name == "gloo":
            raise RuntimeError("ember.distributed has no gloo backend: use 'mpi' (CPU tensors, "
                               "one or many machines) or 'shm' (CPU tensors, one machine)")
        allowed = {"cpu": ("mpi", "shm"), "cuda": ("nccl",)}[device]
        if name not in allowed:
            raise RuntimeError(f"ember.distributed: invalid backend {name!r} for {device} tensors:"
                               f" use {' or '.join(repr(a) for a in allowed)}")
    return spec


def _backend_string(spec: dict) -> str:
    if len(spec) == 1:
        return next(iter(spec.values()))
    return ",".join(f"{d}:{n}" for d, n in spec.items())


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: datetime.timedelta | None = None, world_size: int = -1,
                       rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Joins this process to the default group (torch.distributed.init_process_group).

    ``backend``: ``"mpi"`` (CPU tensors; mpi4py), ``"nccl"`` (CUDA tensors; CuPy's NCCL),
    ``"shm"`` (CPU tensors, one machine, shared memory), or per device type such as
    ``"cpu:mpi,cuda:nccl"`` (the default). ``init_method``: ``env://`` (the default; MASTER_ADDR,
    MASTER_PORT, RANK, WORLD_SIZE), ``tcp://host:port`` or ``file:///path``; or ``store=`` with
    ``rank`` and ``world_size``. Under ``mpiexec`` the mpi backend takes rank and world size from
    MPI. ``timeout`` bounds the rendezvous and every wait for the other ranks (default 30 min).
    """
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None and init_method is not None:
        raise ValueError("Cannot specify both init_method and store.")
    if store is not None and (rank < 0 or world_size <= 0):
        raise ValueError("rank and world_size must be given with store=")
    spec = _parse_backend(backend)
    if spec.get("cuda") == "nccl" and "cpu" not in spec:
        from . import _nccl

        _nccl.load()  # nccl alone: say at once that CuPy's NCCL is missing
    seconds = _seconds(timeout)
    cpu = spec.get("cpu")
    made_store = None

    def get_store(init, r, w):
        nonlocal made_store
        if store is not None:
            return store, r, w
        made_store, r, w = _store.rendezvous(init or "env://", r, w, seconds)
        return made_store, r, w

    backends = {}
    if cpu == "mpi":
        from . import _mpi

        cpu_backend = _mpi.create_world(rank, world_size, init_method, seconds, get_store)
        rank, world_size = cpu_backend.rank, cpu_backend.size
        backends["cpu"] = cpu_backend
        st = store
    else:
        st, rank, world_size = get_store(init_method, rank, world_size)
        _store.store_barrier(st, rank, world_size, "ember/init", seconds)
        if cpu == "shm":
            from . import _shm

            backends["cpu"] = _shm.create_world(rank, world_size, st, seconds)
    if made_store is not None and st is not made_store:  # the mpi join is done with it
        st = None
    pg = ProcessGroup(list(range(world_size)), rank, backends, spec, st, seconds, 0)
    if "cuda" in spec:
        pg._make_cuda = lambda: _make_nccl(pg, backends.get("cpu"), st, 0, seconds)
        if device_id is not None:
            dev = ember.device(device_id)
            pg._get_backend("cuda", "init_process_group")._comm(
                dev.index if dev.index is not None else ember.cuda.current_device())
    _groups.append(pg)
    _set_world(pg)


def _make_nccl(pg: ProcessGroup, cpu_backend, store, gid: int, seconds: float):
    from . import _mpi, _nccl

    _nccl.load()
    if cpu_backend is not None and isinstance(cpu_backend, _mpi.MPIBackend):
        def exchange(data):
            box = []

            def fn():
                box.append(cpu_backend.comm.bcast(data, root=0))

            cpu_backend._run("nccl unique id", fn).wait()
            return box[0]
    elif store is not None:
        def exchange(data):
            key = f"ember/nccl/{gid}/uid"
            if data is not None:
                store.set(key, data)
                return data
            return store.get(key)
    else:
        raise RuntimeError("ember.distributed: the nccl backend needs the rendezvous store or the "
                           "mpi backend to pass NCCL's unique id")
    return _nccl.NCCLBackend(pg.rank(), pg.size(), seconds, exchange)


def destroy_process_group(group=None) -> None:
    """Leaves ``group``, or every group when it is None (the default group included)."""
    if group is None:
        groups = list(reversed(_groups))
    elif group is GroupMember.NON_GROUP_MEMBER:
        return
    else:
        groups = [group]
    for pg in groups:
        for b in pg._backends.values():
            b.close()
        pg._backends = {}
        if pg._store is not None and pg is GroupMember.WORLD:
            path = getattr(pg._store, "path", None)
            pg._store.close()
            if path is not None and pg._rank == 0:
                try:
                    os.unlink(path)  # the file:// rendezvous leaves nothing behind
                except OSError:
                    pass
        if pg in _groups:
            _groups.remove(pg)
    if group is None or group is GroupMember.WORLD:
        _groups.clear()
        _set_world(None)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None):
    """A group of the given global ranks (all of them when None). Every process of the default
    group must call it, members or not (torch's rule); non-members get
    ``GroupMember.NON_GROUP_MEMBER``."""
    world = _default_group()
    n = world.size()
    ranks = sorted(set(range(n) if ranks is None else (int(r) for r in ranks)))
    for r in ranks:
        if not 0 <= r < n:
            raise ValueError(f"ember.distributed.new_group: rank {r} is not in the default "
                             f"group (world_size={n})")
    seconds = _seconds(timeout) if timeout is not None else world._timeout
    spec = world._spec if backend is None else _parse_backend(backend)
    gid = 1 + max((g._gid for g in _groups), default=0)
    me = world.rank()
    backends = {}
    cpu = world._backends.get("cpu")
    if "cpu" in spec and cpu is not None:
        if ranks == list(range(n)) and spec.get("cpu") == "shm":
            backends["cpu"] = cpu  # the shm backend has one group: the whole world
        else:
            backends["cpu"] = cpu.new_subgroup(ranks, seconds)
    if me not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(ranks, ranks.index(me), {k: v for k, v in backends.items() if v},
                      spec, None, seconds, gid)
    if "cuda" in spec:
        pg._make_cuda = lambda: _make_nccl(pg, pg._backends.get("cpu"), world._store, gid,
                                           seconds)
    _groups.append(pg)
    return pg


# -- queries ----------------------------------------------------------------------------------

def _group(g) -> ProcessGroup:
    return _default_group() if g is None else g


def _not_member(g) -> bool:
    return g is GroupMember.NON_GROUP_MEMBER


def get_rank(group=None) -> int:
    if _not_member(group):
        return -1
    g = _group(group)
    return g._ranks[g.rank()]


def get_world_size(group=None) -> int:
    if _not_member(group):
        return -1
    return _group(group).size()


def get_backend(group=None) -> str:
    if _not_member(group):
        raise ValueError("Invalid process group specified")
    return _group(group).name()


def get_process_group_ranks(group) -> list[int]:
    return list(_group(group)._ranks)


def get_group_rank(group, global_rank: int) -> int:
    g = _group(group)
    if global_rank not in g._ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {g}")
    return g._ranks.index(global_rank)


def get_global_rank(group, group_rank: int) -> int:
    g = _group(group)
    if not 0 <= group_rank < g.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {g}")
    return g._ranks[group_rank]


# -- argument checks --------------------------------------------------------------------------

def _check_single_tensor(param, name: str) -> None:
    if not isinstance(param, ember.Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"ember.Tensor\n             but got {type(param)} instead.")


def _check_tensor_list(param, name: str) -> None:
    if not isinstance(param, list) or not all(isinstance(p, ember.Tensor) for p in param):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[ember.Tensor]\n             but got {type(param)} instead.")


def _same_dtype(*tensors) -> None:
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        a, b = sorted(dtypes, key=str)[:2]
        raise RuntimeError(f"Invalid usage of tensors with different dtypes. Found {a} and {b}")


def _warn_not_in_group(fn: str) -> None:
    warnings.warn(f"Running {fn} on global rank {get_rank()} which does not belong to the "
                  "given group.", stacklevel=3)


def _root(g: ProcessGroup, rank, group_rank, what: str, fn: str) -> int:
    """The group rank of a root given as a global rank (``src``/``dst``) or a group rank."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"Can not specify both {what} and group_{what}")
    if group_rank is not None:
        if not 0 <= group_rank < g.size():
            raise ValueError(f"ember.distributed.{fn}: group_{what}={group_rank} is not a rank "
                             f"of the group (size {g.size()})")
        return group_rank
    if rank is None:
        rank = 0 if g is GroupMember.WORLD else None
        if rank is None:
            raise ValueError(f"Must specify {what} or group_{what}")
    return get_group_rank(g, rank)


def _backend_of(g: ProcessGroup, tensors, fn: str):
    devices = {t.device.type for t in tensors}
    if len(devices) > 1:
        raise ValueError(f"ember.distributed.{fn}: tensors on different device types "
                         f"{sorted(devices)}")
    device = devices.pop() if devices else "cpu"
    b = g._get_backend(device, fn)
    b.check_usable()
    return b


def _finish(work: Work, async_op: bool):
    if async_op:
        return work
    work.wait()
    return None


# -- collectives ------------------------------------------------------------------------------

def barrier(group=None, async_op: bool = False, device_ids=None):
    """Waits until every rank of the group has called it."""
    if _not_member(group):
        return _warn_not_in_group("barrier")
    g = _group(group)
    b = g._backends.get("cpu") or g._get_backend("cuda", "barrier")
    b.check_usable()
    return _finish(b.barrier(), async_op)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Combines ``tensor`` across the ranks with ``op``, in place: every rank gets the result."""
    _check_single_tensor(tensor, "tensor")
    if _not_member(group):
        return _warn_not_in_group("all_reduce")
    g = _group(group)
    op, factor = check_op("all_reduce", op, tensor.dtype)
    return _finish(_backend_of(g, [tensor], "all_reduce").allreduce(tensor, op, factor), async_op)


def broadcast(tensor, src: int | None = None, group=None, async_op: bool = False,
              group_src: int | None = None):
    """Copies rank ``src``'s ``tensor`` into every other rank's ``tensor``."""
    _check_single_tensor(tensor, "tensor")
    if _not_member(group):
        return _warn_not_in_group("broadcast")
    g = _group(group)
    root = _root(g, src, group_src, "src", "broadcast")
    return _finish(_backend_of(g, [tensor], "broadcast").broadcast(tensor, root), async_op)


def reduce(tensor, dst: int | None = None, op=ReduceOp.SUM, group=None, async_op: bool = False,
           group_dst: int | None = None):
    """Combines ``tensor`` across the ranks into rank ``dst``'s ``tensor``."""
    _check_single_tensor(tensor, "tensor")
    if _not_member(group):
        return _warn_not_in_group("reduce")
    g = _group(group)
    root = _root(g, dst, group_dst, "dst", "reduce")
    op, factor = check_op("reduce", op, tensor.dtype)
    return _finish(_backend_of(g, [tensor], "reduce").reduce(tensor, root, op, factor), async_op)


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """Fills ``tensor_list[r]`` with rank r's ``tensor``, on every rank."""
    _check_tensor_list(tensor_list, "tensor_list")
    _check_single_tensor(tensor, "tensor")
    if _not_member(group):
        return _warn_not_in_group("all_gather")
    g = _group(group)
    _same_dtype(tensor, *tensor_list)
    if len(tensor_list) != g.size():
        raise ValueError(f"ember.distributed.all_gather: tensor_list has {len(tensor_list)} "
                         f"tensors, expected world_size={g.size()}")
    for t in tensor_list:
        if t.numel() != tensor.numel():
            raise ValueError("ember.distributed.all_gather: every output tensor must have as many "
                             f"elements as the input {tuple(tensor.shape)}; got {tuple(t.shape)}")
    b = _backend_of(g, [tensor, *tensor_list], "all_gather")
    return _finish(b.allgather(tensor_list, tensor), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """Rank r's ``input_tensor`` lands in ``output_tensor``'s r-th chunk (of dim 0 when
    ``output_tensor`` stacks or concatenates the inputs)."""
    _check_single_tensor(output_tensor, "output_tensor")
    _check_single_tensor(input_tensor, "input_tensor")
    if _not_member(group):
        return _warn_not_in_group("all_gather_into_tensor")
    g = _group(group)
    _same_dtype(output_tensor, input_tensor)
    if output_tensor.numel() != g.size() * input_tensor.numel():
        raise ValueError("output tensor size must be equal to world_size times input tensor size"
                         f" (ember.distributed.all_gather_into_tensor: {tuple(output_tensor.shape)}"
                         f" vs {g.size()} x {tuple(input_tensor.shape)})")
    b = _backend_of(g, [output_tensor, input_tensor], "all_gather_into_tensor")
    return _finish(b.allgather_into_tensor(output_tensor, input_tensor), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduces ``input`` across the ranks; rank r keeps chunk r of the result in ``output``."""
    _check_single_tensor(output, "output")
    _check_single_tensor(input, "input")
    if _not_member(group):
        return _warn_not_in_group("reduce_scatter_tensor")
    g = _group(group)
    _same_dtype(output, input)
    if input.numel() != g.size() * output.numel():
        raise ValueError("input tensor must be the same size as output size times world size "
                         f"(ember.distributed.reduce_scatter_tensor: {tuple(input.shape)} vs "
                         f"{g.size()} x {tuple(output.shape)})")
    op, factor = check_op("reduce_scatter_tensor", op, input.dtype)
    b = _backend_of(g, [output, input], "reduce_scatter_tensor")
    return _finish(b.reduce_scatter_tensor(output, input, op, factor), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduces ``input_list[r]`` across the ranks into rank r's ``output``."""
    _check_single_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    if _not_member(group):
        return _warn_not_in_group("reduce_scatter")
    g = _group(group)
    if len(input_list) != g.size():
        raise ValueError(f"ember.distributed.reduce_scatter: input_list has {len(input_list)} "
                         f"tensors, expected world_size={g.size()}")
    _same_dtype(output, *input_list)
    for t in input_list:
        if t.numel() != output.numel():
            raise ValueError("ember.distributed.reduce_scatter: every input must have as many "
                             f"elements as the output {tuple(output.shape)}; got {tuple(t.shape)}")
    flat = ember.cat([t.reshape(-1) for t in input_list])
    return reduce_scatter_tensor(output, flat, op, group, async_op)


def gather(tensor, gather_list=None, dst: int | None = None, group=None, async_op: bool = False,
           group_dst: int | None = None):
    """Rank ``dst`` gets every rank's ``tensor`` in ``gather_list``."""
    _check_single_tensor(tensor, "tensor")
    if gather_list:
        _check_tensor_list(gather_list, "gather_list")
    else:
        gather_list = []
    if _not_member(group):
        return _warn_not_in_group("gather")
    g = _group(group)
    root = _root(g, dst, group_dst, "dst", "gather")
    if g.rank() == root:
        if len(gather_list) != g.size():
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _same_dtype(tensor, *gather_list)
        for t in gather_list:
            if t.numel() != tensor.numel():
                raise ValueError("ember.distributed.gather: every tensor of gather_list must have "
                                 f"as many elements as {tuple(tensor.shape)}; got {tuple(t.shape)}")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    b = _backend_of(g, [tensor, *gather_list], "gather")
    return _finish(b.gather(gather_list, tensor, root), async_op)


def scatter(tensor, scatter_list=None, src: int | None = None, group=None, async_op: bool = False,
            group_src: int | None = None):
    """Rank r gets ``scatter_list[r]`` of rank ``src`` in ``tensor``."""
    _check_single_tensor(tensor, "tensor")
    if scatter_list:
        _check_tensor_list(scatter_list, "scatter_list")
    else:
        scatter_list = []
    if _not_member(group):
        return _warn_not_in_group("scatter")
    g = _group(group)
    root = _root(g, src, group_src, "src", "scatter")
    if g.rank() == root:
        if len(scatter_list) != g.size():
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _same_dtype(tensor, *scatter_list)
        for t in scatter_list:
            if t.numel() != tensor.numel():
                raise ValueError("ember.distributed.scatter: every tensor of scatter_list must "
                                 f"have as many elements as {tuple(tensor.shape)}; got "
                                 f"{tuple(t.shape)}")
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    b = _backend_of(g, [tensor, *scatter_list], "scatter")
    return _finish(b.scatter(tensor, scatter_list, root), async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op: bool = False):
    """Rank r's ``input_tensor_list[j]`` lands in rank j's ``output_tensor_list[r]``."""
    _check_tensor_list(output_tensor_list, "output_tensor_list")
    _check_tensor_list(input_tensor_list, "input_tensor_list")
    if _not_member(group):
        return _warn_not_in_group("all_to_all")
    g = _group(group)
    for name, lst in (("output_tensor_list", output_tensor_list),
                      ("input_tensor_list", input_tensor_list)):
        if len(lst) != g.size():
            raise ValueError(f"ember.distributed.all_to_all: {name} has {len(lst)} tensors, "
                             f"expected world_size={g.size()}")
    _same_dtype(*output_tensor_list, *input_tensor_list)
    b = _backend_of(g, [*output_tensor_list, *input_tensor_list], "all_to_all")
    return _finish(b.alltoall(output_tensor_list, input_tensor_list), async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op: bool = False):
    """Splits ``input`` along dim 0 (equally, or by ``input_split_sizes``); part j goes to rank
    j, and ``output`` receives every rank's part for this rank, in rank order."""
    _check_single_tensor(output, "output")
    _check_single_tensor(input, "input")
    if _not_member(group):
        return _warn_not_in_group("all_to_all_single")
    g = _group(group)
    _same_dtype(output, input)
    n = g.size()

    def splits(given, t, name):
        rows = t.shape[0] if t.dim() else 1
        if given is None or len(given) == 0:
            if rows % n:
                raise RuntimeError(f"ember.distributed.all_to_all_single: dim 0 of {name} "
                                   f"({rows}) is not divisible by world_size={n}")
            return [rows // n] * n
        given = [int(s) for s in given]
        if len(given) != n or sum(given) != rows or min(given) < 0:
            raise RuntimeError(f"Split sizes doesn't match total dim 0 size "
                               f"(ember.distributed.all_to_all_single: {name} splits {given}, "
                               f"dim 0 is {rows}, world_size={n})")
        return given

    out_splits = splits(output_split_sizes, output, "output")
    in_splits = splits(input_split_sizes, input, "input")
    b = _backend_of(g, [output, input], "all_to_all_single")
    return _finish(b.alltoall_single(output, input, out_splits, in_splits), async_op)


# -- point to point ---------------------------------------------------------------------------

def _peer(g, rank, group_rank, what: str) -> int:
    if rank is not None and group_rank is not None:
        raise ValueError(f"Can not specify both {what} and group_{what}")
    peer = group_rank if group_rank is not None else get_group_rank(g, rank)
    if peer == g.rank():
        kind = "destination" if what == "dst" else "source"
        raise ValueError(f"Invalid {kind} rank: {kind} rank should not be the same as the rank "
                         "of the current process.")
    return peer


def isend(tensor, dst: int | None = None, group=None, tag: int = 0,
          group_dst: int | None = None):
    """Sends ``tensor`` to ``dst`` without waiting; returns a Work."""
    _check_single_tensor(tensor, "tensor")
    if _not_member(group):
        return _warn_not_in_group("isend")
    g = _group(group)
    peer = _peer(g, dst, group_dst, "dst")
    return _backend_of(g, [tensor], "isend").send(tensor, peer, tag)


def irecv(tensor, src: int | None = None, group=None, tag: int = 0,
          group_src: int | None = None):
    """Receives into ``tensor`` from ``src`` (any rank when None) without waiting."""
    _check_single_tensor(tensor, "tensor")
    if _not_member(group):
        return _warn_not_in_group("irecv")
    g = _group(group)
    peer = None if src is None and group_src is None else _peer(g, src, group_src, "src")
    return _backend_of(g, [tensor], "irecv").recv(tensor, peer, tag)


def send(tensor, dst: int | None = None, group=None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Sends ``tensor`` to ``dst`` and waits until it has left."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src: int | None = None, group=None, tag: int = 0,
         group_src: int | None = None):
    """Receives into ``tensor``; returns the sender's global rank."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    g = _group(group)
    source = getattr(work, "source_rank", None)
    if source is None:
        source = _peer(g, src, group_src, "src")
    return g._ranks[source]


class P2POp:
    """One operation of ``batch_isend_irecv``: ``P2POp(isend or irecv, tensor, peer)``."""

    def __init__(self, op, tensor, peer=None, group=None, tag: int = 0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``ember.distributed.isend`` or ``ember.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list) -> list:
    """Starts every operation of the list; returns their Works."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``ember.distributed.P2POp``.")
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]


# -- objects ----------------------------------------------------------------------------------

def _object_device(g: ProcessGroup, device):
    if device is not None:
        return ember.device(device)
    if "cpu" in g._backends or "cpu" in g._spec:
        return ember.device("cpu")
    return ember.device("cuda", ember.cuda.current_device())


def _to_bytes_tensor(obj, device):
    import numpy as np

    buf = io.BytesIO()
    pickle.Pickler(buf).dump(obj)
    data = ember.from_numpy(np.frombuffer(buf.getvalue(), dtype=np.uint8).copy())
    return data if device.type == "cpu" else data.to(device), data.numel()


def _from_bytes_tensor(t, size: int):
    return pickle.loads(bytes(t[:size].cpu().numpy().tobytes()))  # noqa: S301 - group's own ranks


def broadcast_object_list(object_list, src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:
    """Rank ``src``'s picklable objects replace ``object_list``'s items on every rank."""
    if _not_member(group):
        return _warn_not_in_group("broadcast_object_list")
    g = _group(group)
    root = _root(g, src, group_src, "src", "broadcast_object_list")
    dev = _object_device(g, device)
    if g.rank() == root:
        parts = [_to_bytes_tensor(o, dev) for o in object_list]
        sizes = ember.tensor([n for _, n in parts], dtype=ember.int64, device=dev)
    else:
        sizes = ember.zeros(len(object_list), dtype=ember.int64, device=dev)
    broadcast(sizes, group=g, group_src=root)
    counts = sizes.tolist()
    if g.rank() == root:
        payload = ember.cat([t for t, _ in parts]) if parts else ember.empty(0, dtype=ember.uint8)
    else:
        payload = ember.empty(int(sum(counts)), dtype=ember.uint8, device=dev)
    broadcast(payload, group=g, group_src=root)
    if g.rank() != root:
        pos = 0
        for i, n in enumerate(counts):
            object_list[i] = _from_bytes_tensor(payload[pos:pos + n], n)
            pos += n


def _gather_sizes_and_pad(obj, g, dev):
    data, n = _to_bytes_tensor(obj, dev)
    sizes = [ember.zeros(1, dtype=ember.int64, device=dev) for _ in range(g.size())]
    all_gather(sizes, ember.tensor([n], dtype=ember.int64, device=dev), group=g)
    counts = [int(s.item()) for s in sizes]
    longest = max(counts)
    padded = ember.zeros(longest, dtype=ember.uint8, device=dev)
    padded[:n] = data
    return padded, counts, longest


def all_gather_object(object_list, obj, group=None) -> None:
    """``object_list[r]`` becomes rank r's ``obj`` on every rank."""
    if _not_member(group):
        return _warn_not_in_group("all_gather_object")
    g = _group(group)
    dev = _object_device(g, None)
    padded, counts, longest = _gather_sizes_and_pad(obj, g, dev)
    outs = [ember.empty(longest, dtype=ember.uint8, device=dev) for _ in range(g.size())]
    all_gather(outs, padded, group=g)
    for r in range(g.size()):
        object_list[r] = _from_bytes_tensor(outs[r], counts[r])


def gather_object(obj, object_gather_list=None, dst: int | None = None, group=None,
                  group_dst: int | None = None) -> None:
    """Rank ``dst``'s ``object_gather_list[r]`` becomes rank r's ``obj``."""
    if _not_member(group):
        return _warn_not_in_group("gather_object")
    g = _group(group)
    root = _root(g, dst, group_dst, "dst", "gather_object")
    if g.rank() == root and (object_gather_list is None or len(object_gather_list) != g.size()):
        raise ValueError("Argument ``object_gather_list`` must be specified on destination rank.")
    dev = _object_device(g, None)
    padded, counts, longest = _gather_sizes_and_pad(obj, g, dev)
    outs = [ember.empty(longest, dtype=ember.uint8, device=dev) for _ in range(g.size())] \
        if g.rank() == root else None
    gather(padded, outs, group=g, group_dst=root)
    if g.rank() == root:
        for r in range(g.size()):
            object_gather_list[r] = _from_bytes_tensor(outs[r], counts[r])


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None,
                        src: int | None = None, group=None, group_src: int | None = None) -> None:
    """Rank r's ``scatter_object_output_list[0]`` becomes rank ``src``'s
    ``scatter_object_input_list[r]``."""
    if _not_member(group):
        return _warn_not_in_group("scatter_object_list")
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    g = _group(group)
    root = _root(g, src, group_src, "src", "scatter_object_list")
    dev = _object_device(g, None)
    if g.rank() == root:
        if scatter_object_input_list is None or len(scatter_object_input_list) != g.size():
            raise ValueError("Argument ``scatter_object_input_list`` must have world_size "
                             "objects on the source rank.")
        parts = [_to_bytes_tensor(o, dev) for o in scatter_object_input_list]
        longest = ember.tensor([max(n for _, n in parts)], dtype=ember.int64, device=dev)
    else:
        longest = ember.zeros(1, dtype=ember.int64, device=dev)
    broadcast(longest, group=g, group_src=root)
    size = int(longest.item())
    out = ember.empty(size, dtype=ember.uint8, device=dev)
    out_n = ember.zeros(1, dtype=ember.int64, device=dev)
    if g.rank() == root:
        padded = []
        for t, n in parts:
            p = ember.zeros(size, dtype=ember.uint8, device=dev)
            p[:n] = t
            padded.append(p)
        ns = [ember.tensor([n], dtype=ember.int64, device=dev) for _, n in parts]
    else:
        padded, ns = None, None
    scatter(out, padded, group=g, group_src=root)
    scatter(out_n, ns, group=g, group_src=root)
    scatter_object_output_list[0] = _from_bytes_tensor(out, int(out_n.item()))


def send_object_list(object_list, dst: int | None = None, group=None, device=None,
                     group_dst: int | None = None) -> None:
    """Sends picklable objects to ``dst`` (received with ``recv_object_list``)."""
    if _not_member(group):
        return _warn_not_in_group("send_object_list")
    g = _group(group)
    dev = _object_device(g, device)
    parts = [_to_bytes_tensor(o, dev) for o in object_list]
    send(ember.tensor([n for _, n in parts], dtype=ember.int64, device=dev), dst, g,
         group_dst=group_dst)
    if parts:
        send(ember.cat([t for t, _ in parts]), dst, g, group_dst=group_dst)


def recv_object_list(object_list, src: int | None = None, group=None, device=None,
                     group_src: int | None = None) -> int:
    """Receives ``len(object_list)`` objects into it; returns the sender's global rank."""
    if _not_member(group):
        _warn_not_in_group("recv_object_list")
        return -1
    g = _group(group)
    dev = _object_device(g, device)
    sizes = ember.zeros(len(object_list), dtype=ember.int64, device=dev)
    sender = recv(sizes, src, g, group_src=group_src)
    counts = sizes.tolist()
    payload = ember.empty(int(sum(counts)), dtype=ember.uint8, device=dev)
    if counts:
        recv(payload, sender, g)
    pos = 0
    for i, n in enumerate(counts):
        object_list[i] = _from_bytes_tensor(payload[pos:pos + n], n)
        pos += n
    return sender


__all__ = [
    "Backend", "DistBackendError", "GroupMember", "P2POp", "ProcessGroup", "ReduceOp", "Work",
    "_make_nccl_premul_sum", "all_gather", "all_gather_into_tensor", "all_gather_object",
    "all_reduce", "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast",
    "broadcast_object_list", "default_pg_timeout", "destroy_process_group", "gather",
    "gather_object", "get_backend", "get_global_rank", "get_group_rank",
    "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group",
    "irecv", "is_available", "is_gloo_available", "is_initialized", "is_mpi_available",
    "is_nccl_available", "is_torchelastic_launched", "isend", "new_group", "recv",
    "recv_object_list", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter",
    "scatter_object_list", "send", "send_object_list",
]
