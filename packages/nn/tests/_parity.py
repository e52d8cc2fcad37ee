"""Helpers for the PyTorch parity tests: copy weights ember -> torch and compare forward and
backward."""

import numpy as np


def to_torch(t, torch, requires_grad=None):
    out = torch.from_numpy(np.array(t.detach().numpy(), copy=True))
    if requires_grad if requires_grad is not None else t.requires_grad:
        out.requires_grad_(True)
    return out


def copy_weights(em, tm, torch):
    sd = {k: torch.from_numpy(np.array(v.numpy(), copy=True)) for k, v in em.state_dict().items()}
    tm.load_state_dict(sd)


def close(a, b, rtol=1e-4, atol=1e-5):
    an = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    bn = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    np.testing.assert_allclose(an, bn, rtol=rtol, atol=atol)


def check_module(em, tm, *inputs, torch, rtol=1e-4, atol=1e-5, grad=True):
    """Same weights, same inputs: same outputs, same input and parameter gradients."""
    import ember

    copy_weights(em, tm, torch)
    e_in = [x.detach().requires_grad_(grad and x.dtype.is_floating_point)
            if isinstance(x, ember.Tensor) else x for x in inputs]
    t_in = [to_torch(x, torch) if isinstance(x, ember.Tensor) else x for x in e_in]
    eo = em(*e_in)
    to = tm(*t_in)
    if isinstance(eo, tuple):
        eo, to = eo[0], to[0]
    close(eo, to, rtol, atol)
    if not grad:
        return eo, to
    g = ember.randn(*eo.shape, dtype=eo.dtype)
    eo.backward(g)
    to.backward(to_torch(g, torch))
    for x, tx in zip(e_in, t_in):
        if isinstance(x, ember.Tensor) and x.requires_grad:
            close(x.grad, tx.grad, rtol, atol)
    tparams = dict(tm.named_parameters())
    for n, p in em.named_parameters():
        if p.grad is not None or tparams[n].grad is not None:
            close(p.grad, tparams[n].grad, rtol, atol)
    return eo, to
