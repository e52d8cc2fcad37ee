"""Resampling and spatial transformers: interpolate/upsample, pixel_(un)shuffle, affine_grid,
grid_sample, channel_shuffle. Gathers are embedding lookups, so all are differentiable."""

from __future__ import annotations

import math

import ember

from .common import _ntuple, _size

# ---------------------------------------------------------------------------------------------
# resampling

def pixel_shuffle(input, upscale_factor):
    r = upscale_factor
    *lead, c, h, w = tuple(input.shape)
    if c % (r * r) != 0:
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible "
                           f"by the square of upscale_factor, but input.size(-3)={c} is not "
                           f"divisible by {r * r}")
    oc = c // (r * r)
    x = input.reshape(-1, oc, r, r, h, w).permute(0, 1, 4, 2, 5, 3)
    return x.reshape(tuple(lead) + (oc, h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    r = downscale_factor
    *lead, c, h, w = tuple(input.shape)
    x = input.reshape(-1, c, h // r, r, w // r, r).permute(0, 1, 3, 5, 2, 4)
    return x.reshape(tuple(lead) + (c * r * r, h // r, w // r))


def _take(x, dim, idx):
    """x.index_select(dim, idx) written as an embedding lookup (differentiable)."""
    xm = x.movedim(dim, 0)
    rest = tuple(xm.shape[1:])
    out = ember.embedding(xm.reshape(xm.shape[0], -1), idx)
    return out.reshape((idx.numel(),) + rest).movedim(0, dim)


def _check_spatial(in_sz, given, what: str, letter: str) -> None:
    """torch's check that a size or scale_factor sequence has one entry per spatial dim."""
    if len(given) != len(in_sz):
        shape = "of shape " if what == "scale_factor" else "of "
        raise ValueError(
            f"Input and {'output' if what == 'output size' else what} must have the same number "
            f"of spatial dimensions, but got input with spatial dimensions of {list(in_sz)} and "
            f"{what} {shape}{tuple(given)}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
            f"format and {what} in ({letter}1, {letter}2, ...,{letter}K) format.")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    nsp = input.dim() - 2
    if mode in ("nearest", "nearest-exact") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    in_sz = tuple(input.shape[2:])
    if size is not None:
        out_sz = _ntuple(size, nsp)
        _check_spatial(in_sz, out_sz, "output size", "o")
        scales = [None] * nsp
    else:
        sf = _ntuple(scale_factor, nsp)
        _check_spatial(in_sz, sf, "scale_factor", "s")
        out_sz = tuple(int(math.floor(in_sz[i] * sf[i])) for i in range(nsp))
        scales = [None if recompute_scale_factor else sf[i] for i in range(nsp)]
    if mode in ("linear", "bilinear", "trilinear"):
        want = {"linear": 1, "bilinear": 2, "trilinear": 3}[mode]
        if want != nsp:
            raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                      f"{want + 2}D input")
    elif mode == "bicubic":
        if nsp != 2:
            raise NotImplementedError(f"Got {input.dim()}D input, but bicubic mode needs 4D "
                                      "input")
    elif mode == "area":
        return getattr(ember, f"adaptive_avg_pool{nsp}d")(input, list(out_sz))
    elif mode not in ("nearest", "nearest-exact"):
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported yet")
    out = input
    for i in range(nsp):
        dim = 2 + i
        n_in, n_out = in_sz[i], out_sz[i]
        scale = (1.0 / scales[i]) if scales[i] else n_in / n_out
        if mode == "nearest":
            src = [min(int(math.floor(o * scale)), n_in - 1) for o in range(n_out)]
            out = _take(out, dim, ember.tensor(src, device=input.device))
        elif mode == "nearest-exact":
            src = [min(int(math.floor((o + 0.5) * scale)), n_in - 1) for o in range(n_out)]
            out = _take(out, dim, ember.tensor(src, device=input.device))
        elif mode == "bicubic":
            out = _cubic_axis(out, dim, n_in, n_out, scale, align_corners)
        else:
            if align_corners:
                pos = [o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0 for o in range(n_out)]
            else:
                pos = [max((o + 0.5) * scale - 0.5, 0.0) for o in range(n_out)]
            lo = [min(int(math.floor(p)), n_in - 1) for p in pos]
            hi = [min(i0 + 1, n_in - 1) for i0 in lo]
            lam = ember.tensor([p - i0 for p, i0 in zip(pos, lo)], dtype=input.dtype,
                               device=input.device)
            lam = lam.reshape((-1,) + (1,) * (out.dim() - dim - 1))
            a = _take(out, dim, ember.tensor(lo, device=input.device))
            b = _take(out, dim, ember.tensor(hi, device=input.device))
            out = a + (b - a) * lam
    return out


_CUBIC_A = -0.75


def _cubic_weights(t):
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _cubic_axis(x, dim, n_in, n_out, scale, align_corners):
    """One axis of bicubic resampling (torch's convolution coefficients, A = -0.75, source
    coordinates not clamped, taps clamped to the border)."""
    if align_corners:
        pos = [o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0 for o in range(n_out)]
    else:
        pos = [(o + 0.5) * scale - 0.5 for o in range(n_out)]
    fl = [math.floor(p) for p in pos]
    ws = [_cubic_weights(p - f) for p, f in zip(pos, fl)]
    shape = (-1,) + (1,) * (x.dim() - dim - 1)
    out = None
    for k in range(4):
        idx = ember.tensor([min(max(f - 1 + k, 0), n_in - 1) for f in fl], device=x.device)
        wk = ember.tensor([w[k] for w in ws], dtype=x.dtype, device=x.device).reshape(shape)
        term = _take(x, dim, idx) * wk
        out = term if out is None else out + term
    return out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


# ---------------------------------------------------------------------------------------------
# spatial transformers

def _base_coords(n, align_corners, dtype, device):
    if n == 1:
        return ember.zeros(1, dtype=dtype, device=device)
    if align_corners:
        return ember.linspace(-1.0, 1.0, n, dtype=dtype, device=device)
    return (ember.arange(n, dtype=dtype, device=device) * 2 + 1) / n - 1


def affine_grid(theta, size, align_corners=None):
    align_corners = bool(align_corners)
    if len(size) != 4:
        raise NotImplementedError("affine_grid only supports 4D sizes, for 2D affine "
                                  "transformations")
    n, _, h, w = size
    if tuple(theta.shape) != (n, 2, 3):
        raise ValueError("Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                         f"{_size(size)}. Got {_size(theta.shape)}.")
    xs = _base_coords(w, align_corners, theta.dtype, theta.device).reshape(1, w).expand(h, w)
    ys = _base_coords(h, align_corners, theta.dtype, theta.device).reshape(h, 1).expand(h, w)
    ones = ember.ones(h, w, dtype=theta.dtype, device=theta.device)
    base = ember.stack([xs, ys, ones], -1).reshape(1, h * w, 3)
    return base.matmul(theta.transpose(1, 2)).reshape(n, h, w, 2)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """2-d grid_sample (bilinear or nearest; zeros or border padding), composed: the corner
    lookups are embedding gathers, so gradients reach both the input and the grid."""
    align_corners = bool(align_corners)
    if mode not in ("bilinear", "nearest"):
        raise NotImplementedError(f"grid_sample: mode {mode!r} is not supported yet")
    if padding_mode not in ("zeros", "border"):
        raise NotImplementedError(f"grid_sample: padding_mode {padding_mode!r} is not supported "
                                  "yet")
    if input.dim() != 4 or grid.dim() != 4 or grid.shape[-1] != 2:
        raise NotImplementedError("grid_sample: only 4-d input with an (N, H, W, 2) grid is "
                                  "supported")
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]
    gx, gy = grid[..., 0], grid[..., 1]
    if align_corners:
        ix, iy = (gx + 1) * ((w - 1) / 2), (gy + 1) * ((h - 1) / 2)
    else:
        ix, iy = ((gx + 1) * w - 1) / 2, ((gy + 1) * h - 1) / 2
    if padding_mode == "border":
        ix, iy = ix.clamp(0, w - 1), iy.clamp(0, h - 1)
    table = input.permute(0, 2, 3, 1).reshape(n * h * w, c)
    base = (ember.arange(n, dtype=ember.int64, device=input.device) * (h * w)).reshape(n, 1, 1)

    def corner(xi, yi):
        inside = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
        xc = xi.clamp(0, w - 1).to(ember.int64)
        yc = yi.clamp(0, h - 1).to(ember.int64)
        vals = ember.embedding(table, base + yc * w + xc)  # (N, Ho, Wo, C)
        return vals * inside.to(input.dtype).unsqueeze(-1)

    if mode == "nearest":
        out = corner(ix.round(), iy.round())
    else:
        x0, y0 = ix.floor(), iy.floor()
        wx1, wy1 = (ix - x0).unsqueeze(-1), (iy - y0).unsqueeze(-1)
        wx0, wy0 = 1 - wx1, 1 - wy1
        out = (corner(x0, y0) * wx0 * wy0 + corner(x0 + 1, y0) * wx1 * wy0 +
               corner(x0, y0 + 1) * wx0 * wy1 + corner(x0 + 1, y0 + 1) * wx1 * wy1)
    del ho, wo
    return out.permute(0, 3, 1, 2)


def channel_shuffle(input, groups):
    n, c = input.shape[0], input.shape[1]
    if c % groups != 0:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and "
                           f"{groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape((n, groups, c // groups) + rest).transpose(1, 2).reshape(
        tuple(input.shape))


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated in torch: ``interpolate(input, size, scale_factor, mode='nearest')``."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated in torch: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


native_channel_shuffle = channel_shuffle  # torch's name of the kernel form; the same result
