"""torch.nn.utils.stateless: ``functional_call`` (torch deprecates it for
``torch.func.functional_call``)."""

from __future__ import annotations

import contextlib

__all__ = ["functional_call"]


def _split(module, path):
    *prefix, name = path.split(".")
    for part in prefix:
        module = getattr(module, part)
    return module, name


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, *, strict=False):
    names = {n for n, _ in module.named_parameters(remove_duplicate=False)}
    names |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
    if strict:
        missing = sorted(names - set(parameters_and_buffers))
        unexpected = sorted(set(parameters_and_buffers) - names)
        if missing or unexpected:
            msgs = []
            if unexpected:
                msgs.append("Unexpected key(s): " + ", ".join(map(repr, unexpected)) + ".")
            if missing:
                msgs.append("Missing key(s): " + ", ".join(map(repr, missing)) + ".")
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(msgs)))
    saved = []
    try:
        for path, value in parameters_and_buffers.items():
            owner, name = _split(module, path)
            for table in ("_parameters", "_buffers"):
                d = owner.__dict__[table]
                if name in d:
                    saved.append((d, name, d[name]))
                    d[name] = value
                    break
            else:
                saved.append((owner.__dict__, name, owner.__dict__.get(name, _MISSING)))
                owner.__dict__[name] = value
        yield
    finally:
        for d, name, old in reversed(saved):
            if old is _MISSING:
                d.pop(name, None)
            else:
                d[name] = old


_MISSING = object()


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """Call ``module`` with its parameters and buffers replaced by the tensors of
    ``parameters_and_buffers`` (a dict, or a tuple of dicts, keyed by dotted name) for this
    call only; the module is unchanged afterwards."""
    if isinstance(parameters_and_buffers, (list, tuple)):
        merged = {}
        for d in parameters_and_buffers:
            for k, v in d.items():
                if k in merged:
                    raise ValueError(f"{k} appeared in multiple dictionaries; behavior of "
                                     "functional call is ambiguous")
                merged[k] = v
        parameters_and_buffers = merged
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, strict=strict):
        return module(*args, **kwargs)
