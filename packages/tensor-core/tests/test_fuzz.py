"""The quick form of the fuzzer (fuzz_ops.py): a few thousand random calls over every public
function and Tensor method, in worker processes; none may crash the process or hang. The long
form (100,000 calls, compared with torch where it is installed) is the nox session `fuzz`."""

from __future__ import annotations

import fuzz_ops


def test_random_calls_neither_crash_nor_hang():
    report = fuzz_ops.run(calls=3000, seed=1, workers=2, timeout=60.0)
    assert report.calls == 3000
    assert not report.crashes, "\n".join(f"{what}: {src}" for src, what in report.crashes)
    assert not report.hangs, "\n".join(report.hangs)
    # The generated calls reach past argument parsing into the ops, not only into TypeErrors.
    assert sum(report.ember_raised.values()) < report.calls


def test_a_call_is_reproducible_from_its_seed_and_index():
    import ember

    functions, methods = fuzz_ops.surface(ember)
    assert fuzz_ops.make_call(7, 42, functions, methods) == fuzz_ops.make_call(7, 42, functions,
                                                                                methods)
    assert "load" not in functions and "set_default_dtype" not in functions  # fuzzed elsewhere
