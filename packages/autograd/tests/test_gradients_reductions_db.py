"""gradcheck (float64 finite differences) of every differentiable reduction of the core's op
database (``ember.testing.reduction_db``), over its samples' dim forms, keepdim both ways and
non-contiguous inputs; a differentiable reduction without a gradient formula fails here."""

from __future__ import annotations

import pytest

import ember
from ember.autograd import gradcheck
from ember.testing.reduction_db import REDUCTIONS

DIFFERENTIABLE = [op for op in REDUCTIONS.values() if op.differentiable]


@pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0:UserWarning")
@pytest.mark.parametrize("op", DIFFERENTIABLE, ids=lambda op: op.name)
def test_gradcheck_reduction(op):
    checked = 0
    for sample in op.samples("float64"):
        size = 1
        for s in sample.shape:
            size *= s
        if size == 0 or size > 24:
            continue
        if op.name in ("var", "std") and size < 2:
            continue  # one element: NaN (no degrees of freedom)
        _, x = op.make_input(sample, "float64")
        x = x.detach().requires_grad_(True)
        kwargs = sample.kwargs(op)
        fn = getattr(ember, op.name)
        assert gradcheck(lambda t, fn=fn, kw=kwargs: fn(t, **kw), (x,)), f"{op.name} {sample}"
        checked += 1
    assert checked >= 5, f"{op.name}: only {checked} samples checked"
