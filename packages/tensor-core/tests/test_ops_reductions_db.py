"""Generic tests of the reductions, driven by the op database (ember.testing.reduction_db).

Every entry runs for every dtype against its NumPy reference on 0-d to 3-d, zero-size and
non-contiguous samples, every dim form (none, one, negative, a tuple, all) and keepdim both ways,
as a function, a method and with ``out=``; the dtypes it does not take are refused.
"""

from __future__ import annotations

import pathlib

import pytest

import ember
from ember.testing.opdb import ALL_DTYPES, assert_close, edtype
from ember.testing.reduction_db import ELSEWHERE, REDUCTIONS, ReductionInfo, Sample

OPS = list(REDUCTIONS.values())
PARAMS = [pytest.param(op, dt, id=f"{op.name}-{dt}") for op in OPS for dt in op.dtypes]


def _call(op: ReductionInfo, x, sample: Sample, **extra):
    return getattr(ember, op.name)(x, **sample.kwargs(op), **extra)


def _check_sample(op: ReductionInfo, dtype: str, sample: Sample, form: str) -> None:
    arr, x = op.make_input(sample, dtype)
    if op.is_empty_reduction(sample) and op.empty == "raise":
        with pytest.raises((IndexError, RuntimeError)):
            _call(op, x, sample)
        return
    expected, rdt = op.reference(arr, sample, dtype)
    rtol, atol = op.tolerance(rdt)
    if form == "function":
        r = _call(op, x, sample)
    elif form == "method":
        r = getattr(x, op.name)(**sample.kwargs(op))
    else:  # out=
        out = ember.empty(tuple(expected.shape), dtype=edtype(rdt))
        r = _call(op, x, sample, out=out)
        assert r is out
    assert_close(r, expected, rdt, rtol, atol, msg=f"{op.name}({dtype}) {form} {sample}")


# torch's (and ember's) warning for a variance over one element or none
DOF_WARNING = "ignore:.*degrees of freedom is <= 0:UserWarning"


@pytest.mark.filterwarnings(DOF_WARNING)
@pytest.mark.parametrize("op,dtype", PARAMS)
def test_values_against_numpy(op, dtype):
    for sample in op.samples(dtype):
        _check_sample(op, dtype, sample, "function")


@pytest.mark.filterwarnings(DOF_WARNING)
@pytest.mark.parametrize("op,dtype", PARAMS)
def test_method_and_out(op, dtype):
    for sample in list(op.samples(dtype))[::3]:
        if op.method:
            _check_sample(op, dtype, sample, "method")
        if op.out and sample.dim is not None:
            _check_sample(op, dtype, sample, "out")


@pytest.mark.parametrize("op", [op for op in OPS if set(op.dtypes) != set(ALL_DTYPES)],
                         ids=lambda op: op.name)
def test_refused_dtypes(op):
    for dtype in sorted(set(ALL_DTYPES) - set(op.dtypes)):
        x = ember.ones(2, 3, dtype=edtype(dtype))
        with pytest.raises(RuntimeError):  # NotImplementedError is one, as in torch
            getattr(ember, op.name)(x, dim=0) if op.dim_required else getattr(ember, op.name)(x)


@pytest.mark.parametrize("op", [op for op in OPS if op.dims == "int"], ids=lambda op: op.name)
def test_one_dim_only(op):
    with pytest.raises(TypeError):
        getattr(ember, op.name)(ember.ones(2, 3), dim=(0, 1))


def test_every_reduction_has_an_entry():
    """A registry op of the reduction family is in the database or named in ELSEWHERE with the
    test module that checks it (which must exist and call it)."""
    names = {row["name"] for row in ember._C._ops() if row["family"] == "reduction"}
    missing = sorted(names - set(REDUCTIONS) - set(ELSEWHERE))
    assert not missing, f"reductions without an entry in ember.testing.reduction_db: {missing}"
    here = pathlib.Path(__file__).parent
    for name, module in ELSEWHERE.items():
        assert name in names, f"ELSEWHERE names {name}, which is not a registered reduction"
        text = (here / module).read_text()
        assert f"{name.rstrip('_')}(" in text, f"{module} does not call {name}"
    stale = sorted(set(REDUCTIONS) - names)
    assert not stale, f"entries for ops the registry does not declare: {stale}"
