"""torch.cuda's random-number functions over ember's per-device generators.

Each CUDA device has its own default generator (``default_generators[i]``), a Mersenne Twister
like the CPU's: numbers for CUDA tensors are drawn on the host and copied (docs/cuda.md), so a
seed gives the same numbers on every device. ``ember.manual_seed`` seeds them all, as
``torch.manual_seed`` does. Without a GPU, ``manual_seed`` and ``manual_seed_all`` do nothing, as
torch's do before CUDA is initialised; the other functions raise the no-GPU error.
"""

from __future__ import annotations

from typing import Any

from ember import _C
from ember.cuda._device import _get_device_index, device_count, is_available


def _generator(device: Any = None):
    return _C._cuda_default_generator(_get_device_index(device))


def __getattr__(name: str):
    if name == "default_generators":  # a tuple per call: device_count() can change in tests
        return tuple(_C._cuda_default_generator(i) for i in range(device_count()))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def manual_seed(seed: int) -> None:
    """Seeds the current device's generator."""
    if is_available():
        _generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seeds the generators of every device (also devices used for the first time later)."""
    _C._cuda_seed_all(int(seed))


def seed() -> None:
    """Seeds the current device's generator non-deterministically."""
    _generator().seed()


def seed_all() -> None:
    """Seeds every device's generator with one non-deterministic seed."""
    _C._cuda_seed_all(_generator().seed())


def initial_seed() -> int:
    """The current device's seed."""
    return _generator().initial_seed()


def get_rng_state(device: Any = "cuda"):
    """The state of a device's generator, as a uint8 CPU tensor."""
    return _generator(device).get_state()


def set_rng_state(new_state, device: Any = "cuda") -> None:
    """Restores a device's generator from get_rng_state()."""
    _generator(device).set_state(new_state)


def get_rng_state_all() -> list:
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


__all__ = [
    "get_rng_state",
    "get_rng_state_all",
    "initial_seed",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "set_rng_state",
    "set_rng_state_all",
]
