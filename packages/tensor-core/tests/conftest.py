"""Shared fixtures for the tensor-core tests.

Every test starts from the same global state: the default dtype and the intra-op thread count
are restored after each test, so that a test that changes them (set_default_dtype,
set_num_threads) cannot leak into the next one.
"""

from __future__ import annotations

import os
import threading

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


@pytest.fixture(autouse=True)
def _under_the_profiler(request):
    """EMBER_TEST_UNDER_PROFILER=1 runs every test with the core's profiling switch on (each op
    goes through the profiler's enter/exit hooks and `redispatch`), to check that results and
    errors do not change under a profile; each thread's events must nest (every enter has its
    exit)."""
    if os.environ.get("EMBER_TEST_UNDER_PROFILER") != "1":
        yield
        return
    per_thread = threading.local()
    errors = []

    def open_events():
        if not hasattr(per_thread, "events"):
            per_thread.events = []
        return per_thread.events

    def enter(name):
        events = open_events()
        events.append(name)
        return len(events)

    def exit_(name, start, args):
        events = open_events()
        if not events or events[-1] != name or start != len(events):
            errors.append(f"profiler events do not nest: {name} closes {events}")
        else:
            events.pop()

    saved = ember._C._get_profiler_hooks()
    ember._C._set_profiler_hooks(enter, exit_)
    ember._C._set_profiling(True)
    try:
        yield
    finally:
        ember._C._set_profiling(False)
        if saved is None:
            ember._C._set_profiler_hooks(None, None)
        else:
            ember._C._set_profiler_hooks(*saved)
    assert not errors, errors[:3]
    assert not open_events(), f"profiler events left open: {open_events()}"


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
