"""ember.random: torch.random's names (the global generator's seeding and state and
``thread_safe_generator``, which ember also has at the top level) and ``fork_rng``."""

from __future__ import annotations

import contextlib
import warnings

from ember import (
    _C,
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
    thread_safe_generator,
)

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
           "manual_seed", "seed", "set_rng_state", "thread_safe_generator"]

_MANY_DEVICES = 1  # torch warns when it forks every one of several devices' generators


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """Forks the random number generators: the CPU's state (and each listed CUDA device's; by
    default every device's when CUDA is initialised) is saved on entry and restored on exit, so
    draws inside the block leave the outer sequence as it was."""
    if not enabled:
        yield
        return
    if device_type not in ("cuda", "cpu"):
        raise RuntimeError(f"{_caller}: device_type {device_type!r} has no generators in ember")
    device_states = []
    if device_type == "cuda" and _C._cuda_is_available():
        from ember import cuda

        if devices is None:
            count = cuda.device_count()
            if count > _MANY_DEVICES:
                warnings.warn(
                    f"CUDA reports that you have {count} available devices, and you have used "
                    f"{_caller} without explicitly specifying which devices are being used. For "
                    f"safety, we initialize *every* CUDA device by default, which can be quite "
                    f"slow if you have a lot of CUDAs. If you know that you are only making use "
                    f"of a few CUDA devices, set the environment variable CUDA_VISIBLE_DEVICES "
                    f"or the '{_devices_kw}' keyword argument of {_caller} with the set of "
                    f"devices you are actually using.", stacklevel=3)
            devices = list(range(count))
        device_states = [(d, cuda.get_rng_state(d)) for d in devices]
    cpu_state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        if device_states:
            from ember import cuda

            for d, state in device_states:
                cuda.set_rng_state(state, d)
