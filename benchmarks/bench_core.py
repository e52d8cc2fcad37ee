"""ember's tensor core beside PyTorch (CPU) and NumPy, on the same data in one process.

Every row times one expression in each library and prints the ratio peer_time / ember_time
(> 1: ember is faster). The rows with a target are the figures ember commits to; the others are
shown for context. A case ember cannot run yet is printed as "n/a" with the reason.

    python benchmarks/bench_core.py [--quick] [--smoke] [--json PATH] [--threads N] [--no-torch]
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402

import ember  # noqa: E402


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:100]


def run_case(
    case: str,
    fns: dict[str, Callable[[], Any] | None],
    targets: dict[str, float],
    *,
    requires: tuple[str, ...] = (),
    validate: Callable[[Any], str] | None = None,
    settle: float = 0.005,
    rtol: float = 1e-3,
    atol: float = 1e-3,
) -> list[H.Row]:
    """Times fns["ember"] against each peer present; one row per peer.

    fns maps "ember", "torch", "numpy" to a zero-argument callable, or None where that library
    is missing. targets maps a peer to the least acceptable ratio peer/ember. requires names the
    ember attributes the case needs ("softmax", "Tensor.sum"): without them the case is one
    "n/a" row and nothing is timed. validate(ember_result) may return a complaint ("" if none)
    about what equal values cannot show, such as the layout.
    """
    fns = {k: f for k, f in fns.items() if f is not None}
    peers = [p for p in ("torch", "numpy") if p in fns]
    if not peers:
        return []
    first = next((p for p in peers if p in targets), peers[0])
    lacking = [name for name in requires if not H.has(ember, name)]
    if lacking:
        note = f"ember has no {', '.join(lacking)} yet"
        return [H.Row(case, None, first, None, targets.get(first), note)]
    # One call each before timing: ember may not support the case yet, and the results must agree.
    results: dict[str, Any] = {}
    try:
        results["ember"] = fns["ember"]()
    except (AttributeError, TypeError, NotImplementedError, RuntimeError, ValueError) as e:
        return [H.Row(case, None, first, None, targets.get(first), _reason(e))]
    for p in peers:
        results[p] = fns[p]()
    mismatch = H.check_close(case, results, rtol=rtol, atol=atol)
    complaint = validate(results["ember"]) if validate is not None else ""
    if complaint:
        print(f"warning: {case}: {complaint}")
    del results
    times = H.measure_all(fns, settle=settle)
    note = "; ".join(x for x in ("result differs" if mismatch else "", complaint) if x)
    return [H.Row(case, times["ember"], p, times[p], targets.get(p), note) for p in peers]


def sizes() -> dict[str, Any]:
    if H.SETTINGS.smoke:
        return {"n": 4096, "side": 64, "mm": (16, 32, 64)}
    return {"n": 1 << 24, "side": 4096, "mm": (256, 1024, 2048)}


def _m(n: int) -> str:
    return f"{n >> 20}M" if n >= 1 << 20 else str(n)


def bench_elementwise(sz: dict[str, Any]) -> None:
    torch, np = H.torch, H.np
    rows: list[H.Row] = []

    x = H.inputs((4,), seed=0)
    y = H.inputs((4,), seed=1)
    rows += run_case(
        "a + b, 4 x float32 (per-op overhead)",
        {
            "ember": lambda: x["ember"] + y["ember"],
            "torch": (lambda: x["torch"] + y["torch"]) if torch else None,
            "numpy": (lambda: x["numpy"] + y["numpy"]) if np else None,
        },
        {"torch": 0.67},
    )

    n = sz["n"]
    a, b = H.inputs((n,), seed=0), H.inputs((n,), seed=1)
    c = {
        "ember": ember.empty(n, dtype=ember.float32),
        "torch": torch.empty(n, dtype=torch.float32) if torch else None,
        "numpy": np.empty(n, dtype=np.float32) if np else None,
    }
    rows += run_case(
        f"add(a, b, out=c), {_m(n)} x float32",
        {
            "ember": lambda: ember.add(a["ember"], b["ember"], out=c["ember"]),
            "torch": (lambda: torch.add(a["torch"], b["torch"], out=c["torch"])) if torch else None,
            "numpy": (lambda: np.add(a["numpy"], b["numpy"], out=c["numpy"])) if np else None,
        },
        {"torch": 0.9},
    )
    rows += run_case(  # one fused pass (a + alpha * b with FMA), as torch's kernel
        f"add(a, b, alpha=0.3, out=c), {_m(n)} x float32",
        {
            "ember": lambda: ember.add(a["ember"], b["ember"], alpha=0.3, out=c["ember"]),
            "torch": (lambda: torch.add(a["torch"], b["torch"], alpha=0.3, out=c["torch"]))
            if torch else None,
            "numpy": (lambda: np.add(a["numpy"], np.float32(0.3) * b["numpy"], out=c["numpy"]))
            if np else None,
        },
        {"torch": 0.9},
    )
    rows += run_case(
        f"a * b + a, {_m(n)} x float32 (allocating)",
        {
            "ember": lambda: a["ember"] * b["ember"] + a["ember"],
            "torch": (lambda: a["torch"] * b["torch"] + a["torch"]) if torch else None,
            "numpy": (lambda: a["numpy"] * b["numpy"] + a["numpy"]) if np else None,
        },
        {"torch": 0.8},
    )
    H.report("elementwise", rows)


def bench_transcendental(sz: dict[str, Any]) -> None:
    """libm's functions over 1M elements: vectorised through glibc's vector math library where
    ember was built with it (csrc/kernels/vector_libm.h; `ember._C._has_vector_libm()` says)."""
    torch, np = H.torch, H.np
    n = min(sz["n"], 1 << 20)
    rows: list[H.Row] = []
    for name in ("float32", "float64"):
        x = H.inputs((n,), seed=0)  # standard normal float32
        e = x["ember"].to(getattr(ember, name)).abs() * 0.9  # in every function's domain
        t = torch.from_numpy(e.numpy()) if torch else None
        a = e.numpy() if np else None
        for op, np_op in (("sin", "sin"), ("cos", "cos"), ("tan", "tan"), ("atan", "arctan"),
                          ("log", "log"), ("log1p", "log1p"), ("expm1", "expm1"),
                          ("asinh", "arcsinh"), ("tanh", "tanh"), ("erf", None)):
            rows += run_case(
                f"{op}, {_m(n)} x {name}",
                {
                    "ember": lambda op=op, e=e: getattr(e, op)(),
                    "torch": (lambda op=op, t=t: getattr(t, op)()) if torch else None,
                    "numpy": (lambda f=np_op, a=a: getattr(np, f)(a)) if np and np_op else None,
                },
                {"torch": 0.9}, rtol=1e-5, atol=1e-6)
    H.report("transcendental functions", rows)


def bench_reduced_float(sz: dict[str, Any]) -> None:
    """float16/bfloat16: elementwise ops through the float32 loops, conversions, sums (context
    rows, no target). NumPy has no bfloat16, and its float16 ops are not vectorised."""
    rows: list[H.Row] = []
    n = min(sz["n"], 1 << 20)
    for name in ("float16", "bfloat16"):
        rows += _reduced_float_rows(name, n)
    H.report("float16 / bfloat16", rows)


def _reduced_float_rows(name: str, n: int) -> list[H.Row]:
    torch = H.torch
    e32 = H.inputs((n,), seed=0)["ember"]
    a, b = e32.to(getattr(ember, name)), (e32 + 0.5).to(getattr(ember, name))
    ta = tb = None
    if torch is not None:
        t32 = torch.from_numpy(e32.numpy())
        ta, tb = t32.to(getattr(torch, name)), (t32 + 0.5).to(getattr(torch, name))
    d, td = a.double(), ta.double() if torch is not None else None
    cases = {
        "a + b": (lambda: a + b, lambda: ta + tb),
        "a.exp()": (lambda: a.exp(), lambda: ta.exp()),
        "a.sigmoid()": (lambda: a.sigmoid(), lambda: ta.sigmoid()),
        "a.sum()": (lambda: a.sum(), lambda: ta.sum()),
        "a.float()": (lambda: a.float(), lambda: ta.float()),
        "a.double()": (lambda: a.double(), lambda: ta.double()),
        "float64.to(dtype)": (lambda: d.to(a.dtype), lambda: td.to(ta.dtype)),
    }
    rows: list[H.Row] = []
    for case, (ef, tf) in cases.items():
        rows += run_case(f"{case}, {_m(n)} x {name}",
                         {"ember": ef, "torch": tf if torch is not None else None},
                         {}, rtol=1e-2, atol=1e-2)
    return rows

def bench_call_overhead(sz: dict[str, Any]) -> None:
    """The cost of a call through the op registry's argument parsing, on 4 elements: index ops
    (a method and functions) and factories with their keywords. Context rows, no target."""
    torch = H.torch
    rows: list[H.Row] = []
    x = H.inputs((4,), seed=0)
    libs = {"ember": ember, "torch": torch}
    idx = {k: m.tensor([0, 2]) for k, m in libs.items() if m is not None}
    mask = {k: v > 0 for k, v in x.items() if k in libs}
    cases = {
        "x.index_select(0, i)": lambda m, k: x[k].index_select(0, idx[k]),
        "gather(x, 0, i)": lambda m, k: m.gather(x[k], 0, idx[k]),
        "x.masked_fill(mask, 1.0)": lambda m, k: x[k].masked_fill(mask[k], 1.0),
        "zeros(4)": lambda m, k: m.zeros(4),
        "zeros(2, 2, dtype=float64)": lambda m, k: m.zeros(2, 2, dtype=m.float64),
        "arange(4)": lambda m, k: m.arange(4),
        "full((4,), 1.5)": lambda m, k: m.full((4,), 1.5),
    }
    for name, f in cases.items():
        rows += run_case(
            f"{name}, 4 elements (call overhead)",
            {k: (lambda f=f, m=m, k=k: f(m, k)) if m is not None else None
             for k, m in libs.items()},
            {},
        )
    H.report("call overhead: index ops and factories", rows)


def bench_reductions(sz: dict[str, Any]) -> None:
    torch, np = H.torch, H.np
    rows: list[H.Row] = []
    n, side = sz["n"], sz["side"]

    v = H.inputs((n,), seed=2)
    # float32 sums of n values in [-1, 1]: allow a pairwise-summation sized error, no more.
    rows += run_case(
        f"x.sum(), {_m(n)} x float32",
        {
            "ember": lambda: v["ember"].sum(),
            "torch": (lambda: v["torch"].sum()) if torch else None,
            "numpy": (lambda: v["numpy"].sum()) if np else None,
        },
        {"torch": 0.9},
        requires=("Tensor.sum",),
        atol=1e-6 * n,
    )

    m = H.inputs((side, side), seed=3)
    rows += run_case(
        f"x.sum(dim=1), {side}x{side} float32",
        {
            "ember": lambda: m["ember"].sum(dim=1),
            "torch": (lambda: m["torch"].sum(dim=1)) if torch else None,
            "numpy": (lambda: m["numpy"].sum(axis=1)) if np else None,
        },
        {"torch": 0.8},
        requires=("Tensor.sum",),
        atol=1e-6 * side,
    )

    def np_softmax(v):
        e = np.exp(v - v.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    rows += run_case(
        f"softmax(x, dim=1), {side}x{side} float32",
        {
            "ember": lambda: ember.softmax(m["ember"], dim=1),
            "torch": (lambda: torch.softmax(m["torch"], dim=1)) if torch else None,
            "numpy": (lambda: np_softmax(m["numpy"])) if np else None,
        },
        {"torch": 0.8},
        requires=("softmax",),
        atol=1e-6,
    )
    H.report("reductions and softmax", rows)


def bench_layout(sz: dict[str, Any]) -> None:
    torch, np = H.torch, H.np
    side = sz["side"]
    m = H.inputs((side, side), seed=4)
    rows = run_case(
        f"x.t().contiguous(), {side}x{side} float32",
        {
            "ember": lambda: m["ember"].t().contiguous(),
            "torch": (lambda: m["torch"].t().contiguous()) if torch else None,
            "numpy": (lambda: np.ascontiguousarray(m["numpy"].T)) if np else None,
        },
        {"torch": 0.8},
        validate=lambda r: "" if r.stride() == (side, 1) else f"not C-contiguous: {r.stride()}",
    )
    H.report("layout", rows)


def bench_matmul(sz: dict[str, Any]) -> None:
    torch, np = H.torch, H.np
    rows: list[H.Row] = []
    for k in sz["mm"]:
        a, b = H.inputs((k, k), seed=5), H.inputs((k, k), seed=6)
        rows += run_case(
            f"mm, {k}x{k} @ {k}x{k} float32",
            {
                "ember": lambda a=a, b=b: ember.mm(a["ember"], b["ember"]),
                "torch": (lambda a=a, b=b: torch.mm(a["torch"], b["torch"])) if torch else None,
                "numpy": (lambda a=a, b=b: a["numpy"] @ b["numpy"]) if np else None,
            },
            {"numpy": 0.85},
            requires=("mm",),
            # Two OpenBLAS libraries (NumPy's and ember's) and MKL live in this process; each
            # one's workers spin for up to ~0.1 s after a call: let them sleep between blocks.
            settle=0.2,
            rtol=1e-3,
            atol=1e-4 * k,
        )
    H.report("matrix product (BLAS)", rows)


def main(argv: list[str] | None = None) -> int:
    H.setup("bench_core: ember's tensor core vs PyTorch (CPU) and NumPy", argv)
    sz = sizes()
    bench_elementwise(sz)
    bench_transcendental(sz)
    bench_reduced_float(sz)
    bench_call_overhead(sz)
    bench_reductions(sz)
    bench_layout(sz)
    bench_matmul(sz)
    H.summary()
    H.save_json({"sizes": {k: list(v) if isinstance(v, tuple) else v for k, v in sz.items()}})
    return 0  # benchmarks report; they do not fail on a slow row


if __name__ == "__main__":
    sys.exit(main())
