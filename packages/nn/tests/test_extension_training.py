"""examples/extension_op.py: a module whose forward calls a compiled custom op (C++ forward and
backward, registered with ember.library) trains step for step as the same module written with
ember's own ops. The op is compiled at test time; skipped without a C++ compiler."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

import ember

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "extension_op.py"
pytestmark = pytest.mark.skipif(not EXAMPLE.is_file(),
                                reason="runs from a checkout of the repository only")


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    from ember.utils import cpp_extension

    reason = cpp_extension._build_unavailable_reason()
    if reason:
        pytest.skip(reason)
    spec = importlib.util.spec_from_file_location("_example_extension_op", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    old = os.environ.get("EMBER_EXTENSIONS_DIR")
    os.environ["EMBER_EXTENSIONS_DIR"] = str(tmp_path_factory.mktemp("ember_extensions"))
    try:
        module.silu_mul = module.load()
    finally:
        if old is None:
            del os.environ["EMBER_EXTENSIONS_DIR"]
        else:
            os.environ["EMBER_EXTENSIONS_DIR"] = old
    return module


def test_fused_op_and_gradient_match_the_composed_ops(example):
    a = ember.randn(4, 9, dtype=ember.float64, requires_grad=True)
    b = ember.randn(4, 9, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(example.silu_mul, (a, b))
    out = example.silu_mul(a, b)
    ref = example.composed(a, b)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    g = ember.randn(4, 9, dtype=ember.float64)
    fused = ember.autograd.grad(out, (a, b), g)
    composed = ember.autograd.grad(ref, (a, b), g)
    for x, y in zip(fused, composed):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-10, atol=1e-12)


def test_a_module_with_the_fused_op_trains_as_the_composed_one(example):
    ember.manual_seed(0)
    fused = example.GatedMLP(16, 32, example.silu_mul)
    composed = example.GatedMLP(16, 32, example.composed)
    composed.load_state_dict(fused.state_dict())
    fused_losses = example.train(fused, 8)
    composed_losses = example.train(composed, 8)
    assert fused_losses[-1] < fused_losses[0]
    np.testing.assert_allclose(fused_losses, composed_losses, rtol=1e-4)
    for p, q in zip(fused.parameters(), composed.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-3, atol=1e-5)


def test_a_shape_error_inside_the_op_names_the_shapes(example):
    with pytest.raises(RuntimeError, match=r"silu_mul: expected tensors of one shape and dtype, "
                                           r"got \[2, 3\] Float and \[3\] Float"):
        example.silu_mul(ember.ones(2, 3), ember.ones(3))
