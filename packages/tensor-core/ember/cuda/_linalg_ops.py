"""The LAPACK primitives of ember.linalg (``_C._linalg_inv_ex``, ``_linalg_svd``, ...) on CUDA
tensors: the CPU kernel runs on host copies and its results are copied back to the device.

Why the CPU kernel and not cuSOLVER (through CuPy): results and errors must be the CPU's exactly,
and cuSOLVER's differ where users can see them: its ``info`` codes (and so the LinAlgError
messages and the ``info`` tensors of the ``*_ex`` functions, ``check_errors``), its pivots, and
the signs and order it picks for Q, U/Vh and eigenvectors. Going through the host keeps one
implementation of all of that.

The price: every call synchronises with the device (the copies to and from the host wait for
ember's current stream) and costs two transfers, so a large batch of factorizations is host-speed,
not GPU-speed. cuSOLVER kernels behind the same table entries are the next step on a GPU, with
their ``info`` mapped to the CPU's messages.

Each primitive is one entry of ``LINALG_OPS`` (merged into ``ember.cuda._dispatch.OPS``); autograd
records the call as for the CPU (its formulas compose ops that run on CUDA), then the forward
lands here with grad mode off.
"""

from __future__ import annotations

from collections.abc import Callable

from ember import _C
from ember.cuda._ops import device_of

# The bindings in csrc/python/bind_lapack.cpp that hand CUDA calls to the device hook.
_PRIMITIVES = (
    "_linalg_inv_ex", "_linalg_det", "_linalg_slogdet", "_linalg_solve_ex",
    "_linalg_solve_triangular", "_linalg_lu_factor_ex", "_linalg_lu", "_linalg_lu_solve",
    "_linalg_cholesky_ex", "_cholesky_solve", "_linalg_qr", "_linalg_svd", "_linalg_eigh",
    "_linalg_eig",
    "_linalg_lstsq", "_geqrf", "_householder_product", "_ormqr", "_linalg_ldl_factor_ex",
    "_linalg_ldl_solve",
)


def _to_host(a):
    return a.cpu() if isinstance(a, _C.Tensor) else a


def _on_host(name: str, args, kwargs):
    """`_C.<name>` on host copies of the tensor arguments; tensor results back on the device."""
    device = device_of(name, args, kwargs)  # every tensor (pivots included) on one device
    # Host copies: nothing in the host call is on a device, so it runs the CPU kernel instead of
    # coming back here. The copies wait for the current stream's work on the inputs.
    result = getattr(_C, name)(*(_to_host(a) for a in args),
                               **{k: _to_host(v) for k, v in kwargs.items()})
    if isinstance(result, _C.Tensor):
        return result.cuda(device)
    items = [r.cuda(device) if isinstance(r, _C.Tensor) else r for r in result]
    # a namedtuple takes its fields positionally, a plain tuple one iterable
    return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)


LINALG_OPS: dict[str, Callable] = dict.fromkeys(_PRIMITIVES, _on_host)
