"""``default_collate`` and ``default_convert``, as torch.utils.data.default_collate/convert.

In a worker process, tensors and NumPy arrays are stacked straight into the memory that carries
the batch to the main process (see _transport.py), so a batch is copied once.
"""

from __future__ import annotations

import collections.abc
import copy
import re
from collections.abc import Callable

import numpy as np

import ember
from ember.utils.data import _transport

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, "
    "dicts or lists; found {}"
)


def default_convert(data):
    """Converts NumPy arrays and scalars to tensors, inside mappings, namedtuples and sequences;
    leaves everything else as it is (the collate function when batching is off)."""
    elem_type = type(data)
    if isinstance(data, ember.Tensor):
        return data
    if isinstance(data, np.ndarray):
        if np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return ember.as_tensor(data)
    if isinstance(data, (np.number, np.bool_)):
        return ember.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: default_convert(data[k]) for k in data})
                return clone
            return elem_type({k: default_convert(data[k]) for k in data})
        except TypeError:
            return {k: default_convert(data[k]) for k in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map: dict[type | tuple[type, ...], Callable] | None = None):
    """Collates a list of samples by the type of the first one: the function ``collate_fn_map``
    gives for that type (exact type first, then the first key it is an instance of), else
    recursively through mappings, namedtuples and sequences."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        fn = collate_fn_map.get(elem_type)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(
                    {k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem}
                )
                return clone
            return elem_type(
                {k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem}
            )
        except TypeError:
            return {k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(s, collate_fn_map=collate_fn_map) for s in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, s in enumerate(transposed):
                    clone[i] = collate(s, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(s, collate_fn_map=collate_fn_map) for s in transposed])
        except TypeError:
            return [collate(s, collate_fn_map=collate_fn_map) for s in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def _check_shapes(batch, shape) -> None:
    for i, b in enumerate(batch):
        if tuple(b.shape) != shape:
            raise RuntimeError(
                "stack expects each tensor to be equal size, but got "
                f"{list(shape)} at entry 0 and {list(b.shape)} at entry {i}"
            )


def _stack_fallback(batch, out):
    # NOTE: a stand-in while the core has no ember.stack (remove when it lands): one copy_ per
    # sample into the rows of `out`.
    for i, t in enumerate(batch):
        out[i].copy_(t)
    return out


def collate_tensor_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    shape = tuple(elem.shape)
    _check_shapes(batch, shape)
    out_shape = (len(batch), *shape)
    dtype = elem.dtype
    if any(t.dtype != dtype for t in batch):  # as torch.stack: the promoted dtype
        for t in batch:
            dtype = ember.promote_types(dtype, t.dtype)
        return _stack_fallback(batch, ember.empty(out_shape, dtype=dtype, device=elem.device))
    np_dtype = _transport._np_dtype(dtype)
    if np_dtype is not None and elem.device.type == "cpu" and not elem.requires_grad:
        buf = _transport.out_array(out_shape, np_dtype)
        if buf is not None:  # in a worker: stack into the memory that carries the batch
            np.stack([t.numpy() for t in batch], out=buf)
            return ember.from_numpy(buf)
    stack = getattr(ember, "stack", None)
    if stack is not None:
        return stack(batch, 0)
    return _stack_fallback(batch, ember.empty(out_shape, dtype=elem.dtype, device=elem.device))


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    shape = elem.shape
    dtype = elem.dtype
    for b in batch:
        if b.shape != shape or b.dtype != dtype:
            if b.shape != shape:
                _check_shapes(batch, shape)
            # Mixed dtypes: as torch, through tensors (stack promotes).
            return collate([ember.as_tensor(x) for x in batch], collate_fn_map=collate_fn_map)
    out = _transport.out_array((len(batch), *shape), dtype)
    if out is None:
        out = np.empty((len(batch), *shape), dtype=dtype)
    np.stack(batch, out=out)
    return ember.from_numpy(out)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return ember.from_numpy(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    return ember.tensor(batch, dtype=ember.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return ember.tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {
    ember.Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Stacks a list of samples into a batch: tensors and NumPy arrays along a new first
    dimension, Python floats to a float64 tensor, ints to int64, strings into a list, and
    mappings, namedtuples and sequences element by element (as torch's default_collate)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
