"""The nn kernels on CUDA tensors: convolution, pooling, nll_loss, batch/layer norm, embedding, each
with its backward kernel, under the names the core's nn bindings hand to the device hook.

They are written with the array module (`xp`: CuPy on a GPU, NumPy over the host backend), as
the ops in ``_ops.py``, and registered in its table ``OPS``.

- Convolution is im2col (a strided window view, copied once) and one batched GEMM over the groups
  (cuBLAS on a GPU). A transposed convolution is the plain convolution of the stride-dilated,
  re-padded input with the flipped kernel; the gradients are the usual adjoint pairs: the input
  gradient of a plain convolution is a transposed one and the other way round, and both weight
  gradients are one GEMM of the small side against the windows of the big side.
- Pooling takes the maximum or sum over a window view; the max gradient scatters into the
  recorded flat indices, the average gradient adds each kernel tap's strided slice.
- Shapes and errors come from the CPU: convolution's from ``_C._convolution_shape`` (the CPU's
  own checks on memory-free stand-ins), pooling's from the CPU op run on one plane of the input.
  nll_loss, the norms and embedding check their arguments here, with the CPU kernels' messages.
"""

from __future__ import annotations

import math

import numpy

from ember import _C
from ember.cuda import _core_ops, _cudnn
from ember.cuda import _ops as base
from ember.cuda._ops import (
    _on_current_stream,
    _operand,
    _pad,
    _result,
    _scatter_add,
    device_of,
    empty,
    view,
    xp,
)

# ---- helpers ---------------------------------------------------------------------------------


def _shaped(t):
    """A memory-free CPU stand-in with t's shape and dtype (for checks that read only those)."""
    if t is None:
        return None
    return base._stand_in(t).expand(tuple(t.shape))


def _math_dtype(dtype):
    """float16 runs in float32, as on the CPU."""
    return _C.float32 if dtype == _C.float16 else dtype


def _as_strided(a, shape, strides):
    return xp().lib.stride_tricks.as_strided(a, shape=tuple(shape), strides=tuple(strides))


def _windows(a, nlead: int, kernel, stride, dilation, out):
    """The view (*lead, *out, *kernel) of the windows over a's trailing spatial dims."""
    st = a.strides
    sp = st[nlead:]
    shape = a.shape[:nlead] + tuple(out) + tuple(kernel)
    strides = (st[:nlead] + tuple(s * t for s, t in zip(sp, stride))
               + tuple(s * d for s, d in zip(sp, dilation)))
    return _as_strided(a, shape, strides)


def _batched(a, k: int):
    """(N, C, *spatial) from a possibly unbatched (C, *spatial) array."""
    return a if a.ndim == k + 2 else a[None]


def _unbatch(a, was_batched: bool):
    return a if was_batched else a[0]


# ---- convolution -----------------------------------------------------------------------------

# The window copy (im2col) is made a batch chunk at a time, so that its size stays near this
# (at least one sample): a whole batch's windows are kernel-volume times the input, which would set
# a training step's peak memory, where cuDNN bounds its workspace.
WORKSPACE_BYTES = 32 << 20


def _batch_chunks(n: int, per_sample_bytes: int):
    step = max(1, min(n, WORKSPACE_BYTES // max(per_sample_bytes, 1)))
    return [slice(i, min(n, i + step)) for i in range(0, n, step)]


def _conv_valid_into(target, x, w, stride, dilation, groups: int, bias=None):
    """target (N, Cout, *O) = the unpadded convolution of x (N, Cin, *S) with w (Cout, Cin/G, *K)
    (+ bias), written without an intermediate of the output's size."""
    mod = xp()
    n, cin = x.shape[:2]
    k = x.ndim - 2
    kernel, cout = w.shape[2:], w.shape[0]
    out = target.shape[2:]
    cols = _im2col(x, groups, kernel, stride, dilation, out)  # (G, Cin/G*kvol, N*ovol)
    wm = w.reshape(groups, cout // groups, (cin // groups) * math.prod(kernel))
    y = mod.matmul(wm, cols).reshape((groups, cout // groups, n) + tuple(out))
    if bias is not None:
        y += bias.reshape((groups, cout // groups, 1) + (1,) * k)
    target.reshape((n, groups, cout // groups) + tuple(out))[...] = (
        y.transpose((2, 0, 1) + tuple(range(3, 3 + k))))


def _im2col(big, groups: int, kernel, stride, dilation, out):
    """The windows of big (N, C, *S) as (G, C/G * kvol, N * ovol): one copy."""
    n, c = big.shape[:2]
    k = len(kernel)
    grouped = xp().ascontiguousarray(big).reshape((n, groups, c // groups) + big.shape[2:])
    win = _windows(grouped, 3, kernel, stride, dilation, out)  # (N, G, Cg, *O, *K)
    perm = (1, 2) + tuple(range(3 + k, 3 + 2 * k)) + (0,) + tuple(range(3, 3 + k))
    return win.transpose(perm).reshape(groups, (c // groups) * math.prod(kernel),
                                       n * math.prod(out))


def _window_bytes(channels: int, kernel, out, itemsize: int) -> int:
    """One sample's im2col buffer."""
    return channels * math.prod(kernel) * math.prod(out) * itemsize


def _conv_into(target, x, w, stride, padding, dilation, groups: int, bias=None):
    """target (N, Cout, *O) = the convolution of x (N, Cin, *S), padded by `padding`."""
    per = _window_bytes(x.shape[1], w.shape[2:], target.shape[2:], x.itemsize)
    for part in _batch_chunks(x.shape[0], per):
        _conv_valid_into(target[part], _pad(x[part], padding, padding), w, stride, dilation,
                         groups, bias)


def _conv_transposed_into(target, x, w, stride, padding, dilation, groups: int, bias=None):
    """target (N, Cout, *O) = the transposed convolution of x (N, Cin, *S) with w
    (Cin, Cout/G, *K): the plain convolution of the stride-dilated, re-padded input with the
    flipped kernel (output_padding is target's extra size)."""
    mod = xp()
    k = x.ndim - 2
    kernel = w.shape[2:]
    cin = x.shape[1]
    coutg = w.shape[1]
    flipped = w.reshape((groups, cin // groups, coutg) + tuple(kernel)).swapaxes(1, 2)
    flipped = flipped.reshape((groups * coutg, cin // groups) + tuple(kernel))
    flipped = flipped[(Ellipsis,) + (slice(None, None, -1),) * k]
    spread_size = tuple((s - 1) * st + 1 for s, st in zip(x.shape[2:], stride))
    lo = [d * (kk - 1) - p for kk, p, d in zip(kernel, padding, dilation)]
    # hi: what makes the valid convolution's output exactly target's size
    hi = [o + d * (kk - 1) - sp - lo_ for o, sp, lo_, d, kk in
          zip(target.shape[2:], spread_size, lo, dilation, kernel)]
    per = _window_bytes(cin, kernel, target.shape[2:], x.itemsize)
    for part in _batch_chunks(x.shape[0], per):
        xs = x[part]
        spread = mod.zeros(xs.shape[:2] + spread_size, dtype=x.dtype)
        spread[(slice(None), slice(None)) + tuple(slice(None, None, st) for st in stride)] = xs
        _conv_valid_into(target[part], _pad(spread, lo, hi), flipped, (1,) * k, dilation,
                         groups, bias)


def _weight_grad(big, small, kernel, stride, padding, dilation, groups: int):
    """sum over batch and positions of small (N, Cs, *O) x windows of big (N, Cb, *S) padded by
    `padding`: (Cs, Cb/G, *K), the weight gradient of either kind of convolution."""
    mod = xp()
    n, cs = small.shape[:2]
    out = small.shape[2:]
    gw = None
    for part in _batch_chunks(n, _window_bytes(big.shape[1], kernel, out, big.itemsize)):
        cols = _im2col(_pad(big[part], padding, padding), groups, kernel, stride, dilation, out)
        m = small[part].shape[0]
        sm = mod.ascontiguousarray(small[part]).reshape(m, groups, cs // groups, math.prod(out))
        sm = sm.transpose(1, 2, 0, 3).reshape(groups, cs // groups, m * math.prod(out))
        g = mod.matmul(sm, cols.transpose(0, 2, 1))
        gw = g if gw is None else gw + g
    return gw.reshape((cs, big.shape[1] // groups) + tuple(kernel))


def _conv_kwargs(kwargs):
    return (list(kwargs["stride"]), list(kwargs["padding"]), list(kwargs["dilation"]),
            bool(kwargs["transposed"]), list(kwargs["output_padding"]), int(kwargs["groups"]))


def _batched_view(t, k: int):
    """A (N, C, *spatial) array over a result tensor that may be unbatched."""
    v = view(t)
    return v if v.ndim == k + 2 else v[None]


_CONV_SHAPES: dict = {}  # the CPU's checked result shape, per argument signature


def _conv_shape(x, w, b, stride, padding, dilation, transposed, opad, groups):
    """The convolution's result shape, from the CPU's own checks (which raise its errors); a
    signature seen before skips them."""
    key = (tuple(x.shape), x.dtype, tuple(w.shape), w.dtype, None if b is None else
           (tuple(b.shape), b.dtype), tuple(stride), tuple(padding), tuple(dilation), transposed,
           tuple(opad), groups)
    shape = _CONV_SHAPES.get(key)
    if shape is None:
        shape = _C._convolution_shape(_shaped(x), _shaped(w), _shaped(b), stride, padding,
                                      dilation, transposed, opad, groups)
        if len(_CONV_SHAPES) < 4096:
            _CONV_SHAPES[key] = shape
    return shape


def _convolution(name, args, kwargs):
    x, w, b = args
    device = device_of(name, args)
    stride, padding, dilation, transposed, opad, groups = _conv_kwargs(kwargs)
    shape = _conv_shape(x, w, b, stride, padding, dilation, transposed, opad, groups)
    k = w.dim() - 2
    if not x.dtype.is_floating_point:
        # integer convolutions are the CPU's only (check_conv lets them through), as torch's
        kernel = "slow_conv_transpose2d_out_cuda" if transposed else "slow_conv2d_cuda"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{x.dtype._torch_name}'")
    cdt = _math_dtype(x.dtype)
    out = empty(tuple(shape), x.dtype, device)
    if out.numel() == 0:
        return out
    if _cudnn.usable(x, w, b):
        try:
            _cudnn.convolution(x, w, b, stride, padding, dilation, transposed, groups, out, device)
            return out
        except _cudnn.Unsupported:
            pass  # ember's kernels below
    with _on_current_stream(device):
        xa = _batched(_operand(x, cdt), k)
        wa = _operand(w, cdt)
        ba = None if b is None else _operand(b, cdt)
        target = _batched_view(out, k)
        if xa.size == 0 or wa.size == 0:  # nothing to sum: the bias alone
            target[...] = 0 if ba is None else ba.reshape((1, -1) + (1,) * k)
        elif transposed:
            _conv_transposed_into(target, xa, wa, stride, padding, dilation, groups, ba)
        else:
            _conv_into(target, xa, wa, stride, padding, dilation, groups, ba)
    return out


def _convolution_backward(name, args, kwargs):
    go, x, w = args
    device = device_of(name, args)
    stride, padding, dilation, transposed, opad, groups = _conv_kwargs(kwargs)
    mask = list(kwargs["output_mask"])
    shape = _conv_shape(x, w, None, stride, padding, dilation, transposed, opad, groups)
    if go.dtype != x.dtype:
        raise RuntimeError(f"convolution_backward: expected grad_output of type {x.dtype}, "
                           f"but got {go.dtype}")
    if list(go.shape) != list(shape):
        raise RuntimeError(f"convolution_backward: expected grad_output of size {list(shape)}, "
                           f"but got {list(go.shape)}")
    if _cudnn.usable(go, x, w):
        try:
            return _cudnn.convolution_backward(go, x, w, stride, padding, dilation, transposed,
                                               groups, mask, device)
        except _cudnn.Unsupported:
            pass  # ember's kernels below
    k = w.dim() - 2
    cdt = _math_dtype(x.dtype)
    gi = gw = gb = None
    with _on_current_stream(device):
        ga = _batched(_operand(go, cdt), k)
        xa = _batched(_operand(x, cdt), k)
        wa = _operand(w, cdt)
        empty_sum = ga.size == 0 or xa.size == 0 or wa.size == 0
        if mask[0]:
            gi = empty(tuple(x.shape), x.dtype, device)
            if gi.numel():
                target = _batched_view(gi, k)
                if empty_sum:
                    target[...] = 0
                elif transposed:  # the adjoint of a transposed convolution: a plain one
                    _conv_into(target, ga, wa, stride, padding, dilation, groups)
                else:
                    _conv_transposed_into(target, ga, wa, stride, padding, dilation, groups)
        if mask[1]:
            if empty_sum:
                v = 0
            elif transposed:
                v = _weight_grad(ga, xa, w.shape[2:], stride, padding, dilation, groups)
            else:
                v = _weight_grad(xa, ga, w.shape[2:], stride, padding, dilation, groups)
            gw = _result(device, tuple(w.shape), w.dtype, v)
        if mask[2]:
            v = ga.sum(axis=(0,) + tuple(range(2, ga.ndim)))
            gb = _result(device, (ga.shape[1],), x.dtype, v)
    return (gi, gw, gb)


# ---- pooling ---------------------------------------------------------------------------------


def _pool_meta(name, x, k: int, kwargs):
    """The CPU op on one plane of the input (zeros, same spatial size): its checks, and the
    output's spatial shape."""
    plane = _C.zeros([1] * (x.dim() - k) + list(x.shape[-k:]), dtype=x.dtype)
    r = getattr(_C, name)(plane, **kwargs)
    first = r[0] if isinstance(r, tuple) else r
    return tuple(x.shape[:-k]) + tuple(first.shape[-k:])


def _planes(a, k: int):
    """(P, *spatial): the leading dims of a (N, C or C alone) as one."""
    return a.reshape((-1,) + a.shape[a.ndim - k:])


def _right_pad(sizes, out, kernel, stride, padding, dilation):
    """Padding at the end so that every window of `out` lies inside (ceil_mode's last one)."""
    return [max(p, (o - 1) * st + d * (kk - 1) + 1 - s - p)
            for s, o, kk, st, p, d in zip(sizes, out, kernel, stride, padding, dilation)]


def _tap_coordinates(k: int, out, kernel, stride, padding, dilation, sizes):
    """The flat input offset of every (output position, kernel tap), shaped (*out, kvol)."""
    mod = xp()
    flat = 0
    for i in range(k):
        o = mod.arange(out[i]).reshape((1,) * i + (-1,) + (1,) * (k - i - 1) + (1,) * k)
        t = mod.arange(kernel[i]).reshape((1,) * k + (1,) * i + (-1,) + (1,) * (k - i - 1))
        coord = o * stride[i] - padding[i] + t * dilation[i]
        flat = flat * sizes[i] + coord
    return flat.reshape(tuple(out) + (math.prod(kernel),))


def _first_extreme(win, valid):
    """Per window (last axis): the position of the maximum (the first one), or of the last NaN
    (the CPU kernel's choice); padding never wins."""
    mod = xp()
    kvol = win.shape[-1]
    if win.dtype.kind == "f":
        nan = mod.isnan(win)
        has_nan = nan.any(axis=-1)
        last_nan = kvol - 1 - mod.argmax(nan[..., ::-1], axis=-1)
        m = mod.max(mod.where(nan, -mod.inf, win), axis=-1)
    else:
        has_nan = None
        m = mod.max(win, axis=-1)
    first = mod.argmax((win == m[..., None]) & valid, axis=-1)
    return first if has_nan is None else mod.where(has_nan, last_nan, first)


def _lowest(dtype):
    return -numpy.inf if dtype.kind == "f" else numpy.iinfo(dtype).min


def _max_pool(k: int):
    def run(name, args, kwargs):
        x = args[0]
        device = device_of(name, args)
        shape = _pool_meta(name, x, k, kwargs)
        kernel, stride = kwargs["kernel_size"], kwargs["stride"] or kwargs["kernel_size"]
        padding, dilation = kwargs["padding"], kwargs["dilation"]
        mod = xp()
        out = shape[-k:]
        with _on_current_stream(device):
            a = _planes(view(x), k)
            sizes = a.shape[1:]
            hi = _right_pad(sizes, out, kernel, stride, padding, dilation)
            padded = _pad(a, padding, hi, _lowest(a.dtype))
            valid = _pad(mod.ones((1,) + sizes, dtype=bool), padding, hi, False)
            kvol = math.prod(kernel)
            win = _windows(padded, 1, kernel, stride, dilation, out).reshape(
                (a.shape[0],) + tuple(out) + (kvol,))
            vwin = _windows(valid, 1, kernel, stride, dilation, out).reshape(
                (1,) + tuple(out) + (kvol,))
            tap = _first_extreme(win, vwin)
            values = mod.take_along_axis(win, tap[..., None], axis=-1)[..., 0]
            coords = _tap_coordinates(k, out, kernel, stride, padding, dilation, sizes)
            coords = mod.broadcast_to(coords, (a.shape[0],) + coords.shape)
            idx = mod.take_along_axis(coords, tap[..., None], axis=-1)[..., 0]
            return (_result(device, shape, x.dtype, values.reshape(shape)),
                    _result(device, shape, _C.int64, idx.reshape(shape)))

    return run


def _scatter_planes(device, go, x, indices, k: int):
    """The gradient of a max pool: go's values added at the flat indices of each plane."""
    mod = xp()
    with _on_current_stream(device):
        vol = math.prod(x.shape[-k:])
        g = _planes(_operand(go, _math_dtype(x.dtype)), k).reshape(-1)
        idx = _planes(view(indices), k)
        planes = idx.shape[0]
        flat = (idx.reshape(planes, -1) + (mod.arange(planes) * vol)[:, None]).reshape(-1)
        gi = mod.zeros(planes * vol, dtype=g.dtype)
        _scatter_add(gi, flat, g)
        return _result(device, tuple(x.shape), x.dtype, gi.reshape(tuple(x.shape)))


def _max_pool_backward(k: int):
    def run(name, args, kwargs):
        go, x = args
        device = device_of(name, args + (kwargs["indices"],))
        return _scatter_planes(device, go, x, kwargs["indices"], k)

    return run


def _avg_divisors(k: int, out, kernel, stride, padding, sizes, count_include_pad, divisor):
    """The divisor of every output position (*out), the CPU kernel's rule."""
    mod = xp()
    if divisor is not None:
        return mod.full(tuple(out), float(divisor))
    total = 1
    for i in range(k):
        st = mod.arange(out[i]) * stride[i] - padding[i]
        en = mod.minimum(st + kernel[i], sizes[i] + padding[i])
        size = en - st if count_include_pad else (mod.minimum(en, sizes[i])
                                                  - mod.maximum(st, 0))
        total = total * size.reshape((1,) * i + (-1,) + (1,) * (k - i - 1))
    return total.astype(numpy.float64)


def _avg_pool_args(kwargs):
    kernel = kwargs["kernel_size"]
    return (kernel, kwargs["stride"] or kernel, kwargs["padding"], bool(kwargs["ceil_mode"]),
            bool(kwargs["count_include_pad"]), kwargs.get("divisor_override"))


def _avg_pool(k: int):
    def run(name, args, kwargs):
        x = args[0]
        device = device_of(name, args)
        shape = _pool_meta(name, x, k, kwargs)
        kernel, stride, padding, _, cip, dov = _avg_pool_args(kwargs)
        out = shape[-k:]
        cdt = _math_dtype(x.dtype)
        mod = xp()
        with _on_current_stream(device):
            a = _planes(_operand(x, cdt), k)
            sizes = a.shape[1:]
            hi = _right_pad(sizes, out, kernel, stride, padding, (1,) * k)
            win = _windows(_pad(a, padding, hi), 1, kernel, stride, (1,) * k, out)
            sums = win.sum(axis=tuple(range(1 + k, 1 + 2 * k)))
            div = _avg_divisors(k, out, kernel, stride, padding, sizes, cip, dov)
            value = mod.where(div > 0, sums / mod.where(div > 0, div, 1), 0).astype(sums.dtype)
            return _result(device, shape, x.dtype, value.reshape(shape))

    return run


def _avg_pool_backward(k: int):
    def run(name, args, kwargs):
        go, x = args
        device = device_of(name, args)
        kernel, stride, padding, _, cip, dov = _avg_pool_args(kwargs)
        cdt = _math_dtype(x.dtype)
        mod = xp()
        with _on_current_stream(device):
            g = _planes(_operand(go, cdt), k)
            out = g.shape[1:]
            sizes = tuple(x.shape[-k:])
            div = _avg_divisors(k, out, kernel, stride, padding, sizes, cip, dov)
            g = mod.where(div > 0, g / mod.where(div > 0, div, 1), 0).astype(g.dtype)
            hi = _right_pad(sizes, out, kernel, stride, padding, (1,) * k)
            gi = mod.zeros((g.shape[0],) + tuple(s + p + h for s, p, h in zip(sizes, padding, hi)),
                           dtype=g.dtype)
            for tap in numpy.ndindex(*kernel):  # each tap's outputs hit distinct inputs
                sl = tuple(slice(t, t + (o - 1) * st + 1, st) for t, o, st in zip(tap, out, stride))
                gi[(slice(None),) + sl] += g
            crop = tuple(slice(p, p + s) for p, s in zip(padding, sizes))
            return _result(device, tuple(x.shape), x.dtype,
                           gi[(slice(None),) + crop].reshape(tuple(x.shape)))

    return run


def _adaptive_matrix(size: int, out: int, dtype):
    """(out, size): row o averages input [floor(o*size/out), ceil((o+1)*size/out))."""
    m = numpy.zeros((out, size), dtype=dtype)
    for o in range(out):
        st, en = (o * size) // out, ((o + 1) * size + out - 1) // out
        m[o, st:en] = 1.0 / (en - st)
    return xp().asarray(m)


def _along_axes(a, mats, k: int):
    """Each trailing spatial axis i of a multiplied by mats[i] (out_i, in_i)."""
    mod = xp()
    for i, m in enumerate(mats):
        axis = a.ndim - k + i
        a = mod.moveaxis(mod.tensordot(a, m, axes=([axis], [1])), -1, axis)
    return a


def _adaptive_avg(k: int):
    def run(name, args, kwargs):
        x = args[0]
        device = device_of(name, args)
        shape = _pool_meta(name, x, k, kwargs)
        cdt = _math_dtype(x.dtype)
        with _on_current_stream(device):
            a = _operand(x, cdt)
            mats = [_adaptive_matrix(s, o, a.dtype) for s, o in zip(x.shape[-k:], shape[-k:])]
            return _result(device, shape, x.dtype, _along_axes(a, mats, k))

    return run


def _adaptive_avg_backward(k: int):
    def run(name, args, kwargs):
        go, x = args
        device = device_of(name, args)
        cdt = _math_dtype(x.dtype)
        with _on_current_stream(device):
            g = _operand(go, cdt)
            mats = [_adaptive_matrix(s, o, g.dtype).T for s, o in zip(x.shape[-k:], go.shape[-k:])]
            return _result(device, tuple(x.shape), x.dtype, _along_axes(g, mats, k))

    return run


def _adaptive_max(k: int):
    def run(name, args, kwargs):
        x = args[0]
        device = device_of(name, args)
        shape = _pool_meta(name, x, k, kwargs)
        out, sizes = shape[-k:], tuple(x.shape[-k:])
        mod = xp()
        with _on_current_stream(device):
            a = _planes(view(x), k)
            values = mod.empty((a.shape[0],) + tuple(out), dtype=a.dtype)
            idx = mod.empty((a.shape[0],) + tuple(out), dtype=numpy.int64)
            for pos in numpy.ndindex(*out):  # windows differ in size: one slice each
                lo = [(o * s) // n for o, s, n in zip(pos, sizes, out)]
                hi = [((o + 1) * s + n - 1) // n for o, s, n in zip(pos, sizes, out)]
                win = a[(slice(None),) + tuple(slice(l_, h) for l_, h in zip(lo, hi))]
                flat = win.reshape(a.shape[0], -1)
                tap = _first_extreme(flat, True)
                values[(slice(None),) + pos] = mod.take_along_axis(flat, tap[:, None], axis=1)[:, 0]
                # the window's coordinates by hand: cupy.unravel_index checks the indices on the
                # host (two synchronisations per output position)
                local, rest = [], tap
                for n in reversed(win.shape[1:]):
                    local.append(rest % n)
                    rest = rest // n
                local.reverse()
                g = 0
                for i in range(k):
                    g = g * sizes[i] + local[i] + lo[i]
                idx[(slice(None),) + pos] = g
            return (_result(device, shape, x.dtype, values.reshape(shape)),
                    _result(device, shape, _C.int64, idx.reshape(shape)))

    return run


# ---- nll_loss --------------------------------------------------------------------------------


def _check_nll(x, target, weight, reduction: int):
    if x.dim() < 1:
        raise RuntimeError("input tensor should be 1D or 2D")
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"nll_loss\" not implemented for '{x.dtype._torch_name}'")
    if target.dtype.is_floating_point or target.dtype == _C.bool:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype._torch_name}")
    if reduction not in (0, 1, 2):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if x.dim() == 1:
        if target.dim() > 1 or target.numel() != 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    else:
        want = [x.shape[0]] + list(x.shape[2:])
        if list(target.shape) != want:
            if x.dim() == 2:
                raise RuntimeError(f"size mismatch (got input: {list(x.shape)}, "
                                   f"target: {list(target.shape)})")
            raise RuntimeError(f"Expected target size {want}, got {list(target.shape)}")
    classes = x.shape[0] if x.dim() == 1 else x.shape[1]
    if weight is not None:
        if weight.numel() != classes:
            raise RuntimeError(f"weight tensor should be defined either for all {classes} "
                               "classes or no classes but got weight tensor of shape: "
                               f"{list(weight.shape)}")
        if weight.dtype != x.dtype:
            raise RuntimeError(f"expected scalar type {x.dtype._torch_name} but found "
                               f"{weight.dtype._torch_name}")
    return classes




def _nll_parts(x, target, weight, ignore_index: int, classes: int):
    """(x as (M, C) over the class axis moved last, targets (M,), per-target weights (M,)),
    after the bounds check (one device sync, as torch's device-side assert is not available)."""
    mod = xp()
    a = view(x)
    a = a.reshape(1, -1) if x.dim() == 1 else mod.moveaxis(a, 1, -1).reshape(-1, classes)
    t = view(target).reshape(-1).astype(numpy.int64)
    ignored = t == ignore_index
    bad = ~ignored & ((t < 0) | (t >= classes))
    if bool(bad.any()):
        raise IndexError(f"Target {int(t[mod.argmax(bad)])} is out of bounds.")
    safe = mod.where(ignored, 0, t)
    w = (view(weight).astype(numpy.float64)[safe] if weight is not None
         else mod.ones(t.shape, dtype=numpy.float64))
    return a, safe, mod.where(ignored, 0.0, w)


def _nll_loss(name, args, kwargs):
    x, target, weight = args
    device = device_of(name, [a for a in args if a is not None])
    reduction, ignore = int(kwargs.get("reduction", 1)), int(kwargs.get("ignore_index", -100))
    classes = _check_nll(x, target, weight, reduction)
    mod = xp()
    with _on_current_stream(device):
        a, t, w = _nll_parts(x, target, weight, ignore, classes)
        picked = mod.take_along_axis(a, t[:, None], axis=1)[:, 0].astype(numpy.float64)
        losses = -w * picked
        if reduction == 0:
            shape = tuple(target.shape)
            return _result(device, shape, x.dtype, losses.reshape(shape))
        total = losses.sum()
        value = total / w.sum() if reduction == 1 else total
        return _result(device, (), x.dtype, value)


def _nll_loss_backward(name, args, kwargs):
    go, x, target, weight = args
    device = device_of(name, [a for a in args if a is not None])
    reduction, ignore = int(kwargs.get("reduction", 1)), int(kwargs.get("ignore_index", -100))
    classes = _check_nll(x, target, weight, reduction)
    gshape = list(target.shape) if reduction == 0 else []
    if list(go.shape) != gshape and not (reduction != 0 and go.numel() == 1):
        raise RuntimeError(f"nll_loss_backward: expected grad_output of size {gshape}, "
                           f"but got {list(go.shape)}")
    mod = xp()
    with _on_current_stream(device):
        a, t, w = _nll_parts(x, target, weight, ignore, classes)
        g = view(go).astype(numpy.float64).reshape(-1)
        if reduction == 1:
            tw = kwargs.get("total_weight")
            g = g / (float(tw.item()) if tw is not None else w.sum())
        scale = (-w * g).astype(a.dtype)  # (M,), or broadcast from one value
        zero = scale.dtype.type(0)
        rows = mod.where(mod.arange(classes)[None, :] == t[:, None], scale[:, None], zero)
        if x.dim() == 1:
            grad = rows.reshape(tuple(x.shape))
        else:
            lead = (x.shape[0],) + tuple(x.shape[2:])
            grad = mod.moveaxis(rows.reshape(lead + (classes,)), -1, 1)
        return _result(device, tuple(x.shape), x.dtype, grad)


# ---- batch norm and layer norm -----------------------------------------------------------------


def _check_bn(x, named):
    shape = x.shape
    if len(shape) < 2:
        raise RuntimeError("batch_norm: expected input with at least 2 dims, but got input of "
                           f"size {list(shape)}")
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"batch_norm\" not implemented for '{x.dtype._torch_name}'")
    channels = shape[1]
    for label, t in named:
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"batch_norm: expected {label} to have {channels} elements, but "
                               f"got {label} of size {list(t.shape)}")


def _channel(a, ndim: int):
    """A per-channel vector shaped to broadcast against (N, C, *)."""
    return a.reshape((1, -1) + (1,) * (ndim - 2))


def _native_batch_norm(name, args, kwargs):
    x, w, b, rm, rv = args
    device = device_of(name, [a for a in args if a is not None])
    training, momentum, eps = bool(kwargs["training"]), kwargs["momentum"], kwargs["eps"]
    _check_bn(x, [("weight", w), ("bias", b), ("running_mean", rm), ("running_var", rv)])
    if not training and (rm is None or rv is None):
        raise RuntimeError("batch_norm: running_mean and running_var must be defined in "
                           "evaluation mode")
    if (x.numel() > x.shape[1] or not training) and _cudnn.batch_norm_usable(x, (w, b, rm, rv)):
        try:
            return _cudnn.batch_norm(x, w, b, rm, rv, training, momentum, eps, device)
        except _cudnn.Unsupported:
            pass  # ember's kernels below
    mod = xp()
    sdt = _math_dtype(x.dtype)
    axes = (0,) + tuple(range(2, x.dim()))
    with _on_current_stream(device):
        a = _operand(x, sdt)
        count = a.size // max(x.shape[1], 1)
        if training:
            mean = a.mean(axis=axes) if count else mod.zeros(x.shape[1], dtype=a.dtype)
            var = ((a - _channel(mean, a.ndim)) ** 2).mean(axis=axes) if count else mean * 0
        else:
            mean, var = _operand(rm, sdt), _operand(rv, sdt)
        invstd = 1.0 / mod.sqrt(var + eps)
        scale = invstd * (_operand(w, sdt) if w is not None else 1.0)
        shift = (_operand(b, sdt) if b is not None else 0.0) - mean * scale
        out = _result(device, tuple(x.shape), x.dtype,
                      a * _channel(scale, a.ndim) + _channel(shift, a.ndim))
        if not training:
            return (out, empty((0,), sdt, device), empty((0,), sdt, device))
        unbiased = var * count / (count - 1) if count > 1 else mod.full(var.shape, numpy.nan)
        for running, batch in ((rm, mean), (rv, unbiased)):
            if running is not None:  # through copy_, which bumps its version as the CPU does
                new = (1 - momentum) * _operand(running, sdt) + momentum * batch
                running.copy_(_result(device, (x.shape[1],), running.dtype, new))
        return (out, _result(device, (x.shape[1],), sdt, mean),
                _result(device, (x.shape[1],), sdt, invstd))


def _native_batch_norm_backward(name, args, kwargs):
    go, x, w, rm, rv, sm, si = args
    device = device_of(name, [a for a in args if a is not None])
    train, eps, mask = bool(kwargs["train"]), kwargs["eps"], list(kwargs["output_mask"])
    _check_bn(x, [("weight", w), ("running_mean", rm), ("running_var", rv)]
              + ([("save_mean", sm), ("save_invstd", si)] if train else []))
    if tuple(go.shape) != tuple(x.shape):
        raise RuntimeError(f"batch_norm_backward: expected grad_out of size {list(x.shape)}, "
                           f"but got {list(go.shape)}")
    if train and (sm is None or si is None):
        raise RuntimeError("batch_norm_backward: save_mean and save_invstd are needed in "
                           "training mode")
    if not train and (rm is None or rv is None):
        raise RuntimeError("batch_norm_backward: running_mean and running_var are needed in "
                           "evaluation mode")
    if train and go.dtype == x.dtype and _cudnn.batch_norm_usable(x, (w, sm, si)):
        try:
            return _cudnn.batch_norm_backward(go, x, w, sm, si, eps, mask, device)
        except _cudnn.Unsupported:
            pass  # ember's kernels below
    mod = xp()
    sdt = _math_dtype(x.dtype)
    axes = (0,) + tuple(range(2, x.dim()))
    with _on_current_stream(device):
        a = _operand(x, sdt)
        g = _operand(go, sdt)
        if train:
            mean, invstd = _operand(sm, sdt), _operand(si, sdt)
        else:
            mean = _operand(rm, sdt)
            invstd = 1.0 / mod.sqrt(_operand(rv, sdt) + eps)
        xhat = (a - _channel(mean, a.ndim)) * _channel(invstd, a.ndim)
        sum_g, sum_gx = g.sum(axis=axes), (g * xhat).sum(axis=axes)
        weight = _operand(w, sdt) if w is not None else mod.ones(x.shape[1], dtype=a.dtype)
        gi = gw = gb = None
        if mask[0]:
            scale = _channel(invstd * weight, a.ndim)
            if train:
                count = a.size // max(x.shape[1], 1)
                v = scale * (g - _channel(sum_g, a.ndim) / count
                             - xhat * _channel(sum_gx, a.ndim) / count)
            else:
                v = scale * g
            gi = _result(device, tuple(x.shape), x.dtype, v)
        if mask[1]:
            gw = _result(device, (x.shape[1],), w.dtype if w is not None else x.dtype, sum_gx)
        if mask[2]:
            gb = _result(device, (x.shape[1],), w.dtype if w is not None else x.dtype, sum_g)
    return (gi, gw, gb)


def _check_ln(x, ns, w, b):
    if len(ns) < 1:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           f"containing at least one element, but got normalized_shape = {ns}")
    for label, t in (("weight", w), ("bias", b)):
        if t is not None and list(t.shape) != ns:
            raise RuntimeError(f"Expected {label} to be of same shape as normalized_shape, but got "
                               f"{label} of shape {list(t.shape)} and normalized_shape = {ns}")
    if x.dim() < len(ns) or list(x.shape[x.dim() - len(ns):]) != ns:
        star = "[*" + "".join(f", {v}" for v in ns) + "]"
        raise RuntimeError(f"Given normalized_shape={ns}, expected input with shape {star}, but "
                           f"got input of size{list(x.shape)}")
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"layer_norm\" not implemented for '{x.dtype._torch_name}'")


def _native_layer_norm(name, args, kwargs):
    x, ns, w, b = args
    ns = list(ns)
    device = device_of(name, [a for a in args if base._is_tensor(a)])
    _check_ln(x, ns, w, b)
    axes = tuple(range(x.dim() - len(ns), x.dim()))
    sdt = _math_dtype(x.dtype)
    mod = xp()
    with _on_current_stream(device):
        a = _operand(x, sdt)
        mean = a.mean(axis=axes, keepdims=True)
        rstd = 1.0 / mod.sqrt(((a - mean) ** 2).mean(axis=axes, keepdims=True) + kwargs["eps"])
        y = (a - mean) * rstd
        if w is not None:
            y = y * _operand(w, sdt)
        if b is not None:
            y = y + _operand(b, sdt)
        stat = tuple(x.shape[: x.dim() - len(ns)]) + (1,) * len(ns)
        return (_result(device, tuple(x.shape), x.dtype, y),
                _result(device, stat, sdt, mean.reshape(stat)),
                _result(device, stat, sdt, rstd.reshape(stat)))


def _native_layer_norm_backward(name, args, kwargs):
    go, x, ns, mean, rstd, w, b = args
    ns = list(ns)
    device = device_of(name, [a for a in args if base._is_tensor(a)])
    _check_ln(x, ns, w, b)
    if tuple(go.shape) != tuple(x.shape):
        raise RuntimeError(f"layer_norm_backward: expected grad_out of size {list(x.shape)}, "
                           f"but got {list(go.shape)}")
    mask = list(kwargs["output_mask"])
    axes = tuple(range(x.dim() - len(ns), x.dim()))
    lead = tuple(range(x.dim() - len(ns)))
    sdt = _math_dtype(x.dtype)
    with _on_current_stream(device):
        a, g = _operand(x, sdt), _operand(go, sdt)
        stat = tuple(x.shape[: x.dim() - len(ns)]) + (1,) * len(ns)
        mu, rs = _operand(mean, sdt).reshape(stat), _operand(rstd, sdt).reshape(stat)
        xhat = (a - mu) * rs
        gi = gw = gb = None
        if mask[0]:
            gx = g * _operand(w, sdt) if w is not None else g
            v = rs * (gx - gx.mean(axis=axes, keepdims=True)
                      - xhat * (gx * xhat).mean(axis=axes, keepdims=True))
            gi = _result(device, tuple(x.shape), x.dtype, v)
        if mask[1] and w is not None:
            gw = _result(device, tuple(w.shape), w.dtype, (g * xhat).sum(axis=lead))
        if mask[2] and b is not None:
            gb = _result(device, tuple(b.shape), b.dtype, g.sum(axis=lead))
    return (gi, gw, gb)


# ---- embedding -------------------------------------------------------------------------------


def _check_indices(indices, op: str):
    if indices.dtype not in (_C.int64, _C.int32):
        if op == "embedding":
            raise RuntimeError(
                "Expected tensor for argument #1 'indices' to have one of the following scalar "
                f"types: Long, Int; but got ember.{indices.dtype._torch_name}Tensor instead "
                "(while checking arguments for embedding)")
        raise RuntimeError("embedding_backward: expected indices of type Long or Int")


def _in_range(idx, n: int):
    if idx.size and bool(((idx < 0) | (idx >= n)).any()):
        raise IndexError("index out of range in self")


def _embedding(name, args, kwargs):
    w, indices = args
    device = device_of(name, args)
    if w.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    _check_indices(indices, "embedding")
    with _on_current_stream(device):
        idx = view(indices).astype(numpy.int64)
        _in_range(idx, w.shape[0])
        rows = xp().take(view(w), idx.reshape(-1), axis=0)
        shape = tuple(indices.shape) + (w.shape[1],)
        return _result(device, shape, w.dtype, rows.reshape(shape))


def _embedding_dense_backward(name, args, kwargs):
    go, indices = args
    device = device_of(name, args)
    num, pad = int(kwargs["num_weights"]), int(kwargs.get("padding_idx", -1))
    _check_indices(indices, "embedding_backward")
    if num < 0:
        raise RuntimeError("embedding_backward: num_weights must be >= 0")
    if go.dim() != indices.dim() + 1 or tuple(go.shape[:-1]) != tuple(indices.shape):
        raise RuntimeError(f"embedding_backward: expected grad_output of size "
                           f"{list(indices.shape)} + [D], but got {list(go.shape)}")
    if not go.dtype.is_floating_point:
        raise NotImplementedError(
            f"\"embedding_backward\" not implemented for '{go.dtype._torch_name}'")
    mod = xp()
    dim = go.shape[-1]
    cdt = _math_dtype(go.dtype)
    with _on_current_stream(device):
        idx = view(indices).astype(numpy.int64).reshape(-1)
        _in_range(idx, num)
        g = _operand(go, cdt).reshape(-1, dim)
        keep = idx != pad
        if kwargs.get("scale_grad_by_freq", False) and idx.size:  # cupy.bincount refuses empty x
            counts = mod.bincount(idx, minlength=num)
            g = g / counts[idx][:, None].astype(g.dtype)
        g = g * keep[:, None].astype(g.dtype)
        gw = mod.zeros(num * dim, dtype=g.dtype)
        flat = (idx[:, None] * dim + mod.arange(dim)[None, :]).reshape(-1)
        _scatter_add(gw, flat, g.reshape(-1))
        return _result(device, (num, dim), go.dtype, gw.reshape(num, dim))


# ---- activations with a one-pass gradient ------------------------------------------------------


def _hardtanh(name, args, kwargs):
    x = args[0]
    return _core_ops._clamp(name, (x, kwargs.get("min_val", -1.0), kwargs.get("max_val", 1.0)), {})


_ACTIVATION_BACKWARD_SOURCE = r"""
extern "C" __global__ void NAME(const T* __restrict__ g, const T* __restrict__ x,
                                T* __restrict__ out, const double lo, const double hi,
                                const long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    out[i] = (CONDITION) ? T(0) : g[i];
}
"""


def _activation_backward(zero_where, condition: str, bounds):
    """grad_output, or 0 where zero_where(x, lo, hi) holds (in C: `condition`, a template
    over {x}, lo and hi), x being self and (lo, hi) the bounds read from the keywords, as the
    CPU kernels: threshold_backward zeroes x <= threshold, hardtanh_backward x <= min_val or
    x >= max_val, and a NaN x keeps its gradient. On a GPU one kernel writes the result: for
    contiguous operands of one shape (ReLU's backward in a network) a raw kernel over the
    pointers, which skips CuPy's array and argument handling (a third of the op's host time);
    else CuPy's elementwise kernel, which broadcasts."""
    kernels = {}

    def raw_kernel(dtype_name):
        k = kernels.get(dtype_name)
        if k is None:
            import cupy
            name = f"ember_activation_backward_{len(kernels)}"
            source = _ACTIVATION_BACKWARD_SOURCE.replace("NAME", name).replace(
                "CONDITION", condition.format(x="x[i]"))
            t = "float" if dtype_name == "float32" else "double"
            k = kernels[dtype_name] = cupy.RawKernel(f"typedef {t} T;\n" + source, name)
        return k

    def run(name, args, kwargs):
        go, x = args
        device = device_of(name, args)
        if go.dtype != x.dtype:
            raise RuntimeError(f"{name}: expected self and grad_output to have the same dtype, "
                               f"but got self: {x.dtype} and grad_output: {go.dtype}")
        lo, hi = bounds(kwargs)
        mod = xp()
        dtype_name = go.dtype.name
        if mod is not numpy and dtype_name in ("float32", "float64") and \
                go.shape == x.shape and go.is_contiguous() and x.is_contiguous():
            out = empty(tuple(go.shape), go.dtype, device)
            n = out.numel()
            if n:
                blocks = min(-(-n // 256), 4096)
                with _on_current_stream(device):
                    raw_kernel(dtype_name)((blocks,), (256,), (
                        numpy.uint64(go.data_ptr()), numpy.uint64(x.data_ptr()),
                        numpy.uint64(out.data_ptr()), numpy.float64(lo), numpy.float64(hi),
                        numpy.int64(n)))
            return out
        with _on_current_stream(device):
            g, a = _operand(go, go.dtype), _operand(x, x.dtype)
            if mod is numpy:
                v = mod.where(zero_where(a, lo, hi), mod.zeros((), dtype=g.dtype), g)
                return _result(device, tuple(v.shape), go.dtype, v)
            kernel = kernels.get("k")
            if kernel is None:
                kernel = kernels["k"] = mod.ElementwiseKernel(
                    "T g, T x, float64 lo, float64 hi", "T out",
                    f"out = ({condition.format(x='x')}) ? T(0) : g", f"ember_{name}")
            shape = base._broadcast_shapes(tuple(go.shape), tuple(x.shape))
            out = empty(shape, go.dtype, device)
            if out.numel():
                kernel(g, a, lo, hi, view(out))
            return out

    return run


# ---- the table -------------------------------------------------------------------------------

NN_OPS = {
    "convolution": _convolution,
    "convolution_backward": _convolution_backward,
    "nll_loss": _nll_loss,
    "nll_loss_nd": _nll_loss,
    "nll_loss2d": _nll_loss,
    "nll_loss_backward": _nll_loss_backward,
    "native_batch_norm": _native_batch_norm,
    "native_batch_norm_backward": _native_batch_norm_backward,
    "native_layer_norm": _native_layer_norm,
    "native_layer_norm_backward": _native_layer_norm_backward,
    "embedding": _embedding,
    "embedding_dense_backward": _embedding_dense_backward,
    "hardtanh": _hardtanh,
    "hardtanh_": _core_ops._inplace(_hardtanh),
    "threshold_backward": _activation_backward(
        lambda x, lo, hi: x <= lo, "{x} <= lo", lambda kw: (kw["threshold"], kw["threshold"])),
    "hardtanh_backward": _activation_backward(
        lambda x, lo, hi: (x <= lo) | (x >= hi), "{x} <= lo || {x} >= hi",
        lambda kw: (kw["min_val"], kw["max_val"])),
}
for _k in (1, 2, 3):
    NN_OPS[f"max_pool{_k}d_with_indices"] = _max_pool(_k)
    NN_OPS[f"max_pool{_k}d_with_indices_backward"] = _max_pool_backward(_k)
    NN_OPS[f"avg_pool{_k}d"] = _avg_pool(_k)
    NN_OPS[f"avg_pool{_k}d_backward"] = _avg_pool_backward(_k)
    NN_OPS[f"adaptive_avg_pool{_k}d"] = _adaptive_avg(_k)
    NN_OPS[f"adaptive_avg_pool{_k}d_backward"] = _adaptive_avg_backward(_k)
    NN_OPS[f"adaptive_max_pool{_k}d"] = _adaptive_max(_k)
    NN_OPS[f"adaptive_max_pool{_k}d_backward"] = _max_pool_backward(_k)
