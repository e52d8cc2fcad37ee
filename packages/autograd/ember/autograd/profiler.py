"""ember.autograd.profiler: per-op CPU time and call counts.

What is timed: every op of the core while a profile is open, with or without autograd (the
core sends each call through the enter/exit hooks below instead of straight to its kernel;
inside one op, the ops it runs itself are part of it), every backward node (``MulBackward0``,
..., the ops of its formula inside it) and every ``record_function`` block. Not seen: the
Python-level composites' own frames (their core ops are), and indexing with ``[]`` when
nothing is recorded.
"""

from __future__ import annotations

import json
import os
import threading
import time

import ember
from ember import _C

from ._engine import STATE


def _allocated():
    return ember.cpu.memory_allocated()


def _python_stack():
    """The calling Python frames, innermost first, without the autograd package's own."""
    import traceback

    here = os.path.dirname(__file__)
    return [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(traceback.extract_stack())
            if not f.filename.startswith(here)]


class FunctionEvent:
    def __init__(self, name, start_us, dur_us, tid, input_shapes=None, cpu_memory_usage=0,
                 stack=None):
        self.name, self.start_us, self.dur_us, self.thread = name, start_us, dur_us, tid
        self.input_shapes = input_shapes if input_shapes is not None else []  # record_shapes
        # profile_memory: bytes of CPU tensor memory the event left allocated (its children's
        # included; self_cpu_memory_usage excludes them), from ember.cpu.memory_allocated()
        self.cpu_memory_usage = cpu_memory_usage
        self.self_cpu_memory_usage = cpu_memory_usage
        self.stack = stack if stack is not None else []  # with_stack: "file(line): function"

    @property
    def key(self):
        return self.name

    @property
    def cpu_time_total(self):
        return self.dur_us

    def __repr__(self):
        return f"<FunctionEvent name={self.name} cpu_time={self.dur_us:.3f}us>"


class FunctionEventAvg:
    def __init__(self, key, input_shapes=None):
        self.key = key
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0

    @property
    def cpu_time(self):
        return self.cpu_time_total / max(self.count, 1)

    def __repr__(self):
        return f"<FunctionEventAvg key={self.key} count={self.count} cpu_time_total=" \
               f"{self.cpu_time_total:.3f}us>"


class EventList(list):
    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """Totals per op name; per (name, input shapes) with ``group_by_input_shape`` (needs
        ``record_shapes``), per (name, top n stack frames) with ``group_by_stack_n``."""
        avgs = {}
        for e in self:
            key = (e.name,)
            if group_by_input_shape:
                key += (str(e.input_shapes),)
            if group_by_stack_n:
                key += tuple(e.stack[:group_by_stack_n])
            a = avgs.get(key)
            if a is None:
                a = avgs[key] = FunctionEventAvg(
                    e.name, e.input_shapes if group_by_input_shape else None)
            a.count += 1
            a.cpu_time_total += e.dur_us
            a.self_cpu_time_total += e.self_us
            a.cpu_memory_usage += e.cpu_memory_usage
            a.self_cpu_memory_usage += e.self_cpu_memory_usage
        return _AvgList(avgs.values(), shapes=group_by_input_shape,
                        memory=any(e.cpu_memory_usage for e in self))

    def table(self, sort_by=None, row_limit=100, **kwargs):
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit)

    @property
    def self_cpu_time_total(self):
        return sum(e.self_us for e in self)


_SORT_KEYS = {None: None, "cpu_time_total": "cpu_time_total", "cpu_time": "cpu_time",
              "self_cpu_time_total": "self_cpu_time_total", "count": "count",
              "calls": "count", "cpu_memory_usage": "cpu_memory_usage",
              "self_cpu_memory_usage": "self_cpu_memory_usage"}


class _AvgList(list):
    def __init__(self, rows=(), shapes=False, memory=False):
        super().__init__(rows)
        self._shapes, self._memory = shapes, memory

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
        cols = ["Self CPU %", "Self CPU", "CPU total", "CPU time avg"]
        cols += ["CPU Mem", "Self CPU Mem"] if self._memory else []
        cols += ["# of Calls"]
        shape_width = max([len("Input Shapes")] + [len(str(a.input_shapes)) for a in rows])
        sep = "-" * width + "  " + "  ".join("-" * 13 for _ in cols)
        head = "Name".ljust(width) + "  " + "  ".join(c.rjust(13) for c in cols)
        if self._shapes:
            sep += "  " + "-" * shape_width
            head += "  " + "Input Shapes".rjust(shape_width)
        lines = [sep, head, sep]
        for a in rows:
            cells = [f"{100.0 * a.self_cpu_time_total / total:.2f}%",
                     _fmt_us(a.self_cpu_time_total), _fmt_us(a.cpu_time_total),
                     _fmt_us(a.cpu_time)]
            if self._memory:
                cells += [_fmt_bytes(a.cpu_memory_usage), _fmt_bytes(a.self_cpu_memory_usage)]
            line = a.key.ljust(width) + "  " + "  ".join(c.rjust(13) for c in cells +
                                                         [str(a.count)])
            if self._shapes:
                line += "  " + str(a.input_shapes).rjust(shape_width)
            lines.append(line)
        lines.append(sep)
        lines.append(f"Self CPU time total: {_fmt_us(total)}")
        return "\n".join(lines) + "\n"


def _fmt_bytes(n):
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} b"


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
        # What ember cannot record is refused rather than silently left out of the results.
        for name, on, why in (
                ("with_flops", with_flops, "ember does not count floating-point operations"),
                ("with_modules", with_modules, "ember does not record the calling modules"),
                ("use_cuda", use_cuda, "ember's profiler times CPU work only"),
                ("use_device", use_device not in (None, "cpu"),
                 "ember's profiler times CPU work only")):
            if on:
                raise NotImplementedError(f"profile({name}=...): {why}")
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.events = EventList()
        self._open = threading.local()  # per thread: the events begun and not yet ended
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
        _C._set_profiling(True)
        return self

    def __exit__(self, *exc):
        if self.enabled:
            STATE.profiler = self._prev
            _C._set_profiling(self._prev is not None)
        return False

    def _now_us(self):
        return (time.perf_counter() - self._t0) * 1e6

    def _open_events(self):
        # Per thread, so that the ops of two threads (a kernel releases the GIL) do not nest
        # into each other: per open event, [time of children, memory of children, memory
        # allocated at start].
        stack = getattr(self._open, "events", None)
        if stack is None:
            stack = self._open.events = []
        return stack

    def _begin(self):
        self._open_events().append([0.0, 0, _allocated() if self.profile_memory else 0])
        return self._now_us()

    def _end(self, name, start, input_shapes=None):
        end = self._now_us()
        dur = end - start
        open_events = self._open_events()
        child_us, child_mem, mem0 = open_events.pop()
        mem = _allocated() - mem0 if self.profile_memory else 0
        stack = _python_stack() if self.with_stack else None
        ev = FunctionEvent(name, start, dur, threading.get_ident(), input_shapes, mem, stack)
        ev.self_us = dur - child_us
        ev.self_cpu_memory_usage = mem - child_mem
        self.events.append(ev)
        if open_events:
            open_events[-1][0] += dur
            open_events[-1][1] += mem

    def timed(self, name, fn, *args, op_args=None):
        """Runs fn(*args) as one event; `op_args` are the op's own arguments (record_shapes)."""
        start = self._begin()
        try:
            return fn(*args)
        finally:
            self._end(name, start, self._shapes(op_args))

    def _shapes(self, op_args):
        """The input shapes of an event (record_shapes), [] for a non-tensor argument."""
        if not self.record_shapes or op_args is None:
            return None
        return [list(a.shape) if isinstance(a, ember.Tensor) else [] for a in op_args]

    def function_events(self):
        return self.events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        if group_by_input_shape and not self.record_shapes:
            raise RuntimeError("group_by_input_shape needs the profile to record shapes: "
                               "profile(record_shapes=True)")
        if group_by_stack_n and not self.with_stack:
            raise RuntimeError("group_by_stack_n needs profile(with_stack=True)")
        return self.events.key_averages(group_by_input_shape, group_by_stack_n)

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


def _op_enter(name):
    """The core's hook before an op while profiling: the event's start (None: no profile)."""
    prof = STATE.profiler
    return None if prof is None else prof._begin()


def _op_exit(name, start, args):
    prof = STATE.profiler
    if prof is None or start is None:
        return
    prof._end(name, start, prof._shapes(args))


_C._set_profiler_hooks(_op_enter, _op_exit)


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
