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
        np.testing.assert_allclose(np.array(wide[key]), np.array(ref), rtol=RTOL[dt], atol=0,
                                   err_msg=f"{capability} vs DEFAULT: {key}")
