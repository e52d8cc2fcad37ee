"""Pickling ember tensors and storages through shared memory (see the package docstring)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from multiprocessing.reduction import DupFd, ForkingPickler

import ember

_STRATEGIES = ("file_descriptor", "file_system")
_strategy = "file_descriptor"

_NON_LEAF_MSG = (
    "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not "
    "support crossing process boundaries.  If you just want to transfer the data, call detach() "
    "on the tensor before serializing (e.g., putting it on the queue)."
)


def get_all_sharing_strategies():
    """The strategies this platform supports."""
    return set(_STRATEGIES)


def get_sharing_strategy():
    """The strategy new shared segments use."""
    return _strategy


def set_sharing_strategy(new_strategy):
    """Selects how storages are shared: ``"file_descriptor"`` or ``"file_system"``."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"invalid sharing strategy {new_strategy!r}; expected one of "
                         f"{sorted(_STRATEGIES)}")
    _strategy = new_strategy


# ---- per-process cache: a segment received twice maps once -------------------------------------
_cache_lock = threading.Lock()
_cache: dict = {}  # segment identity -> the storage mapping it


def _cached(key):
    # Entries hold the storage strongly; one only the cache still references is dropped here.
    for k in [k for k, v in _cache.items() if v._use_count() <= 1]:
        del _cache[k]
    return _cache.get(key)


def _remember(key, storage):
    _cache[key] = storage


# ---- file_system names and their watchdog ------------------------------------------------------
_WATCHDOG = r"""
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
names = set()
for line in sys.stdin:
    names.add(line.strip())
for n in names:
    try:
        os.unlink("/dev/shm/" + n.lstrip("/"))
    except OSError:
        pass
"""
_watchdog = None
_watchdog_pid = None
_counter = itertools.count()
_name_lock = threading.Lock()


def _register_name(name):
    """Hands a new segment name to this process's watchdog, which unlinks it when we die."""
    global _watchdog, _watchdog_pid
    with _name_lock:
        if _watchdog is None or _watchdog_pid != os.getpid():
            _watchdog = subprocess.Popen(
                [sys.executable, "-c", _WATCHDOG], stdin=subprocess.PIPE, close_fds=True,
                start_new_session=True, text=True)
            _watchdog_pid = os.getpid()
            # a forked child must not keep our watchdog's pipe open after we are gone
            os.set_inheritable(_watchdog.stdin.fileno(), False)
        _watchdog.stdin.write(name + "\n")
        _watchdog.stdin.flush()


def _new_name():
    return f"/ember_{os.getpid()}_{next(_counter)}_{os.urandom(4).hex()}"


# ---- reducers ----------------------------------------------------------------------------------
def rebuild_storage_fd(df, nbytes, key):
    fd = df.detach()
    try:
        with _cache_lock:
            s = _cached(key)
            if s is None:
                s = ember.UntypedStorage._new_shared_fd_cpu(fd, nbytes)
                _remember(key, s)
            return s
    finally:
        os.close(fd)


def rebuild_storage_filename(name, nbytes):
    key = "name:" + name
    with _cache_lock:
        s = _cached(key)
        if s is None:
            s = ember.UntypedStorage._new_shared_filename_cpu(name, nbytes)
            _remember(key, s)
        return s


def reduce_storage(storage):
    if storage.device.type != "cpu":
        raise RuntimeError("ember.multiprocessing: only CPU storages can be shared")
    if _strategy == "file_system" or storage._shared_name() is not None:
        name = storage._shared_name()
        if name is None:
            name = _new_name()
            _register_name(name)
            storage._share_filename_cpu_(name)
        return rebuild_storage_filename, (name, storage.nbytes())
    fd, nbytes = storage._share_fd_cpu_()
    return rebuild_storage_fd, (DupFd(fd), nbytes, storage._shared_id())


def rebuild_tensor(storage, dtype, offset, size, stride, requires_grad):
    t = ember.empty(0, dtype=getattr(ember, dtype)).set_(storage, offset, size, stride)
    if requires_grad:
        t.requires_grad_(True)
    return t


def reduce_tensor(tensor):
    requires_grad = bool(getattr(tensor, "requires_grad", False))
    if requires_grad and not getattr(tensor, "is_leaf", True):
        raise RuntimeError(_NON_LEAF_MSG)
    dtype = str(tensor.dtype).rpartition(".")[2]  # "float32": dtype objects do not pickle
    return rebuild_tensor, (tensor.untyped_storage(), dtype, tensor.storage_offset(),
                            tuple(tensor.shape), tuple(tensor.stride()), requires_grad)


def init_reductions():
    ForkingPickler.register(ember.Tensor, reduce_tensor)
    ForkingPickler.register(ember.UntypedStorage, reduce_storage)
    try:  # nn.Parameter, when ember-nn is installed (imported only if it already is)
        nn = sys.modules.get("ember.nn")
        if nn is not None and hasattr(nn, "Parameter") and nn.Parameter is not ember.Tensor:
            ForkingPickler.register(nn.Parameter, reduce_tensor)
    except Exception:  # pragma: no cover
        pass
