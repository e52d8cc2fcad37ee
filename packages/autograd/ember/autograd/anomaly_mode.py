"""Anomaly detection: nodes remember the traceback of their forward call; backward checks every
gradient for NaN and names the forward op whose backward produced it."""

from __future__ import annotations

from ._engine import STATE


def is_anomaly_enabled() -> bool:
    return STATE.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    return STATE.anomaly_check_nan


class detect_anomaly:  # noqa: N801
    """Context manager enabling anomaly detection (``check_nan`` as torch)."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self):
        self.prev = (STATE.anomaly, STATE.anomaly_check_nan)
        STATE.anomaly, STATE.anomaly_check_nan = True, self.check_nan
        return self

    def __exit__(self, *exc):
        STATE.anomaly, STATE.anomaly_check_nan = self.prev
        return False


class set_detect_anomaly(detect_anomaly):  # noqa: N801
    """Turns anomaly detection on or off (a function call or a context manager)."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = (STATE.anomaly, STATE.anomaly_check_nan)
        STATE.anomaly, STATE.anomaly_check_nan = bool(mode), check_nan

    def __enter__(self):
        return self
