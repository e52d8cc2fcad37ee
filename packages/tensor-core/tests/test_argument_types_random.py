"""The random ops: wrong argument types are TypeErrors as torch's parser raises them.

Each case is written once against a module `M` (ember, or torch when installed) so that the same
call is checked against both: ember must raise TypeError, and so must torch.
"""
import pytest
from type_error_cases import case_ids, check_type_error_as_torch

import ember

# (op, call, a fragment of ember's message)
CASES = [
    ("rand", lambda M: M.rand(2, generator=5), "rand(): argument 'generator' must be ember.Generator, not int"),
    ("rand", lambda M: M.rand("a"), "rand(): argument 'size' (position 1) must be tuple of ints, not str"),
    ("randn", lambda M: M.randn(2, dtype="float32"), "randn(): argument 'dtype' must be ember.dtype, not str"),
    ("randn", lambda M: M.randn(), "randn() missing 1 required positional arguments: \"size\""),
    ("randint", lambda M: M.randint(3, 2), "randint() received an invalid combination of arguments"),
    ("randint", lambda M: M.randint(3, (2,), low=0), "randint() received an invalid combination of arguments"),
    ("randint", lambda M: M.randint(3.5, (2,)), "randint() received an invalid combination of arguments"),
    ("randperm", lambda M: M.randperm(3.0), "randperm(): argument 'n' (position 1) must be int, not float"),
    ("rand_like", lambda M: M.rand_like([1.0]), "rand_like(): argument 'input' (position 1) must be Tensor, not list"),
    ("randn_like", lambda M: M.randn_like(M.zeros(2), 3), "randn_like() takes 1 positional argument but 2 were given"),
    ("randint_like", lambda M: M.randint_like(M.zeros(2), "a"), "randint_like() received an invalid combination of arguments"),
    ("normal", lambda M: M.normal(0.0, 1.0, 2), "normal() received an invalid combination of arguments"),
    ("normal", lambda M: M.normal("a", 1.0), "normal() received an invalid combination of arguments"),
    ("bernoulli", lambda M: M.bernoulli(M.zeros(2), None), "bernoulli() received an invalid combination of arguments"),
    ("bernoulli", lambda M: M.bernoulli(M.zeros(2), M.zeros(2)), "bernoulli() received an invalid combination of arguments"),
    ("bernoulli", lambda M: M.bernoulli(M.zeros(2), 0.5, out=M.zeros(2)), "bernoulli() received an invalid combination of arguments"),
    ("multinomial", lambda M: M.multinomial(M.ones(3), 2.0), "multinomial(): argument 'num_samples' (position 2) must be int, not float"),
    ("multinomial", lambda M: M.ones(3).multinomial(2, replacement=None), "multinomial(): argument 'replacement' must be bool, not NoneType"),
    ("uniform_", lambda M: M.zeros(2).uniform_("a"), "uniform_(): argument 'from' (position 1) must be float, not str"),
    ("normal_", lambda M: M.zeros(2).normal_(0.0, 1.0, generator="g"), "normal_(): argument 'generator' must be ember.Generator, not str"),
    ("exponential_", lambda M: M.zeros(2).exponential_(None), "exponential_(): argument 'lambd' (position 1) must be float, not NoneType"),
    ("bernoulli_", lambda M: M.zeros(2).bernoulli_("a"), "bernoulli_() received an invalid combination of arguments"),
    ("random_", lambda M: M.zeros(2).random_(None), "random_() received an invalid combination of arguments"),
    ("random_", lambda M: M.zeros(2).random_(1.5), "random_() received an invalid combination of arguments"),
]


@pytest.mark.parametrize("op,call,message", CASES, ids=case_ids(CASES))
def test_a_wrong_argument_type_is_torchs_type_error(op, call, message):
    check_type_error_as_torch(call, message)


@pytest.mark.parametrize("call", [
    lambda M, g: M.rand(2, 3, generator=g),
    lambda M, g: M.randn((2, 3), generator=g),
    lambda M, g: M.randint(5, (2, 3), generator=g),
    lambda M, g: M.randint(low=2, high=5, size=(2, 3), generator=g),
    lambda M, g: M.zeros(2, 3).random_(7, generator=g),
    lambda M, g: M.zeros(2, 3).random_(2, None, generator=g),
    lambda M, g: M.zeros(2, 3).random_(to=4, generator=g),
    # torch's float parameters take a bool and a 0-d tensor
    lambda M, g: M.zeros(2, 3).uniform_(True, 2, generator=g),
    lambda M, g: M.zeros(2, 3).uniform_(M.tensor(0.5), 2, generator=g),
    lambda M, g: M.normal(True, 0, [2, 3], generator=g),
    lambda M, g: M.bernoulli(M.zeros(2, 3), M.tensor(True), generator=g),
])
def test_the_forms_torch_takes_draw_torchs_numbers(call):
    torch = pytest.importorskip("torch")
    a = call(ember, ember.Generator().manual_seed(7))
    b = call(torch, torch.Generator().manual_seed(7))
    assert a.tolist() == b.tolist()


def test_every_random_op_is_a_registered_row():
    rows = {(r["name"], tuple(r["variants"])) for r in ember._C._ops() if r["family"] == "random"}
    for name in ("rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
                 "normal"):
        assert (name, ("function",)) in rows, name
    for name in ("bernoulli", "multinomial"):
        assert (name, ("function", "method")) in rows, name
    for name in ("uniform_", "normal_", "exponential_", "bernoulli_", "random_"):
        assert (name, ("method",)) in rows and ("_" + name, ("function",)) in rows, name


@pytest.mark.parametrize("call", [
    lambda t: t.normal_(),
    lambda t: t.exponential_(),
], ids=["normal_", "exponential_"])
def test_an_empty_integer_tensor_has_nothing_to_draw(call):
    # torch checks the dtype only when there is something to draw; the parameters always
    t = ember.zeros(2, 0, dtype=ember.int8)
    assert call(t) is t
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        t.normal_(0.0, -1.0)
    with pytest.raises(NotImplementedError, match="normal_kernel_cpu"):
        ember.zeros(2, dtype=ember.int8).normal_()
