"""The parametrised element-wise ops (lerp, nan_to_num, logit, round(decimals)), the samplers
(bernoulli, multinomial, normal), the add-product family, var_mean/std_mean, count_nonzero,
cross and max/min(dim, out=) on CUDA tensors, against the same calls on the CPU, errors included;
and a sweep over the public functions: a CUDA call's result is on the device, or the call raises.
Simulated devices where there is no GPU (see test_cuda_tensors.py)."""

import math
import warnings

import numpy as np
import pytest

import ember
from ember.cuda._testing import GPU_WITHOUT_CUPY, assert_matches_cpu, devices, on_gpu
from ember.cuda._testing import assert_same_error as same_error

pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")

CUDA0 = ember.device("cuda", 0)


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(256 << 20):
        yield


def data(*shape, dtype="float32", seed=0, lo=-3.0, hi=3.0):
    a = np.random.default_rng(seed).uniform(lo, hi, shape)
    return ember.from_numpy(a.astype(dtype))


def special(dtype="float32"):
    """Values with NaN, infinities, zeros and halves (round's ties)."""
    a = np.array([[np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5],
                  [1.5, 2.5, -0.5, -2.5, 1e-3, 123.456]])
    return ember.from_numpy(a.astype(dtype))


def same(gpu, cpu, exact=True):
    assert_matches_cpu(gpu, cpu, None if exact else
                       {"float16": 2e-3, "float32": 1e-5, "float64": 1e-12})


def check(fn, *args, exact=False, **kwargs):
    """fn(*args) on the CPU and with every tensor argument on the device: the same result."""
    cpu = fn(*args, **kwargs)
    gpu = fn(*on_gpu(args), **on_gpu(kwargs))
    same(gpu, cpu, exact)
    return gpu


def layouts(x):
    """x as it is, transposed (not contiguous) and sliced with a step."""
    yield x
    if x.dim() >= 2:
        yield x.transpose(0, 1)
    if x.dim() >= 1 and x.shape[-1] > 1:
        yield x[..., ::2]


FLOATS = ["float16", "float32", "float64"]


# ---- lerp / nan_to_num / logit / round ----------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("weight", [0.3, 0.7, -1.0, 2.0, "tensor", "broadcast"])
def test_lerp(dtype, weight):
    for s in layouts(data(4, 6, dtype=dtype)):
        e = data(*s.shape, dtype=dtype, seed=1)
        if weight == "tensor":
            w = data(*s.shape, dtype=dtype, seed=2, lo=-1, hi=2)
        elif weight == "broadcast":
            w = data(s.shape[-1], dtype=dtype, seed=2, lo=-1, hi=2)
        else:
            w = weight
        check(ember.lerp, s, e, w)
        check(lambda a, b, c: a.lerp(b, c), s, e, w)
        check(lambda a, b, c: a.clone().lerp_(b, c), s, e, w)
    check(ember.lerp, data(3, 1, dtype=dtype), data(5, dtype=dtype), 0.25)  # broadcast
    check(ember.lerp, data(0, 3, dtype=dtype), data(0, 3, dtype=dtype), 0.5)
    check(ember.lerp, special(dtype), data(2, 6, dtype=dtype), 0.5)


def test_lerp_out_and_errors():
    s, e = data(3, 4), data(3, 4, seed=1)
    out = ember.empty(3, 4).cuda()
    r = ember.lerp(s.cuda(), e.cuda(), 0.4, out=out)
    assert r is out
    same(out, ember.lerp(s, e, 0.4), exact=False)
    same_error(ember.lerp, s, e.double(), 0.5)
    same_error(ember.lerp, s.int(), e.int(), 0.5)
    same_error(ember.lerp, s, data(2, 4), 0.5)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("args", [(), (1.5,), (0.0, 1e6, -2.0), (-1.0, None, 7.0), (2.0, 1e300)])
def test_nan_to_num(dtype, args):
    x = special(dtype)
    for t in layouts(x):
        check(ember.nan_to_num, t, *args, exact=True)
        check(lambda a: a.nan_to_num(*args), t, exact=True)
        check(lambda a: a.clone().nan_to_num_(*args), t, exact=True)
    check(ember.nan_to_num, data(0, 2, dtype=dtype), exact=True)


def test_nan_to_num_integers_and_out():
    x = ember.tensor([[1, -2, 3], [0, 5, 6]])
    check(ember.nan_to_num, x, exact=True)
    check(lambda a: a.nan_to_num_(), x.clone(), exact=True)
    out = ember.empty(2, 6).cuda()
    assert ember.nan_to_num(special().cuda(), 3.0, out=out) is out
    same(out, ember.nan_to_num(special(), 3.0))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("eps", [None, 0.0, 0.1, 0.6, -1.0, 1e-8])
def test_logit(dtype, eps):
    x = ember.from_numpy(np.array([[0.0, 1.0, 0.5, 0.05, 0.95, np.nan],
                                   [-0.5, 1.5, 0.3, 0.999, 1e-4, 0.7]]).astype(dtype))
    for t in layouts(x):
        check(ember.logit, t, eps)
        check(lambda a: a.logit(eps), t)
        check(lambda a: a.clone().logit_(eps), t)
        check(lambda a: ember.logit_(a.clone(), eps), t)
    check(ember.logit, data(0, 4, dtype=dtype), eps)


def test_logit_integers_out_and_errors():
    x = ember.tensor([[0, 1, 2], [-1, 0, 1]])
    check(ember.logit, x, 0.25)  # promotes to the default dtype
    same_error(lambda a: a.logit_(), x.clone())  # an integer tensor cannot hold the result
    out = ember.empty(2, 3).cuda()
    assert ember.logit(x.cuda().float() / 3, out=out) is out
    same(out, ember.logit(x.float() / 3), exact=False)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("decimals", [0, 1, 2, 3, -1, -2])
def test_round(dtype, decimals):
    x = ember.cat([special(dtype), data(2, 6, dtype=dtype, lo=-500, hi=500)])
    for t in layouts(x):
        check(lambda a: ember.round(a, decimals=decimals), t, exact=True)
        check(lambda a: a.round(decimals=decimals), t, exact=True)
        check(lambda a: a.clone().round_(decimals=decimals), t, exact=True)
    check(lambda a: ember.round(a, decimals=decimals), data(0, dtype=dtype), exact=True)


def test_round_integers_out_and_errors():
    x = ember.tensor([[1, -2, 3], [7, 5, 6]])
    check(ember.round, x, exact=True)
    check(lambda a: a.round_(), x.clone(), exact=True)
    same_error(lambda a: ember.round(a, decimals=1), x)
    same_error(lambda a: a.round_(decimals=2), x.clone())
    out = ember.empty(2, 6).cuda()
    assert ember.round(special().cuda(), decimals=1, out=out) is out
    same(out, ember.round(special(), decimals=1))


@pytest.mark.parametrize("call", [
    lambda x, o: ember.lerp(x, x.detach(), 0.5, out=o),
    lambda x, o: ember.nan_to_num(x, out=o),
    lambda x, o: ember.logit(x, out=o),
    lambda x, o: ember.round(x, decimals=1, out=o),
])
def test_out_refuses_inputs_that_require_grad(call, recording_hook):  # a stand-in autograd
    for device in ("cpu", "cuda"):
        x = data(2, 3).to(device).requires_grad_()
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            call(x, ember.empty(2, 3, device=device))


# ---- samplers: the CPU generator's numbers -----------------------------------------------------


def seeded(fn, *args, seed=5, **kwargs):
    """fn on the CPU and on the device after the same manual_seed."""
    ember.manual_seed(seed)
    cpu = fn(*args, **kwargs)
    ember.manual_seed(seed)
    gpu = fn(*on_gpu(args), **kwargs)
    same(gpu, cpu, exact=True)
    return gpu


def test_bernoulli_same_numbers_as_the_cpu():
    p = data(5, 7, lo=0, hi=1)
    for t in layouts(p):
        seeded(ember.bernoulli, t)
        seeded(lambda a: a.bernoulli(), t)
        seeded(ember.bernoulli, t, 0.3)
        # a tensor p (torch's bernoulli takes it in place only): the float64 input's shape
        seeded(lambda a, q: a.clone().bernoulli_(q), data(*t.shape, dtype="float64"), t)
        seeded(lambda a: a.clone().bernoulli_(0.25), t)
        seeded(lambda a, q: a.clone().bernoulli_(q), t, data(*t.shape, seed=3, lo=0, hi=1))
    seeded(ember.bernoulli, data(0, 3, lo=0, hi=1))
    g1, g2 = ember.Generator().manual_seed(9), ember.Generator(device="cuda").manual_seed(9)
    same(ember.bernoulli(p.cuda(), generator=g2), ember.bernoulli(p, generator=g1))
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator"):
        ember.bernoulli(p.cuda(), generator=g1)
    out = ember.empty(5, 7).cuda()
    ember.manual_seed(1)
    assert ember.bernoulli(p.cuda(), out=out) is out
    ember.manual_seed(1)
    same(out, ember.bernoulli(p))


def test_bernoulli_errors():
    same_error(ember.bernoulli, ember.tensor([0.5, 1.5]))
    same_error(lambda a: a.bernoulli_(2.0), ember.zeros(3))
    same_error(lambda a, q: a.bernoulli_(q), ember.zeros(2), ember.tensor([0.1, -0.1]))


@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_same_numbers_as_the_cpu(replacement):
    for probs in (data(6, lo=0, hi=1), data(4, 9, lo=0, hi=1, dtype="float64"),
                  data(9, 4, lo=0, hi=1).transpose(0, 1)):
        seeded(ember.multinomial, probs, 3, replacement)
        seeded(lambda a: a.multinomial(4, replacement=replacement), probs)
    seeded(ember.multinomial, data(6, lo=0, hi=1), 20, True)
    g1, g2 = ember.Generator().manual_seed(4), ember.Generator(device="cuda").manual_seed(4)
    p = data(3, 5, lo=0, hi=1)
    same(ember.multinomial(p.cuda(), 2, replacement, generator=g2),
         ember.multinomial(p, 2, replacement, generator=g1))
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator"):
        ember.multinomial(p.cuda(), 2, replacement, generator=g1)
    out = ember.empty(3, 2, dtype=ember.int64).cuda()
    ember.manual_seed(2)
    assert ember.multinomial(p.cuda(), 2, replacement, out=out) is out
    ember.manual_seed(2)
    same(out, ember.multinomial(p, 2, replacement))


def test_multinomial_errors():
    same_error(ember.multinomial, ember.tensor([0.2, 0.8]), 3)  # more than n without replacement
    same_error(ember.multinomial, ember.tensor([0.2, -0.8]), 1)
    same_error(ember.multinomial, ember.tensor([1, 2]), 1)
    same_error(ember.multinomial, ember.tensor([0.0, 0.0]), 1, True)
    with pytest.raises(RuntimeError, match="multinomial expects Long tensor out, got: Float"):
        ember.multinomial(ember.tensor([0.5, 0.5]).cuda(), 1, out=ember.empty(1).cuda())


def test_normal_with_tensor_parameters():
    mean, std = data(4, 5), data(4, 5, seed=1, lo=0.1, hi=2)
    seeded(ember.normal, mean, std)
    seeded(ember.normal, mean, 0.5)
    seeded(ember.normal, 1.5, std)
    seeded(ember.normal, mean.transpose(0, 1), std.transpose(0, 1))


# ---- the add-product family -------------------------------------------------------------------


PRODUCTS = {  # name: (input shape, m1 shape, m2 shape)
    "addmm": ((3, 5), (3, 4), (4, 5)),
    "addmv": ((3,), (3, 4), (4,)),
    "baddbmm": ((2, 3, 5), (2, 3, 4), (2, 4, 5)),
    "addbmm": ((3, 5), (2, 3, 4), (2, 4, 5)),
}
BROADCAST = {"addmm": (5,), "addmv": (1,), "baddbmm": (3, 1), "addbmm": (1, 5)}


@pytest.mark.parametrize("name", list(PRODUCTS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64"])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2), (0, 1), (2, 0), (-1, 3)])
def test_add_products(name, dtype, beta, alpha):
    fn, fn_ = getattr(ember, name), getattr(ember.Tensor, name + "_")
    si, s1, s2 = PRODUCTS[name]
    if dtype.startswith("int"):
        beta, alpha = int(beta), int(alpha)
    lo, hi = (-9, 9)
    inp, m1, m2 = (data(*s, dtype=dtype, seed=i, lo=lo, hi=hi) for i, s in enumerate((si, s1, s2)))
    exact = dtype.startswith("int")
    check(fn, inp, m1, m2, beta=beta, alpha=alpha, exact=exact)
    check(lambda a, b, c: a.clone().__getattribute__(name + "_")(b, c, beta=beta, alpha=alpha),
          inp, m1, m2, exact=exact)
    check(lambda a, b, c: fn_(a.clone(), b, c, beta=beta, alpha=alpha), inp, m1, m2, exact=exact)
    check(fn, data(*BROADCAST[name], dtype=dtype), m1, m2, beta=beta, alpha=alpha, exact=exact)
    if m1.dim() >= 2:  # not contiguous
        check(fn, inp, m1.transpose(-1, -2).contiguous().transpose(-1, -2), m2[..., ::1],
              beta=beta, alpha=alpha, exact=exact)
    if not exact:  # beta == 0 ignores input's NaN; alpha == 0 ignores the matrices'
        check(fn, ember.full(si, math.nan, dtype=inp.dtype), m1, m2, beta=beta, alpha=alpha)
        check(fn, inp, ember.full(s1, math.inf, dtype=inp.dtype), m2, beta=beta, alpha=alpha)


@pytest.mark.parametrize("name", list(PRODUCTS))
def test_add_products_empty_out_and_errors(name):
    fn = getattr(ember, name)
    si, s1, s2 = PRODUCTS[name]
    inp, m1, m2 = (data(*s, seed=i) for i, s in enumerate((si, s1, s2)))
    k0 = [list(s1), list(s2)]  # an empty inner dimension: input * beta
    k0[0][-1] = 0
    k0[1][-2 if len(s2) > 1 else 0] = 0
    check(fn, inp, data(*k0[0]), data(*k0[1]), beta=0.5)
    out = ember.empty(0).cuda()
    assert fn(inp.cuda(), m1.cuda(), m2.cuda(), alpha=0.5, out=out) is out
    same(out, fn(inp, m1, m2, alpha=0.5), exact=False)
    same_error(fn, inp, m1.double(), m2)
    same_error(fn, inp.double(), m1.double(), m2.double().bool())
    same_error(fn, inp, m1, m2[..., :-1, :] if m2.dim() > 1 else m2[:-1])
    same_error(fn, data(7), m1, m2)
    same_error(fn, inp, m1[0], m2)
    same_error(lambda a, b, c: getattr(a, name + "_")(b, c), data(*BROADCAST[name]), m1, m2)


def test_inner_and_vdot():
    check(ember.inner, data(3, 4), data(5, 4))
    check(ember.inner, data(2, 3, 4), data(4), exact=False)
    check(ember.inner, data(3, 4), ember.tensor(2.0))
    check(ember.inner, data(3, 4, dtype="float16"), data(2, 4, dtype="float16"))
    check(ember.vdot, data(5), data(5, seed=1))
    same_error(ember.inner, data(3, 4), data(3, 5))
    same_error(ember.vdot, data(5), data(4))
    same_error(ember.vdot, data(5), data(5, dtype="float64"))
    same_error(ember.vdot, data(5, 1), data(5))


# ---- reductions -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["var_mean", "std_mean"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_var_mean_std_mean(name, dtype):
    fn = getattr(ember, name)
    x = data(3, 4, 5, dtype=dtype)
    for t in layouts(x):
        for dim in (None, 0, -1, (0, 2), [1]):
            for keepdim in (False, True):
                for corr in ({}, {"correction": 0}, {"correction": 2}, {"unbiased": False}):
                    check(fn, t, dim, keepdim=keepdim, **corr)
    check(fn, x, True)  # the legacy var_mean(input, unbiased)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(fn, data(1, 3, dtype=dtype), 0)  # n - correction = 0: inf / nan, as on the CPU
        check(fn, data(2, 3, dtype=dtype), 0, correction=5)
        check(fn, data(0, 3, dtype=dtype), 0)
        check(fn, ember.tensor(2.5, dtype=getattr(ember, dtype)))
    same_error(fn, ember.tensor([1, 2]))
    same_error(fn, x, 3)


def test_var_mean_warns_once_on_the_device():
    x = data(1, 3).cuda()
    with pytest.warns(UserWarning, match="degrees of freedom") as record:
        ember.var_mean(x, 0)
    assert len(record) == 1


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "uint8"])
def test_count_nonzero(dtype):
    x = ember.from_numpy(np.random.default_rng(0).integers(0, 3, (3, 4, 5)).astype(dtype))
    for t in layouts(x):
        for dim in (None, 0, -1, (0, 2), (), [1, 0]):
            check(ember.count_nonzero, t, dim, exact=True)
            check(lambda a, d=dim: a.count_nonzero(d), t, exact=True)
    check(ember.count_nonzero, special(), exact=True)  # NaN counts
    check(ember.count_nonzero, ember.zeros(0, 3), 1, exact=True)
    check(ember.count_nonzero, ember.tensor(3.0), exact=True)
    same_error(ember.count_nonzero, x, 3)
    same_error(ember.count_nonzero, x, (0, 0))


# ---- cross, max/min out= -----------------------------------------------------------------------


def test_cross():
    a, b = data(4, 3), data(4, 3, seed=1)
    check(ember.cross, a, b, dim=1, exact=True)
    check(ember.linalg.cross, a, b, exact=True)
    check(ember.linalg.cross, data(3, 5, dtype="float64"), data(3, 1, dtype="float64"), dim=0,
          exact=True)
    check(lambda x, y: x.cross(y, dim=-1), a.transpose(0, 1).contiguous().transpose(0, 1), b,
          exact=True)
    out = ember.empty(4, 3).cuda()
    assert ember.linalg.cross(a.cuda(), b.cuda(), out=out) is out
    same(out, ember.linalg.cross(a, b))
    same_error(ember.linalg.cross, data(4, 2), data(4, 2))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_dim_out(name, recording_hook):
    fn = getattr(ember, name)
    x = data(4, 5)
    for keepdim in (False, True):
        cpu = fn(x, 1, keepdim)
        for values in (ember.empty(0).cuda(), ember.empty(*cpu.values.shape).cuda()):
            indices = ember.empty(0, dtype=ember.int64).cuda()
            r = fn(x.cuda(), 1, keepdim, out=(values, indices))
            assert type(r) is type(cpu) and r.values is values and r.indices is indices
            same(r, cpu, exact=True)
    same_error(lambda a, v, i: fn(a, 1, out=(v, i)), x, ember.empty(4), ember.empty(4))
    same_error(lambda a, v, i: fn(a, 1, out=(v, i)), x, ember.empty(4, dtype=ember.float64),
               ember.empty(4, dtype=ember.int64))
    with pytest.raises(TypeError, match="received an invalid combination of arguments"):
        fn(x.cuda(), 1, out=ember.empty(4).cuda())
    with pytest.raises(RuntimeError, match="same device"):
        fn(x.cuda(), 1, out=(ember.empty(4), ember.empty(4, dtype=ember.int64)))
    w = x.cuda().requires_grad_()
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        fn(w, 1, out=(ember.empty(4).cuda(), ember.empty(4, dtype=ember.int64).cuda()))


def test_out_of_another_shape_grows_as_on_the_cpu():
    """An empty out= takes the result's shape; a non-empty one of another shape is resized with
    the CPU's deprecation warning, its storage grown by a device copy (Allocator::copy_data)."""
    x = data(3, 4).cuda()
    out = ember.empty(0).cuda()
    ember.sum(x, 1, out=out)
    same(out, ember.sum(x.cpu(), 1), exact=False)
    for fn in (lambda a, out: ember.sum(a, 0, out=out), lambda a, out: ember.add(a, 1, out=out)):
        out = ember.empty(2).cuda()
        with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
            assert fn(x, out) is out
        same(out, fn(x.cpu(), None), exact=False)


def test_resize_keeps_a_cuda_tensors_values_and_frees_the_old_block():
    t = ember.arange(6.0).cuda()
    before = ember.cuda.memory_allocated()
    assert t.resize_(2, 4096) is t and tuple(t.shape) == (2, 4096)
    assert t.flatten()[:6].cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    # the old 24-byte block went back to the allocator: only the grown storage remains
    assert ember.cuda.memory_allocated() - before == 2 * 4096 * 4 - 512
    t.resize_(3)  # shrinking keeps the storage
    assert t.cpu().tolist() == [0.0, 1.0, 2.0]


# ---- gradients through the device ---------------------------------------------------------------


def test_gradcheck_through_the_device():
    autograd = pytest.importorskip("ember.autograd")

    def dev(fn):
        return lambda *ts: fn(*(t.cuda() if isinstance(t, ember.Tensor) else t for t in ts))

    def host(r):
        return tuple(v.cpu() for v in r) if isinstance(r, tuple) else r.cpu()

    x = ember.rand(3, 4, dtype=ember.float64, requires_grad=True)
    y = ember.rand(3, 4, dtype=ember.float64, requires_grad=True)
    w = ember.rand(3, 4, dtype=ember.float64, requires_grad=True)
    p = ember.rand(3, dtype=ember.float64, requires_grad=True)
    cases = [
        (lambda a, b, c: host(dev(ember.lerp)(a, b, c)), (x, y, w)),
        (lambda a, b: host(dev(ember.lerp)(a, b, 0.3)), (x, y)),
        (lambda a: host(dev(lambda t: ember.logit(t * 0.8 + 0.1))(a)), (x,)),
        (lambda a: host(dev(lambda t: ember.std_mean(t, 1))(a)), (x,)),
        (lambda a: host(dev(lambda t: ember.var_mean(t, (0, 1), correction=0))(a)), (x,)),
        (lambda a, b, c: host(dev(lambda i, m, v: ember.addmv(i, m, v, beta=0.5, alpha=2))(a, b, c)),
         (p, x, ember.rand(4, dtype=ember.float64, requires_grad=True))),
        (lambda a, b: host(dev(lambda i, m: ember.baddbmm(i, m, m.transpose(1, 2), alpha=0.5))(
            a, b)), (ember.rand(2, 3, 3, dtype=ember.float64, requires_grad=True),
                     ember.rand(2, 3, 4, dtype=ember.float64, requires_grad=True))),
        (lambda a, b: host(dev(ember.linalg.cross)(a, b)),
         (ember.rand(2, 3, dtype=ember.float64, requires_grad=True),
          ember.rand(2, 3, dtype=ember.float64, requires_grad=True))),
    ]
    for fn, args in cases:
        assert autograd.gradcheck(fn, args)


# ---- every public function: on the device, or refused --------------------------------------------


def test_results_made_without_a_kernel_follow_the_input():
    """Shortcuts that build their result (identity, zeros for empty inputs) make it on the
    input's device."""
    a = data(3, 3, dtype="float64")
    check(ember.linalg.matrix_power, a, 0, exact=True)
    check(ember.linalg.vander, data(4), exact=True)
    check(ember.linalg.matrix_norm, data(0, 3))
    check(ember.linalg.pinv, data(2, 0))
    check(ember.linalg.matrix_rank, data(3, 0), exact=True)
    x = a.cuda()
    assert x.set_() is x and x.device == CUDA0 and tuple(x.shape) == (0,)


# Ops whose result is meant to be elsewhere, or that take no tensor to follow.
NOT_DEVICE_OPS = {
    "cpu", "to", "numpy", "tolist", "item", "pin_memory", "share_memory_", "type",
    "tensor", "as_tensor", "asarray", "from_numpy", "from_dlpack", "to_dlpack", "save", "load",
    "manual_seed", "seed", "set_rng_state", "get_rng_state", "initial_seed", "set_default_dtype",
    "set_printoptions", "set_num_threads", "set_num_interop_threads", "use_deterministic_algorithms",
    "set_grad_enabled", "set_default_device", "compile",
}


def _arguments(device):
    ember.manual_seed(0)
    x = ember.rand(3, 4, device=device) + 0.1
    y = ember.rand(3, 4, device=device) + 0.1
    z = ember.rand(3, 4, device=device) + 0.1
    return [(x,), (x, y), (x, y, z), (x, 0.5), (x, 1), (x, y, 0.5), (x, y, z, 0.5),
            (x, 0.2, 0.8), (x, 1, 2), (x, y, 1)]


def _tensors(r):
    if isinstance(r, ember.Tensor):
        return [r]
    if isinstance(r, (tuple, list)):
        return [t for v in r for t in _tensors(v)]
    return []


def _public_calls():
    for name in sorted(dir(ember)):
        f = getattr(ember, name)
        if not name.startswith("_") and callable(f) and not isinstance(f, type):
            yield name, f
    for name in sorted(dir(ember.Tensor)):
        if not name.startswith("_"):
            yield "Tensor." + name, (lambda *a, n=name: getattr(a[0], n)(*a[1:]))


def test_every_public_function_runs_on_the_device_or_refuses():
    """For the first argument list the CPU accepts, the CUDA call returns device tensors or raises
    NotImplementedError/RuntimeError: a CPU kernel never hands back a host copy's result."""
    cpu_args, gpu_args = _arguments("cpu"), _arguments("cuda")
    wrong = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, fn in _public_calls():
            if name.split(".")[-1] in NOT_DEVICE_OPS:
                continue
            for ca, ga in zip(cpu_args, gpu_args):
                try:
                    cpu = fn(*(a.clone() if isinstance(a, ember.Tensor) else a for a in ca))
                except Exception:
                    continue
                try:
                    gpu = fn(*(a.clone() if isinstance(a, ember.Tensor) else a for a in ga))
                except (NotImplementedError, RuntimeError):
                    break
                if _tensors(cpu) and any(t.device != CUDA0 for t in _tensors(gpu)):
                    wrong.append(name)
                break
    assert wrong == []
