"""Behaviour real PyTorch programs rely on that the core got wrong or lacked: Tensor.repeat is a
copy, the device predicates scripts test, ember.serialization and ember.cuda.amp reachable as
torch's are, and the error for a top-level name ember lacks says what it is. Each is checked
against a hand-computed oracle, and against torch where it is installed."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import ember

REPEAT_CASES = [((2,), (3, 1)), ((1, 3), (4, 1)), ((3,), (2,)), ((2, 3), (2, 1, 1)),
                ((1,), (5,)), ((2, 2), (1, 1)), ((2, 1, 3), (1, 4, 1)), ((0, 2), (3, 1))]


def _repeat_oracle(a: np.ndarray, reps) -> np.ndarray:
    """torch's repeat by its definition: the input, padded with leading 1-dims, tiled."""
    a = a.reshape((1,) * (len(reps) - a.ndim) + a.shape)
    out = a
    for dim, r in enumerate(reps):
        out = np.concatenate([out] * r, axis=dim) if r else np.take(out, [], axis=dim)
    return out


@pytest.mark.parametrize("shape,reps", REPEAT_CASES)
def test_repeat_returns_a_new_contiguous_tensor(shape, reps):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = ember.tensor(a)
    r = x.repeat(*reps)
    np.testing.assert_array_equal(r.numpy(), _repeat_oracle(a, reps))
    assert r.is_contiguous()
    assert 0 not in r.stride() or r.numel() == 0  # no element stored once, seen many times
    if r.numel():
        assert r.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


@pytest.mark.parametrize("shape,reps", REPEAT_CASES)
def test_an_in_place_op_on_a_repeat_writes_each_element_once(shape, reps):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = ember.tensor(a)
    r = x.repeat(*reps)
    r.add_(1)  # failed on the stride-0 view: several elements at one address
    expected = _repeat_oracle(a, reps) + 1
    if r.numel():  # one element set: the others that were its aliases keep their values
        r[(0,) * r.dim()] = -5
        expected[(0,) * expected.ndim] = -5
    np.testing.assert_array_equal(r.numpy(), expected)
    np.testing.assert_array_equal(x.numpy(), a)  # the input is not touched


def test_repeat_of_a_transposed_tensor_and_tile_are_contiguous_copies():
    x = ember.arange(6.0).reshape(2, 3).t()
    for r in (x.repeat(1, 1), x.repeat(2, 1), ember.tile(x, (2,))):
        assert r.is_contiguous()
        r.mul_(2)
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3).T)


@pytest.mark.parametrize("shape,reps", REPEAT_CASES)
def test_repeat_matches_torch(torch, shape, reps):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t = torch.from_numpy(a).repeat(*reps)
    r = ember.tensor(a).repeat(*reps)
    np.testing.assert_array_equal(r.numpy(), t.numpy())
    assert tuple(r.stride()) == tuple(t.stride())


# ---- device and layout predicates ----

NEVER_TRUE = ["is_xpu", "is_ipu", "is_maia", "is_mkldnn", "is_mps", "is_mtia", "is_vulkan",
              "is_xla", "is_nested", "is_sparse_csr"]


@pytest.mark.parametrize("name", NEVER_TRUE)
def test_device_predicates_of_devices_ember_lacks_are_false(name):
    t = ember.ones(2)
    assert getattr(t, name) is False
    assert isinstance(getattr(ember.Tensor, name), property)  # an attribute, as torch's


def test_conj_neg_distributed_predicates_and_const_data_ptr():
    t = ember.arange(3.0)
    assert t.is_conj() is False and t.is_neg() is False and t.is_distributed() is False
    assert t.const_data_ptr() == t.data_ptr()


def test_name_is_a_read_only_none():
    t = ember.ones(2)
    assert t.name is None and t.detach().name is None
    with pytest.raises(AttributeError):
        t.name = "x"


@pytest.mark.parametrize("name", NEVER_TRUE + ["is_conj", "is_neg", "is_distributed"])
def test_predicates_match_torch_on_a_cpu_tensor(torch, name):
    ours, theirs = getattr(ember.ones(2), name), getattr(torch.ones(2), name)
    if callable(theirs):
        ours, theirs = ours(), theirs()
    assert ours == theirs


# ---- modules reachable from `import ember` ----

def _fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


def test_serialization_is_reachable_after_import_ember():
    out = _fresh("import ember; s = ember.serialization; print(s.__name__, "
                 "callable(s.safe_globals), callable(s.add_safe_globals))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ember.serialization", "True", "True"]


def test_cuda_amp_is_reachable_after_import_ember():
    out = _fresh("import ember; print(ember.cuda.amp.__name__); import ember.cuda.amp")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ember.cuda.amp"


def test_cuda_amp_grad_scaler_is_ember_amps():
    import ember.amp
    import ember.cuda.amp

    assert issubclass(ember.cuda.amp.GradScaler, ember.amp.GradScaler)
    from ember.cuda.amp import GradScaler

    assert GradScaler is ember.cuda.amp.GradScaler


def test_cuda_amp_grad_scaler_resolves_in_a_fresh_interpreter():
    out = _fresh("import ember\nprint(ember.cuda.amp.GradScaler.__name__)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "GradScaler"


# ---- errors for names ember lacks ----

def test_a_torch_name_ember_lacks_says_so():
    from ember import _torch_names

    missing = sorted(n for n in _torch_names.NAMES - set(_torch_names.LEFT_OUT)
                     if not hasattr(ember, n))
    if not missing:
        pytest.skip("ember has every top-level name of torch it means to have")
    with pytest.raises(AttributeError, match=rf"ember does not implement torch\.{missing[0]} yet"):
        getattr(ember, missing[0])


def test_a_name_left_out_on_purpose_gives_the_reason():
    with pytest.raises(AttributeError, match=r"torch\.quantize_per_tensor is left out of ember "
                                             r"on purpose \(quantization"):
        _ = ember.quantize_per_tensor


def test_a_name_torch_lacks_too_gets_the_plain_message():
    with pytest.raises(AttributeError, match=r"^module 'ember' has no attribute 'not_torch'$"):
        _ = ember.not_torch
    assert not hasattr(ember, "_private_probe")


def test_the_missing_name_message_matches_torchs_names(torch):
    from ember import _torch_names

    for name in ("compile", "quantize_per_tensor", "FloatTensor"):
        assert hasattr(torch, name) and name in _torch_names.NAMES
    assert not hasattr(torch, "not_torch") and "not_torch" not in _torch_names.NAMES


# ---- finfo, iinfo and the constants ----

@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
def test_finfo_matches_numpys_limits(name):
    ours, theirs = ember.finfo(getattr(ember, name)), np.finfo(getattr(np, name))
    assert ours.bits == theirs.bits
    assert ours.eps == float(theirs.eps) and ours.max == float(theirs.max)
    assert ours.min == float(theirs.min) and ours.tiny == float(theirs.tiny)
    assert ours.smallest_normal == float(theirs.smallest_normal)
    # NumPy keeps the resolution in the dtype itself; torch's is the Python float
    assert ours.resolution == 10.0 ** -theirs.precision
    assert ours.dtype == name


def test_finfo_of_bfloat16_by_hand():
    f = ember.finfo(ember.bfloat16)  # 8 exponent bits as float32, 7 mantissa bits
    assert (f.bits, f.eps, f.tiny, f.resolution) == (16, 2.0**-7, 2.0**-126, 0.01)
    assert f.max == (2 - 2.0**-7) * 2.0**127 == -f.min
    # the limits are representable: max survives a round trip through the dtype, eps is the gap
    assert ember.tensor(f.max, dtype=ember.bfloat16).item() == f.max
    assert ember.tensor(1 + f.eps, dtype=ember.bfloat16).item() == 1 + f.eps


def test_finfo_defaults_to_the_default_dtype(default_dtype):
    assert ember.finfo().dtype == "float32"
    default_dtype(ember.float64)
    assert ember.finfo() == ember.finfo(ember.float64)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_numpys_limits(name):
    ours, theirs = ember.iinfo(getattr(ember, name)), np.iinfo(getattr(np, name))
    assert (ours.bits, ours.min, ours.max, ours.dtype) == (theirs.bits, theirs.min, theirs.max,
                                                           name)


def test_finfo_and_iinfo_refuse_the_other_kind_as_torch():
    with pytest.raises(TypeError, match=r"finfo\(\) requires a floating point input type"):
        ember.finfo(ember.int32)
    with pytest.raises(TypeError, match=r"iinfo\(\) requires an integer input type"):
        ember.iinfo(ember.float32)
    with pytest.raises(TypeError, match="torch.bool is not supported by torch.iinfo"):
        ember.iinfo(ember.bool)
    with pytest.raises(TypeError, match="must be torch.dtype, not str"):
        ember.finfo("float32")


def test_finfo_iinfo_and_constants_match_torch(torch):
    for name in ("float16", "bfloat16", "float32", "float64"):
        a, b = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
        for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                     "dtype"):
            assert getattr(a, attr) == getattr(b, attr), (name, attr)
        assert repr(a) == repr(b)
    for name in ("uint8", "int8", "int16", "int32", "int64"):
        a, b = ember.iinfo(getattr(ember, name)), torch.iinfo(getattr(torch, name))
        assert (a.bits, a.min, a.max, a.dtype, repr(a)) == (b.bits, b.min, b.max, b.dtype,
                                                            repr(b))
    assert (ember.e, ember.pi, ember.inf, ember.newaxis) == (torch.e, torch.pi, torch.inf,
                                                             torch.newaxis)
    assert np.isnan(ember.nan) and np.isnan(torch.nan)
