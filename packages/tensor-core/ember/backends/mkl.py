"""ember.backends.mkl: Intel MKL, which ember does not use (matrix products go to OpenBLAS)."""

__all__ = ["is_available"]


def is_available() -> bool:
    """False: ember is not built with MKL."""
    return False
