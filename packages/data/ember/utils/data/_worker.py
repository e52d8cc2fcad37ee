"""The worker process of a DataLoader: its loop, its seeding and ``get_worker_info()``.

Each worker has its own index queue (a multiprocessing.Queue: the main process's feeder thread
does the writing, so the main process never blocks on a worker that is busy sending) and its own
result pipe. Tasks arrive as ``(task_idx, indices)`` (``None`` asks it to exit, ``_Resume``
restarts an IterableDataset replica for a new epoch of persistent workers); results leave as
transport-encoded ``(task_idx, kind, payload)`` with kind "ok" (a batch), "err" (an
_ExceptionWrapper) or "stop" (the replica is exhausted).
"""

from __future__ import annotations

import os
import queue
import random
import signal
import sys
import traceback
from dataclasses import dataclass
from typing import Any

import ember
from ember.utils.data import _transport

__all__ = ["WorkerInfo", "get_worker_info"]

# How often (seconds) an idle worker checks that the main process still exists.
_PARENT_CHECK_INTERVAL = 1.0


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker knows about itself: ``id``, ``num_workers``, ``seed`` and its own
    ``dataset`` replica."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """The WorkerInfo of this process in a DataLoader worker, None in the main process."""
    return _worker_info


class _Resume:
    """Task: restart the IterableDataset replica (a new epoch of persistent workers)."""


class _ExceptionWrapper:
    """An exception raised in a worker, with the worker's traceback, re-raised in the main
    process with the same type when that type can be built from one message."""

    def __init__(self, exc: BaseException, where: str) -> None:
        self.exc_type = type(exc)
        self.msg = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - a type that needs other arguments
            raise RuntimeError(msg) from None
        raise exc


class _KeyErrorMessage(str):
    """KeyError repr()s its argument; this keeps the traceback readable."""

    def __repr__(self):
        return self


def _generate_state(base_seed: int, worker_id: int) -> list[int]:
    """NumPy's seed for worker `worker_id` (torch's SeedSequence-like mixing, so the NumPy
    streams of two workers never coincide, nor with `random`'s)."""
    INIT_A, MULT_A, INIT_B, MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
    MIX_MULT_L, MIX_MULT_R, XSHIFT, MASK32 = 0xCA01F9DD, 0x4973F715, 16, 0xFFFFFFFF
    entropy = [worker_id, base_seed & MASK32, base_seed >> 32, 0]
    pool = [0] * 4
    hash_const_a = INIT_A

    def hash_(value):
        nonlocal hash_const_a
        value = (value ^ hash_const_a) & MASK32
        hash_const_a = (hash_const_a * MULT_A) & MASK32
        value = (value * hash_const_a) & MASK32
        return (value ^ (value >> XSHIFT)) & MASK32

    def mix(x, y):
        result = ((MIX_MULT_L * x) & MASK32) - ((MIX_MULT_R * y) & MASK32)
        result &= MASK32
        return (result ^ (result >> XSHIFT)) & MASK32

    for i in range(4):
        pool[i] = hash_(entropy[i])
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash_(pool[i_src]))
    hash_const_b = INIT_B
    state = []
    for i_dst in range(4):
        v = (pool[i_dst] ^ hash_const_b) & MASK32
        hash_const_b = (hash_const_b * MULT_B) & MASK32
        v = (v * hash_const_b) & MASK32
        state.append((v ^ (v >> XSHIFT)) & MASK32)
    return state


def _seed_worker(base_seed: int, worker_id: int) -> int:
    seed = base_seed + worker_id
    random.seed(seed)
    ember.manual_seed(seed & ((1 << 64) - 1))
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a dependency
        return seed
    np.random.seed(_generate_state(base_seed, worker_id))
    return seed


class _IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last
        self.it = iter(dataset)
        self.ended = False

    def fetch(self, indices):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in indices:
                try:
                    data.append(next(self.it))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(indices)):
                raise StopIteration
        else:
            data = next(self.it)
        return self.collate_fn(data)


class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn
        getitems = getattr(dataset, "__getitems__", None)
        self.getitems = getitems if callable(getitems) else None

    def fetch(self, indices):
        if self.auto_collation:
            if self.getitems is not None:
                data = self.getitems(indices)
            else:
                ds = self.dataset
                data = [ds[i] for i in indices]
        else:
            data = self.dataset[indices]
        return self.collate_fn(data)


def _make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last):
    cls = _IterableFetcher if iterable else _MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


def _parent_alive(parent_pid: int) -> bool:
    return os.getppid() == parent_pid


def _encode(transport, idx, kind, payload, worker_id) -> bytes:
    try:
        return transport.dumps((idx, kind, payload))
    except Exception as e:  # noqa: BLE001 - an unpicklable batch is the user's error
        if kind == "err":  # the exception's type itself cannot be pickled: keep its text
            payload.exc_type = RuntimeError
            return transport.dumps((idx, kind, payload))
        wrapper = _ExceptionWrapper(e, f"in DataLoader worker process {worker_id}")
        return _encode(transport, idx, "err", wrapper, worker_id)


def _worker_loop(index_queue, conn, transport, iterable, dataset, auto_collation, collate_fn,
                 drop_last, base_seed, init_fn, worker_id, num_workers, parent_pid):
    global _worker_info
    # Ctrl-C reaches the whole process group: the main process handles it and shuts us down.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    transport.tag = str(worker_id)
    _transport._worker_transport = transport
    parent_dead = False
    try:
        ember.set_num_threads(1)
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_error = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception as e:  # noqa: BLE001 - reported with the first task
            init_error = _ExceptionWrapper(e, f"in DataLoader worker process {worker_id}")
            fetcher = None
        stopped = False  # the IterableDataset replica is exhausted
        while True:
            try:
                task = index_queue.get(timeout=_PARENT_CHECK_INTERVAL)
            except queue.Empty:
                if not _parent_alive(parent_pid):
                    parent_dead = True
                    break
                continue
            except (EOFError, OSError):
                parent_dead = not _parent_alive(parent_pid)
                break
            if task is None:
                break
            if isinstance(task, _Resume):
                if init_error is None:
                    fetcher = _make_fetcher(iterable, dataset, auto_collation, collate_fn,
                                            drop_last)
                stopped = False
                continue
            idx, indices = task
            if init_error is not None:
                kind, payload = "err", init_error
                init_error = None
            elif stopped:
                kind, payload = "stop", worker_id
            else:
                try:
                    kind, payload = "ok", fetcher.fetch(indices)
                except StopIteration:
                    if not iterable:
                        raise
                    kind, payload, stopped = "stop", worker_id, True
                except Exception as e:  # noqa: BLE001 - re-raised in the main process
                    kind = "err"
                    payload = _ExceptionWrapper(e, f"in DataLoader worker process {worker_id}")
            data = _encode(transport, idx, kind, payload, worker_id)
            del payload
            try:
                conn.send_bytes(data)
            except (BrokenPipeError, ConnectionResetError, OSError):
                parent_dead = not _parent_alive(parent_pid)
                break
    except KeyboardInterrupt:
        pass
    finally:
        if parent_dead:
            # Nobody is left to receive what is in flight: release it.
            transport.cleanup()
        try:
            conn.close()
        except OSError:
            pass
        index_queue.cancel_join_thread()
        index_queue.close()
        sys.stdout.flush()
        sys.stderr.flush()
