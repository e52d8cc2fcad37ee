"""torch's other overloads of add/sub/addcmul/addcdiv that old programs still call (alpha and
value by position: ``p.add_(-lr, grad)``, ``exp_avg_sq.addcmul_(1 - beta2, grad, grad)``), and
the argument checks torch's parser makes before an op computes anything: Tensor methods take no
out=, a tuple-returning op's out= is a tuple of Tensors."""

import warnings

import numpy as np
import pytest

import ember

X = np.array([1.0, -2.0, 3.5])
Y = np.array([0.5, 4.0, -1.0])
Z = np.array([2.0, 8.0, 0.25])


def _t(a):
    return ember.tensor(a)


def _deprecated(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    assert any("deprecated" in str(w.message) for w in caught), "no deprecation warning"
    return result


@pytest.mark.parametrize("call, expected", [
    (lambda x, y: ember.add(x, 3, y), X + 3 * Y),
    (lambda x, y: ember.sub(x, 3, y), X - 3 * Y),
    (lambda x, y: x.add(-0.5, y), X - 0.5 * Y),
    (lambda x, y: x.sub(2, y), X - 2 * Y),
    (lambda x, y: x.add(ember.tensor(2.0), y), X + 2 * Y),  # a 0-d tensor as the number
    (lambda x, y: ember.add(x, 3, y, out=ember.empty(3)), X + 3 * Y),
])
def test_deprecated_alpha_before_other(call, expected):
    np.testing.assert_allclose(_deprecated(lambda: call(_t(X), _t(Y))).numpy(), expected)


@pytest.mark.parametrize("name, sign", [("add_", 1), ("sub_", -1)])
def test_deprecated_alpha_in_place(name, sign):
    x = _t(X)
    r = _deprecated(lambda: getattr(x, name)(-0.1, _t(Y)))
    assert r is x
    np.testing.assert_allclose(x.numpy(), X + sign * -0.1 * Y)


@pytest.mark.parametrize("name", ["add", "sub", "subtract", "rsub"])
def test_alpha_by_position_after_a_number(name):
    # add/sub read any third positional argument as torch does: the deprecated form, alpha
    # first (its checks apply to the 2); subtract and rsub have a Scalar overload, no warning
    x = _t(X)
    if name in ("add", "sub"):
        r = _deprecated(lambda: getattr(ember, name)(x, 2, 3))
        with warnings.catch_warnings(), pytest.raises(RuntimeError, match="Boolean alpha"):
            warnings.simplefilter("ignore")
            getattr(ember, name)(x, True, 3)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r = getattr(ember, name)(x, 2, 3)
    expected = {"add": X + 6, "sub": X - 6, "subtract": X - 6, "rsub": 2 - 3 * X}[name]  # other - alpha * input
    np.testing.assert_allclose(r.numpy(), expected)


@pytest.mark.parametrize("call", [
    lambda x, y: ember.add(x, y, 3),          # alpha after a Tensor other: keyword only
    lambda x, y: x.add(y, 2),
    lambda x, y: ember.subtract(x, 2, y),     # the aliases have no deprecated overload
    lambda x, y: x.subtract_(2, y),
    lambda x, y: ember.rsub(x, 2, y),
])
def test_refused_orders(call):
    with pytest.raises(TypeError):
        call(_t(X), _t(Y))


@pytest.mark.parametrize("name, combine", [("addcmul", np.multiply), ("addcdiv", np.divide)])
def test_deprecated_value_first(name, combine):
    x, y, z = _t(X), _t(Y), _t(Z)
    np.testing.assert_allclose(_deprecated(lambda: getattr(ember, name)(x, 0.5, y, z)).numpy(),
                               X + 0.5 * combine(Y, Z))
    np.testing.assert_allclose(_deprecated(lambda: getattr(x, name)(2, y, z)).numpy(),
                               X + 2 * combine(Y, Z))
    out = ember.empty(3)
    r = _deprecated(lambda: getattr(ember, name)(x, -1, y, z, out=out))
    assert r is out
    np.testing.assert_allclose(out.numpy(), X - combine(Y, Z))
    r = _deprecated(lambda: getattr(x, name + "_")(0.25, y, z))
    assert r is x
    np.testing.assert_allclose(x.numpy(), X + 0.25 * combine(Y, Z))


def test_old_adam_step_matches_the_keyword_form():
    # the update of a pre-1.5 Adam, written both ways
    rng = np.random.default_rng(0)
    grad, p0 = rng.standard_normal(5), rng.standard_normal(5)
    lr, b1, b2, eps = 1e-2, 0.9, 0.999, 1e-8

    def step(legacy):
        p, m, v, g = _t(p0), ember.zeros(5, dtype=ember.float64), ember.zeros(
            5, dtype=ember.float64), _t(grad)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if legacy:
                m.mul_(b1).add_(1 - b1, g)
                v.mul_(b2).addcmul_(1 - b2, g, g)
                p.addcdiv_(-lr, m, v.sqrt().add_(eps))
            else:
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                p.addcdiv_(m, v.sqrt().add_(eps), value=-lr)
        return p.numpy()

    m = (1 - b1) * grad
    v = (1 - b2) * grad * grad
    np.testing.assert_allclose(step(True), p0 - lr * m / (np.sqrt(v) + eps))
    np.testing.assert_array_equal(step(True), step(False))


def test_deprecated_overload_records_gradients():
    x = ember.tensor(X, requires_grad=True)
    y = ember.tensor(Y, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ember.add(x, 3, y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones(3))
    np.testing.assert_allclose(y.grad.numpy(), np.full(3, 3.0))


@pytest.mark.parametrize("call", [
    lambda a: a.diff(out=ember.empty(2)),
    lambda a: a.msort(out=ember.empty(3)),
    lambda a: a.reshape(3, 1).cross(a.reshape(3, 1), out=ember.empty(3, 1)),
    lambda a: a.diag(out=ember.empty(3, 3)),
    lambda a: ember.eye(3).det(out=ember.empty(())),
    lambda a: ember.eye(3).inverse(out=ember.empty(3, 3)),
    lambda a: ember.eye(3).cholesky(out=ember.empty(3, 3)),
    lambda a: ember.eye(3).matrix_power(2, out=ember.empty(3, 3)),
])
def test_methods_take_no_out(call):
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        call(_t(X))


def test_the_functions_still_take_out():
    out = ember.empty(2, dtype=ember.float64)
    assert ember.diff(_t(X), out=out) is out
    np.testing.assert_allclose(out.numpy(), np.diff(X))


@pytest.mark.parametrize("fn, n", [(ember.qr, 2), (ember.linalg.qr, 2), (ember.linalg.slogdet, 2),
                                   (ember.svd, 3), (ember.linalg.eigh, 2), (ember.geqrf, 2),
                                   (ember.linalg.lu_factor, 2), (ember.linalg.lu, 3)])
def test_tuple_out_is_checked_before_the_input(fn, n):
    vector = ember.ones(3)  # not a matrix: the out= error still comes first, as torch's
    with pytest.raises(TypeError, match="must be tuple of Tensors, not Tensor"):
        fn(vector, out=ember.empty(3))
    with pytest.raises(TypeError, match="expected tuple of"):
        fn(vector, out=(ember.empty(3),))
    with pytest.raises(TypeError, match="expected Tensor as element 0"):
        fn(vector, out=[1] * n)


def test_int_parameters_refuse_floats():
    a = ember.ones(2, 3)
    with pytest.raises(TypeError, match="argument 'dim'"):
        ember.cross(a, a, -2.5)
    with pytest.raises(TypeError, match="argument 'dim'"):
        ember.linalg.cross(a, a, dim=1.0)
    np.testing.assert_array_equal(ember.cross(a, a, None).numpy(), np.zeros((2, 3)))


def test_block_diag_checks_every_element_type_first():
    with pytest.raises(TypeError, match="element 1"):
        ember.block_diag(ember.ones(2, 2, 2), 2.5)
