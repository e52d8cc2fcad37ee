"""Tensor methods written in Python: printing and the small conveniences that are not hot."""

from __future__ import annotations

from ember import _C


def _repr(self, *, tensor_contents=None) -> str:
    from ember import _tensor_str

    values = self.detach()
    if values.is_cuda:
        values = values.cpu()
    if values.dtype in (_C.float16, _C.bfloat16):
        values = values.float()
    arr = values.numpy() if hasattr(values, "numpy") else _to_numpy_fallback(values)
    suffixes = []
    grad_fn = getattr(self, "grad_fn", None)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(grad_fn).__name__}>")
    elif self.requires_grad:
        suffixes.append("requires_grad=True")
    return _tensor_str.format_tensor(
        arr,
        dtype_name=self.dtype.name,
        is_default_float=self.dtype in (_C.get_default_dtype(), _C._get_default_complex_dtype()),
        shape=tuple(self.shape),
        device=str(self.device),
        suffixes=tuple(suffixes),
    )


def _to_numpy_fallback(t):
    import numpy as np

    return np.array(t.tolist(), dtype=t.dtype.name if t.dtype.name != "bool" else np.bool_)


def _iter(self):
    if self.dim() == 0:
        raise TypeError("iteration over a 0-d tensor")
    return (self[i] for i in range(self.shape[0]))


def _format(self, spec: str) -> str:
    if self.dim() == 0:
        return self.item().__format__(spec)
    return object.__format__(self, spec)


def _reduce_ex(self, proto):
    # Pickling copies through NumPy until ember.save lands (bfloat16 through float32).
    import numpy as np

    if self.dtype == _C.bfloat16:
        return (_rebuild_bf16, (np.asarray(self.float().tolist(), dtype=np.float32),))
    return (_rebuild, (self.numpy().copy(), self.requires_grad))


def _rebuild(arr, requires_grad=False):
    t = _C.from_numpy(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_bf16(arr):
    return _C.from_numpy(arr).bfloat16()


def _array_namespace(self, /, *, api_version=None):
    if api_version not in (None, "2021.12", "2022.12", "2023.12"):
        raise ValueError(f"ember.array_api does not support array API version {api_version!r}")
    from ember import array_api

    return array_api


def _to_device(self, device, /, *, stream=None):
    return self.to(device)


def _cuda_array_interface(self):
    """torch's __cuda_array_interface__ (version 3): CuPy, Numba and others view a CUDA tensor's
    bytes through it without a copy."""
    if not self.is_cuda:
        raise AttributeError(
            f"Can't get __cuda_array_interface__ on non-CUDA tensor type: {self.type()}. "
            "If CUDA data is required use tensor.cuda() to copy tensor to device memory."
        )
    if self.requires_grad:
        raise RuntimeError(
            "Can't get __cuda_array_interface__ on Variable that requires grad. "
            "If gradients aren't required, use var.detach() to get Variable that doesn't "
            "require grad."
        )
    from ember.cuda._ops import typestr

    return _C._cuda_array_interface(self, typestr(self.dtype))


def _make_subclass(cls, data, require_grad=False):
    """torch.Tensor._make_subclass: an instance of ``cls`` (a Tensor subclass) over ``data``'s
    storage, detached, with ``requires_grad=require_grad`` (how nn.Parameter is built)."""
    if not isinstance(data, _C.Tensor):
        raise TypeError(f"_make_subclass(): data must be a Tensor, not {type(data).__name__}")
    obj = _C.Tensor.__new__(cls)
    _C.Tensor.__init__(obj, data)
    obj.requires_grad_(require_grad)
    return obj


def _as_subclass(self, cls):
    """torch.Tensor.as_subclass: an instance of ``cls`` over this tensor's data (ember-autograd
    keeps it in the autograd graph)."""
    if not (isinstance(cls, type) and issubclass(cls, _C.Tensor)):
        raise TypeError(f"as_subclass(): argument 'cls' must be a subclass of Tensor, not "
                        f"{cls!r}")
    obj = _C.Tensor.__new__(cls)
    _C.Tensor.__init__(obj, self)
    return obj


def _set_part(part):
    def setter(self, value):
        target = part(self)
        target.copy_(value if isinstance(value, _C.Tensor) else _C.full_like(target, value))
    return setter


def _mH(self):
    """The conjugate transpose of the last two dimensions (the transpose for real dtypes; a
    copy for complex ones, as ember has no lazy conjugate)."""
    if self.dim() < 2:
        raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. "
                           f"Got {self.dim()}-D tensor.")
    return self.transpose(-2, -1).conj()


def _unflatten(self, dim, sizes):
    # torch's Tensor.unflatten is Python that refuses falsy sizes (0, None, []) before its
    # parser sees them; ember.unflatten, like torch.unflatten, is the core's function
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    return _C.unflatten(self, dim, sizes)


def _H(self):
    if self.dim() != 2:
        raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self.dim()}-D tensor.")
    return self.transpose(0, 1).conj()


def install(cls) -> None:
    from ember import _spectral
    from ember._composite_ops import complex_numbers

    cls.mH = property(_mH)
    # views of a complex tensor's parts (the real part of a real tensor is the tensor; it has
    # no imaginary part: torch's message); assigning to them writes the parts
    cls.real = property(complex_numbers.real, _set_part(complex_numbers.real))
    cls.imag = property(complex_numbers.imag, _set_part(complex_numbers.imag))
    cls.H = property(_H)
    cls.cfloat = lambda self, *, memory_format=None: self.to(_C.complex64)
    cls.cdouble = lambda self, *, memory_format=None: self.to(_C.complex128)
    cls.__array_namespace__ = _array_namespace
    cls.to_device = _to_device
    cls.__repr__ = _repr
    cls.__cuda_array_interface__ = property(_cuda_array_interface)
    cls.__str__ = _repr
    cls.__iter__ = _iter
    cls.__format__ = _format
    cls.__reduce_ex__ = _reduce_ex
    cls.__array_priority__ = 1000  # NumPy defers to ember in mixed binary operators
    cls._make_subclass = staticmethod(_make_subclass)
    cls.as_subclass = _as_subclass
    cls.unflatten = _unflatten
    cls.stft = _spectral.stft  # torch.Tensor.stft / istft: the functions, self as input
    cls.istft = _spectral.istft
    cls.__module__ = "ember"
    for name in NEVER:
        setattr(cls, name, property(_never, doc=f"{name}: always False for an ember tensor"))
    # methods: no conjugate or negative views (conj writes the conjugate out), no legacy
    # distributed tensors
    cls.is_conj = cls.is_neg = cls.is_distributed = _never
    cls.const_data_ptr = _const_data_ptr
    # torch's read-only Tensor.name: a legacy variable name, None for every tensor a program makes
    cls.name = property(_no_name, doc="name: None (torch's legacy variable name; read-only)")


def refuse_out(cls) -> None:
    """torch's Tensor methods never take out= (only the functions do): every method written in
    Python over a function with an out= parameter refuses it with torch's TypeError rather than
    writing there. Called once, after every module has installed its methods."""
    import types

    for name, attr in list(vars(cls).items()):
        if not isinstance(attr, types.FunctionType) or name.startswith("__"):
            continue
        fn = attr
        while hasattr(fn, "__wrapped__"):
            fn = fn.__wrapped__
        code = getattr(fn, "__code__", None)
        if code is None or "out" not in code.co_varnames[:code.co_argcount
                                                          + code.co_kwonlyargcount]:
            continue
        setattr(cls, name, _without_out(attr, name))


def _without_out(fn, name):
    def method(self, *args, **kwargs):
        if "out" in kwargs:
            raise TypeError(f"{name}() got an unexpected keyword argument 'out'")
        return fn(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = fn.__doc__
    method.__wrapped__ = fn
    return method


# Tensor.is_<device or layout> of torch for what an ember tensor never is: ember has CPU and CUDA
# tensors (is_cpu, is_cuda, is_meta come from the core), strided and dense, never nested, MKL-DNN
# or on these devices. Scripts test them (`if x.is_xpu: ...`), so each answers False.
NEVER = ("is_xpu", "is_ipu", "is_maia", "is_mkldnn", "is_mps", "is_mtia", "is_vulkan", "is_xla",
         "is_nested", "is_sparse_csr")


def _never(self) -> bool:
    return False


def _no_name(self) -> None:
    return None


def _const_data_ptr(self) -> int:
    return self.data_ptr()
