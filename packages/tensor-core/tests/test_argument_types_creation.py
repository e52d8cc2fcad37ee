"""The factory functions: wrong argument types are TypeErrors as torch's parser raises them, and
the factory keywords that ember cannot honour raise instead of being ignored.

Each case is written once against a module `M` (ember, or torch when installed) so that the same
call is checked against both.
"""
import pytest
from type_error_cases import case_ids, check_type_error_as_torch

import ember

# (op, call, a fragment of ember's message)
CASES = [
    ("zeros", lambda M: M.zeros("a"), "zeros(): argument 'size' (position 1) must be tuple of ints, not str"),
    ("zeros", lambda M: M.zeros(2, dtype="float32"), "zeros(): argument 'dtype' must be ember.dtype, not str"),
    ("zeros", lambda M: M.zeros(2, layout=3), "zeros(): argument 'layout' must be ember.layout, not int"),
    ("zeros", lambda M: M.zeros(2, generator=None), "zeros() got an unexpected keyword argument 'generator'"),
    ("ones", lambda M: M.ones((2, 3), 4), "ones() takes 1 positional argument but 2 were given"),
    ("ones", lambda M: M.ones(2, requires_grad="yes"), "ones(): argument 'requires_grad' must be bool, not str"),
    ("empty", lambda M: M.empty(), "empty() missing 1 required positional arguments: \"size\""),
    ("empty", lambda M: M.empty(2, device=1.5), "empty(): argument 'device' must be ember.device, not float"),
    ("full", lambda M: M.full(2, 1.0), "full(): argument 'size' (position 1) must be tuple of ints, not int"),
    ("full", lambda M: M.full((2,), "a"), "full(): argument 'fill_value' (position 2) must be Number, not str"),
    ("empty_strided", lambda M: M.empty_strided(2, 1), "empty_strided(): argument 'size' (position 1) must be tuple of ints, not int"),
    ("zeros_like", lambda M: M.zeros_like([1.0]), "zeros_like(): argument 'input' (position 1) must be Tensor, not list"),
    ("ones_like", lambda M: M.ones_like(M.zeros(2), 3), "ones_like() takes 1 positional argument but 2 were given"),
    ("full_like", lambda M: M.full_like(M.zeros(2), None), "full_like(): argument 'fill_value' (position 2) must be Number, not NoneType"),
    ("empty_like", lambda M: M.empty_like(M.zeros(2), dtype=3), "empty_like(): argument 'dtype' must be ember.dtype, not int"),
    ("tensor", lambda M: M.tensor([1], M.float64), "tensor() takes 1 positional argument but 2 were given"),
    ("as_tensor", lambda M: M.as_tensor([1], requires_grad=True), "as_tensor() got an unexpected keyword argument 'requires_grad'"),
    ("arange", lambda M: M.arange("a"), "arange() received an invalid combination of arguments"),
    ("arange", lambda M: M.arange(5, step=2), "arange() received an invalid combination of arguments"),
    ("arange", lambda M: M.arange(1, 5, 2, 7), "arange() received an invalid combination of arguments"),
    ("linspace", lambda M: M.linspace(0, 1, 5.0), "linspace(): argument 'steps' (position 3) must be int, not float"),
    ("logspace", lambda M: M.logspace(0, 1, 5, base="e"), "logspace(): argument 'base' must be float, not str"),
    ("eye", lambda M: M.eye(3, 2.0), "eye() received an invalid combination of arguments"),
    ("eye", lambda M: M.eye(3, None), "eye() received an invalid combination of arguments"),
    ("scalar_tensor", lambda M: M.scalar_tensor("a"), "scalar_tensor(): argument 's' (position 1) must be Number, not str"),
]


@pytest.mark.parametrize("op,call,message", CASES, ids=case_ids(CASES))
def test_a_wrong_argument_type_is_torchs_type_error(op, call, message):
    check_type_error_as_torch(call, message)


@pytest.mark.parametrize("call", [
    lambda: ember.zeros(2, 3),
    lambda: ember.zeros((2, 3)),
    lambda: ember.zeros([2, 3]),
    lambda: ember.zeros(size=(2, 3)),
])
def test_the_size_by_arguments_or_as_one_sequence(call):
    assert call().shape == (2, 3)
    assert ember.zeros([]).shape == ()


def test_a_strided_layout_and_no_pinning_are_accepted():
    t = ember.ones(2, layout=ember.strided, pin_memory=False, requires_grad=None)
    assert t.tolist() == [1.0, 1.0]
    assert ember.zeros_like(t, layout=None, memory_format=None).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("call", [
    lambda: ember.rand_like(ember.zeros(2, 3, 4, 5), memory_format=ember.channels_last),
    lambda: ember.randint_like(ember.zeros(1, 2, 3, 4, 5), 3,
                               memory_format=ember.channels_last_3d),
], ids=["rand_like", "randint_like"])
def test_a_memory_format_is_refused_not_ignored(call):
    with pytest.raises(NotImplementedError, match="memory_format=.* is not supported"):
        call()


def test_empty_and_the_filled_likes_lay_out_their_memory_format():
    """Strides as torch's (C innermost for channels_last; contiguous_format makes a contiguous
    tensor even from a channels_last input; preserve_format keeps the input's layout)."""
    x = ember.ones(2, 3, 4, 5).contiguous(memory_format=ember.channels_last)
    assert ember.empty(2, 3, 4, 5, memory_format=ember.channels_last).stride() == (60, 1, 15, 3)
    assert ember.empty(1, 2, 3, 4, 5, memory_format=ember.channels_last_3d).stride() == \
        (120, 1, 40, 10, 2)
    assert ember.zeros_like(x, memory_format=ember.contiguous_format).stride() == (60, 20, 5, 1)
    assert ember.ones_like(x).stride() == (60, 1, 15, 3)
    y = ember.full_like(ember.ones(2, 3, 4, 5), 7.0, memory_format=ember.channels_last)
    assert y.stride() == (60, 1, 15, 3) and (y.numpy() == 7.0).all()
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        ember.zeros_like(ember.ones(2, 3), memory_format=ember.channels_last)
    with pytest.raises(RuntimeError, match="required rank 5 tensor"):
        ember.empty(2, 3, 4, 5, memory_format=ember.channels_last_3d)
    with pytest.raises(RuntimeError, match="unsupported memory format Preserve"):
        ember.empty(2, 3, memory_format=ember.preserve_format)


@pytest.mark.parametrize("call", [
    lambda: ember.empty(2, memory_format=object()),
    lambda: ember.empty_like(ember.zeros(2), memory_format=object()),
    lambda: ember.ones_like(ember.zeros(2), memory_format="channels_last"),
], ids=["empty", "empty_like", "ones_like"])
def test_what_is_not_a_memory_format_is_torchs_type_error(call):
    with pytest.raises(TypeError, match="argument 'memory_format' must be ember.memory_format"):
        call()


@pytest.mark.skipif(ember.cuda.is_available(), reason="pinning works where CUDA does")
@pytest.mark.parametrize("op", ["zeros", "ones", "empty", "rand", "randn"])
def test_pin_memory_without_cuda_is_an_error_not_ignored(op):
    # torch's CPU-only build raises RuntimeError too
    with pytest.raises(RuntimeError, match="CUDA"):
        getattr(ember, op)(2, pin_memory=True)


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs CUDA")
def test_pin_memory_pins_the_result():
    t = ember.zeros(3, pin_memory=True)
    assert t.is_pinned() and t.tolist() == [0.0] * 3


def test_every_creation_op_is_a_registered_row():
    rows = {r["name"]: r for r in ember._C._ops() if r["family"] == "creation"}
    for name in ("empty", "zeros", "ones", "full", "empty_strided", "empty_like", "zeros_like",
                 "ones_like", "full_like", "tensor", "as_tensor", "arange", "linspace", "logspace",
                 "eye", "scalar_tensor"):
        assert rows[name]["binding"] == "generated", name
        assert rows[name]["variants"] == ["function"], name
