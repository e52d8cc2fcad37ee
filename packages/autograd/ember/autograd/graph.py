"""ember.autograd.graph: the graph's Node type and saved-tensor hooks."""

from __future__ import annotations

from ._engine import STATE, AccumulateGrad, Node  # noqa: F401


class saved_tensors_hooks:  # noqa: N801
    """Within the block, every tensor a node saves goes through ``pack_hook`` and comes back in
    backward through ``unpack_hook`` (e.g. to offload or compress activations)."""

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        STATE.saved_hooks.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        STATE.saved_hooks.pop()
        return False


class save_on_cpu(saved_tensors_hooks):  # noqa: N801
    """Every tensor lives on the CPU already: saved tensors are kept as they are."""

    def __init__(self, pin_memory: bool = False) -> None:
        super().__init__(lambda t: t, lambda t: t)


class disable_saved_tensors_hooks:  # noqa: N801
    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self):
        self.prev = list(STATE.saved_hooks)
        STATE.saved_hooks.clear()
        return self

    def __exit__(self, *exc):
        STATE.saved_hooks[:] = self.prev
        return False


def increment_version(tensor) -> None:
    tensor._bump_version()
