"""Key-value stores through which the processes of a group find each other (torch's Store API).

``TCPStore``: a server thread in one process (rank 0) holds the keys; every process, the server's
own included, talks to it over one socket. ``FileStore``: keys live in one file that every
process can open (a shared file system, or /tmp on one machine), appended under an ``fcntl``
lock. Both offer torch's calls: ``set``, ``get`` (waits until the key exists), ``add``
(atomic counter), ``wait``, ``check``, ``compare_set``, ``delete_key``, ``num_keys``.

``rendezvous(init_method, rank, world_size, timeout)`` parses ``env://``, ``tcp://host:port`` and
``file:///path`` as torch does and returns the store with the rank and world size. Only small
things cross a store (a segment's name, an MPI port, an NCCL unique id, who joined); tensors go
through the backends.
"""

from __future__ import annotations

import datetime
import fcntl
import os
import pickle
import socket
import struct
import threading
import time
import urllib.parse

_HEADER = struct.Struct("!I")


def _seconds(timeout) -> float:
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


class Store:
    """What every store offers; values are bytes (str values are encoded as UTF-8)."""

    timeout: float

    def set(self, key: str, value) -> None:
        raise NotImplementedError

    def get(self, key: str) -> bytes:
        raise NotImplementedError

    def add(self, key: str, amount: int) -> int:
        raise NotImplementedError

    def check(self, keys: list[str]) -> bool:
        raise NotImplementedError

    def compare_set(self, key: str, expected, desired) -> bytes:
        raise NotImplementedError

    def delete_key(self, key: str) -> bool:
        raise NotImplementedError

    def num_keys(self) -> int:
        raise NotImplementedError

    def wait(self, keys: list[str], timeout=None) -> None:
        deadline = time.monotonic() + (self.timeout if timeout is None else _seconds(timeout))
        while not self.check(keys):
            if time.monotonic() > deadline:
                raise _timeout_error(keys, self.timeout if timeout is None else _seconds(timeout))
            time.sleep(0.005)

    def set_timeout(self, timeout) -> None:
        self.timeout = _seconds(timeout)

    def close(self) -> None:
        pass


def _bytes(value) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


def _timeout_error(keys, seconds: float) -> RuntimeError:
    # torch's DistStoreError is a RuntimeError with this wording
    return RuntimeError(f"Timed out after {seconds:g} seconds waiting for keys {list(keys)} in "
                        "the store")


# -- TCPStore ---------------------------------------------------------------------------------

class _Server:
    """The keys and a thread per connection; a request is one pickled tuple, so is the answer."""

    def __init__(self, host: str, port: int) -> None:
        self.data: dict[str, bytes] = {}
        self.cond = threading.Condition()
        self.sock = socket.create_server((host, port), reuse_port=False, backlog=128)
        self.port = self.sock.getsockname()[1]
        self.closed = False
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, name="ember-store-server", daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            while True:
                req = _recv_msg(conn)
                if req is None:
                    return
                _send_msg(conn, self._handle(*req))
        except OSError:
            return
        finally:
            conn.close()

    def _handle(self, op, key=None, arg=None, arg2=None):
        with self.cond:
            if op == "set":
                self.data[key] = arg
                self.cond.notify_all()
                return None
            if op == "get":  # arg: seconds to wait
                if not self.cond.wait_for(lambda: key in self.data or self.closed, arg):
                    return ("timeout",)
                return ("ok", self.data.get(key))
            if op == "add":
                value = int(self.data.get(key, b"0")) + arg
                self.data[key] = str(value).encode()
                self.cond.notify_all()
                return value
            if op == "check":
                return all(k in self.data for k in key)
            if op == "compare_set":
                current = self.data.get(key)
                if (current is None and arg == b"") or current == arg:
                    self.data[key] = arg2
                    self.cond.notify_all()
                    return arg2
                return arg if current is None else current
            if op == "delete":
                return self.data.pop(key, None) is not None
            if op == "num_keys":
                return len(self.data)
        raise ValueError(f"unknown store request {op!r}")

    def close(self) -> None:
        self.closed = True
        with self.cond:
            self.cond.notify_all()
        self.sock.close()
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _send_msg(sock: socket.socket, obj) -> None:
    payload = pickle.dumps(obj)
    sock.sendall(_HEADER.pack(len(payload)) + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _recv_msg(sock: socket.socket):
    head = _recv_exact(sock, _HEADER.size)
    if head is None:
        return None
    body = _recv_exact(sock, _HEADER.unpack(head)[0])
    if body is None:
        return None
    return pickle.loads(body)  # noqa: S301 - only from this group's own processes


class TCPStore(Store):
    """torch.distributed.TCPStore: ``is_master`` runs the server (port 0: any free port)."""

    def __init__(self, host_name: str, port: int, world_size: int | None = None,
                 is_master: bool = False, timeout=datetime.timedelta(seconds=300),
                 wait_for_workers: bool = True) -> None:
        self.timeout = _seconds(timeout)
        self.host = host_name
        self._server = _Server(host_name, port) if is_master else None
        self.port = self._server.port if is_master else port
        self._lock = threading.Lock()
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                left = max(0.05, deadline - time.monotonic())
                self._sock = socket.create_connection((host_name, self.port), timeout=left)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"ember.distributed: could not reach the store at "
                                       f"{host_name}:{self.port} within {self.timeout:g} s (is "
                                       "rank 0 running, and MASTER_ADDR/MASTER_PORT right?)"
                                       ) from None
                time.sleep(0.05)
        self._sock.settimeout(None)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _call(self, *req):
        with self._lock:
            try:
                _send_msg(self._sock, req)
                answer = _recv_msg(self._sock)
            except OSError as e:
                raise RuntimeError(f"ember.distributed: lost the store at {self.host}:"
                                   f"{self.port}: {e}") from None
        if answer is None and req[0] != "set":
            raise RuntimeError(f"ember.distributed: the store at {self.host}:{self.port} closed "
                               "the connection (rank 0 has exited)")
        return answer

    def set(self, key, value) -> None:
        self._call("set", key, _bytes(value))

    def get(self, key) -> bytes:
        answer = self._call("get", key, self.timeout)
        if answer[0] == "timeout":
            raise _timeout_error([key], self.timeout)
        return answer[1]

    def add(self, key, amount) -> int:
        return self._call("add", key, int(amount))

    def check(self, keys) -> bool:
        return self._call("check", list(keys))

    def compare_set(self, key, expected, desired) -> bytes:
        return self._call("compare_set", key, _bytes(expected), _bytes(desired))

    def delete_key(self, key) -> bool:
        return self._call("delete", key)

    def num_keys(self) -> int:
        return self._call("num_keys")

    def close(self) -> None:
        try:
            self._sock.close()
        finally:
            if self._server is not None:
                self._server.close()


# -- FileStore --------------------------------------------------------------------------------

class FileStore(Store):
    """torch.distributed.FileStore: records ``(key, value)`` appended to one file under a lock;
    the last record of a key holds its value (a deleted key has the value None)."""

    def __init__(self, file_name: str, world_size: int = -1,
                 timeout=datetime.timedelta(seconds=300)) -> None:
        self.path = file_name
        self.timeout = _seconds(timeout)
        self._fd = os.open(file_name, os.O_RDWR | os.O_CREAT, 0o600)
        self._pos = 0
        self._data: dict[str, bytes | None] = {}

    def _refresh(self) -> None:
        """Reads the records appended since the last look (the caller holds the lock)."""
        size = os.fstat(self._fd).st_size
        if size < self._pos:  # the file was truncated: a new run reuses the path
            self._pos, self._data = 0, {}
        while self._pos < size:
            head = os.pread(self._fd, _HEADER.size, self._pos)
            n = _HEADER.unpack(head)[0]
            key, value = pickle.loads(os.pread(self._fd, n, self._pos + _HEADER.size))  # noqa: S301
            self._data[key] = value
            self._pos += _HEADER.size + n

    def _locked(self, fn):
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            self._refresh()
            return fn()
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _append(self, key: str, value: bytes | None) -> None:
        payload = pickle.dumps((key, value))
        os.pwrite(self._fd, _HEADER.pack(len(payload)) + payload, os.fstat(self._fd).st_size)
        self._refresh()

    def set(self, key, value) -> None:
        self._locked(lambda: self._append(key, _bytes(value)))

    def get(self, key) -> bytes:
        deadline = time.monotonic() + self.timeout
        while True:
            value = self._locked(lambda: self._data.get(key))
            if value is not None:
                return value
            if time.monotonic() > deadline:
                raise _timeout_error([key], self.timeout)
            time.sleep(0.005)

    def add(self, key, amount) -> int:
        def do():
            value = int(self._data.get(key) or b"0") + int(amount)
            self._append(key, str(value).encode())
            return value

        return self._locked(do)

    def check(self, keys) -> bool:
        return self._locked(lambda: all(self._data.get(k) is not None for k in keys))

    def compare_set(self, key, expected, desired) -> bytes:
        expected, desired = _bytes(expected), _bytes(desired)

        def do():
            current = self._data.get(key)
            if (current is None and expected == b"") or current == expected:
                self._append(key, desired)
                return desired
            return expected if current is None else current

        return self._locked(do)

    def delete_key(self, key) -> bool:
        def do():
            if self._data.get(key) is None:
                return False
            self._append(key, None)
            return True

        return self._locked(do)

    def num_keys(self) -> int:
        return self._locked(lambda: sum(v is not None for v in self._data.values()))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class PrefixStore(Store):
    """torch.distributed.PrefixStore: every key of ``store`` under ``prefix/``."""

    def __init__(self, prefix: str, store: Store) -> None:
        self.prefix, self.underlying_store = prefix, store
        self.timeout = store.timeout

    def _k(self, key: str) -> str:
        return f"{self.prefix}/{key}"

    def set(self, key, value) -> None:
        self.underlying_store.set(self._k(key), value)

    def get(self, key) -> bytes:
        return self.underlying_store.get(self._k(key))

    def add(self, key, amount) -> int:
        return self.underlying_store.add(self._k(key), amount)

    def check(self, keys) -> bool:
        return self.underlying_store.check([self._k(k) for k in keys])

    def compare_set(self, key, expected, desired) -> bytes:
        return self.underlying_store.compare_set(self._k(key), expected, desired)

    def delete_key(self, key) -> bool:
        return self.underlying_store.delete_key(self._k(key))

    def num_keys(self) -> int:
        return self.underlying_store.num_keys()


# -- init_method ------------------------------------------------------------------------------

def _error(scheme: str, msg: str) -> ValueError:
    # torch's wording: "Error initializing torch.distributed using env:// rendezvous: ..."
    return ValueError(f"Error initializing ember.distributed using {scheme} rendezvous: {msg}")


def _env(name: str) -> str:
    value = os.environ.get(name)
    if value is None:
        raise _error("env://", f"environment variable {name} expected, but not set")
    return value


def rendezvous(init_method: str, rank: int, world_size: int, timeout: float):
    """(store, rank, world_size) from torch's init_method URLs and the explicit arguments.

    ``env://`` reads MASTER_ADDR, MASTER_PORT and, where not given, RANK and WORLD_SIZE;
    ``tcp://host:port`` and ``file:///path`` need ``rank`` and ``world_size``. Rank 0 serves
    the TCP store."""
    url = urllib.parse.urlparse(init_method)
    scheme = f"{url.scheme}://"
    if url.scheme == "env":
        if rank < 0:
            rank = int(_env("RANK"))
        if world_size < 0:
            world_size = int(_env("WORLD_SIZE"))
        host, port = _env("MASTER_ADDR"), int(_env("MASTER_PORT"))
    elif url.scheme == "tcp":
        if not url.hostname or url.port is None:
            raise _error(scheme, f"expected tcp://host:port, got {init_method!r}")
        host, port = url.hostname, url.port
    elif url.scheme == "file":
        path = urllib.parse.unquote(url.path)
        if not path:
            raise _error(scheme, f"expected file:///path, got {init_method!r}")
    else:
        raise ValueError(f"ember.distributed: unsupported init_method {init_method!r}: use "
                         "'env://', 'tcp://host:port' or 'file:///path'")
    if rank < 0:
        raise _error(scheme, "rank parameter missing")
    if world_size < 1:
        raise _error(scheme, "world size parameter missing")
    if rank >= world_size:
        raise ValueError(f"ember.distributed: rank {rank} is not in [0, {world_size})")
    if url.scheme == "file":
        return FileStore(path, world_size, timeout), rank, world_size
    return TCPStore(host, port, world_size, rank == 0, timeout), rank, world_size


def store_barrier(store: Store, rank: int, world_size: int, key: str, timeout: float) -> None:
    """Every rank announces itself under ``key``; returns when all have. A rank given twice, a
    world size that differs from rank 0's, or a rank missing at the timeout is an error, raised by
    every rank that sees it (torch's _store_based_barrier, with these checks)."""
    problem = None
    if store.add(f"{key}/rank/{rank}", 1) != 1:
        problem = f"rank {rank} joined twice (two processes were given the same rank)"
    elif rank != 0:
        other = int(store.get(f"{key}/world0"))
        if other != world_size:
            problem = f"rank {rank} says world_size={world_size}, rank 0 says {other}"
    else:
        store.set(f"{key}/world0", str(world_size))
    if problem is not None:
        store.set(f"{key}/problem", problem)
        raise RuntimeError(f"ember.distributed: {problem}")
    arrived = store.add(f"{key}/count", 1)
    deadline = time.monotonic() + timeout
    while arrived < world_size:
        if store.check([f"{key}/problem"]):
            raise RuntimeError(f"ember.distributed: {store.get(f'{key}/problem').decode()}")
        if time.monotonic() > deadline:
            missing = [r for r in range(world_size) if not store.check([f"{key}/rank/{r}"])]
            raise RuntimeError(f"ember.distributed: rank {rank} timed out after {timeout:g} s "
                               f"waiting for ranks {missing} to join (world_size={world_size})")
        time.sleep(0.01)
        arrived = store.add(f"{key}/count", 0)
    if store.check([f"{key}/problem"]):
        raise RuntimeError(f"ember.distributed: {store.get(f'{key}/problem').decode()}")
