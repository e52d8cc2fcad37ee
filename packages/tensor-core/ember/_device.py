"""ember.device, ember.Size and the layout sentinel."""

from __future__ import annotations

import operator


class device:  # noqa: N801 - PyTorch's name
    """A device: ``ember.device("cpu")``, ``ember.device("cuda", 0)``, ``"cuda:1"``."""

    __slots__ = ("type", "index")

    def __init__(self, type: str | device, index: int | None = None) -> None:  # noqa: A002
        if index is not None and not isinstance(index, int):  # (the parser's check first)
            raise TypeError(f"device(): argument 'index' (position 2) must be int, not "
                            f"{index.__class__.__name__}")
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int) and not isinstance(type, bool) and index is None:
            # torch's device(n): the current accelerator's device n
            if type < 0:
                raise RuntimeError("Device index must not be negative")
            from ember import _C

            if not _C._cuda_is_available():
                raise RuntimeError("Cannot access accelerator device when none is available.")
            self.type, self.index = "cuda", type
            return
        if not isinstance(type, str):
            raise TypeError(f"device() expected a string, got {type.__class__.__name__}")
        if not type:
            raise RuntimeError("Device string must not be empty")
        if ":" in type:
            if index is not None:
                raise ValueError(
                    "type (string) must not include an index because index was passed "
                    f"explicitly: {type}"
                )
            type, _, idx = type.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        if type not in ("cpu", "cuda"):
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {type}"
            )
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type, self.index = type, index

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))

    # ``with ember.device("cuda"):`` makes it the factories' default device for the block
    # (torch's device context), restoring the one before on exit.
    def __enter__(self) -> device:
        from ember import _C

        _DEVICE_CONTEXTS.append(_C._get_default_device())
        _C._set_default_device(self)
        return self

    def __exit__(self, *exc_info) -> None:
        from ember import _C

        _C._set_default_device(_DEVICE_CONTEXTS.pop())


_DEVICE_CONTEXTS: list = []  # the default devices that the open `with device(...)` blocks replaced


_CPU = device("cpu")


_DEVICES = {"cpu": _CPU}  # the core's device strings -> their objects (Tensor.device)


def _make_device(spec: str) -> device:
    d = _DEVICES.get(spec)
    if d is None:
        d = _DEVICES[spec] = device(spec)
    return d


class Size(tuple):
    """The shape of a tensor: a tuple of ints that prints as ``ember.Size([2, 3])``."""

    def __new__(cls, sizes=()):
        self = super().__new__(cls, sizes)
        for s in self:
            if type(s) is not int:  # torch's rule: ints, or what has __index__ (0-d tensors)
                return super().__new__(cls, [_size_item(s, i) for i, s in enumerate(self)])
        return self

    def __repr__(self) -> str:
        return f"ember.Size([{', '.join(str(s) for s in self)}])"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key):
        r = super().__getitem__(key)
        return Size(r) if isinstance(key, slice) else r

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))


def _size_item(s, i: int) -> int:
    try:
        return operator.index(s)
    except TypeError:
        raise TypeError(f"ember.Size() takes an iterable of 'int' (item {i} is "
                        f"'{type(s).__name__}')") from None


class layout:  # noqa: N801 - PyTorch's name
    """The memory layout of a tensor (torch.layout): ember's tensors are all ``ember.strided``."""

    __slots__ = ()

    def __new__(cls, *args, **kwargs):  # ember.strided is the only one
        raise TypeError("cannot create 'ember.layout' instances")

    def __repr__(self) -> str:
        return "ember.strided"

    def __reduce__(self):
        return "strided"  # pickles as the module-level object


strided = object.__new__(layout)
