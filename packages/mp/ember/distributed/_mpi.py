"""The ``mpi`` backend: collectives on CPU tensors through mpi4py (the ``mpi`` extra of ember-mp:
mpi4py and the MPICH wheel).

Tensors reach MPI through the buffer protocol: a contiguous tensor is handed over as it is (MPI
reads and writes its memory, no copy). A non-contiguous tensor is copied into a contiguous one
and back. float16 and bfloat16 move as 16-bit integers (MPI has no standard half types), and are
reduced in float32 (a copy in, one rounding back).

Before each collective the ranks exchange what they are about to do (collective, dtype, element
count, op or root: one small Allgather); ranks that disagree all raise the same error that names
what each one called, instead of hanging or mixing bytes. Point-to-point operations are MPI's
nonblocking calls, issued at once by the calling thread (as torch's ProcessGroupMPI does), so an
``isend`` and an ``irecv`` in either order never deadlock.

How the world is formed (``create_world``):

- under ``mpiexec -n N`` (or any MPI launcher): ``MPI_COMM_WORLD``;
- without a launcher and a world size of 1: MPI's singleton;
- several MPI jobs (the launcher runs one ``mpiexec`` per machine): the jobs join one by one with
  ``MPI_Comm_accept``/``MPI_Comm_connect`` and ``MPI_Intercomm_merge``; the port name and whose
  turn it is to connect cross the TCP store at MASTER_ADDR:MASTER_PORT. Ranks are then ordered
  by their RANK. MPICH cannot join two singletons (they share one process-manager namespace), so
  processes started without any launcher can only form a world of one.
"""

from __future__ import annotations

import atexit
import os
import socket
import sys
import time

import ember

from ._backend import (
    Backend,
    DistBackendError,
    ReduceOp,
    Work,
    dtype_code,
    dtype_name,
    local_pid_alive,
    submit,
)

MPI = None
_we_finalize = False
_backends: list[MPIBackend] = []

_KINDS = ("barrier", "all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter",
          "gather", "scatter", "all_to_all", "new_group")
_ROOTED = {"broadcast": "src", "reduce": "dst", "gather": "dst", "scatter": "src"}
_HALF = ("float16", "bfloat16")

INSTALL_HINT = ("install the mpi extra: pip install 'ember-mp[mpi]' (mpi4py and the MPICH "
                "wheel, which brings mpiexec)")


def available() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def load():
    """Imports mpi4py.MPI (initialising MPI) once. When ember is first to import it, ember
    finalises MPI at exit (``_finalize``), not mpi4py."""
    global MPI, _we_finalize
    if MPI is not None:
        return MPI
    try:
        import mpi4py
    except ImportError:
        raise RuntimeError(f"ember.distributed: the mpi backend needs mpi4py: {INSTALL_HINT}"
                           ) from None
    if "mpi4py.MPI" not in sys.modules:
        mpi4py.rc.finalize = False
        mpi4py.rc.thread_level = "multiple"
        _we_finalize = True
    from mpi4py import MPI as _MPI

    if _we_finalize:
        atexit.register(_finalize)
    MPI = _MPI
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        raise RuntimeError("ember.distributed: the mpi backend needs MPI_THREAD_MULTIPLE (the "
                           "worker thread runs collectives while the caller issues send/recv); "
                           f"this MPI gives level {MPI.Query_thread()}")
    return MPI


def _finalize() -> None:
    """At exit: MPI_Finalize once every group has been destroyed. A process that leaves with a
    group still open (an exception, sys.exit, a failed collective) skips it: MPI_Finalize could
    wait forever for a rank stuck in a collective with this one, while leaving without it makes
    mpiexec end the whole job, as torchrun ends the other workers when one fails."""
    if MPI is None or MPI.Is_finalized() or _backends:
        return
    MPI.Finalize()


def under_mpi_launcher() -> bool:
    """Whether a process manager (mpiexec's hydra, Open MPI's, Slurm's PMI) started us."""
    return any(k in os.environ for k in ("PMI_RANK", "PMI_FD", "PMIX_RANK",
                                         "OMPI_COMM_WORLD_RANK", "PMI_SIZE"))


def _mpi_type(name: str):
    return {"bool": MPI.C_BOOL, "uint8": MPI.UINT8_T, "int8": MPI.INT8_T,
            "int16": MPI.INT16_T, "int32": MPI.INT32_T, "int64": MPI.INT64_T,
            "float16": MPI.INT16_T, "bfloat16": MPI.INT16_T, "float32": MPI.FLOAT,
            "float64": MPI.DOUBLE}[name]


def _mpi_op(op, dtype):
    if dtype == ember.bool:  # as torch: SUM is "any", PRODUCT "all", and so on
        return {ReduceOp.SUM: MPI.LOR, ReduceOp.PRODUCT: MPI.LAND, ReduceOp.MIN: MPI.LAND,
                ReduceOp.MAX: MPI.LOR, ReduceOp.BAND: MPI.LAND, ReduceOp.BOR: MPI.LOR,
                ReduceOp.BXOR: MPI.LXOR}[op]
    return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PREMUL_SUM: MPI.SUM,
            ReduceOp.PRODUCT: MPI.PROD, ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX,
            ReduceOp.BAND: MPI.BAND, ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}[op]


def buffer(t):
    """[memoryview, MPI datatype] over a contiguous CPU tensor's own bytes (no copy)."""
    name = dtype_name(t.dtype)
    view = t.detach()  # the buffer protocol refuses tensors that require grad
    if name in _HALF:
        view = view.view(ember.int16)
    return [memoryview(view), _mpi_type(name)]


class _Staged:
    """A contiguous tensor MPI can work on for ``t``: ``t`` itself when possible; otherwise a
    copy (non-contiguous, or a half type about to be reduced), written back by ``finish()``."""

    def __init__(self, t, reducing: bool = False, copy_in: bool = True) -> None:
        self.t = t
        half = reducing and dtype_name(t.dtype) in _HALF
        if half:
            self.buf = t.float()
        elif t.is_contiguous():
            self.buf = t
        else:
            self.buf = t.contiguous() if copy_in else ember.empty(t.shape, dtype=t.dtype)
        self.copied = self.buf is not t

    def finish(self) -> None:
        if self.copied:
            self.t.copy_(self.buf)


def _describe(v) -> str:
    kind, dt, n, extra = (int(x) for x in v)
    name = _KINDS[kind]
    s = f"{name}({dtype_name_of(dt)}, {n} elements"
    if name in ("all_reduce", "reduce_scatter"):
        s += f", op={ReduceOp.RedOpType(extra).name}"
    elif name == "reduce":
        s += f", op={ReduceOp.RedOpType(extra >> 32).name}, dst={extra & 0xFFFFFFFF}"
    elif name in _ROOTED:
        s += f", {_ROOTED[name]}={extra}"
    return s + ")"


def dtype_name_of(code: int) -> str:
    from ._backend import _DTYPE_NAMES

    return _DTYPE_NAMES[code] if 0 <= code < len(_DTYPE_NAMES) else "-"


class MPIBackend(Backend):
    name = "mpi"

    def __init__(self, comm, timeout: float) -> None:
        super().__init__(comm.Get_rank(), comm.Get_size(), timeout)
        self.comm = comm
        # where every rank runs, so that a rank whose process dies on this machine is noticed
        # at once rather than at the timeout
        me = (socket.gethostname(), os.getpid())
        self.peers = comm.allgather(me)
        self._local_peers = [(r, pid) for r, (host, pid) in enumerate(self.peers)
                             if host == me[0] and r != self.rank]
        self._next_check = 0.0
        _backends.append(self)

    def dead_rank(self) -> str | None:
        now = time.monotonic()
        if now < self._next_check:
            return None
        self._next_check = now + 0.1
        for r, pid in self._local_peers:
            if not local_pid_alive(pid):
                return f"rank {r} (pid {pid}) exited"
        return None

    # -- plumbing -------------------------------------------------------------------------------
    def _agree(self, kind: str, dtype, numel: int, extra: int = 0) -> None:
        """All ranks check that they run the same collective on like tensors."""
        mine = [_KINDS.index(kind), dtype_code(dtype) if dtype is not None else -1, numel, extra]
        everyone = self.comm.allgather(mine)
        if any(v != everyone[0] for v in everyone):
            per_rank = "; ".join(f"rank {r}: {_describe(v)}" for r, v in enumerate(everyone))
            raise RuntimeError(f"ember.distributed.{kind}: the ranks called different "
                               f"collectives or passed different tensors: {per_rank}")

    def _run(self, name: str, fn, finish=None, result=()) -> Work:
        self.check_usable()
        return submit(Work(self, name, fn, finish, result))

    def _mpi_error(self, name: str, e: Exception) -> RuntimeError:
        return DistBackendError(f"ember.distributed.{name}: MPI failed: {e}")

    # -- collectives ----------------------------------------------------------------------------
    def barrier(self) -> Work:
        def fn():
            self._agree("barrier", None, 0)
            self.comm.Barrier()

        return self._run("barrier", fn)

    def allreduce(self, tensor, op, factor=None) -> Work:
        s = _Staged(tensor, reducing=True)
        if factor is not None:
            s.buf = s.buf * factor if not s.copied else s.buf.mul_(factor)
            s.copied = True

        def fn():
            self._agree("all_reduce", tensor.dtype, tensor.numel(), int(op))
            self.comm.Allreduce(MPI.IN_PLACE, buffer(s.buf), _mpi_op(op, tensor.dtype))

        def finish():
            if op is ReduceOp.AVG:
                s.buf.div_(self.size)
            s.finish()

        return self._run("all_reduce", fn, finish, [tensor])

    def broadcast(self, tensor, root: int) -> Work:
        s = _Staged(tensor, copy_in=self.rank == root)

        def fn():
            self._agree("broadcast", tensor.dtype, tensor.numel(), root)
            self.comm.Bcast(buffer(s.buf), root)

        return self._run("broadcast", fn, s.finish if self.rank != root else None, [tensor])

    def reduce(self, tensor, root: int, op, factor=None) -> Work:
        s = _Staged(tensor, reducing=True)
        if factor is not None:
            s.buf = s.buf * factor if not s.copied else s.buf.mul_(factor)
            s.copied = True

        def fn():
            self._agree("reduce", tensor.dtype, tensor.numel(), (int(op) << 32) | root)
            mop = _mpi_op(op, tensor.dtype)
            if self.rank == root:
                self.comm.Reduce(MPI.IN_PLACE, buffer(s.buf), mop, root)
            else:
                self.comm.Reduce(buffer(s.buf), None, mop, root)

        def finish():
            if self.rank == root:
                if op is ReduceOp.AVG:
                    s.buf.div_(self.size)
                s.finish()

        return self._run("reduce", fn, finish, [tensor])

    def allgather_into_tensor(self, output, tensor) -> Work:
        inp = tensor.contiguous()
        out = _Staged(output, copy_in=False)

        def fn():
            self._agree("all_gather", tensor.dtype, tensor.numel())
            self.comm.Allgather(buffer(inp), buffer(out.buf))

        return self._run("all_gather_into_tensor", fn, out.finish, [output])

    def allgather(self, outputs, tensor) -> Work:
        inp = tensor.contiguous()
        flat = ember.empty((self.size, *tensor.shape), dtype=tensor.dtype)

        def fn():
            self._agree("all_gather", tensor.dtype, tensor.numel())
            self.comm.Allgather(buffer(inp), buffer(flat))

        def finish():
            for r, o in enumerate(outputs):
                o.copy_(flat[r].view(o.shape))

        return self._run("all_gather", fn, finish, [outputs])

    def reduce_scatter_tensor(self, output, tensor, op, factor=None) -> Work:
        inp = _Staged(tensor, reducing=True)  # MPI only reads it: never written back
        if factor is not None:
            inp.buf = inp.buf * factor
        out = _Staged(output, reducing=True, copy_in=False)

        def fn():
            self._agree("reduce_scatter", output.dtype, output.numel(), int(op))
            self.comm.Reduce_scatter_block(buffer(inp.buf), buffer(out.buf),
                                           _mpi_op(op, tensor.dtype))

        def finish():
            if op is ReduceOp.AVG:
                out.buf.div_(self.size)
            out.finish()

        return self._run("reduce_scatter_tensor", fn, finish, [output])

    def gather(self, gather_list, tensor, root: int) -> Work:
        inp = tensor.contiguous()
        flat = ember.empty((self.size, *tensor.shape), dtype=tensor.dtype) \
            if self.rank == root else None

        def fn():
            self._agree("gather", tensor.dtype, tensor.numel(), root)
            self.comm.Gather(buffer(inp), buffer(flat) if flat is not None else None, root)

        def finish():
            if flat is not None:
                for r, o in enumerate(gather_list):
                    o.copy_(flat[r].view(o.shape))

        return self._run("gather", fn, finish, [gather_list] if gather_list else [])

    def scatter(self, tensor, scatter_list, root: int) -> Work:
        out = _Staged(tensor, copy_in=False)
        flat = ember.stack([t.reshape(tensor.shape) for t in scatter_list]) \
            if self.rank == root else None

        def fn():
            self._agree("scatter", tensor.dtype, tensor.numel(), root)
            self.comm.Scatter(buffer(flat) if flat is not None else None, buffer(out.buf), root)

        return self._run("scatter", fn, out.finish, [tensor])

    def _alltoallv(self, name, send, send_counts, recv, recv_counts, dtype) -> None:
        """Exchanges element counts first: what rank j sends me must be what I expect."""
        self._agree("all_to_all", dtype, 0)
        told = self.comm.alltoall(send_counts)
        bad = [(j, told[j], recv_counts[j]) for j in range(self.size) if told[j] != recv_counts[j]]
        # every rank fails, not only the one that saw the mismatch
        if self.comm.allreduce(len(bad), op=MPI.MAX):
            detail = ", ".join(f"rank {j} sends {a} elements, {b} expected" for j, a, b in bad)
            raise RuntimeError(f"ember.distributed.{name}: the split sizes disagree: "
                               f"{detail or 'on another rank (see its error)'} (rank {self.rank})")
        sbuf, rbuf = buffer(send), buffer(recv)
        self.comm.Alltoallv([sbuf[0], send_counts, sbuf[1]], [rbuf[0], recv_counts, rbuf[1]])

    def alltoall(self, outputs, inputs) -> Work:
        dtype = inputs[0].dtype
        send = ember.cat([t.reshape(-1) for t in inputs]) if inputs else ember.empty(0)
        send_counts = [t.numel() for t in inputs]
        recv_counts = [t.numel() for t in outputs]
        recv = ember.empty(sum(recv_counts), dtype=dtype)

        def fn():
            self._alltoallv("all_to_all", send, send_counts, recv, recv_counts, dtype)

        def finish():
            pos = 0
            for o in outputs:
                o.copy_(recv[pos:pos + o.numel()].view(o.shape))
                pos += o.numel()

        return self._run("all_to_all", fn, finish, [outputs])

    def alltoall_single(self, output, tensor, out_splits, in_splits) -> Work:
        inp = tensor.contiguous()
        out = _Staged(output, copy_in=False)
        row_in = tensor[0].numel() if tensor.dim() > 0 and tensor.shape[0] else 1
        row_out = output[0].numel() if output.dim() > 0 and output.shape[0] else 1
        send_counts = [s * row_in for s in in_splits]
        recv_counts = [s * row_out for s in out_splits]

        def fn():
            self._alltoallv("all_to_all_single", inp, send_counts, out.buf, recv_counts,
                            tensor.dtype)

        return self._run("all_to_all_single", fn, out.finish, [output])

    # -- point to point -------------------------------------------------------------------------
    def send(self, tensor, dst: int, tag: int) -> Work:
        self.check_usable()
        buf = tensor.contiguous()
        req = self.comm.Isend(buffer(buf), dst, tag)
        return _P2PWork(self, "send", req, [buf], None)

    def recv(self, tensor, src: int | None, tag: int) -> Work:
        self.check_usable()
        s = _Staged(tensor, copy_in=False)
        req = self.comm.Irecv(buffer(s.buf), MPI.ANY_SOURCE if src is None else src, tag)
        return _P2PWork(self, "recv", req, [tensor], s, tensor.numel() * tensor.element_size())

    # -- groups ---------------------------------------------------------------------------------
    def new_subgroup(self, ranks: list[int], timeout: float):
        """A backend for ``ranks`` (ranks of this group), or None on the ranks not in it.
        Collective over this whole group, as torch's new_group."""
        box = []

        def fn():
            self._agree("new_group", None, len(ranks), hash(tuple(ranks)) & 0x7FFFFFFF)
            sub = self.comm.Create(self.comm.Get_group().Incl(ranks))
            box.append(None if sub == MPI.COMM_NULL else sub)

        self._run("new_group", fn).wait()
        return MPIBackend(box[0], timeout) if box[0] is not None else None

    def close(self) -> None:
        """Frees the communicator after the operations already queued (a broken group is only
        forgotten: its communicator may be stuck in a collective)."""
        comm = self.comm
        if comm is not None and self.error is None and MPI is not None and \
                not MPI.Is_finalized() and comm not in (MPI.COMM_WORLD, MPI.COMM_SELF):
            try:
                self._run("destroy_process_group", comm.Free).wait()
            except RuntimeError:
                pass  # leaving is best effort: the group failed while it was being left
        self.comm = None
        if self in _backends:
            _backends.remove(self)


class _P2PWork(Work):
    """A nonblocking send or receive: done when MPI says so (polled by the waiting thread)."""

    def __init__(self, backend, name, req, result, staged, nbytes=None) -> None:
        super().__init__(backend, name, result=result)
        self._done.clear()
        self._req, self._staged, self._nbytes = req, staged, nbytes
        self._status = MPI.Status()
        self.source_rank = None
        self._finish = self._complete

    def _test(self) -> bool:
        if self._done.is_set():
            return True
        try:
            if self._req.Test(self._status):
                self._done.set()
        except Exception as e:  # noqa: BLE001 - e.g. a message longer than the buffer
            self._error = RuntimeError(f"ember.distributed.{self.name}: {e} (the sender sent "
                                       "more bytes than this tensor holds)")
            self._done.set()
        return self._done.is_set()

    def is_completed(self) -> bool:
        return self._test()

    def _wait(self, timeout) -> None:
        limit = self.backend.timeout if timeout is None else min(
            self.backend.timeout, timeout.total_seconds() if hasattr(timeout, "total_seconds")
            else float(timeout))
        start = time.monotonic()
        pause = 0.0
        while not self._test():
            dead = self.backend.dead_rank()
            if dead is not None:
                raise DistBackendError(f"ember.distributed.{self.name}: {dead}")
            if time.monotonic() - start > limit:
                raise DistBackendError(f"ember.distributed.{self.name} timed out after "
                                       f"{limit:g} s on rank {self.backend.rank}")
            time.sleep(pause)
            pause = min(0.001, pause + 0.00002)

    def _complete(self) -> None:
        self.source_rank = self._status.Get_source()
        if self._nbytes is not None:
            got = self._status.Get_count(MPI.BYTE)
            if got != self._nbytes:
                raise RuntimeError(f"ember.distributed.recv: rank {self.source_rank} sent {got} "
                                   f"bytes, the receiving tensor holds {self._nbytes}")
        if self._staged is not None:
            self._staged.finish()

    def _source_rank(self) -> int:
        self.wait()
        return self.source_rank


# -- forming the world ------------------------------------------------------------------------

def create_world(rank: int, world_size: int, init_method: str | None, timeout: float,
                 rendezvous) -> MPIBackend:
    """The world's backend; ``rendezvous(init_method, rank, world_size)`` gives a store when
    several MPI jobs must join."""
    load()
    world = MPI.COMM_WORLD
    env_world = os.environ.get("WORLD_SIZE")
    want = world_size if world_size > 0 else int(env_world) if env_world else world.size
    if want == world.size:
        if rank >= 0 and rank != world.rank:
            raise ValueError(f"ember.distributed: rank={rank} was given, but MPI made this "
                             f"process rank {world.rank} of {world.size}")
        return MPIBackend(world.Dup(), timeout)
    if want < world.size:
        raise ValueError(f"ember.distributed: world_size={want}, but MPI started {world.size} "
                         "processes")
    if world.size == 1 and not under_mpi_launcher():
        raise RuntimeError(
            f"ember.distributed: the mpi backend cannot form a world of {want} out of processes "
            "that no MPI launcher started (MPICH cannot join singletons); start them with "
            f"`mpiexec -n {want} python ...` or `python -m ember.distributed.run "
            f"--nproc-per-node {want} ...`")
    store, rank, want = rendezvous(init_method or "env://", rank, want)
    try:
        comm = _join_jobs(world, store, rank, want, timeout)
    finally:
        store.close()
    return MPIBackend(comm, timeout)


def _join_jobs(local, store, rank: int, world_size: int, timeout: float):
    """Joins this MPI job to the others of the world; returns the world's communicator, ranked
    by RANK. The job holding rank 0 accepts the others, one job at a time."""
    key = "ember/mpi-join"
    is_root_job = local.allreduce(1 if rank == 0 else 0) == 1
    if is_root_job:
        if rank == 0 and local.rank != 0:
            raise RuntimeError("ember.distributed: rank 0 must be the first process of its MPI "
                               "job")
        port = MPI.Open_port() if local.rank == 0 else None
        if port is not None:
            store.set(f"{key}/port", port)
        comm = local
    else:
        turn = None
        if local.rank == 0:
            turn = store.add(f"{key}/ticket", 1)
            store.get(f"{key}/turn/{turn}")
            port = store.get(f"{key}/port").decode()
        else:
            port = None
        turn = local.bcast(turn, root=0)
        comm = local.Connect(port, root=0).Merge(high=True)
    joined = 0
    while comm.size < world_size:
        joined += 1
        if comm.rank == 0:  # rank 0 of the merged world: the root job's first process
            store.set(f"{key}/turn/{joined}", "go")
        comm = comm.Accept(port if comm.rank == 0 else None, root=0).Merge(high=False)
    if is_root_job and local.rank == 0:
        MPI.Close_port(port)
    if comm.size != world_size:
        raise RuntimeError(f"ember.distributed: the MPI jobs make {comm.size} processes, "
                           f"WORLD_SIZE is {world_size}")
    ordered = comm.Split(0, rank)
    ranks = ordered.allgather(rank)
    if ranks != list(range(world_size)):
        raise RuntimeError(f"ember.distributed: the joined processes have ranks {ranks}; every "
                           f"rank in [0, {world_size}) must appear once")
    return ordered
