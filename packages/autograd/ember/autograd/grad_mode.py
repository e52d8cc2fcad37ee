"""ember.autograd.grad_mode: the grad-mode switches (kept in the core, see ember._grad_mode) and
the multithreading switch torch has here."""

from __future__ import annotations

from ember._grad_mode import (  # noqa: F401
    enable_grad,
    inference_mode,
    no_grad,
    set_grad_enabled,
)

_multithreading = [True]


class set_multithreading_enabled:  # noqa: N801
    """Sets whether backward may run on device threads. ember's backward always runs on the
    calling thread, so the flag is recorded (``is_multithreading_enabled``) and changes nothing."""

    def __init__(self, mode: bool) -> None:
        self.prev = _multithreading[0]
        _multithreading[0] = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _multithreading[0] = self.prev
        return False

    def clone(self):
        return self.__class__(_multithreading[0])


def is_multithreading_enabled() -> bool:
    return _multithreading[0]


__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "set_multithreading_enabled"]
