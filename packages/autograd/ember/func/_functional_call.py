"""ember.func.functional_call and stack_module_state: a module run with other tensors in place of
its parameters and buffers, and the parameters of several like modules stacked for vmap.

Modules are used through the ``nn.Module`` interface (``named_parameters``, ``_parameters``,
``_buffers``, ``get_submodule``, ...) only, so this package does not import ember.nn.
"""

from __future__ import annotations

import contextlib

import ember
from ember import _C

Tensor = _C.Tensor


def _all_named(module):
    """(name, tensor) of every parameter and buffer, tied ones under each of their names."""
    yield from module.named_parameters(remove_duplicate=False)
    yield from module.named_buffers(remove_duplicate=False)


def _tied_groups(module) -> dict:
    """name -> the names sharing its tensor object (itself included)."""
    by_id: dict = {}
    for name, t in _all_named(module):
        if t is not None:
            by_id.setdefault(id(t), []).append(name)
    return {n: names for names in by_id.values() for n in names}


def _merge_dicts(dicts):
    if isinstance(dicts, dict):
        return dict(dicts)
    merged: dict = {}
    seen: dict = {}
    for d in dicts:
        for k, v in d.items():
            seen[k] = seen.get(k, 0) + 1
            merged[k] = v
    dup = [k for k, c in seen.items() if c > 1]
    if dup:
        raise ValueError(f"{dup} appeared in multiple dictionaries; behavior of functional call "
                         "is ambiguous")
    return merged


@contextlib.contextmanager
def _reparametrize(module, values: dict, tie_weights: bool, strict: bool):
    values = dict(values)
    names = [n for n, _ in _all_named(module)]
    if tie_weights:
        groups = _tied_groups(module)
        order = list(values)
        for name in order:
            group = groups.get(name, [name])
            given = [n for n in order if n in group]
            if len({id(values[n]) for n in given}) > 1:
                raise ValueError(f"functional_call got multiple values for keys {given}, which "
                                 "are tied. Consider using tie_weights=False")
            for n in group:
                values.setdefault(n, values[name])
    if strict:
        known = set(names)
        unexpected = sorted(k for k in values if k not in known)
        missing = sorted(n for n in set(names) if n not in values)
        if unexpected or missing:
            msg = ""
            if unexpected:
                msg += "\n\tUnexpected key(s): " + ", ".join(repr(k) for k in unexpected) + "."
            if missing:
                msg += "\n\tMissing key(s): " + ", ".join(repr(k) for k in missing) + "."
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:{msg}")
    restore = []
    try:
        for name, value in values.items():
            owner_path, _, attr = name.rpartition(".")
            owner = module.get_submodule(owner_path)
            for store in (owner._parameters, owner._buffers):
                if attr in store:
                    restore.append((store, attr, store[attr]))
                    store[attr] = value
                    break
            else:
                had = attr in owner.__dict__
                restore.append((owner, attr, owner.__dict__.get(attr) if had else _ABSENT))
                object.__setattr__(owner, attr, value)
        yield
    finally:
        for where, attr, old in reversed(restore):
            if isinstance(where, dict):
                where[attr] = old
            elif old is _ABSENT:
                object.__delattr__(where, attr)
            else:
                object.__setattr__(where, attr, old)


_ABSENT = object()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with the tensors of ``parameter_and_buffer_dicts`` (a dict, or a
    sequence of dicts with distinct keys, of dotted names) in place of the module's parameters and
    buffers during the call; the module is unchanged afterwards."""
    values = _merge_dicts(parameter_and_buffer_dicts)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize(module, values, tie_weights, strict):
        return module(*args, **(kwargs or {}))


def stack_module_state(models):
    """``(params, buffers)``: each parameter and buffer of ``models`` (modules of one class, all
    in training or all in eval mode) stacked along a new first dimension; the stacked parameters
    are new leaves requiring grad, for ``vmap(functional_call)`` over an ensemble."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    per_model = [dict(m.named_parameters()) for m in models]
    params = {}
    for name in per_model[0]:
        ts = [p[name] for p in per_model]
        stacked = ember.stack([t.detach() for t in ts])
        params[name] = stacked.requires_grad_(True) if all(t.requires_grad for t in ts) \
            else stacked
    per_model = [dict(m.named_buffers()) for m in models]
    buffers = {name: ember.stack([b[name] for b in per_model]) for name in per_model[0]}
    return params, buffers
