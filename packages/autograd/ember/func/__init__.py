"""ember.func: composable function transforms (torch.func's API): vmap, grad, grad_and_value,
vjp, jvp, linearize, jacrev, jacfwd, hessian, functional_call, stack_module_state (and
functionalize, debug_unwrap, replace_all_batch_norm_modules_).

The transforms are built on ember.autograd's reverse mode and nest freely. vmap runs the function
once per batch element (ember has no batching rules); see docs/func.md for what that means for
speed and for the few behaviours that differ from torch.
"""

from __future__ import annotations

from ._extras import debug_unwrap, functionalize, replace_all_batch_norm_modules_
from ._functional_call import functional_call, stack_module_state
from ._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from ._vmap import vmap

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd",
           "hessian", "functional_call", "stack_module_state", "functionalize", "debug_unwrap",
           "replace_all_batch_norm_modules_"]
