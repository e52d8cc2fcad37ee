"""``Tensor(data)`` and ``Tensor._make_subclass``: Python subclasses of the core Tensor."""

import numpy as np
import pytest

import ember


class MyTensor(ember.Tensor):
    pass


def test_constructor_aliases_detached():
    base = ember.arange(4.0, requires_grad=True)
    t = ember.Tensor(base)
    assert type(t) is ember.Tensor and t is not base
    assert t._shares_storage(base) and not t.requires_grad and t.grad_fn is None
    t.add_(1)  # no autograd error: the alias is detached
    np.testing.assert_array_equal(base.detach().numpy(), [1.0, 2.0, 3.0, 4.0])


def test_subclass_keeps_its_class_where_the_core_returns_self():
    base = ember.zeros(2, 3)
    m = MyTensor(base)
    assert type(m) is MyTensor and isinstance(m, ember.Tensor)
    assert type(m.mul_(2)) is MyTensor
    assert type(m.transpose(0, 1)) is ember.Tensor  # new tensors are plain
    m.requires_grad_(True)
    (m * 3).sum().backward()
    assert type(m.grad) is ember.Tensor
    np.testing.assert_array_equal(m.grad.numpy(), np.full((2, 3), 3.0))


def test_make_subclass():
    data = ember.ones(3)
    s = ember.Tensor._make_subclass(MyTensor, data, True)
    assert type(s) is MyTensor and s.requires_grad and s.is_leaf and s._shares_storage(data)
    assert not ember.Tensor._make_subclass(MyTensor, data).requires_grad
    with pytest.raises(TypeError, match="data must be a Tensor"):
        ember.Tensor._make_subclass(MyTensor, [1.0])
