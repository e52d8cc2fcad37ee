"""ember.func.vmap: maps a function over a dimension of its inputs.

ember has no batching rules: the function runs once per batch element (on ``select`` views of the
batched inputs) and the results are stacked along ``out_dims``. The results, gradients and
error messages are torch's; the cost is one call of the function per element (no vectorisation)
and a few differences, all documented in docs/func.md:
  - an output counts as unbatched (what ``out_dims=None`` needs) when every element gave the same
    tensor object or equal values; torch decides by whether the output depends on a batched input;
  - ``randomness='error'`` is checked after the calls, by whether the random generators' states
    moved (a random op with an explicit ``generator=`` is not seen);
  - data-dependent Python (``.item()``, ``if x.sum() > 0``) works here, where torch refuses it;
  - ``chunk_size`` is validated as torch does and otherwise has nothing to change.
"""

from __future__ import annotations

import functools

import ember
from ember import _C

from ._pytree import broadcast_prefix, tree_flatten, tree_unflatten

Tensor = _C.Tensor
_RANDOMNESS = ("error", "different", "same")
_RANDOM_IN_ERROR_MODE = (
    "vmap: called random operation while in randomness error mode. Please either use the 'same' "
    "or 'different' randomness flags on vmap or perform the randomness operation out of vmap")


def _name(func) -> str:
    return getattr(func, "__name__", repr(func))


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over dimension ``in_dims`` of its (pytree) inputs; the results stacked at
    ``out_dims``. See the module docstring for how ember computes it."""
    if randomness not in _RANDOMNESS:
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        flat_args, flat_dims, batch = _batched_inputs(func, in_dims, args)
        per_element = []
        rng = _RngWatch(randomness)
        spec = _args_spec(args)
        for i in range(batch):
            leaves = [a if d is None else a.select(d, i) for a, d in zip(flat_args, flat_dims)]
            rng.before_call()
            per_element.append(func(*tree_unflatten(leaves, spec), **kwargs))
        rng.after_calls()
        return _stack_outputs(func, out_dims, per_element)

    return wrapped


def _args_spec(args):
    return tree_flatten(args)[1]


def _batched_inputs(func, in_dims, args):
    """The flat inputs, the mapped dimension of each (None: not mapped) and the batch size,
    checked as torch checks them."""
    where = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) tuple "
                         f"matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add "
                         "inputs, or you are trying to vmap over a function with no inputs. The "
                         "latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_dims = broadcast_prefix(in_dims, spec)
    if flat_dims is None:
        in_spec = tree_flatten(in_dims)[1]
        raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. "
                         f"in_dims has structure {in_spec} but inputs has structure {spec}.")
    sizes = []
    dims = []
    for a, d in zip(flat_args, flat_dims):
        if d is None:
            dims.append(None)
            continue
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(f"{where}: Got in_dim={d} for an input but in_dim must be either an "
                             "integer dimension or None.")
        if not isinstance(a, Tensor):
            raise ValueError(f"{where}: Got in_dim={d} for an input but the input is of type "
                             f"{type(a)}. We cannot vmap over non-Tensor arguments, please use "
                             "None as the respective in_dim")
        n = a.dim()
        if not -n <= d < n:
            raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is a Tensor "
                             f"of dimensionality {n} so expected in_dim to satisfy -{n} <= in_dim "
                             f"< {n}.")
        d = d % n
        dims.append(d)
        sizes.append(a.shape[d])
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    if sizes[0] == 0:
        raise RuntimeError("vmap: the mapped dimension has size 0; ember's vmap runs the function "
                           "once per element and so cannot tell the shape of its result")
    return flat_args, dims, sizes[0]


class _RngWatch:
    """randomness='same': every element starts from the same generator state; 'error': calls
    that moved a generator's state ran a random op (checked once, after the last element: a
    generator's state never comes back to an earlier one)."""

    def __init__(self, randomness):
        self.mode = randomness
        self.start = _rng_states() if randomness != "different" else None

    def before_call(self):
        if self.mode == "same":
            _set_rng_states(self.start)

    def after_calls(self):
        if self.mode == "error":
            now = _rng_states()
            if any(not ember.equal(a, b) for a, b in zip(now, self.start)):
                _set_rng_states(self.start)
                raise RuntimeError(_RANDOM_IN_ERROR_MODE)


def _cuda_initialized() -> bool:
    cuda = getattr(ember, "cuda", None)
    try:
        return bool(cuda is not None and cuda.is_initialized())
    except Exception:  # no CUDA runtime at all
        return False


def _rng_states():
    states = [ember.get_rng_state()]
    if _cuda_initialized():
        states += ember.cuda.get_rng_state_all()
    return states


def _set_rng_states(states):
    ember.set_rng_state(states[0])
    if len(states) > 1:
        ember.cuda.set_rng_state_all(states[1:])


def _same_values(a, b) -> bool:
    if a is b:
        return True
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        return a == b
    if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
        return False
    return bool(ember.equal(a, b)) or (a.dtype.is_floating_point and bool(
        ((a == b) | (a.isnan() & b.isnan())).all()))


def _stack_outputs(func, out_dims, per_element):
    name = _name(func)
    flat0, spec = tree_flatten(per_element[0])
    if not (out_dims is None or isinstance(out_dims, (int, tuple, list, dict))) or \
            isinstance(out_dims, bool):
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, "
                         "None or a python collection of ints representing where in the outputs "
                         "the vmapped dimension should appear.")
    flat_out_dims = broadcast_prefix(out_dims, spec)
    if flat_out_dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         "compatible with the structure of `outputs`. out_dims has structure "
                         f"{tree_flatten(out_dims)[1]} but outputs has structure {spec}.")
    flats = [flat0] + [tree_flatten(o)[0] for o in per_element[1:]]
    result = []
    for k, od in enumerate(flat_out_dims):
        column = [f[k] for f in flats]
        if od is None:
            if isinstance(column[0], Tensor) and any(
                    not _same_values(column[0], c) for c in column[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor "
                                 "when out_dim is None")
            result.append(column[0])
            continue
        if not isinstance(column[0], Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                             f"{type(column[0])}. Did you mean to set out_dims= to None for "
                             "output?")
        result.append(ember.stack(column, dim=od))
    return tree_unflatten(result, spec)
