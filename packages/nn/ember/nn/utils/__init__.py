"""ember.nn.utils: gradient clipping, parameter <-> vector conversion, and ``rnn`` (padding and
packing of variable-length sequences)."""

from . import rnn
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters", "rnn"]
