"""ember.utils.checkpoint: activation checkpointing (torch.utils.checkpoint's API).

A checkpointed segment keeps none of its intermediate values for backward; backward runs the
segment again to get them, with the random generators' states of the forward so that dropout
draws the same masks. Two ways, as in torch:
  - ``use_reentrant=True``: an autograd Function whose forward runs the segment without
    recording, and whose backward re-runs it with recording and calls ``autograd.backward``
    inside (so only a plain ``backward()`` can go through it);
  - ``use_reentrant=False``: the segment runs recorded, but under ``saved_tensors_hooks`` that
    keep only a position for each value a node saves; the first node of the segment that needs
    one in backward re-runs the segment once and takes its values by position.
"""

from __future__ import annotations

import contextlib
import warnings

import ember
from ember import _C
from ember.autograd import Function, _is_checkpoint_valid
from ember.autograd import backward as _autograd_backward
from ember.autograd.graph import saved_tensors_hooks

Tensor = _C.Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "detach_variable", "check_backward_validity", "get_device_states",
           "set_device_states", "noop_context_fn", "set_checkpoint_early_stop",
           "set_checkpoint_debug_enabled", "DefaultDeviceType"]


class CheckpointError(RuntimeError):
    """The recomputation saved other values than the forward did."""


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    """The tensors of `inputs` detached, each requiring grad as its original does."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs) -> None:
    if not any(isinstance(i, Tensor) and i.requires_grad for i in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=3)


class DefaultDeviceType:
    """The device type whose random state checkpoint preserves besides the CPU's."""

    _default_device_type = "cuda"

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        return DefaultDeviceType._default_device_type


def _cuda_initialized() -> bool:
    try:
        return bool(ember.cuda.is_initialized())
    except Exception:  # no CUDA runtime
        return False


def get_device_states(*args):
    """(device indices, their generator states) of the CUDA devices the tensors of `args` are
    on."""
    devices = sorted({a.device.index or 0 for a in args
                      if isinstance(a, Tensor) and a.device.type == "cuda"})
    return devices, [ember.cuda.get_rng_state(d) for d in devices]


def set_device_states(devices, states, *, device_type=None) -> None:
    for d, s in zip(devices, states):
        ember.cuda.set_rng_state(s, d)


_early_stop = [True]
_debug = [False]


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Accepted as torch's; ember's recomputation always runs the whole segment."""
    prev, _early_stop[0] = _early_stop[0], enable
    try:
        yield
    finally:
        _early_stop[0] = prev


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    prev, _debug[0] = _debug[0], enabled
    try:
        yield
    finally:
        _debug[0] = prev


class _RngState:
    """The CPU generator's state (and that of the CUDA devices the inputs are on) at the
    segment's forward, put back around each recomputation."""

    def __init__(self, preserve, args):
        self.preserve = preserve
        if preserve:
            self.cpu = ember.get_rng_state()
            self.devices, self.device_states = (get_device_states(*args)
                                                if _cuda_initialized() else ([], []))

    @contextlib.contextmanager
    def replay(self):
        if not self.preserve:
            yield
            return
        cpu_now = ember.get_rng_state()
        dev_now = [ember.cuda.get_rng_state(d) for d in self.devices]
        ember.set_rng_state(self.cpu)
        set_device_states(self.devices, self.device_states)
        try:
            yield
        finally:
            ember.set_rng_state(cpu_now)
            set_device_states(self.devices, dev_now)


class CheckpointFunction(Function):
    """The reentrant variant (see the module docstring)."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.rng = _RngState(preserve_rng_state, args)
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with ember.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                "passing an `inputs` parameter to .backward(). To resolve this error, you can "
                "either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        with ctx.rng.replay():
            detached = detach_variable(tuple(inputs))
            with ember.enable_grad():
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        with_grad = [(o, g) for o, g in zip(outputs, grads)
                     if isinstance(o, Tensor) and o.requires_grad]
        if not with_grad:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        _autograd_backward([o for o, _ in with_grad], [g for _, g in with_grad])
        return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None for x in detached)


class _Slot:
    """What the forward keeps of a saved value: its position in the segment and its frame."""

    __slots__ = ("frame", "index")

    def __init__(self, frame, index):
        self.frame, self.index = frame, index


def _meta(t):
    return {"shape": tuple(t.shape), "dtype": t.dtype, "device": t.device}


class _Frame:
    """One call of a non-reentrant checkpointed segment."""

    def __init__(self, fn, args, kwargs, rng, recompute_ctx, check):
        self.fn, self.args, self.kwargs, self.rng = fn, args, kwargs, rng
        self.recompute_ctx, self.check = recompute_ctx, check
        self.metas: list = []  # per saved value in the forward: shape, dtype, device
        self.recomputed: dict = {}  # position -> value, each dropped when backward takes it

    def pack(self, t):
        self.metas.append(_meta(t))
        return _Slot(self, len(self.metas) - 1)

    def unpack(self, slot):
        if slot.index not in self.recomputed:
            self.recompute()
        return self.recomputed.pop(slot.index)

    def recompute(self):
        values = []
        with self.rng.replay(), ember.enable_grad(), \
                saved_tensors_hooks(lambda t: values.append(t), _never_unpacked), \
                self.recompute_ctx:
            self.fn(*self.args, **self.kwargs)
        if self.check and len(values) != len(self.metas):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.metas)}\n"
                f"Number of tensors saved during recomputation: {len(values)}")
        if self.check:
            bad = [(k, m, _meta(v)) for k, (m, v) in enumerate(zip(self.metas, values))
                   if _meta(v) != m]
            if bad:
                lines = "".join(f"tensor at position {k}:\nsaved metadata: {m}\nrecomputed "
                                f"metadata: {r}\n" for k, m, r in bad)
                raise CheckpointError(
                    "torch.utils.checkpoint: Recomputed values for the following tensors have "
                    f"different metadata than during the forward pass.\n{lines}")
        self.recomputed = dict(enumerate(values))


def _never_unpacked(_):
    raise RuntimeError("torch.utils.checkpoint: a value saved during recomputation was "
                       "unpacked")


def _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, *args,
                                  **kwargs):
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    forward_ctx, recompute_ctx = context_fn()
    frame = _Frame(function, args, kwargs, _RngState(preserve, args), recompute_ctx,
                   determinism_check == "default")
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_ctx:
        return function(*args, **kwargs)


_REENTRANT_NOT_PASSED = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. In version "
    "2.9 we will raise an exception if use_reentrant is not passed. use_reentrant=False is "
    "recommended, but if you need to preserve the current default behavior, you can pass "
    "use_reentrant=True. Refer to docs for more details on the differences between the two "
    "variants.")


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, early_stop=True, **kwargs):
    """``function(*args, **kwargs)`` without keeping its intermediate values for backward;
    backward recomputes them (see the module docstring). ``preserve_rng_state=True`` (the
    default) replays the forward's random numbers."""
    if use_reentrant is None:
        warnings.warn(_REENTRANT_NOT_PASSED, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check,
                                         *args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Runs ``functions`` (a list of callables or an nn.Sequential) in order on ``input``,
    checkpointing all but the last of ``segments`` equal segments."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
            "passed explicitly. In version 2.9 we will raise an exception if use_reentrant is "
            "not passed. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward

    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
