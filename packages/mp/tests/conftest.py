"""Every test here is bounded: a 60 s alarm fails a test that would otherwise hang (a lost
message, a rank that never arrives)."""

import signal

import pytest


@pytest.fixture(autouse=True)
def _alarm():
    def boom(*_):
        raise TimeoutError("test timed out")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)
