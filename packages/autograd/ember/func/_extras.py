"""The rest of torch.func's names: functionalize, debug_unwrap, replace_all_batch_norm_modules_."""

from __future__ import annotations

import functools


def functionalize(func, *, remove="mutations"):
    """``func`` with the same results. torch rewrites in-place ops into out-of-place ones for its
    compilers; ember runs eagerly and has no graph to rewrite, so the function is called as is."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for "
                           f"remove={remove}. Valid options are:\n     remove='mutations': all "
                           "inplace and out= operators will be removed from the program, and "
                           "replaced with their out-of-place equivalents.\n     "
                           "remove='mutations_and_views': In addition to the above, all aliasing "
                           "operators {view} will be replaced with their non-aliasing "
                           "counterparts, {view}_copy.\n")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


def debug_unwrap(tensor, *, recurse=True):
    """The plain tensor inside a transform's wrapper: ember's transforms wrap nothing, so this is
    `tensor` itself."""
    return tensor


def _is_batch_norm(module) -> bool:
    return any(c.__name__ == "_BatchNorm" for c in type(module).__mro__)


def replace_all_batch_norm_modules_(root):
    """Makes every BatchNorm module in `root` stop tracking running statistics (running_mean,
    running_var and num_batches_tracked become None), in place, so that it can run under vmap;
    returns `root`."""
    for module in root.modules():
        if _is_batch_norm(module) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
