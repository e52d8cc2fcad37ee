"""bench_amp: what autocast costs per op, beside torch.autocast (CPU).

Rows: ``a + b`` (an op autocast does not list), ``a @ b`` (lower precision: cast to bfloat16 in a
region) and ``F.linear`` (ember composes it in Python and wraps it for autocast) on 2x2 float32
tensors, with autocast off and inside ``autocast("cpu")``. Off, ember's ops pay one load of a
global flag; on, a listed op goes through ember.amp's hook (Python) and runs again with the cast
tensors. The times are per call, medians of interleaved blocks; the ratio is torch / ember.
"""

from __future__ import annotations

import sys

import _harness as H

import ember


def main(argv: list[str] | None = None) -> int:
    H.setup("bench_amp: autocast's per-op cost vs torch.autocast (CPU)", argv)
    torch = H.torch
    try:
        import ember.nn.functional as F
    except ImportError:  # ember-nn not installed: the F.linear rows are left out
        F = None

    x, y = H.inputs((2, 2), seed=0), H.inputs((2, 2), seed=1)
    w, b = H.inputs((2, 2), seed=2), H.inputs((2,), seed=3)
    tf = torch.nn.functional if torch else None
    cases = {
        "a + b": (lambda: x["ember"] + y["ember"],
                  (lambda: x["torch"] + y["torch"]) if torch else None),
        "a @ b": (lambda: x["ember"] @ y["ember"],
                  (lambda: x["torch"] @ y["torch"]) if torch else None),
    }
    if F is not None:
        cases["F.linear(a, w, bias)"] = (
            lambda: F.linear(x["ember"], w["ember"], b["ember"]),
            (lambda: tf.linear(x["torch"], w["torch"], b["torch"])) if torch else None)
    rows: list[H.Row] = []
    for region in ("off", "on"):
        for name, (ours, theirs) in cases.items():
            fns = {"ember": ours} | ({"torch": theirs} if theirs else {})
            if region == "on":
                with ember.autocast("cpu"):
                    if torch:
                        with torch.autocast("cpu"):
                            t = H.measure_all(fns)
                    else:
                        t = H.measure_all(fns)
            else:
                t = H.measure_all(fns)
            rows.append(H.Row(f"{name}, 2x2 float32, autocast {region}", t["ember"], "torch",
                              t.get("torch")))
    H.report("autocast per-op cost (CPU, bfloat16)", rows)
    H.save_json()
    return 0


if __name__ == "__main__":
    sys.exit(main())
