"""The ``shm`` backend: collectives between the processes of one machine, in shared memory.

Layout. The group's control segment (created by rank 0) holds one 64-byte line per rank: the
epoch that rank has reached and the value it published with it (``_C._shm_group_sync``: a
barrier in C++ that waits without the GIL and fails fast when a rank's process is gone). Each
rank also owns a data segment of ``3 * cap`` bytes: two input slots and one result slot. Every
rank maps every other rank's data segment, so data moves with one copy in and one copy out.

Collectives (W ranks, n elements):

- ``all_reduce``: copy in to my input slot; sync; reduce my 1/W of the elements over all input
  slots into my result slot (ember ops on views: W - 1 vectorised ops, no per-element Python);
  sync; copy every rank's result chunk out. Each rank reads n and writes n/W, as a
  reduce-scatter followed by an all-gather would.
- ``broadcast`` / ``all_gather``: copy in; sync; copy out of the source slot(s).

Consecutive collectives alternate between the two input slots, so one sync per collective is
enough: a rank that runs ahead writes the other slot, and it cannot run two ahead, because the
next sync waits for everyone. Each sync publishes what the rank is doing (collective, dtype,
byte count, op or source); ranks that disagree raise the same error instead of mixing data.

Segments grow (to at least twice their size) when a collective needs more room: every rank
decides alike, since every rank sees the same sizes. They are named segments with ember-mp's
reference count, so they go when the last rank lets go, and the creator's watchdog removes them
if a rank is killed.
"""

from __future__ import annotations

import os

import ember
from ember import _C
from ember.multiprocessing import reductions

from ._backend import Backend, ReduceOp, Work

_LINE = 64
_KINDS = ("barrier", "grow", "all_reduce", "broadcast", "all_gather")
_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
           "float64")
_MIN_CAP = 1 << 16


def _dtype_name(dtype) -> str:
    return str(dtype).rpartition(".")[2]


def _encode(kind: str, nbytes: int = 0, dtype=None, extra: int = 0) -> int:
    d = _DTYPES.index(_dtype_name(dtype)) + 1 if dtype is not None else 0
    return (_KINDS.index(kind) << 58) | (d << 53) | ((extra & 0x1FF) << 44) | nbytes


def _describe(v: int) -> str:
    kind, d, extra, nbytes = v >> 58, (v >> 53) & 0x1F, (v >> 44) & 0x1FF, v & ((1 << 44) - 1)
    s = _KINDS[kind] if kind < len(_KINDS) else f"?{kind}"
    if kind >= 2:
        what = "op" if kind == 2 else "src"
        s += f"({_DTYPES[d - 1] if d else '?'}, {nbytes} bytes, {what}={extra})"
    return s


class ShmGroup:
    def __init__(self, rank: int, world: int, ctl, prefix: str, timeout: float) -> None:
        self.rank, self.world, self.ctl, self.prefix = rank, world, ctl, prefix
        self.timeout = timeout
        self.epoch = 0
        self.cap = 0
        self.gen = 0
        self.segs = []  # storages of every rank's data segment (mine included)
        self.parity = 0

    # -- control --------------------------------------------------------------------------------
    def sync(self, value: int) -> None:
        self.epoch += 1
        values = _C._shm_group_sync(self.ctl, _LINE, self.rank, self.world, self.epoch, value,
                                    self.timeout)
        if any(v != values[0] for v in values):
            per_rank = ", ".join(f"rank {r}: {_describe(v)}" for r, v in enumerate(values))
            raise RuntimeError("ember.distributed: the ranks called different collectives (or "
                               f"with different tensors) at step {self.epoch}: {per_rank}")

    def _ensure(self, nbytes: int) -> None:
        if nbytes <= self.cap:
            return
        cap = max(nbytes, 2 * self.cap, _MIN_CAP)
        cap = (cap + 63) // 64 * 64  # every dtype's views stay aligned
        self.gen += 1
        mine = self._name(self.rank, self.gen)
        reductions._register_name(mine)
        own = ember.UntypedStorage._new_using_filename_cpu(3 * cap, mine)
        self.sync(_encode("grow", cap))
        segs = [own if r == self.rank else
                ember.UntypedStorage._new_shared_filename_cpu(self._name(r, self.gen), 3 * cap)
                for r in range(self.world)]
        self.segs, self.cap = segs, cap  # the old segments go when the last rank drops them

    def _name(self, rank: int, gen: int) -> str:
        return f"/{self.prefix}_r{rank}_g{gen}"

    def _flat(self, rank: int, slot: int, dtype, n: int):
        """n elements of dtype at the start of slot (0, 1: inputs; 2: result) of rank's segment."""
        return ember.empty(0, dtype=dtype).set_(self.segs[rank], slot * self.cap // dtype.itemsize,
                                                (n,), (1,))

    def _begin(self, kind: str, tensor, extra: int = 0) -> int:
        if tensor.device.type != "cpu":
            raise RuntimeError(f"ember.distributed: the shm backend works on CPU tensors, got one "
                               f"on {tensor.device}")
        nbytes = tensor.numel() * tensor.element_size()
        self._ensure(nbytes)
        self.parity ^= 1
        return _encode(kind, nbytes, tensor.dtype, extra)

    # -- collectives ----------------------------------------------------------------------------
    def barrier(self) -> None:
        self.sync(_encode("barrier"))

    def all_reduce(self, tensor, op) -> None:
        value = self._begin("all_reduce", tensor, op.value)
        n, dt, p = tensor.numel(), tensor.dtype, self.parity
        self._flat(self.rank, p, dt, n).view(tensor.shape).copy_(tensor)
        self.sync(value)
        lo, hi = _chunk(n, self.world, self.rank)
        if hi > lo:
            acc = self._flat(self.rank, 2, dt, n)[lo:hi]
            inputs = [self._flat(r, p, dt, n)[lo:hi] for r in range(self.world)]
            if self.world == 1:
                acc.copy_(inputs[0])
            combine = _COMBINE[op][dt == ember.bool]
            for r in range(1, self.world):  # one pass over the data per rank
                combine(inputs[0] if r == 1 else acc, inputs[r], out=acc)
            if op is ReduceOp.AVG:
                acc.div_(self.world)
        self.sync(value)
        # My input slot is free now (every rank has finished reading it): assemble there when
        # the tensor is not contiguous, else write straight into it.
        out = tensor.view(-1) if tensor.is_contiguous() else self._flat(self.rank, p, dt, n)
        for r in range(self.world):
            lo, hi = _chunk(n, self.world, r)
            if hi > lo:
                out[lo:hi].copy_(self._flat(r, 2, dt, n)[lo:hi])
        if not tensor.is_contiguous():
            tensor.copy_(out.view(tensor.shape))

    def broadcast(self, tensor, src: int) -> None:
        value = self._begin("broadcast", tensor, src)
        n, dt, p = tensor.numel(), tensor.dtype, self.parity
        if self.rank == src:
            self._flat(self.rank, p, dt, n).view(tensor.shape).copy_(tensor)
        self.sync(value)
        if self.rank != src:
            tensor.copy_(self._flat(src, p, dt, n).view(tensor.shape))

    def all_gather(self, tensor_list, tensor) -> None:
        value = self._begin("all_gather", tensor)
        n, dt, p = tensor.numel(), tensor.dtype, self.parity
        self._flat(self.rank, p, dt, n).view(tensor.shape).copy_(tensor)
        self.sync(value)
        for r, out in enumerate(tensor_list):
            out.copy_(self._flat(r, p, dt, n).view(out.shape))

    def close(self) -> None:
        self.segs = []
        self.ctl = None


def _chunk(n: int, world: int, rank: int) -> tuple[int, int]:
    q, rem = divmod(n, world)
    lo = rank * q + min(rank, rem)
    return lo, lo + q + (rank < rem)


# op -> (ember function for numbers, for bools): combine(a, b, out=acc); as torch, SUM of
# bools is "any" and PRODUCT "all"
_COMBINE = {
    ReduceOp.SUM: (ember.add, ember.logical_or),
    ReduceOp.AVG: (ember.add, ember.logical_or),
    ReduceOp.PREMUL_SUM: (ember.add, ember.logical_or),
    ReduceOp.PRODUCT: (ember.mul, ember.logical_and),
    ReduceOp.MIN: (ember.minimum, ember.minimum),
    ReduceOp.MAX: (ember.maximum, ember.maximum),
    ReduceOp.BAND: (ember.bitwise_and, ember.logical_and),
    ReduceOp.BOR: (ember.bitwise_or, ember.logical_or),
    ReduceOp.BXOR: (ember.bitwise_xor, ember.logical_xor),
}


def new_prefix() -> str:
    return f"ember_pg_{os.getpid()}_{os.urandom(4).hex()}"


def create_world(rank: int, world: int, store, timeout: float) -> ShmBackend:
    """Rank 0 makes the group's control segment and puts its name in the store; the others map
    it; one sync says that everyone has."""
    if rank == 0:
        prefix = new_prefix()
        name = f"/{prefix}_ctl"
        reductions._register_name(name)
        ctl = ember.UntypedStorage._new_using_filename_cpu(_LINE * (world + 1), name)
        store.set("ember/shm/ctl", name)
    else:
        name = store.get("ember/shm/ctl").decode()
        ctl = ember.UntypedStorage._new_shared_filename_cpu(name, _LINE * (world + 1))
        prefix = name[1:-len("_ctl")]
    group = ShmGroup(rank, world, ctl, prefix, timeout)
    group.sync(_encode("barrier"))
    return ShmBackend(group)


class ShmBackend(Backend):
    """The shm backend's face to distributed_c10d: every call runs at once, in the caller's
    thread, and returns a completed Work; what it lacks comes from Backend's generic forms."""

    name = "shm"

    def __init__(self, group: ShmGroup) -> None:
        super().__init__(group.rank, group.world, group.timeout)
        self.group = group

    def _done(self, name, result):
        return Work(self, name, result=result)

    def barrier(self) -> Work:
        self.group.barrier()
        return self._done("barrier", [])

    def allreduce(self, tensor, op, factor=None) -> Work:
        if factor is not None:
            tensor.mul_(factor)
        self.group.all_reduce(tensor, op)
        return self._done("all_reduce", [tensor])

    def broadcast(self, tensor, root: int) -> Work:
        self.group.broadcast(tensor, root)
        return self._done("broadcast", [tensor])

    def allgather(self, outputs, tensor) -> Work:
        self.group.all_gather(outputs, tensor)
        return self._done("all_gather", [outputs])

    def close(self) -> None:
        self.group.close()
