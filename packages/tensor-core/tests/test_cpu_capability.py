"""The CPU kernels' capability (ember.backends.cpu, EMBER_CPU_CAPABILITY) and the agreement of the
kernel copies compiled for each instruction set.

Each capability runs in a fresh interpreter, since the level is fixed when ember._C loads. The
copies must compute the same bits (the build never contracts a*b+c into an FMA on its own; only
add with alpha does, and says so in ember._C._FUSED_MULTIPLY_ADD): the default copy is the
reference for the wider ones, and the test suite itself checks every copy against NumPy when run
under EMBER_CPU_CAPABILITY (the nox sessions `tests-cpu-levels` and `tests-emulated-cpu`).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember

LEVELS = ["DEFAULT", "AVX2", "AVX512"]
BEST = ember._C._best_cpu_capability()
AVAILABLE = LEVELS[: LEVELS.index(BEST) + 1]
# Under an emulator (nox's tests-emulated-cpu: qemu-user) the fresh interpreters run under it too:
# qemu-user runs the programs a process starts on the real CPU.
EMULATOR = shlex.split(os.environ.get("EMBER_TEST_EMULATOR", ""))


def run_at(capability: str | None, code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("EMBER_CPU_CAPABILITY", None)
    if capability is not None:
        env["EMBER_CPU_CAPABILITY"] = capability
    return subprocess.run([*EMULATOR, sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=120)


def capability_at(value: str | None) -> str:
    r = run_at(value, "import ember; print(ember.backends.cpu.get_cpu_capability())")
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_reports_a_known_capability():
    cap = ember.backends.cpu.get_cpu_capability()
    assert cap in LEVELS
    assert cap == ember._C._get_cpu_capability()
    assert LEVELS.index(cap) <= LEVELS.index(BEST)


@pytest.mark.parametrize("value", ["default", "baseline", "DEFAULT", "avx2", "avx512"])
def test_the_variable_asks_for_a_lower_level_only(value):
    asked = "DEFAULT" if value.lower() in ("default", "baseline") else value.upper()
    expected = asked if LEVELS.index(asked) <= LEVELS.index(BEST) else BEST
    assert capability_at(value) == expected


def test_without_the_variable_the_best_level_runs():
    assert capability_at(None) == BEST


def test_an_unknown_value_is_ignored_with_a_warning():
    r = run_at("sse9", "import ember; print(ember.backends.cpu.get_cpu_capability())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == BEST
    assert "EMBER_CPU_CAPABILITY='sse9' is not one of default, avx2, avx512" in r.stderr


# The kernels of ops/cpu/ on float32 and float64 (the dtypes the wider copies compile), with
# special values mixed in, contiguous and strided, reduced along both dims.
KERNEL_RESULTS = """
import json, math
import numpy as np
import ember

rng = np.random.default_rng(0)
special = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-30, -1e30, 88.0, -104.0, math.inf, -math.inf, math.nan]
out = {"fused": bool(ember._C._FUSED_MULTIPLY_ADD)}
for dt in ("float32", "float64"):
    a = rng.standard_normal((37, 129)).astype(dt) * 3
    b = rng.standard_normal((37, 129)).astype(dt) * 3
    a.flat[: len(special)] = special
    b.flat[5 : 5 + len(special)] = special[::-1]
    x, y = ember.from_numpy(a), ember.from_numpy(b)
    xt = x.t()  # strided operands
    res = {}
    for name in ("exp", "log", "sqrt", "tanh", "sigmoid", "sin", "erf", "abs", "neg", "floor",
                 "reciprocal", "isnan", "signbit", "expm1", "rsqrt"):
        res[name] = getattr(ember, name)(x)
        res[name + "_t"] = getattr(ember, name)(xt)
    for name in ("add", "sub", "mul", "div", "maximum", "minimum", "fmod", "remainder", "pow",
                 "atan2", "lt", "eq", "logaddexp", "hypot"):
        res[name] = getattr(ember, name)(x, y)
        # a Python number where torch's signature takes one, else a 0-d tensor
        number = ember.tensor(0.75) if name in ("maximum", "minimum", "atan2", "logaddexp",
                                                "hypot") else 0.75
        res[name + "_s"] = getattr(ember, name)(x, number)
        res[name + "_t"] = getattr(ember, name)(xt, y.t())
    res["add_alpha"] = ember.add(x, y, alpha=0.3)
    res["sub_alpha"] = ember.sub(x, y, alpha=1.7)
    finite = ember.nan_to_num(x, nan=0.0, posinf=1.0, neginf=-1.0)
    for d in (None, 0, 1):
        kw = {} if d is None else {"dim": d}
        res[f"sum{d}"] = finite.sum(**kw)
        res[f"mean{d}"] = finite.mean(**kw)
        res[f"nansum{d}"] = x.nansum(**kw)
        res[f"prod{d}"] = (finite * 0.01 + 1).prod(**({} if d is None else {"dim": d}))
        res[f"norm{d}"] = ember.linalg.vector_norm(finite, 2, **kw)
        res[f"norm3_{d}"] = ember.linalg.vector_norm(finite, 3.5, **kw)
        res[f"var{d}"] = finite.var(**kw)
        res[f"std{d}"] = finite.std(**kw)
        res[f"count{d}"] = ember.count_nonzero(x, **kw)
        res[f"any{d}"] = x.any(**kw)
        res[f"all{d}"] = x.all(**kw)
    for d in (0, 1):
        res[f"softmax{d}"] = ember.softmax(finite, d)
        res[f"log_softmax{d}"] = ember.log_softmax(finite, d)
        res[f"logsumexp{d}"] = ember.logsumexp(finite, d)
    for name, v in res.items():
        out[f"{dt}/{name}"] = np.asarray(v.numpy()).astype(np.float64).tolist()
print(json.dumps(out))
"""


def kernel_results(capability: str) -> dict:
    r = run_at(capability.lower(), KERNEL_RESULTS)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# Relative difference allowed between copies: fused multiply-adds change the last bits of a
# polynomial (tanh), a log of a sum (logaddexp) or a sum of squares (norm, var): 2 ulps seen.
RTOL = {"float32": 8 * np.finfo(np.float32).eps, "float64": 8 * np.finfo(np.float64).eps}


@pytest.mark.skipif(len(AVAILABLE) < 2, reason=f"this CPU runs only the {BEST} kernels")
@pytest.mark.parametrize("capability", AVAILABLE[1:])
def test_wider_copies_compute_the_default_copys_values(capability):
    reference, wide = kernel_results("DEFAULT"), kernel_results(capability)
    assert reference.pop("fused") is False  # the x86-64-v2 baseline has no FMA
    assert wide.pop("fused") is True  # AVX2 and AVX-512 copies have it
    assert reference.keys() == wide.keys()
    for key, ref in reference.items():
        if key.endswith("_alpha"):  # rounded once or twice by design: tests/test_add_alpha.py
            continue
        dt = key.split("/")[0]
        # logaddexp's log1p(exp(-|a - b|)) comes from libmvec's SSE or AVX2 form (an ulp apart,
        # kernels/vector_libm.h), and the sum with max(a, b) cancels near zero: an ulp of the
        # largest value rather than of each
        scale = np.nanmax(np.abs(ref)) if "logaddexp" in key and len(ref) else 0.0
        np.testing.assert_allclose(np.array(wide[key]), np.array(ref), rtol=RTOL[dt],
                                   atol=RTOL[dt] * scale, err_msg=f"{capability} vs DEFAULT: {key}")


# float16/bfloat16: every copy runs their elementwise kernels through its float32 loops in
# blocks (ops/cpu/widen.h) and converts with its own instructions (F16C where it has them); the
# values must be NumPy's: the float32 result of the float32 operands, rounded once to nearest even.
REDUCED_FLOAT_RESULTS = """
import json
import numpy as np
import ember

def bf16_bits(f32):  # float32 -> bfloat16 bits, nearest even (no NaN among the inputs)
    u = f32.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)

def bits(t):
    return t.view(ember.int16).numpy().view(np.uint16)

rng = np.random.default_rng(3)
a32 = (rng.standard_normal((33, 301)) * 4).astype(np.float32)
b32 = (rng.standard_normal((33, 301)) * 4 + 0.5).astype(np.float32)
a32.flat[:6] = [0.0, -0.0, 65504.0, 1e-7, np.inf, -np.inf]
bad = []
for name in ("float16", "bfloat16"):
    dt = getattr(ember, name)
    if name == "float16":
        to16 = lambda v: v.astype(np.float32).astype(np.float16).view(np.uint16)
        from16 = lambda u: u.view(np.float16).astype(np.float32)
    else:
        to16 = bf16_bits
        from16 = lambda u: (u.astype(np.uint32) << 16).view(np.float32)
    a = from16(to16(a32)); b = from16(to16(b32))  # the 16-bit operands, as float32
    x, y = ember.from_numpy(a32).to(dt), ember.from_numpy(b32).to(dt)
    checks = {
        "narrow": (bits(x), to16(a32)),
        "widen": (x.float().numpy().view(np.uint32), a.view(np.uint32)),
        "narrow strided": (bits(ember.from_numpy(a32).t().to(dt)), to16(a32.T)),
        "add": (bits(x + y), to16(a + b)),
        "mul": (bits(x * y), to16(a * b)),
        "div": (bits(x / y), to16(a / b)),
        "sub transposed": (bits(x.t() - y.t()), to16(a.T - b.T)),
        "add 0-d": (bits(x + ember.tensor(1.5, dtype=dt)), to16(a + np.float32(1.5))),
        "rsub 0-d": (bits(ember.tensor(1.5, dtype=dt) - x), to16(np.float32(1.5) - a)),
        "mul number": (bits(x * 0.3), to16(a * np.float32(0.3))),
        "neg": (bits(-x), to16(-a)),
        "abs in place": (bits(x.clone().abs_()), to16(np.abs(a))),
        "sqrt": (bits(ember.sqrt(y.abs())), to16(np.sqrt(np.abs(b)))),
    }
    for key, (got, want) in checks.items():
        if not np.array_equal(got, want):
            bad.append(f"{name} {key}: {int((got != want).sum())} of {got.size} differ")
    # transcendental functions: ember's float32 formulas, within one 16-bit ulp of the exact
    # value rounded (the distance of the bit patterns: all results here are non-negative)
    finite = np.isfinite(a)
    for fn, ref in (("exp", np.exp), ("sigmoid", lambda v: 1 / (1 + np.exp(-v)))):
        got = bits(getattr(ember, fn)(x))[finite].astype(np.int64)
        with np.errstate(over="ignore"):
            want = to16(ref(a[finite].astype(np.float64)).astype(np.float32)).astype(np.int64)
        if np.abs(got - want).max() > 1:
            bad.append(f"{name} {fn}: {int((np.abs(got - want) > 1).sum())} beyond one ulp")
    s = float(x[:, 6:].sum()); want_s = float(a[:, 6:].astype(np.float64).sum())
    if abs(s - want_s) > 1e-2 * max(1.0, abs(want_s)):
        bad.append(f"{name} sum {s} vs {want_s}")
    # a contiguous tensor's sum over every element: the one-pass kernel (widened in registers
    # where the copy has F16C, through a float buffer otherwise), NaNs skipped by nansum
    flat = ember.from_numpy(np.ascontiguousarray(a[:, 6:]).ravel()).to(dt)
    nans = flat.clone()
    nans[::5] = float("nan")
    got = {"sum": float(flat.sum(dtype=ember.float32)), "mean": float(flat.mean(dtype=ember.float32)),
           "nansum": float(nans.nansum(dtype=ember.float32))}
    ref = a[:, 6:].ravel().astype(np.float64)
    kept = ref.copy()
    kept[::5] = 0.0
    for key, want in (("sum", ref.sum()), ("mean", ref.mean()), ("nansum", kept.sum())):
        if abs(got[key] - want) > 1e-5 * np.abs(ref).sum():
            bad.append(f"{name} contiguous {key} {got[key]} vs {want}")
print(json.dumps(bad))
"""


@pytest.mark.parametrize("capability", AVAILABLE)
def test_16bit_float_kernels_match_numpy_at_every_level(capability):
    r = run_at(capability.lower(), REDUCED_FLOAT_RESULTS)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == []
