"""Behaviours the op fuzzer found different from torch's (fuzz_ops.py --torch), each fixed and
checked here against torch 2.13's documented result, written out by hand."""

from __future__ import annotations

import cmath
import math

import fuzz_torch_differences as differences
import pytest

import ember as E


@pytest.mark.parametrize("call,expected,dtype", [
    (lambda: E.add(0.5, other=0.5), 1.0, E.float32),
    (lambda: E.mul(2, 3), 6, E.int64),
    (lambda: E.div(0.5, True), 0.5, E.float32),
    (lambda: E.floor_divide(2, -1), -2, E.int64),
    (lambda: E.sub(5, 2), 3, E.int64),
])
def test_arithmetic_takes_two_numbers_as_torch(call, expected, dtype):
    """torch's parser lets add/sub/mul/div/floor_divide take a number as their tensor."""
    r = call()
    assert isinstance(r, E.Tensor) and r.dim() == 0 and r.dtype == dtype
    assert r.item() == expected


def test_other_ops_still_want_a_tensor():
    with pytest.raises(TypeError, match="atan2"):
        E.atan2(1, 2)


def test_grad_mode_switches_decorate_without_parentheses():
    @E.no_grad
    def doubled(x):
        return x * 2

    @E.inference_mode
    def tripled(x):
        return x * 3

    x = E.ones(2, requires_grad=True)
    with E.no_grad():
        @E.enable_grad
        def recorded(x):
            return x * 4

        assert recorded(x).requires_grad
    assert not doubled(x).requires_grad and not tripled(x).requires_grad
    assert E.is_grad_enabled()


def test_bool_inputs_of_sign_and_square():
    b = E.tensor([True, False])
    assert E.sign(b).dtype == E.bool and E.sign(b).tolist() == [True, False]
    assert E.sgn(b).tolist() == [True, False]
    sq = E.square(b)  # pow(x, 2): bool promotes to int64
    assert sq.dtype == E.int64 and sq.tolist() == [1, 0]
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired output "
                                           "type Bool"):
        b.clone().square_()


def test_fill_and_zero_of_an_expanded_tensor_write_each_location_once():
    base = E.arange(3.0)
    view = base.expand(2, 3)
    view.fill_(7)
    assert base.tolist() == [7, 7, 7]
    base.expand(4, 3).zero_()
    assert base.tolist() == [0, 0, 0]
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        base.expand(2, 3).exp_()  # a computed in-place op is still refused


def test_in_place_ops_on_an_empty_expanded_tensor_are_no_ops():
    t = E.ones(0).expand(2, 0)
    assert t.exp_().shape == (2, 0)
    assert E.ones(2, 0, dtype=E.int32).expand(3, 2, 0).ceil_().shape == (3, 2, 0)


def test_a_listed_difference_matches_only_its_own_disagreement():
    ours = ("raise", "RuntimeError", "batch1 must be a 3D tensor")
    theirs = ("raise", "IndexError", "Dimension out of range (expected to be in range of [-1, 0])")
    assert differences.reason_for("Tensor.baddbmm_", differences.CLASS, ours, theirs)
    assert differences.reason_for("Tensor.baddbmm_", differences.ACCEPTS, ours, theirs) is None
    assert differences.reason_for("exp", differences.CLASS, ours, theirs) is None
    other = ("raise", "IndexError", "index 3 is out of bounds")
    assert differences.reason_for("baddbmm", differences.CLASS, ours, other) is None
    # seed 691: scatter_add with a src of lower rank than index, where torch reads src.size(2)
    src = E.zeros(4, 4, dtype=E.int16)
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of "
                                           "dimensions as src tensor") as raised:
        E.scatter_add(E.zeros(1, 4, 1, dtype=E.int16), -1, E.zeros(1, 4, 1, dtype=E.int64), src)
    theirs = ("raise", "IndexError", "Dimension out of range (expected to be in range of [-2, "
              "1], but got 2)")
    ours = ("raise", "RuntimeError", str(raised.value))
    assert differences.reason_for("scatter_add", differences.CLASS, ours, theirs)


def test_put_is_deterministic_under_deterministic_algorithms_found_by_seed_709():
    # torch's put_ raises its determinism alert on the CPU; ember's writes in index order, so
    # the last duplicate wins on every run, and it runs under the switch
    E.use_deterministic_algorithms(True)
    try:
        for _ in range(3):
            x = E.zeros(4)
            x.put_(E.zeros(1 << 16, dtype=E.int64), E.arange(1 << 16, dtype=E.float32))
            assert x.tolist() == [65535.0, 0.0, 0.0, 0.0]
    finally:
        E.use_deterministic_algorithms(False)
    theirs = ("raise", "RuntimeError", "put_ does not have a deterministic implementation, but "
              "you set 'torch.use_deterministic_algorithms(True)'")
    assert differences.reason_for("Tensor.put_", differences.ACCEPTS, ("ok",), theirs)
    ours = ("raise", "IndexError", "put_(): Expected source and index to have the same number "
            "of elements")
    assert differences.reason_for("Tensor.put_", differences.CLASS, ours, theirs)


def test_hardshrink_keeps_nan():
    v = E.hardshrink(E.tensor([float("nan"), 0.3, -0.7, 2.0])).tolist()
    assert v[0] != v[0] and v[1:] == [0.0, -0.699999988079071, 2.0]


def test_complex_log2_and_exp2_at_zero_and_infinity():
    z = E.tensor([0j, complex(float("inf"), 0.0)], dtype=E.complex128)
    log2 = E.log2(z[:1]).tolist()[0]
    assert log2.real == float("-inf") and log2.imag == 0.0  # log(0) = -inf + 0j, as torch
    exp2 = E.exp2(z[1:]).tolist()[0]
    assert exp2.real == float("inf") and exp2.imag == 0.0


@pytest.mark.parametrize("y_dtype,x_dtype,expected", [
    (E.int16, E.float16, E.float16), (E.int64, None, E.float32), (E.float64, None, E.float64)])
def test_trapezoid_result_dtype_as_torch(y_dtype, x_dtype, expected):
    y = E.tensor([1, 4, 9, 16], dtype=y_dtype)
    r = E.trapezoid(y) if x_dtype is None else E.trapezoid(y, E.tensor([0, 1, 3, 4],
                                                                       dtype=x_dtype))
    assert r.dtype == expected
    # by hand: (1+4)/2*1 + (4+9)/2*2 + (9+16)/2*1 with those spacings; 5/2+13/2+25/2 without
    assert r.item() == (2.5 + 13 + 12.5 if x_dtype is not None else 2.5 + 6.5 + 12.5)


def test_cumulative_trapezoid_with_a_number_spacing():
    assert E.cumulative_trapezoid(E.tensor([0, 1, 4, 9]), dx=2).tolist() == [1.0, 6.0, 19.0]


def test_ldexp_keeps_the_operands_floating_dtype():
    r = E.ldexp(E.tensor([-2.5], dtype=E.bfloat16), E.tensor([-5], dtype=E.int16))
    assert r.dtype == E.bfloat16 and r.item() == -2.5 / 32
    assert E.ldexp(E.tensor([3]), E.tensor([2])).dtype == E.float32


def test_block_diag_of_nothing_is_one_empty_row():
    assert E.block_diag().shape == (1, 0)


def test_index_put_checks_in_torchs_order():
    x = E.zeros(3)
    # the number of index tensors first (a mask counts as one), before the values' dtype
    with pytest.raises(IndexError, match=r"too many indices for tensor of dimension 0 \(got 1\)"):
        E.zeros(()).index_put_([E.tensor(False)], E.tensor([1]))
    # the index dtype, then the mask's shape, before the values' dtype
    with pytest.raises(IndexError, match="must be long, int, byte or bool"):
        x.index_put_([E.tensor([1.0])], E.tensor([1], dtype=E.int64))
    with pytest.raises(IndexError, match=r"shape of the mask \[2\] at index 0"):
        x.index_put_([E.tensor([True, True])], E.tensor([1, 2]))
    # the values' shape before the index bounds
    with pytest.raises(RuntimeError, match="value tensor of shape"):
        x.index_put_([E.tensor([7])], E.tensor([1.0, 2.0]))
    with pytest.raises(IndexError, match="index 7 is out of bounds"):
        x.index_put_([E.tensor([7])], E.tensor([1.0]))


def test_index_put_of_one_value_through_one_mask_is_a_masked_fill():
    # torch does not check the value's dtype there; a uint8 mask is refused as by masked_fill_
    r = E.zeros(2, 3).index_put_([E.tensor([True, False])], E.tensor([5]))
    assert r.tolist() == [[5.0] * 3, [0.0] * 3]
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks"):
        E.zeros(3).index_put_([E.tensor([1, 0, 1], dtype=E.uint8)], E.tensor(1.0))
    with pytest.raises(RuntimeError, match="cannot be converted"):
        E.zeros(3, dtype=E.int8).index_put_([E.tensor([True, False, True])], E.tensor(1000.5))
    # accumulate=True keeps the dtype check
    with pytest.raises(RuntimeError, match="dtypes match"):
        E.zeros(3).index_put_([E.tensor([True, False, True])], E.tensor(1), accumulate=True)


def test_histc_checks_in_torchs_order():
    ints = E.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="bins must be > 0"):  # before the dtype
        ints.histc(0)
    with pytest.raises(RuntimeError, match="hist tensor should have the same dtype"):
        E.histc(ints, 4, out=E.empty(4, dtype=E.int32))
    # torch writes the edges (linspace) in the input's dtype before its kernel refuses it
    with pytest.raises(RuntimeError, match="cannot be converted to type uint8"):
        E.zeros(0, dtype=E.uint8).histc(4)  # an empty range is [-1, 1]
    with pytest.raises(NotImplementedError, match="linspace_cpu"):
        E.tensor([True]).histc(4)
    with pytest.raises(NotImplementedError, match="aminmax_cpu"):
        E.tensor([1j]).histc(4)
    with pytest.raises(NotImplementedError, match="histogram_cpu"):
        ints.histc(4)


def test_histogram_checks_in_torchs_order():
    f = E.tensor([1.0, 2.0, 3.0])
    with pytest.raises(NotImplementedError, match='"histogramdd" not implemented for \'Long\''):
        E.histogram(E.tensor([1, 2]), 4)  # the data's range: float and double only
    with pytest.raises(NotImplementedError, match='"histogramdd" not implemented for \'Half\''):
        E.histogram(f.half(), 4)
    assert E.histogram(f.half(), 4, range=(0.0, 4.0)).hist.tolist() == [0, 1, 1, 1]
    with pytest.raises(NotImplementedError, match="histogram_cpu"):
        E.histogram(E.tensor([1, 2]), 4, range=(0.0, 4.0))
    with pytest.raises(RuntimeError, match="range should have 2 elements, but got 1"):
        E.histogram(f, 3, range=[1])
    with pytest.raises(TypeError):
        E.histogram(f, E.tensor([1.0, 2.0]), range=(0.0, 1.0))  # no range with edges
    with pytest.raises(RuntimeError, match="bin_edges tensor should have the same dtype"):
        E.histogram(f, 0, out=(E.empty(0), E.empty(0, dtype=E.int64)))
    with pytest.raises(RuntimeError, match="bins must be > 0, but got 0"):
        E.histogram(f, E.tensor([1.0]))  # one edge is no bin
    # the weight: of the input's dtype, with as many elements (any shape)
    assert E.histogram(f, 3, weight=E.ones(1, 3, 1)).hist.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="weight tensor should have the same dtype"):
        E.histogram(f, 3, weight=E.ones(3, dtype=E.float64))


def test_histogramdd_arguments_and_order_as_torch():
    x = E.ones(3, 2)
    with pytest.raises(TypeError):
        E.histogramdd(x)  # bins has no default
    with pytest.raises(TypeError):
        E.histogramdd(x, True)
    with pytest.raises(IndexError, match="no dimensions"):
        E.histogramdd(E.tensor(1.0), 3)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        E.histogramdd(E.ones(3), 3)
    with pytest.raises(RuntimeError, match="range should have 4 elements, but got 2"):
        E.histogramdd(x.long(), [3, 3], range=[1.0, 2.0])
    with pytest.raises(RuntimeError, match="bins must be > 0, but got 0 for dimension 1"):
        E.histogramdd(x, [3, 0])
    with pytest.raises(RuntimeError, match="same shape as the input tensor excluding"):
        E.histogramdd(x, 3, weight=E.ones(3, 2))
    hist, edges = E.histogramdd(E.ones(1, 2), [E.tensor([0.0, 2.0]), E.tensor([0.0, 2.0])],
                                weight=E.tensor(4.0))
    assert hist.tolist() == [[4.0]] and len(edges) == 2


def test_int_list_arguments_parse_as_torchs():
    x = E.ones(2, 3)
    # a tensor stands for an int list only as a method's one-element varargs
    with pytest.raises(RuntimeError, match="can not be smaller"):
        x.repeat(E.tensor(2))  # taken as [2]
    with pytest.raises(TypeError, match="must be tuple of ints, not Tensor"):
        x.repeat(E.tensor([2, 1]))
    with pytest.raises(TypeError, match="missing 1 required positional"):
        x.repeat()
    with pytest.raises(TypeError, match="found element of type bool at pos 0"):
        x.repeat([True, 2])
    assert x.repeat(2, True).shape == (4, 3)  # after the first element a bool is an int
    with pytest.raises(RuntimeError, match="isIntegral"):
        x.repeat(2, E.tensor(True))  # a SymInt[] reads a tensor element with item<int64_t>
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        E.tile(x, 2)
    assert x.tile(2).shape == (2, 6) and x.tile(2, 2).shape == (4, 6)
    with pytest.raises(TypeError, match="must be tuple of ints, not Tensor"):
        x.split_with_sizes(E.tensor([1, 1]))
    with pytest.raises(TypeError, match="split_with_sizes"):
        x.split(E.tensor([1, 1]))
    assert len(x.split(E.tensor([1.0]))) == 2  # torch's Tensor.split: int(t) when that works


def test_hsplit_overloads_as_torchs():
    x = E.ones(2, 3)
    assert [t.shape[1] for t in x.hsplit(E.tensor(3))] == [1, 1, 1]  # 0-d: sections
    assert [t.shape[1] for t in x.hsplit(E.tensor([3]))] == [3, 0]  # 1-d, method: indices
    assert [t.shape[1] for t in x.hsplit(1, 2)] == [1, 1, 1]
    with pytest.raises(TypeError, match="invalid combination"):
        E.hsplit(x, E.tensor([3]))
    with pytest.raises(TypeError, match="invalid combination"):
        x.hsplit(1.5)


def test_clamp_checks_in_torchs_order():
    b, i = E.tensor([True, False]), E.tensor([1, 2])
    assert b.clamp_min(b).dtype == E.bool  # tensor bounds: maximum, which takes bools
    with pytest.raises(NotImplementedError, match="clamp_min_scalar_cpu"):
        b.clamp_min(True)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        i.clamp_min_(E.tensor([1j, 2j]))  # the cast before the complex kernel
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match"):
        E.tensor([1j, 2j]).clamp_min_(E.ones(3, 1))
    with pytest.raises(RuntimeError, match="more than one element"):
        b.expand(2, 2).clamp_min_(True)
    with pytest.raises(RuntimeError, match="Found dtype Bool but expected Long"):
        E.clamp(i, min=1, out=E.empty(2, dtype=E.bool))
    with pytest.raises(RuntimeError, match="cannot be converted to type int16"):
        E.tensor([1], dtype=E.int16).clamp_max(2**63 - 1)
    with pytest.raises(NotImplementedError, match="clamp is not supported for complex types"):
        E.tensor([1j]).clamp(1)


def test_integer_binary_ops_check_the_common_dtype_after_the_iterator():
    b, i8 = E.tensor(True), E.tensor(-4, dtype=E.int8)
    assert b.lcm(i8).item() == 4 and b.lcm(i8).dtype == E.int8  # common dtype int8
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        E.tensor([2], dtype=E.int8).lcm_(E.tensor([1j]))
    with pytest.raises(RuntimeError, match="must match the size"):
        E.ones(3, 1, dtype=E.complex128).nextafter_(E.ones(1, 4, 1, dtype=E.float64))
    with pytest.raises(NotImplementedError, match='"gcd_cpu" not implemented for'):
        E.gcd(b, b)


def test_python_argument_checks_as_torchs():
    assert E.broadcast_shapes([2, 3], True, None) == (2, 3)  # an int (a bool too) is one dim
    with pytest.raises(RuntimeError, match="Input shapes should be of type ints"):
        E.broadcast_shapes(E.ones(2, 2))
    with pytest.raises(TypeError, match="argument 'enabled' .* must be bool, not int"):
        E.set_anomaly_enabled(1)
    with pytest.raises(RuntimeError, match="setWarnOnlyOnce expects a bool, but got tuple"):
        E.set_warn_always((0,))
    with pytest.raises(TypeError, match="argument 'n'"):
        E.ones(2, 3).matrix_power(E.tensor([2]))  # the argument before the shape
    assert E.ones(2, 2).matrix_power(E.tensor(2)).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    with pytest.raises(TypeError, match="expected Tensor as element 1 in argument 0"):
        E.cartesian_prod(E.ones(2, 2), [1])
    with pytest.raises(RuntimeError, match="non-empty TensorList"):
        E.cartesian_prod()
    with pytest.raises(RuntimeError, match="Invalid value of device"):
        E.get_device_module(1)


def test_isin_forms_and_checks_as_torchs():
    i = E.tensor([1, 2])
    assert E.isin(i, test_element=2).tolist() == [False, True]
    assert E.isin(element=2, test_elements=i).item() is True
    with pytest.raises(TypeError, match="invalid combination"):
        E.isin(i, test_elements=2)  # a number goes as test_element
    with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin\\(\\): Bool"):
        E.isin(i, E.tensor([True]))  # each input's dtype, not the promoted one
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype bool"):
        E.isin(i, E.tensor([1.5]), out=E.empty(2, dtype=E.int64))


def test_prelu_checks_in_torchs_order():
    f = E.tensor([1.5])
    with pytest.raises(RuntimeError, match="Type promoting not supported. Got Float and Double"):
        f.prelu(f.double())
    with pytest.raises(RuntimeError, match="channel size = 1"):
        E.ones(2).prelu(E.ones(2))  # a 1-d input has one channel
    with pytest.raises(NotImplementedError, match="prelu_cpu"):
        E.tensor([True]).prelu(E.tensor([True]))
    assert E.tensor([-2.0, 3.0]).prelu(E.tensor([0.5])).tolist() == [-1.0, 3.0]


def test_complex_cumprod_and_scan_checks_as_torchs():
    z = E.tensor([1 + 2j, 0.5j, 2 - 1j])
    # by hand: (1+2j), (1+2j)*0.5j = -1+0.5j, (-1+0.5j)*(2-1j) = -1.5+2j
    assert z.cumprod(0).tolist() == [1 + 2j, -1 + 0.5j, -1.5 + 2j]
    assert E.tensor([1, 2, 3]).cumprod(0, dtype=E.complex64).tolist() == [1, 2, 6]
    with pytest.raises(NotImplementedError, match='"cumsum_out_cpu" not implemented for \'Bool\''):
        E.tensor([True, False]).cumsum_(0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        E.tensor(1, dtype=E.int8).cumprod_(1, dtype=E.complex64)  # dim before the dtype


def test_complex_sinc():
    r = E.tensor([0j, 0.5 - 0.25j], dtype=E.complex128).sinc().tolist()
    z = complex(0.5, -0.25) * math.pi
    assert r[0] == 1 and abs(r[1] - cmath.sin(z) / z) < 1e-15


def test_samplers_refuse_dtypes_as_torchs_kernels():
    empty = E.zeros(0, dtype=E.int8)
    assert empty.log_normal_() is empty  # torch's dispatch has nothing to refuse when empty
    with pytest.raises(NotImplementedError, match='"log_normal_cpu" not implemented for \'Char\''):
        E.zeros(2, dtype=E.int8).log_normal_()
    with pytest.raises(RuntimeError, match="expects std > 0.0"):
        empty.log_normal_(std=-1.0)  # the argument first
    with pytest.raises(NotImplementedError, match="geometric_cpu"):
        E.zeros(2, dtype=E.bool).geometric_(0.5)


def test_unary_out_rules_and_complex_refusals_first():
    i = E.tensor([[1, 2]], dtype=E.int32)
    with pytest.raises(RuntimeError, match="Found dtype Char but expected Int"):
        E.floor(i, out=E.empty(3, dtype=E.int8))  # also when out= would be resized
    with pytest.raises(RuntimeError, match="signbit does not support non-boolean outputs"):
        E.signbit(E.ones(1, 4), out=E.empty(6, dtype=E.uint8))
    with pytest.raises(NotImplementedError, match="floor is not supported for complex inputs"):
        E.ones(3, dtype=E.complex64).expand(2, 3).floor_()  # before the overlap check
    with pytest.raises(NotImplementedError, match="trunc is not supported for complex inputs"):
        E.trunc(E.ones(3, dtype=E.complex64), out=E.empty(3))


def test_round_overloads_as_torchs():
    assert E.tensor([1, 2]).round().tolist() == [1, 2]  # round(x) copies integers
    with pytest.raises(NotImplementedError, match="round_vml_cpu"):
        E.tensor([1, 2]).round(decimals=0)  # round(x, decimals=) has no integer kernel
    with pytest.raises(NotImplementedError, match="round_cpu"):
        E.round(E.tensor([1, 2]), decimals=1)
    with pytest.raises(NotImplementedError, match="round_vml_cpu"):
        E.tensor([True]).round()
    assert E.tensor([2.5, 1.25]).round(decimals=1).tolist() == [2.5, 1.2000000476837158]


def test_renorm_as_torchs():
    z = E.tensor([[3 + 4j, 0j], [0.3 + 0.4j, 0j]])
    # rows of norm 5 and 0.5: the first is scaled to norm 1 (by 1 / (5 + 1e-7))
    r = z.renorm(2, 0, 1.0).tolist()
    assert abs(r[0][0] - (3 + 4j) / (5 + 1e-7)) < 1e-6 and abs(r[1][0] - (0.3 + 0.4j)) < 1e-7
    with pytest.raises(RuntimeError, match="non-positive-norm"):
        E.ones(2, 2).renorm(float("nan"), 0, 1.0)
    with pytest.raises(RuntimeError, match="maxnorm to be >= 0 but got nan"):
        E.ones(2, 2).renorm(2, 0, float("nan"))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        E.ones(2).renorm(2, 0, 1.0)
    with pytest.raises(OverflowError, match="int too big to convert"):
        E.ones(2, 2).renorm(2**70, 0, 1.0)
    with pytest.raises(IndexError):
        E.ones(2, 2, dtype=E.int64).renorm(2, 5, 1.0)  # the dim before the dtype


def test_new_tensor_and_contiguous_keywords_as_torchs():
    x = E.ones(2)
    for kw in (dict(layout=E.strided), dict(pin_memory=False)):
        with pytest.raises(TypeError, match="unexpected keyword argument"):
            x.new_tensor(1, **kw)
    with pytest.raises(TypeError, match="requires_grad"):
        x.new_tensor(1, requires_grad=None)
    assert x.new_tensor(1, dtype=None, device=None).item() == 1
    with pytest.raises(TypeError, match="memory_format"):
        x.contiguous(memory_format=None)
    assert x.contiguous(memory_format=E.preserve_format) is x


def test_cdist_compute_mode_and_half_as_torchs():
    x = E.ones(2, 3)
    with pytest.raises(ValueError, match="None is not a valid value for compute_mode"):
        E.cdist(x.int(), x, compute_mode=None)  # checked before the dtypes
    with pytest.raises(NotImplementedError, match='"cdist" not implemented for \'Half\''):
        E.cdist(x.half(), x.half())
    r = E.cdist(x.half(), x.half(), compute_mode="use_mm_for_euclid_dist")  # the product path
    assert r.dtype == E.float16 and r.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_cummin_of_nothing_and_its_out_pair():
    values, indices = E.zeros(2, 0).cummin(5)  # torch returns before it wraps dim
    assert values.shape == (2, 0) and indices.dtype == E.int64
    with pytest.raises(TypeError, match="expected tuple of 2 elements but got 3"):
        E.cummin(E.ones(3), 0, out=[E.empty(3), E.empty(3, dtype=E.int64), E.empty(3)])
    with pytest.raises(IndexError):
        E.ones(3).cummax(1)


def test_logcumsumexp_checks_out_first():
    with pytest.raises(RuntimeError, match="expected scalar_type Float but found Double"):
        E.logcumsumexp(E.ones(3), 5, out=E.empty(3, dtype=E.float64))
    with pytest.raises(NotImplementedError, match="logcumsumexp_out_cpu"):
        E.logcumsumexp(E.ones(3, dtype=E.int8), 0, out=E.empty(3, dtype=E.int8))


def test_ldexp_checks_as_torchs():
    f = E.ones(2)
    with pytest.raises(NotImplementedError, match="ldexp_cpu_exp"):
        E.ldexp(f, E.tensor([True, False]))
    with pytest.raises(RuntimeError, match="ldexp can't be cast to the desired output type Long"):
        E.ldexp(f, E.tensor([True, False]), out=E.empty(2, dtype=E.int64))  # out= first
    assert E.ldexp(E.tensor([True, False]), E.tensor([1, 2])).tolist() == [2.0, 0.0]
    assert E.ldexp(E.tensor([True, False]), E.tensor([True, True])).tolist() == [2.0, 0.0]
    with pytest.raises(RuntimeError, match="ldexp can't be cast to the desired output type Bool"):
        E.tensor([True]).ldexp_(E.tensor([True]))  # in place: the cast into self first


def test_copy_takes_a_number_and_a_bool_non_blocking():
    assert E.zeros(2, dtype=E.int8).copy_(1000).tolist() == [-24, -24]  # wrapped, then cast
    assert E.zeros(2).copy_(1.5, non_blocking=True).tolist() == [1.5, 1.5]
    with pytest.raises(TypeError, match="'non_blocking' .* must be bool, not int"):
        E.zeros(2).copy_(E.ones(2), 0)
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        E.zeros(2).copy_([1, 2])


def test_tri_indices_of_no_columns_return_at_once():
    """Found by the fuzzer: tril_indices(2**63 - 1, 0) visited every row (a hang)."""
    for fn in (E.tril_indices, E.triu_indices):
        r = fn(2**63 - 1, 0)
        assert r.shape == (2, 0) and r.dtype == E.int64
    assert E.triu_indices(0, 2**62).shape == (2, 0)


def test_format_and_layout_types_are_not_instantiable():
    """torch.memory_format and torch.layout have only their module-level instances."""
    for cls, name in ((E.memory_format, "memory_format"), (E.layout, "layout")):
        with pytest.raises(TypeError, match=f"cannot create 'ember.{name}' instances"):
            cls()
    with pytest.raises(TypeError):
        E.memory_format(E.ones(2))
    import copy
    import pickle
    for obj in (E.strided, E.channels_last, E.contiguous_format):
        assert pickle.loads(pickle.dumps(obj)) is obj and copy.deepcopy(obj) is obj


def test_legacy_tensor_constructor_forms():
    """torch.Tensor(): empty; Tensor(2, 3): those sizes; Tensor(seq): its values; all in the
    default dtype."""
    assert E.Tensor().shape == (0,) and E.Tensor().dtype == E.float32
    assert E.Tensor(2, 3).shape == (2, 3) and E.Tensor(2, 3).dtype == E.float32
    assert E.Tensor([1, 2]).tolist() == [1.0, 2.0] and E.Tensor([1, 2]).dtype == E.float32
    t = E.ones(2)
    assert E.Tensor(t).data_ptr() == t.data_ptr()  # a tensor: its alias
    with pytest.raises(TypeError, match="must be a sequence"):
        E.Tensor(1.5)
    with pytest.raises(RuntimeError, match="negative dimension"):
        E.Tensor(-1)


def test_argument_checks_torch_makes_first():
    with pytest.raises(ValueError, match="must specify the equation string"):
        E.einsum(E.ones(4, 4))  # a tensor alone: neither an equation nor sublists
    with pytest.raises(RuntimeError, match="Tensor dimension is 1, expected 2 instead"):
        E.chain_matmul(E.ones(3))
    with pytest.raises(RuntimeError, match="Tensor dimension is 1, expected 2 instead"):
        E.chain_matmul(E.ones(3, 3), E.ones(3))
    with pytest.raises(RuntimeError, match="bool dtype is not supported for input"):
        E.corrcoef(E.ones(3, dtype=E.bool))
    with pytest.raises(RuntimeError, match="expected aweights to have floating point dtype but "
                                           "got aweights with Byte dtype"):
        E.cov(E.ones(3), aweights=E.ones(3, dtype=E.uint8))
    for flag in (E.tensor(True), 1, None):
        with pytest.raises(TypeError, match="'requires_grad' .* must be bool"):
            E.ones(2).requires_grad_(flag)


@pytest.mark.parametrize("src,dst", [("int64", "uint8"), ("uint8", "int32"), ("float32", "float16"),
                                     ("complex64", "float32"), ("float32", "complex128"),
                                     ("uint8", "int16"), ("int16", "float64")])
def test_view_as_a_dtype_of_another_size_reads_the_same_bytes(src, dst):
    """view(dtype) between element sizes splits or merges the last dim, as NumPy's view does
    (the oracle), with the other strides and the offset rescaled; a slice and a row stride that
    divide evenly are kept."""
    import numpy as np
    base = np.arange(128, dtype=np.uint8).view(src).reshape(4, -1)  # 32 bytes a row
    t = E.from_numpy(base.copy())
    for sl in (np.s_[:, :], np.s_[1:3, :], np.s_[::2, :]):
        got = t[sl].view(getattr(E, dst))
        want = base[sl].view(dst)
        assert tuple(got.shape) == want.shape
        assert got.numpy().tobytes() == want.tobytes()
        assert got.stride() == tuple(s // want.itemsize for s in want.strides)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8", "bool"])
def test_pooling_takes_the_dtypes_torchs_cpu_kernels_take(dtype):
    """avg pooling: floating and int64; max pooling with indices (and 2-d/3-d): every integer
    type; max_pool1d without indices and adaptive max pooling: floating only; adaptive average
    pooling is a mean (torch's RuntimeError for integers)."""
    import ember.nn.functional as F
    dt = getattr(E, dtype)
    x = E.ones(1, 2, 4, 4, dtype=dt)
    refused = {
        "avg_pool2d": lambda: F.avg_pool2d(x, 2), "avg_pool3d_out_frame": lambda: F.avg_pool3d(x[None], 2),
        "max_pool1d_impl": lambda: F.max_pool1d(x[0], 2),
        "adaptive_max_pool2d": lambda: F.adaptive_max_pool1d(x[0], 1),
        "adaptive_max_pool3d_cpu": lambda: F.adaptive_max_pool3d(x[None], 1),
    }
    for kernel, call in refused.items():
        with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented'):
            call()
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        F.adaptive_avg_pool2d(x, 1)
    if dtype != "bool":
        assert F.max_pool2d(x, 2).dtype == dt and F.max_pool3d(x[None], 2).dtype == dt
        assert F.max_pool1d(x[0], 2, return_indices=True)[0].dtype == dt
    assert F.avg_pool2d(E.ones(1, 2, 4, 4, dtype=E.int64), 2).tolist() == [[[[1, 1], [1, 1]]] * 2]


DIM_ORDER_CASES = [  # (tensor, keywords, torch 2.13's result or exception class)
    ('E.ones(2,3)', '', '(0, 1)'),
    ('E.ones(2,3)', 'ambiguity_check=True', '(0, 1)'),
    ('E.ones(2,3)', 'ambiguity_check=[E.contiguous_format, E.channels_last]', '(0, 1)'),
    ('E.ones(2,3).t()', '', '(1, 0)'),
    ('E.ones(2,3).t()', 'ambiguity_check=True', '(1, 0)'),
    ('E.ones(2,3).t()', 'ambiguity_check=[E.contiguous_format, E.channels_last]', '(1, 0)'),
    ('E.arange(3).unsqueeze(0).expand(2,3)', '', '(0, 1)'),
    ('E.arange(3).unsqueeze(0).expand(2,3)', 'ambiguity_check=True', 'RuntimeError'),
    ('E.arange(3).unsqueeze(0).expand(2,3)', 'ambiguity_check=[E.contiguous_format, E.channels_last]', 'RuntimeError'),
    ('E.ones(2,0,3)', '', '(0, 1, 2)'),
    ('E.ones(2,0,3)', 'ambiguity_check=True', 'RuntimeError'),
    ('E.ones(2,0,3)', 'ambiguity_check=[E.contiguous_format, E.channels_last]', '(0, 1, 2)'),
    ('E.ones(1,3)', '', '(0, 1)'),
    ('E.ones(1,3)', 'ambiguity_check=True', 'RuntimeError'),
    ('E.ones(1,3)', 'ambiguity_check=[E.contiguous_format, E.channels_last]', '(0, 1)'),
    ('E.ones(2,3,4,5).permute(0,2,3,1)', '', '(0, 3, 1, 2)'),
    ('E.ones(2,3,4,5).permute(0,2,3,1)', 'ambiguity_check=True', '(0, 3, 1, 2)'),
    ('E.ones(2,3,4,5).permute(0,2,3,1)', 'ambiguity_check=[E.contiguous_format, E.channels_last]', '(0, 3, 1, 2)'),
    ('E.ones(2,3,4,5).contiguous(memory_format=E.channels_last)', '', '(0, 2, 3, 1)'),
    ('E.ones(2,3,4,5).contiguous(memory_format=E.channels_last)', 'ambiguity_check=True', '(0, 2, 3, 1)'),
    ('E.ones(2,3,4,5).contiguous(memory_format=E.channels_last)', 'ambiguity_check=[E.contiguous_format, E.channels_last]', '(0, 2, 3, 1)'),
    ('E.ones(2,1,4,5).contiguous(memory_format=E.channels_last)', '', '(0, 1, 2, 3)'),
    ('E.ones(2,1,4,5).contiguous(memory_format=E.channels_last)', 'ambiguity_check=True', 'RuntimeError'),
    ('E.ones(2,1,4,5).contiguous(memory_format=E.channels_last)', 'ambiguity_check=[E.contiguous_format, E.channels_last]', 'RuntimeError'),
    ('E.ones(3,4,5).permute(2,0,1)', '', '(1, 2, 0)'),
    ('E.ones(3,4,5).permute(2,0,1)', 'ambiguity_check=True', '(1, 2, 0)'),
    ('E.ones(3,4,5).permute(2,0,1)', 'ambiguity_check=[E.contiguous_format, E.channels_last]', '(1, 2, 0)'),
    ('E.ones(3,4,5)[:, ::2].transpose(0,2)', '', '(2, 1, 0)'),
    ('E.ones(3,4,5)[:, ::2].transpose(0,2)', 'ambiguity_check=True', '(2, 1, 0)'),
    ('E.ones(3,4,5)[:, ::2].transpose(0,2)', 'ambiguity_check=[E.contiguous_format, E.channels_last]', '(2, 1, 0)'),
    ('E.ones(4,4).expand(2,4,4).transpose(0,1)', '', '(0, 1, 2)'),
    ('E.ones(4,4).expand(2,4,4).transpose(0,1)', 'ambiguity_check=True', 'RuntimeError'),
    ('E.ones(4,4).expand(2,4,4).transpose(0,1)', 'ambiguity_check=[E.contiguous_format, E.channels_last]', 'RuntimeError'),
    ('E.ones(2,2,2).as_strided((2,2,2),(2,2,1))', '', '(0, 1, 2)'),
    ('E.ones(2,2,2).as_strided((2,2,2),(2,2,1))', 'ambiguity_check=True', 'RuntimeError'),
    ('E.ones(2,2,2).as_strided((2,2,2),(2,2,1))', 'ambiguity_check=[E.contiguous_format, E.channels_last]', 'RuntimeError'),
]


@pytest.mark.parametrize("expr,keywords,want", DIM_ORDER_CASES)
def test_dim_order_as_torchs(expr, keywords, want):
    """dim_order: the formats' orders, the stride sort that leaves stride-0 dims in place, and
    ambiguity_check's refusals."""
    call = f"({expr}).dim_order({keywords})"
    errors = {"RuntimeError": RuntimeError, "TypeError": TypeError}
    if want in errors:
        with pytest.raises(errors[want]):
            eval(call)
    else:
        assert eval(call) == eval(want)


REFUSED_AS_TORCH = [  # (call, exception, message): torch 2.13's, written out
    (lambda: E.bincount(E.arange(3).to(E.uint32)), NotImplementedError, '"bincount_cpu"'),
    (lambda: E.bincount(E.tensor(1).to(E.uint32), minlength=-1), NotImplementedError,
     '"bincount_cpu"'),
    (lambda: E.arange(4).to(E.uint16).count_nonzero(), NotImplementedError,
     '"nonzero_count_cpu"'),
    (lambda: E.ones(3, 2, dtype=E.complex128).mvlgamma(0), RuntimeError,
     "p has to be greater than or equal to 1"),
    (lambda: E.ones(3, dtype=E.bool).mvlgamma(0), RuntimeError, "may not be a boolean tensor"),
    (lambda: E.ones(2, dtype=E.uint64).pow(-1), RuntimeError, "negative integer powers"),
    (lambda: E.ones(2).squeeze(0, 0), RuntimeError, "dim 0 appears multiple times"),
    (lambda: E.ones(1, 2).squeeze((0, -2)), RuntimeError, "dim 0 appears multiple times"),
    (lambda: E.roll(E.tensor(1), 0, [0]), IndexError, "tensor has no dimensions"),
    (lambda: E.nonzero(E.ones(2), out=E.empty(0, dtype=E.int64), as_tuple=True), RuntimeError,
     "does not support the out kwarg when as_tuple is True"),
    (lambda: E.hash_tensor(E.tensor(1.0), [2, 3]), IndexError, "Dimension out of range"),
    (lambda: E.pdist(E.ones(4, 4, dtype=E.float16)), NotImplementedError, '"pdist"'),
    (lambda: E.nuclear_norm(E.ones(2, 0, 3, dtype=E.float16)), RuntimeError,
     "Low precision dtypes not supported. Got Half"),
    (lambda: E.threshold_(E.ones(2, dtype=E.uint64), 0.5, 2), NotImplementedError,
     '"threshold_cpu"'),
    (lambda: E.float_power(E.ones(2, dtype=E.uint8), E.ones(2, dtype=E.int16),
                           out=E.ones(2, dtype=E.float16)), RuntimeError,
     "has dtype Half but the operation's result requires dtype Double"),
    (lambda: E.nanmean(E.ones(2), 0, True, dtype=E.uint8), RuntimeError,
     "Optional dtype must be either a floating point or complex dtype. Got: Byte"),
    (lambda: E.mean(E.ones(2, 3, dtype=E.int64), (0,), out=E.ones(0, dtype=E.bfloat16)),
     RuntimeError, "Input dtype must be either a floating point or complex dtype. Got: Long"),
    (lambda: E.trapezoid(E.ones(3, dtype=E.bool)), RuntimeError,
     "trapezoid: received a bool input for `y`"),
    (lambda: E.cumulative_trapezoid(E.ones(3), E.ones(3, dtype=E.bool)), RuntimeError,
     "received a bool input for `x` or `y`"),
    (lambda: E.trapezoid(E.ones(3, dtype=E.uint16)), NotImplementedError, '"add_stub"'),
    (lambda: E.gradient(E.ones(3, dtype=E.uint64)), NotImplementedError, '"add_stub"'),
]


@pytest.mark.parametrize("call,error,message", REFUSED_AS_TORCH)
def test_refused_as_torch(call, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_accepted_as_torch():
    assert E.arange(4).to(E.uint64).reshape(1, 4, 1).count_nonzero([1]).tolist() == [[3]]
    z = E.tensor([0j, 1 + 1j])
    assert z.logical_not_().tolist() == [1 + 0j, 0j]  # bools written into the complex tensor
    assert E.trapezoid(E.ones(0, dtype=E.bool)).item() == 0  # no samples: nothing refused
    assert E.ones(2, dtype=E.int32).addcdiv(E.ones(2), E.ones(2), value=True).tolist() == [2, 2]
    assert E.ones(2).addcmul(E.ones(2), E.ones(2) * 3, value=True).tolist() == [4.0, 4.0]


def test_mvlgamma_of_an_order_too_large_for_memory_fails_at_once():
    """Found by the fuzzer: mvlgamma(2**31) built 2**31 shifts (minutes) before the (..., p)
    terms failed to allocate; torch fails at that allocation too."""
    with pytest.raises(MemoryError):
        E.ones(1024, dtype=E.bfloat16).mvlgamma(2**31)  # 4 TiB of terms


def test_floating_ops_of_wide_unsigned_tensors_take_a_number_as_it_is():
    """Found by the fuzzer: uint16/32/64 with a negative number in a floating op converted the
    number to the unsigned type first (uint32 / -1 was 2.3e-10, copysign(u, -1) positive);
    torch converts it straight to the float type. Comparisons still compare in the unsigned
    type, as torch's (uint32(2**32 - 1) == -1 is True)."""
    u = E.tensor([1, 2], dtype=E.uint32)
    assert (u / -1).tolist() == [-1.0, -2.0]
    assert E.copysign(u, -1).tolist() == [-1.0, -2.0]
    assert E.copysign(u.to(E.uint16), -1.0).tolist() == [-1.0, -2.0]
    assert (u.to(E.uint64) / -2).tolist() == [-0.5, -1.0]
    assert E.atan2(u, E.tensor(-1.0)).tolist() == pytest.approx([math.atan2(1, -1),
                                                                 math.atan2(2, -1)])
    assert (E.tensor([2**32 - 1], dtype=E.uint32) == -1).tolist() == [True]
    assert (u.to(E.uint64) * 3).tolist() == [3, 6]


def test_frexp_of_float16_near_its_largest_value():
    """Found by the fuzzer: 65504 = 0.99951 * 2**16, and 2**16 itself overflows float16, so the
    mantissa came out 0; it is divided in float64 now (and keeps its gradient)."""
    m, e = E.tensor([65504.0, 1.5, -3.0, 6e-8], dtype=E.float16).frexp()
    assert m.tolist() == [2047 / 2048, 0.75, -0.75, m.tolist()[3]]
    assert e.tolist()[:3] == [16, 1, 2]
    pytest.importorskip("ember.autograd")  # (the gradient: ember-autograd)
    x = E.tensor([3.0, -5.0], dtype=E.float64, requires_grad=True)
    E.frexp(x)[0].sum().backward()
    assert x.grad.tolist() == [0.25, 0.125]


def test_trapezoid_over_no_samples_keeps_the_dtype():
    """torch's zeros_like_except: zeros of y's dtype, not a sum's int64."""
    r = E.trapezoid(E.zeros(2, 0, 3, dtype=E.uint8), dim=1)
    assert r.dtype == E.uint8 and r.shape == (2, 3) and r.tolist() == [[0] * 3] * 2
    assert E.trapz(E.zeros(0, dtype=E.bool)).dtype == E.bool
    assert E.trapezoid(E.zeros(0, dtype=E.float16)).dtype == E.float16


def test_window_functions_take_torchs_overloads_and_pin_memory():
    """torch's hamming_window takes alpha only after periodic, beta only after alpha, and
    kaiser_window beta only after periodic; pin_memory=True pins (a RuntimeError without an
    accelerator), as its factories do."""
    with pytest.raises(TypeError, match="hamming_window"):
        E.hamming_window(4, beta=0.5)
    with pytest.raises(TypeError, match="hamming_window"):
        E.hamming_window(4, alpha=0.5)
    with pytest.raises(TypeError, match="kaiser_window"):
        E.kaiser_window(4, beta=3.0)
    w = E.hamming_window(4, periodic=False, alpha=0.5, beta=0.5)
    assert w.tolist() == pytest.approx([0.0, 0.75, 0.75, 0.0])
    assert E.kaiser_window(4, False, 3.0).tolist() == pytest.approx(
        [1 / 4.880792585865024, 0.8712, 0.8712, 1 / 4.880792585865024], abs=1e-4)
    if not E.cuda.is_available():
        for f in (E.hann_window, E.hamming_window, E.blackman_window, E.bartlett_window,
                  E.kaiser_window):
            with pytest.raises(RuntimeError, match="pin_memory"):
                f(3, pin_memory=True)


def test_frexp_checks_its_out_argument_first():
    """torch's parser checks out= (two tensors) before frexp checks the dtype."""
    with pytest.raises(TypeError, match="must be tuple of Tensors, not int"):
        E.frexp(E.ones(2, dtype=E.int64), out=-1)
    with pytest.raises(TypeError, match="must be tuple of Tensors, not Tensor"):
        E.frexp(E.ones(2, dtype=E.uint8), out=E.ones(2))
    with pytest.raises(TypeError, match="expected Tensor as element 0"):
        E.frexp(E.ones(2), out=[2, 3])
    m, e = E.empty(2), E.empty(2, dtype=E.int32)
    E.frexp(E.tensor([3.0, 0.5]), out=(m, e))
    assert m.tolist() == [0.75, 0.5] and e.tolist() == [2, 0]


def test_movedim_takes_ints_or_sequences_of_ints():
    """torch's parser: movedim(Tensor, int[] source, int[] destination) or (int, int); a tensor,
    a string or a float is a TypeError (ember read a string's letters as dims)."""
    x = E.ones(2, 3, 4)
    for source in (E.ones(2), "sum", 1.0, True):
        with pytest.raises(TypeError, match="moveaxis"):  # (the name called, as torch's)
            x.moveaxis(source, 0)
    assert x.movedim((0, 1), [2, 0]).shape == (3, 4, 2)
    assert E.moveaxis(x, 0, -1).shape == (3, 4, 2)


def test_unravel_index_checks_in_torchs_order():
    with pytest.raises(TypeError, match="expected 'indices' to be integer dtype"):
        E.unravel_index(E.ones(2, dtype=E.complex64), 3)
    with pytest.raises(TypeError, match="expected 'shape' to be int or sequence of ints"):
        E.unravel_index(E.tensor([1, 2]), E.tensor([3]))
    with pytest.raises(TypeError, match="sequence to only contain ints"):
        E.unravel_index(E.tensor([1, 2]), (3, 2.0))
    rows, cols = E.unravel_index(E.tensor([4, 5]), (2, 3))
    assert rows.tolist() == [1, 1] and cols.tolist() == [1, 2]


def test_tri_indices_check_the_layout_type():
    with pytest.raises(TypeError, match="layout"):
        E.triu_indices(-1, -1, layout=True)
    with pytest.raises(TypeError, match="layout"):
        E.tril_indices(3, 3, layout=[2, 3])
    assert E.tril_indices(3, 3, layout=E.strided).shape == (2, 6)


@pytest.mark.parametrize("p", [1e-30, 1e-5, 0.5, 2.0, 3.0, 400.0, math.inf, -1.0, -math.inf])
def test_a_norm_over_one_element_is_its_magnitude(p):
    """With one element per result, torch's vector norm is |x| for every order but 0; the
    power form (|x|^p)^(1/p) overflowed (the 2-norm of 1e200 was inf) or rounded |x| away
    (a 1e-30-norm of 3 was 1, so pairwise_distance(x1, x2, 1e-30) gave 1 everywhere)."""
    x = E.tensor([[1e200, 3.0], [-1e-200, -2.0]], dtype=E.float64)
    assert E.linalg.vector_norm(x[:, :1], p, dim=1).tolist() == [1e200, 1e-200]
    assert E.linalg.vector_norm(x[:1, 1:], p).item() == 3.0
    assert x[:1, 1:].norm(p, dim=(0, 1), keepdim=True).shape == (1, 1)
    assert E.linalg.vector_norm(E.tensor([-3.0], dtype=E.float16), p).dtype == E.float16
    assert E.linalg.vector_norm(E.tensor([3 + 4j]), p).item() == pytest.approx(5.0, rel=1e-6)
    pd = E.pairwise_distance(E.tensor([[-6], [-5], [-3]], dtype=E.int16), E.tensor([-5.0]), p)
    assert pd.tolist() == pytest.approx([1 - 1e-6, 1e-6, 2 + 1e-6], rel=1e-5)  # |x1 - x2 + eps|


def test_a_norm_of_order_0_still_counts():
    assert E.linalg.vector_norm(E.tensor([[0.0], [3.0]]), 0, dim=1).tolist() == [0.0, 1.0]


def test_cov_of_one_variable_is_0_d():
    assert E.cov(E.tensor([[1.0, 2.0, 4.0]])).shape == ()
    assert E.cov(E.tensor([[1.0, 2.0, 4.0]])).item() == pytest.approx(7 / 3)
    assert E.cov(E.tensor([[1.0, 2.0, 4.0], [1.0, 5.0, 2.0]])).shape == (2, 2)


def test_trapezoid_pads_a_lower_rank_x_with_leading_dims():
    """torch views an x of lower rank (but not 1) with leading 1s before taking its
    differences along dim: so dim counts from y's first dim for x too."""
    y = E.arange(24.0).reshape(2, 1, 4, 3)
    x = (E.arange(12.0) ** 2).reshape(1, 4, 3)
    assert E.cumulative_trapezoid(y, x, dim=0).shape == (0, 1, 4, 3)
    assert E.trapezoid(y, x, dim=0).shape == (1, 4, 3)
    # along a dim both have: (x[k+1] - x[k]) (y[k+1] + y[k]) / 2, summed
    x2 = (E.arange(12.0) ** 2).reshape(4, 3)
    assert E.trapezoid(y, x2, dim=2).sum().item() == 7551.0
    assert E.cumulative_trapezoid(y, x2, dim=2).sum().item() == 11430.0


def test_cosine_similarity_divides_by_each_clamped_norm_first():
    """torch's formula: (x1 / max(|x1|, eps)) . (x2 / max(|x2|, eps)); ember divided the dot
    product by sqrt(max(|x1|^2 |x2|^2, eps^2)), which differs once a norm is below eps, and
    rounds differently in a half type. F.cosine_similarity is the same function."""
    x1 = E.tensor([[1e-9, 0.0], [3.0, 4.0]], dtype=E.float64)
    x2 = E.tensor([[1.0, 1.0], [1e-10, 0.0]], dtype=E.float64)
    got = E.cosine_similarity(x1, x2, eps=1e-3).tolist()
    assert got == pytest.approx([1e-9 / 1e-3 / math.sqrt(2), 0.6 * 1e-10 / 1e-3], rel=1e-12)
    assert E.cosine_similarity(E.tensor([[1, 2, 3]]), E.tensor([[1.0, 0.5, 0.0]])).dtype \
        == E.float32  # integers as the common floating dtype
    with pytest.raises(RuntimeError, match="expected common dtype to be floating point"):
        E.cosine_similarity(E.tensor([[1, 2]]), E.tensor([[1, 2]]))
    nn_functional = pytest.importorskip("ember.nn.functional")
    assert nn_functional.cosine_similarity(x1, x2, 1, 1e-3).tolist() == got


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_and_std_take_torchs_three_forms_only(name):
    """torch's forms: f(unbiased), f(dim, unbiased=True, keepdim=False), f(dim=None, *,
    correction=None, keepdim=False). `unbiased` by keyword needs a dim (even None) beside
    keepdim, and a list of dims does not come as var-args: those mixes are its TypeError."""
    x = E.tensor([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])
    f = getattr(x, name)
    root = math.sqrt if name == "std" else (lambda v: v)
    assert f().item() == pytest.approx(root(8.0))
    assert f(False).item() == pytest.approx(root(20 / 3))
    assert f(None, True, True).shape == (1, 1)
    assert f(1, False).tolist() == pytest.approx([root(14 / 9), root(56 / 9)])
    assert f(1, correction=0, keepdim=True).shape == (2, 1)
    assert f(unbiased=False).item() == pytest.approx(root(20 / 3))
    for call in (lambda: f(unbiased=True, keepdim=True), lambda: f(0, 1),
                 lambda: f(None, None, True), lambda: f(0, unbiased=True, correction=1)):
        with pytest.raises(TypeError):
            call()


def test_count_nonzero_takes_dims_as_var_args_or_one_dim():
    x = E.tensor([[1.0, 0.0, 4.0], [3.0, 5.0, 0.0]])
    assert x.count_nonzero(0, 1).item() == 4 and x.count_nonzero((0, 1)).item() == 4
    assert x.count_nonzero(1).tolist() == [2, 2] and x.count_nonzero().item() == 4
    with pytest.raises(TypeError):
        x.count_nonzero(1.5)


def test_prod_takes_torchs_two_forms():
    """prod(input, *, dtype) of every element, or prod(input, int dim, keepdim, *, dtype,
    out): a dim of None, keepdim without a dim, and out= without a dim are TypeErrors."""
    x = E.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert x.prod().item() == 720.0 and x.prod(dtype=E.float64).dtype == E.float64
    assert x.prod(1).tolist() == [6.0, 120.0] and x.prod(1, True).shape == (2, 1)
    out = E.empty(3)
    assert E.prod(x, 0, out=out) is out and out.tolist() == [4.0, 10.0, 18.0]
    for call in (lambda: x.prod(None), lambda: x.prod(dim=None), lambda: x.prod(keepdim=True),
                 lambda: E.prod(x, out=E.empty(())), lambda: x.prod(1.5)):
        with pytest.raises(TypeError):
            call()


def test_out_dtypes_of_ops_that_keep_their_input_dtype():
    """conj_physical (torch's structured op), nan_to_num and heaviside write only into an out=
    of the input's dtype, with torch's messages (ember cast into any)."""
    xi = E.tensor([1, -2, 3], dtype=E.int32)
    xf = E.tensor([1.5, float("nan"), 3.0])
    with pytest.raises(RuntimeError, match="Found dtype Long but expected Int"):
        E.conj_physical(xi, out=E.empty(3, dtype=E.int64))
    assert E.conj_physical(xi, out=E.empty(3, dtype=E.int32)).tolist() == [1, -2, 3]
    with pytest.raises(RuntimeError, match="nan_to_num: dtype of out: Double should be same as "
                                           "input: Float"):
        E.nan_to_num(xf, out=E.empty(3, dtype=E.float64))
    assert E.nan_to_num(xf, out=E.empty(3)).tolist() == [1.5, 0.0, 3.0]
    with pytest.raises(RuntimeError, match="heaviside is not yet implemented for tensors with "
                                           "different dtypes"):
        E.heaviside(xf, xf, out=E.empty(3, dtype=E.float64))


def test_take_along_dim_without_a_dim_refuses_negative_indices():
    """Without a dim torch gathers from the flattened input, where a negative index is out of
    bounds; along a dim it counts from the end."""
    x = E.arange(6.0)
    with pytest.raises(RuntimeError, match="index -5 is out of bounds for dimension 0 with size 6"):
        E.take_along_dim(x, E.tensor(-5))
    assert E.take_along_dim(x, E.tensor([-1]), 0).tolist() == [5.0]
    assert E.take_along_dim(x.reshape(2, 3), E.tensor([[-1]]), 1).tolist() == [[2.0], [5.0]]


def test_random_of_a_floating_dtype_checks_its_range():
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for c10::Half"):
        E.zeros(3, dtype=E.float16).random_(70000)
    with pytest.raises(RuntimeError, match="from is out of bounds for c10::Half"):
        E.zeros(3, dtype=E.float16).random_(-70000, 5)
    drawn = E.zeros(200, dtype=E.float16).random_(60000)
    assert drawn.min().item() >= 0 and drawn.max().item() <= 60000
    assert E.zeros(3, dtype=E.bfloat16).random_(-2 ** 60, 5).max().item() <= 5


def test_nonzero_static_out_is_long():
    x = E.arange(6.0)
    with pytest.raises(RuntimeError, match="Expected out tensor to have scalar type Long"):
        E.nonzero_static(x > 2, size=2, out=E.empty(2, 1, dtype=E.float16))
    assert E.nonzero_static(x > 2, size=2, out=E.empty(2, 1, dtype=E.int64)).tolist() == [[3], [4]]


def test_cholesky_inverse_of_a_singular_factor_raises_torchs_error():
    with pytest.raises(E.linalg.LinAlgError, match="cholesky_inverse: The diagonal element 2 is "
                                                   "zero, the inversion could not be completed"):
        E.cholesky_inverse(E.tensor([[1.0, 0.0], [2.0, 0.0]]))
    with pytest.raises(E.linalg.LinAlgError, match="\\(Batch element 1\\): The diagonal element "
                                                   "2 is zero"):
        E.cholesky_inverse(E.tensor([[[1.0, 0.0], [2.0, 1.0]], [[1.0, 0.0], [2.0, 0.0]]]))
    inv = E.cholesky_inverse(E.tensor([[2.0, 0.0], [1.0, 3.0]]))  # (L L^T)^-1 by hand
    assert inv.flatten().tolist() == pytest.approx([10 / 36, -2 / 36, -2 / 36, 4 / 36])


@pytest.mark.parametrize("call,error,message", [
    # geqrf: every dtype but the LAPACK four is its kernel's refusal (after the rank check)
    (lambda: E.geqrf(E.ones(3, 3, dtype=E.float16)), NotImplementedError,
     "\"geqrf_cpu\" not implemented for 'Half'"),
    (lambda: E.geqrf(E.ones(3, 3, dtype=E.int32)), NotImplementedError,
     "\"geqrf_cpu\" not implemented for 'Int'"),
    # unflatten: the sizes first, then the dim; a 0-d input fails inside torch's handler
    (lambda: E.ones(3, 1).unflatten(3, []), RuntimeError, "sizes must be non-empty"),
    (lambda: E.unflatten(E.tensor(3), -1, [0]), RuntimeError, "unflatten got an unexpected error"),
    (lambda: E.unflatten(E.tensor(3), 2, [1]), IndexError, "Dimension out of range"),
    # kthvalue: the dim and k before the dtype
    (lambda: E.ones(2, 3, dtype=E.bool).kthvalue(2, 2), IndexError, "Dimension out of range"),
    (lambda: E.ones(3, dtype=E.bool).kthvalue(-2), RuntimeError, "selected number k out of range"),
    (lambda: E.ones(3, dtype=E.bool).kthvalue(1), NotImplementedError, "kthvalue_cpu"),
    # index_select: the index's rank before out='s dtype
    (lambda: E.index_select(E.ones(3, 1), 1, E.zeros(4, 4, dtype=E.int64),
                            out=E.empty(3, 1, dtype=E.float64)), IndexError,
     "Index is supposed to be a vector"),
])
def test_checks_in_torchs_order(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_polygamma_mvlgamma_and_ldexp_refuse_outs_and_exponents_as_torch():
    xi, xf = E.tensor([1, 2, 3]), E.tensor([1.5, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Char"):
        E.polygamma(1, xi, out=E.empty(3, dtype=E.int8))
    assert E.polygamma(1, xi, out=E.empty(3, dtype=E.float64)).tolist() == pytest.approx(
        [math.pi ** 2 / 6, math.pi ** 2 / 6 - 1, math.pi ** 2 / 6 - 1.25])
    with pytest.raises(RuntimeError, match="mvlgamma: result type Char can't be cast to the "
                                           "desired output type Float"):
        E.mvlgamma(xi.to(E.int8), p=2, out=E.empty(3, dtype=E.uint64))
    for exponent in (E.bool, E.uint16, E.uint64):
        with pytest.raises(NotImplementedError, match="ldexp_cpu_exp"):
            E.ldexp(xf, E.ones(3, dtype=exponent))
    assert E.ldexp(xf, E.ones(3, dtype=E.int16)).tolist() == [3.0, 4.0, 6.0]


def test_cumulative_trapezoid_of_no_samples_is_an_empty_float_result_in_torchs_order():
    # no shortcut: the formula's dtype (an integer y's halves are floats), and torch's checks
    for y, kw in ((E.zeros(0, dtype=E.int64), {}), (E.zeros(2, 0, dtype=E.int64), {"dx": 2}),
                  (E.zeros(0, dtype=E.int64), {"x": E.zeros(0, dtype=E.int64)})):
        x = kw.pop("x", None)
        r = E.cumulative_trapezoid(y, x, **kw) if x is not None else E.cumulative_trapezoid(
            y, **kw)
        assert r.dtype == E.float32 and r.numel() == 0
    assert E.cumulative_trapezoid(E.zeros(0, 2), dim=0).shape == (0, 2)
    u16 = E.zeros(3, dtype=E.uint16)
    with pytest.raises(NotImplementedError, match="add_stub"):
        E.cumulative_trapezoid(E.zeros(0), E.zeros(3, 1, dtype=E.uint16))
    with pytest.raises(NotImplementedError, match="add_stub"):
        E.cumulative_trapezoid(u16, dx=2)
    for f in (E.trapezoid, E.cumulative_trapezoid):
        name = f.__name__
        with pytest.raises(RuntimeError, match=f"{name}: Currently, we only support dx as a real"):
            f(u16, dx=True)  # dx before the unsigned sums
        with pytest.raises(RuntimeError, match=f"{name}: There must be one `x` value"):
            f(u16, E.zeros(5, dtype=E.uint16))  # the spacing's length before its kernel
    # given x, the dim first; given dx, the dtypes first (cumulative_trapezoid)
    b = E.zeros(3, 2, dtype=E.bool)
    with pytest.raises(IndexError, match="Dimension out of range"):
        E.cumulative_trapezoid(b, E.zeros(2), dim=2)
    with pytest.raises(RuntimeError, match="received a bool input for `y`"):
        E.cumulative_trapezoid(b, dim=2)
    assert E.cumulative_trapezoid(E.tensor([1, 3, 6]), dx=2).tolist() == [4.0, 13.0]


def test_ldexp_computes_the_power_as_torch():
    # an integer exponent exactly (2**200 fits float64; 2**130 times 2**-10 fits float32)
    assert E.ldexp(E.tensor([1.0], dtype=E.float64), E.tensor([200])).item() == 2.0 ** 200
    assert E.ldexp(E.tensor([2.0 ** -10]), E.tensor([130])).item() == 2.0 ** 120
    # a floating exponent in its own dtype: bfloat16's 2**3.75 is 13.4375
    assert E.ldexp(E.tensor([1.0]), E.tensor([3.75], dtype=E.bfloat16)).item() == 13.4375
    assert E.ldexp(E.tensor([1.0]), E.tensor([130.0], dtype=E.bfloat16)).item() == math.inf
    # a complex input: the complex dtype of the exponent's (bfloat16 counts as float32)
    z = E.ldexp(E.tensor([1 + 0j]), E.tensor([3.75], dtype=E.bfloat16)).item()
    assert z.real == pytest.approx(2 ** 3.75, rel=1e-6) and z.imag == 0
    with pytest.raises(NotImplementedError, match="ComplexHalf"):
        E.ldexp(E.tensor([1 + 0j]), E.tensor([1.0], dtype=E.float16))
    assert E.tensor([1 + 0j]).ldexp_(E.tensor([3])).item() == 8


def test_addcmul_converts_its_factors_to_the_common_dtype_first():
    # an int64 factor of a float16 input is rounded to float16 (inf), not multiplied in int64
    r = E.addcmul(E.tensor([1.0], dtype=E.float16), E.tensor([-5]),
                  E.tensor([3216058665284885772]))
    assert r.dtype == E.float16 and r.item() == -math.inf
    b = E.tensor([True])
    with pytest.raises(NotImplementedError, match="addcmul_cpu_out"):
        E.addcmul(b, b, b)
    assert E.addcmul(E.tensor([1.0]), E.tensor([2]), E.tensor([3]), value=0.5).item() == 4.0


def test_factory_outs_take_torchs_shapes():
    # factories resize out= to the result's shape; the ranges keep a shape of the same count
    o = E.empty(2, 3)
    assert E.zeros(6, out=o) is o and o.shape == (6,)
    for f in (lambda o: E.linspace(0, 1, 6, out=o), lambda o: E.logspace(0, 1, 6, out=o),
              lambda o: E.arange(6, out=o)):
        for o in (E.empty(2, 3), E.empty(3, 2).t()):
            r = f(o)
            assert r is o and o.shape == (2, 3)
            assert o.flatten().tolist() == f(None).tolist()
    assert E.linspace(0, 1, 0, out=E.empty(2, 0, 3)).shape == (2, 0, 3)
    with pytest.warns(UserWarning, match="resized to a tensor of shape \\(5,\\)"):
        assert E.arange(5, out=E.empty(2, 3)).shape == (5,)


def test_logical_not_has_no_kernel_writing_the_wide_unsigned_types():
    for dt in (E.uint16, E.uint32, E.uint64):
        with pytest.raises(NotImplementedError, match=f"logical_not_cpu.*{dt._torch_name}"):
            E.logical_not(E.ones(2), out=E.empty(2, dtype=dt))
    with pytest.raises(NotImplementedError, match="UInt16"):  # the input's type named first
        E.logical_not(E.ones(2, dtype=E.uint16), out=E.empty(2, dtype=E.uint32))
    assert E.logical_not(E.tensor([0.0, 2.0]), out=E.empty(2, dtype=E.uint8)).tolist() == [1, 0]


@pytest.mark.parametrize("source,listed", [
    ("m.pow(x.to(m.complex64), y)", True), ("m.pow(x.to(m.float32), y)", False),
])
def test_a_result_listing_can_name_its_inputs(source, listed):
    ours, theirs = ("ok", None), ("ok", None)
    reason = differences.reason_for("pow", differences.RESULT, ours, theirs, source)
    assert (reason is not None) == listed


def test_factories_compute_in_outs_dtype_and_refuse_a_contradicting_dtype():
    for f in (lambda **k: E.zeros(2, **k), lambda **k: E.eye(2, **k),
              lambda **k: E.arange(2, **k), lambda **k: E.linspace(0, 1, 2, **k),
              lambda **k: E.rand(2, **k)):
        with pytest.raises(RuntimeError, match=r"dtype Float does not match dtype of out "
                                               r"parameter \(Short\)"):
            f(out=E.empty(2, dtype=E.int16), dtype=E.float32)
    # full's value goes into out='s dtype (not the bool or int64 it would infer)
    o = E.empty(2, dtype=E.float64)
    assert E.full((2,), True, out=o).tolist() == [1.0, 1.0] and o.dtype == E.float64


@pytest.mark.parametrize("dtype", [E.uint16, E.uint32, E.uint64, E.bool])
def test_range_factories_name_torchs_kernels_for_the_dtypes_they_lack(dtype):
    name = dtype._torch_name
    with pytest.raises(NotImplementedError, match=f'"arange_cpu" not implemented for .{name}'):
        E.arange(3, dtype=dtype)
    with pytest.raises(NotImplementedError, match=f'"linspace_cpu" not implemented for .{name}'):
        E.linspace(0, 1, 3, out=E.empty(3, dtype=dtype))
    with pytest.raises(NotImplementedError, match=f'"logspace_cpu" not implemented for .{name}'):
        E.logspace(0, 1, 3, dtype=dtype)
    # one step or none is a fill, not the kernel: any dtype takes it
    assert E.linspace(1, 2, 1, dtype=dtype).tolist() == [1]
    assert E.logspace(0, 1, 0, dtype=dtype).numel() == 0
    if dtype != E.bool:
        with pytest.raises(NotImplementedError, match=f'"eye" not implemented for .{name}'):
            E.eye(0, dtype=dtype)


def test_complex_logspace_is_base_to_the_complex_linspace():
    r = E.logspace(0, 2, 3, dtype=E.complex64)
    assert r.dtype == E.complex64 and r.tolist() == [1, 10, 100]
    z = E.logspace(0, 1j, 3, base=math.e, dtype=E.complex128).tolist()
    for got, want in zip(z, (1, cmath.exp(0.5j), cmath.exp(1j))):
        assert got == pytest.approx(want, abs=1e-12)


def test_random_bounds_refuse_complex_as_torchs_checks():
    z = E.empty(2, dtype=E.complex64)
    for call in (lambda: z.random_(0, 3), lambda: E.randint(3, (2,), dtype=E.complex64)):
        with pytest.raises(RuntimeError, match="check_random_bounds handles only integral"):
            call()
    with pytest.raises(RuntimeError, match="random_from_to_impl handles only integral"):
        z.random_(3, None)


@pytest.mark.parametrize("call,error,message", [
    # an out= for a pair of results holds two tensors, checked before the op's own checks
    (lambda: E.sort(E.ones(2), dim=5, out=[E.ones(2)]), TypeError,
     "expected tuple of 2 elements but got 1"),
    (lambda: E.frexp(E.ones(2, dtype=E.int64), out=[]), TypeError,
     "expected tuple of 2 elements but got 0"),
    (lambda: E.kthvalue(E.ones(3), 1, out=(E.ones(1),) * 3), TypeError,
     "expected tuple of 2 elements but got 3"),
    # a memory_format that is not one is the parser's TypeError, not an unsupported format
    (lambda: E.empty(2, memory_format=(0, 1)), TypeError,
     "argument 'memory_format' must be ember.memory_format, not tuple"),
    (lambda: E.empty_like(E.ones(2), memory_format=E.ones(2)), TypeError, "memory_format"),
    (lambda: E.ones(2).cuda(0, 1), TypeError, r"cuda\(\)"),  # non_blocking: a bool
    # nuclear_norm's dim is int[2]: one int stands for two (torch's parser)
    (lambda: E.nuclear_norm(E.ones(2, 3, 4), 1), RuntimeError, r"dims must be different. Got "
                                                               r"\(1, 1\)"),
    # cholesky_inverse: the shape, then LAPACK's four dtypes
    (lambda: E.ones(2, 3, dtype=E.int32).cholesky_inverse(), RuntimeError, "square matrices"),
    (lambda: E.eye(2, dtype=E.int32).cholesky_inverse(), NotImplementedError,
     "\"cholesky_inverse_out_cpu\" not implemented for 'Int'"),
])
def test_parser_level_refusals_as_torchs(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_abs_of_complex_writes_a_complex_out_of_its_dtype_or_a_castable_real_one():
    z = E.tensor([3 + 4j])
    assert E.abs(z, out=E.empty(1, dtype=E.complex64)).tolist() == [5 + 0j]
    assert E.abs(z, out=E.empty(1, dtype=E.bfloat16)).tolist() == [5.0]
    with pytest.raises(RuntimeError, match="Found dtype ComplexDouble but expected ComplexFloat"):
        E.abs(z, out=E.empty(1, dtype=E.complex128))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        E.abs(E.tensor([-2.0]), out=E.empty(1, dtype=E.float64))  # a real input's is exact


def test_ldexp_of_an_integer_input_takes_the_exponents_floating_dtype():
    # no promotion of the two integer dtypes (torch has none for the wide unsigned ones)
    for dt in (E.uint16, E.uint64, E.int32):
        r = E.ldexp(E.ones(2, dtype=dt), E.ones(2, dtype=E.int64))
        assert r.dtype == E.float32 and r.tolist() == [2.0, 2.0]
        assert E.ldexp(E.ones(2, dtype=dt), E.ones(2, dtype=E.float16)).dtype == E.float16
    assert E.ldexp(E.ones(1, dtype=E.complex64), E.ones(1, dtype=E.uint16)).dtype == E.complex64
    assert E.ldexp(E.ones(1, dtype=E.bfloat16), E.ones(1, dtype=E.int16)).dtype == E.bfloat16


def test_sum_mean_prod_of_complex_into_a_real_dtype_cast_the_input_first():
    # torch casts the input to the dtype (its imaginary part dropped, with a warning), then
    # reduces: 1.5 + 2.5 as int64 is 1 + 2
    z = E.tensor([1.5 + 2j, 2.5 - 1j])
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        assert E.sum(z, dtype=E.int64).item() == 3
    with pytest.warns(UserWarning):
        assert E.mean(z, dtype=E.float64).item() == 2.0
    with pytest.warns(UserWarning):
        assert E.prod(z, 0, dtype=E.float64).item() == 3.75
    with pytest.warns(UserWarning):
        assert E.sum(z, 0, out=E.empty((), dtype=E.float32)).item() == 4.0
    assert E.sum(z, dtype=E.complex128).item() == 4 + 1j
    with pytest.raises(RuntimeError, match="nansum on CPU does not support complex"):
        E.nansum(z, dtype=E.float32)


@pytest.mark.parametrize("call,message", [
    (lambda o: E.sum(E.ones(2), 0, dtype=E.float64, out=o), "Expected out tensor to have dtype "
                                                            "double, but got float instead"),
    (lambda o: E.mean(E.ones(2), 0, dtype=E.float64, out=o), "dtype double, but got float"),
    (lambda o: E.prod(E.ones(2), 0, dtype=E.float64, out=o), "dtype double, but got float"),
    (lambda o: E.cumsum(E.ones(1), 0, dtype=E.float64, out=o), "dtype double, but got float"),
    (lambda o: E.cumprod(E.ones(1), 0, dtype=E.float64, out=o), "dtype double, but got float"),
    (lambda o: E.nansum(E.ones(2), 0, dtype=E.float64, out=o),
     "nansum: provided dtype must match dtype of result. Got Float and Double"),
])
def test_a_reductions_dtype_and_out_must_agree(call, message):
    with pytest.raises(RuntimeError, match=message):
        call(E.empty((), dtype=E.float32))
    assert call(E.empty((), dtype=E.float64)).dtype == E.float64


def test_einsums_argument_errors_are_torchs_value_errors():
    with pytest.raises(ValueError, match="must specify the equation string"):
        E.einsum()
    with pytest.raises(ValueError, match=r"not within the valid range \[0, 52\)"):
        E.einsum(E.ones(3), [60])
    assert E.einsum(E.ones(3), [0], E.ones(3), [0], []).item() == 3.0


def test_unravel_index_takes_any_sequence_as_its_shape():
    """(seed 743) torch's unravel_index takes any sequence of ints as the shape, a str too: ''
    is the shape (), and a str with characters fails on its first entry."""
    import numpy as np

    assert E.unravel_index(E.tensor([0]), "") == ()
    assert E.unravel_index(E.tensor([0, 0]), []) == ()
    with pytest.raises(TypeError, match="sequence to only contain ints, but got <class 'str'>"):
        E.unravel_index(E.tensor([1]), "ab")
    got = E.unravel_index(E.tensor([1, 3, 5]), range(2, 5))
    want = np.unravel_index([1, 3, 5], (2, 3, 4))
    assert [g.tolist() for g in got] == [w.tolist() for w in want]
    with pytest.raises(TypeError, match="int or sequence of ints, but got <class 'set'>"):
        E.unravel_index(E.tensor([1]), {2})


def test_take_refuses_an_out_whose_elements_share_memory():
    """(seed 751) take(out=) checks out for internal overlap before resizing it, as torch's
    take_out: an expanded out is refused even where the result's shape differs from out's."""
    src = E.arange(24.0).reshape(2, 3, 4)
    idx = E.tensor([[0, 5], [23, 7]])
    out = E.zeros(4).unsqueeze(0).expand(2, 4)
    with pytest.raises(RuntimeError, match="take: unsupported operation: more than one element"):
        E.take(src, idx, out=out)
    assert out.tolist() == [[0.0] * 4] * 2  # nothing written
    fresh = E.empty(2, 2)
    assert E.take(src, idx, out=fresh).tolist() == [[0.0, 5.0], [23.0, 7.0]]
