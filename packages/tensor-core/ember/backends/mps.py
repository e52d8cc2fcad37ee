"""ember.backends.mps: Apple's Metal backend, which ember does not have."""

__all__ = ["is_available", "is_built", "is_macos13_or_newer", "is_macos_or_newer"]


def is_available() -> bool:
    """False: ember has no MPS backend."""
    return False


def is_built() -> bool:
    """False: ember is not built with MPS."""
    return False


def is_macos_or_newer(major: int, minor: int) -> bool:
    return False


def is_macos13_or_newer(minor: int = 0) -> bool:
    return False
