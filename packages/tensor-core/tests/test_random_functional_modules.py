"""ember.random (torch.random: seeding names and fork_rng), ember.functional
(torch.functional's names) and ember.version (torch.version's)."""

import pytest

import ember
from ember.cuda._testing import GPU_WITHOUT_CUPY, REAL_GPU, devices


def test_fork_rng_restores_the_cpu_stream_of_draws():
    ember.manual_seed(3)
    expected = ember.rand(4).tolist()
    ember.manual_seed(3)
    with ember.random.fork_rng():
        inside = ember.rand(4).tolist()
        ember.rand(10)
    assert inside == expected  # the fork starts from the outer state
    assert ember.rand(4).tolist() == expected  # and leaves it as it was
    ember.manual_seed(3)
    with ember.random.fork_rng(enabled=False):
        ember.rand(4)
    assert ember.rand(4).tolist() != expected
    with pytest.raises(RuntimeError, match="no generators"):
        with ember.random.fork_rng(device_type="xpu"):
            pass


def _cuda_fork():
    ember.cuda.manual_seed(5)
    expected = ember.rand(4, device="cuda").tolist()
    ember.cuda.manual_seed(5)
    with ember.random.fork_rng(devices=[0]):
        ember.rand(100, device="cuda")
    assert ember.rand(4, device="cuda").tolist() == expected


@pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")
def test_fork_rng_restores_the_listed_cuda_devices():
    with devices(16 << 20):
        _cuda_fork()


def test_the_modules_hold_torchs_names():
    assert ember.random.manual_seed is ember.manual_seed
    assert ember.random.default_generator is ember.default_generator
    for name in ember.functional.__all__:
        assert getattr(ember.functional, name) is getattr(ember, name)
    functional = pytest.importorskip("torch.functional")
    random = pytest.importorskip("torch.random")
    left_out = {"lu"}  # deprecated in torch
    assert set(functional.__all__) - left_out == set(ember.functional.__all__)
    public = {n for n in dir(random) if not n.startswith("_")}
    assert {"fork_rng", "manual_seed", "seed", "get_rng_state", "set_rng_state",
            "initial_seed"} <= public & set(ember.random.__all__)


def test_version():
    assert ember.version.__version__ == ember.__version__
    assert ember.version.hip is None and ember.version.rocm is None and ember.version.xpu is None
    cuda = ember.version.cuda  # the runtime's, found at run time
    if REAL_GPU:
        major, minor = cuda.split(".")
        assert int(major) >= 11 and minor.isdigit()
    else:
        assert cuda is None
    with pytest.raises(AttributeError, match="has no attribute 'git'"):
        _ = ember.version.git


VERSIONS = ["2.13.0+cpu", "2.13", "2.13.0", "2.14.0a0", "2.13.0rc1", "2.13.0.post1",
            "2.13.0.dev20250101", "2.13.0a1.dev2", "1!0.1", "parrot", "2.13.0+cpu.1",
            "2.13.0+cu121", "0.1.0", "2.13.0+abc.5"]
OTHERS = VERSIONS + [(2, 13), (2, 12, 9), [2, 13, 0], (0, 1)]


def test_torch_version_orders_as_pep_440():
    from ember.torch_version import TorchVersion as V

    assert isinstance(ember.__version__, V) and ember.__version__ == "0.1.0"
    assert ember.__version__ >= (0, 1) and ember.__version__ < "0.1.1"
    assert ember.__version__ > "0.1rc1"
    assert V("1.0.dev0") < V("1.0a0") < V("1.0b1") < V("1.0rc1") < V("1.0") < V("1.0.post1")
    assert V("1.0") < V("1.0+local") and V("1!0.1") > V("9.9")
    assert (V("parrot") > "abc") == ("parrot" > "abc")  # not a version: compared as strings
    with pytest.raises(TypeError):
        _ = V("1.0") > 3


def test_torch_version_like_torchs_where_installed():
    tv = pytest.importorskip("torch.torch_version")
    from ember.torch_version import TorchVersion as V

    for a in VERSIONS:
        for b in OTHERS:
            for op in ("__gt__", "__ge__", "__lt__", "__le__", "__eq__", "__ne__"):
                assert getattr(V(a), op)(b) == getattr(tv.TorchVersion(a), op)(b), (a, op, b)
