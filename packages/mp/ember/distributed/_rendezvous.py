"""How the processes of a group find each other: ``env://``, ``tcp://host:port``, ``file://path``.

All that crosses is one string, from rank 0 to the others: the name of the group's control
segment in shared memory (everything after that happens there). ``tcp://`` and ``env://``: rank 0
listens on the address, every other rank connects (retrying until the timeout), says its rank and
the world size, and gets the name back once all have joined, so a missing or duplicated rank is
an error at init rather than a hang. ``file://``: rank 0 writes the name into the file (atomically,
by rename) and removes it once the group has formed; the others read it when it appears.
"""

from __future__ import annotations

import os
import socket
import time
import urllib.parse


def _error(scheme: str, msg: str) -> ValueError:
    return ValueError(f"Error initializing ember.distributed using {scheme} rendezvous: {msg}")


def _env(name: str, scheme: str = "env://") -> str:
    value = os.environ.get(name)
    if value is None:
        raise _error(scheme, f"environment variable {name} expected, but not set")
    return value


def parse(init_method: str, rank: int, world_size: int):
    """(kind, where, rank, world_size) from an init_method URL and the explicit arguments."""
    url = urllib.parse.urlparse(init_method)
    scheme = f"{url.scheme}://"
    if url.scheme == "env":
        if rank < 0:
            rank = int(_env("RANK"))
        if world_size < 0:
            world_size = int(_env("WORLD_SIZE"))
        where = (_env("MASTER_ADDR"), int(_env("MASTER_PORT")))
        kind = "tcp"
    elif url.scheme == "tcp":
        if not url.hostname or url.port is None:
            raise _error(scheme, f"expected tcp://host:port, got {init_method!r}")
        where, kind = (url.hostname, url.port), "tcp"
    elif url.scheme == "file":
        path = urllib.parse.unquote(url.path)
        if not path:
            raise _error(scheme, f"expected file:///path, got {init_method!r}")
        where, kind = path, "file"
    else:
        raise ValueError(f"ember.distributed: unsupported init_method {init_method!r}: use "
                         "'env://', 'tcp://host:port' or 'file:///path'")
    if rank < 0:
        raise _error(scheme, "rank parameter missing")
    if world_size < 1:
        raise _error(scheme, "world size parameter missing")
    if rank >= world_size:
        raise ValueError(f"ember.distributed: rank {rank} is not in [0, {world_size})")
    return kind, where, rank, world_size


def _recv_line(sock: socket.socket, deadline: float) -> str:
    buf = b""
    while not buf.endswith(b"\n"):
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        buf += chunk
    return buf.decode().strip()


def _tcp_serve(where, world_size: int, name: str, deadline: float) -> None:
    srv = socket.create_server(where, reuse_port=False)
    try:
        clients = {}
        while len(clients) < world_size - 1:
            srv.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                missing = world_size - 1 - len(clients)
                raise RuntimeError(
                    f"ember.distributed: rank 0 timed out waiting for {missing} of "
                    f"{world_size - 1} ranks to connect to {where[0]}:{where[1]}") from None
            r, w = (int(x) for x in _recv_line(conn, deadline).split()[:2])
            problem = None
            if w != world_size:
                problem = f"rank {r} says world_size={w}, rank 0 says {world_size}"
            elif not 0 < r < world_size or r in clients:
                problem = f"rank {r} joined twice or is out of range for world_size={world_size}"
            if problem:
                conn.sendall(f"error {problem}\n".encode())
                for c in clients.values():
                    c.sendall(f"error {problem}\n".encode())
                raise RuntimeError(f"ember.distributed: {problem}")
            clients[r] = conn
        for c in clients.values():
            c.sendall(f"ok {name}\n".encode())
            c.close()
    finally:
        srv.close()


def _tcp_join(where, rank: int, world_size: int, deadline: float) -> str:
    while True:
        try:
            sock = socket.create_connection(where, timeout=max(0.01, deadline - time.monotonic()))
            break
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"ember.distributed: rank {rank} could not reach rank 0 at "
                                   f"{where[0]}:{where[1]} before the timeout") from None
            time.sleep(0.05)
    with sock:
        sock.sendall(f"{rank} {world_size}\n".encode())
        status, _, rest = _recv_line(sock, deadline).partition(" ")
    if status != "ok":
        raise RuntimeError(f"ember.distributed: {rest}")
    return rest


def _file_publish(path: str, name: str, world_size: int) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(f"{name} {world_size}\n")
    os.replace(tmp, path)


def _file_read(path: str, world_size: int, deadline: float, try_open) -> object:
    while True:
        try:
            with open(path) as f:
                name, w = f.read().split()
            if int(w) == world_size:
                return try_open(name)
        except (OSError, ValueError, RuntimeError):
            pass  # not written yet, or a stale file from an earlier run: wait for rank 0's
        if time.monotonic() > deadline:
            raise RuntimeError(f"ember.distributed: timed out waiting for rank 0 to write {path}")
        time.sleep(0.02)


def rendezvous(kind, where, rank, world_size, timeout: float, create, open_):
    """Rank 0 calls create() -> (name, obj) and shares name; the others get open_(name) -> obj.
    Returns (obj, done) where done() is called once every rank has joined."""
    deadline = time.monotonic() + timeout
    if rank == 0:
        name, obj = create()
        if world_size > 1:
            if kind == "tcp":
                _tcp_serve(where, world_size, name, deadline)
                return obj, lambda: None
            _file_publish(where, name, world_size)

            def done():
                try:
                    os.unlink(where)
                except OSError:
                    pass

            return obj, done
        return obj, lambda: None
    if kind == "tcp":
        return open_(_tcp_join(where, rank, world_size, deadline)), lambda: None
    return _file_read(where, world_size, deadline, open_), lambda: None
