"""The ops that are compositions of the core's: their rows are in the op registry
(csrc/python/bind_aliases.cpp, kComposites), which parses and checks the arguments with torch's
TypeErrors and passes them here, the parameters before ``*`` by position and the keyword-only
ones by name. Each is written with ember's public ops, so autograd records its parts (no
gradient formula of its own) and CUDA tensors run on the parts' device implementations.
Names, results, dtypes and error classes follow PyTorch.

One module per family; the registry looks each composition up by name on this package, which
gathers the modules' public functions.
"""

from ember._composite_ops import (
    complex_numbers,
    creation,
    histograms,
    indexing,
    linalg_forms,
    method_forms,
    nn_forms,
    numeric,
    pointwise,
    reductions,
    sampling,
    varargs,
    views,
)
from ember._sampling import binomial  # noqa: F401  (a registry row: kComposites)

_FAMILIES = (complex_numbers, creation, histograms, indexing, linalg_forms, method_forms,
             nn_forms, numeric, pointwise, reductions, sampling, varargs, views)
globals().update({name: value for family in _FAMILIES for name, value in vars(family).items()
                  if not name.startswith("_")
                  and getattr(value, "__module__", None) == family.__name__})
