"""Shared fixtures for the tensor-core tests.

Every test starts from the same global state: the default dtype and the intra-op thread count
are restored after each test, so that a test that changes them (set_default_dtype,
set_num_threads) cannot leak into the next one.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: takes seconds; deselect with -m 'not slow'")


@pytest.fixture(autouse=True)
def _restore_global_state():
    dtype = ember.get_default_dtype()
    threads = ember.get_num_threads()
    yield
    ember.set_default_dtype(dtype)
    ember.set_num_threads(threads)


@pytest.fixture
def default_dtype():
    """Sets the default dtype for one test: ``default_dtype(ember.float64)``."""

    def set_(dt):
        ember.set_default_dtype(dt)
        return dt

    return set_


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture
def torch():
    """PyTorch, as an oracle where installed (the tests using it are skipped otherwise)."""
    torch = pytest.importorskip("torch")
    saved = torch.get_default_dtype()
    yield torch
    torch.set_default_dtype(saved)


@pytest.fixture
def recording_hook():
    """Installs an autograd hook that records (name, number of args, kwargs) of each call the
    core hands it and runs the forward with grad mode off, as an autograd package would."""
    calls = []
    old = ember._C._get_autograd_hook()

    def hook(name, fn, args, kwargs):
        calls.append((name, len(args), dict(kwargs)))
        prev = ember.is_grad_enabled()
        ember._C._set_grad_enabled(False)
        try:
            return fn(*args, **kwargs)
        finally:
            ember._C._set_grad_enabled(prev)

    ember._C._set_autograd_hook(hook)
    try:
        yield calls
    finally:
        ember._C._set_autograd_hook(old)


@pytest.fixture
def recorded_calls():
    """Installs an autograd hook that records each call whole, (name, fn, args, kwargs), and runs
    it with grad mode off."""
    calls = []

    def hook(name, fn, args, kwargs):
        calls.append((name, fn, args, kwargs))
        with ember.no_grad():
            return fn(*args, **kwargs)

    old = ember._C._get_autograd_hook()
    ember._C._set_autograd_hook(hook)
    try:
        yield calls
    finally:
        ember._C._set_autograd_hook(old)
