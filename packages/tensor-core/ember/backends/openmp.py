"""ember.backends.openmp: ember's CPU kernels run on its own thread pool, not OpenMP
(``ember.get_num_threads`` / ``set_num_threads`` size it)."""

__all__ = ["is_available"]


def is_available() -> bool:
    """False: ember does not use OpenMP."""
    return False
