"""ember.autograd.graph: the graph's Node type and saved-tensor hooks."""

from __future__ import annotations

from ._engine import TLS, AccumulateGrad, Node  # noqa: F401


def _stack() -> list:
    st = getattr(TLS, "saved_hooks", None)
    if st is None:
        st = TLS.saved_hooks = []
    return st


class saved_tensors_hooks:  # noqa: N801
    """Within the block, every tensor a node saves goes through ``pack_hook`` and comes back in
    backward through ``unpack_hook`` (e.g. to offload or compress activations)."""

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        _stack().append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _stack().pop()
        return False


class save_on_cpu(saved_tensors_hooks):  # noqa: N801
    """Every tensor lives on the CPU already: saved tensors are kept as they are."""

    def __init__(self, pin_memory: bool = False) -> None:
        super().__init__(lambda t: t, lambda t: t)


class disable_saved_tensors_hooks:  # noqa: N801
    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self):
        self.prev = list(_stack())
        _stack().clear()
        return self

    def __exit__(self, *exc):
        _stack()[:] = self.prev
        return False


def increment_version(tensor) -> None:
    tensor._bump_version()
