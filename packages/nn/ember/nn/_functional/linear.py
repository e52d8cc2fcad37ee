"""linear (addmm / matmul) and bilinear (einsum)."""

from __future__ import annotations

import ember

# ---------------------------------------------------------------------------------------------
# linear

def linear(input, weight, bias=None):
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
