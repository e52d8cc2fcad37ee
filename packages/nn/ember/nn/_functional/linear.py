"""linear (addmm / matmul) and bilinear (einsum)."""

from __future__ import annotations

import ember
from ember._shape import _one_node

# ---------------------------------------------------------------------------------------------
# linear

def linear(input, weight, bias=None):
    requires_grad = (input.requires_grad or weight.requires_grad
                     or bias is not None and bias.requires_grad)
    # one graph node (its formula in ember.autograd's table) instead of the reshape, t, addmm and
    # reshape the product is made of: recording and running four nodes per layer cost more
    # than a small layer's products (nanoGPT's training step: 21 layers)
    return _one_node("linear", _linear_values, requires_grad, input, weight, bias)


def _linear_values(input, weight, bias):
    if input.dim() == 2 and bias is not None:
        return ember.addmm(bias, input, weight.t())
    if input.dim() > 2 and bias is not None and input.is_contiguous():
        # folded into one addmm, as torch's linear does: the bias is added inside the product
        # instead of by a second pass over the (often large) output
        lead = tuple(input.shape[:-1])
        out = ember.addmm(bias, input.reshape(-1, input.shape[-1]), weight.t())
        return out.reshape(*lead, weight.shape[0])
    out = input.matmul(weight.t())
    return out if bias is None else out + bias


def bilinear(input1, input2, weight, bias=None):
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError("bilinear(): input batch dimensions do not match: got "
                           f"{tuple(input1.shape[:-1])} and {tuple(input2.shape[:-1])}")
    lead = tuple(input1.shape[:-1])
    a = input1.reshape(-1, input1.shape[-1])
    b = input2.reshape(-1, input2.shape[-1])
    out = ember.einsum("bi,oij,bj->bo", a, weight, b)
    if bias is not None:
        out = out + bias
    return out.reshape(lead + (weight.shape[0],))


# ---------------------------------------------------------------------------------------------
# grouped_mm (Mixture-of-Experts layers): one product per group, the groups cut by `offs`

_GROUPED_MM_DTYPES = ("float32", "bfloat16", "float16")


def _group_bounds(offs, length: int, what: str) -> list:
    """(start, end) of each group from the int32 offsets (each group's end): increasing, and
    within the `length` of the jagged dim (torch reads past them; ember refuses)."""
    if offs.dim() != 1:
        raise RuntimeError("offs has to be 1D")
    bounds, start = [], 0
    for g, end in enumerate(offs.tolist()):
        if end < start or end > length:
            raise RuntimeError(f"grouped_mm: offs[{g}] = {end} must be >= offs[{g - 1}] and <= "
                               f"{length}, the size of {what}" if g else
                               f"grouped_mm: offs[0] = {end} must be in [0, {length}], the size "
                               f"of {what}")
        bounds.append((start, end))
        start = end
    return bounds


def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """torch.nn.functional.grouped_mm: 2d x 3d (rows of mat_a cut by offs, group g times
    mat_b[g]), 3d x 3d (a batched product, no offs), 2d x 2d (the contraction dim cut: one
    (M, N) result per group) and 3d x 2d (the columns of mat_b cut, group g times mat_a[g]).
    Rows or columns past offs[-1] are zero. Differentiable (torch's CPU kernel is not)."""
    if mat_a.dim() not in (2, 3):
        raise RuntimeError("mat_a has to be 2 or 3d")
    if mat_b.dim() not in (2, 3):
        raise RuntimeError("mat_b has to be 2 or 3d")
    if (mat_a.dim() == 2 or mat_b.dim() == 2) != (offs is not None):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if both "
                           "matrices are 3d")
    if offs is not None and offs.dtype != ember.int32:
        raise RuntimeError("Offsets have to be int32")
    for name, m in (("mat_a", mat_a), ("mat_b", mat_b)):
        if m.dtype.name not in _GROUPED_MM_DTYPES:
            raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, got "
                               f"{m.dtype._torch_name}")
    if mat_a.dtype != mat_b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{mat_a.dtype._cpp_name} != {mat_b.dtype._cpp_name}")
    if out_dtype is not None and out_dtype != mat_a.dtype:
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    if mat_a.shape[-1] != mat_b.shape[-2]:
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    if mat_a.dim() == 3 and mat_b.dim() == 3:
        if mat_a.shape[0] != mat_b.shape[0]:
            raise RuntimeError("matrix batch sizes have to match")
        return ember.bmm(mat_a, mat_b)
    if mat_a.dim() == 2 and mat_b.dim() == 3:  # rows of mat_a per group
        bounds = _group_bounds(offs, mat_a.shape[0], "mat_a's first dim")
        if len(bounds) != mat_b.shape[0]:
            raise RuntimeError("matrix batch sizes have to match")
        parts = [mat_a[s:e].matmul(mat_b[g]) for g, (s, e) in enumerate(bounds)]
        tail = mat_a.shape[0] - (bounds[-1][1] if bounds else 0)
        parts.append(mat_a.new_zeros(tail, mat_b.shape[-1]))
        return ember.cat(parts, 0)
    if mat_a.dim() == 2:  # 2d x 2d: the contraction dim cut, one result per group
        bounds = _group_bounds(offs, mat_a.shape[1], "the contraction dim")
        return ember.stack([mat_a[:, s:e].matmul(mat_b[s:e]) for s, e in bounds]) if bounds \
            else mat_a.new_zeros(0, mat_a.shape[0], mat_b.shape[1])
    bounds = _group_bounds(offs, mat_b.shape[1], "mat_b's last dim")  # 3d x 2d: columns cut
    if len(bounds) != mat_a.shape[0]:
        raise RuntimeError("matrix batch sizes have to match")
    parts = [mat_a[g].matmul(mat_b[:, s:e]) for g, (s, e) in enumerate(bounds)]
    tail = mat_b.shape[1] - (bounds[-1][1] if bounds else 0)
    parts.append(mat_a.new_zeros(mat_a.shape[1], tail))
    return ember.cat(parts, 1)
