"""ember.autograd.profiler: per-op CPU time and call counts, seen at the autograd hook.

What is timed: every op that reaches the hook (ops on tensors that require grad, while grad
mode is on), every backward node (``MulBackward0``, ...) and every ``record_function`` block.
Ops on tensors that do not require grad never leave C++ and are not seen.
"""

from __future__ import annotations

import json
import os
import threading
import time

from ._engine import STATE


class FunctionEvent:
    def __init__(self, name, start_us, dur_us, tid):
        self.name, self.start_us, self.dur_us, self.thread = name, start_us, dur_us, tid

    @property
    def key(self):
        return self.name

    @property
    def cpu_time_total(self):
        return self.dur_us

    def __repr__(self):
        return f"<FunctionEvent name={self.name} cpu_time={self.dur_us:.3f}us>"


class FunctionEventAvg:
    def __init__(self, key):
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0

    @property
    def cpu_time(self):
        return self.cpu_time_total / max(self.count, 1)

    def __repr__(self):
        return f"<FunctionEventAvg key={self.key} count={self.count} cpu_time_total=" \
               f"{self.cpu_time_total:.3f}us>"


class EventList(list):
    def key_averages(self):
        avgs = {}
        for e in self:
            a = avgs.get(e.name)
            if a is None:
                a = avgs[e.name] = FunctionEventAvg(e.name)
            a.count += 1
            a.cpu_time_total += e.dur_us
            a.self_cpu_time_total += e.self_us
        return _AvgList(avgs.values())

    def table(self, sort_by=None, row_limit=100, **kwargs):
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit)

    @property
    def self_cpu_time_total(self):
        return sum(e.self_us for e in self)


_SORT_KEYS = {None: None, "cpu_time_total": "cpu_time_total", "cpu_time": "cpu_time",
              "self_cpu_time_total": "self_cpu_time_total", "count": "count",
              "calls": "count"}


class _AvgList(list):
    def table(self, sort_by=None, row_limit=100, **kwargs):
        if sort_by not in _SORT_KEYS:
            raise ValueError(f"unknown sort_by '{sort_by}': one of "
                             f"{sorted(k for k in _SORT_KEYS if k)}")
        rows = list(self)
        if _SORT_KEYS[sort_by]:
            rows.sort(key=lambda a: getattr(a, _SORT_KEYS[sort_by]), reverse=True)
        rows = rows[:row_limit] if row_limit and row_limit > 0 else rows
        total = sum(a.self_cpu_time_total for a in self) or 1.0
        width = max([len("Name")] + [len(a.key) for a in rows]) + 2
        cols = ["Self CPU %", "Self CPU", "CPU total", "CPU time avg", "# of Calls"]
        sep = "-" * width + "  " + "  ".join("-" * 13 for _ in cols)
        head = "Name".ljust(width) + "  " + "  ".join(c.rjust(13) for c in cols)
        lines = [sep, head, sep]
        for a in rows:
            lines.append(a.key.ljust(width) + "  " + "  ".join(s.rjust(13) for s in (
                f"{100.0 * a.self_cpu_time_total / total:.2f}%", _fmt_us(a.self_cpu_time_total),
                _fmt_us(a.cpu_time_total), _fmt_us(a.cpu_time), str(a.count))))
        lines.append(sep)
        lines.append(f"Self CPU time total: {_fmt_us(total)}")
        return "\n".join(lines) + "\n"


def _fmt_us(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


class profile:  # noqa: N801
    """``with profile() as prof: ...`` then ``prof.key_averages().table(sort_by=...)`` or
    ``prof.export_chrome_trace(path)``."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False):
        self.enabled = enabled
        self.events = EventList()
        self._stack = []
        self._t0 = None
        self._prev = None

    def __enter__(self):
        if not self.enabled:
            return self
        if STATE.profiler is not None and STATE.profiler is not self:
            raise RuntimeError("Profiler is already enabled on this thread")
        self._prev = STATE.profiler
        self._t0 = time.perf_counter()
        STATE.profiler = self
        return self

    def __exit__(self, *exc):
        if self.enabled:
            STATE.profiler = self._prev
        return False

    def _now_us(self):
        return (time.perf_counter() - self._t0) * 1e6

    def _begin(self):
        self._stack.append(0.0)  # time of children, for self time
        return self._now_us()

    def _end(self, name, start):
        end = self._now_us()
        dur = end - start
        child = self._stack.pop()
        ev = FunctionEvent(name, start, dur, threading.get_ident())
        ev.self_us = dur - child
        self.events.append(ev)
        if self._stack:
            self._stack[-1] += dur

    def timed(self, name, fn, *args):
        start = self._begin()
        try:
            return fn(*args)
        finally:
            self._end(name, start)

    def function_events(self):
        return self.events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        return self.events.key_averages()

    def table(self, sort_by=None, row_limit=100, **kwargs):
        return self.events.table(sort_by=sort_by, row_limit=row_limit)

    @property
    def self_cpu_time_total(self):
        return self.events.self_cpu_time_total

    def export_chrome_trace(self, path):
        """Writes the events in the Chrome trace format (chrome://tracing, Perfetto)."""
        pid = os.getpid()
        trace = {"traceEvents": [
            {"name": e.name, "ph": "X", "ts": e.start_us, "dur": e.dur_us, "pid": pid,
             "tid": e.thread, "cat": "cpu_op", "args": {}} for e in self.events],
            "displayTimeUnit": "ms"}
        with open(path, "w") as f:
            json.dump(trace, f)
        return path


class record_function:  # noqa: N801
    """Labels a block (or a decorated function) in the active profile."""

    def __init__(self, name, args=None):
        self.name = name
        self._start = None

    def __enter__(self):
        prof = STATE.profiler
        if prof is not None:
            self._prof = prof
            self._start = prof._begin()
        return self

    def __exit__(self, *exc):
        if self._start is not None:
            self._prof._end(self.name, self._start)
            self._start = None
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with record_function(self.name):
                return fn(*a, **k)

        return wrapper
