"""ember.set_default_device / get_default_device and ``with ember.device(...)``: torch's default
device for the factory functions (torch.utils._device's constructors), which the *_like
factories, the new_* methods and from_numpy do not follow."""

import numpy as np
import pytest

import ember

# torch's list of the factories that take the default device (those ember has)
FACTORIES = {
    "zeros": lambda: ember.zeros(2), "ones": lambda: ember.ones(2), "empty": lambda: ember.empty(2),
    "full": lambda: ember.full((2,), 1.0), "rand": lambda: ember.rand(2),
    "randn": lambda: ember.randn(2), "randint": lambda: ember.randint(0, 5, (2,)),
    "randperm": lambda: ember.randperm(3), "arange": lambda: ember.arange(3),
    "linspace": lambda: ember.linspace(0, 1, 3), "logspace": lambda: ember.logspace(0, 1, 3),
    "eye": lambda: ember.eye(2), "tensor": lambda: ember.tensor([1.0]),
    "as_tensor": lambda: ember.as_tensor([1.0]), "asarray": lambda: ember.asarray(np.ones(2)),
    "empty_strided": lambda: ember.empty_strided((2,), (1,)),
    "scalar_tensor": lambda: ember.scalar_tensor(1.0),
    "tril_indices": lambda: ember.tril_indices(2, 2), "triu_indices": lambda: ember.triu_indices(2, 2),
    "hann_window": lambda: ember.hann_window(4), "kaiser_window": lambda: ember.kaiser_window(4),
    "fftfreq": lambda: ember.fft.fftfreq(4),
}
# ... and the ones that keep their input's device (or share CPU memory)
KEEP_INPUT_DEVICE = {
    "zeros_like": lambda x: ember.zeros_like(x), "full_like": lambda x: ember.full_like(x, 2),
    "randn_like": lambda x: ember.randn_like(x), "empty_like": lambda x: ember.empty_like(x),
    "new_zeros": lambda x: x.new_zeros(2), "new_tensor": lambda x: x.new_tensor([1.0]),
    "from_numpy": lambda x: ember.from_numpy(np.zeros(2)),
    "frombuffer": lambda x: ember.frombuffer(bytearray(8), dtype=ember.float32),
    "clone": lambda x: x.clone(), "add": lambda x: x + 1,
}


@pytest.fixture(autouse=True)
def restore_default():
    yield
    ember.set_default_device(None)


def test_default_is_cpu_and_settable():
    assert ember.get_default_device() == ember.device("cpu")
    ember.set_default_device("cpu")
    assert ember.get_default_device() == ember.device("cpu") and ember.zeros(1).device.type == "cpu"
    ember.set_default_device(ember.device("cuda", 0))
    assert ember.get_default_device() == ember.device("cuda:0")
    ember.set_default_device(None)
    assert ember.get_default_device() == ember.device("cpu")


def test_device_context_nests_and_restores():
    with ember.device("cuda"):
        assert ember.get_default_device().type == "cuda"
        with ember.device("cpu") as d:
            assert d == ember.device("cpu") and ember.get_default_device() == d
            assert ember.ones(2).device.type == "cpu"
        assert ember.get_default_device().type == "cuda"
    assert ember.get_default_device() == ember.device("cpu")
    with pytest.raises(KeyError):  # restored on the way out of an exception too
        with ember.device("cuda"):
            raise KeyError("inside")
    assert ember.get_default_device() == ember.device("cpu")


@pytest.mark.parametrize("name", FACTORIES)
def test_factories_follow_the_default_device(name):
    ember.set_default_device("cuda")
    if ember.cuda.is_available():
        assert FACTORIES[name]().device.type == "cuda"
    else:  # the factory went for the default device, which this machine lacks
        with pytest.raises(RuntimeError, match="cuda|CUDA"):
            FACTORIES[name]()
    ember.set_default_device(None)
    assert FACTORIES[name]().device.type == "cpu"


@pytest.mark.parametrize("name", KEEP_INPUT_DEVICE)
def test_like_factories_keep_their_input_device(name):
    x = ember.ones(3, device="cpu")
    ember.set_default_device("cuda")
    assert KEEP_INPUT_DEVICE[name](x).device.type == "cpu"


def test_explicit_device_wins():
    ember.set_default_device("cuda")
    assert ember.zeros(2, device="cpu").device.type == "cpu"
    assert ember.tensor([1, 2], device="cpu").tolist() == [1, 2]
