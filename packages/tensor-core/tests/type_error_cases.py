"""The shared check of the op registry's argument tests (test_argument_types_*.py): a call with
a wrong Python type raises TypeError with torch's message, and torch (where installed) raises
TypeError for the same call. `call(M)` makes the call on module M (ember or torch)."""

from __future__ import annotations

import pytest

import ember


def case_ids(cases) -> list[str]:
    return [f"{c[0]}-{i}" for i, c in enumerate(cases)]


def check_type_error_as_torch(call, message: str) -> str:
    """Returns ember's message, for checks of its own."""
    with pytest.raises(TypeError) as info:
        call(ember)
    assert message in str(info.value)
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError):
        call(torch)
    return str(info.value)
