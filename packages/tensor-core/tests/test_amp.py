"""ember.amp.autocast on the CPU: which ops run in which dtype (torch's lists), that the cast is the
plain cast (the same bits as casting by hand), the region's state (nesting, enabled=False,
decorator, threads), and the torch spellings. Gradients and nn.functional: packages/autograd and
packages/nn tests."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import ember

bf16, f16, f32, f64 = ember.bfloat16, ember.float16, ember.float32, ember.float64


def _inputs(dtype=f32):
    g = ember.Generator().manual_seed(0)
    return {
        "a": ember.randn(4, 4, generator=g).to(dtype),
        "b": ember.randn(4, 4, generator=g).to(dtype),
        "B": ember.randn(2, 4, 4, generator=g).to(dtype),
        "v": ember.randn(4, generator=g).to(dtype),
        "x": ember.randn(1, 2, 5, 5, generator=g).to(dtype),
        "w": ember.randn(3, 2, 3, 3, generator=g).to(dtype),
    }


# (name, call): the same call in ember and in torch (module passed as `m`).
CALLS = [
    ("mm", lambda m, t: m.mm(t["a"], t["b"])),
    ("mm method", lambda m, t: t["a"].mm(t["b"])),
    ("matmul operator", lambda m, t: t["a"] @ t["b"]),
    ("matmul", lambda m, t: m.matmul(t["a"], t["b"])),
    ("matmul method", lambda m, t: t["a"].matmul(t["b"])),
    ("bmm", lambda m, t: m.bmm(t["B"], t["B"])),
    ("addmm", lambda m, t: m.addmm(t["v"], t["a"], t["b"])),
    ("addmm method", lambda m, t: t["v"].addmm(t["a"], t["b"])),
    ("baddbmm", lambda m, t: m.baddbmm(t["B"], t["B"], t["B"])),
    ("addbmm", lambda m, t: m.addbmm(t["a"], t["B"], t["B"])),
    ("conv2d", lambda m, t: m.conv2d(t["x"], t["w"])),
    ("einsum", lambda m, t: m.einsum("ij,jk->ik", t["a"], t["b"])),
    ("mv (not listed on CPU)", lambda m, t: m.mv(t["a"], t["v"])),
    ("dot (not listed on CPU)", lambda m, t: m.dot(t["v"], t["v"])),
    ("add (not listed)", lambda m, t: t["a"] + t["b"]),
    ("exp (not listed on CPU)", lambda m, t: t["a"].exp()),
    ("softmax (not listed on CPU)", lambda m, t: m.softmax(t["a"], 0)),
    ("sum (not listed on CPU)", lambda m, t: t["a"].sum()),
    ("prod", lambda m, t: m.prod(t["a"])),
    ("prod method", lambda m, t: t["a"].prod()),
    ("quantile", lambda m, t: m.quantile(t["a"], 0.5)),
    ("cat", lambda m, t: m.cat([t["a"], t["b"]])),
    ("stack", lambda m, t: m.stack([t["a"], t["b"]])),
]


@pytest.mark.parametrize("name,call", CALLS, ids=[c[0] for c in CALLS])
@pytest.mark.parametrize("dtype", [f32, bf16], ids=["float32 in", "bfloat16 in"])
def test_result_dtype_matches_torch(name, call, dtype):
    torch = pytest.importorskip("torch")
    ours = _inputs(dtype)
    theirs = {k: torch.from_numpy(v.float().numpy()).to(getattr(torch, str(dtype).split(".")[1]))
              for k, v in ours.items()}
    with ember.autocast("cpu"):
        got = call(ember, ours)
    with torch.autocast("cpu"):
        want = call(torch, theirs)
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1], name


def test_lower_precision_ops_are_the_hand_cast():
    t = _inputs()
    with ember.autocast("cpu"):
        got = [t["a"] @ t["b"], ember.mm(t["a"], t["b"]), t["a"].mm(t["b"]),
               ember.addmm(t["v"], t["a"], t["b"]), ember.conv2d(t["x"], t["w"])]
    a, b, v, x, w = (t[k].to(bf16) for k in "abvxw")
    want = [a @ b, ember.mm(a, b), a.mm(b), ember.addmm(v, a, b), ember.conv2d(x, w)]
    for g, e in zip(got, want):
        assert g.dtype == bf16
        assert np.array_equal(g.float().numpy(), e.float().numpy())


def test_float32_ops_upcast_lower_precision_inputs():
    a = _inputs(bf16)["a"]
    with ember.autocast("cpu"):
        got = ember.prod(a, 1)
    assert got.dtype == f32
    assert np.array_equal(got.numpy(), ember.prod(a.float(), 1).numpy())


def test_promote_ops_take_the_widest_dtype():
    a32, a16 = _inputs()["a"], _inputs(bf16)["a"]
    with ember.autocast("cpu"):
        assert ember.cat([a16, a16]).dtype == bf16
        mixed = ember.cat([a16, a32])
        assert ember.stack([a32, a16]).dtype == f32
    assert mixed.dtype == f32
    assert np.array_equal(mixed.numpy(), ember.cat([a16.float(), a32]).numpy())


def test_float64_and_integer_tensors_are_left_alone():
    a = ember.randn(3, 3, dtype=f64)
    i = ember.arange(9).reshape(3, 3)
    with ember.autocast("cpu"):
        assert ember.mm(a, a).dtype == f64
        assert ember.mm(i, i).dtype == ember.int64
        assert ember.prod(a).dtype == f64


def test_float16_region_on_cpu():
    t = _inputs()
    with ember.autocast("cpu", dtype=f16):
        assert ember.get_autocast_dtype("cpu") == f16
        assert (t["a"] @ t["b"]).dtype == f16
    assert ember.get_autocast_dtype("cpu") == bf16


def test_unsupported_cpu_dtype_warns_and_disables():
    with pytest.warns(UserWarning, match="CPU Autocast only supports dtype of"):
        ctx = ember.autocast("cpu", dtype=f64)
    with ctx:
        assert not ember.is_autocast_enabled("cpu")


def test_nesting_and_enabled_false_restore_the_outer_state():
    t = _inputs()
    assert not ember.is_autocast_enabled("cpu")
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu") and ember.is_autocast_cpu_enabled()
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert (t["a"] @ t["b"]).dtype == f32
            with ember.autocast("cpu", dtype=f16):
                assert (t["a"] @ t["b"]).dtype == f16
            assert (t["a"] @ t["b"]).dtype == f32
        assert (t["a"] @ t["b"]).dtype == bf16
    assert not ember.is_autocast_enabled("cpu")
    assert not ember._C._is_autocast_active()
    assert (t["a"] @ t["b"]).dtype == f32


def test_state_is_restored_after_an_exception():
    with pytest.raises(RuntimeError):
        with ember.autocast("cpu"):
            ember.mm(ember.ones(2, 3), ember.ones(2, 3))
    assert not ember.is_autocast_enabled("cpu")
    assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == f32


def test_errors_inside_a_region_name_the_op():
    with ember.autocast("cpu"):
        with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
            ember.mm(ember.ones(2, 3), ember.ones(2, 3))


def test_decorator():
    @ember.autocast("cpu")
    def f(a, b):
        assert ember.is_autocast_enabled("cpu")
        return a @ b

    t = _inputs()
    assert f(t["a"], t["b"]).dtype == bf16
    assert not ember.is_autocast_enabled("cpu")


def test_state_is_per_thread():
    t = _inputs()
    seen = {}

    def other():
        seen["enabled"] = ember.is_autocast_enabled("cpu")
        seen["dtype"] = (t["a"] @ t["b"]).dtype

    with ember.autocast("cpu"):
        th = threading.Thread(target=other)
        th.start()
        th.join()
        assert (t["a"] @ t["b"]).dtype == bf16
    assert seen == {"enabled": False, "dtype": f32}


def test_state_functions():
    assert ember.get_autocast_dtype("cuda") == f16
    assert ember.get_autocast_cpu_dtype() == bf16 and ember.get_autocast_gpu_dtype() == f16
    assert ember.is_autocast_cache_enabled()
    assert ember.is_autocast_available("cpu") and ember.is_autocast_available("cuda")
    assert not ember.is_autocast_available("xla")
    ember.set_autocast_enabled("cpu", True)
    try:
        assert ember._C._is_autocast_active()
        assert (ember.ones(2, 2) @ ember.ones(2, 2)).dtype == bf16
    finally:
        ember.set_autocast_enabled("cpu", False)
    assert not ember._C._is_autocast_active()
    assert ember.autocast_increment_nesting() == 1
    assert ember.autocast_decrement_nesting() == 0


def test_wrong_device_types():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ember.autocast(3)
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'xla'"):
        ember.autocast("xla")


@pytest.mark.skipif(ember.cuda.is_available(), reason="a GPU is usable here")
def test_cuda_region_without_a_gpu_warns_and_is_off():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ctx = ember.autocast("cuda")
    with ctx:
        assert not ember.is_autocast_enabled("cuda")
        assert not ember._C._is_autocast_active()


def test_torch_spellings():
    import ember.amp

    assert ember.amp.autocast is ember.autocast
    t = _inputs()
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        ctx = ember.cpu.amp.autocast()
    with ctx:
        assert (t["a"] @ t["b"]).dtype == bf16
    with pytest.warns(FutureWarning, match=r"torch.cuda.amp.autocast\(args...\)` is deprecated"):
        ember.cuda.amp.autocast(enabled=False)
    assert issubclass(ember.cuda.amp.GradScaler, ember.amp.GradScaler)
    assert issubclass(ember.cpu.amp.GradScaler, ember.amp.GradScaler)


def test_listed_names_exist_in_the_core_or_are_documented_absences():
    """Each name in the CPU lists that ember has as a core op is one the core dispatches by
    that name (so the list entry is live)."""
    from ember.amp._lists import POLICIES

    rows = {r["name"] if isinstance(r, dict) else r[0] for r in ember._C._ops()}
    live = {n for n in POLICIES["cpu"] if n in rows}
    assert {"mm", "bmm", "matmul", "addmm", "baddbmm", "addbmm", "conv1d", "conv2d", "conv3d",
            "conv_transpose2d", "prod", "nll_loss", "cat"} <= live


def test_off_costs_no_state():
    # outside a region the core's flag is off, so ops never reach the hook
    calls = []
    from ember.amp import autocast_mode

    orig = autocast_mode._autocast_hook
    ember._C._set_autocast_hook(lambda *a: calls.append(a), ["mm"])
    try:
        ember.mm(ember.ones(2, 2), ember.ones(2, 2))
        assert calls == []
        with ember.autocast("cpu"):
            ember.mm(ember.ones(2, 2), ember.ones(2, 2))
            ember.add(ember.ones(2), ember.ones(2))
        assert [c[0] for c in calls] == ["mm"]
    finally:
        from ember.amp._lists import POLICIES

        ember._C._set_autocast_hook(orig, sorted(set(POLICIES["cpu"]) | set(POLICIES["cuda"])))


def test_no_warnings_outside_a_region():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.mm(ember.ones(2, 2), ember.ones(2, 2))


@pytest.mark.parametrize("call", [
    lambda m: m.set_autocast_enabled("cpu", 1),
    lambda m: m.set_autocast_dtype("cpu", 3),
    lambda m: m.set_autocast_cpu_dtype(m.ones(2)),
    lambda m: m.set_autocast_cache_enabled(1),
], ids=["enabled not bool", "dtype not dtype", "cpu dtype a tensor", "cache not bool"])
def test_state_setters_refuse_wrong_types_as_torch(call):
    with pytest.raises(TypeError) as ours:
        call(ember)
    assert ember.get_autocast_cpu_dtype() == bf16 and not ember.is_autocast_enabled("cpu")
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError) as theirs:
        call(torch)
    assert str(ours.value) == str(theirs.value)


def test_calls_with_out_are_not_cast():
    # torch registers no out= variant for autocast: the op runs in its inputs' dtypes, with the
    # usual out= checks
    a = _inputs()["a"]
    out = ember.empty(4, 4)
    with ember.autocast("cpu"):
        r = ember.mm(a, a, out=out)
        assert r is out
        with pytest.raises(RuntimeError):
            ember.index_select(a, 0, ember.tensor([0]), out=ember.empty(0, dtype=ember.int64))
        c = ember.cat([a.bfloat16(), a], out=ember.empty(0, dtype=f64))
    assert c.dtype == f64
    assert np.array_equal(out.numpy(), ember.mm(a, a).numpy())


def test_promote_refuses_a_second_half_type_as_torch():
    a = ember.ones(2, dtype=f16)
    with ember.autocast("cpu"):
        with pytest.raises(RuntimeError, match="Unexpected floating ScalarType"):
            ember.cat([a, a])
