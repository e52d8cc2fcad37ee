"""Flatten parameters into one vector and back (torch.nn.utils.parameters_to_vector)."""

from __future__ import annotations

import ember

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _typename(obj) -> str:
    return "ember.Tensor" if isinstance(obj, ember.Tensor) else type(obj).__name__


def parameters_to_vector(parameters) -> ember.Tensor:
    """One 1-d tensor holding every parameter, flattened, in order (differentiable)."""
    if isinstance(parameters, ember.Tensor):
        parameters = [parameters]
    return ember.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: ember.Tensor, parameters) -> None:
    """Copy the slices of ``vec`` into ``parameters`` (the inverse of parameters_to_vector)."""
    if not isinstance(vec, ember.Tensor):
        raise TypeError(f"expected ember.Tensor, but got: {_typename(vec)}")
    if isinstance(parameters, ember.Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    total = sum(p.numel() for p in parameters)
    if vec.dim() != 1 or vec.numel() != total:
        raise RuntimeError(f"vector_to_parameters: expected a 1-d vector of {total} elements, "
                           f"got shape {tuple(vec.shape)}")
    pointer = 0
    with ember.no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[pointer:pointer + n].view_as(p))
            pointer += n
