"""ember.backends.opt_einsum: torch's switch for contraction-order optimisation in einsum.
ember's einsum contracts left to right and does not use the opt_einsum package, so
``is_available()`` is False; ``enabled`` and ``strategy`` are kept and read back."""

__all__ = ["is_available", "get_opt_einsum", "enabled", "strategy"]

enabled = True
strategy = "auto"


def is_available() -> bool:
    return False


def get_opt_einsum():
    return None
