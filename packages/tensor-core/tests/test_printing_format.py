"""Tests for ember._tensor_str: tensor text must match PyTorch's repr exactly.

The hand-written cases run everywhere.  The oracle cases compare against
``repr(torch_tensor)`` and are skipped when PyTorch is not installed.
"""

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

try:
    from ember import _tensor_str as ts
except ImportError:  # the compiled package is not available: load the file directly
    _path = Path(__file__).resolve().parents[1] / "ember" / "_tensor_str.py"
    _spec = importlib.util.spec_from_file_location("_ember_tensor_str", _path)
    ts = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = ts
    _spec.loader.exec_module(ts)


@pytest.fixture(autouse=True)
def restore_print_options():
    saved = ts.get_printoptions()
    yield
    ts.set_printoptions(**saved)
    torch = sys.modules.get("torch")
    if torch is not None:  # the oracle tests may have changed torch's state
        torch.set_printoptions(profile="default")
        torch.set_default_dtype(torch.float32)


def fmt(values, dtype_name=None, **kwargs):
    """format_tensor for a plain NumPy array, float32 being the default dtype."""
    a = np.asarray(values)
    dtype_name = dtype_name or a.dtype.name
    kwargs.setdefault("is_default_float", dtype_name == "float32")
    return ts.format_tensor(a, dtype_name=dtype_name, shape=a.shape, **kwargs)


# --------------------------------------------------------------------------
# Hand-written expectations (checked against PyTorch once).
# --------------------------------------------------------------------------

EXPECTED = [
    (lambda: fmt(np.array([[1, 2], [3, 4]])), "tensor([[1, 2],\n        [3, 4]])"),
    (lambda: fmt(np.float32(3.0)), "tensor(3.)"),
    (lambda: fmt(np.array([1.0, 2.5, -3.25], np.float32)), "tensor([ 1.0000,  2.5000, -3.2500])"),
    (
        lambda: fmt(np.array([1e-5, 1.0, 1e5], np.float32)),
        "tensor([1.0000e-05, 1.0000e+00, 1.0000e+05])",
    ),
    (
        lambda: fmt(np.array([np.nan, 1.0, np.inf, -np.inf], np.float32)),
        "tensor([nan, 1., inf, -inf])",
    ),
    (lambda: fmt(np.array([True, False])), "tensor([ True, False])"),
    (lambda: fmt(np.zeros((0, 3), np.float32)), "tensor([], size=(0, 3))"),
    (lambda: fmt(np.zeros(0, np.int64)), "tensor([], dtype=ember.int64)"),
    (
        lambda: fmt(np.array([1.5, 2.0], np.float32), "bfloat16", is_default_float=False),
        "tensor([1.5000, 2.0000], dtype=ember.bfloat16)",
    ),
    (lambda: fmt(np.array([7, 200], np.uint8)), "tensor([  7, 200], dtype=ember.uint8)"),
    (
        lambda: fmt(np.ones(3, np.float32), suffixes=("requires_grad=True",)),
        "tensor([1., 1., 1.], requires_grad=True)",
    ),
    (  # device comes before dtype, as in PyTorch's repr of CUDA tensors
        lambda: fmt(np.array([1, 2], np.int32), device="cuda:0"),
        "tensor([1, 2], device='cuda:0', dtype=ember.int32)",
    ),
    (
        lambda: fmt(np.arange(2000)),
        "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])",
    ),
    (
        lambda: fmt(np.arange(1000, 3000, dtype=np.float32).reshape(40, 50)),
        "tensor([[1000., 1001., 1002.,  ..., 1047., 1048., 1049.],\n"
        "        [1050., 1051., 1052.,  ..., 1097., 1098., 1099.],\n"
        "        [1100., 1101., 1102.,  ..., 1147., 1148., 1149.],\n"
        "        ...,\n"
        "        [2850., 2851., 2852.,  ..., 2897., 2898., 2899.],\n"
        "        [2900., 2901., 2902.,  ..., 2947., 2948., 2949.],\n"
        "        [2950., 2951., 2952.,  ..., 2997., 2998., 2999.]])",
    ),
    (
        lambda: fmt(np.arange(8).reshape(2, 2, 2)),
        "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])",
    ),
    (
        lambda: fmt(np.arange(30)),
        "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
        "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29])",
    ),
    (
        lambda: fmt(np.array([1 + 2j, -0.5 - 1j], np.complex64), is_default_float=True),
        "tensor([ 1.0000+2.j, -0.5000-1.j])",
    ),
]


@pytest.mark.parametrize("make, expected", EXPECTED)
def test_expected_strings(make, expected):
    assert make() == expected


def test_set_printoptions_precision_and_threshold():
    ts.set_printoptions(precision=2)
    assert fmt(np.array([1.12345], np.float32)) == "tensor([1.12])"
    ts.set_printoptions(threshold=5)
    assert fmt(np.arange(10)) == "tensor([0, 1, 2,  ..., 7, 8, 9])"
    ts.set_printoptions(profile="default")
    assert fmt(np.array([1.12345], np.float32)) == "tensor([1.1235])"
    assert fmt(np.arange(10)) == "tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])"


def test_sci_mode_option():
    ts.set_printoptions(sci_mode=True)
    assert fmt(np.array([1.5, 2.0], np.float32)) == "tensor([1.5000e+00, 2.0000e+00])"
    ts.set_printoptions(sci_mode=False)
    assert fmt(np.array([1e-5, 1e5], np.float32)) == "tensor([     0.0000, 100000.0000])"


def test_edgeitems_zero_shows_size():
    ts.set_printoptions(edgeitems=0, threshold=3)
    assert fmt(np.arange(6).reshape(2, 3)) == "tensor([...], size=(2, 3))"


def test_print_options_roundtrip():
    assert ts.get_printoptions() == {
        "precision": 4,
        "threshold": 1000,
        "edgeitems": 3,
        "linewidth": 80,
        "sci_mode": None,
    }
    ts.set_printoptions(profile="full")
    assert ts.get_printoptions()["threshold"] == math.inf
    ts.set_printoptions(profile="short", precision=3)
    opts = ts.get_printoptions()
    assert (opts["precision"], opts["edgeitems"]) == (3, 2)
    with ts.printoptions(linewidth=20):
        assert ts.PRINT_OPTIONS.linewidth == 20
    assert ts.PRINT_OPTIONS.linewidth == 80


def test_flat_values_are_reshaped():
    got = ts.format_tensor(np.arange(4), dtype_name="int64", is_default_float=False, shape=(2, 2))
    assert got == "tensor([[0, 1],\n        [2, 3]])"


# --------------------------------------------------------------------------
# Oracle comparisons against PyTorch.
# --------------------------------------------------------------------------


def ember_repr(t):
    """Format a torch tensor through format_tensor, as the ember core would."""
    import torch

    values = t.detach()
    if values.dtype in (torch.float16, torch.bfloat16):
        values = values.float()
    suffixes = ()
    if t.grad_fn is not None:
        suffixes = (f"grad_fn=<{type(t.grad_fn).__name__}>",)
    elif t.requires_grad:
        suffixes = ("requires_grad=True",)
    default = torch.get_default_dtype()
    default_complex = torch.complex128 if default == torch.float64 else torch.complex64
    return ts.format_tensor(
        values.numpy(),
        dtype_name=str(t.dtype).removeprefix("torch."),
        is_default_float=t.dtype in (default, default_complex),
        shape=tuple(t.shape),
        suffixes=suffixes,
    )


def check(t, **options):
    import torch

    torch.set_printoptions(**options)
    ts.set_printoptions(**options)
    assert ember_repr(t) == repr(t).replace("torch.", "ember.")


def _seeded(torch):
    return torch.Generator().manual_seed(0)


nan, inf = math.nan, math.inf

# Each case builds a tensor from the torch module.
ORACLE_CASES = {
    "floats": lambda T: T.tensor([1.0, 2.0, 3.0]),
    "fractions": lambda T: T.tensor([1.5, -2.25, 3.125, 0.0]),
    "ints_2d": lambda T: T.tensor([[1, -2], [30, 4]]),
    "tiny_and_huge": lambda T: T.tensor([1e-5, 1.0, 1e5]),
    "big_integers": lambda T: T.tensor([1e9, 2e9, -3e9]),
    "wide_ratio": lambda T: T.tensor([123456.789, 0.001]),
    "just_below_sci": lambda T: T.tensor([0.5, 499.0]),
    "rounding_widens": lambda T: T.tensor([9.99996, 1.0]),
    "nonfinite": lambda T: T.tensor([nan, 1.5, inf, -inf]),
    "only_nonfinite": lambda T: T.tensor([nan, inf, -inf]),
    "zeros": lambda T: T.zeros(2, 3),
    "negative_zero": lambda T: T.tensor([0.0, -0.0]),
    "bool": lambda T: T.tensor([[True, False], [False, True]]),
    "negatives": lambda T: -T.arange(12.0).reshape(3, 4) / 3,
    "randn_3d": lambda T: T.randn(2, 3, 4, generator=_seeded(T)),
    "summarised_1d": lambda T: T.arange(5000),
    "summarised_2d": lambda T: T.randn(40, 50, generator=_seeded(T)),
    "summarised_3d": lambda T: T.randn(12, 10, 11, generator=_seeded(T)) * 1e6,
    "summarised_4d": lambda T: T.arange(10000.0).reshape(10, 10, 10, 10),
    "summarised_narrow_rows": lambda T: T.arange(2002).reshape(1001, 2),
    "empty_1d": lambda T: T.tensor([]),
    "empty_2d": lambda T: T.empty(0, 3),
    "empty_int": lambda T: T.empty(2, 0, dtype=T.int64),
    "empty_bool": lambda T: T.empty(0, dtype=T.bool),
    "empty_half": lambda T: T.empty(0, 2, dtype=T.float16),
    "scalar_float": lambda T: T.tensor(3.0),
    "scalar_frac": lambda T: T.tensor(-3.5),
    "scalar_tiny": lambda T: T.tensor(1e-8),
    "scalar_nan": lambda T: T.tensor(nan),
    "scalar_int": lambda T: T.tensor(7),
    "scalar_bool": lambda T: T.tensor(True),
    "scalar_int32": lambda T: T.tensor(3, dtype=T.int32),
    "scalar_bf16": lambda T: T.tensor(2.5, dtype=T.bfloat16),
    "float16": lambda T: T.randn(3, 4, generator=_seeded(T)).half(),
    "float16_extremes": lambda T: T.tensor([65504.0, -6e-8, 1.0], dtype=T.float16),
    "bfloat16": lambda T: (T.randn(5, generator=_seeded(T)) * 1e4).bfloat16(),
    "float64": lambda T: T.tensor([0.1, 1e-300, 1e300], dtype=T.float64),
    "int32": lambda T: T.arange(-5, 5, dtype=T.int32).reshape(2, 5),
    "uint8": lambda T: T.arange(0, 256, 17, dtype=T.uint8),
    "int8": lambda T: T.tensor([-128, 0, 127], dtype=T.int8),
    "int64_extremes": lambda T: T.tensor([2**63 - 1, -(2**63)]),
    "complex": lambda T: T.tensor([1 + 2j, -3.5 - 0j, complex(nan, inf)]),
    "complex128": lambda T: T.randn(3, 2, dtype=T.complex128, generator=_seeded(T)),
    "requires_grad": lambda T: T.ones(3, requires_grad=True),
    "grad_fn": lambda T: T.ones(2, 2, requires_grad=True) * 2,
    "grad_fn_wraps": lambda T: T.randn(9, dtype=T.float64, requires_grad=True) + 1,
    "long_row_wraps": lambda T: T.randn(50, generator=_seeded(T)),
    "long_int_row": lambda T: T.arange(100).reshape(2, 50),
}


@pytest.mark.parametrize("name", ORACLE_CASES)
def test_matches_torch(name):
    torch = pytest.importorskip("torch")
    check(ORACLE_CASES[name](torch))


OPTION_SETS = [
    dict(precision=2),
    dict(precision=8),
    dict(precision=0),
    dict(threshold=5),
    dict(threshold=0),
    dict(edgeitems=1, threshold=10),
    dict(edgeitems=0),
    dict(edgeitems=0, threshold=10),
    dict(linewidth=30),
    dict(linewidth=120),
    dict(linewidth=5),
    dict(sci_mode=True),
    dict(sci_mode=False),
    dict(profile="short"),
    dict(profile="full"),
    dict(profile="short", precision=5, sci_mode=True),
]

OPTION_TENSORS = [
    "fractions",
    "tiny_and_huge",
    "ints_2d",
    "randn_3d",
    "summarised_1d",
    "summarised_2d",
    "summarised_3d",
    "scalar_frac",
    "empty_2d",
    "bfloat16",
    "complex",
    "grad_fn_wraps",
    "long_row_wraps",
]


@pytest.mark.parametrize("options", OPTION_SETS, ids=repr)
@pytest.mark.parametrize("name", OPTION_TENSORS)
def test_matches_torch_with_options(name, options):
    torch = pytest.importorskip("torch")
    check(ORACLE_CASES[name](torch), **options)


def test_matches_torch_with_float64_default():
    torch = pytest.importorskip("torch")
    torch.set_default_dtype(torch.float64)
    for t in (
        torch.tensor([1.5, 2.0]),
        torch.tensor([1.5], dtype=torch.float32),
        torch.empty(0),
        torch.tensor([1j]),
        torch.tensor([1j], dtype=torch.complex64),
    ):
        check(t)


@pytest.mark.parametrize("seed", range(5))
def test_matches_torch_random(seed):
    """Random shapes, magnitudes, special values, dtypes and options."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    dtypes = [
        torch.float32,
        torch.float64,
        torch.float16,
        torch.bfloat16,
        torch.int64,
        torch.int32,
        torch.uint8,
        torch.bool,
        torch.complex64,
    ]
    option_choices = dict(
        precision=[1, 2, 6],
        threshold=[5, 50],
        edgeitems=[0, 1, 2],
        linewidth=[20, 120],
        sci_mode=[True, False],
        profile=["short", "full"],
    )
    for _ in range(60):
        ndim = int(rng.integers(0, 5))
        shape = tuple(int(n) for n in rng.integers(0, 12 if ndim < 3 else 5, size=ndim))
        x = rng.standard_normal(shape) * 10.0 ** int(rng.integers(-6, 10))
        if rng.random() < 0.3:
            x = np.round(x)
        flat = x.reshape(-1)
        for special in (np.nan, np.inf, -np.inf, 0.0, -0.0):
            if flat.size and rng.random() < 0.2:
                flat[rng.integers(flat.size)] = special
        dtype = dtypes[int(rng.integers(len(dtypes)))]
        t = torch.tensor(x)
        if not (dtype.is_floating_point or dtype.is_complex):
            t = t.nan_to_num(0, 0, 0).clamp(0 if dtype == torch.uint8 else -1e6, 1e6)
        t = t.to(dtype)
        options = {}
        for key in rng.choice(list(option_choices), size=int(rng.integers(0, 3)), replace=False):
            options[key] = option_choices[key][int(rng.integers(len(option_choices[key])))]
        check(t, **options)
        torch.set_printoptions(profile="default")
        ts.set_printoptions(profile="default")
