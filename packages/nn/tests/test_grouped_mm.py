"""nn.functional.grouped_mm: the four operand forms against NumPy products per group (and torch's
values where installed), gradients by gradcheck, torch's errors, and ember's refusal of
offsets outside the jagged dim."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck


def _offs(*ends):
    return ember.tensor(list(ends), dtype=ember.int32)


def test_rows_cut_by_offsets_2d_3d():
    a, b = ember.randn(9, 16), ember.randn(3, 16, 8)
    got = F.grouped_mm(a, b, offs=_offs(2, 2, 7)).numpy()
    an, bn = a.numpy(), b.numpy()
    expected = np.concatenate([an[:2] @ bn[0], an[2:2] @ bn[1], an[2:7] @ bn[2],
                               np.zeros((2, 8), np.float32)])  # rows past offs[-1]: zero
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_batched_3d_3d_contraction_cut_2d_2d_and_columns_cut_3d_2d():
    a, b = ember.randn(2, 8, 16), ember.randn(2, 16, 8)
    np.testing.assert_allclose(F.grouped_mm(a, b).numpy(), a.numpy() @ b.numpy(), rtol=1e-5,
                               atol=1e-5)
    a2, b2 = ember.randn(8, 16), ember.randn(16, 8)
    got = F.grouped_mm(a2, b2, offs=_offs(4, 16)).numpy()
    np.testing.assert_allclose(got[0], a2.numpy()[:, :4] @ b2.numpy()[:4], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], a2.numpy()[:, 4:] @ b2.numpy()[4:], rtol=1e-5, atol=1e-5)
    a3, b3 = ember.randn(2, 8, 16), ember.randn(16, 40)
    got = F.grouped_mm(a3, b3, offs=_offs(16, 32)).numpy()
    np.testing.assert_allclose(got[:, :16], a3.numpy()[0] @ b3.numpy()[:, :16], rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(got[:, 16:32], a3.numpy()[1] @ b3.numpy()[:, 16:32], rtol=1e-5,
                               atol=1e-5)
    assert not got[:, 32:].any()


def test_matches_torch_where_installed():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as TF
    a, b = ember.randn(8, 16, dtype=ember.bfloat16), ember.randn(2, 16, 8, dtype=ember.bfloat16)
    ta, tb = (torch.tensor(t.float().numpy()).bfloat16() for t in (a, b))
    offs = [3, 8]
    got = F.grouped_mm(a, b, offs=_offs(*offs))
    want = TF.grouped_mm(ta, tb, offs=torch.tensor(offs, dtype=torch.int32))
    assert got.dtype == ember.bfloat16
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=2e-2, atol=2e-2)


def test_gradients():
    a = ember.randn(7, 4, dtype=ember.float64, requires_grad=True)
    b = ember.randn(2, 4, 3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda a, b: F.grouped_mm(a.float(), b.float(), offs=_offs(3, 6)).double(),
                     (a, b), eps=1e-3, atol=1e-2, rtol=1e-2)
    x = ember.randn(5, 4, requires_grad=True)
    w = ember.randn(2, 4, 3, requires_grad=True)
    F.grouped_mm(x, w, offs=_offs(2, 5)).sum().backward()
    ones = np.ones((5, 3), np.float32)
    np.testing.assert_allclose(x.grad.numpy()[:2], ones[:2] @ w.detach().numpy()[0].T, rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy()[1], x.detach().numpy()[2:].T @ ones[2:], rtol=1e-5)


@pytest.mark.parametrize("call, message", [
    (lambda a, b: F.grouped_mm(a, b), "Have to provide offsets"),
    (lambda a, b: F.grouped_mm(a, b, offs=ember.tensor([3, 8])), "Offsets have to be int32"),
    (lambda a, b: F.grouped_mm(a.double(), b.double(), offs=_offs(3, 8)),
     "Expected mat_a to be Float32, BFloat16 or Float16 matrix, got Double"),
    (lambda a, b: F.grouped_mm(a, b.to(ember.bfloat16), offs=_offs(3, 8)),
     "expected m1 and m2 to have the same dtype, but got: float != c10::BFloat16"),
    (lambda a, b: F.grouped_mm(a, b, offs=_offs(3, 8), out_dtype=ember.float64),
     "output dtype must match"),
    (lambda a, b: F.grouped_mm(a, b, offs=_offs(3, 8), bias=ember.ones(8)), "Bias not supported"),
    (lambda a, b: F.grouped_mm(a, ember.randn(3, 16, 8), offs=_offs(3, 8)),
     "matrix batch sizes have to match"),
    (lambda a, b: F.grouped_mm(a, ember.randn(2, 8, 8), offs=_offs(3, 8)),
     "contraction dimension"),
    (lambda a, b: F.grouped_mm(a, b, offs=ember.tensor([[3, 8]], dtype=ember.int32)),
     "offs has to be 1D"),
    (lambda a, b: F.grouped_mm(a, b, offs=_offs(9, 3)), "offs\\[0\\] = 9 must be in"),
    (lambda a, b: F.grouped_mm(a, b, offs=_offs(5, 3)), "offs\\[1\\] = 3 must be >="),
    (lambda a, b: F.grouped_mm(ember.randn(8), b, offs=_offs(3, 8)), "mat_a has to be 2 or 3d"),
])
def test_errors(call, message):
    with pytest.raises(RuntimeError, match=message):
        call(ember.randn(8, 16), ember.randn(2, 16, 8))
