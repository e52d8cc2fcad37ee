"""Arguments torch's parser takes that ember used to refuse, and the reverse, each with the value
a NumPy computation or a hand count gives (found by the fuzzer's comparison with torch)."""

import math
import warnings

import numpy as np
import pytest

import ember

A = np.arange(6.0).reshape(2, 3)


def _a():
    return ember.tensor(A)


# ---- int lists: a one-element integer (or bool) tensor of any shape is an int ----

@pytest.mark.parametrize("call, expected", [
    (lambda x: x.sum(ember.tensor([1])), A.sum(1)),
    (lambda x: x.sum(ember.tensor([[0]])), A.sum(0)),
    (lambda x: x.mean(ember.tensor(1)), A.mean(1)),
    (lambda x: ember.sum(x, ember.tensor([False])), A.sum(0)),  # a bool one: dim 0
    (lambda x: x.std(ember.tensor([1], dtype=ember.uint8)), A.std(1, ddof=1)),
    (lambda x: x.amax(ember.tensor([0])), A.max(0)),
    (lambda x: x.flip(ember.tensor([0])), A[::-1]),
    (lambda x: x.permute(ember.tensor([1]), 0), A.T),
    (lambda x: x.reshape(ember.tensor(6)), A.reshape(6)),
    (lambda x: x.view(ember.tensor([3]), 2), A.reshape(3, 2)),
    (lambda x: ember.zeros(ember.tensor([2])), np.zeros(2)),
    (lambda x: x.new_ones(ember.tensor(2)), np.ones(2)),
])
def test_one_element_tensors_in_int_lists(call, expected):
    np.testing.assert_allclose(call(_a()).numpy(), expected)


@pytest.mark.parametrize("call", [
    lambda x: x.mean(ember.tensor([0, 1])),        # more than one element
    lambda x: x.mean(ember.tensor([1.0])),         # not an integer
    lambda x: x.new_ones(ember.tensor([2, 3])),
    lambda x: x.expand(ember.tensor([2, 2, 3])),
    lambda x: x.all(ember.tensor([0])),            # all/any: a one dim or a list, no tensor
    lambda x: x.narrow(ember.tensor([1]), 0, 1),   # a plain int parameter takes 0-d ones only
    lambda x: x.transpose(ember.tensor([0]), 1),
])
def test_what_stays_refused(call):
    with pytest.raises(TypeError):
        call(_a())


def test_legacy_constructor_takes_sizes_as_tensors():
    assert ember.Tensor(ember.tensor(2), ember.tensor([3])).shape == (2, 3)


# ---- overload order ----

def test_max_and_min_of_a_zero_dim_integer_tensor_are_elementwise():
    # a tensor is `other` before it is a dim
    x = ember.tensor([3, 1, 5])
    assert x.max(ember.tensor(2)).tolist() == [3, 2, 5]
    assert ember.min(ember.tensor(4), ember.tensor(1)).item() == 1
    values, indices = x.max(0)
    assert (values.item(), indices.item()) == (5, 2)


@pytest.mark.parametrize("call, expected", [
    (lambda: ember.true_divide(1, 2), 0.5),
    (lambda: ember.div(True, -1, rounding_mode="trunc"), -1),
    (lambda: ember.div(7, -2, rounding_mode="trunc"), -3),
    (lambda: ember.div(7, -2, rounding_mode="floor"), -4),
])
def test_two_numbers(call, expected):
    assert call().item() == expected


def test_mean_takes_out_without_dim_sum_does_not():
    out = ember.empty(())
    assert ember.mean(ember.tensor([1.0, 2.0, 6.0]), out=out) is out
    assert out.item() == 3.0
    with pytest.raises(TypeError):
        ember.sum(ember.tensor([1.0]), out=ember.empty(()))
    with pytest.raises(TypeError):
        ember.mean(ember.tensor([1.0]), keepdim=True)


# ---- addcmul / addcdiv's value in the three operands' common dtype ----

def test_pointwise_value_is_checked_in_the_common_dtype():
    x = ember.tensor([1, 2], dtype=ember.uint8)
    t1 = ember.tensor([1.0, 2.0], dtype=ember.float64)
    r = ember.addcmul(x, t1, t1, value=-1e300)  # float64 result: -1e300 fits
    np.testing.assert_allclose(r.numpy(), np.array([1.0, 2.0]) - 1e300 * np.array([1.0, 4.0]))
    with pytest.raises(RuntimeError, match="cannot be converted"):  # uint8 result: it does not
        ember.addcmul(x, x, x, value=-1e300)


def test_pointwise_float_value_of_an_integer_computation_is_truncated():
    x = ember.tensor([10, 20], dtype=ember.int64)
    r = ember.addcmul(x, ember.tensor([3, 4]), ember.tensor([1, 1]), value=2.7)
    assert r.dtype == ember.int64 and r.tolist() == [16, 28]  # value 2


def test_pointwise_common_dtype_counts_zero_dim_tensors_by_category():
    # a 0-d float32 input among 1-d uint16 and float16 factors: float16, as torch's
    x = ember.tensor(1.0)
    r = ember.addcdiv(x, ember.tensor([2, 4], dtype=ember.uint16),
                      ember.tensor([1.0, 2.0], dtype=ember.float16))
    assert r.dtype == ember.float16 and r.tolist() == [3.0, 3.0]


# ---- single ops ----

def test_norm_takes_a_zero_dim_tensor_as_p():
    x = ember.tensor([3.0, -4.0])
    assert x.norm(ember.tensor(1)).item() == 7.0
    assert ember.norm(x, ember.tensor(2.0)).item() == 5.0
    with pytest.raises(TypeError):
        x.norm(ember.tensor([1.0]))


@pytest.mark.parametrize("sizes", [0, None, (), []])
def test_unflatten_method_refuses_empty_sizes(sizes):
    with pytest.raises(RuntimeError, match="sizes must be non-empty"):
        ember.arange(4).unflatten(0, sizes)


def test_unflatten_function_refuses_an_int():
    assert ember.arange(4).unflatten(0, (2, 2)).shape == (2, 2)
    with pytest.raises(TypeError):
        ember.unflatten(ember.arange(4), 0, 0)


def test_broadcast_to_sizes():
    y = ember.ones(3)
    assert y.broadcast_to(3).shape == (3,)
    assert y.broadcast_to(2, 3).shape == (2, 3)  # the method's var-args
    assert y.broadcast_to(ember.tensor([3])).shape == (3,)
    assert ember.broadcast_to(y, (2, 3)).shape == (2, 3)
    for call in (lambda: ember.broadcast_to(y, 3), lambda: y.broadcast_to(3.0),
                 lambda: y.broadcast_to(ember.tensor([2, 3]))):
        with pytest.raises(TypeError):
            call()


def test_untyped_storage_from_byte_values():
    assert ember.UntypedStorage([2, 3]).tolist() == [2, 3]
    assert ember.UntypedStorage([256, -1]).tolist() == [0, 255]  # wrapped to a byte
    assert ember.UntypedStorage(4).nbytes() == 4
    for bad in ([1.5], "ab", ember.ones(2)):
        with pytest.raises(RuntimeError):
            ember.UntypedStorage(bad)


def test_svd_lowrank_with_q_beyond_the_rank():
    # torch does not check q here: the factors have min(m, n) columns
    a = ember.tensor(np.outer(np.arange(1.0, 5.0), [2.0]))  # 4 x 1
    U, S, V = ember.svd_lowrank(a)
    assert (U.shape, S.shape, V.shape) == ((4, 1), (1,), (1, 1))
    np.testing.assert_allclose((U * S) @ V.mT, a.numpy(), atol=1e-12)
    with pytest.raises(TypeError):
        ember.svd_lowrank(a, 2.5)
    with pytest.raises(ValueError):  # pca_lowrank checks
        ember.pca_lowrank(a, 6)


def test_deprecated_overload_warning_names_the_form():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.ones(2).add_(2, ember.ones(2))
    message = str(caught[0].message)
    assert "This overload of add_ is deprecated" in message and "Number alpha, Tensor other" in message



@pytest.mark.parametrize("name", ["linspace", "logspace"])
def test_spaced_ranges_take_zero_dim_tensor_ends(name):
    fn = getattr(ember, name)
    ref = getattr(np, name)(1.0, 3.0, 4)
    np.testing.assert_allclose(fn(ember.tensor(1.0), ember.tensor(3.0), 4).numpy(), ref,
                               rtol=1e-6)
    with pytest.raises(RuntimeError, match="only supports 0-dimensional start and end tensors"):
        fn(ember.ones(1), 3, 4)
    with pytest.raises(RuntimeError, match="end with 2 dimension"):
        fn(0, ember.ones(2, 2), 4)


def test_to_reads_its_three_forms_positionally():
    x = ember.ones(2)
    y = x.to("cpu", ember.float64, False, True)  # (device, dtype, non_blocking, copy)
    assert y.dtype == ember.float64
    same = x.to(ember.float32, False, True)  # (dtype, non_blocking, copy): copy=True copies
    assert same.dtype == ember.float32 and same.data_ptr() != x.data_ptr()
    assert x.to(ember.float32, False, False) is x
    assert x.to(ember.ones(1, dtype=ember.int8), False).dtype == ember.int8


@pytest.mark.parametrize("call", [
    lambda x: x.to(-1, keepdim=True),   # no form takes keepdim: refused before the device
    lambda x: x.to(-2, 1),
    lambda x: x.to(ember.ones(1), dtype=ember.float16),
    lambda x: x.to(ember.float64, "cpu"),
])
def test_to_refuses_calls_of_no_form(call):
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        call(ember.ones(2))


def test_set_forms():
    src = ember.arange(6.0)
    t = ember.empty(0).set_(src, 1, (2, 2))  # a tensor's storage with the geometry given
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]] and t.untyped_storage().data_ptr() == \
        src.untyped_storage().data_ptr()
    u = ember.empty(0).set_(src)  # its storage and geometry
    assert u.tolist() == src.tolist()
    with pytest.raises(TypeError, match="invalid combination"):
        ember.empty(0).set_(src, 0)  # an offset needs a size, as torch's forms
    with pytest.raises(RuntimeError, match="Could not set tensor of type"):
        ember.empty(0, dtype=ember.int64).set_(src)
    # with a geometry the source's storage is untyped bytes, read in this tensor's dtype
    ints = ember.empty(0, dtype=ember.int32).set_(src, 0, (2,))
    assert ints.tolist() == np.arange(6.0, dtype=np.float32).view(np.int32)[:2].tolist()


def test_pow_takes_a_large_exponent_where_the_kernel_computes_in_double():
    assert ember.ones(2).pow(1e300).tolist() == [1.0, 1.0]
    assert ember.tensor([2, 3], dtype=ember.int16).pow(1e300).tolist() == [float("inf")] * 2
    with pytest.raises(RuntimeError, match="cannot be converted"):
        ember.tensor([2.0], dtype=ember.float16).pow(1e300)
    with pytest.raises(RuntimeError, match="cannot be converted"):
        ember.tensor([2], dtype=ember.uint8).pow(300)


def test_round_in_place_function_forms():
    x = ember.tensor([1.26, -2.5])
    assert ember.round_(x.clone()).tolist() == [1.0, -2.0]
    np.testing.assert_allclose(ember.round_(x.clone(), decimals=1).numpy(), [1.3, -2.5])
    with pytest.raises(TypeError):
        ember.round_(x, decimals=None)


def test_randint_like_takes_a_zero_dim_tensor_high():
    x = ember.ones(200)
    r = ember.randint_like(x, ember.tensor(5))
    assert r.shape == (200,) and 0 <= r.min().item() and r.max().item() <= 4
    r = ember.randint_like(x, 2, ember.tensor(5))
    assert 2 <= r.min().item() and r.max().item() <= 4
    with pytest.raises(RuntimeError, match="high must be a scalar tensor"):
        ember.randint_like(x, ember.tensor([5]))


def test_clamp_with_number_bounds_writes_only_its_own_dtype():
    x = ember.ones(3)
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        ember.clamp(x, 0.5, out=ember.empty(3, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        ember.clamp_min(x, 0.5, out=ember.empty(3, dtype=ember.float64))
    out = ember.empty(3)
    assert ember.clamp(x.int(), 0.5, out=out) is out  # int and a float bound: float
    out = ember.empty(3, dtype=ember.float64)  # tensor bounds: out= casts, as other ops
    assert ember.clamp(x, ember.tensor(0.5, dtype=ember.float64), out=out) is out


def test_factory_out_with_requires_grad_marks_out():
    out = ember.empty(2)
    assert ember.zeros(2, out=out, requires_grad=True) is out and out.requires_grad
    with pytest.raises(RuntimeError, match="floating point and complex dtype"):
        ember.empty(2, out=ember.empty(2, dtype=ember.int32), requires_grad=True)


def test_argument_types_checked_before_values():
    with pytest.raises(TypeError):  # (torch's randn refuses the float q)
        ember.svd_lowrank(ember.ones(3, 3, dtype=ember.int32), 0.5)
    with pytest.raises(TypeError, match="argument 'prepend'"):
        ember.ones(3).diff(1, 0, 2)
    np.testing.assert_allclose(ember.diff(ember.arange(4.0), prepend=ember.zeros(1)).numpy(),
                               np.diff(np.arange(4.0), prepend=0.0))
    with pytest.raises(TypeError, match="argument 'device'"):
        ember.ones(2).cuda(ember.tensor(0))


def test_silent_acceptances_now_refused():
    x = ember.arange(3.0)
    with pytest.raises(RuntimeError, match="Invalid output_size, expected 6 but got -1"):
        x.repeat_interleave(2, output_size=-1)
    assert x.repeat_interleave(2, output_size=6).tolist() == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="self.dtype\\(\\) == output.dtype\\(\\)"):
        ember.narrow_copy(x, 0, 0, 2, out=ember.empty(2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="same dtype"):
        x.clone().put_(ember.tensor([0]), ember.tensor([1]))
    with pytest.raises(RuntimeError, match="does not support uint8"):
        ember.gradient(ember.ones(3, dtype=ember.uint8))
    with pytest.raises(RuntimeError, match="two bool tensors"):
        ember.gradient(ember.ones(3, dtype=ember.bool))
    np.testing.assert_allclose(ember.gradient(ember.tensor([1, 4, 9], dtype=ember.int8))[0]
                               .numpy(), np.gradient(np.array([1.0, 4.0, 9.0])))
    with pytest.raises(TypeError):
        x.tensor_split({})
    for bad in (True, 1.0):
        with pytest.raises(TypeError, match="argument 'dim'"):
            ember.ones(2, 3).stride(bad)
        with pytest.raises(TypeError, match="argument 'dim'"):
            ember.ones(2, 3).size(bad)
    assert ember.ones(2, 3).size(ember.tensor(1)) == 3


def test_symint_parameters_take_one_element_integer_tensors():
    # torch's SymInt parameters (tril's diagonal, kthvalue's k, randperm's n) take them; its
    # int parameters (transpose's dims, ...) take 0-d ones only
    x = ember.tensor(np.arange(9.0).reshape(3, 3))
    np.testing.assert_allclose(x.tril(ember.tensor([[1]])).numpy(), np.tril(x.numpy(), 1))
    assert x.kthvalue(ember.tensor([1]))[0].tolist() == [0.0, 3.0, 6.0]
    assert sorted(ember.randperm(ember.tensor([4])).tolist()) == [0, 1, 2, 3]
    with pytest.raises(TypeError):
        x.tril(ember.tensor(1.5))
    with pytest.raises(TypeError):
        x.transpose(ember.tensor([0]), 1)


def test_first_checks_as_torchs():
    z = ember.ones(2, dtype=ember.complex64)
    with pytest.raises(NotImplementedError, match="clamp is not supported for complex types"):
        ember.clamp_min(z, 1)
    with pytest.raises(ValueError, match="for prob"):
        ember.binomial(ember.ones(2), ember.ones(2, dtype=ember.int16))
    with pytest.raises(ValueError, match="both be None or neither"):
        ember.native_batch_norm(ember.ones(2, 3), None, None, ember.zeros(3), None, True, 0.1,
                                1e-5)


def test_resize_sizes_and_negative_sizes_into_out():
    x = ember.ones(2)
    assert x.resize_(ember.tensor(3)).shape == (3,)  # a one-element integer tensor: an int
    with pytest.raises(TypeError, match="must be tuple of ints, not Tensor"):
        x.resize_(ember.tensor([2, 3]))
    with pytest.raises(TypeError, match="takes 1 positional argument"):
        x.resize_(True, 0)
    assert x.resize_(2, 3).shape == (2, 3)
    with pytest.raises(RuntimeError):  # (not a ValueError; torch's text differs)
        ember.rand([-1], out=ember.empty(3))


def test_float_parameters_take_zero_dim_tensors_only():
    x = ember.tensor([float("nan"), float("inf"), 0.5])
    assert x.nan_to_num(ember.tensor(1.0)).tolist()[::2] == [1.0, 0.5]
    assert ember.nan_to_num(x, None).tolist()[0] == 0.0  # (torch's float?: None is 0)
    np.testing.assert_allclose(ember.logit(x, ember.tensor(0.25)).numpy()[2], 0.0, atol=1e-7)
    for call in (lambda: x.nan_to_num(ember.tensor([1.0])), lambda: x.logit(ember.tensor([0.1])),
                 lambda: x.clone().logit_(ember.tensor([0.1])),
                 lambda: ember.nan_to_num(x, posinf=ember.ones(2))):
        with pytest.raises(TypeError, match="must be float, not Tensor"):
            call()
    with pytest.raises(RuntimeError, match="cannot be converted to type double"):
        ember.nan_to_num(x, ember.tensor(1 + 1j))


# ---- a number as the first operand: torch's Scalar-self overloads ----

def test_a_number_first_operand_is_scalar_self_where_torch_has_that_overload():
    x = ember.tensor([1.0, 2.0, 4.0])
    b = np.array([1.0, 2.0, 4.0])
    # pow, float_power, xlogy and the special ones: keyword self=, and out=
    np.testing.assert_allclose(ember.pow(self=2, exponent=x).numpy(), 2.0 ** b)
    np.testing.assert_allclose(ember.float_power(self=2, exponent=x).numpy(), 2.0 ** b)
    np.testing.assert_allclose(ember.xlogy(self=3, other=x).numpy(), 3 * np.log(b), rtol=1e-6)
    out = ember.empty(3)
    assert ember.pow(2, x, out=out) is out
    np.testing.assert_allclose(out.numpy(), 2.0 ** b)
    # remainder and the bitwise ops: the overload has no out=
    np.testing.assert_allclose(ember.remainder(self=7, other=x).numpy(), np.remainder(7, b))
    assert ember.bitwise_and(6, ember.tensor([3, 5])).tolist() == [2, 4]
    assert ember.bitwise_left_shift(self=1, other=ember.tensor([0, 3])).tolist() == [1, 8]
    refused = [lambda: ember.pow(input=2, exponent=x), lambda: ember.xlogy(input=3, other=x),
               lambda: ember.float_power(input=2, exponent=x), lambda: ember.float_power(2, 3),
               lambda: ember.remainder(input=7, other=x), lambda: ember.remainder(7, x, out=None),
               lambda: ember.bitwise_or(6, ember.tensor([3]), out=None),
               lambda: ember.special.zeta(input=2.0, other=x)]
    for call in refused:
        with pytest.raises(TypeError, match="invalid combination of arguments"):
            call()
    # add/sub/mul/floor_divide read the number as their Tensor input (keyword input=)
    np.testing.assert_allclose(ember.sub(input=10, other=x).numpy(), 10 - b)
    with pytest.raises(TypeError):
        ember.mul(self=2, other=x)


# ---- Python-level ops: argument types checked in torch's order ----

def test_movedim_takes_torchs_two_forms_only():
    x = ember.tensor(A)  # 2 x 3
    for call in (lambda: ember.moveaxis(x, ember.tensor(0), 1), lambda: x.movedim(0, -1),
                 lambda: ember.movedim(x, (0, 1), [1, 0]), lambda: x.moveaxis([0], [1])):
        np.testing.assert_array_equal(call().numpy(), A.T)
    for op in ("movedim", "moveaxis"):  # a list with an int fits neither form: before the dims
        with pytest.raises(TypeError, match=rf"{op}\(\) received an invalid combination"):
            getattr(ember, op)(x, 5, [2, 3])
        with pytest.raises(TypeError, match="invalid combination"):
            getattr(ember, op)(x, [0], 1)
    for dim in (ember.tensor(True), ember.tensor([0]), 0.5):  # an int only, or a 0-d int tensor
        with pytest.raises(TypeError):
            ember.movedim(x, dim, 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.moveaxis(x, ember.tensor(0), 2)


def test_tensordot_reads_dims_then_checks_types_as_torch():
    a = ember.tensor(A)
    want = A @ A.T
    np.testing.assert_allclose(ember.tensordot(a, a.t(), 1).numpy(), want)
    np.testing.assert_allclose(ember.tensordot(a, a.t(), ember.tensor(1)).numpy(), want)
    np.testing.assert_allclose(ember.tensordot(a, a, ember.tensor([[1], [1]])).numpy(), want)
    np.testing.assert_allclose(ember.tensordot(a, a, ([1], [1])).numpy(), want)
    with pytest.raises(RuntimeError, match="expects dims to be int or"):
        ember.tensordot(a, a, -2.5)
    with pytest.raises(RuntimeError, match="dims >= 0"):  # dims first, b's type after
        ember.tensordot(a, -2.5, -2)
    # (torch's body reads b.dim() there first: an AttributeError; ember's is the parser's)
    with pytest.raises(TypeError if ember.__name__ == "ember" else AttributeError):
        ember.tensordot(a, 2.0, 1)
    with pytest.raises(TypeError, match="'dims_self' \\(position 3\\) must be tuple of ints"):
        ember.tensordot(a, a.to(ember.int32), [0, 0])  # a pair of ints: before the dtypes
    with pytest.raises(TypeError, match="argument 'out' must be Tensor, not bool"):
        ember.tensordot(a, a.t(), [[1], [0]], True)
    with pytest.raises(ValueError):  # Python's unpacking of three lists, as torch's
        ember.tensordot(a, a, [[1], [1], [0]])
    # (torch's body asserts it: an AssertionError, which ember does not raise to its users)
    with pytest.raises(RuntimeError if ember.__name__ == "ember" else AssertionError,
                       match="size 2 in first dimension"):
        ember.tensordot(a, a, ember.tensor([[1], [1], [0]]))


def test_einsum_sublists_fail_on_a_wrong_subscript_as_torchs_parser():
    a, b = ember.tensor(A), ember.tensor(A.T)
    np.testing.assert_allclose(ember.einsum(a, [0, 1], b, [1, 2], [0, 2]).numpy(), A @ A.T)
    np.testing.assert_allclose(ember.einsum(a, [0, ember.tensor(1)]).numpy(), A)  # an int tensor
    np.testing.assert_allclose(ember.einsum(a, [..., 1], [1]).numpy(), A.sum(0))
    with pytest.raises(ValueError, match="not within the valid range"):
        ember.einsum(a, [0, 52])
    with pytest.raises(TypeError):  # a float subscript
        ember.einsum(a, [0, 1.5])
    with pytest.raises(TypeError, match="not iterable"):
        ember.einsum(a, [0, 1], 0.5)  # the output's sublist
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        ember.einsum(a, ember.tensor([[0.5], [1.5]]))  # a tensor as the sublist: its rows
    with pytest.raises(RuntimeError, match="with more than one value is ambiguous"):
        ember.einsum(a, b)
    with pytest.raises(RuntimeError, match="output subscript A does not appear"):
        ember.einsum(a.sum(0), ember.ones(1, dtype=ember.int8), (0, 1))


def test_frombuffer_refuses_a_tensor_and_pooling_to_nothing_takes_any_dtype():
    with pytest.raises(ValueError, match="buffer protocol"):  # (ember's tensors export one)
        ember.frombuffer(ember.tensor([1, 2]), dtype=ember.float32)
    r = ember.adaptive_avg_pool1d(ember.ones(2, 4, dtype=ember.int64), 0)
    assert tuple(r.shape) == (2, 0) and r.dtype == ember.int64
    with pytest.raises(RuntimeError, match="could not infer output dtype"):
        ember.adaptive_avg_pool1d(ember.ones(2, 4, dtype=ember.int64), 1)


def test_softmax_and_log_softmax_take_out_in_the_result_dtype():
    x = ember.tensor(A)
    out = ember.empty(0, dtype=ember.float64)
    assert ember.log_softmax(x, 1, out=out) is out  # (resized from empty)
    shifted = A - A.max(1, keepdims=True)
    want = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)
    assert ember.softmax(x, 0, out=out) is out
    np.testing.assert_allclose(out.numpy(), np.exp(A) / np.exp(A).sum(0), rtol=1e-12)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got "
                                           "double instead"):
        ember.softmax(x, 1, dtype=ember.float32, out=out)
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        x.softmax(1, out=out)  # (methods take no out=)
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        ember.is_distributed(-2)


# ---- torch's SymInt parameters: a one-element integer tensor of any shape ----

@pytest.mark.parametrize("call, expected", [
    (lambda x: x.narrow(1, 0, ember.tensor([2])), A[:, :2]),
    (lambda x: x.narrow(1, ember.tensor(1), ember.tensor([[2]])), A[:, 1:3]),
    (lambda x: x.select(1, ember.tensor([2])), A[:, 2]),
    (lambda x: x.topk(ember.tensor([2])).values, np.sort(A, 1)[:, ::-1][:, :2]),
    (lambda x: ember.eye(ember.tensor([2]), ember.tensor(3)), np.eye(2, 3)),
    (lambda x: ember.bincount(ember.tensor([1, 1]), minlength=ember.tensor([3])),
     np.bincount([1, 1], minlength=3)),
])
def test_symint_parameters_take_one_element_tensors(call, expected):
    np.testing.assert_allclose(call(_a()).numpy(), expected)


def test_an_int_parameter_takes_only_a_0d_tensor():
    # (narrow has torch's two overloads, a Tensor start or an int one: the combination error)
    with pytest.raises(TypeError, match=r"narrow\(\) received an invalid combination of "
                                        r"arguments - got \(Tensor, int, int\)"):
        _a().narrow(ember.tensor([1]), 0, 1)
    with pytest.raises(TypeError, match="argument 'dim' .* must be int, not Tensor"):
        _a().select(ember.tensor([1]), 0)
    with pytest.raises(TypeError, match="must be int, not bool"):
        _a().topk(True)


# ---- out= forms and their dtype rules ----

def test_round_resizes_out_and_writes_only_its_dtype():
    x = ember.tensor([[0.4], [1.6]])
    out = ember.zeros(7)
    with pytest.warns(UserWarning, match="resized"):
        assert ember.round(x, out=out) is out
    np.testing.assert_array_equal(out.numpy(), [[0.0], [2.0]])
    for kw in ({}, {"decimals": 1}):
        with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
            ember.round(x, out=ember.zeros(2, 1, dtype=ember.float64), **kw)


def test_threshold_and_hardshrink_take_out():
    x = ember.tensor([-1.0, 0.25, 2.0])
    out = ember.empty(3, dtype=ember.float64)  # threshold casts its result into out
    assert ember.threshold(x, 0.5, 3.0, out=out) is out
    np.testing.assert_array_equal(out.numpy(), [3.0, 3.0, 2.0])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        ember.threshold(x, 0.5, 3, out=ember.empty(3, dtype=ember.int64))
    out = ember.empty(3)
    assert ember.hardshrink(x, 0.5, out=out) is out
    np.testing.assert_array_equal(out.numpy(), [-1.0, 0.0, 2.0])
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        ember.hardshrink(x, 0.5, out=ember.empty(3, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.hardshrink(x, 0.5, out=ember.empty(3).unsqueeze(0).expand(2, 3))


def test_norm_outs_take_exactly_the_result_dtype():
    out = ember.empty(2, 1)
    assert ember.frobenius_norm(_a(), 1, keepdim=True, out=ember.empty(0, dtype=ember.float64))\
        .shape == (2, 1)
    a32 = ember.tensor(A, dtype=ember.float32)
    assert ember.frobenius_norm(a32, 1, keepdim=True, out=out) is out
    np.testing.assert_allclose(out.numpy(), np.linalg.norm(A, axis=1, keepdims=True), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got "
                                           "double instead"):
        ember.frobenius_norm(a32, 1, out=ember.empty(2, dtype=ember.float64))
    out = ember.empty(())
    assert ember.nuclear_norm(a32, out=out) is out
    np.testing.assert_allclose(out.item(), np.linalg.norm(A, "nuc"), rtol=1e-6)
    assert ember.nuclear_norm(a32, True, out=out).shape == (1, 1)
    with pytest.raises(RuntimeError, match="matrix_norm expected out tensor dtype Float but got: "
                                           "Double"):
        ember.nuclear_norm(a32, [0, 1], out=ember.empty((), dtype=ember.float64))
    with pytest.raises(RuntimeError, match=r"c10::Half, but got c10::BFloat16"):
        ember.norm(ember.ones(3, dtype=ember.float16), out=ember.empty((), dtype=ember.bfloat16))
    with pytest.raises(RuntimeError, match="should be convertible without narrowing"):
        ember.ones(3, dtype=ember.complex128).norm(dim=0, dtype=ember.complex64)
    with pytest.raises(RuntimeError, match="dtype int, but got long int"):
        ember.diag(ember.ones(3, dtype=ember.int32), out=ember.empty(3, 3, dtype=ember.int64))


def test_checks_in_torchs_order():
    # cat: out's dtype before the ranks; argmax: the empty dim before out's dtype
    with pytest.raises(TypeError, match="can't be cast to the desired output type Int"):
        ember.cat([ember.zeros(2, 3), ember.zeros(3)], out=ember.zeros(0, dtype=ember.int32))
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        ember.argmax(ember.zeros(2, 0, 3), 1, out=ember.zeros(0, dtype=ember.int8))
    # clamp and relu refuse a complex input before out= and overlap
    with pytest.raises(NotImplementedError, match="clamp is not supported for complex types"):
        ember.clamp_max(ember.zeros(3, dtype=ember.complex64), -1, out=ember.zeros(0))
    with pytest.raises(NotImplementedError, match="clamp is not supported for complex types"):
        ember.zeros(3, dtype=ember.complex64).unsqueeze(0).expand(2, 3).relu_()
    # memory_format's type and the device come before a fill value's overflow
    with pytest.raises(TypeError, match="argument 'memory_format' must be ember.memory_format"):
        ember.full_like(ember.zeros(2), 2**70, memory_format=2)
    with pytest.raises(RuntimeError, match="Device index must not be negative"):
        ember.full([0], 2**70, device=-1)
    with pytest.raises(OverflowError):
        ember.full([0], 2**70)


def test_copy_into_an_empty_tensor_still_broadcasts():
    with pytest.raises(RuntimeError, match=r"size of tensor a \(0\) must match the size of "
                                           r"tensor b \(2\)"):
        ember.zeros(0, 3).copy_(ember.zeros(2, 3))
    assert ember.zeros(0, 3).copy_(ember.zeros(3)).shape == (0, 3)


def test_layer_norm_mixed_dtypes_as_torchs_cpu_rule():
    x = ember.tensor(A, dtype=ember.float32)
    with pytest.raises(RuntimeError, match="expect parameter to have scalar type of Float"):
        ember.native_layer_norm(x, (3,), ember.ones(3, dtype=ember.float64), None, 1e-5)
    with pytest.raises(RuntimeError, match="all inputs must share same datatype"):
        ember.native_layer_norm(x.double(), (3,), ember.ones(3), None, 1e-5)
    # a reduced-precision input with float32 parameters is torch's mixed case
    out, mean, rstd = ember.native_layer_norm(x.bfloat16(), (3,), ember.ones(3), ember.zeros(3),
                                              1e-5)
    assert out.dtype == ember.bfloat16
    centred = A - A.mean(1, keepdims=True)
    want = centred / np.sqrt((centred ** 2).mean(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out.float().numpy(), want, atol=2e-2)


# ---- devices ----

def test_device_of_an_index_and_the_deprecated_pinning_device():
    with pytest.raises(RuntimeError, match="Device index must not be negative"):
        ember.device(-1)
    with pytest.raises(RuntimeError, match="Device string must not be empty"):
        ember.device("")
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            ember.device(0)
    else:
        assert ember.device(0) == ember.device("cuda:0")
    x = ember.zeros(3)
    with pytest.warns(DeprecationWarning, match="argument 'device' of Tensor.is_pinned"):
        assert x.is_pinned("cpu") is False
    with pytest.warns(DeprecationWarning), pytest.raises(RuntimeError,
                                                          match="CPU device type not an accelerator"):
        x.pin_memory("cpu")
    with pytest.raises(TypeError, match="argument 'device' \\(position 1\\) must be ember.device, "
                                        "not float"):
        x.is_pinned(1.5)
    with pytest.raises(TypeError, match="unhashable"):
        ember.get_device_module([2, 3])


# ---- torch's shortcuts before its checks ----

def test_shortcuts_of_empty_and_trivial_calls():
    assert ember.zeros(0).repeat(-2).shape == (0,)  # -2 * 0 elements is no negative size
    with pytest.raises(RuntimeError, match="negative dimension -4"):
        ember.zeros(2).repeat(-2)
    assert ember.zeros(0).tile(-3).shape == (0,)
    x = ember.ones(2)
    assert ember.diff(x, 0, dim=3) is x  # n = 0: the input, dim unread
    assert ember.zeros(0, 3).roll(1, 4).shape == (0, 3)
    with pytest.raises(IndexError):
        ember.zeros(1, 3).roll(1, 4)
    with pytest.raises(TypeError, match="set_\\(\\) received an invalid combination"):
        ember.zeros(3).set_(ember.zeros(3), 0, 3)  # the size must be a sequence
    assert ember.zeros(3).set_(ember.ones(3), 1, (2,)).tolist() == [1.0, 1.0]
    rows, = ember.unravel_index(ember.tensor(0), True)  # a bool is an int, as in Python
    assert rows.item() == 0


def test_windows_of_a_complex_dtype():
    assert ember.hann_window(1, dtype=ember.complex64).tolist() == [1 + 0j]
    assert ember.hamming_window(0, dtype=ember.complex128).shape == (0,)
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        ember.hann_window(3, dtype=ember.complex64)
    with pytest.raises(RuntimeError, match="expects floating point dtypes"):
        ember.hann_window(1, dtype=ember.int64)


def test_autocast_dtype_setters_are_positional_only():
    before = ember.get_autocast_gpu_dtype()
    with pytest.raises(TypeError):
        ember.set_autocast_gpu_dtype(dtype=ember.float16)
    ember.set_autocast_gpu_dtype(before)


# ---- memory and overflow: refused, never a wrong size ----

def test_an_in_place_op_never_resizes_its_empty_self():
    x = ember.zeros(0)
    with pytest.raises(RuntimeError, match=r"output with shape \[0\] doesn't match the broadcast "
                                           r"shape \[1, 4, 0\]"):
        x.add_(ember.ones(1, 4, 0))
    assert x.shape == (0,)
    assert ember.add(ember.ones(1, 4, 0), 1, out=x).shape == (1, 4, 0)  # an out= is resized


def test_repeat_interleave_refuses_a_total_beyond_int64():
    with pytest.raises(RuntimeError, match="overflows int64"):
        ember.repeat_interleave(ember.ones(4), 2**62)  # 4 * 2**62 wrapped to 0 before
    with pytest.raises(RuntimeError, match="overflows int64"):
        ember.repeat_interleave(ember.tensor([2**62, 2**62, 2**62, 2**62]))
    assert ember.zeros(0).repeat_interleave(2**62).shape == (0,)


# ---- values as torch writes them ----

def test_fill_of_a_tensor_value_is_a_cast():
    assert ember.zeros(2, dtype=ember.uint8).fill_(ember.tensor(300)).tolist() == [44, 44]
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.zeros(2, dtype=ember.uint8).fill_(300)  # a number is checked
    assert ember.zeros(2, dtype=ember.bool).fill_(1 + 1j).tolist() == [True, True]
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        assert ember.zeros(2).fill_(ember.tensor(2.5 - 1j)).tolist() == [2.5, 2.5]


def test_integer_division_of_nothing_needs_no_divisor():
    assert ember.zeros(0, dtype=ember.int32).floor_divide(0).shape == (0,)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.ones(2, dtype=ember.int32).floor_divide(0)


def test_addcdiv_of_complex_keeps_the_infinity_of_a_finite_quotient():
    # (value * t1) / t2 as torch's kernel: -(3.75 - 1.875j) / 0 = -inf + inf j, no NaN
    r = ember.addcdiv(ember.zeros(1, dtype=ember.complex128), ember.tensor([3.75 - 1.875j]),
                      ember.zeros(1, dtype=ember.float64), value=-1)
    assert r.item() == complex(-np.inf, np.inf)


def test_adaptive_average_pooling_of_complex_inputs():
    # torch's: the mean over the whole window (an output of all ones); its kernels have no
    # complex type for any other output size
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 6)) + 1j * rng.standard_normal((2, 3, 6))
    got = ember.adaptive_avg_pool1d(ember.tensor(a), 1).numpy()
    np.testing.assert_allclose(got, a.mean(2, keepdims=True), rtol=1e-12)
    a = rng.standard_normal((3, 4, 6)) + 1j * rng.standard_normal((3, 4, 6))
    got = ember.nn.functional.adaptive_avg_pool2d(ember.tensor(a), (1, 1)).numpy()
    np.testing.assert_allclose(got, a.mean((1, 2), keepdims=True), rtol=1e-12)
    one = ember.adaptive_avg_pool1d(ember.tensor([[[1 + 2j], [3j]]]), [1])  # size-1 dims
    assert one.tolist() == [[[1 + 2j], [3j]]]
    with pytest.raises(NotImplementedError, match="\"adaptive_avg_pool2d\" not implemented for "
                                                  "'ComplexDouble'"):
        ember.adaptive_avg_pool1d(ember.tensor(a), 3)
    with pytest.raises(NotImplementedError, match="adaptive_avg_pool3d_cpu"):
        ember.nn.functional.adaptive_avg_pool3d(ember.tensor(a).unsqueeze(0), 2)


def test_reductions_and_samplers_in_torchs_dtypes():
    # nansum of integers is sum (no NaN to skip), a complex dtype included; of floats it is not
    assert ember.nansum(ember.tensor([1, 2], dtype=ember.int8), dtype=ember.complex128).item() \
        == 3 + 0j
    with pytest.raises(NotImplementedError, match="\"nansum_cpu\" not implemented for "
                                                  "'ComplexFloat'"):
        ember.nansum(ember.tensor([1.0]), dtype=ember.complex64)
    # normal draws into a floating out= in out's dtype, whatever the parameters' dtype
    out = ember.empty(3)
    ember.manual_seed(0)
    assert ember.normal(ember.tensor([0, 100, -100], dtype=ember.int32), 0.01, out=out) is out
    assert np.allclose(out.numpy(), [0, 100, -100], atol=0.1)
    # bincount of an empty input: torch's int64 zeros, whatever the weights
    r = ember.bincount(ember.zeros(0, dtype=ember.int8), ember.zeros(2, 0), minlength=3)
    assert r.dtype == ember.int64 and r.tolist() == [0, 0, 0]
    # all/any into a uint8 out for any input
    out = ember.empty(3, dtype=ember.uint8)
    assert ember.all(ember.ones(3, 2), 1, out=out).tolist() == [1, 1, 1]
    with pytest.raises(RuntimeError, match="all only supports bool tensor for result, got: Int"):
        ember.all(ember.ones(3, 2), 1, out=ember.empty(3, dtype=ember.int32))


def test_out_forms_resize_and_check_their_dtypes():
    out = ember.zeros(1, dtype=ember.int8)
    with pytest.warns(UserWarning, match="resized"):
        ember.outer(ember.tensor([2], dtype=ember.int32), ember.tensor([3], dtype=ember.uint8),
                    out=out)
    assert out.shape == (1, 1) and out.item() == 6
    x = ember.tensor([1.5, -3.0], dtype=ember.float64)
    m_out, e_out = ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.int32)
    mant, expo = ember.frexp(x, out=(m_out, e_out))
    assert mant is m_out and mant.tolist() == [0.75, -0.75] and expo.tolist() == [1, 2]
    with pytest.raises(RuntimeError, match="expects mantissa to have dtype double but got float"):
        ember.frexp(x, out=(ember.empty(2), ember.empty(2, dtype=ember.int32)))
    with pytest.raises(RuntimeError, match="expects exponent to have int dtype but got long int"):
        ember.frexp(x, out=(ember.empty(2, dtype=ember.float64), ember.empty(2, dtype=ember.int64)))
    base = ember.zeros(4, 2)
    out = ember.empty(0)
    assert ember.slice_scatter(base, ember.ones(2, 2), 0, 1, 3, out=out) is out
    assert out.sum().item() == 4
    with pytest.raises(RuntimeError, match="dtype float, but got double"):
        ember.slice_scatter(base, ember.ones(2, 2), out=ember.empty(0, dtype=ember.float64))
    with pytest.raises(IndexError, match="slice\\(\\) cannot be applied to a 0-dim tensor"):
        ember.slice_scatter(ember.ones(()), ember.ones(()), out=ember.empty(0, dtype=ember.int8))
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        ember.det(ember.eye(2), out=ember.empty(()))  # (linalg.det takes one, torch.det none)
    assert ember.linalg.det(ember.eye(2), out=ember.empty(())).item() == 1.0
    with pytest.raises(RuntimeError, match="safely castable from Double dtype, but got result "
                                           "with dtype Byte"):
        ember.cholesky_inverse(ember.eye(2, dtype=ember.float64),
                               out=ember.empty(2, 2, dtype=ember.uint8))


def test_more_checks_in_torchs_order():
    with pytest.raises(RuntimeError, match="expected scalar type 'UInt32' but got 'Bool' for "
                                           "values output"):
        ember.mode(ember.zeros(0, dtype=ember.uint32), out=(ember.zeros(0, dtype=ember.bool),
                                                            ember.zeros(0, dtype=ember.int64)))
    with pytest.raises(RuntimeError, match="Expected result to be of dtype uint64"):
        ember.hash_tensor(ember.zeros(0, dtype=ember.int8), [-1], mode=-1, out=ember.zeros(3))
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        ember.hash_tensor(ember.zeros(0, dtype=ember.int8), dim=[0], mode=2)
    with pytest.raises(RuntimeError, match="dtype Int does not match dtype of out parameter "
                                           "\\(UInt32\\)"):
        ember.arange(2, 2**70, 2, out=ember.zeros(3, dtype=ember.uint32), dtype=ember.int32)
    with pytest.raises(TypeError, match="tensor_split\\(\\) received an invalid combination"):
        ember.zeros(2, 3).tensor_split(True, dim=2)  # (its type before the dim)
    with pytest.raises(RuntimeError, match="non-complex scalar as the order of norm"):
        ember.norm(ember.ones(3), 1j)
    with pytest.raises(NotImplementedError, match="\"median_out\" not implemented for "
                                                  "'ComplexFloat'"):
        ember.zeros(2, 0, dtype=ember.complex64).nanmedian(0)
    with pytest.raises(NotImplementedError, match="\"geometric_cpu\" not implemented for "
                                                  "'UInt32'"):
        ember.zeros(2, dtype=ember.uint32).geometric_(0.5)
    with pytest.raises(NotImplementedError, match="\"dot\" not implemented for 'UInt64'"):
        ember.ones(0, dtype=ember.uint64).dot(ember.ones(0, dtype=ember.uint64))
    with pytest.raises(IndexError, match="put_\\(\\): Expected source and index to have the same"):
        ember.zeros(4).put(ember.tensor([0, 1]), ember.ones(3))
    with pytest.raises(TypeError, match="argument 'index' \\(position 2\\) must be int, not tuple"):
        ember.device("", (0, 1))


def test_arguments_torch_takes():
    x = ember.tensor([[3.0, 1.0], [2.0, 5.0]])
    assert ember.amin(x, None).item() == 1.0 and ember.amax(x, None, True).shape == (1, 1)
    # take_along_dim without a dim gathers the flattened input, int32 indices included
    got = ember.take_along_dim(x, ember.tensor([3, 0], dtype=ember.int32))
    assert got.tolist() == [5.0, 3.0]
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        ember.take_along_dim(x, ember.tensor([3, 0], dtype=ember.uint8))
    assert ember.cat([ember.zeros(0)], 100).shape == (0,)  # legacy empty inputs read no dim
    hist, edges = ember.histogramdd(ember.tensor([[0.0, 0.0], [1.0, 1.0]]), [2, 2],
                                    [0.0, 1.0, 0.0, 1.0])  # range by position
    assert hist.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    t = ember.zeros(3)
    assert t.set_(ember.ones(4).untyped_storage(), ember.tensor([1]), (2,)).shape == (2,)
    u, s, v = ember.svd_lowrank(ember.eye(4), ember.tensor([2]))
    assert u.shape == (4, 2)
    assert ember.hann_window(ember.tensor(3, dtype=ember.uint8)).shape == (3,)
    assert ember.hash_tensor(ember.ones(1, dtype=ember.int16),
                             ember.tensor([0], dtype=ember.uint16)).shape == ()
    assert len(ember.unravel_index(ember.tensor(1), (True, 2))) == 2
    ember.set_deterministic_debug_mode(True)  # (a bool is the int 1)
    try:
        assert ember.get_deterministic_debug_mode() == 1
    finally:
        ember.set_deterministic_debug_mode(0)
    lu, piv = ember.linalg.lu_factor(ember.eye(2))
    _, l_, u_ = ember.lu_unpack(lu, piv.to(ember.uint8), unpack_pivots=False)  # pivots unread
    assert l_.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    with pytest.raises(RuntimeError, match="LU_pivots is expected to be a contiguous tensor"):
        ember.lu_unpack(lu, piv.to(ember.uint8))
    assert ember.UntypedStorage(ember.tensor(3)).size() == 3
    with pytest.raises(RuntimeError, match="Expected a sequence type, but got bool"):
        ember.UntypedStorage(True)
    with pytest.raises(TypeError, match="Event\\(\\): argument 'device' \\(position 1\\) must be "
                                        "ember.device, not bool"):
        ember.Event(True)
    with pytest.raises(TypeError, match="invalid combination"):
        ember.count_nonzero(ember.ones(2, 3), ember.tensor([1]))  # (int? dim: a 0-d one only)
    assert ember.count_nonzero(ember.ones(2, 3), ember.tensor(1)).tolist() == [3, 3]


def test_the_scan_of_a_0d_complex_tensor_is_itself():
    # (the parts' view of a 0-d tensor once scanned its (real, imaginary) pair: 3.75 + 1.875j)
    x = ember.tensor(3.75 - 1.875j, dtype=ember.complex64)
    assert x.cumsum(0).item() == 3.75 - 1.875j and x.cumprod(0).item() == 3.75 - 1.875j
    assert ember.tensor(2, dtype=ember.int8).cumsum(0).dtype == ember.int64


def test_sizes_whose_strides_overflow_are_refused_even_when_empty():
    with pytest.raises(RuntimeError, match="Stride calculation overflowed"):
        ember.empty(2, 2, 0, 2**62 + 7)  # dim 0's stride: 2 * (2**62 + 7)
    with pytest.raises(RuntimeError, match="Stride calculation overflowed"):
        ember.constant_pad_nd(ember.zeros(2, 2, 0, 3), [2**62, 4])
    assert ember.empty(4, 0, 2**62).shape == (4, 0, 2**62)  # (its strides fit: torch's too)


def test_batch_norm_follows_torchs_mixed_dtype_rule():
    x = ember.ones(2, 3, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="all inputs must share same datatype"):
        ember.native_batch_norm(x, ember.ones(3), None, None, None, True, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="expect parameter to have scalar type of Float"):
        ember.native_batch_norm(x.float(), ember.ones(3, dtype=ember.float64), None, None, None,
                                True, 0.1, 1e-5)
    out, _, _ = ember.native_batch_norm(x.bfloat16(), ember.ones(3), ember.zeros(3), None, None,
                                        True, 0.1, 1e-5)  # autocast's mix
    assert out.dtype == ember.bfloat16 and out.float().abs().max().item() == 0.0


def test_composites_read_dims_as_torch_does():
    x = ember.tensor(A)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        x.hash_tensor([0, 0])
    np.testing.assert_allclose(ember.frobenius_norm(x, ember.tensor(1)).numpy(),
                               np.linalg.norm(A, axis=1), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="\"kthvalue_cpu\" not implemented for 'UInt16'"):
        ember.zeros(2, 0, 3, dtype=ember.uint16).kthvalue(3, -1)
    rows, cols = ember.unravel_index(ember.tensor([4], dtype=ember.int8), (2, 3))
    assert rows.dtype == cols.dtype == ember.int64 and (rows.item(), cols.item()) == (1, 1)
    u, s, v = ember.svd_lowrank(ember.eye(3), True)  # q=True is one column, as torch's randn
    assert u.shape == (3, 1)


# ---- seed 41's findings ----

def test_one_half_element_takes_any_float_as_torchs_scalar_fill():
    # (torch's fill of one CPU element and scalar_tensor convert into half and bfloat16
    # unchecked, rounding to inf; a fill of more elements refuses what does not fit)
    for dt in (ember.float16, ember.bfloat16):
        assert ember.full((1,), 1e300, dtype=dt).item() == np.inf
        assert ember.zeros(1, dtype=dt).fill_(-1e300).item() == -np.inf
        assert ember.scalar_tensor(1e300, dtype=dt).item() == np.inf
        with pytest.raises(RuntimeError, match="cannot be converted to type c10::"):
            ember.full((2,), 1e300, dtype=dt)
    assert ember.full((1,), 7e4, dtype=ember.float16).item() == np.inf
    with pytest.raises(RuntimeError, match="cannot be converted to type c10::Half"):
        ember.zeros(2, dtype=ember.float16).fill_(7e4)
    assert ember.scalar_tensor(7e4, dtype=ember.float16).item() == np.inf  # (unchecked there)
    with pytest.raises(RuntimeError, match="cannot be converted to type int8_t"):
        ember.scalar_tensor(1000, dtype=ember.int8)
    with pytest.raises(RuntimeError, match="cannot be converted to type float"):
        ember.full((1,), 1e300, dtype=ember.float32)


def test_the_norm_of_no_elements_is_zero_for_every_large_order():
    # (0^(1/p) was computed as 0^0 = 1 where 1/p rounds to 0 in float32)
    for p in (2.5, 1e40, 1e300):
        assert ember.linalg.vector_norm(ember.zeros(0), ord=p).item() == 0.0
        assert ember.linalg.vector_norm(ember.zeros(2, 0), ord=p, dim=1).tolist() == [0.0, 0.0]
        assert ember.dist(ember.zeros(0, 3), ember.zeros(0, 3), p=p).item() == 0.0


def test_pow_by_zero_or_one_needs_no_kernel():
    x = ember.tensor([5, 7], dtype=ember.uint64)  # (uint64 has no pow kernel, as torch's)
    assert x.pow(0).tolist() == [1, 1] and x.pow(1).tolist() == [5, 7]
    y = x.clone()
    assert y.pow_(True) is y and y.tolist() == [5, 7] and y.dtype == ember.uint64
    assert x.pow(1.0).dtype == ember.float32 and x.pow(1.0).tolist() == [5.0, 7.0]
    out = ember.empty(0, dtype=ember.float64)
    assert ember.pow(x, 0, out=out) is out and out.tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.pow(ember.ones(2), 1, out=ember.empty(2, dtype=ember.int64))
    with pytest.raises(NotImplementedError, match="pow"):
        x.pow(2)
    assert ember.tensor([float("nan")]).pow(0).item() == 1.0  # (NumPy's too)


def test_tensor_of_an_object_is_torchs_runtime_error():
    with pytest.raises(RuntimeError, match="Could not infer dtype of object"):
        ember.tensor(object())
    with pytest.raises(RuntimeError, match="Could not infer dtype of object"):
        ember.as_tensor([[1], [object()]])
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        ember.tensor([1, "a"])


def test_block_diag_promotes_as_result_type():
    # (a 0-d tensor's dtype counts only where its kind is above the dimensioned ones')
    r = ember.block_diag(ember.zeros(2, 0, dtype=ember.bfloat16), ember.tensor(-2.5),
                         ember.tensor([1, 2], dtype=ember.int64))
    assert r.dtype == ember.bfloat16
    np.testing.assert_array_equal(r.float().numpy(), [[0, 0, 0], [0, 0, 0], [-2.5, 0, 0],
                                                      [0, 1, 2]])
    assert ember.block_diag(ember.tensor([1]), ember.tensor(0.5)).dtype == ember.float32
    assert ember.block_diag(ember.tensor([1.0], dtype=ember.float64),
                            ember.tensor(1j)).dtype == ember.complex128
    assert ember.block_diag(ember.tensor(1), ember.tensor(2.0)).dtype == ember.float32


def test_out_and_nan_checks_found_by_seed_41():
    z = ember.tensor([3 + 4j, 0j])
    with pytest.raises(RuntimeError, match="Found dtype Double but expected ComplexFloat"):
        ember.sgn(z, out=ember.empty(2, dtype=ember.float64))
    out = ember.empty(0, dtype=ember.complex64)
    assert ember.sgn(z, out=out) is out
    np.testing.assert_allclose(out.numpy(), [0.6 + 0.8j, 0j], rtol=1e-6)
    with pytest.raises(NotImplementedError, match="\"nansum_cpu\" not implemented for 'Short'"):
        ember.nansum(ember.ones(3), out=ember.empty((), dtype=ember.int16))
    assert ember.nansum(ember.tensor([1, 2]), out=ember.empty((), dtype=ember.int16)).item() == 3
    x = ember.tensor([1.7, float("nan"), 2.6, -0.5])  # an integer dtype=: NaN skipped, truncated
    assert x.nansum(dtype=ember.int32).item() == 3 and x.nansum(dtype=ember.int32).dtype == \
        ember.int32
    assert ember.nansum(x, dtype=ember.int16, out=ember.empty((), dtype=ember.int16)).item() == 3
    with pytest.raises(RuntimeError, match="aweights cannot be negative"):
        ember.ones(2, 3).cov(aweights=ember.tensor([1.0, float("nan"), 1.0]))
    nan_first = ember.tensor([[float("nan"), 0.0], [0.0, 1.0]])
    with pytest.raises(ember.linalg.LinAlgError, match="leading minor of order 1"):
        ember.linalg.cholesky(nan_first)
    L, info = ember.linalg.cholesky_ex(ember.tensor([[4.0, 2.0], [2.0, float("nan")]]))
    assert info.item() == 2


def test_argument_orders_found_by_seed_41():
    x = ember.zeros(3, 0, 2)
    assert x.bernoulli_(ember.full((2, 0, 3), 0.5)) is x  # (p's shape unread for an empty self)
    t = ember.tensor([[3.0], [1.0], [2.0]])
    v, i = t.min(ember.tensor(0, dtype=ember.uint64), keepdim=True)  # a 0-d integer tensor: dim
    assert v.tolist() == [[1.0]] and i.tolist() == [[1]]
    assert t.min(ember.tensor(2.0)).tolist() == [[2.0], [1.0], [2.0]]  # else the other tensor
    assert ember.logcumsumexp(ember.tensor(0.5), ember.tensor(0, dtype=ember.uint64)).item() == 0.5
    assert ember.gradient(ember.tensor(3, dtype=ember.uint32)) == ()
    with pytest.raises(IndexError, match="When source is scalar, index should have one element"):
        ember.zeros(0, dtype=ember.int64).index_copy_(0, ember.zeros(0, dtype=ember.int64),
                                                      ember.tensor(1.5))
    with pytest.raises(IndexError, match="Number of indices \\(2\\) should be equal"):
        ember.zeros(3, 2).index_copy_(0, ember.tensor([0, 1]), ember.zeros(3, 2))
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        ember.zeros(0).hash_tensor([0, 0])
    with pytest.raises(IndexError, match="no dimensions"):
        ember.tensor(3).repeat_interleave(ember.tensor([2]), 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.tensor(3).repeat_interleave(2, -1)
    assert ember.tensor(3).repeat_interleave(2).tolist() == [3, 3]
    with pytest.raises(TypeError, match="expected Tensor as element 0 in argument 0"):
        ember.broadcast_tensors([ember.ones(2), ember.ones(1)])
    with pytest.raises(TypeError, match="must be a bool or a list of memory formats"):
        ember.ones(2).dim_order(ambiguity_check=None)
    with pytest.raises(RuntimeError, match="pin_memory"):  # refused before 16 GiB is allocated
        ember.kaiser_window(2**31, True, dtype=ember.float64, pin_memory=True)


def test_ldexp_and_istft_take_0d_arguments_as_torch():
    z = ember.tensor([1 + 1j], dtype=ember.complex128)
    assert z.clone().ldexp_(ember.tensor(2.0, dtype=ember.float16)).tolist() == [4 + 4j]
    with pytest.raises(NotImplementedError, match="ComplexHalf"):
        ember.ldexp(z, ember.tensor([2.0], dtype=ember.float16))
    x = ember.randn(64, dtype=ember.float64)
    w = ember.hann_window(16, dtype=ember.float64)
    spec = ember.stft(x, 16, window=w, return_complex=True)
    y = ember.istft(spec, ember.tensor(16), window=w, length=ember.tensor(64))
    np.testing.assert_allclose(y.numpy(), x.numpy(), atol=1e-12)


# ---- seeds 43 and 47's findings ----

def test_silent_results_found_by_seeds_43_and_47():
    # alpha * other of an unsigned other, in the complex result dtype (uint64 * -1 wrapped)
    r = ember.sub(ember.tensor(1 + 1j, dtype=ember.complex64),
                  ember.tensor([1, 2], dtype=ember.uint64), alpha=-1)
    assert r.tolist() == [2 + 1j, 3 + 1j]
    # an integer threshold takes both numbers truncated into its type (-2.5 is -2)
    x = ember.tensor([-2, -2, -1, 3])
    assert ember.threshold(x, -2.5, 2).tolist() == [2, 2, -1, 3]
    assert ember.threshold(x, 1.5, 0.7).tolist() == [0, 0, 0, 3]
    # the variance of no element is NaN whatever the correction
    assert np.isnan(ember.var(ember.zeros(0), correction=-3).item())
    std, mean = ember.std_mean(ember.zeros(2, 0, dtype=ember.float16), 1, correction=-1)
    assert np.isnan(std.float().numpy()).all() and np.isnan(mean.float().numpy()).all()
    # pow by 0.5, -0.5 and -1 is sqrt, rsqrt and reciprocal (sqrt(-inf) is NaN, sqrt(-0) -0)
    v = ember.tensor([-np.inf, -0.0, 4.0])
    got = ember.pow(v, 0.5).numpy()
    assert np.isnan(got[0]) and got[1] == 0 and np.signbit(got[1]) and got[2] == 2
    assert np.isnan(ember.pow(v, -0.5).numpy()[0]) and ember.pow(v, -1).tolist()[2] == 0.25
    got = v.to(ember.bfloat16).pow(0.5).float().numpy()
    assert np.isnan(got[0]) and np.signbit(got[1])
    # a fill_diagonal_ with wrap of a matrix with no columns writes nothing
    e = ember.zeros(2, 0, dtype=ember.int8)
    assert e.fill_diagonal_(2, True) is e


def test_out_checks_found_by_seeds_43_and_47():
    v = ember.ones(3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.outer(v, v, out=ember.zeros(3).expand(2, 3))
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.polygamma(2, v, out=ember.zeros(3).expand(2, 3))
    with pytest.raises(RuntimeError, match="result type BFloat16 can't be cast to the desired "
                                           "output type Long"):
        ember.addr(ember.ones(3, dtype=ember.int8), ember.ones(3, dtype=ember.bool),
                   ember.ones(3, dtype=ember.bfloat16), beta=0.5,
                   out=ember.zeros(3, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got "
                                           "long int instead"):
        ember.index_copy(ember.zeros(3, 2), 0, ember.tensor([0.0]), ember.ones(1, 2),
                         out=ember.zeros(3, 2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float"):
        ember.scatter(ember.zeros(3, 2), 0, ember.tensor([[0]]), ember.ones(1, 2),
                      out=ember.zeros(3, 2, dtype=ember.float64))
    z = ember.ones(2, 3, dtype=ember.complex64)
    with pytest.raises(RuntimeError, match="mean.dtype_out\\(\\): input types can't be cast"):
        ember.mean(z, out=ember.zeros((), dtype=ember.float16))
    with pytest.raises(RuntimeError, match="expected scalar_type BFloat16 but found ComplexFloat"):
        ember.diff(ember.ones(3, 2, dtype=ember.bfloat16), 0, out=ember.zeros(2,
                                                                              dtype=ember.complex64))
    u = ember.ones(3, 1, dtype=ember.uint8)
    out = ember.zeros(3, dtype=ember.bool)
    assert ember.any(u, dim=1, out=out) is out and out.tolist() == [True] * 3
    assert ember.all(u, out=ember.zeros((), dtype=ember.bool)).item() is True
    with pytest.raises(RuntimeError, match="eps must be non-negative, got: -2.5"):
        ember.cosine_similarity(ember.ones(2, 3), ember.ones(2, 3), eps=-2.5)
    with pytest.raises(NotImplementedError, match="\"masked_scatter\" not implemented for "
                                                  "'UInt64'"):
        ember.zeros(3, dtype=ember.uint64).masked_scatter_(ember.ones(3, dtype=ember.bool),
                                                           ember.ones(3, dtype=ember.uint64))


def test_arguments_found_by_seeds_43_and_47():
    x = ember.tensor([1.7, float("nan"), 2.6])
    assert x.polygamma_(ember.tensor(1, dtype=ember.uint32)) is x  # (a 0-d integer tensor n)
    r = ember.repeat_interleave(ember.tensor([[1], [2]]), repeats=ember.tensor([3]))
    assert r.tolist() == [1, 1, 1, 2, 2, 2]  # (a one-element repeats broadcasts)
    with pytest.raises(RuntimeError, match="repeats must be 0-dim or 1-dim tensor"):
        ember.tensor(3).repeat_interleave(ember.ones(1, 2, dtype=ember.int64), 0)
    assert ember.ones(2, 3).norm(2, 1, True, ember.float64).dtype == ember.float64  # dtype 4th
    with pytest.raises(TypeError):
        ember.ones(2).cuda(0, False, ember.contiguous_format)  # memory_format: keyword only
    with pytest.raises(TypeError, match="'NoneType' object cannot be interpreted as an integer"):
        ember.zeros(2).new_tensor(None, dtype=ember.uint16)
    with pytest.raises(TypeError, match="must be real number, not NoneType"):
        ember.tensor([1, None], dtype=ember.float32)
    with pytest.raises(RuntimeError, match="Could not infer dtype of NoneType"):
        ember.tensor(None)
    with pytest.raises(NotImplementedError, match="\"nansum_cpu\" not implemented for 'Short'"):
        ember.nansum(ember.ones(3), out=ember.zeros((), dtype=ember.int16))
    assert ember.zeros((0, 1), out=ember.zeros(0, dtype=ember.bool), pin_memory=True).shape == \
        (0, 1)  # (out= given: pin_memory is not read)


def test_checks_found_by_seed_53():
    # torch's Number overload takes a 0-d tensor beside a number as a number (int8 kept)
    assert ember.clamp(ember.tensor(-6, dtype=ember.int8), ember.tensor(0, dtype=ember.uint8),
                       3).dtype == ember.int8
    assert ember.clamp(ember.tensor(5, dtype=ember.int32), 3, ember.tensor(2)).dtype == \
        ember.int32
    assert ember.clamp(ember.tensor([5], dtype=ember.int32), ember.tensor(3),
                       ember.tensor(2)).dtype == ember.int32
    with pytest.raises(TypeError, match="argument 'equation' \\(position 1\\) must be str, not "
                                        "tuple"):
        ember.einsum((0, 1), ember.zeros(0))
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.zeros(1, dtype=ember.uint16).expand(2, 1).index_copy_(
            -1, ember.tensor([0.0]), ember.tensor([1], dtype=ember.int32))
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.ldexp(ember.ones(1), ember.ones(1), out=ember.zeros(1).expand(2, 1))
    with pytest.raises(ValueError, match="invalid type: 'cpu'"):
        ember.ones(2).type("cpu")
    assert ember.ones(2).type("torch.DoubleTensor").dtype == ember.float64
    assert ember.ones(2).type("ember.IntTensor").dtype == ember.int32
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        ember.adaptive_avg_pool1d(ember.zeros(2, 0, 3, dtype=ember.int32), [1])  # (its mean)
    assert ember.adaptive_avg_pool1d(ember.zeros(2, 0, 3, dtype=ember.int32), [2]).shape == \
        (2, 0, 2)  # (an empty output of the pooling kernel: any dtype)


def test_none_for_a_tensor_parameter_is_a_type_error():
    # (pybind11 passed None to a Tensor parameter as a null tensor: seed 59's segfault,
    # x.resize_as_(None); run in a child so that a regression fails instead of crashing pytest)
    import subprocess
    import sys
    code = """
import ember
x = ember.ones(2, 3)
calls = [lambda: x.resize_as_(None), lambda: ember.resize_as_(x, None),
         lambda: x.is_set_to(None), lambda: ember.to_dlpack(None),
         lambda: ember.Tensor.untyped_storage(None), lambda: ember.Tensor.is_shared(None)]
for call in calls:
    try:
        call()
    except TypeError:
        continue
    raise SystemExit("accepted None")
assert x.resize_as_(ember.ones(3)).shape == (3,)
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stdout, r.stderr)


def test_checks_found_by_seed_59():
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.cdist(ember.ones(3, 1), ember.ones(3, 1, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        ember.clamp(ember.ones(2, dtype=ember.complex64), out=ember.ones(2))


def test_checks_found_by_seed_61():
    # where's Python number is converted checked into the result dtype (not into half/bfloat16)
    cond = ember.tensor([True, False])
    with pytest.raises(RuntimeError, match="value cannot be converted to type float without"):
        ember.where(cond, ember.ones(2, dtype=ember.bool), 1e300)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int without"):
        ember.where(cond, ember.ones(2, dtype=ember.int32), 2**40)
    assert ember.where(cond, ember.ones(2, dtype=ember.uint8), -1).tolist() == [1, 255]
    assert ember.where(cond, ember.ones(2, dtype=ember.float16), 1e5).tolist() == \
        [1.0, float("inf")]
    # a negative Python int is no uint64 (torch reads it as unsigned); uint32 wraps, as torch's
    with pytest.raises(OverflowError, match="can't convert negative int to unsigned"):
        ember.ones(2, dtype=ember.uint64).new_tensor(-2)
    with pytest.raises(OverflowError, match="can't convert negative int to unsigned"):
        ember.tensor([3, -1], dtype=ember.uint64)
    assert ember.tensor(2**64 - 1, dtype=ember.uint64).item() == 2**64 - 1
    assert ember.tensor(-2, dtype=ember.uint32).item() == 2**32 - 2
    with pytest.raises(RuntimeError, match="quantile\\(\\) out tensor must be same dtype"):
        ember.quantile(ember.ones(3), 0.5, out=ember.zeros(1, dtype=ember.float64))
    with pytest.raises(NotImplementedError, match='"aminmax_cpu" not implemented for'):
        ember.aminmax(ember.ones(3, dtype=ember.complex64))
    with pytest.raises(RuntimeError, match="aminmax not implemented for ComplexDouble"):
        ember.aminmax(ember.ones((), dtype=ember.complex128), dim=0)
    with pytest.raises(RuntimeError, match="complex32"):
        ember.complex(ember.ones(2, dtype=ember.float16), ember.ones(2, dtype=ember.float16))
    # mean with a dim is torch's mean.out: computed into out's dtype (complex into a real out
    # keeps the real part); without one, mean.dtype_out refuses what does not cast
    z = ember.tensor([[1 + 2j, 3 - 1j], [5 + 0j, -1 + 1j]], dtype=ember.complex64)
    out = ember.zeros(2, dtype=ember.float16)
    with pytest.warns(UserWarning, match="Casting complex values to real discards"):
        assert ember.mean(z, [0], out=out).tolist() == [3.0, 1.0]
    with pytest.raises(RuntimeError, match="mean.dtype_out\\(\\): input types can't be cast"):
        ember.mean(z, out=ember.zeros((), dtype=ember.float32))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        ember.mean(ember.ones(2, 2), [0], out=ember.zeros(2, dtype=ember.int64))


def test_checks_found_by_seed_67():
    with pytest.raises(RuntimeError, match="cov\\(\\): weights sum to zero, can't be normalized"):
        ember.cov(ember.ones(2, 3), fweights=ember.zeros(3, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="weights sum to zero"):  # (before complex's clamp)
        ember.cov(ember.zeros(0, dtype=ember.complex64), correction=2,
                  fweights=ember.zeros(0, dtype=ember.int64))
    # tensor() infers its data's dtype before it looks at pin_memory (which needs CUDA)
    with pytest.raises(TypeError, match="new\\(\\): invalid data type 'str'"):
        ember.tensor("mean", pin_memory=True)
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index but got: Float"):
        ember.ones(4, 4).index_reduce_(1, ember.tensor([0.0]), ember.ones(4, 1), "mean")
    with pytest.raises(RuntimeError, match="self \\(Float\\) and source \\(Double\\) must have"):
        ember.ones(4, 4).index_reduce_(1, ember.tensor([0]), ember.ones(4, 1).double(), "mean")
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t"):
        ember.randperm(2**63 - 1, out=ember.zeros(0, dtype=ember.int8))
    with pytest.raises(NotImplementedError, match='"aminmax_cpu" not implemented'):
        ember.ones((), dtype=ember.complex64).aminmax(keepdim=True)


def test_checks_and_results_found_by_seed_71():
    # half and bfloat16 addcmul/addcdiv compute in float32 as input + (value * t1) op t2 and
    # round once (rounding the quotient to bfloat16 first moved results by one step)
    a = ((np.arange(64) % 11 - 5) * 0.37).reshape(8, 8).astype(np.float32)
    b = ((np.arange(64) % 7) + 1).reshape(8, 8).astype(np.float32)
    c = ((np.arange(64) % 13 - 6.5) * 1.1).reshape(8, 8).astype(np.float32)
    for dt in (ember.bfloat16, ember.float16):
        ea, eb, ec = (ember.tensor(v).to(dt) for v in (a, b, c))
        fa, fb, fc = (t.float().numpy() for t in (ea, eb, ec))
        for op, combine in (("addcdiv", np.divide), ("addcmul", np.multiply)):
            want = ember.tensor(fa + combine(np.float32(2) * fb, fc)).to(dt)
            got = getattr(ember, op)(ea, eb, ec, value=2)
            assert got.dtype == dt
            np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    # random_ from the most negative int64 without to: every 64-bit value, in four dtypes only
    assert ember.zeros(8, dtype=ember.int64).random_(-2**63, None).shape == (8,)
    with pytest.raises(RuntimeError, match="handles only int64, double, float and bfloat16"):
        ember.zeros(3, dtype=ember.int8).random_(-2**63, None)
    with pytest.raises(NotImplementedError, match="random_full_64_bits_range_kernel_cpu"):
        ember.zeros(3, dtype=ember.float16).random_(-2**63, None)
    assert ember.zeros(0, dtype=ember.float16).random_(-2**63, None).shape == (0,)
    # pairwise_distance of integers with an integer eps: the norm in the default float dtype
    d = ember.pairwise_distance(ember.tensor([3, 4]), ember.tensor([0, 0]), 2.0, 0)
    assert d.dtype == ember.float32 and d.item() == 5.0
    with pytest.raises(NotImplementedError, match="\"polar_cpu\" not implemented for 'Half'"):
        ember.polar(ember.ones(2, dtype=ember.float16), ember.ones(2, dtype=ember.float16))
    # nan_to_num checks every argument's type before converting one
    with pytest.raises(TypeError, match="argument 'posinf'"):
        ember.nan_to_num(ember.ones(2), ember.tensor(1 + 2j), [2, 3])
    with pytest.raises(TypeError, match="an integer is required"):
        ember.ones(2, dtype=ember.uint64).new_tensor(0.5)
    # a masked fill of an expanded tensor: torch's deprecation warning, then the fill
    x = ember.ones(1, 3).expand(2, 3)
    with pytest.warns(UserWarning, match="Use of masked_fill_ on expanded tensors is deprecated"):
        x.masked_fill_(ember.tensor([True, False, True]), 7)
    assert x.tolist() == [[7.0, 1.0, 7.0]] * 2


def test_checks_found_by_seed_73():
    # sum's out= without dim is refused on every path, the autocast hand-off's too (an OpDef
    # check runs before the hand-off; the hook's redispatch never reached impl's check)
    with ember.autocast("cpu"):
        with pytest.raises(TypeError, match="got out without dim"):
            ember.sum(ember.ones(2, 3), out=ember.zeros(3))
    x = ember.ones(2, 3, requires_grad=True)
    with pytest.raises(TypeError, match="got keepdim without dim"):
        x.sum(keepdim=True)
    # take_along_dim's out= has self's dtype exactly, even for an empty result
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double, but got "
                                           "c10::complex<float> instead"):
        ember.take_along_dim(ember.zeros(0, dtype=ember.float64), ember.zeros(0, dtype=ember.int64),
                             out=ember.zeros(0, dtype=ember.complex64))


def test_checks_and_results_found_by_seed_79():
    # cov with float64 aweights is float64 (torch's in * w promotes), whatever the input's dtype
    x = ember.tensor([[1.0, 2, 4], [3, 1, 0]])
    w = ember.tensor([1, 2, 1.0], dtype=ember.float64)
    c = ember.cov(x, aweights=w)
    assert c.dtype == ember.float64
    xd, wd = x.double().numpy(), w.numpy()
    np.testing.assert_allclose(c.numpy(), np.cov(xd, aweights=wd), rtol=1e-12)
    assert ember.cov(ember.tensor([[1, 2, 4], [3, 1, 0]]), aweights=w).dtype == ember.float64
    # set_(tensor, offset, size, stride) reads the source's storage: it must be contiguous
    with pytest.raises(RuntimeError, match="passed in tensor to be used as storage must be"):
        ember.zeros(0).set_(ember.ones(2, 1).expand(2, 3), 0, (2,), (1,))


def test_checks_found_by_seed_83():
    # as_strided_scatter copies src in, converted into input's dtype (torch's copy_)
    r = ember.as_strided_scatter(ember.zeros(4), ember.ones(2, dtype=ember.float64), [2], [1])
    assert r.dtype == ember.float32 and r.tolist() == [1.0, 1.0, 0.0, 0.0]
    # a sampler's float parameter from a complex 0-d tensor: its real value, or torch's error
    assert ember.zeros(3).uniform_(-2.5, ember.tensor(1 + 0j)).shape == (3,)
    with pytest.raises(RuntimeError, match="value cannot be converted to type double"):
        ember.zeros(3).uniform_(-2.5, ember.tensor(1 + 2j))
    with pytest.raises(RuntimeError, match="value cannot be converted to type double"):
        ember.zeros(3).normal_(0, ember.tensor(1 + 2j))
    # a view with a stride of 0 over more than one element takes no copy (torch's copy_)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.as_strided_scatter(ember.zeros(2, 3), ember.ones(2, 3), [2, 3], (0, 1), 0)


def test_checks_and_results_found_by_seed_97():
    # normal refuses a complex std before it converts std into a real out='s dtype
    with pytest.raises(RuntimeError, match="standard deviation to be non-complex"):
        ember.normal(1.0, ember.ones(2, dtype=ember.complex64), out=ember.zeros(2))
    with pytest.raises(RuntimeError, match="standard deviation to be non-complex"):
        ember.normal(ember.ones(2), ember.ones(2, dtype=ember.complex128), out=ember.zeros(2))
    # into a complex out=, a complex draw scaled by the real std (and shifted by the mean)
    mean, std = ember.tensor([1.0, -2.0, 0.5]), ember.tensor([2.0, 0.5, 3.0])
    ember.manual_seed(5)
    z = ember.empty(3, dtype=ember.complex64).normal_()
    ember.manual_seed(5)
    got = ember.normal(mean, std, out=ember.empty(0, dtype=ember.complex64))
    assert ember.allclose(got, mean + std * z)
    ember.manual_seed(5)
    got = ember.normal(1.0, std, out=ember.empty(0, dtype=ember.complex64))
    assert ember.allclose(got, 1.0 + std * z)
    ember.manual_seed(5)
    got = ember.normal(mean, 2.0, out=ember.empty(0, dtype=ember.complex64))
    assert got.dtype == ember.complex64 and ember.allclose(got, mean + 2.0 * z)
    # tensor(): the dtype is inferred (its errors) before pin_memory is looked at, the elements
    # read after it (torch's order)
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match="Could not infer dtype of dict"):
            ember.tensor({}, pin_memory=True)
        for data, kw in (({}, dict(dtype=ember.int8)), ([[1], [1, 2]], {}), (2**70, {})):
            with pytest.raises(RuntimeError, match="pin_memory"):
                ember.tensor(data, pin_memory=True, **kw)


def test_checks_and_results_found_by_seed_101():
    # lerp: a 0-d weight tensor takes part in type promotion as a 0-d tensor does (no wider
    # kind from a float64 one; a complex one makes the result complex)
    a, b = ember.tensor([1.0, 2.0]), ember.tensor([5.0, -3.0])
    r = ember.lerp(a, b, ember.tensor(3))
    assert r.dtype == ember.float32 and r.tolist() == [13.0, -13.0]
    r = ember.lerp(a, b, ember.tensor(3 + 1j))
    assert r.dtype == ember.complex64 and r.tolist() == [13 + 4j, -13 - 5j]
    assert ember.lerp(a, b, ember.tensor(0.25, dtype=ember.float64)).dtype == ember.float32
    with pytest.raises(RuntimeError, match="expected dtype double for `weight`"):
        ember.lerp(a.double(), b.double(), ember.tensor([3]))  # (not 0-d: the same dtype)
    with pytest.raises(RuntimeError, match="ComplexFloat can't be cast to the desired output"):
        a.clone().lerp_(b, ember.tensor(1j))
    # cov of complex values with weights: the weights and the normalisation stay real
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        c = ember.tensor([1 + 2j, 3 - 1j]).cov(correction=2, aweights=ember.tensor([1.0, 2.0]))
    assert c.dtype == ember.complex64
    c = ember.tensor([1 + 2j, 3 - 1j]).cov(correction=1, aweights=ember.tensor([1.0, 2.0]))
    assert c.item() == pytest.approx(6.5)  # sum w|x - avg|^2 / (sum w - sum w^2 / sum w)
    # arange of a complex number with an imaginary part: torch's checked conversion
    with pytest.raises(RuntimeError, match="value cannot be converted to type double"):
        ember.arange(ember.tensor(3 + 1j))
    assert ember.arange(3 + 0j).tolist() == [0.0, 1.0, 2.0]
    # searchsorted/bucketize compare in the common dtype (a number as a wrapped one)
    assert ember.searchsorted(ember.tensor([1.0, float("inf")]), 1e300, right=True).item() == 2
    assert ember.bucketize(1.0000000001, ember.tensor([1.0, 3.0])).item() == 0
    u8 = ember.tensor([1, 3, 200], dtype=ember.uint8)
    assert ember.searchsorted(u8, -1).item() == 3  # -1 is 255 among uint8 boundaries
    assert ember.searchsorted(u8, ember.tensor([-1, 2])).tolist() == [0, 1]  # int64 values


def test_checks_and_results_found_by_seed_103():
    # a p of NaN is no non-negative p
    with pytest.raises(RuntimeError, match="pdist only supports non-negative p values"):
        ember.pdist(ember.ones(4, 4), float("nan"))
    with pytest.raises(RuntimeError, match="cdist only supports non-negative p values"):
        ember.cdist(ember.ones(4, 4), ember.ones(4, 4), float("nan"))
    # repeat/tile into no elements copies nothing (the expanded view's strides overflowed)
    assert ember.zeros(2, 0, dtype=ember.int32).tile(2**63 - 1).shape == (2, 0)
    assert ember.zeros(2, 0).repeat(1, 2**62).shape == (2, 0)
    x = ember.zeros(2, 0, requires_grad=True)
    y = x.repeat(3, 1)
    assert y.shape == (6, 0) and y.requires_grad and y.is_contiguous()
    # a size beyond int64 wraps as torch's int64 product and is refused
    with pytest.raises(RuntimeError, match="cannot be represented as a SymInt"):
        ember.zeros(2, 0).repeat(2**62, 1)


def test_checks_and_results_found_by_seed_107():
    # an int64 arange truncates its bounds and step to int64 first, as torch's
    assert ember.arange(0, 5, 1.5, dtype=ember.int64).tolist() == [0, 1, 2, 3, 4]
    assert ember.arange(0, 7, 2.9, dtype=ember.int64).tolist() == [0, 2, 4, 6]
    assert ember.arange(7, 0, -2.9, dtype=ember.int64).tolist() == [7, 5, 3, 1]
    with pytest.raises(ValueError, match="step must be nonzero"):  # 0.5 is a zero step
        ember.arange(-1, 1, 0.5, out=ember.zeros(4, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent"):
        ember.arange(5, 0, 1.5, dtype=ember.int64)
    # combinations with r beyond the length: the empty result, at once for any r
    assert ember.combinations(ember.ones(3), 2**62).shape == (0, 2**62)
    with pytest.raises(RuntimeError, match="more than this machine's memory"):
        ember.combinations(ember.ones(3), 2**20, with_replacement=True)


def test_checks_and_results_found_by_seed_109():
    # as_strided_scatter checks the view as as_strided does first, then src's size
    x = ember.zeros(6)
    with pytest.raises(RuntimeError, match="Negative strides are not supported"):
        x.as_strided_scatter(ember.zeros(3), [2], [-1])
    with pytest.raises(RuntimeError, match="invalid storage offset -1"):
        x.as_strided_scatter(ember.zeros(3), [2], [1], -1)
    with pytest.raises(RuntimeError, match="mismatch in length of strides and shape"):
        x.as_strided_scatter(ember.zeros(3), [2, 2], [1], -1)
    with pytest.raises(RuntimeError, match="requiring a storage size of 44 are out of bounds for "
                                           "storage of size 24"):
        x.as_strided_scatter(ember.zeros(3), [2], [10])
    # var/std compute in a floating out='s dtype (a float64 variance of bfloat16 values)
    b = ((ember.arange(8) % 5 - 2) * 0.5).to(ember.bfloat16)
    got = ember.var(b, 0, out=ember.zeros((), dtype=ember.float64)).item()
    want = np.var(((np.arange(8) % 5 - 2) * 0.5), ddof=1)
    assert got == pytest.approx(want, rel=1e-12)
    # log_softmax is (x - max) - log(sum): a large max does not round the shift away
    r = ember.log_softmax(ember.tensor([65504.0, 65504.0]), 0)
    assert r.tolist() == pytest.approx([-math.log(2)] * 2, rel=1e-7)
    r = ember.log_softmax(ember.tensor([[65504.0], [65504.0]]).expand(2, 3).contiguous(), 0)
    assert r[:, 0].tolist() == pytest.approx([-math.log(2)] * 2, rel=1e-7)
    # normal of an empty std runs no kernel: an empty result of std's dtype; its mean is still
    # converted into that dtype checked, as torch's add_(mean)
    assert ember.normal(3, ember.tensor([], dtype=ember.int64)).dtype == ember.int64
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t"):
        ember.normal(300.0, ember.zeros(0, dtype=ember.int8))
    with pytest.raises(RuntimeError, match="value cannot be converted to type float"):
        ember.normal(1e300, ember.ones(2))
    assert ember.normal(1e300, ember.zeros(0, dtype=ember.float16)).dtype == ember.float16


def test_checks_found_by_seed_113():
    # narrow's Tensor start: a 0-d integer tensor, or torch's RuntimeError
    x = ember.ones(2, 3)
    assert x.narrow(-1, ember.tensor(1), 2).shape == (2, 2)
    for start in (ember.tensor([1]), ember.tensor(1.0), ember.tensor(True)):
        with pytest.raises(RuntimeError, match="start must be an 0-dim integral Tensor"):
            x.narrow(-1, start, 0)
    # a repeat count whose product overflows int64 (even to 0) is refused
    with pytest.raises(RuntimeError, match="overflow"):
        ember.zeros(4, 4).tile(-(2**62))


def test_results_found_by_seed_127():
    # sum_to_size to no dims is the whole sum, as torch's sum_to (a 0-d bool gives int64 1)
    r = ember.ones((), dtype=ember.bool).sum_to_size([])
    assert r.dtype == ember.int64 and r.item() == 1
    assert ember.ones(3, dtype=ember.bool).sum_to_size([3]).dtype == ember.bool  # (no sum)


def test_checks_and_results_found_by_seed_131():
    # index_add converts alpha into the tensor's dtype, checked, as torch's alpha.to<scalar_t>()
    src, idx = ember.tensor([3, 3]), ember.tensor([0, 1])
    assert ember.zeros(3, dtype=ember.int64).index_add(0, idx, src, alpha=1.5).tolist() == [3, 3, 0]
    z = ember.zeros(3, dtype=ember.complex128).index_add(0, idx, src.to(ember.complex128), alpha=0.5)
    assert z.tolist() == [1.5, 1.5, 0]
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t"):
        ember.zeros(3, dtype=ember.uint8).index_add(0, idx, src.to(ember.uint8), alpha=300)
    with pytest.raises(RuntimeError, match="value cannot be converted to type float"):
        ember.zeros(3).index_add(0, idx, src.float(), alpha=1e300)
    # an output_size of -2**63 is a size like any other (it was the "not given" sentinel)
    with pytest.raises(RuntimeError, match="Invalid output_size, expected 12 but got -9223372036"):
        ember.repeat_interleave(ember.ones(2, 3), 2, output_size=-(2**63))
    with pytest.raises(RuntimeError, match="Invalid output_size, expected 3 but got -9223372036"):
        ember.repeat_interleave(ember.tensor([1, 2]), output_size=-(2**63))


def test_checks_and_results_found_by_seeds_137_and_139():
    # tensordot: a contracted dim of size 1 broadcasts against the other side's (torch's)
    a, b = np.arange(6.0).reshape(2, 3), np.arange(3.0).reshape(1, 3)
    got = ember.tensordot(ember.tensor(a), ember.tensor(b), dims=([0, 1], [0, 1]))
    assert got.item() == (a * b).sum()  # b broadcast over a's first dim: 19
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        ember.tensordot(ember.ones(2, 3), ember.ones(3, 2), dims=([0], [0]))
    # unravel_index into a shape whose size exceeds int64: every index is in range
    rows, cols = ember.unravel_index(ember.tensor([3, -1], dtype=ember.int16), [2**62, 4])
    assert rows.tolist() == [0, 2**62 - 1] and cols.tolist() == [3, 3]
    # tensor_split's list: its first element picks the overload, the rest must be ints
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        ember.tensor_split(ember.ones(3, 2), [1.5, "a"])
    with pytest.raises(TypeError, match="failed to unpack the object at pos 2"):
        ember.tensor_split(ember.ones(3, 2), [1, "a"])


def test_checks_found_by_seed_149():
    # normal(number, std) of an empty uint16-64 std: torch's add of the mean refuses the type
    # before the empty result is returned; the other integer types give their empty result
    for dt in (ember.uint16, ember.uint32, ember.uint64):
        with pytest.raises(NotImplementedError, match="\"add_stub\" not implemented for"):
            ember.normal(0.5, ember.ones(0, dtype=dt))
        with pytest.raises(NotImplementedError):
            ember.normal(0.5, ember.ones(3, dtype=dt))
    assert ember.normal(0.5, ember.ones(0, dtype=ember.int64)).dtype == ember.int64
    # combinations beyond the input's length: the empty (0, r) result, whatever r
    assert ember.combinations(ember.zeros(3), 1000).shape == (0, 1000)
    assert ember.combinations(ember.zeros(0), 2**63 - 1).shape == (0, 2**63 - 1)


def test_checks_found_by_seed_151():
    # norm: a string order other than "fro" goes to matrix_norm, whose dims cannot be a tensor
    x = ember.zeros(1, 4, 1)
    with pytest.raises(TypeError, match="linalg_matrix_norm\\(\\) received an invalid combination"):
        x.norm("abc", ember.tensor([1]))
    with pytest.raises(TypeError, match="linalg_matrix_norm\\(\\) received an invalid combination"):
        x.norm("nuc", ember.tensor([1]), dtype=ember.float64)
    assert x.norm("fro", ember.tensor([1])).shape == (1, 1)
    with pytest.raises(RuntimeError, match="Order abc not supported"):
        x.norm("abc", [0, 1])
    # gradient: torch's order of checks (spacing, the dims as a set, each dim against the shape)
    with pytest.raises(IndexError, match="Dimension specified as -1 but tensor has no dimensions"):
        ember.gradient(ember.tensor(1.0), dim=-1)
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        ember.gradient(ember.tensor(True), dim=0)
    assert ember.gradient(ember.tensor(True)) == ()
    with pytest.raises(RuntimeError, match="dim 1 appears multiple times in the list of dims"):
        ember.gradient(ember.ones(3, 3), dim=[1, -1])
    with pytest.raises(RuntimeError, match="same length"):
        ember.gradient(ember.ones(3), dim=5, spacing=[1.0, 2.0])
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.gradient(ember.ones(3, dtype=ember.bool), dim=5)


def test_checks_and_results_found_by_seed_163():
    # addr multiplies in the result's dtype: real vectors with a complex input give complex
    # products, so inf * (x + 0j) has a NaN imaginary part (0 * inf), as torch's kernel
    got = ember.addr(ember.zeros(1, 2, dtype=ember.complex128), ember.tensor([2.0]),
                     ember.tensor([float("inf"), 1.0]))
    assert math.isinf(got[0, 0].real) and math.isnan(got[0, 0].imag)
    assert got[0, 1].item() == 2 + 0j
    # threshold's 0-d tensor numbers are checked like Python numbers
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t"):
        ember.threshold(ember.tensor(3, dtype=ember.uint8), ember.tensor(-2.5), 1)
    assert ember.threshold(ember.tensor([3, 1], dtype=ember.uint8), ember.tensor(2),
                           ember.tensor(7)).tolist() == [3, 7]
    # tensordot of uint16-64: torch's products and sums have no kernel for them
    for dt in (ember.uint16, ember.uint32, ember.uint64):
        a = ember.arange(4).reshape(1, 4, 1).to(dt)
        with pytest.raises(NotImplementedError, match="not implemented for 'UInt"):
            ember.tensordot(a, a)
    # lobpcg: a bool k or n reaches torch's zeros() of the initial guesses
    with pytest.raises(TypeError, match="found element of type bool"):
        ember.lobpcg(ember.eye(12, dtype=ember.float64), True)


def test_checks_found_by_seed_167():
    # fill_diagonal_: a 0-d tensor is its number (written in self's dtype), and the diagonal is
    # filled through one strided view, as torch's, so an expanded self is written too
    x = ember.zeros(1, dtype=ember.int32).unsqueeze(0).expand(2, 1)
    assert x.fill_diagonal_(ember.tensor(2, dtype=ember.int64)).tolist() == [[2], [2]]
    assert ember.zeros(2, 2, dtype=ember.int64).fill_diagonal_(
        ember.tensor(2.5, dtype=ember.float64)).tolist() == [[2, 0], [0, 2]]
    for rows, cols in ((7, 3), (8, 3), (9, 2), (3, 7), (5, 1)):
        want = np.zeros((rows, cols))
        for r in range(rows):  # torch's wrap: the diagonal starts again every cols + 1 rows
            if r % (cols + 1) < cols:
                want[r, r % (cols + 1)] = 1
        if rows <= cols + 1:
            want = np.eye(rows, cols)
        got = ember.zeros(rows, cols).fill_diagonal_(1, wrap=True).numpy()
        np.testing.assert_array_equal(got, want)
    sub = ember.zeros(5, 6)[1:, 1:]  # an offset, non-contiguous self
    np.testing.assert_array_equal(sub.fill_diagonal_(2).numpy(), 2 * np.eye(4, 5))
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t"):
        ember.zeros(2, 2, dtype=ember.uint8).fill_diagonal_(300)


def test_checks_found_by_seed_173():
    # frobenius_norm takes at most two dims (torch's check, before the dims are wrapped)
    x = ember.ones(2, 3, 4)
    with pytest.raises(RuntimeError, match="Expected at most 2 dimensions, but got 3 dimensions"):
        ember.frobenius_norm(x, dim=(1, 2, 0))
    assert ember.frobenius_norm(x, dim=(1, 2)).tolist() == pytest.approx([math.sqrt(12)] * 2)
    assert ember.frobenius_norm(x, dim=()).item() == pytest.approx(math.sqrt(24))


def test_checks_found_by_seeds_181_and_191():
    # mean without dim into out= is torch's mean.dtype_out, dtype= given or not: the input
    # must cast into out's dtype (complex into float64 is refused); with a dim it is mean.out
    z = (ember.arange(6) * (1 - 0.5j)).reshape(2, 3).to(ember.complex64)
    with pytest.raises(RuntimeError, match="mean.dtype_out\\(\\): input types can't be cast"):
        ember.mean(z, dtype=ember.float64, out=ember.zeros((), dtype=ember.float64))
    out = ember.zeros(3, dtype=ember.float64)
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        ember.mean(z, 0, dtype=ember.float64, out=out)
    np.testing.assert_allclose(out.numpy(), [1.5, 2.5, 3.5])
    got = ember.mean(z, dtype=ember.complex128, out=ember.zeros((), dtype=ember.complex128))
    assert got.item() == pytest.approx(2.5 - 1.25j)


def test_checks_found_by_seed_197():
    # tensor(): a string as the data is refused before the pinned allocation, whatever the
    # dtype; one on the first elements' path is torch's "too many dimensions"
    for dt in (None, ember.int32):
        for pin in (False, True):
            with pytest.raises(TypeError, match="new\\(\\): invalid data type 'str'"):
                ember.tensor("", dtype=dt, pin_memory=pin)
            with pytest.raises(ValueError, match="too many dimensions 'str'"):
                ember.tensor(["a"], dtype=dt, pin_memory=pin)
    with pytest.raises(TypeError, match="new\\(\\): invalid data type 'str'"):
        ember.tensor([1, "a"])
    # normal into an integer or bool out=: torch's floating-only kernel; an empty draw reaches
    # the mean's conversion and the product with std
    with pytest.raises(NotImplementedError, match="normal_kernel_cpu. not implemented for 'Int'"):
        ember.normal(0.5, ember.ones(3), out=ember.zeros(3, dtype=ember.int32))
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        ember.normal(ember.ones(2), 1.0, out=ember.zeros(2, dtype=ember.bool))
    with pytest.raises(RuntimeError, match="value cannot be converted to type int without"):
        ember.normal(1e300, ember.ones(0, dtype=ember.float16),
                     out=ember.zeros(0, dtype=ember.int32))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output"):
        ember.normal(0.5, ember.ones(0), out=ember.zeros(0, dtype=ember.int32))
    assert ember.normal(0.5, ember.ones(2), out=ember.zeros(2, dtype=ember.float64)).dtype == \
        ember.float64


def test_checks_found_by_seed_199():
    # repeat_interleave: one repeat is broadcast along dim before its sign is checked, as
    # torch's, so a negative one repeating an empty dim is never read
    empty = ember.zeros(2, 0, 3, dtype=ember.uint8)
    assert ember.repeat_interleave(empty, ember.tensor(-6)).shape == (0,)
    assert ember.repeat_interleave(empty, ember.tensor([-6]), dim=1).shape == (2, 0, 3)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        ember.repeat_interleave(empty, ember.tensor(-6), dim=0)
    with pytest.raises(RuntimeError, match="repeats must have the same size as input along dim"):
        ember.repeat_interleave(ember.ones(3), ember.tensor([-1, 2]))


def test_checks_found_by_seed_211():
    # addcmul/addcdiv's value: a 0-d tensor is its number, a complex one with a nonzero
    # imaginary part cannot become a real computation's float (torch's error), one with zero
    # imaginary part is its real part
    x, t1, t2 = ember.ones(2), ember.ones(2), 2 * ember.ones(2)
    for v in (1 + 1j, ember.tensor(1 + 1j)):
        with pytest.raises(RuntimeError, match="value cannot be converted to type float"):
            x.addcdiv(t1, t2, value=v)
    assert x.addcmul(t1, t2, value=1 + 0j).tolist() == [3.0, 3.0]
    assert x.addcdiv(t1, t2, value=ember.tensor(2.0)).tolist() == [2.0, 2.0]
    z = ember.ones(2, dtype=ember.complex64)
    assert z.addcmul(t1, t1, value=1 + 2j).tolist() == [2 + 2j, 2 + 2j]


def test_checks_and_results_found_by_seed_229():
    # celu of a 16-bit float computes x / alpha in float32, as torch's opmath: with a huge
    # alpha the quotient is below float16's range, and celu(x) is x, not -0
    y = ember.tensor([[-5.0], [-3.0], [2.0]], dtype=ember.float16)
    assert ember.celu(y, -2147483649).tolist() == [[-5.0], [-3.0], [2.0]]
    assert ember.celu_(y.clone(), -2147483649).tolist() == [[-5.0], [-3.0], [2.0]]
    np.testing.assert_allclose(ember.celu(y.bfloat16(), 0.5).float().numpy().ravel(),
                               [-0.5, -0.498046875, 2.0])
    # histogramdd of points with no coordinates: torch's 0-d histogram that counts nothing
    r = ember.histogramdd(ember.zeros(2, 0), 3)
    assert r.hist.shape == () and r.hist.item() == 0 and r.bin_edges == ()
    assert math.isnan(ember.histogramdd(ember.zeros(2, 0), -1, density=True).hist.item())


def test_checks_found_by_seed_233():
    # hardshrink's lambd: a 0-d tensor is its number (a uint64 one was negated as a tensor)
    x = ember.tensor([-1.0, 0.25, 3.0], dtype=ember.float64)
    assert ember.hardshrink(x, ember.tensor(0, dtype=ember.uint64)).tolist() == [-1.0, 0.25, 3.0]
    assert ember.hardshrink(x, ember.tensor(0.5)).tolist() == [-1.0, 0.0, 3.0]


def test_checks_found_by_seeds_239_and_241():
    # inner of uint16-64: torch's dot (two vectors) or matrix product, even an empty one
    for dt, name in ((ember.uint16, "UInt16"), (ember.uint64, "UInt64")):
        with pytest.raises(NotImplementedError, match=f"\"dot\" not implemented for '{name}'"):
            ember.ones(0, dtype=dt).inner(ember.ones(0, dtype=dt))
        with pytest.raises(NotImplementedError, match="\"addmm_impl_cpu_\" not implemented"):
            ember.ones(2, 2, dtype=dt).inner(ember.ones(3, 2, dtype=dt))
    # cosine_similarity: a NaN eps is not non-negative
    with pytest.raises(RuntimeError, match="eps must be non-negative, got: nan"):
        ember.cosine_similarity(ember.ones(3, 1), ember.ones(3, 1), eps=float("nan"))


def test_checks_found_by_seeds_251_and_257():
    # an expanded out= is refused before it is resized (torch's iterator) by conj_physical
    # and normal too
    for call in (lambda o: ember.conj_physical(ember.ones(0), out=o),
                 lambda o: ember.normal(ember.ones(4, 4), out=o)):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            call(ember.zeros(1, 4).expand(4, 4))
    # inner of uint16 matrices with an empty product returns, as torch's mm
    got = ember.ones(2, 3, dtype=ember.uint16).inner(ember.ones(2, 2, 0, 3, dtype=ember.uint16))
    assert got.shape == (2, 2, 2, 0)
    # mvlgamma of an empty input sums no terms but still makes p's shifts (untouched), as torch
    assert ember.ones(2, 0, 3, dtype=ember.float16).mvlgamma(p=2**31).shape == (2, 0, 3)
    with pytest.raises(RuntimeError, match="overflow"):
        ember.ones(0, dtype=ember.int16).mvlgamma(2**63 - 1)



def test_checks_and_results_found_by_seeds_263_and_269():
    # set_: storage_offset and size are not optional in torch's forms; None for either is a
    # TypeError, not an absent argument
    x, src = ember.zeros(2), ember.ones(3)
    for args in ((src, None), (src, 0, None), (src, None, [1]), (src.untyped_storage(), 0)):
        with pytest.raises(TypeError, match="invalid combination of arguments"):
            x.set_(*args)
    assert x.set_(src, 1, [2]).tolist() == [1.0, 1.0] and x.set_(src).shape == (3,)
    # normalisation statistics: the input's dtype, bfloat16 too, unless float32 parameters make
    # the call mixed (hand-checked against torch's CPU kernels)
    for dt in (ember.bfloat16, ember.float16):
        h = ember.tensor([[1.0, 2.0], [4.0, 8.0]], dtype=dt)
        _, mean, rstd = ember.native_layer_norm(h, [2], None, None, 1e-5)
        assert mean.dtype == rstd.dtype == dt and mean.float().ravel().tolist() == [1.5, 6.0]
        _, mean, rstd = ember.native_layer_norm(h, [2], ember.ones(2), None, 1e-5)
        assert mean.dtype == rstd.dtype == ember.float32
        np.testing.assert_allclose(rstd.ravel().numpy(), [2.0, 0.5], rtol=1e-4)
        hb = h.reshape(2, 2, 1)
        _, mean, invstd = ember.native_batch_norm(hb, None, None, None, None, True, 0.1, 1e-5)
        assert mean.dtype == invstd.dtype == dt and mean.float().tolist() == [2.5, 5.0]
        _, mean, invstd = ember.native_batch_norm(hb, ember.ones(2), None, None, None, True, 0.1,
                                                  1e-5)
        assert mean.dtype == invstd.dtype == ember.float32


def test_results_found_by_seeds_271_and_277():
    # as_strided_scatter of an expanded input: its copy is a plain contiguous one (torch's
    # clone_preserve_strides), so writing one element does not write the whole broadcast column
    e = ember.arange(3.0).reshape(3, 1).expand(3, 2)
    got = e.as_strided_scatter(ember.tensor([9.0]), [1], [1], 1)
    assert got.tolist() == [[0.0, 9.0], [1.0, 1.0], [2.0, 2.0]] and got.is_contiguous()
    # other layouts keep their strides and storage offset (gaps and offsets as torch's)
    z = ember.arange(6.0)[2:]
    assert z.as_strided_scatter(ember.tensor([9.0]), [1], [1]).tolist() == [9.0, 3.0, 4.0, 5.0]
    t = ember.arange(6.0).reshape(2, 3).t()
    assert t.as_strided_scatter(ember.tensor([9.0]), [1], [1]).tolist() == [[9, 3], [1, 4], [2, 5]]


def test_checks_and_results_found_by_seeds_281_and_283():
    # isin of uint16-64 (no searchsorted for them): compared in their order, against NumPy
    rng = np.random.default_rng(281)
    for dt in ("uint16", "uint32", "uint64"):
        top = np.iinfo(dt).max
        a = np.concatenate([rng.integers(0, top, 40, dtype=dt, endpoint=True),
                            np.array([0, top, 2**15, 2**15 + 1], dtype=dt)])
        b = np.concatenate([rng.choice(a, 8), rng.integers(0, top, 12, dtype=dt),
                            np.array([0, top, 2**15, 7], dtype=dt)])
        got = ember.isin(ember.tensor(a), ember.tensor(b).reshape(4, 6).t())
        np.testing.assert_array_equal(got.numpy(), np.isin(a, b))
        # (few test elements: torch's brute-force kernel, which has none of these dtypes)
        with pytest.raises(NotImplementedError, match="\"isin_default_cpu\" not implemented"):
            ember.isin(ember.tensor(a), ember.tensor(b[:10]))
        assert ember.isin(ember.tensor(a[:0]), ember.tensor(b[:1])).shape == (0,)
    # ldexp of a complex input by a 0-d floating exponent: the power in the input's dtype
    e = ember.tensor(-2.3, dtype=ember.float16)
    got = ember.tensor([-3.75], dtype=ember.complex128).ldexp(e)
    assert got.dtype == ember.complex128
    assert got.item() == pytest.approx(-3.75 * 2.0 ** float(np.float16(-2.3)), rel=1e-15)
    # unravel_index: indices that are neither a tensor nor ints are a TypeError
    with pytest.raises(TypeError, match="argument 'indices' must be Tensor, not dtype"):
        ember.unravel_index(ember.complex64, -1)
    assert [t.tolist() for t in ember.unravel_index([5, 1], (2, 3))] == [[1, 0], [2, 1]]


def test_checks_and_results_found_by_seeds_311_and_313():
    # addr as torch's kernel computes it: alpha * vec1 * vec2 + beta * self in the result dtype,
    # complex products even by 1 (an infinite self gets a NaN imaginary part, hand-computed:
    # (1 + 0j) * (inf + 0j) = inf + (1 * 0 + 0 * inf)j), and the product alone for beta = 0
    inf = math.inf
    x = ember.tensor([inf, 1.5], dtype=ember.float16)
    got = x.addr(ember.tensor([1], dtype=ember.uint8), ember.tensor([2j, -1 + 0j]))
    assert got.dtype == ember.complex64
    assert got[0, 0].real.item() == inf and math.isnan(got[0, 0].imag.item())
    assert got[0, 1].item() == 0.5 + 0j
    z = ember.zeros(2).addr(ember.tensor([0.0]), ember.tensor([-1.0, 1.0]), beta=0)
    assert [math.copysign(1, v) for v in z[0].tolist()] == [-1, 1]  # 0 * -1 keeps its sign
    # its scalars' checks (torch's check_addr_scalar), beta's first
    i = ember.ones(2, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="argument beta must not be a floating point"):
        i.addr(i, i, beta=0.5, alpha=0.5)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        ember.ones(2).addr(ember.ones(2), ember.ones(2), alpha=True)
    # bool: beta && self || alpha && vec1 && vec2
    b = ember.tensor([True, False])
    assert b.addr(b, b, alpha=-1).tolist() == [[True, False], [True, False]]
    assert b.addr(b, b, beta=False, alpha=0).tolist() == [[False, False], [False, False]]


def test_results_found_by_seeds_317_and_331():
    # cov with weights computes as torch's: the weights' sums in their own dtype, the products
    # with the input promoted (an integer input with float16 aweights gives a float16 cov)
    x = ember.tensor([-5, -4, -3], dtype=ember.int16)
    w = ember.tensor([3.75, 3.0, 2.25], dtype=ember.float16)
    got = x.cov(correction=2, aweights=w)
    assert got.dtype == ember.float16
    want = np.cov([-5.0, -4.0, -3.0], aweights=[3.75, 3.0, 2.25], ddof=2)
    assert got.item() == pytest.approx(want, rel=2e-3)  # (float16 arithmetic)
    assert x.cov(fweights=ember.tensor([1, 2, 3])).dtype == ember.float32  # (integers: default)


def test_checks_found_by_seed_347():
    # vander of uint16-64: torch's promotion with its int64 powers refuses them (before any
    # allocation: N = 2**31 ran out of memory)
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types"):
        ember.vander(ember.tensor([1], dtype=ember.uint16), 2**31)
    # finfo() is the default dtype's; finfo(None) and iinfo(None) are TypeErrors, as torch's
    assert ember.finfo().eps == ember.finfo(ember.get_default_dtype()).eps
    for info in (ember.finfo, ember.iinfo):
        with pytest.raises(TypeError, match="must be torch.dtype, not NoneType"):
            info(None)


def test_results_found_by_seed_367():
    # tensordot's broadcast of a contracted size-1 dim sums the other side in its own dtype
    a = ember.tensor([-5, -4, -3, -2], dtype=ember.int16).reshape(1, 4, 1)
    got = ember.tensordot(a, a)  # (4, 1) against (1, 4): each side's 4 summed first
    assert got.dtype == ember.int16 and got.tolist() == [[(-14) * (-14)]]


def test_checks_found_by_seed_373():
    # take/put of uint16-64: torch's kernels have none (after the index checks and an empty
    # index's early return, before the bounds)
    u = ember.arange(6).to(ember.uint16)
    with pytest.raises(NotImplementedError, match="\"take_cpu\" not implemented for 'UInt16'"):
        u.take(ember.tensor([100]))
    for call in (lambda: u.put(ember.tensor([100]), u[:1]), lambda: u[0].put(ember.tensor([0]), u[:1])):
        with pytest.raises(NotImplementedError, match="\"take_put_cpu\" not implemented"):
            call()
    assert u.take(ember.tensor([], dtype=ember.int64)).shape == (0,)
    assert u.put(ember.tensor([], dtype=ember.int64), u[:0]).tolist() == list(range(6))
    with pytest.raises(RuntimeError, match="Expected a long tensor for index"):
        u.take(ember.tensor([1], dtype=ember.int32))


def test_checks_found_by_seeds_431_and_433():
    # a fill of one float16 element converts a Python int unchecked too (beyond the range: inf),
    # as torch's scalar_fill; a fill of more elements refuses it
    h = ember.zeros((), dtype=ember.float16)
    assert ember.full_like(h, -2**62).item() == -math.inf
    assert ember.full((1,), 70000, dtype=ember.float16).item() == math.inf
    with pytest.raises(RuntimeError, match="value cannot be converted to type c10::Half"):
        ember.full((3,), 70000, dtype=ember.float16)
    # bool matrix products: an empty product returns (zeros) as torch's, a nonempty one and a
    # dot of bool vectors are refused; addmm's c * beta refuses an int beta for bool
    b = lambda *s: ember.zeros(s, dtype=ember.bool)  # noqa: E731
    assert ember.inner(b(2, 0), b(3, 0)).tolist() == [[False] * 3] * 2
    assert ember.mm(b(2, 0), b(0, 3)).shape == (2, 3) and ember.bmm(b(0, 2, 2), b(0, 2, 3)).shape == (0, 2, 3)
    assert ember.addmv(b(2), b(2, 0), b(0)).tolist() == [False, False]
    for call, kernel in ((lambda: ember.mm(b(2, 2), b(2, 2)), "addmm_impl_cpu_"),
                         (lambda: ember.inner(b(0), b(0)), "dot"), (lambda: ember.vdot(b(0), b(0)), "dot")):
        with pytest.raises(NotImplementedError, match=f"\"{kernel}\" not implemented for 'Bool'"):
            call()
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired output type Bool"):
        ember.addmm(b(2, 3), b(2, 0), b(0, 3))
    assert ember.addmm(b(2, 3), b(2, 0), b(0, 3), beta=True, alpha=True).shape == (2, 3)
    # scatter/gather/index_fill/index_copy of uint16-64: torch's kernels have none
    u = ember.arange(4).reshape(1, 4, 1).to(ember.uint16)
    i = ember.tensor([[[9]]])
    for call, kernel in ((lambda: u.scatter(1, i, 2), "scatter_gather_scalar_cpu"),
                         (lambda: u.gather(1, i), "scatter_gather_tensor_cpu"),
                         (lambda: u.scatter_add(1, i, u[:, :1]), "scatter_gather_tensor_cpu"),
                         (lambda: u.index_fill(1, ember.tensor([], dtype=ember.int64), 3), "index_fill_cpu"),
                         (lambda: u.index_copy(1, ember.tensor([0]), u[:, :1]), "index_copy_cpu")):
        with pytest.raises(NotImplementedError, match=f"\"{kernel}\" not implemented"):
            call()
    assert u.gather(1, ember.zeros(1, 0, 1, dtype=ember.int64)).shape == (1, 0, 1)


def test_checks_and_results_found_by_seed_443():
    # addcmul computes in the three operands' common dtype (a 0-d factor does not promote an
    # integer input's category: uint8 with bool and a 0-d int8 stays uint8, wrapping in it)
    x = ember.tensor([200, 3], dtype=ember.uint8)
    got = x.addcmul(ember.tensor([True, False]), ember.tensor(-2, dtype=ember.int8), value=3)
    assert got.dtype == ember.uint8 and got.tolist() == [(200 + 3 * 254) % 256, 3]
    assert ember.addcmul(ember.tensor(1), ember.ones(2, dtype=ember.int8),
                         ember.ones(2, dtype=ember.int8)).dtype == ember.int8
    # the legacy Tensor(*sizes): after the first size a bool is an int, as torch's parser
    assert ember.Tensor(2, True).shape == (2, 1) and ember.Tensor(3, True, 0).shape == (3, 1, 0)
    with pytest.raises(TypeError, match="data must be a sequence"):
        ember.Tensor(True)


def test_checks_found_by_seed_463():
    # trapz's dx is a float: True is 1.0 there (trapezoid's Scalar dx refuses a bool, as torch's)
    y = ember.tensor([1.0, 2.0, 4.0])
    assert ember.trapz(y, dx=True).item() == 4.5
    with pytest.raises(RuntimeError, match="we only support dx as a real number"):
        ember.trapezoid(y, dx=True)


def test_isin_found_by_seed_491():
    # a Python number is torch's wrapped number (float64/int64): with few test elements it is
    # compared in the test elements' dtype (1e300 is bfloat16's inf), with many (the sorted
    # path) in the promoted dtype (float64: not inf)
    inf, nan = float("inf"), float("nan")
    assert ember.isin(1e300, ember.tensor([inf, 1.5], dtype=ember.bfloat16)).item()
    assert not ember.isin(1e300, ember.tensor([inf] * 12, dtype=ember.bfloat16)).item()
    assert not ember.isin(1e300, ember.tensor([inf], dtype=ember.float64)).item()
    assert ember.isin(259, ember.tensor([3], dtype=ember.uint8)).item()  # 259 as uint8: 3
    assert not ember.isin(259, ember.tensor([3] * 20, dtype=ember.uint8)).item()
    assert not ember.isin(3.5, ember.tensor([3], dtype=ember.int8)).item()
    # isin(Tensor, Number) is elements == number, in the elements' dtype
    assert ember.isin(ember.tensor([inf], dtype=ember.bfloat16), 1e300).tolist() == [True]
    assert ember.isin(ember.tensor([inf], dtype=ember.float64), 1e300).tolist() == [False]
    assert ember.isin(ember.tensor([3], dtype=ember.uint8), 259).tolist() == [True]
    assert ember.isin(ember.tensor([1.0, 2.0]), 2, invert=True).tolist() == [True, False]
    for bad, name in ((True, "Bool"), (1j, "ComplexDouble")):
        with pytest.raises(RuntimeError, match=f"Unsupported input type .*: {name}"):
            ember.isin(ember.tensor([1.0]), bad)
    # a NaN among the test elements matches nothing and hides nothing
    assert ember.isin(ember.tensor([1.0, nan]), ember.tensor([nan, 1.0])).tolist() == [True, False]
    many = ember.tensor([nan] * 30 + [2.0])
    assert ember.isin(ember.tensor([2.0, 3.0, nan]), many).tolist() == [True, False, False]


def test_checks_found_by_seed_499():
    # set_'s storage_offset and size given as Ellipsis are arguments (torch's TypeError for
    # "(Tensor, ellipsis)"), not the absent ones
    x = ember.zeros(1, dtype=ember.complex64)
    with pytest.raises(TypeError, match=r"got \(Tensor, ellipsis\)"):
        x.set_(ember.zeros(1, dtype=ember.int64), ...)
    with pytest.raises(TypeError, match=r"got \(UntypedStorage, int, ellipsis\)"):
        x.set_(x.untyped_storage(), 0, ...)
    assert x.set_(ember.zeros(4, dtype=ember.complex64), 1, (2,)).shape == (2,)
    # repeat/tile refuse a repeat whose product with the size overflows int64 (torch wraps it)
    with pytest.raises(RuntimeError, match="overflow int64"):
        ember.ones(1, 4, 1).tile(-2**62, 0)


def test_checks_found_by_seeds_563_and_569():
    # where's out= belongs to its (Tensor, Tensor, Tensor) overload only
    c = ember.tensor([True, False])
    for args, name in (((1, ember.zeros(2)), "input"), ((ember.zeros(2), 1), "other")):
        with pytest.raises(TypeError, match=f"argument '{name}' .* must be Tensor, not int"):
            ember.where(c, *args, out=ember.empty(2))
    assert ember.where(c, 1.0, ember.zeros(2)).tolist() == [1.0, 0.0]
    # uniform_'s bounds must be finite values of the dtype (torch's check_uniform_bounds)
    h = ember.zeros(3, dtype=ember.float16)
    with pytest.raises(RuntimeError, match="from is out of bounds for c10::Half"):
        h.uniform_(-2147483649)
    with pytest.raises(RuntimeError, match="to is out of bounds for c10::Half"):
        h.uniform_(0, 1e5)
    with pytest.raises(RuntimeError, match="from is out of bounds for float"):
        ember.zeros(2, dtype=ember.complex64).uniform_(float("nan"), 0)
    assert 0 <= h.uniform_(0, 60000).min().item()
    # ... except for an empty complex tensor, which torch's complex path checks nothing for
    # (seeds 577, 587)
    for bounds in ((0, 1e300), (2, 1), (0, float("nan"))):
        ember.zeros(0, dtype=ember.complex64).uniform_(*bounds)
    with pytest.raises(RuntimeError, match="to is out of bounds for float"):
        ember.zeros(1, dtype=ember.complex64).uniform_(0, 1e300)
    # threshold's value is converted to the dtype (its threshold to the compute type), even for
    # an empty input
    for x in (ember.empty(0, dtype=ember.float16), ember.tensor([1.0, -3.0]).half()):
        with pytest.raises(RuntimeError, match="to type c10::Half without overflow"):
            ember.threshold_(x.clone(), -2, ember.tensor(2421109551515482394))
    assert ember.threshold(ember.tensor([1.0, -3.0]).half(), -2, 60000.0).tolist() == [1.0, 60000.0]


def test_matrix_power_out_found_by_seed_593():
    # torch's linalg_matrix_power: out= must be a dtype the input casts to safely; powers 0 and
    # 1 are copied into it (casting), the others are written by matmul's out= (exact dtype)
    a = ember.tensor([[1, 2], [3, 4]], dtype=ember.uint8)
    out = ember.zeros(2, 7, dtype=ember.int16)
    assert ember.matrix_power(a, 1, out=out) is out
    assert out.dtype == ember.int16 and out.tolist() == [[1, 2], [3, 4]]
    assert ember.matrix_power(a.double(), 0, out=ember.empty(0)).tolist() == [[1, 0], [0, 1]]
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double, but got "
                                           "float"):
        ember.matrix_power(a.double(), 2, out=ember.empty(0))
    with pytest.raises(RuntimeError, match="safely castable from Double dtype, but got result "
                                           "with dtype Short"):
        ember.matrix_power(a.double(), 1, out=out)
    assert ember.matrix_power(a.double().t(), 1).is_contiguous()  # a contiguous copy, as torch
    assert ember.matrix_power(a, 3).tolist() == (
        np.linalg.matrix_power(np.array([[1, 2], [3, 4]], np.uint8), 3).tolist())


def test_addcmul_common_dtype_found_by_seed_599():
    # the input joins the operands' common dtype before the sum, as torch's TensorIterator
    # reads it: a uint16 input of a complex result is not promoted with complex (refused)
    u = ember.tensor([[1, 2, 3]], dtype=ember.uint16)
    f = ember.tensor([[2.0, 4.0, 6.0]])
    r = u.addcmul(f, ember.tensor(1 - 0.5j), value=2)
    assert r.dtype == ember.complex64
    np.testing.assert_allclose(r.numpy(), np.array([[1, 2, 3]]) + 2 * np.array([[2, 4, 6]]) *
                               (1 - 0.5j))
    r = ember.addcdiv(u, f, ember.tensor(2 + 0j), value=3)
    np.testing.assert_allclose(r.numpy(), np.array([[4, 8, 12]], np.complex64))


def test_lu_unpack_of_no_columns_found_by_seed_617():
    # an LU of no columns has no pivots: P is the identity of its rows, for each batch element
    # (a reshape(-1, 0) of the pivots failed)
    for shape, pivots, p_shape in (((2, 0), (0,), (2, 2)), ((3, 2, 0), (3, 0), (3, 2, 2)),
                                   ((0, 3), (0,), (0, 0)), ((0, 2, 2), (0, 2), (0, 2, 2))):
        P, L, U = ember.lu_unpack(ember.zeros(shape, dtype=ember.float64),
                                  ember.ones(pivots, dtype=ember.int32))
        assert tuple(P.shape) == p_shape
        np.testing.assert_array_equal(P.numpy(), np.broadcast_to(np.eye(p_shape[-1]), p_shape))
        assert L.shape[-1] == U.shape[-2] == min(shape[-2:])


def test_cholesky_and_heaviside_out_found_by_seed_631():
    # torch.cholesky's out= takes any dtype the input casts to safely (checked before the
    # factorization) and its errors say "cholesky:", not "linalg.cholesky:"
    A = ember.tensor([[4.0, 1.0], [1.0, 3.0]], dtype=ember.float64)
    expected = np.linalg.cholesky(A.numpy())
    for dtype in (ember.float32, ember.complex128):
        out = ember.zeros(2, 7, dtype=dtype)
        assert ember.cholesky(A, out=out) is out and out.dtype == dtype
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    with pytest.raises(RuntimeError, match="cholesky: Expected result to be safely castable "
                                           "from Double dtype, but got result with dtype UInt32"):
        ember.cholesky(-A, out=ember.zeros(2, dtype=ember.uint32))
    with pytest.raises(ember.linalg.LinAlgError, match=r"^cholesky: \(Batch element 1\)"):
        ember.cholesky(ember.stack([A, -A]))
    # heaviside checks its out= for overlapping elements before resizing it (TensorIterator)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.heaviside(ember.tensor([True]), ember.ones(2, 2, 3, dtype=ember.bool),
                        out=ember.zeros(3, dtype=ember.bool).unsqueeze(0).expand(2, 3))
    out = ember.zeros(5)
    ember.heaviside(ember.tensor([-1.0, 0.0, 2.0]), ember.tensor([0.5]), out=out)
    assert out.tolist() == [0.0, 0.5, 1.0]


def test_multinomial_out_dtype_checked_first_found_by_seed_677():
    # torch checks out='s dtype before drawing: 2**31 samples into a complex out= raised its
    # dtype error, where ember tried to allocate 48 GiB first
    probs = ember.ones(3, 2)
    for dtype, name in ((ember.complex64, "ComplexFloat"), (ember.float32, "Float"),
                        (ember.int32, "Int")):
        with pytest.raises(RuntimeError, match=f"multinomial expects Long tensor out, got: {name}"):
            ember.multinomial(probs, 2**31, True, out=ember.empty(0, dtype=dtype))
    out = ember.empty(0, dtype=ember.int64)
    assert ember.multinomial(probs, 4, True, out=out) is out and out.shape == (3, 4)
    assert ((out >= 0) & (out < 2)).all()
