"""The ``nccl`` backend: collectives on CUDA tensors through CuPy's NCCL bindings
(``cupy.cuda.nccl``, in the cupy-cuda12x / cupy-cuda13x wheels with the nvidia-nccl wheel).

As in torch, the NCCL communicator is made on the first collective, on the device of its tensor
(or at init when ``device_id`` is given): rank 0 draws the unique id and the others receive it
through the group's CPU backend (mpi) when there is one, else through the rendezvous store.
Operations are queued on ember's current stream of the tensor's device, so they are ordered with
the work around them without events; ``Work.wait()`` returns at once (the stream orders what
follows), ``Work.synchronize()`` waits for the stream.

NCCL has no 16-bit integers and no bitwise reductions: those raise; broadcast, gathers, scatters
and send/recv move any dtype as bytes. Booleans reduce as uint8 (SUM and MAX are "any", PRODUCT
and MIN "all", as torch's NCCL backend does).
"""

from __future__ import annotations

import ember

from ._backend import Backend, ReduceOp, Work, dtype_name

_nccl = None

INSTALL_HINT = ("install CuPy for your CUDA (pip install cupy-cuda12x or cupy-cuda13x) and "
                "NCCL (pip install nvidia-nccl-cu12 / -cu13)")


def load():
    """cupy.cuda.nccl, or a RuntimeError that says what to install."""
    global _nccl
    if _nccl is None:
        try:
            from cupy.cuda import nccl
        except ImportError as e:
            raise RuntimeError(f"ember.distributed: the nccl backend needs CuPy's NCCL "
                               f"bindings ({e}): {INSTALL_HINT}") from None
        if not getattr(nccl, "available", True):
            raise RuntimeError(f"ember.distributed: CuPy was built without NCCL: {INSTALL_HINT}")
        _nccl = nccl
    return _nccl


def _device(index: int):
    """CuPy's device context: NCCL makes its communicator on the current device."""
    import cupy

    return cupy.cuda.Device(index)


def available() -> bool:
    try:
        load()
    except RuntimeError:
        return False
    return True


def uid_to_bytes(uid) -> bytes:
    """NCCL's unique id (CuPy gives 128 signed chars) as 128 bytes, for a store or MPI."""
    return bytes(int(x) & 0xFF for x in uid)


def uid_from_bytes(data: bytes) -> tuple:
    return tuple(b - 256 if b > 127 else b for b in data)


def _dtype(nccl, name: str, reducing: bool):
    """NCCL's datatype for an ember dtype, or None: moved as bytes (only when not reducing)."""
    table = {"uint8": "NCCL_UINT8", "int8": "NCCL_INT8", "bool": "NCCL_UINT8",
             "int32": "NCCL_INT32", "int64": "NCCL_INT64", "float16": "NCCL_FLOAT16",
             "bfloat16": "NCCL_BFLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64"}
    attr = table.get(name)
    if attr is not None and hasattr(nccl, attr):
        return getattr(nccl, attr)
    if reducing:
        raise RuntimeError(f"ember.distributed: NCCL cannot reduce {name} tensors")
    return None  # moved as bytes


def _op(nccl, op, dtype_is_bool: bool):
    if dtype_is_bool:
        op = {ReduceOp.SUM: ReduceOp.MAX, ReduceOp.PRODUCT: ReduceOp.MIN}.get(op, op)
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR):
        raise ValueError(f"Cannot use ReduceOp.{op.name} with NCCL")
    if op is ReduceOp.AVG and not hasattr(nccl, "NCCL_AVG"):
        return None  # SUM, then a division on the stream
    return {ReduceOp.SUM: nccl.NCCL_SUM, ReduceOp.PREMUL_SUM: nccl.NCCL_SUM,
            ReduceOp.PRODUCT: nccl.NCCL_PROD, ReduceOp.MIN: nccl.NCCL_MIN,
            ReduceOp.MAX: nccl.NCCL_MAX, ReduceOp.AVG: getattr(nccl, "NCCL_AVG", None)}[op]


class NCCLBackend(Backend):
    name = "nccl"

    def __init__(self, rank: int, size: int, timeout: float, exchange_uid) -> None:
        """``exchange_uid(data_or_None) -> bytes``: rank 0 passes its id's bytes, every rank
        gets them back (a broadcast over the CPU backend or the store)."""
        super().__init__(rank, size, timeout)
        self._exchange_uid = exchange_uid
        self.comm = None
        self.device_index = None

    def _check_tensor(self, t, name: str) -> None:
        if t.device.type != "cuda":
            raise ValueError(f"ember.distributed.{name}: the nccl backend works on CUDA tensors, "
                             f"got one on {t.device}")
        if self.device_index is not None and t.device.index != self.device_index:
            raise ValueError(f"ember.distributed.{name}: this group's NCCL communicator is on "
                             f"cuda:{self.device_index}, the tensor on {t.device}")
        if not t.is_contiguous():
            raise ValueError(f"ember.distributed.{name}: Tensors must be contiguous")

    def _comm(self, device_index: int):
        if self.comm is None:
            nccl = load()
            uid = uid_to_bytes(nccl.get_unique_id()) if self.rank == 0 else None
            uid = self._exchange_uid(uid)
            with _device(device_index):
                self.comm = nccl.NcclCommunicator(self.size, uid_from_bytes(uid), self.rank)
            self.device_index = device_index
        return self.comm

    def _launch(self, name: str, tensors, fn, result) -> Work:
        self.check_usable()
        for t in tensors:
            self._check_tensor(t, name)
        device = tensors[0].device.index
        comm = self._comm(device)
        stream = ember.cuda.current_stream(device).cuda_stream
        fn(load(), comm, stream)
        return Work(self, name, result=result)

    @staticmethod
    def _count(t, dt) -> int:
        return t.numel() if dt is not None else t.numel() * t.element_size()

    def allreduce(self, tensor, op, factor=None) -> Work:
        def fn(nccl, comm, stream):
            if factor is not None:
                tensor.mul_(factor)
            nop = _op(nccl, op, tensor.dtype == ember.bool)
            dt = _dtype(nccl, dtype_name(tensor.dtype), True)
            comm.allReduce(tensor.data_ptr(), tensor.data_ptr(), tensor.numel(), dt,
                           nccl.NCCL_SUM if nop is None else nop, stream)
            if nop is None:
                tensor.div_(self.size)

        return self._launch("all_reduce", [tensor], fn, [tensor])

    def broadcast(self, tensor, root: int) -> Work:
        def fn(nccl, comm, stream):
            dt = _dtype(nccl, dtype_name(tensor.dtype), False)
            comm.broadcast(tensor.data_ptr(), tensor.data_ptr(), self._count(tensor, dt),
                           nccl.NCCL_UINT8 if dt is None else dt, root, stream)

        return self._launch("broadcast", [tensor], fn, [tensor])

    def reduce(self, tensor, root: int, op, factor=None) -> Work:
        def fn(nccl, comm, stream):
            if factor is not None:
                tensor.mul_(factor)
            nop = _op(nccl, op, tensor.dtype == ember.bool)
            dt = _dtype(nccl, dtype_name(tensor.dtype), True)
            comm.reduce(tensor.data_ptr(), tensor.data_ptr(), tensor.numel(), dt,
                        nccl.NCCL_SUM if nop is None else nop, root, stream)
            if nop is None and self.rank == root:
                tensor.div_(self.size)

        return self._launch("reduce", [tensor], fn, [tensor])

    def allgather_into_tensor(self, output, tensor) -> Work:
        def fn(nccl, comm, stream):
            dt = _dtype(nccl, dtype_name(tensor.dtype), False)
            comm.allGather(tensor.data_ptr(), output.data_ptr(), self._count(tensor, dt),
                           nccl.NCCL_UINT8 if dt is None else dt, stream)

        return self._launch("all_gather_into_tensor", [output, tensor], fn, [output])

    def allgather(self, outputs, tensor) -> Work:
        flat = ember.empty((self.size, *tensor.shape), dtype=tensor.dtype, device=tensor.device)
        self.allgather_into_tensor(flat, tensor)
        for r, o in enumerate(outputs):
            o.copy_(flat[r].view(o.shape))
        return Work(self, "all_gather", result=[outputs])

    def reduce_scatter_tensor(self, output, tensor, op, factor=None) -> Work:
        def fn(nccl, comm, stream):
            src = tensor * factor if factor is not None else tensor
            nop = _op(nccl, op, tensor.dtype == ember.bool)
            dt = _dtype(nccl, dtype_name(tensor.dtype), True)
            comm.reduceScatter(src.data_ptr(), output.data_ptr(), output.numel(), dt,
                               nccl.NCCL_SUM if nop is None else nop, stream)
            if nop is None:
                output.div_(self.size)

        return self._launch("reduce_scatter_tensor", [output, tensor], fn, [output])

    def _grouped(self, name, tensors, sends, recvs, result) -> Work:
        """Point-to-point operations fused in one NCCL group: sends [(tensor, peer)], recvs."""
        def fn(nccl, comm, stream):
            nccl.groupStart()
            try:
                for t, peer in sends:
                    dt = _dtype(nccl, dtype_name(t.dtype), False)
                    comm.send(t.data_ptr(), self._count(t, dt),
                              nccl.NCCL_UINT8 if dt is None else dt, peer, stream)
                for t, peer in recvs:
                    dt = _dtype(nccl, dtype_name(t.dtype), False)
                    comm.recv(t.data_ptr(), self._count(t, dt),
                              nccl.NCCL_UINT8 if dt is None else dt, peer, stream)
            finally:
                nccl.groupEnd()

        return self._launch(name, tensors, fn, result)

    def gather(self, gather_list, tensor, root: int) -> Work:
        if self.rank != root:
            return self._grouped("gather", [tensor], [(tensor, root)], [], [])
        tensor_copy = [(o, r) for r, o in enumerate(gather_list) if r != root]
        gather_list[root].copy_(tensor)
        return self._grouped("gather", [tensor, *gather_list], [], tensor_copy, [gather_list])

    def scatter(self, tensor, scatter_list, root: int) -> Work:
        if self.rank != root:
            return self._grouped("scatter", [tensor], [], [(tensor, root)], [tensor])
        tensor.copy_(scatter_list[root])
        sends = [(t, r) for r, t in enumerate(scatter_list) if r != root]
        return self._grouped("scatter", [tensor, *scatter_list], sends, [], [tensor])

    def alltoall(self, outputs, inputs) -> Work:
        sends = [(t, r) for r, t in enumerate(inputs) if r != self.rank]
        recvs = [(t, r) for r, t in enumerate(outputs) if r != self.rank]
        outputs[self.rank].copy_(inputs[self.rank])
        return self._grouped("all_to_all", [*inputs, *outputs], sends, recvs, [outputs])

    def alltoall_single(self, output, tensor, out_splits, in_splits) -> Work:
        ins = list(tensor.split(list(in_splits))) if tensor.dim() else [tensor]
        outs = list(output.split(list(out_splits))) if output.dim() else [output]
        return self.alltoall(outs, ins)

    def send(self, tensor, dst: int, tag: int) -> Work:
        return self._grouped("send", [tensor], [(tensor, dst)], [], [tensor])

    def recv(self, tensor, src: int | None, tag: int) -> Work:
        if src is None:
            raise RuntimeError("ember.distributed.recv: the nccl backend needs src (NCCL has no "
                               "receive from any source)")
        return self._grouped("recv", [tensor], [], [(tensor, src)], [tensor])

    def barrier(self) -> Work:
        index = self.device_index if self.device_index is not None else \
            ember.cuda.current_device()
        one = ember.ones(1, device=f"cuda:{index}")
        self.allreduce(one, ReduceOp.SUM)
        ember.cuda.current_stream(index).synchronize()
        return Work(self, "barrier")

    def close(self) -> None:
        comm, self.comm = self.comm, None
        if comm is not None:
            comm.destroy()
