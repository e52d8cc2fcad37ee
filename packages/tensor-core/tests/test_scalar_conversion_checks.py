"""A number argument converted into the dtype an op computes in is checked, as torch's kernels
check it (c10's checked_convert): a value the dtype cannot hold is a RuntimeError "value cannot be
converted to type <C++ type> without overflow", also when the tensor is empty. inf and NaN pass
into floating types; negative integers wrap into unsigned ones; float16/bfloat16 kernels that
compute in float32 check against float32. The expectations are torch 2.13's, written out."""

import math

import pytest

import ember
import ember.nn.functional as F

E = ember
h, bf, f32, i8, i32, u8 = E.float16, E.bfloat16, E.float32, E.int8, E.int32, E.uint8


def ones(n=2, dtype=f32):
    return E.ones(n, dtype=dtype)


REFUSED = [  # (call, the C++ type named in the message)
    (lambda: E.add(ones(2, i8), ones(2, i8), alpha=1000), "int8_t"),
    (lambda: E.add(ones(2, i8), 1, alpha=1000), "int8_t"),
    (lambda: E.add(ones(2, h), ones(2, h), alpha=1e6), "c10::Half"),
    (lambda: E.add(ones(0), ones(0), alpha=1e300), "float"),
    (lambda: ones().add_(ones(), alpha=1e300), "float"),
    (lambda: E.add(ones(2, u8), 1, alpha=-300), "uint8_t"),
    (lambda: E.sub(ones(2, E.int16), ones(2, E.complex64), alpha=1e300), "c10::complex<float>"),
    (lambda: E.rsub(ones(), 1, alpha=1e300), "float"),
    (lambda: E.threshold(ones(), 0.5, 1e300), "float"),
    (lambda: E.threshold(ones(0), 0.5, 1e300), "float"),
    (lambda: E.threshold(ones(2, i32), math.nan, 2), "int"),
    (lambda: E.threshold(ones(2, i32), 1, 2**40), "int"),
    (lambda: E.hardshrink(ones(2, bf), 1e300), "c10::BFloat16"),
    (lambda: E.pow(ones(2, i32), 2**40), "int"),
    (lambda: E.pow(ones(0, h), 1e6), "c10::Half"),
    (lambda: E.full([0], 1e300), "float"),
    (lambda: E.full([2], 2**40, dtype=i32), "int"),
    (lambda: ones(0, i8).fill_(1000), "int8_t"),
    (lambda: E.full_like(ones(0, u8), math.nan, dtype=i8), "int8_t"),
    (lambda: E.scalar_tensor(math.nan, dtype=E.uint32), "uint32_t"),
    (lambda: E.linspace(1e300, 1, 1), "float"),
    (lambda: E.linspace(0, 2**40, 3, dtype=i32), "int"),
    (lambda: E.linspace(0, 1e6, 2, dtype=h), "c10::Half"),
    (lambda: E.logspace(0, 1e300, 2), "float"),
    (lambda: E.arange(0, 1e300, 1e299, dtype=h), "float"),
    (lambda: E.constant_pad_nd(ones(), (0, 1), 1e300), "float"),
    (lambda: F.pad(ones(2, i8), (0, 1), value=1000), "int8_t"),
    (lambda: E.addcmul(ones(2, bf), ones(2, bf), ones(2, bf), value=1e300), "float"),
    (lambda: E.addcmul(ones(2, i8), ones(2, i8), ones(2, i8), value=1000), "int8_t"),
    (lambda: ones().addcdiv(ones(), ones(), value=1e300), "float"),
    (lambda: ones(2, h).lerp(ones(2, h), 1e300), "float"),
    (lambda: ones(2, h).logit(1e300), "c10::Half"),
    (lambda: F.elu(ones(2, h), 1e300), "float"),
    (lambda: F.celu(ones(2, h), 1e300), "float"),
    (lambda: F.softplus(ones(), 1, 1e300), "float"),
    (lambda: F.leaky_relu(ones(2, h), 1e300), "float"),
    (lambda: F.rrelu(ones(), 1e300, 1e301), "float"),
    (lambda: E.ones(2, 2).addmm(E.ones(2, 2), E.ones(2, 2), beta=1e300), "float"),
    (lambda: E.ones(2, 2, dtype=i8).addmm(E.ones(2, 2, dtype=i8), E.ones(2, 2, dtype=i8),
                                           alpha=1000), "int8_t"),
    (lambda: E.addmv(ones(), E.ones(2, 2), ones(), beta=1e300), "float"),
    (lambda: E.addr(E.ones(2, 2), ones(), ones(), alpha=1e300), "float"),
    (lambda: E.baddbmm(E.ones(1, 2, 2), E.ones(1, 2, 2), E.ones(1, 2, 2), alpha=1e300), "float"),
    (lambda: E.ones(2, dtype=h).clamp(max=1e300), "c10::Half"),
]


@pytest.mark.parametrize("call,type_name", REFUSED)
def test_number_the_dtype_cannot_hold_is_refused(call, type_name):
    with pytest.raises(RuntimeError, match=f"value cannot be converted to type {type_name} "
                                           "without overflow"):
        call()


ACCEPTED = [  # torch computes these: the number fits the type it is converted into
    (lambda: E.add(ones(), 1, alpha=math.inf), [math.inf] * 2),
    (lambda: E.add(ones(2, u8), 1, alpha=-1), [0, 0]),  # a negative int wraps into unsigned
    (lambda: E.add(ones(2, E.bool), True, alpha=True), [True, True]),
    (lambda: E.threshold(ones(2, h), 1e10, 2), [2.0, 2.0]),  # float16 thresholds in float32
    (lambda: E.threshold(ones(2, i32), 0.5, 2), [1, 1]),
    (lambda: E.full([2], -1, dtype=u8), [255, 255]),
    (lambda: E.full([2], 2, dtype=E.bool), [True, True]),
    (lambda: E.linspace(1e300, 1, 0), []),
    (lambda: F.pad(ones(), (0, 0), value=1e300), [1.0, 1.0]),
    (lambda: ones(2, h).lerp(ones(2, h), 1e6), [1.0, 1.0]),  # float16 weights in float32
    (lambda: F.leaky_relu(-ones(2, h), 100.0), [-100.0, -100.0]),
    (lambda: E.addcmul(ones(2, h), ones(2, h), ones(2, h) * 1e-3, value=1e5),
     [101.0, 101.0]),  # value beyond float16's range: torch computes in float32
    (lambda: ones().mul(1e300), [math.inf] * 2),  # a wrapped number operand is not a kernel
    (lambda: ones(2, i8).mul(1000), [-24, -24]),  # argument: it is cast, as torch's
    (lambda: E.arange(0, 1e300, 1e299)[:2], [0.0, math.inf]),  # float32 accumulates in double
]


@pytest.mark.parametrize("call,want", ACCEPTED)
def test_number_the_dtype_can_hold_is_used(call, want):
    got = call().tolist()
    if want and isinstance(want[0], float):
        assert got == pytest.approx(want, rel=1e-3)
    else:
        assert got == want


def test_softshrink_lambda_range_is_checked_with_torch_message():
    with pytest.raises(RuntimeError, match=r"lambda must be in range \[0, 65504\] for input dtype "
                                           r"Half, but found 1e\+300"):
        F.softshrink(ones(2, h), 1e300)
    with pytest.raises(RuntimeError, match=r"lambda must be in range \[0, 3.40282e\+38\] for input "
                                           "dtype Float, but found -1"):
        F.softshrink(ones(), -1)
    assert F.softshrink(ones() * 2, 0.5).tolist() == [1.5, 1.5]
