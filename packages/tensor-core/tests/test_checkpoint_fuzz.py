"""The crafted-checkpoint fuzzer (checkpoint_fuzz.py), quick form: a few hundred files loaded in
child processes; none may crash, hang, fail to read, or change ember. The long form (10,000
files) is `nox -s fuzz-checkpoints` or `python tests/checkpoint_fuzz.py --files 10000`.
EMBER_CKPT_FUZZ_SEED picks another seed for the quick form."""

from __future__ import annotations

import os

import checkpoint_fuzz
import pytest

QUICK_FILES = 300


def test_crafted_checkpoints_never_crash_nor_change_ember(tmp_path):
    seed = int(os.environ.get("EMBER_CKPT_FUZZ_SEED", "20"))
    summary = checkpoint_fuzz.run(QUICK_FILES, seed, keep=tmp_path / "kept")
    assert not summary.problems(), summary.report()
    assert sum(summary.outcomes.values()) == QUICK_FILES
    assert set(summary.by_generator) == set(checkpoint_fuzz.GENERATORS)
    # the generators reach the rebuild path with tensors that load, not only refusals
    assert summary.outcomes["loaded"] >= QUICK_FILES // 10, summary.report()


@pytest.mark.parametrize("marker, status", [(checkpoint_fuzz.SELFTEST_CRASH, "crash"),
                                            (checkpoint_fuzz.SELFTEST_CHANGE, "changed-ember")])
def test_the_runner_reports_each_problem_with_its_file_and_goes_on(tmp_path, monkeypatch, marker,
                                                                  status):
    # a child that dies with SIGSEGV (or changes ember.Tensor) at files 3 and 7: both reported
    # with their files kept, a fresh child for the files after each
    monkeypatch.setenv("EMBER_CKPT_FUZZ_SELFTEST", "1")
    summary = checkpoint_fuzz.run(10, 1, keep=tmp_path, inject={3: marker, 7: marker + b"!"})
    found = summary.crashes if status == "crash" else summary.changes
    assert [p["index"] for p in found] == [3, 7] and len(summary.problems()) == 2
    assert sum(summary.outcomes.values()) == 10 and summary.children == 3
    assert (tmp_path / "00007-injected.pt").read_bytes() == marker + b"!"
    if status == "crash":
        # under AddressSanitizer (the sanitizer session) the crash is its report and exit 1
        asan = "libasan" in os.environ.get("LD_PRELOAD", "")
        assert all(p["detail"].startswith("exit status 1" if asan else "SIGSEGV") for p in found)
    else:
        assert all("ember.Tensor._fuzz_selftest" in p["detail"] for p in found)
    assert "--replay" in summary.report()
