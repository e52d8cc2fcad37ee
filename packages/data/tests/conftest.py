import signal

import pytest


@pytest.fixture
def alarm():
    """Fails a test that runs past its limit (multi-process tests must never hang CI)."""

    def handler(signum, frame):
        raise TimeoutError("test ran past its time limit")

    old = signal.signal(signal.SIGALRM, handler)

    def arm(seconds: int) -> None:
        signal.alarm(seconds)

    yield arm
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)
