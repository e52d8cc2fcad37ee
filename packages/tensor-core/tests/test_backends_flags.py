"""ember.backends, ember.accelerator and the process-wide numerical settings: torch's names,
defaults and argument errors (against torch where installed)."""

from __future__ import annotations

import pytest

import ember


def test_backend_facts():
    b = ember.backends
    assert b.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512")
    assert b.cpu.get_cpu_capability() == ember._C._get_cpu_capability()
    assert b.cuda.is_built() is True
    assert b.mps.is_available() is False and b.mps.is_built() is False
    assert b.mkl.is_available() is False
    # oneDNN where the optional library is installed (test_onednn.py)
    assert b.mkldnn.is_available() is bool(ember._C._onednn_available())
    assert b.openmp.is_available() is False
    from ember.cuda import _cudnn

    # cuDNN where a GPU and the library are there (docs/cuda.md), else not available
    assert b.cudnn.is_available() is _cudnn.available()
    if b.cudnn.is_available():
        assert isinstance(b.cudnn.version(), int) and b.cudnn.version() >= 90000
        assert b.cudnn._unavailable_reason() == ""
    else:
        assert b.cudnn.version() is None and b.cudnn._unavailable_reason()
        assert not b.cudnn.is_acceptable(ember.ones(2))


def test_cudnn_flags_are_settable_and_flags_context_restores():
    c = ember.backends.cudnn
    assert (c.enabled, c.benchmark, c.deterministic, c.allow_tf32) == (True, False, False, True)
    c.benchmark = True
    c.deterministic = True
    try:
        import ember.backends.cudnn as again

        assert again.benchmark is True and again.deterministic is True
        with c.flags(enabled=False, benchmark=False, deterministic=False, allow_tf32=False):
            assert (c.enabled, c.benchmark, c.deterministic, c.allow_tf32) == (
                False, False, False, False)
        assert c.benchmark is True and c.enabled is True
    finally:
        c.benchmark = False
        c.deterministic = False


def test_matmul_tf32_is_tied_to_float32_matmul_precision():
    m = ember.backends.cuda.matmul
    assert ember.get_float32_matmul_precision() == "highest" and m.allow_tf32 is False
    try:
        ember.set_float32_matmul_precision("high")
        assert m.allow_tf32 is True
        m.allow_tf32 = False
        assert ember.get_float32_matmul_precision() == "highest"
        m.allow_tf32 = True
        assert ember.get_float32_matmul_precision() == "high"
        with pytest.warns(UserWarning, match="foo is not one of 'highest', 'high', or 'medium'"):
            ember.set_float32_matmul_precision("foo")
        assert ember.get_float32_matmul_precision() == "high"
    finally:
        ember.set_float32_matmul_precision("highest")


def test_deterministic_settings():
    assert not ember.are_deterministic_algorithms_enabled()
    try:
        ember.use_deterministic_algorithms(True, warn_only=True)
        assert ember.are_deterministic_algorithms_enabled()
        assert ember.is_deterministic_algorithms_warn_only_enabled()
        assert ember.get_deterministic_debug_mode() == 1
        ember.set_deterministic_debug_mode("error")
        assert ember.get_deterministic_debug_mode() == 2
        assert not ember.is_deterministic_algorithms_warn_only_enabled()
        ember.set_deterministic_debug_mode(0)
        assert not ember.are_deterministic_algorithms_enabled()
    finally:
        ember.use_deterministic_algorithms(False)


@pytest.mark.parametrize("call", [
    lambda m: m.use_deterministic_algorithms("x"),
    lambda m: m.set_deterministic_debug_mode("x"),
    lambda m: m.set_deterministic_debug_mode(5),
], ids=["mode not bool", "unknown debug mode", "debug mode out of range"])
def test_setting_errors_match_torch(call):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(ember)
    assert str(ours.value) == str(theirs.value)
    torch.use_deterministic_algorithms(False)


@pytest.mark.skipif(ember.cuda.is_available(), reason="a GPU is usable here")
def test_accelerator_without_a_gpu():
    acc = ember.accelerator
    assert acc.current_accelerator() is None
    assert acc.device_count() == 0 and acc.is_available() is False
    for call in (acc.current_device_index, acc.synchronize):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is "
                                               "available."):
            call()
    acc.empty_cache()  # nothing to do, as torch


@pytest.mark.skipif(not ember.cuda.is_available(), reason="no CUDA GPU")
def test_accelerator_with_a_gpu():
    acc = ember.accelerator
    assert acc.current_accelerator() == ember.device("cuda")
    assert acc.device_count() == ember.cuda.device_count() >= 1
    assert acc.current_device_index() == ember.cuda.current_device()
    acc.synchronize()
