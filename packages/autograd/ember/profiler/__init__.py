"""ember.profiler: torch.profiler's API over ember.autograd.profiler.

``profile`` records through ``ember.autograd.profiler.profile`` (what it sees: every op of the
core, with or without autograd, every backward node and every ``record_function`` block).
Over it this module adds torch.profiler's session logic: ``activities``, a ``schedule``
(wait / warmup / active / repeat / skip_first) driven by ``step()``, the ``on_trace_ready``
callback at the end of each active span (``tensorboard_trace_handler``
writes a Chrome trace there), ``start``/``stop``, and ``key_averages``/``events``/
``export_chrome_trace`` over the last recorded span.

ember times CPU work only: ``ProfilerActivity.CUDA`` is accepted (real scripts ask for it) with a
warning that device time is not recorded.
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any

from ember.autograd import profiler as _autograd_profiler
from ember.autograd.profiler import record_function

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "record_function", "schedule",
           "supported_activities", "tensorboard_trace_handler"]


class ProfilerActivity(Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5

    def __repr__(self):
        return f"<ProfilerActivity.{self.name}: {self.value}>"


class ProfilerAction(Enum):
    """What a schedule asks for at a step."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set:
    """The activities ember records: the CPU."""
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """torch.profiler.schedule: after ``skip_first`` steps, cycles of ``wait`` idle steps,
    ``warmup`` steps and ``active`` recorded steps (the last one RECORD_AND_SAVE), ``repeat``
    times (0: without end)."""

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"step must be non-negative, got {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return (ProfilerAction.RECORD if mod_step < num_steps - 1
                else ProfilerAction.RECORD_AND_SAVE)

    if not (wait >= 0 and warmup >= 0 and active > 0 and repeat >= 0 and skip_first >= 0):
        raise AssertionError("Invalid profiler schedule arguments")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable[[Any], None]:
    """An ``on_trace_ready`` callback that writes each span's Chrome trace to
    ``dir_name/<worker_name>.<time in ms>.pt.trace.json`` (``.gz`` with ``use_gzip``), the
    files TensorBoard's profiler plugin reads."""

    def handler_fn(prof) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns() // 1_000_000}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


class profile:  # noqa: N801
    """torch.profiler.profile: ``with profile(activities=[ProfilerActivity.CPU],
    schedule=schedule(wait=1, warmup=1, active=2), on_trace_ready=handler) as prof:`` ... one
    ``prof.step()`` per iteration; without a schedule the whole block is one recorded span."""

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[..., Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback=None):
        self.activities = set(activities) if activities else supported_activities()
        if use_cuda:
            self.activities.add(ProfilerActivity.CUDA)
        unknown = [a for a in self.activities if not isinstance(a, ProfilerActivity)]
        if unknown:
            raise TypeError(f"activities must be ProfilerActivity values, got {unknown}")
        if self.activities - supported_activities():
            warnings.warn("ember's profiler times CPU work only; the activities "
                          f"{sorted(a.name for a in self.activities - supported_activities())} "
                          "are not recorded", stacklevel=2)
        if with_flops or with_modules:
            # refused by the recorder below with the reason; checked here so that a wrong call
            # fails at construction as in torch, not at the first recorded step
            _autograd_profiler.profile(with_flops=with_flops, with_modules=with_modules)
        self.schedule = schedule if schedule is not None else _default_schedule_fn
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.acc_events = acc_events
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.profiler: _autograd_profiler.profile | None = None  # the span being/last recorded
        self._recording = False
        self._step_rec: record_function | None = None
        self._metadata: dict[str, str] = {}

    # ---- the session ----
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        return False

    def start(self) -> None:
        self._transit(None, self.current_action)
        self._enter_step()

    def stop(self) -> None:
        self._exit_step()
        self._transit(self.current_action, None)

    def step(self) -> None:
        """Marks the end of an iteration: the schedule decides what the next one records."""
        self._exit_step()
        prev_action = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev_action, self.current_action)
        self._enter_step()

    def _enter_step(self) -> None:
        if self.record_steps and self._recording:
            self._step_rec = record_function(f"ProfilerStep#{self.step_num}")
            self._step_rec.__enter__()

    def _exit_step(self) -> None:
        if self._step_rec is not None:
            self._step_rec.__exit__(None, None, None)
            self._step_rec = None

    def _start_trace(self) -> None:
        self.profiler = _autograd_profiler.profile(record_shapes=self.record_shapes,
                                                   profile_memory=self.profile_memory,
                                                   with_stack=self.with_stack)
        self.profiler.__enter__()
        self._recording = True

    def _stop_trace(self) -> None:
        if self._recording:
            self.profiler.__exit__(None, None, None)
            self._recording = False

    def _trace_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _transit(self, prev, cur) -> None:
        A = ProfilerAction
        recording = (A.RECORD, A.RECORD_AND_SAVE)
        if prev in recording and (prev == A.RECORD_AND_SAVE or cur not in recording):
            # the span ends: after a RECORD_AND_SAVE step, or when recording stops
            self._stop_trace()
            self._trace_ready()
            prev = None
        elif prev == A.WARMUP and cur in (None, A.NONE):
            warnings.warn("Incorrect schedule: WARMUP followed by NONE", stacklevel=3)
        if cur in recording and prev not in recording:
            self._start_trace()

    # ---- results of the last recorded span ----
    def _require(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting chrome trace")
        return self.profiler

    def events(self):
        """The recorded events (FunctionEvent) of the last span."""
        return self._require().function_events()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False):
        """Totals per op name (per shapes, per stack frames), with ``.table(sort_by=...,
        row_limit=...)``."""
        return self._require().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> str:
        """Writes the last span in the Chrome trace format (gzip-compressed when ``path`` ends
        in ``.gz``); returns ``path``."""
        prof = self._require()
        if not path.endswith(".gz"):
            prof.export_chrome_trace(path)
            self._add_metadata_to(path, gz=False)
            return path
        tmp = path[:-3] + ".tmp"
        prof.export_chrome_trace(tmp)
        self._add_metadata_to(tmp, gz=False)
        with open(tmp, "rb") as src, gzip.open(path, "wb") as dst:
            dst.write(src.read())
        os.remove(tmp)
        return path

    def _add_metadata_to(self, path: str, gz: bool) -> None:
        if not self._metadata:
            return
        with open(path) as f:
            trace = json.load(f)
        trace.update(self._metadata)
        with open(path, "w") as f:
            json.dump(trace, f)

    def add_metadata(self, key: str, value: str) -> None:
        """Adds ``key: value`` to the exported traces."""
        self._metadata[key] = value

    def add_metadata_json(self, key: str, value: str) -> None:
        self._metadata[key] = json.loads(value)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Writes "frame;frame;... time" lines (flame-graph input) of the last span; needs
        ``with_stack=True``."""
        if not self.with_stack:
            raise RuntimeError("export_stacks needs profile(with_stack=True)")
        with open(path, "w") as f:
            for e in self.events():
                stack = ";".join(reversed(e.stack))
                value = e.self_us if metric.startswith("self") else e.dur_us
                f.write(f"{stack};{e.name} {int(value)}\n")
