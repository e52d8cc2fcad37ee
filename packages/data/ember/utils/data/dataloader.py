"""DataLoader: batches from a dataset, in this process or in worker processes.

The multi-process design (more in docs/architecture.md, "Loading data"):

- each worker has one index queue, on which the main process sends it tasks ``(idx, indices)``,
  and one result pipe, on which it sends back ``(idx, kind, payload)``; the main process keeps
  at most ``prefetch_factor * num_workers`` tasks in flight, hands tasks out round robin, and
  yields results in task order (``in_order=False``: in arrival order);
- batches cross through the transport of _transport.py (shared memory; ember-mp's when
  installed);
- failures never hang: the main process waits on the pipes in slices of at most
  ``_STATUS_CHECK_INTERVAL`` seconds and checks the workers between slices, so a dead worker is
  reported within that time (a killed worker also closes its pipe, which wakes the wait at once);
- shutdown (end of epoch, iterator dropped, error, interpreter exit) sends every worker
  ``None``, joins it briefly, kills what remains and removes the shared-memory files left.
"""

from __future__ import annotations

import atexit
import gc
import itertools
import multiprocessing
import multiprocessing.connection
import os
import secrets
import signal
import sys
import time
import warnings
import weakref

import ember
from ember.utils.data import _collate, _transport, _worker
from ember.utils.data.dataset import IterableDataset
from ember.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]

get_worker_info = _worker.get_worker_info

# Seconds between liveness checks while the main process waits for a batch.
_STATUS_CHECK_INTERVAL = 0.5
# Seconds a worker gets to exit on its own at shutdown before it is killed.
_JOIN_TIMEOUT = 2.0


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: None forever (the workers ignore indices)."""

    def __iter__(self):
        while True:
            yield None


def _cuda_available() -> bool:
    cuda = getattr(ember, "cuda", None)
    if cuda is None:
        try:
            import ember.cuda as cuda  # noqa: PLC0415
        except ImportError:
            return False
    try:
        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def pin_memory(data):
    """``data`` with every tensor in page-locked host memory (``Tensor.pin_memory()``)."""
    if isinstance(data, ember.Tensor):
        return data.pin_memory() if hasattr(data, "pin_memory") else data
    if isinstance(data, dict):
        return type(data)({k: pin_memory(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(pin_memory(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(pin_memory(v) for v in data)
    return data


class DataLoader:
    """Combines a dataset and a sampler and iterates over batches, as torch's DataLoader.

    Arguments, defaults and checks follow ``torch.utils.data.DataLoader``: ``batch_size=1``,
    ``shuffle=None`` (False), ``sampler``, ``batch_sampler``, ``num_workers=0``, ``collate_fn``
    (default_collate, or default_convert when ``batch_size=None``), ``pin_memory=False``,
    ``drop_last=False``, ``timeout=0``, ``worker_init_fn``, ``multiprocessing_context``
    ('fork' on Linux by default), ``generator`` (draws the shuffling and the workers' base seed),
    ``prefetch_factor`` (2 with workers), ``persistent_workers=False``, ``in_order=True``.

    A DataLoader is only one way to feed a training loop: any iterable of batches works.
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0, collate_fn=None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; "
                "use num_workers=0 to disable multiprocessing."
            )
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor "
                "to None."
            )
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self._initialized = False
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._iterable = True
            if shuffle not in {False, None}:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified shuffle option, "
                    f"but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified sampler option, "
                    f"but got sampler={sampler}"
                )
            if batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified batch_sampler "
                    f"option, but got batch_sampler={batch_sampler}"
                )
        else:
            shuffle = bool(shuffle)
            self._iterable = False

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with "
                "drop_last"
            )
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = (
                _collate.default_collate if self._auto_collation else _collate.default_convert
            )
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._IterableDataset_len_called = None
        self._iterator = None
        self._initialized = True
        self.check_worker_number_rationality()

    def check_worker_number_rationality(self) -> None:
        """Warns, as torch does, when there are more workers than usable CPUs."""
        if self.num_workers <= 0:
            return
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count()
        if cpus is not None and self.num_workers > cpus:
            warnings.warn(
                f"This DataLoader will create {self.num_workers} worker processes in total. Our "
                f"suggested max number of worker in current system is {cpus}, which is smaller "
                "than what this DataLoader is going to create. Please be aware that excessive "
                "worker creation might get DataLoader running slow or even freeze, lower the "
                "worker number to avoid potential slowness/freeze if necessary.",
                stacklevel=3,
            )

    # -- attributes
    @property
    def multiprocessing_context(self):
        return self._mp_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, ctx) -> None:
        if ctx is not None:
            if self.num_workers > 0:
                if isinstance(ctx, str):
                    valid = multiprocessing.get_all_start_methods()
                    if ctx not in valid:
                        raise ValueError(
                            "multiprocessing_context option should specify a valid start method "
                            f"in {valid!r}, but got multiprocessing_context={ctx!r}"
                        )
                    ctx = multiprocessing.get_context(ctx)
                if not isinstance(ctx, multiprocessing.context.BaseContext):
                    raise TypeError(
                        "multiprocessing_context option should be a valid context object or a "
                        f"string specifying the start method, but got multiprocessing_context={ctx}"
                    )
            else:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading "
                    f"(num_workers > 0), but got num_workers={self.num_workers}"
                )
        self._mp_context = ctx

    def __setattr__(self, attr, val) -> None:
        if getattr(self, "_initialized", False) and attr in (
            "batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers"
        ):
            raise ValueError(
                f"{attr} attribute should not be set after {self.__class__.__name__} is "
                "initialized"
            )
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    # -- iteration
    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        return _MultiProcessIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None or self._iterator._shutdown:  # new, or stopped by an error
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        if self._iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                from math import ceil

                length = length // self.batch_size if self.drop_last else ceil(
                    length / self.batch_size)
            return length
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


class _BaseIter:
    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        if loader.pin_memory and not _cuda_available():
            warnings.warn(
                "'pin_memory' argument is set as true but no accelerator is found, then device "
                "pinned memory won't be used.",
                stacklevel=3,
            )
        self._pin_memory = loader.pin_memory and _cuda_available()
        self._sampler_iter = iter(self._index_sampler)
        # As torch: one int64 drawn from the loader's generator seeds the workers.
        self._base_seed = int(
            ember.empty((), dtype=ember.int64).random_(generator=loader.generator).item()
        )
        self._num_yielded = 0

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._index_sampler)

    def _reset(self, loader) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if (self._iterable and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            warnings.warn(
                f"Length of IterableDataset {self._dataset} was reported to be "
                f"{self._IterableDataset_len_called} (when accessing len(dataloader)), but "
                f"{self._num_yielded} samples have been fetched. ",
                stacklevel=2,
            )
        return data

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = _worker._make_fetcher(
            self._iterable, self._dataset, self._auto_collation, self._collate_fn,
            self._drop_last
        )

    def _next_data(self):
        index = next(self._sampler_iter)
        data = self._fetcher.fetch(index)
        if self._pin_memory:
            data = pin_memory(data)
        return data


# Iterators with live workers, shut down at interpreter exit (before multiprocessing's own
# exit handler terminates daemonic children, so that shared-memory files are removed too).
_live_iters: weakref.WeakSet = weakref.WeakSet()


# Workers told to exit at the clean end of an epoch, with the time by which they must be gone.
_exiting: list = []


def _reap_exiting(block: bool = False) -> None:
    now = time.monotonic()
    for entry in list(_exiting):
        w, deadline = entry
        if block:
            w.join(max(deadline - time.monotonic(), 0.0))
        if w.is_alive() and (block or now > deadline):
            w.kill()
            w.join(_JOIN_TIMEOUT)
        if not w.is_alive():  # is_alive() also reaps an exited child
            _exiting.remove(entry)


@atexit.register
def _shutdown_all() -> None:
    for it in list(_live_iters):
        try:
            it._shutdown_workers()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
    _reap_exiting(block=True)


def _default_context():
    """The start method the program chose (multiprocessing.set_start_method), else 'fork' on
    Linux, as torch has it (Python 3.14 made forkserver the default there), else the platform's
    default."""
    if multiprocessing.get_start_method(allow_none=True) is None and sys.platform == "linux":
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


class _MultiProcessIter(_BaseIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        self._persistent_workers = loader.persistent_workers
        self._shutdown = False
        _reap_exiting()
        ctx = loader.multiprocessing_context or _default_context()
        self._prefix = f"ember_dl_{os.getpid()}_{secrets.token_hex(4)}"
        self._transport = _transport.get_transport(self._prefix)
        self._workers = []
        self._index_queues = []
        self._conns = []
        _live_iters.add(self)  # for the exit hook; a dropped iterator shuts down in __del__
        # The children get the dataset at fork time: freeze the objects that exist now, so that
        # the children's garbage collector does not write to (and so copy) every page of a large
        # dataset. Reference counts still do: see the user guide on copy-on-access. (Not when the
        # program froze objects itself: unfreezing would undo that.)
        fork = ctx.get_start_method() == "fork" and gc.get_freeze_count() == 0
        if fork:
            gc.freeze()
        try:
            for wid in range(self._num_workers):
                index_queue = ctx.Queue()
                parent_conn, child_conn = ctx.Pipe(duplex=False)
                w = ctx.Process(
                    target=_worker._worker_loop,
                    args=(index_queue, child_conn, self._transport, self._iterable, self._dataset,
                          self._auto_collation, self._collate_fn, self._drop_last,
                          self._base_seed, loader.worker_init_fn, wid, self._num_workers,
                          os.getpid()),
                    daemon=True,
                )
                w.start()
                child_conn.close()
                self._workers.append(w)
                self._index_queues.append(index_queue)
                self._conns.append(parent_conn)
        except BaseException:
            self._shutdown_workers()
            raise
        finally:
            if fork:
                gc.unfreeze()
        self._conn_to_worker = {c: i for i, c in enumerate(self._conns)}
        self._pending = 0
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter: bool = False) -> None:
        super()._reset(loader)
        if not first_iter:
            # The previous epoch was left early: drop what it still has in flight.
            while self._pending > 0:
                self._get_data(None)
            if self._iterable:
                for q in self._index_queues:
                    q.put(_worker._Resume())
        self._send_idx = 0  # next task index to hand out
        self._rcvd_idx = 0  # next task index to yield (in order)
        self._task_info: dict[int, tuple] = {}  # idx -> (worker,) or (worker, result)
        self._tasks_outstanding = 0  # handed out and not yet yielded
        self._pending = 0  # handed out and not yet received
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    # -- dispatch
    def _try_put_index(self) -> None:
        if self._tasks_outstanding >= self._prefetch_factor * self._num_workers:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._workers_status[wid]:
                break
        else:
            return  # no active worker: the IterableDataset replicas are all exhausted
        try:
            index = self._next_index()
        except StopIteration:
            return
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._tasks_outstanding += 1
        self._pending += 1
        self._send_idx += 1

    # -- receiving
    def _check_workers(self) -> None:
        dead = [(i, w) for i, w in enumerate(self._workers)
                if self._workers_status[i] and not w.is_alive()]
        if not dead:
            return
        parts = []
        for _, w in dead:
            code = w.exitcode
            if code is not None and code < 0:
                try:
                    sig = signal.Signals(-code).name
                except ValueError:
                    sig = str(-code)
                parts.append(f"DataLoader worker (pid {w.pid}) is killed by signal: {sig}.")
            else:
                parts.append(
                    f"DataLoader worker (pid {w.pid}) exited unexpectedly with exit code {code}."
                )
        self._shutdown_workers()
        raise RuntimeError(" ".join(parts))

    def _get_data(self, timeout: float | None):
        """Waits for one message from any worker; returns (idx, kind, payload)."""
        waited = 0.0
        while True:
            slice_ = _STATUS_CHECK_INTERVAL
            if timeout is not None:
                slice_ = min(slice_, max(timeout - waited, 0.0))
            for c in multiprocessing.connection.wait(self._conns, slice_):
                try:
                    data = c.recv_bytes()
                except (EOFError, OSError):
                    # The worker is gone (a killed worker closes its pipe): reap and report it.
                    wid = self._conn_to_worker[c]
                    self._workers[wid].join(_STATUS_CHECK_INTERVAL)
                    self._check_workers()
                    self._shutdown_workers()
                    raise RuntimeError(
                        f"DataLoader worker (pid {self._workers[wid].pid}) closed its pipe "
                        "unexpectedly"
                    ) from None
                self._pending -= 1
                return self._transport.loads(data)
            waited += slice_
            self._check_workers()
            if timeout is not None and waited >= timeout:
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader timed out after {timeout} seconds")

    def _next_data(self):
        while True:
            if self._shutdown:
                raise StopIteration
            if self._in_order:
                # Tasks dropped by an exhausted IterableDataset replica leave gaps: skip them.
                while self._rcvd_idx < self._send_idx and self._rcvd_idx not in self._task_info:
                    self._rcvd_idx += 1
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and len(info) == 2:
                    del self._task_info[self._rcvd_idx]
                    self._rcvd_idx += 1
                    return self._process(info[1])
            if self._tasks_outstanding == 0:
                if not self._persistent_workers:
                    self._shutdown_workers(clean=self._pending == 0)
                raise StopIteration
            idx, kind, payload = self._get_data(self._timeout or None)
            if kind == "stop":
                # This worker's replica is exhausted: no more tasks for it.
                self._workers_status[payload] = False
                self._task_info.pop(idx, None)
                self._tasks_outstanding -= 1
                self._try_put_index()
                continue
            if self._in_order and idx != self._rcvd_idx:
                self._task_info[idx] = (self._task_info[idx][0], (kind, payload))
                continue
            del self._task_info[idx]
            if self._in_order:
                self._rcvd_idx += 1
            return self._process((kind, payload))

    def _process(self, result):
        kind, payload = result
        self._tasks_outstanding -= 1
        self._try_put_index()
        if kind == "err":
            # As torch: the iterator stays usable, so a caller may skip the bad batch.
            payload.reraise()
        if self._pin_memory:
            payload = pin_memory(payload)
        return payload

    # -- shutdown
    def _shutdown_workers(self, clean: bool = False) -> None:
        """Stops the workers and removes what they left in shared memory.

        clean=True (the epoch ended with nothing in flight): the workers are told to exit and the
        loop goes on at once; they are reaped later (next iterator, or exit), and killed if they
        have not gone by then. Otherwise they are joined here for up to _JOIN_TIMEOUT, then
        killed, before the shared-memory files are removed.
        """
        if self._shutdown:
            return
        self._shutdown = True
        _live_iters.discard(self)
        for q in self._index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        if clean:
            _exiting.extend((w, time.monotonic() + _JOIN_TIMEOUT) for w in self._workers)
        else:
            deadline = time.monotonic() + _JOIN_TIMEOUT
            for w in self._workers:
                w.join(max(deadline - time.monotonic(), 0.0))
            for w in self._workers:
                if w.is_alive():
                    w.kill()
                    w.join(_JOIN_TIMEOUT)
        for c in self._conns:
            try:
                c.close()
            except OSError:
                pass
        for q in self._index_queues:
            # Never wait at exit for a feeder thread writing to a worker that is gone (close()
            # still flushes the None put above).
            q.cancel_join_thread()
            q.close()
        self._transport.cleanup()

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:  # noqa: BLE001 - never raise from __del__
            pass

