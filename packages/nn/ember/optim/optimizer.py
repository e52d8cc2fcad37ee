"""The Optimizer base class: param groups, per-parameter state, state_dict, step hooks.

Subclasses implement ``step(closure=None)``; the base class wraps it (``__init_subclass__``) so
that step hooks run and ``_opt_called`` is set for the learning-rate schedulers, as in torch.
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from itertools import chain
from typing import Any

import ember
import ember.autograd  # noqa: F401  (grad, grad_fn, no_grad need the autograd package)

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Singleton marking a hyper-parameter that every param group must give."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_pre_hooks: OrderedDict = OrderedDict()
_global_post_hooks: OrderedDict = OrderedDict()


class RemovableHandle:
    """Returned by the hook registrations; ``remove()`` unregisters the hook."""

    _next_id = 0

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """A hook run before every optimizer's step: ``hook(optimizer, args, kwargs)``."""
    handle = RemovableHandle(_global_pre_hooks)
    _global_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """A hook run after every optimizer's step: ``hook(optimizer, args, kwargs)``."""
    handle = RemovableHandle(_global_post_hooks)
    _global_post_hooks[handle.id] = hook
    return handle


def _typename(obj: Any) -> str:
    if isinstance(obj, ember.Tensor):
        return "ember.Tensor"
    t = type(obj)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _wrap_step(step: Callable) -> Callable:
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for hook in chain(_global_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{hook} must return None or a tuple of (new_args, new_kwargs), "
                        f"but got {result}.")
                args, kwargs = result
        out = step(self, *args, **kwargs)
        self._opt_called = True
        for hook in chain(self._optimizer_step_post_hooks.values(), _global_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    wrapper._ember_hooked = True
    return wrapper


class Optimizer:
    """Base class of all optimizers.

    Args:
        params: an iterable of tensors, or of dicts defining parameter groups (each with a
            ``'params'`` entry and optional per-group hyper-parameters).
        defaults: the default hyper-parameters, used by groups that do not set them.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_ember_hooked", False):
            cls.step = _wrap_step(step)

    def __init__(self, params, defaults: dict[str, Any]):
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        if isinstance(params, ember.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_optimizer_step_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_step_post_hooks", OrderedDict())

    def __repr__(self) -> str:
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    # ---- groups ----
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters, with its own hyper-parameters, to the optimizer."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, ember.Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. Please "
                            "use a list instead.")
        else:
            param_group["params"] = list(params)
        for param in param_group["params"]:
            if not isinstance(param, ember.Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or getattr(param, "retains_grad", False)):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        ids = [id(p) for p in param_group["params"]]
        if len(ids) != len(set(ids)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error", stacklevel=3)
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if not seen.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ---- gradients ----
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors (to None by default)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g = g.detach()
                        p.grad = g
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def step(self, closure: Callable | None = None):
        raise NotImplementedError

    def _step_groups(self, closure):
        """The common step: re-evaluates ``closure`` under enable_grad, then, under no_grad,
        calls ``self._update(group, params, grads)`` for each group where some parameter has a
        gradient. Returns the closure's loss."""
        loss = None
        if closure is not None:
            with ember.enable_grad():
                loss = closure()
        with ember.no_grad():
            for group in self.param_groups:
                params, grads = _grads_of(group)
                if params:
                    self._update(group, params, grads)
        return loss

    # ---- hooks ----
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)``, before step."""
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None``, after step."""
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    # ---- state_dict ----
    def state_dict(self) -> dict[str, Any]:
        """torch's format: ``state`` keyed by parameter index (counted across groups in order),
        ``param_groups`` with ``params`` as lists of those indices. Tensors are references."""
        for pre_hook in self._hooks("_optimizer_state_dict_pre_hooks").values():
            pre_hook(self)
        mapping: dict[int, int] = {}
        start = 0

        def pack(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(mapping[id(k)] if isinstance(k, ember.Tensor) else k): v
                 for k, v in self.state.items()}
        state_dict = {"state": state, "param_groups": groups}
        for post_hook in self._hooks("_optimizer_state_dict_post_hooks").values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state_dict from :meth:`state_dict`. State tensors are copied to their
        parameter's device and cast to its dtype (``step`` keeps its own)."""
        for pre_hook in self._hooks("_optimizer_load_state_dict_pre_hooks").values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        saved_group_of = {id(p): s for g, s in zip(groups, saved_groups) for p in g["params"]}

        def cast(param, value, key=None):
            if isinstance(value, ember.Tensor):
                # torch's placement: state goes to its parameter's device; step stays where it
                # was saved unless the group keeps counters on the device
                if key == "step":
                    if _counter_on_device(saved_group_of[id(param)]):
                        value = value.to(device=param.device)
                    return value.clone()
                floats = param.is_floating_point() and value.is_floating_point()
                return value.to(device=param.device,
                                dtype=param.dtype if floats else value.dtype).clone()
            if isinstance(value, dict):
                return {k: cast(param, v, k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v) for v in value)
            return copy.deepcopy(value)

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = cast(id_map[k], v)
            else:
                state[k] = v
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            new_groups.append(saved)
        self.__setstate__({"state": state, "param_groups": new_groups})
        for post_hook in self._hooks("_optimizer_load_state_dict_post_hooks").values():
            post_hook(self)

    # ---- state_dict hooks (torch's four) ----
    def _hooks(self, name: str) -> OrderedDict:
        return self.__dict__.setdefault(name, OrderedDict())

    def _register_hook(self, name: str, hook: Callable, prepend: bool) -> RemovableHandle:
        hooks = self._hooks(name)
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False):
        """``hook(optimizer)`` before state_dict() builds its result."""
        return self._register_hook("_optimizer_state_dict_pre_hooks", hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False):
        """``hook(optimizer, state_dict) -> None or a new state_dict`` after it."""
        return self._register_hook("_optimizer_state_dict_post_hooks", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False):
        """``hook(optimizer, state_dict) -> None or the state_dict to load`` before loading."""
        return self._register_hook("_optimizer_load_state_dict_pre_hooks", hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False):
        """``hook(optimizer)`` after load_state_dict()."""
        return self._register_hook("_optimizer_load_state_dict_post_hooks", hook, prepend)


def _grads_of(group):
    """(params, grads) of the parameters of a group that have a gradient."""
    params, grads = [], []
    for p in group["params"]:
        if p.grad is not None:
            params.append(p)
            grads.append(p.grad)
    return params, grads


def _fusable(params, grads, *buffers) -> bool:
    """True when the fused kernels can take these tensors: all on the CPU or all on one CUDA
    device (one kernel launch per group there), float32/float64 of one dtype, params and state
    buffers contiguous (gradients may be strided: autograd can leave a Linear weight's gradient
    transposed, and the kernels gather it)."""
    if not params:
        return False
    dt = params[0].dtype
    if dt not in (ember.float32, ember.float64):
        return False
    device = params[0].get_device()
    for t in chain(params, *buffers):
        if t is None:
            continue
        if t.dtype != dt or t.get_device() != device or not t.is_contiguous():
            return False
    return all(g.dtype == dt and g.get_device() == device for g in grads)


def _step_tensor(p: ember.Tensor, group: dict, value: float = 0.0) -> ember.Tensor:
    """A 0-d float32 counter (``step``, NAdam's ``mu_product``): on the CPU, where torch keeps
    it and ``.item()`` costs no device sync, on ``p``'s device when the group is capturable or
    fused, as in torch."""
    return ember.tensor(value, dtype=ember.float32,
                        device=p.device if _counter_on_device(group) else "cpu")


def _counter_on_device(group: dict) -> bool:
    return bool(group.get("capturable") or group.get("fused"))


# ---- argument checks, with torch.optim's messages ----
def _check_lr(lr: float) -> None:
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_eps(eps: float) -> None:
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")


def _check_betas(betas) -> None:
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _check_nonneg(name: str, value: float) -> None:
    if not 0.0 <= value:
        raise ValueError(f"Invalid {name} value: {value}")
