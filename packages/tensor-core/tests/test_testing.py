"""ember.testing.assert_close and make_tensor: torch's tolerances, checks and messages (checked
against torch where installed, and against the formula |a - e| <= atol + rtol * |e| without)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.testing import assert_close, make_tensor

T = ember.tensor

# (actual, expected, kwargs) built from a module (ember or torch)
FAILING = [
    ("close", lambda m: (m.tensor([1.0, 2.0, 3.0, 4.0]), m.tensor([1.0, 2.5, 3.0, 4.0]), {})),
    ("equal ints", lambda m: (m.tensor([1, 2, 3]), m.tensor([2, 2, 3]), {})),
    ("2-d index", lambda m: (m.tensor([[1.0, 2.0], [3, 4]]), m.tensor([[1.0, 2.0], [3, 5]]), {})),
    ("bool", lambda m: (m.tensor([True, False]), m.tensor([True, True]), {})),
    ("nan", lambda m: (m.tensor([1.0, math.nan]), m.tensor([1.0, math.nan]), {})),
    ("scalar tensors", lambda m: (m.tensor(1.0), m.tensor(1.5), {})),
    ("python floats", lambda m: (1.0, 1.5, {})),
    ("python ints", lambda m: (1, 2, {})),
    ("sequence item", lambda m: ([m.tensor(1.0)], [m.tensor(2.0)], {})),
    ("mapping item", lambda m: ({"a": m.tensor(1.0)}, {"a": m.tensor(2.0)}, {})),
    ("sequence length", lambda m: ([1, 2], [1, 2, 3], {})),
    ("given tolerances", lambda m: (m.tensor([1.0, 2.0]), m.tensor([1.0, 2.1]),
                                     {"rtol": 0.01, "atol": 0.0})),
    ("float64", lambda m: (m.tensor([1.0], dtype=m.float64), m.tensor([1.0 + 1e-6],
                                                                       dtype=m.float64), {})),
    ("bfloat16", lambda m: (m.tensor([1.0]).bfloat16(), m.tensor([1.1]).bfloat16(), {})),
]


def _torch_text(text):
    return text.replace("torch.", "ember.")


@pytest.mark.parametrize("name,make", FAILING, ids=[f[0] for f in FAILING])
def test_messages_match_torch(name, make):
    torch = pytest.importorskip("torch")
    a, e, kw = make(ember)
    with pytest.raises(AssertionError) as ours:
        assert_close(a, e, **kw)
    ta, te, tkw = make(torch)
    with pytest.raises(AssertionError) as theirs:
        torch.testing.assert_close(ta, te, **tkw)
    assert str(ours.value) == _torch_text(str(theirs.value))


def test_message_without_torch():
    with pytest.raises(AssertionError) as e:
        assert_close(T([1.0, 2.0, 3.0, 4.0]), T([1.0, 2.5, 3.0, 4.0]))
    rel = float(np.float32(0.5) / np.float32(2.5))
    assert str(e.value) == (
        "Tensor-likes are not close!\n\nMismatched elements: 1 / 4 (25.0%)\n"
        "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
        f"Greatest relative difference: {rel} at index (1,) (up to 1.3e-06 allowed)")


@pytest.mark.parametrize("dtype,rtol,atol", [(ember.float32, 1.3e-6, 1e-5),
                                             (ember.float64, 1e-7, 1e-7),
                                             (ember.float16, 1e-3, 1e-5),
                                             (ember.bfloat16, 1.6e-2, 1e-5)])
def test_default_tolerances_per_dtype(dtype, rtol, atol):
    e = T([1.0, 100.0], dtype=dtype)
    inside = T([1.0 + 0.5 * (atol + rtol), 100.0], dtype=dtype)
    if bool((inside == e).all()):  # too small to show in this dtype: use a large value
        inside = e
    assert_close(inside, e)
    outside = e.double() * (1 + 4 * rtol) + 4 * atol
    outside = outside.to(dtype)
    if dtype in (ember.float32, ember.float64):
        with pytest.raises(AssertionError, match=f"up to {atol} allowed"):
            assert_close(outside, e)


def test_attribute_checks():
    a = T([1.0, 2.0])
    with pytest.raises(AssertionError, match="attribute 'dtype' do not match: ember.float32 != "
                                             "ember.float64"):
        assert_close(a, a.double())
    assert_close(a, a.double(), check_dtype=False)
    assert_close(T([1.0, 2.0]), T([1, 2]), check_dtype=False)
    with pytest.raises(AssertionError, match="attribute 'shape' do not match"):
        assert_close(a, T([1.0, 2.0, 3.0]))
    x = ember.ones(2, 3)
    y = ember.ones(3, 2).t()
    assert_close(x, y)
    with pytest.raises(AssertionError, match=r"'stride\(\)' do not match: \(3, 1\) != \(1, 2\)"):
        assert_close(x, y, check_stride=True)


def test_equal_nan_and_infinities():
    with pytest.raises(AssertionError):
        assert_close(T([math.nan]), T([math.nan]))
    assert_close(T([math.nan, 1.0]), T([math.nan, 1.0]), equal_nan=True)
    assert_close(T([math.inf, -math.inf]), T([math.inf, -math.inf]))
    with pytest.raises(AssertionError):
        assert_close(T([math.inf]), T([-math.inf]))


def test_msg_and_argument_errors():
    with pytest.raises(AssertionError, match="^custom$"):
        assert_close(T([1.0]), T([2.0]), msg="custom")
    with pytest.raises(AssertionError, match="^X: Tensor-likes are not close!"):
        assert_close(T([1.0, 3.0]), T([2.0, 3.0]), msg=lambda m: "X: " + m)
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or "
                                         "omitted, but got no atol."):
        assert_close(T([1.0]), T([1.0]), rtol=0.1)
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs"):
        assert_close(T([1.0]), [1.0])


def test_numpy_arrays():
    assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    with pytest.raises(AssertionError):
        assert_close(np.array([1.0]), np.array([2.0]))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.bfloat16, ember.int64,
                                   ember.int8, ember.uint8, ember.bool])
def test_make_tensor_ranges(dtype):
    t = make_tensor(200, dtype=dtype, device="cpu")
    assert t.dtype == dtype and tuple(t.shape) == (200,)
    if dtype == ember.bool:
        return
    v = t.double().numpy()
    lo = 0 if dtype == ember.uint8 else -9
    assert v.min() >= lo and v.max() <= 9 + (0 if dtype.is_floating_point else 1)
    t2 = make_tensor((3, 4), dtype=dtype, device="cpu", low=2, high=5, exclude_zero=True)
    assert tuple(t2.shape) == (3, 4) and t2.double().min().item() >= 2
    assert t2.double().max().item() <= 5


def test_make_tensor_options():
    t = make_tensor(3, 4, dtype=ember.float32, device="cpu", noncontiguous=True,
                    requires_grad=True)
    assert not t.is_contiguous() and t.requires_grad and tuple(t.shape) == (3, 4)
    z = make_tensor(50, dtype=ember.int64, device="cpu", low=0, high=2, exclude_zero=True)
    assert bool((z != 0).all())
    with pytest.raises(ValueError, match="`low` must be less than `high`, but got 5 >= 3"):
        make_tensor(2, dtype=ember.int64, device="cpu", low=5, high=3)
    with pytest.raises(ValueError, match="requires_grad=True` is not supported"):
        make_tensor(2, dtype=ember.int64, device="cpu", requires_grad=True)
