"""What every backend shares: ``ReduceOp``, ``Work``, the worker thread, the dtype table.

A backend object serves one process group on one device type. Its collectives take group ranks
(``distributed_c10d`` has already checked the arguments and translated global ranks) and return
a ``Work``. Backends that run their operations in the background (mpi) hand them to the process's
single worker thread: operations run one at a time in the order they were issued, which is the
order every rank issues them, so collectives of different groups never interleave differently on
different ranks (torch's ProcessGroupMPI runs a worker thread the same way). ``Work.wait`` waits
in short slices, checking the group's timeout and whether a rank's process has died, so a lost
rank becomes an exception instead of a hang.
"""

from __future__ import annotations

import enum
import os
import queue
import threading
import time

import ember

_DTYPE_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                "float32", "float64")


def dtype_name(dtype) -> str:
    return str(dtype).rpartition(".")[2]


def dtype_code(dtype) -> int:
    return _DTYPE_NAMES.index(dtype_name(dtype))


class ReduceOp:
    """How reductions combine the ranks' tensors: torch.distributed.ReduceOp's names and values.

    ``ReduceOp.SUM`` etc. are members of ``ReduceOp.RedOpType``; ``PREMUL_SUM`` is used through
    ``_make_nccl_premul_sum(factor)`` (multiply each rank's input by ``factor``, then sum)."""

    class RedOpType(enum.IntEnum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8
        UNUSED = 9

        def __repr__(self) -> str:
            return f"<RedOpType.{self.name}: {self.value}>"

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM
    UNUSED = RedOpType.UNUSED


class _PremulSum:
    """A PREMUL_SUM with its factor (what ``_make_nccl_premul_sum`` returns)."""

    def __init__(self, factor) -> None:
        self.factor = factor
        self.op = ReduceOp.PREMUL_SUM

    def __repr__(self) -> str:
        return f"<ReduceOp.PREMUL_SUM factor={self.factor!r}>"


def _make_nccl_premul_sum(factor) -> _PremulSum:
    return _PremulSum(factor)


def check_op(fn: str, op, dtype):
    """(RedOpType, premul factor or None) for ``op`` used on ``dtype``; torch's errors otherwise."""
    factor = None
    if isinstance(op, _PremulSum):
        op, factor = op.op, op.factor
    elif op is ReduceOp.PREMUL_SUM:
        raise ValueError(f"ember.distributed.{fn}: use _make_nccl_premul_sum(factor) for "
                         "ReduceOp.PREMUL_SUM")
    if not isinstance(op, ReduceOp.RedOpType) or op is ReduceOp.UNUSED:
        raise ValueError(f"ember.distributed.{fn}: op must be a ReduceOp, got {op!r}")
    name = dtype_name(dtype)
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.is_floating_point:
        raise ValueError(f"Cannot use ReduceOp.{op.name} with non-integral dtype {name} "
                         f"(ember.distributed.{fn})")
    if op in (ReduceOp.AVG, ReduceOp.PREMUL_SUM) and not dtype.is_floating_point:
        raise ValueError(f"ember.distributed.{fn}: ReduceOp.{op.name} needs a floating-point "
                         f"tensor, got {name}")
    return op, factor


class DistBackendError(RuntimeError):
    """A collective failed: a rank died, the group's timeout passed, or the ranks disagreed
    (torch.distributed.DistBackendError is a RuntimeError too)."""


# -- the worker thread ------------------------------------------------------------------------

class _Worker:
    """One thread per process that runs queued operations in order."""

    def __init__(self) -> None:
        self.q: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="ember-distributed", daemon=True)
        self.pid = os.getpid()
        self.thread.start()

    def _run(self) -> None:
        while True:
            work = self.q.get()
            if work is None:
                return
            work._run()


_worker: _Worker | None = None
_worker_lock = threading.Lock()


def submit(work: Work) -> Work:
    global _worker
    with _worker_lock:
        if _worker is None or _worker.pid != os.getpid():  # none yet, or inherited by a fork
            _worker = _Worker()
        _worker.q.put(work)
    return work


class Work:
    """The handle of one operation (torch's Work): ``wait()``, ``is_completed()``,
    ``is_success()``, ``exception()``, ``result()``, ``get_future()``.

    ``fn`` runs on the worker thread (or at once, for backends that run inline) and ``finish``
    runs once, in the thread that first waits (copying results out of staging buffers)."""

    def __init__(self, backend, name: str, fn=None, finish=None, result=()) -> None:
        self.backend, self.name = backend, name
        self._fn, self._finish, self._result = fn, finish, list(result)
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._finished = False
        self._lock = threading.Lock()
        if fn is None:
            self._done.set()

    def _run(self) -> None:
        try:
            if self.backend.error is not None:
                raise DistBackendError(self.backend.error)
            self._fn()
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            self._error = e
        finally:
            self._done.set()

    def is_completed(self) -> bool:
        return self._done.is_set()

    def is_success(self) -> bool:
        return self._done.is_set() and self._error is None

    def exception(self):
        return self._error

    def wait(self, timeout=None) -> bool:
        """Waits for the operation; raises what it raised. ``timeout`` (seconds or timedelta)
        shortens the group's timeout for this wait."""
        if not self._done.is_set():
            self._wait(timeout)
        with self._lock:
            if self._error is not None:
                err = self._error
                if isinstance(err, DistBackendError):
                    raise DistBackendError(str(err)) from None
                raise err
            if not self._finished:
                self._finished = True
                if self._finish is not None:
                    self._finish()
        return True

    def _wait(self, timeout) -> None:
        limit = self.backend.timeout
        if timeout is not None:
            limit = min(limit, timeout.total_seconds() if hasattr(timeout, "total_seconds")
                        else float(timeout))
        start = time.monotonic()
        while not self._done.wait(0.1):
            dead = self.backend.dead_rank()
            if dead is not None:
                self.backend.fail(f"ember.distributed.{self.name}: {dead}; this process group "
                                  "can no longer be used")
                raise DistBackendError(self.backend.error)
            if time.monotonic() - start > limit:
                self.backend.fail(f"ember.distributed.{self.name} timed out after {limit:g} s "
                                  f"on rank {self.backend.rank} of {self.backend.size}: a rank "
                                  "has not joined it (it died, hangs, or is in another "
                                  "collective); this process group can no longer be used")
                raise DistBackendError(self.backend.error)

    def synchronize(self) -> None:
        self.wait()

    def result(self) -> list:
        self.wait()
        return self._result

    def get_future(self) -> Future:
        return Future(self)


class Future:
    """torch.futures.Future over a Work: ``wait()``/``value()`` give the result tensors,
    ``done()``, and ``then(callback)`` (run when waited on)."""

    def __init__(self, work: Work, callback=None, parent=None) -> None:
        self._work, self._callback, self._parent = work, callback, parent
        self._value = None
        self._has_value = False

    def done(self) -> bool:
        return self._work.is_completed()

    def wait(self):
        if not self._has_value:
            if self._parent is not None:
                self._parent.wait()
                self._value = self._callback(self._parent)
            else:
                self._value = self._work.result()
            self._has_value = True
        return self._value

    def value(self):
        return self.wait()

    def then(self, callback) -> Future:
        return Future(self._work, callback, self)


# -- the base backend -------------------------------------------------------------------------

class Backend:
    """A backend serves one group on one device type; ranks are group ranks.

    Subclasses implement what they can natively; the generic forms below build the rest from
    ``allreduce``, ``broadcast`` and ``allgather`` (used by the shm backend)."""

    name = "?"

    def __init__(self, rank: int, size: int, timeout: float) -> None:
        self.rank, self.size, self.timeout = rank, size, timeout
        self.error: str | None = None

    # failure state: after a timeout or a dead rank, every later call raises at once
    def fail(self, message: str) -> None:
        if self.error is None:
            self.error = message

    def check_usable(self) -> None:
        if self.error is not None:
            raise DistBackendError(self.error)

    def dead_rank(self) -> str | None:
        return None

    def unsupported(self, what: str):
        raise RuntimeError(f"ember.distributed: the {self.name} backend does not support {what}")

    # -- generic forms --------------------------------------------------------------------------
    def reduce(self, tensor, root: int, op, factor) -> Work:
        target = tensor if self.rank == root else tensor.clone()
        return self.allreduce(target, op, factor)

    def allgather_into_tensor(self, output, tensor) -> Work:
        return self.allgather(list(output.view(self.size, -1).unbind(0)), tensor.reshape(-1))

    def reduce_scatter_tensor(self, output, tensor, op, factor) -> Work:
        full = tensor.clone()
        self.allreduce(full, op, factor).wait()
        output.view(-1).copy_(full.view(self.size, -1)[self.rank])
        return Work(self, "reduce_scatter_tensor", result=[output])

    def gather(self, gather_list, tensor, root: int) -> Work:
        outs = gather_list if self.rank == root else [ember.empty_like(tensor)
                                                      for _ in range(self.size)]
        return self.allgather(outs, tensor)

    def scatter(self, tensor, scatter_list, root: int) -> Work:
        for r in range(self.size):
            buf = scatter_list[r].clone() if self.rank == root else ember.empty_like(tensor)
            self.broadcast(buf, root).wait()
            if r == self.rank:
                tensor.copy_(buf)
        return Work(self, "scatter", result=[tensor])

    def alltoall(self, outputs, inputs) -> Work:
        self.unsupported("all_to_all")

    def alltoall_single(self, output, tensor, out_splits, in_splits) -> Work:
        self.unsupported("all_to_all_single")

    def send(self, tensor, dst: int, tag: int) -> Work:
        self.unsupported("send/recv")

    def recv(self, tensor, src: int | None, tag: int) -> Work:
        self.unsupported("send/recv")

    def new_subgroup(self, ranks: list[int], timeout: float):
        self.unsupported("new_group")

    def close(self) -> None:
        pass


def local_pid_alive(pid: int) -> bool:
    """Whether the process exists and is not a zombie (an exited child not yet reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return True
