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


# ---- file_system names and their watchdog ------------------------------------------------------
# One watchdog per process that creates named segments: it reads the names on its stdin and, at
# EOF (its creator exited, however it died), unlinks those still there. A segment is normally
# freed earlier, by the reference count in its header (see shm_allocator.h); the watchdog prunes
# the names already gone so that a long-lived creator's list does not grow without bound.
_WATCHDOG = r"""
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
names, bound = set(), 1024
for line in sys.stdin:
    names.add(line.strip())
    if len(names) >= bound:
        names = {n for n in names if os.path.exists("/dev/shm/" + n.lstrip("/"))}
        bound = 2 * len(names) + 1024
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
        _watchdog.stdin.write(name + "\n")
        _watchdog.stdin.flush()


_inherited = []  # a forked child's copy of its parent's watchdog handle, kept from __del__


def _forget_watchdog():
    """In a forked child: close the parent's watchdog pipe, so that the watchdog sees EOF when
    the parent dies (the child starts its own watchdog if it creates names)."""
    global _watchdog, _name_lock
    _name_lock = threading.Lock()  # another thread may have held it at fork
    if _watchdog is not None:
        try:
            _watchdog.stdin.close()
        except OSError:
            pass
        _inherited.append(_watchdog)
        _watchdog = None


os.register_at_fork(after_in_child=_forget_watchdog)


def _new_name():
    return f"/ember_{os.getpid()}_{next(_counter)}_{os.urandom(4).hex()}"


# ---- reducers ----------------------------------------------------------------------------------
# A segment this process already maps (one it created, or received before) comes back as the
# storage that maps it: the core keeps a per-process map from segment identity to storage.
def rebuild_storage_fd(df, nbytes, offset=0):
    fd = df.detach()
    try:
        return ember.UntypedStorage._new_shared_fd_cpu(fd, nbytes, offset)
    finally:
        os.close(fd)


def rebuild_storage_filename(name, nbytes):
    # Map (one more count), then consume the count the sender took for this message.
    return ember.UntypedStorage._new_shared_filename_cpu(name, nbytes)._shared_decref()


def _check_cpu(device):
    if device.type != "cpu":
        raise RuntimeError(
            f"ember.multiprocessing: cannot send a tensor on {device} to another process: CUDA "
            "IPC is not supported yet. Copy it to the CPU before sending (tensor.cpu()) and back "
            "to the device in the receiver.")


def reduce_storage(storage):
    _check_cpu(storage.device)
    name = storage._shared_name()
    if name is None and _strategy == "file_system" and not storage.is_shared():
        name = _new_name()
        _register_name(name)  # before it exists: no moment where a kill could leak it
        storage._share_filename_cpu_(name)
    if name is not None:
        storage._shared_incref()  # the message holds a count until the receiver has mapped it
        return rebuild_storage_filename, (name, storage.nbytes())
    # file_descriptor, or a storage already shared through a descriptor: it stays in its segment
    fd, nbytes, offset = storage._share_fd_cpu_()
    return rebuild_storage_fd, (DupFd(fd), nbytes, offset)


def rebuild_tensor(storage, dtype, offset, size, stride, requires_grad):
    t = ember.empty(0, dtype=getattr(ember, dtype)).set_(storage, offset, size, stride)
    if requires_grad:
        t.requires_grad_(True)
    return t


def reduce_tensor(tensor):
    requires_grad = bool(getattr(tensor, "requires_grad", False))
    if requires_grad and not getattr(tensor, "is_leaf", True):
        raise RuntimeError(_NON_LEAF_MSG)
    _check_cpu(tensor.device)
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
