"""ember.profiler (torch.profiler's API): schedule actions as torch's, spans and on_trace_ready,
Chrome traces, key_averages().table()."""

from __future__ import annotations

import gzip
import json
import os

import pytest

import ember
from ember.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)

A = ProfilerAction


def test_schedule_actions():
    s = schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    got = [s(i) for i in range(11)]
    want = [A.NONE,                                   # skip_first
            A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE,
            A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE,
            A.NONE, A.NONE]                           # after `repeat` cycles
    assert got == want


def test_schedule_matches_torch():
    torch = pytest.importorskip("torch")
    for kw in ({"wait": 2, "warmup": 1, "active": 3}, {"wait": 0, "warmup": 2, "active": 1,
                                                        "repeat": 3, "skip_first": 2},
               {"wait": 3, "warmup": 1, "active": 1, "skip_first": 1, "skip_first_wait": 1}):
        ours, theirs = schedule(**kw), torch.profiler.schedule(**kw)
        assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)]


def test_schedule_argument_checks():
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        schedule(wait=0, warmup=1, active=0)
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=0, warmup=0, active=1)


def _work(w):
    with record_function("fwd"):
        (w @ w).sum().backward()


def test_spans_and_on_trace_ready():
    w = ember.randn(4, 4, requires_grad=True)
    spans = []

    def ready(p):
        spans.append((p.step_num, sorted({e.name for e in p.events()})))

    with profile(activities=[ProfilerActivity.CPU],
                 schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                 on_trace_ready=ready) as prof:
        for _ in range(9):
            _work(w)
            prof.step()
    # two spans of two recorded steps, reported at the step that ends each
    assert [s[0] for s in spans] == [4, 8]
    for _, names in spans:
        assert {"fwd", "matmul", "MatmulBackward0", "ProfilerStep#2"} & set(names)
        assert sum(n.startswith("ProfilerStep#") for n in names) == 2
    avg = prof.key_averages()
    assert {a.key: a.count for a in avg}["fwd"] == 2
    table = avg.table(sort_by="cpu_time_total", row_limit=3)
    assert "Name" in table and "# of Calls" in table and "Self CPU time total" in table


def test_without_schedule_one_span_and_start_stop():
    w = ember.randn(3, 3, requires_grad=True)
    seen = []
    prof = profile(on_trace_ready=lambda p: seen.append(len(p.events())))
    prof.start()
    _work(w)
    prof.step()  # without a schedule every step records
    _work(w)
    prof.stop()
    assert len(seen) == 1 and seen[0] > 0
    assert sum(e.name == "fwd" for e in prof.events()) == 2


def test_chrome_trace_and_tensorboard_handler(tmp_path):
    w = ember.randn(3, 3, requires_grad=True)
    with profile(on_trace_ready=tensorboard_trace_handler(str(tmp_path), "worker0")) as prof:
        _work(w)
    (name,) = os.listdir(tmp_path)
    assert name.startswith("worker0.") and name.endswith(".pt.trace.json")
    events = json.load(open(tmp_path / name))["traceEvents"]
    assert {"fwd", "matmul"} <= {e["name"] for e in events}
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    prof.add_metadata("run", "a")
    gz = prof.export_chrome_trace(str(tmp_path / "t.json.gz"))
    with gzip.open(gz) as f:
        trace = json.load(f)
    assert trace["run"] == "a" and len(trace["traceEvents"]) == len(events)


def test_record_shapes_and_cuda_activity_warning():
    w = ember.randn(2, 5, requires_grad=True)
    with pytest.warns(UserWarning, match="CPU work only"):
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                       record_shapes=True)
    with prof:
        (w * 2).sum().backward()
    rows = prof.key_averages(group_by_input_shape=True)
    assert any(r.key == "mul" and r.input_shapes[0] == [2, 5] for r in rows)


def test_unsupported_options_are_refused():
    with pytest.raises(NotImplementedError, match="with_flops"):
        profile(with_flops=True)
