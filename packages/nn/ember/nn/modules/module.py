"""``Module``: the base class of every layer, with torch.nn.Module's registration rules, hooks,
state_dict format and repr."""

from __future__ import annotations

import itertools
from collections import OrderedDict, namedtuple

import ember
from ember import Tensor

from ..parameter import Parameter

_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_parameter_registration_hooks: OrderedDict = OrderedDict()
_global_buffer_registration_hooks: OrderedDict = OrderedDict()
_global_module_registration_hooks: OrderedDict = OrderedDict()


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class RemovableHandle:
    """Returned by every register_*_hook; ``remove()`` takes the hook out."""

    _next_id = itertools.count()

    def __init__(self, hooks_dict, *extra_dicts):
        self.hooks_dict_ref = hooks_dict
        self.extra = extra_dicts
        self.id = next(RemovableHandle._next_id)

    def remove(self):
        self.hooks_dict_ref.pop(self.id, None)
        for d in self.extra:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_module_forward_pre_hook(hook):
    """A forward pre-hook run before every module's own (torch's global hook)."""
    h = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[h.id] = hook
    return h


def register_module_forward_hook(hook):
    """A forward hook run before every module's own forward hooks (torch's global hook)."""
    h = RemovableHandle(_global_forward_hooks)
    _global_forward_hooks[h.id] = hook
    return h


def _global_hook(hooks, hook):
    h = RemovableHandle(hooks)
    hooks[h.id] = hook
    return h


def register_module_full_backward_pre_hook(hook):
    """``hook(module, grad_output)`` before every module's own backward pre-hooks."""
    return _global_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    """``hook(module, grad_input, grad_output)`` before every module's own backward hooks."""
    return _global_hook(_global_backward_hooks, hook)


def register_module_backward_hook(hook):
    """torch's deprecated name: the full backward hook here."""
    return register_module_full_backward_hook(hook)


def register_module_parameter_registration_hook(hook):
    """``hook(module, name, param) -> None or a new param``, on every parameter registration."""
    return _global_hook(_global_parameter_registration_hooks, hook)


def register_module_buffer_registration_hook(hook):
    """``hook(module, name, buffer) -> None or a new buffer``, on every buffer registration."""
    return _global_hook(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook):
    """``hook(module, name, submodule) -> None or a new submodule``, on every submodule
    registration."""
    return _global_hook(_global_module_registration_hooks, hook)


def _registered(hooks, module, name, value):
    """``value`` after the global registration hooks (each may return a replacement)."""
    for hook in hooks.values():
        out = hook(module, name, value)
        if out is not None:
            value = out
    return value


def _addindent(s_, num_spaces):
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(num_spaces * " ") + line for line in s]
    return first + "\n" + "\n".join(s)


class Module:
    """Base class for all neural network modules (torch.nn.Module's API)."""

    training: bool
    _version: int = 1
    call_super_init: bool = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() takes no arguments")
        sa = object.__setattr__
        sa(self, "training", True)
        sa(self, "_parameters", OrderedDict())
        sa(self, "_buffers", OrderedDict())
        sa(self, "_non_persistent_buffers_set", set())
        sa(self, "_modules", OrderedDict())
        sa(self, "_forward_pre_hooks", OrderedDict())
        sa(self, "_forward_pre_hooks_with_kwargs", {})
        sa(self, "_forward_hooks", OrderedDict())
        sa(self, "_forward_hooks_with_kwargs", {})
        sa(self, "_forward_hooks_always_called", {})
        sa(self, "_backward_hooks", OrderedDict())
        sa(self, "_backward_pre_hooks", OrderedDict())
        sa(self, "_state_dict_hooks", OrderedDict())
        sa(self, "_load_state_dict_pre_hooks", OrderedDict())

    def forward(self, *input):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ------------------------------------------------------------------ registration
    def register_buffer(self, name, tensor, persistent=True):
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = _registered(_global_buffer_registration_hooks, self, name, tensor)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (torch.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                "created explicitly. To express '{name}' as a function of another Tensor, compute "
                "the value in the forward() method.")
        self._parameters[name] = _registered(_global_parameter_registration_hooks, self, name,
                                             param)

    def add_module(self, name, module):
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = _registered(_global_module_registration_hooks, self, name, module)

    register_module = add_module

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        """Replace (or, unless ``strict``, add) the submodule at dotted path ``target``."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        *path, name = target.split(".")
        parent = self.get_submodule(".".join(path))
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        if hasattr(parent, name):
            if not isinstance(getattr(parent, name), Module):
                raise AttributeError("`" + name + "` is not an nn.Module")
        elif strict:
            raise AttributeError(parent._get_name() + " has no attribute `" + name + "`")
        setattr(parent, name, module)

    def get_parameter(self, target):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        p = getattr(mod, name)
        if not isinstance(p, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return p

    def get_buffer(self, target):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return mod._buffers[name]

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules,
                        self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers,
                            self._non_persistent_buffers_set)
                modules[name] = _registered(_global_module_registration_hooks, self, name, value)
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                    f"'{name}' (torch.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                persistent = getattr(value, "_buffer_persistent", None) \
                    if isinstance(value, Tensor) else None
                if persistent is not None:  # self.x = nn.Buffer(t)
                    if buffers is None:
                        raise AttributeError("cannot assign buffer before Module.__init__() call")
                    remove_from(self.__dict__, self._parameters, self._modules)
                    del value._buffer_persistent
                    self.register_buffer(name, value, persistent)
                elif buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{type(value).__name__}' as buffer "
                                        f"'{name}' (torch.Tensor or None expected)")
                    buffers[name] = value
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = dir(type(self)) + list(self.__dict__.keys()) + list(self._parameters.keys()) + \
            list(self._modules.keys()) + list(self._buffers.keys())
        return sorted(k for k in set(keys) if not k[0].isdigit())

    # ------------------------------------------------------------------ traversal
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                       remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                       remove_duplicate)

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_children(self):
        memo = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in memo:
                memo.add(id(m))
                yield name, m

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from m.named_modules(memo, sub, remove_duplicate)

    # ------------------------------------------------------------------ modes and conversion
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g = g.detach()
                    g.zero_()

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply(self, fn):
        for m in self.children():
            m._apply(fn)
        for p in self._parameters.values():
            if p is None:
                continue
            with ember.no_grad():
                new = fn(p)
                if new is p:
                    continue
                # The Parameter object stays (torch's default): optimizers and hooks that hold
                # it keep working after .to(dtype) / .double().
                p.data = new
                if p.grad is not None:
                    p.grad.data = fn(p.grad)
        for key, b in self._buffers.items():
            if b is not None:
                self._buffers[key] = fn(b)
        return self

    def to_empty(self, *, device, recurse=True):
        """Move the parameters and buffers to ``device`` without copying their values (new,
        uninitialised storage), e.g. after building a model to load a checkpoint into."""
        def empty(t):
            return ember.empty(tuple(t.shape), dtype=t.dtype, device=device)

        if recurse:
            return self._apply(empty)
        with ember.no_grad():
            for p in self._parameters.values():
                if p is not None:
                    p.data = empty(p)
        for key, b in self._buffers.items():
            if b is not None:
                self._buffers[key] = empty(b)
        return self

    def compile(self, *args, **kwargs):
        """torch compiles the module's forward; ember runs it as it is (a no-op, so programs
        that call it run unchanged)."""
        return None

    def xpu(self, device=None):
        raise RuntimeError("Module.xpu(): ember has no XPU backend")

    def ipu(self, device=None):
        raise RuntimeError("Module.ipu(): ember has no IPU backend")

    def mtia(self, device=None):
        raise RuntimeError("Module.mtia(): ember has no MTIA backend")

    def to(self, *args, **kwargs):
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        memory_format = kwargs.pop("memory_format", None)  # for 4-d and 5-d tensors, as torch
        kwargs.pop("non_blocking", None)
        for a in args:
            if isinstance(a, ember.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            else:
                device = a
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got "
                            f"desired dtype={dtype}")

        def convert(t):
            kw = {}
            if device is not None:
                kw["device"] = device
            if dtype is not None and t.dtype.is_floating_point:
                kw["dtype"] = dtype
            if memory_format is not None and t.dim() in (4, 5):
                kw["memory_format"] = memory_format
            return t.to(**kw) if kw else t

        return self._apply(convert)

    def float(self):
        return self._apply(lambda t: t.float() if t.dtype.is_floating_point else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.dtype.is_floating_point else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.dtype.is_floating_point else t)

    def bfloat16(self):
        return self._apply(lambda t: t.bfloat16() if t.dtype.is_floating_point else t)

    def type(self, dst_type):
        return self._apply(lambda t: t.to(dst_type))

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device) if device is not None else t.cuda())

    def share_memory(self):
        return self._apply(lambda t: t.share_memory_())

    # ------------------------------------------------------------------ state dict
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if _overrides(self, "get_extra_state"):
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def get_extra_state(self):
        """State beyond parameters and buffers for the state_dict (``<prefix>_extra_state``):
        a subclass that overrides this (and set_extra_state) has it saved and loaded."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called. Please file an issue.")

    def set_extra_state(self, state):
        """Restore what get_extra_state returned."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called. Please file an issue.")

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` before this module's state_dict is taken."""
        hooks = self.__dict__.setdefault("_state_dict_pre_hooks", OrderedDict())
        h = RemovableHandle(hooks)
        hooks[h.id] = hook
        return h

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata) -> None`` after it is taken."""
        def post_hook(module, state_dict, prefix, local_metadata):
            if hook(module, state_dict, prefix, local_metadata) is not None:
                raise RuntimeError("state_dict post-hook must return None")

        h = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[h.id] = post_hook
        return h

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys) -> None`` after load_state_dict loaded this
        module; it may edit ``incompatible_keys.missing_keys`` / ``unexpected_keys``."""
        hooks = self.__dict__.setdefault("_load_state_dict_post_hooks", OrderedDict())
        h = RemovableHandle(hooks)
        hooks[h.id] = hook
        return h

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        if with_module:
            return self.register_load_state_dict_pre_hook(hook)
        h = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[h.id] = hook
        return h

    def _register_state_dict_hook(self, hook):
        return self.register_state_dict_hook(hook)

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        if args:  # the positional (destination, prefix, keep_vars) form
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        for hook in self.__dict__.get("_state_dict_pre_hooks", {}).values():
            hook(self, prefix, keep_vars)
        meta = getattr(destination, "_metadata", None)
        if meta is not None:
            meta[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".",
                             keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            r = hook(self, destination, prefix, {})
            if r is not None:
                destination = r
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        local = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items())
                 if v is not None}
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  "torch.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(input_param)}")
                continue
            if tuple(input_param.shape) != tuple(param.shape):
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape "
                    f"{_size_str(input_param.shape)} from checkpoint, the shape in current "
                    f"model is {_size_str(param.shape)}.")
                continue
            try:
                with ember.no_grad():
                    param.copy_(input_param)
            except Exception as ex:  # noqa: BLE001 - reported like torch, with the key
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions '
                                  f"in the model are {_size_str(param.shape)} and whose "
                                  "dimensions in the checkpoint are "
                                  f"{_size_str(input_param.shape)}, an exception occurred : "
                                  f"{ex.args}.")
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if _overrides(self, "set_extra_state"):
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix) and key != extra_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if input_name[0] not in self._modules and input_name[0] not in local:
                        unexpected_keys.append(key)
                    elif len(input_name) == 1 and input_name[0] in self._modules:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)

        def load(module, prefix=""):
            local_meta = {} if metadata is None else metadata.get(prefix[:-1], {})
            module._load_from_state_dict(state_dict, prefix, local_meta, True, missing,
                                         unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")
            incompatible = _IncompatibleKeys(missing, unexpected)
            for hook in module.__dict__.get("_load_state_dict_post_hooks", {}).values():
                if hook(module, incompatible) is not None:
                    raise AssertionError("Hooks registered with "
                                         "``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys "
                                         "need to be modified, it should be done inplace.")

        load(self)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def register_state_dict_hook(self, hook):
        h = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[h.id] = hook
        return h

    def register_load_state_dict_pre_hook(self, hook):
        h = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[h.id] = lambda *a: hook(self, *a)
        return h

    # ------------------------------------------------------------------ hooks and call
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        h = RemovableHandle(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[h.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[h.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        h = RemovableHandle(self._forward_hooks, self._forward_hooks_with_kwargs,
                            self._forward_hooks_always_called)
        self._forward_hooks[h.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[h.id] = True
        if always_call:
            self._forward_hooks_always_called[h.id] = True
        if prepend:
            self._forward_hooks.move_to_end(h.id, last=False)
        return h

    def register_full_backward_hook(self, hook, prepend=False):
        h = RemovableHandle(self._backward_hooks)
        self._backward_hooks[h.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(h.id, last=False)
        return h

    def register_full_backward_pre_hook(self, hook, prepend=False):
        h = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[h.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_backward_hook(self, hook):
        return self.register_full_backward_hook(hook)

    def _call_impl(self, *args, **kwargs):
        for hid, hook in itertools.chain(_global_forward_pre_hooks.items(),
                                         self._forward_pre_hooks.items()):
            if hid in self._forward_pre_hooks_with_kwargs:
                r = hook(self, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {r}.")
                    args, kwargs = r
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        bw = bool(self._backward_hooks or self._backward_pre_hooks or _global_backward_hooks
                  or _global_backward_pre_hooks)
        if bw:
            args = _BackwardHook.setup_input(self, args)
        try:
            result = self.forward(*args, **kwargs)
        except Exception:
            for hid, hook in self._forward_hooks.items():  # always_call hooks run anyway
                if hid in self._forward_hooks_always_called:
                    try:
                        if hid in self._forward_hooks_with_kwargs:
                            hook(self, args, kwargs, None)
                        else:
                            hook(self, args, None)
                    except Exception:  # noqa: BLE001 - the forward's error is the one to raise
                        pass
            raise
        for hid, hook in itertools.chain(_global_forward_hooks.items(),
                                         self._forward_hooks.items()):
            if hid in self._forward_hooks_with_kwargs:
                r = hook(self, args, kwargs, result)
            else:
                r = hook(self, args, result)
            if r is not None:
                result = r
        if bw:
            result = _BackwardHook.setup_output(self, result)
        return result

    __call__ = _call_impl

    # ------------------------------------------------------------------ repr
    def extra_repr(self):
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra_lines = []
        extra = self.extra_repr()
        if extra:
            extra_lines = extra.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __getstate__(self):
        # Parameters travel as detached tensors (one that requires grad does not pickle) and
        # their requires_grad flags as a dict of bools beside them: only types that
        # ember.load(weights_only=True) allows, so that a whole module loads inside
        # serialization.safe_globals([its classes]) as in torch. Every tensor of _parameters
        # is a parameter: __setstate__ marks them again.
        state = self.__dict__.copy()
        state["_parameters"] = OrderedDict(
            (k, None if p is None else p.detach()) for k, p in self._parameters.items())
        state[_REQUIRES_GRAD_KEY] = {k: bool(p.requires_grad)
                                     for k, p in self._parameters.items() if p is not None}
        state.pop("_bw_state", None)
        return state

    def __setstate__(self, state):
        state = dict(state)
        flags = state.pop(_REQUIRES_GRAD_KEY, None)
        params = state.get("_parameters")
        if params is not None:
            state["_parameters"] = OrderedDict(
                (k, _unpickled_parameter(p, flags, k)) for k, p in params.items())
        self.__dict__.update(state)


# the key of the parameters' requires_grad flags in a pickled module's state
_REQUIRES_GRAD_KEY = "_parameters_requires_grad"


def _unpickled_parameter(p, flags, name):
    if p is None:
        return None
    if isinstance(p, _PackedParam):  # the form of files written by earlier versions
        return Parameter(p.data, p.requires_grad)
    return Parameter(p, flags.get(name, True) if flags is not None else p.requires_grad)


class _PackedParam:
    """How earlier versions pickled a parameter (read by __setstate__, no longer written)."""

    __slots__ = ("data", "requires_grad")

    def __init__(self, data, requires_grad):
        self.data, self.requires_grad = data, requires_grad

    def __getstate__(self):
        return (self.data, self.requires_grad)

    def __setstate__(self, state):
        self.data, self.requires_grad = state


_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


def _overrides(module, name):
    """Whether ``module``'s class overrides Module.<name> (get/set_extra_state)."""
    return getattr(type(module), name) is not getattr(Module, name)


def _size_str(shape):
    return "torch.Size([" + ", ".join(str(int(s)) for s in shape) + "])"


class _BackwardHook:
    """register_full_backward_hook: the module's tensor inputs and outputs pass through identity
    autograd Functions; when the outputs' gradients arrive the pre-hooks run, and when the
    inputs' gradients are known the hooks get (module, grad_input, grad_output)."""

    @staticmethod
    def setup_input(module, args):
        from ember.autograd import Function

        state = {"grad_output": None, "n_in": 0, "grads_in": {}}
        module.__dict__["_bw_state"] = state
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        state["n_in"] = len(idx)
        if not idx:
            return args

        class _In(Function):
            @staticmethod
            def forward(ctx, *ts):
                return tuple(t.view_as(t) for t in ts) if len(ts) > 1 else ts[0].view_as(ts[0])

            @staticmethod
            def backward(ctx, *grads):
                gi = tuple(grads)
                _BackwardHook._run(module, state, gi)
                r = state.pop("replaced", None)
                return r if r is not None else gi

        outs = _In.apply(*[args[i] for i in idx])
        outs = outs if isinstance(outs, tuple) else (outs,)
        args = list(args)
        for i, o in zip(idx, outs):
            args[i] = o
        return tuple(args)

    @staticmethod
    def setup_output(module, result):
        from ember.autograd import Function

        state = module.__dict__["_bw_state"]
        single = isinstance(result, Tensor)
        outs = (result,) if single else tuple(result) if isinstance(result, tuple) else None
        if outs is None:
            return result
        idx = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
        if not idx:
            return result

        class _Out(Function):
            @staticmethod
            def forward(ctx, *ts):
                return tuple(t.view_as(t) for t in ts) if len(ts) > 1 else ts[0].view_as(ts[0])

            @staticmethod
            def backward(ctx, *grads):
                go = tuple(grads)
                for hook in itertools.chain(_global_backward_pre_hooks.values(),
                                            module._backward_pre_hooks.values()):
                    r = hook(module, go)
                    if r is not None:
                        go = tuple(r) if isinstance(r, (tuple, list)) else (r,)
                state["grad_output"] = go
                if state["n_in"] == 0:
                    _BackwardHook._run(module, state, (None,))
                return go if len(go) > 1 else go[0]

        new = _Out.apply(*[outs[i] for i in idx])
        new = new if isinstance(new, tuple) else (new,)
        outs = list(outs)
        for i, o in zip(idx, new):
            outs[i] = o
        return outs[0] if single else tuple(outs)

    @staticmethod
    def _run(module, state, grad_input):
        go = state.get("grad_output")
        for hook in itertools.chain(_global_backward_hooks.values(),
                                    module._backward_hooks.values()):
            r = hook(module, grad_input, go)
            if r is not None:
                grad_input = tuple(r) if isinstance(r, (tuple, list)) else (r,)
                state["replaced"] = grad_input
