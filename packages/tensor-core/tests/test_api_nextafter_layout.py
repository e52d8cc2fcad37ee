"""torch names of this round: nextafter (against NumPy, every float dtype), layout,
get_default_device, AcceleratorError, Tensor.as_subclass."""

import numpy as np
import pytest

import ember

EDGES = ([0.0, 1.0, -1.0, float("nan"), 2.0, float("inf"), -0.0, 3.4028234663852886e38, 1e-45,
          -5.0],
         [1.0, 0.0, -2.0, 1.0, 2.0, 0.0, -1.0, float("inf"), 0.0, float("nan")])


@pytest.mark.parametrize("dtype, npd", [(ember.float16, np.float16), (ember.float32, np.float32),
                                        (ember.float64, np.float64)])
def test_nextafter_matches_numpy_bit_for_bit(dtype, npd):
    with np.errstate(over="ignore"):  # float32's largest value is inf in float16
        a, b = (np.array(v, dtype=npd) for v in EDGES)
    rng = np.random.default_rng(0)
    a = np.concatenate([a, rng.standard_normal(50).astype(npd)])
    b = np.concatenate([b, rng.standard_normal(50).astype(npd)])
    with np.errstate(over="ignore"):
        expected = np.nextafter(a, b)
    got = ember.nextafter(ember.tensor(a), ember.tensor(b)).numpy()
    assert got.dtype == npd
    np.testing.assert_array_equal(got.view(f"u{np.dtype(npd).itemsize}"),
                                  expected.view(f"u{np.dtype(npd).itemsize}"))


def test_nextafter_bfloat16_steps_by_its_own_ulp():
    one = ember.tensor([1.0, 1.0, 0.0], dtype=ember.bfloat16)
    got = ember.nextafter(one, ember.tensor([2.0, 0.0, -1.0], dtype=ember.bfloat16)).float()
    assert got.tolist() == [1.0 + 2.0 ** -7, 1.0 - 2.0 ** -8, -(2.0 ** -133)]


def test_nextafter_forms_broadcasting_and_errors():
    x = ember.tensor([[1.0], [2.0]])
    y = ember.tensor([0.0, 3.0])
    expected = np.nextafter(*np.broadcast_arrays(x.numpy(), y.numpy()))
    np.testing.assert_array_equal(ember.nextafter(x, y).numpy(), expected)
    np.testing.assert_array_equal(x.nextafter(y).numpy(), expected)
    out = ember.empty(2, 2)
    assert ember.nextafter(x, y, out=out) is out
    np.testing.assert_array_equal(out.numpy(), expected)
    z = ember.tensor([1.0, 2.0])
    assert z.nextafter_(y) is z
    np.testing.assert_array_equal(z.numpy(), np.nextafter(np.float32([1, 2]), np.float32([0, 3])))
    # the common dtype: float32 with an integer tensor
    assert ember.nextafter(ember.tensor([1.0]), ember.tensor([2])).dtype == ember.float32
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        ember.nextafter(ember.tensor([1]), ember.tensor([2]))


def test_layout_default_device_and_accelerator_error():
    assert isinstance(ember.strided, ember.layout) and repr(ember.strided) == "ember.strided"
    assert ember.ones(2).layout is ember.strided
    assert ember.get_default_device() == ember.device("cpu")
    assert issubclass(ember.AcceleratorError, RuntimeError)
    assert ember.AcceleratorError is ember._C.AcceleratorError


def test_as_subclass_shares_the_data():
    class Marked(ember.Tensor):
        pass

    base = ember.zeros(3)
    m = base.as_subclass(Marked)
    assert type(m) is Marked and m.shape == base.shape
    m.add_(2)
    assert base.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(TypeError, match="must be a subclass of Tensor"):
        base.as_subclass(int)


def test_plain_functions_refuse_non_tensors_as_torch():
    # found by the fuzzer: they raised AttributeError
    with pytest.raises(TypeError, match=r"is_signed\(\): argument 'input' \(position 1\) must be "
                                        "Tensor, not float"):
        ember.is_signed(0.5)
    with pytest.raises(TypeError, match="is_floating_point.*must be Tensor, not int"):
        ember.is_floating_point(3)
    with pytest.warns(UserWarning, match="deprecated"):
        with pytest.raises(TypeError, match="expected Tensor as element 0 in argument 0, but got "
                                            "list"):
            ember.chain_matmul([2, 3])
    with pytest.warns(UserWarning, match="deprecated"):
        with pytest.raises(RuntimeError, match="Expected one or more matrices"):
            ember.chain_matmul()
