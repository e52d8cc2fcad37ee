"""Random numbers: generators, seeding and state, the sampling factories and in-place samplers,
their distributions, their errors, and (when PyTorch is installed) parity with PyTorch's CPU
streams for the same seed."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int64", "int32", "int16", "int8", "uint8"]


def N(t: ember.Tensor) -> np.ndarray:
    if t.dtype in (ember.float16, ember.bfloat16):
        t = t.float()
    return np.array(t.tolist(), dtype=np.float64).reshape(tuple(t.shape))


@pytest.fixture(autouse=True)
def _restore_default_generator():
    state = ember.get_rng_state()
    yield
    ember.set_rng_state(state)


# ---------------------------------------------------------------------------------------------
# seeding, generators, state


def test_manual_seed_makes_streams_reproducible():
    for make in (
        lambda: ember.rand(50),
        lambda: ember.randn(50),
        lambda: ember.randn(5, dtype=ember.float64),
        lambda: ember.randint(0, 100, (50,)),
        lambda: ember.randperm(50),
        lambda: ember.empty(40).uniform_(-2, 3),
        lambda: ember.multinomial(ember.ones(10), 5),
    ):
        ember.manual_seed(7)
        first = N(make())
        ember.manual_seed(7)
        np.testing.assert_array_equal(N(make()), first)
        ember.manual_seed(8)
        assert not np.array_equal(N(make()), first)


def test_manual_seed_returns_the_default_generator():
    g = ember.manual_seed(3)
    assert g is ember.default_generator
    assert isinstance(g, ember.Generator)
    assert ember.initial_seed() == 3
    assert g.initial_seed() == 3
    # negative seeds wrap to uint64, floats are truncated, like torch
    ember.manual_seed(-1)
    assert ember.initial_seed() == 2**64 - 1
    ember.manual_seed(5.9)
    assert ember.initial_seed() == 5
    with pytest.raises(ValueError, match="Overflow"):
        ember.manual_seed(2**64)


def test_seed_is_nondeterministic_and_recorded():
    s1 = ember.seed()
    assert isinstance(s1, int) and 0 <= s1 < 2**53
    assert ember.initial_seed() == s1
    a = N(ember.rand(8))
    s2 = ember.seed()
    assert s2 != s1
    assert not np.array_equal(N(ember.rand(8)), a)


def test_generators_are_independent():
    g1 = ember.Generator().manual_seed(11)
    g2 = ember.Generator()
    assert g2.manual_seed(11) is g2
    ember.manual_seed(0)
    before = N(ember.rand(5))
    a = N(ember.rand(100, generator=g1))
    ember.manual_seed(0)
    np.testing.assert_array_equal(N(ember.rand(5)), before)  # g1 leaves the default alone
    b = N(ember.rand(100, generator=g2))
    np.testing.assert_array_equal(a, b)
    ember.manual_seed(11)
    np.testing.assert_array_equal(N(ember.rand(100)), a)  # same seed, same stream as default
    assert g1.initial_seed() == 11
    assert str(g1.device) == "cpu"
    assert isinstance(g1.seed(), int)


def test_generator_default_seed_matches_a_fresh_default():
    g = ember.Generator()
    assert g.initial_seed() == 67280421310721


def test_state_round_trip():
    ember.manual_seed(1)
    ember.randn(3)  # leaves a cached normal in the state
    state = ember.get_rng_state()
    assert state.dtype == ember.uint8 and state.dim() == 1
    a = N(ember.randn(3)), N(ember.rand(20)), N(ember.randint(0, 9, (5,)))
    ember.set_rng_state(state)
    b = N(ember.randn(3)), N(ember.rand(20)), N(ember.randint(0, 9, (5,)))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    g = ember.Generator().manual_seed(4)
    s = g.get_state()
    x = N(ember.rand(10, generator=g))
    assert g.set_state(s) is g
    np.testing.assert_array_equal(N(ember.rand(10, generator=g)), x)
    # a state carries over to another generator
    h = ember.Generator()
    h.set_state(s)
    np.testing.assert_array_equal(N(ember.rand(10, generator=h)), x)


def test_bad_states_are_refused():
    with pytest.raises(TypeError):
        ember.set_rng_state(ember.zeros(3))
    with pytest.raises(TypeError):
        ember.set_rng_state(b"abc")
    with pytest.raises(RuntimeError, match="expected a state of"):  # (torch's class)
        ember.set_rng_state(ember.zeros(3, dtype=ember.uint8))
    state = ember.get_rng_state()
    state[0] = 0  # break the header
    with pytest.raises(RuntimeError, match="not a generator state"):
        ember.set_rng_state(state)


def test_generator_argument_is_checked():
    with pytest.raises(TypeError, match="generator"):
        ember.rand(3, generator=5)
    with pytest.raises(RuntimeError):
        ember.Generator(device="cuda")


# ---------------------------------------------------------------------------------------------
# factories: sizes and keyword arguments


def test_size_forms_and_factory_kwargs():
    assert tuple(ember.rand(2, 3).shape) == (2, 3)
    assert tuple(ember.rand((2, 3)).shape) == (2, 3)
    assert tuple(ember.randn(size=(4,)).shape) == (4,)
    assert ember.rand(()).dim() == 0
    assert ember.rand(0).numel() == 0
    assert ember.rand(3).dtype == ember.get_default_dtype()
    assert ember.rand(3, dtype=ember.float64).dtype == ember.float64
    assert ember.randn(3, dtype=ember.bfloat16, device="cpu").dtype == ember.bfloat16
    assert ember.randint(5, (3,)).dtype == ember.int64
    assert ember.randint(0, 5, (3,), dtype=ember.float32).dtype == ember.float32
    assert ember.randint(low=2, high=10, size=(3,)).dtype == ember.int64
    assert ember.randperm(4).dtype == ember.int64
    x = ember.zeros(2, 3, dtype=ember.float64)
    assert tuple(ember.rand_like(x).shape) == (2, 3) and ember.rand_like(x).dtype == ember.float64
    assert ember.randn_like(x, dtype=ember.float32).dtype == ember.float32
    r = ember.randint_like(ember.zeros(1000, dtype=ember.int32), 3, 10)
    assert r.dtype == ember.int32 and 3 <= N(r).min() and N(r).max() < 10
    r = ember.randint_like(ember.zeros(1000), 10)
    assert r.dtype == ember.float32 and 0 <= N(r).min() and N(r).max() < 10
    with pytest.raises(TypeError):
        ember.rand(3, bogus=1)
    with pytest.raises(TypeError):
        ember.rand()


def test_out_argument():
    out = ember.empty(0, dtype=ember.float64)
    assert ember.rand(2, 3, out=out) is out
    assert tuple(out.shape) == (2, 3) and out.dtype == ember.float64
    v = N(out)
    assert ((0 <= v) & (v < 1)).all()
    with pytest.raises(RuntimeError, match="does not match dtype of out"):
        ember.rand(2, 3, out=out, dtype=ember.float32)
    o = ember.empty(5, dtype=ember.int64)
    ember.randperm(5, out=o)
    assert sorted(N(o).tolist()) == [0, 1, 2, 3, 4]
    o = ember.empty(0, dtype=ember.int32)
    ember.randint(0, 4, (6,), out=o)
    assert tuple(o.shape) == (6,) and o.dtype == ember.int32
    o = ember.empty(0)
    ember.normal(0.0, 1.0, (3, 2), out=o)
    assert tuple(o.shape) == (3, 2)


def test_negative_sizes_are_refused():
    with pytest.raises((ValueError, RuntimeError), match="negative dimension"):
        ember.rand(-1)
    with pytest.raises((ValueError, RuntimeError), match="negative dimension"):
        ember.randn(2, -3)
    with pytest.raises((ValueError, RuntimeError), match="negative dimension"):
        ember.randperm(-1)
    with pytest.raises((ValueError, RuntimeError), match="negative dimension"):
        ember.randint(0, 3, (-2,))


# ---------------------------------------------------------------------------------------------
# distributions (100k samples; tolerances are many standard errors wide)

SAMPLES = 100_000


def test_rand_is_uniform():
    ember.manual_seed(0)
    for dt in FLOATS:
        v = N(ember.rand(SAMPLES, dtype=getattr(ember, dt)))
        assert v.min() >= 0 and v.max() <= 1
        if dt in ("float32", "float64"):
            assert v.max() < 1
        assert abs(v.mean() - 0.5) < 0.01
        assert abs(v.std() - 1 / math.sqrt(12)) < 0.01
    v = N(ember.empty(SAMPLES, dtype=ember.float64).uniform_(-2, 6))
    assert v.min() >= -2 and v.max() < 6
    assert abs(v.mean() - 2) < 0.05
    assert abs(v.std() - 8 / math.sqrt(12)) < 0.05


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [SAMPLES, SAMPLES + 7, 15])
def test_randn_is_standard_normal(dtype, n):
    ember.manual_seed(1)
    v = N(ember.randn(n, dtype=getattr(ember, dtype)))
    assert np.isfinite(v).all()
    if n >= 1000:
        assert abs(v.mean()) < 0.02
        assert abs(v.std() - 1) < 0.02
        # the tails are there too
        assert 0.04 < np.mean(np.abs(v) > 2) < 0.052


def test_normal_forms():
    ember.manual_seed(2)
    v = N(ember.normal(3.0, 2.0, size=(SAMPLES,)))
    assert abs(v.mean() - 3) < 0.05 and abs(v.std() - 2) < 0.05
    v = N(ember.empty(SAMPLES).normal_(-1, 0.5))
    assert abs(v.mean() + 1) < 0.02 and abs(v.std() - 0.5) < 0.02
    mean = ember.tensor([0.0, 100.0]).unsqueeze(1).expand(2, SAMPLES // 2)
    v = N(ember.normal(mean, 1.0))
    assert abs(v[0].mean()) < 0.05 and abs(v[1].mean() - 100) < 0.05
    std = ember.tensor([1.0, 10.0]).unsqueeze(1).expand(2, SAMPLES // 2)
    v = N(ember.normal(5.0, std))
    assert abs(v[0].std() - 1) < 0.05 and abs(v[1].std() - 10) < 0.5 and abs(v.mean() - 5) < 0.2
    v = N(ember.normal(mean, std))
    assert tuple(v.shape) == (2, SAMPLES // 2)
    assert abs(v[1].mean() - 100) < 0.5 and abs(v[1].std() - 10) < 0.5
    # broadcasting between mean and std
    assert tuple(ember.normal(ember.zeros(3, 1), ember.ones(4)).shape) == (3, 4)
    assert ember.normal(ember.zeros(3, dtype=ember.float64), 1.0).dtype == ember.float64


def test_randint_bounds_and_coverage():
    ember.manual_seed(3)
    v = N(ember.randint(-3, 4, (SAMPLES,)))
    assert v.min() == -3 and v.max() == 3
    counts = np.bincount((v + 3).astype(int))
    assert (np.abs(counts / SAMPLES - 1 / 7) < 0.01).all()
    v = N(ember.randint(2**40, 2**40 + 5, (1000,)))
    assert v.min() >= 2**40 and v.max() < 2**40 + 5
    for dt in INTS + ["bool"]:
        hi = 2 if dt == "bool" else 100
        v = N(ember.randint(0, hi, (5000,), dtype=getattr(ember, dt)))
        assert v.min() == 0 and v.max() == hi - 1


@pytest.mark.parametrize("dtype", INTS + ["bool"] + FLOATS)
def test_random_full_range(dtype):
    ember.manual_seed(4)
    t = ember.empty(20000, dtype=getattr(ember, dtype)).random_()
    v = N(t)
    if dtype == "bool":
        assert set(v.tolist()) == {0.0, 1.0}
        return
    if dtype in INTS:
        info = np.iinfo(dtype)
        assert v.min() >= 0 and v.max() <= info.max
        assert v.max() > info.max * 0.9
    else:
        bits = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}[dtype]
        assert v.min() >= 0 and v.max() <= 2**bits
        assert (v == np.round(v)).all()


def test_random_with_bounds():
    ember.manual_seed(5)
    v = N(ember.empty(5000, dtype=ember.int64).random_(10))
    assert v.min() == 0 and v.max() == 9
    v = N(ember.empty(5000, dtype=ember.int16).random_(-5, 5))
    assert v.min() == -5 and v.max() == 4
    v = N(ember.empty(5000, dtype=ember.int8).random_(100, None))
    assert v.min() >= 100 and v.max() <= 127
    v = N(ember.empty(5000, dtype=ember.float32).random_(to=3))
    assert set(v.tolist()) == {0.0, 1.0, 2.0}


def test_randperm_is_a_permutation():
    ember.manual_seed(6)
    for n in (0, 1, 2, 17, 1000):
        assert sorted(N(ember.randperm(n)).astype(int).tolist()) == list(range(n))
    for dt in ["int32", "int16", "float32", "float64", "float16"]:
        p = ember.randperm(300, dtype=getattr(ember, dt))
        assert p.dtype == getattr(ember, dt)
        assert sorted(N(p).astype(int).tolist()) == list(range(300))
    # every position takes every value about equally often
    counts = np.zeros((4, 4))
    for _ in range(4000):
        counts[np.arange(4), N(ember.randperm(4)).astype(int)] += 1
    assert (np.abs(counts / 4000 - 0.25) < 0.04).all()


def test_bernoulli():
    ember.manual_seed(7)
    v = N(ember.empty(SAMPLES).bernoulli_(0.3))
    assert set(np.unique(v).tolist()) <= {0.0, 1.0}
    assert abs(v.mean() - 0.3) < 0.01
    p = ember.tensor([0.0, 0.25, 0.9, 1.0]).unsqueeze(1).expand(4, 20000)
    v = N(ember.bernoulli(p))
    np.testing.assert_allclose(v.mean(axis=1), [0.0, 0.25, 0.9, 1.0], atol=0.015)
    v = N(p.bernoulli())
    np.testing.assert_allclose(v.mean(axis=1), [0.0, 0.25, 0.9, 1.0], atol=0.015)
    assert abs(N(ember.bernoulli(ember.zeros(SAMPLES), 0.6)).mean() - 0.6) < 0.01
    # any dtype can hold the result
    b = ember.zeros(1000, dtype=ember.int64).bernoulli_(0.5)
    assert b.dtype == ember.int64 and set(N(b).tolist()) == {0.0, 1.0}
    b = ember.zeros(1000, dtype=ember.bool).bernoulli_(ember.full((1000,), 0.5))
    assert b.dtype == ember.bool
    t = ember.zeros(1000, dtype=ember.float64)
    t.bernoulli_(ember.full((1000,), 0.5, dtype=ember.float16))
    assert 0.4 < N(t).mean() < 0.6


def test_exponential():
    ember.manual_seed(8)
    v = N(ember.empty(SAMPLES, dtype=ember.float64).exponential_(2.0))
    assert v.min() >= 0
    assert abs(v.mean() - 0.5) < 0.01 and abs(v.std() - 0.5) < 0.015
    v = N(ember.empty(SAMPLES).exponential_())
    assert abs(v.mean() - 1) < 0.02


def test_multinomial():
    ember.manual_seed(9)
    probs = ember.tensor([0.1, 0.2, 0.3, 0.4])
    idx = N(ember.multinomial(probs, 20000, replacement=True)).astype(int)
    np.testing.assert_allclose(np.bincount(idx, minlength=4) / 20000, [0.1, 0.2, 0.3, 0.4], atol=0.015)
    # unnormalised weights, 2-d
    w = ember.tensor([[1.0, 0.0, 3.0], [0.0, 5.0, 0.0]])
    r = ember.multinomial(w, 4000, True)
    assert tuple(r.shape) == (2, 4000) and r.dtype == ember.int64
    v = N(r).astype(int)
    assert set(v[1].tolist()) == {1}
    assert set(v[0].tolist()) == {0, 2}
    assert abs(np.mean(v[0] == 2) - 0.75) < 0.03
    # without replacement: distinct indices, never a zero-weight one while others remain
    for _ in range(50):
        s = N(ember.multinomial(ember.tensor([1.0, 2.0, 0.0, 4.0, 1.0]), 4)).astype(int).tolist()
        assert len(set(s)) == 4 and 2 not in s
    s = N(ember.multinomial(ember.rand(3, 50, dtype=ember.float64), 50)).astype(int)
    for row in s:
        assert sorted(row.tolist()) == list(range(50))
    # first draw follows the weights
    first = [int(N(ember.multinomial(probs, 2))[0]) for _ in range(4000)]
    np.testing.assert_allclose(np.bincount(first, minlength=4) / 4000, [0.1, 0.2, 0.3, 0.4], atol=0.03)
    assert tuple(probs.multinomial(3).shape) == (3,)


def test_inplace_on_non_contiguous_tensors():
    ember.manual_seed(10)
    base = ember.zeros(6, 8)
    view = base[:, ::2]
    view.uniform_(1, 2)
    v = N(base)
    assert ((v[:, ::2] >= 1) & (v[:, ::2] < 2)).all()
    assert (v[:, 1::2] == 0).all()
    t = ember.zeros(5, 7).t()
    t.normal_()
    assert (N(t) != 0).all()
    t = ember.zeros(4, 9).t()
    t.random_(1, 3)
    assert set(N(t).ravel().tolist()) == {1.0, 2.0}


def test_inplace_bumps_the_version():
    t = ember.zeros(5)
    v = t._version
    t.uniform_()
    t.normal_()
    assert t._version >= v + 2


def test_requires_grad():
    old = ember._C._get_autograd_hook()
    ember._C._set_autograd_hook(lambda name, fn, args, kwargs: fn(*args, **kwargs))
    try:
        assert ember.rand(3, requires_grad=True).requires_grad
        assert ember.randn(3, requires_grad=True).requires_grad
    finally:
        ember._C._set_autograd_hook(old)


# ---------------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize(
    "fn,exc,match",
    [
        (lambda: ember.randint(5, 3, (2,)), RuntimeError, "random_ expects 'from' to be less than 'to', but got from=5 >= to=3"),
        (lambda: ember.randint(5, 5, (2,)), RuntimeError, "from=5 >= to=5"),
        (lambda: ember.randint(0, 300, (3,), dtype=ember.int8), RuntimeError, "to - 1 is out of bounds for int8"),
        (lambda: ember.randint(-1, 3, (3,), dtype=ember.uint8), RuntimeError, "from is out of bounds for uint8"),
        (lambda: ember.randint(0, 3, (3,), dtype=ember.bool), RuntimeError, "to - 1 is out of bounds for bool"),
        (lambda: ember.rand(3, dtype=ember.int64), RuntimeError, "\"check_uniform_bounds\" not implemented for 'Long'"),
        (lambda: ember.randn(3, dtype=ember.int64), RuntimeError, "\"normal_kernel_cpu\" not implemented for 'Long'"),
        (lambda: ember.rand_like(ember.zeros(3, dtype=ember.int32)), RuntimeError, "not implemented for 'Int'"),
        (lambda: ember.randperm(300, dtype=ember.int8), RuntimeError, "value cannot be converted to type int8_t without overflow"),
        (lambda: ember.randperm(3000, dtype=ember.float16), RuntimeError, r"n cannot be greater than 2\^11\+1 for Half type"),
        # (the dtype's range before anything is allocated, as torch's randperm with out=)
        (lambda: ember.randperm(2**62, dtype=ember.int16), RuntimeError, "value cannot be converted to type int16_t without overflow"),
        (lambda: ember.randperm(2, dtype=ember.bool), RuntimeError, "\"randperm\" not implemented for 'Bool'"),
        (lambda: ember.normal(0.0, -1.0, size=(3,)), RuntimeError, "normal expects std >= 0.0, but found std -1"),
        (lambda: ember.normal(ember.zeros(3), ember.tensor([1.0, -1.0, 1.0])), RuntimeError, "normal expects all elements of std >= 0.0"),
        (lambda: ember.normal(ember.zeros(3), -1.0), RuntimeError, "normal expects std >= 0.0"),
        (lambda: ember.normal(ember.zeros(3), ember.ones(4)), RuntimeError, "must match the size"),
        (lambda: ember.normal(0.0, 1.0), TypeError, "invalid combination of arguments"),
        (lambda: ember.zeros(3).uniform_(2, 1), RuntimeError, r"uniform_ expects to return a \[from, to\) range, but found from=2 > to=1"),
        (lambda: ember.zeros(3).bernoulli_(1.5), RuntimeError, r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"),
        (lambda: ember.bernoulli(ember.tensor([0.5, 1.5])), RuntimeError, r"\[0, 1\]"),
        (lambda: ember.bernoulli(ember.tensor([0, 1])), RuntimeError, "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"),
        (lambda: ember.zeros(3).exponential_(-1), RuntimeError, "exponential_ expects lambda > 0.0, but found lambda=-1"),
        (lambda: ember.zeros(3, dtype=ember.int64).exponential_(), RuntimeError, "dtype must be a floating point"),
        (lambda: ember.multinomial(ember.tensor([0.5, -0.1]), 1), RuntimeError, "probability tensor contains either `inf`, `nan` or element < 0"),
        (lambda: ember.multinomial(ember.tensor([0.5, float("nan")]), 1), RuntimeError, "probability tensor contains"),
        (lambda: ember.multinomial(ember.tensor([0.5, float("inf")]), 1), RuntimeError, "probability tensor contains"),
        (lambda: ember.multinomial(ember.tensor([0.0, 0.0]), 1), RuntimeError, r"invalid multinomial distribution \(sum of probabilities <= 0\)"),
        (lambda: ember.multinomial(ember.tensor([0.0, 0.0]), 2, True), RuntimeError, r"sum of probabilities <= 0"),
        (lambda: ember.multinomial(ember.tensor([0.5, -0.1]), 2, True), RuntimeError, r"encountering probability entry < 0"),
        (lambda: ember.multinomial(ember.tensor([0.5, 0.5]), 3), RuntimeError, "cannot sample n_sample > prob_dist.size"),
        (lambda: ember.multinomial(ember.tensor([0.5, 0.5]), 0), RuntimeError, "cannot sample n_sample <= 0 samples"),
        (lambda: ember.multinomial(ember.ones(2, 2, 2), 1), RuntimeError, "prob_dist must be 1 or 2 dim"),
        (lambda: ember.multinomial(ember.tensor([1, 2]), 1), RuntimeError, "multinomial only supports floating-point dtypes for input, got: Long"),
    ],
)
def test_errors(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()


def test_inplace_sampling_into_an_expanded_tensor_is_refused():
    with pytest.raises(RuntimeError, match="single memory location"):
        ember.zeros(1).expand(4).uniform_()


# ---------------------------------------------------------------------------------------------
# parity with PyTorch's CPU streams


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _both(torch, seed, make):
    ember.manual_seed(seed)
    e = make(ember)
    torch.manual_seed(seed)
    t = make(torch)
    te = t.float() if t.dtype in (torch.float16, torch.bfloat16) else t
    return N(e), np.array(te.tolist(), dtype=np.float64).reshape(tuple(t.shape))


@pytest.mark.parametrize("dtype", FLOATS)
def test_torch_parity_uniform(torch, dtype):
    for make in (
        lambda m: m.rand(1000, dtype=getattr(m, dtype)),
        lambda m: m.rand(3, 4, 5, dtype=getattr(m, dtype)),
        lambda m: m.empty(100, dtype=getattr(m, dtype)).uniform_(-3, 5),
        lambda m: m.empty(5, 7, dtype=getattr(m, dtype)).t().uniform_(),  # memory order
    ):
        e, t = _both(torch, 123, make)
        np.testing.assert_array_equal(e, t)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [7, 16, 100, 1000])
def test_torch_parity_normal(torch, dtype, n):
    e, t = _both(torch, 5, lambda m: m.randn(n, dtype=getattr(m, dtype)))
    # PyTorch vectorises float32's Box-Muller (SLEEF): equal up to rounding there, exact elsewhere
    if dtype == "float32" and n >= 16:
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(e, t)


def test_torch_parity_normal_variants(torch):
    cases = [
        lambda m: m.empty(6, 7).t().normal_(2, 3),  # non-contiguous: the serial path
        lambda m: m.normal(m.arange(20.0), m.arange(20.0) + 1),
        lambda m: m.normal(m.arange(20.0), 2.0),
        lambda m: m.normal(1.0, m.arange(20.0)),
        lambda m: m.normal(1.0, 3.0, (4, 5)),
        lambda m: (m.randn(3), m.rand(17), m.randn(33))[2],  # a cached normal in between
    ]
    for make in cases:
        e, t = _both(torch, 9, make)
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", INTS + ["bool"] + FLOATS)
def test_torch_parity_integers(torch, dtype):
    hi = 2 if dtype == "bool" else 70
    for make in (
        lambda m: m.empty(100, dtype=getattr(m, dtype)).random_(),
        lambda m: m.randint(0, hi, (100,), dtype=getattr(m, dtype)),
    ):
        e, t = _both(torch, 77, make)
        np.testing.assert_array_equal(e, t)


def test_torch_parity_randint_wide_ranges(torch):
    for make in (
        lambda m: m.randint(-(2**40), 2**40, (50,)),
        lambda m: m.randint(3, 10, (4, 5)),
        lambda m: m.empty(10, dtype=m.int64).random_(-(2**63), None),
        lambda m: m.empty(10, dtype=m.int8).random_(100, None),
    ):
        e, t = _both(torch, 1, make)
        np.testing.assert_array_equal(e, t)


@pytest.mark.parametrize("n", [0, 1, 2, 10, 1000])
def test_torch_parity_randperm(torch, n):
    e, t = _both(torch, 0, lambda m: m.randperm(n))
    np.testing.assert_array_equal(e, t)
    e, t = _both(torch, 0, lambda m: m.randperm(n, dtype=m.float32))
    np.testing.assert_array_equal(e, t)


def test_torch_parity_generators(torch):
    g1 = ember.Generator().manual_seed(5)
    g2 = torch.Generator().manual_seed(5)
    np.testing.assert_array_equal(N(ember.rand(50, generator=g1)), np.array(torch.rand(50, generator=g2).tolist()))
    np.testing.assert_array_equal(N(ember.randperm(30, generator=g1)), np.array(torch.randperm(30, generator=g2).tolist()))
    assert ember.Generator().initial_seed() == torch.Generator().initial_seed()
