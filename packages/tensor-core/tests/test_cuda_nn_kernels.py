"""The nn kernels (convolution, pooling, nll_loss, batch/layer norm, embedding and their backward
kernels) on CUDA tensors, against the same kernels on the CPU (themselves checked against PyTorch
and finite differences elsewhere). Runs on ember.cuda's simulated devices where there is no GPU
(see test_cuda_tensors.py), and on the GPU through CuPy where there is one.
"""


import numpy as np
import pytest

import ember
from ember.cuda._testing import GPU_WITHOUT_CUPY, devices
from ember.cuda._testing import assert_same_error as same_error

pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(256 << 20):
        yield


def rand(*shape, dtype="float64", seed=0):
    return ember.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def on_gpu(x):
    return x.cuda() if isinstance(x, ember.Tensor) else x


def same(gpu, cpu, tol=1e-10):
    """A device result (tensor, tuple of tensors or None) equals the CPU's."""
    if isinstance(cpu, (tuple, list)):
        assert isinstance(gpu, (tuple, list)) and len(gpu) == len(cpu)
        for g, c in zip(gpu, cpu):
            same(g, c, tol)
        return
    if cpu is None:
        assert gpu is None
        return
    assert gpu.is_cuda, "the result must stay on the device"
    assert gpu.dtype == cpu.dtype and tuple(gpu.shape) == tuple(cpu.shape)
    np.testing.assert_allclose(gpu.cpu().numpy().astype(np.float64),
                               cpu.numpy().astype(np.float64), rtol=tol, atol=tol)


@pytest.fixture(params=["kernels", "cudnn"])
def path(request):
    """Convolution and batch norm run on ember's own CUDA kernels and, on a GPU with cuDNN, on
    cuDNN too, TF32 off: the comparison with the CPU is in full precision."""
    from ember.cuda import _cudnn

    if request.param == "cudnn" and not _cudnn.available():
        pytest.skip(f"cuDNN: {_cudnn.unavailable_reason()}")
    with ember.backends.cudnn.flags(enabled=request.param == "cudnn", allow_tf32=False):
        yield request.param


def both(fn, *args, **kwargs):
    """fn on the CPU arguments and on their CUDA copies: (cpu result, device result)."""
    cpu = fn(*args, **kwargs)
    gpu = fn(*(on_gpu(a) for a in args), **{k: on_gpu(v) for k, v in kwargs.items()})
    return cpu, gpu


# ---- convolution -------------------------------------------------------------------------------

CONV_CASES = [
    # (spatial, stride, padding, dilation, groups, transposed, output_padding)
    ((9,), 1, 0, 1, 1, False, 0),
    ((10,), 2, 1, 2, 2, False, 0),
    ((7, 8), 1, 1, 1, 1, False, 0),
    ((9, 7), (2, 1), (0, 2), (1, 2), 2, False, 0),
    ((8, 8), 3, 2, 1, 2, False, 0),
    ((5, 6, 4), (1, 2, 1), 1, (2, 1, 1), 1, False, 0),
    ((6,), 2, 1, 1, 1, True, 1),
    ((5, 4), (2, 3), (1, 0), (1, 2), 2, True, (1, 2)),
    ((4, 5), 1, 0, 1, 1, True, 0),
    ((3, 4, 3), 2, 1, 1, 2, True, 1),
]


def conv_setup(spatial, groups, transposed, batch=2, cin=4, cout=6, kernel=3, seed=0):
    k = len(spatial)
    x = rand(batch, cin, *spatial, seed=seed)
    wshape = (cin, cout // groups) if transposed else (cout, cin // groups)
    w = rand(*wshape, *([kernel] * k), seed=seed + 1)
    b = rand(cout if not transposed else cout, seed=seed + 2)
    return k, x, w, b


def expand(v, k):
    return [v] * k if isinstance(v, int) else list(v)


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_convolution_and_its_backward_match_the_cpu(case, with_bias, path):
    spatial, stride, padding, dilation, groups, transposed, opad = case
    k, x, w, b = conv_setup(spatial, groups, transposed)
    kw = dict(stride=expand(stride, k), padding=expand(padding, k), dilation=expand(dilation, k),
              transposed=transposed, output_padding=expand(opad, k), groups=groups)
    cpu, gpu = both(ember.convolution, x, w, b if with_bias else None, **kw)
    same(gpu, cpu)
    go = rand(*cpu.shape, seed=5)
    for mask in ([True, True, True], [True, False, False], [False, True, with_bias]):
        cpu_g, gpu_g = both(ember.convolution_backward, go, x, w,
                            bias_sizes=list(b.shape) if with_bias else None, output_mask=mask, **kw)
        same(gpu_g, cpu_g)


@pytest.mark.parametrize("case", CONV_CASES[1::2])
def test_convolution_in_batch_chunks_matches_the_cpu(case, monkeypatch):
    # the window copy is made a few samples at a time, to bound its memory: with a budget below
    # one sample's windows every sample is its own chunk
    from ember.cuda import _nn_ops

    monkeypatch.setattr(_nn_ops, "WORKSPACE_BYTES", 1)
    monkeypatch.setattr(ember.backends.cudnn, "enabled", False)  # ember's im2col kernels
    spatial, stride, padding, dilation, groups, transposed, opad = case
    k, x, w, b = conv_setup(spatial, groups, transposed, batch=3)
    kw = dict(stride=expand(stride, k), padding=expand(padding, k), dilation=expand(dilation, k),
              transposed=transposed, output_padding=expand(opad, k), groups=groups)
    cpu, gpu = both(ember.convolution, x, w, b, **kw)
    same(gpu, cpu)
    go = rand(*cpu.shape, seed=5)
    cpu_g, gpu_g = both(ember.convolution_backward, go, x, w, bias_sizes=list(b.shape),
                        output_mask=[True, True, True], **kw)
    same(gpu_g, cpu_g)


def test_convolution_with_empty_sums_is_the_bias(path):
    kw = dict(stride=[1], padding=[0], dilation=[1], transposed=False, output_padding=[0],
              groups=1)
    x, w, b = rand(2, 0, 5), rand(3, 0, 2), rand(3)
    same(*reversed(both(ember.convolution, x, w, b, **kw)))
    go = rand(2, 3, 4)
    cpu_g, gpu_g = both(ember.convolution_backward, go, x, w, bias_sizes=[3],
                        output_mask=[True, True, True], **kw)
    same(gpu_g, cpu_g)


def test_unbatched_and_float32_and_float16_convolutions(path):
    x, w = rand(3, 11, 9), rand(5, 3, 3, 2)
    kw = dict(stride=[2, 1], padding=[1, 0], dilation=[1, 1], transposed=False,
              output_padding=[0, 0], groups=1)
    same(*reversed(both(ember.convolution, x, w, None, **kw)))
    for dtype, tol in (("float32", 1e-5), ("float16", 2e-2)):
        xs, ws = x.to(getattr(ember, dtype)), w.to(getattr(ember, dtype))
        cpu, gpu = both(ember.convolution, xs, ws, None, **kw)
        same(gpu, cpu, tol)


def test_convolution_functional_forms_and_padding_same(path):
    x, w, b = rand(2, 4, 9, 8, dtype="float32"), rand(6, 2, 3, 2, dtype="float32"), rand(6, dtype="float32")
    cpu, gpu = both(ember.conv2d, x, w, b, padding="same", dilation=2, groups=2)
    same(gpu, cpu, 1e-5)
    wt = rand(4, 3, 3, 3, dtype="float32")
    cpu, gpu = both(ember.conv_transpose2d, x, wt, None, stride=2, padding=1, output_padding=1)
    same(gpu, cpu, 1e-5)


@pytest.mark.parametrize("bad", [
    dict(x=(2, 5, 8, 8), w=(6, 4, 3, 3)),  # channel mismatch
    dict(x=(2, 4, 2, 2), w=(6, 4, 3, 3)),  # kernel larger than the padded input
    dict(x=(2, 4, 8), w=(6, 4, 3, 3)),  # wrong rank
    dict(x=(2, 4, 8, 8), w=(6, 4, 3, 3), x_dtype="float32"),  # dtype mismatch
])
def test_convolution_errors_are_the_cpus(bad):
    x = rand(*bad["x"], dtype=bad.get("x_dtype", "float64"))
    w = rand(*bad["w"])
    same_error(ember.convolution, x, w, None, stride=[1, 1], padding=[0, 0], dilation=[1, 1],
               transposed=False, output_padding=[0, 0], groups=1)


def test_convolution_refuses_mixed_devices():
    x, w = rand(1, 2, 5, 5).cuda(), rand(3, 2, 3, 3)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.conv2d(x, w)


# ---- pooling -----------------------------------------------------------------------------------


def pool_input(*shape, seed=0):
    """Values with ties, a NaN and a plane of -inf, to pin down which index wins."""
    a = np.round(np.random.default_rng(seed).standard_normal(shape) * 2) / 2
    flat = a.reshape(-1, *shape[-1:])
    flat[0, 1] = np.nan
    a.reshape(shape[0], -1)[-1] = -np.inf
    return ember.from_numpy(a)


MAX_CASES = [  # (spatial, kernel, stride, padding, dilation, ceil_mode)
    ((11,), [3], [2], [1], [1], False),
    ((10,), [2], [3], [0], [2], True),
    ((7, 9), [3, 2], [2, 2], [1, 0], [1, 1], True),
    ((8, 8), [2, 2], [2, 2], [0, 0], [1, 1], False),
    ((6, 7), [3, 3], [1, 2], [1, 1], [2, 1], False),
    ((5, 6, 5), [2, 3, 2], [2, 1, 2], [1, 1, 0], [1, 1, 1], True),
]


@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool_values_indices_and_gradient_match_the_cpu(case):
    spatial, kernel, stride, padding, dilation, ceil_mode = case
    k = len(spatial)
    x = pool_input(3, 2, *spatial)
    fwd = getattr(ember, f"max_pool{k}d_with_indices")
    kw = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation,
              ceil_mode=ceil_mode)
    (cv, ci), (gv, gi) = both(fwd, x, **kw)
    same(gv, cv)
    np.testing.assert_array_equal(gi.cpu().numpy(), ci.numpy())
    go = rand(*cv.shape, seed=3)
    bwd = getattr(ember, f"max_pool{k}d_with_indices_backward")
    cpu = bwd(go, x, indices=ci, **kw)
    gpu = bwd(go.cuda(), x.cuda(), indices=gi, **kw)
    same(gpu, cpu)


def test_max_pool_unbatched_and_integer_input_and_errors():
    x = pool_input(2, 6, 7)
    cpu, gpu = both(ember.max_pool2d_with_indices, x, 2)
    same(gpu[0], cpu[0])
    xi = ember.from_numpy(np.random.default_rng(1).integers(-5, 5, (2, 3, 6, 6)))
    cpu, gpu = both(ember.max_pool2d_with_indices, xi, 3, stride=2)
    np.testing.assert_array_equal(gpu[0].cpu().numpy(), cpu[0].numpy())
    np.testing.assert_array_equal(gpu[1].cpu().numpy(), cpu[1].numpy())
    same_error(ember.max_pool2d, rand(1, 1, 4, 4), 3, padding=2)
    same_error(ember.max_pool2d, rand(4, 4), 2)


AVG_CASES = [  # (spatial, kernel, stride, padding, ceil_mode, count_include_pad, divisor)
    ((11,), [3], [2], [1], False, True, None),
    ((10,), [4], [3], [2], True, False, None),
    ((7, 9), [3, 2], [2, 2], [1, 1], True, True, None),
    ((7, 9), [3, 2], [2, 2], [1, 1], True, False, None),
    ((8, 6), [2, 3], [1, 2], [0, 1], False, True, 5),
    ((5, 6, 5), [2, 3, 2], [2, 1, 2], [1, 1, 0], True, False, None),
]


@pytest.mark.parametrize("case", AVG_CASES)
def test_avg_pool_and_its_backward_match_the_cpu(case):
    spatial, kernel, stride, padding, ceil_mode, cip, dov = case
    k = len(spatial)
    x = rand(2, 3, *spatial)
    kw = dict(kernel_size=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode,
              count_include_pad=cip)
    if k > 1:  # avg_pool1d has no divisor_override, as torch's
        kw["divisor_override"] = dov
    cpu, gpu = both(getattr(ember, f"avg_pool{k}d"), x, **kw)
    same(gpu, cpu)
    go = rand(*cpu.shape, seed=4)
    cpu, gpu = both(getattr(ember, f"avg_pool{k}d_backward"), go, x, **kw)
    same(gpu, cpu)


@pytest.mark.parametrize("spatial,out", [((10,), [3]), ((7, 9), [3, 4]), ((8, 8), [1, 1]),
                                         ((5, 7, 6), [2, 3, 4]), ((6, 5), [6, 5])])
def test_adaptive_pools_and_their_backward_match_the_cpu(spatial, out):
    k = len(spatial)
    x = pool_input(2, 3, *spatial)
    xf = rand(2, 3, *spatial)
    cpu, gpu = both(getattr(ember, f"adaptive_avg_pool{k}d"), xf, out)
    same(gpu, cpu)
    go = rand(*cpu.shape, seed=2)
    cpu, gpu = both(getattr(ember, f"adaptive_avg_pool{k}d_backward"), go, xf)
    same(gpu, cpu)
    (cv, ci), (gv, gi) = both(getattr(ember, f"adaptive_max_pool{k}d"), x, out)
    same(gv, cv)
    np.testing.assert_array_equal(gi.cpu().numpy(), ci.numpy())
    cpu = getattr(ember, f"adaptive_max_pool{k}d_backward")(go, x, indices=ci)
    gpu = getattr(ember, f"adaptive_max_pool{k}d_backward")(go.cuda(), x.cuda(), indices=gi)
    same(gpu, cpu)


# ---- nll_loss ------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5,), (6, 5), (3, 5, 4), (2, 5, 3, 2)])
@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_and_its_backward_match_the_cpu(shape, reduction, weighted):
    x = rand(*shape)
    c = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    t = np.random.default_rng(1).integers(0, c, tshape)
    if t.ndim:
        t.reshape(-1)[0] = -100  # ignored
    t = ember.from_numpy(np.asarray(t, dtype=np.int64))
    w = rand(c, seed=3).abs() if weighted else None
    kw = dict(reduction=reduction, ignore_index=-100)
    cpu, gpu = both(ember.nll_loss, x, t, w, **kw)
    same(gpu, cpu)
    go = rand(*cpu.shape, seed=4)
    cpu, gpu = both(ember.nll_loss_backward, go, x, t, w, **kw)
    same(gpu, cpu)


def test_nll_loss_errors_are_the_cpus():
    x = rand(4, 3)
    same_error(ember.nll_loss, x, ember.tensor([0, 1, 3, 2]))  # target out of bounds
    same_error(ember.nll_loss, x, ember.tensor([0, 1, 2]))  # size mismatch
    same_error(ember.nll_loss, x, ember.tensor([0.0, 1, 2, 1]))  # float target
    same_error(ember.nll_loss, x, ember.tensor([0, 1, 2, 1]), rand(4))  # weight size


# ---- batch norm, layer norm ---------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_and_its_backward_match_the_cpu(shape, training, path):
    x, w, b = rand(*shape), rand(shape[1], seed=1), rand(shape[1], seed=2)
    rm, rv = rand(shape[1], seed=3), rand(shape[1], seed=4).abs() + 0.5
    rm_g, rv_g = rm.cuda(), rv.cuda()
    cpu = ember.native_batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5)
    gpu = ember.native_batch_norm(x.cuda(), w.cuda(), b.cuda(), rm_g, rv_g, training, 0.1, 1e-5)
    same(gpu, cpu)
    same(rm_g, rm)
    same(rv_g, rv)
    go = rand(*shape, seed=5)
    sm, si = (cpu[1], cpu[2]) if training else (None, None)
    for mask in ([True, True, True], [True, False, False]):
        c = ember.native_batch_norm_backward(go, x, w, rm, rv, sm, si, training, 1e-5, mask)
        g = ember.native_batch_norm_backward(go.cuda(), x.cuda(), w.cuda(), rm.cuda(), rv.cuda(),
                                             on_gpu(sm), on_gpu(si), training, 1e-5, mask)
        same(g, c)


def test_batch_norm_without_affine_or_running_stats_and_its_errors(path):
    x = rand(3, 2, 4)
    cpu, gpu = both(ember.native_batch_norm, x, None, None, None, None, True, 0.1, 1e-5)
    same(gpu, cpu)
    same_error(ember.native_batch_norm, x, rand(3), None, None, None, True, 0.1, 1e-5)
    same_error(ember.native_batch_norm, x, None, None, None, None, False, 0.1, 1e-5)


@pytest.mark.parametrize("shape,ns", [((4, 6), [6]), ((2, 3, 4), [3, 4]), ((2, 3, 5), [5])])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_and_its_backward_match_the_cpu(shape, ns, affine):
    x = rand(*shape)
    w, b = (rand(*ns, seed=1), rand(*ns, seed=2)) if affine else (None, None)
    cpu, gpu = both(ember.native_layer_norm, x, ns, w, b, 1e-5)
    same(gpu, cpu)
    go = rand(*shape, seed=3)
    c = ember.native_layer_norm_backward(go, x, ns, cpu[1], cpu[2], w, b, [True, affine, affine])
    g = ember.native_layer_norm_backward(go.cuda(), x.cuda(), ns, gpu[1], gpu[2], on_gpu(w),
                                         on_gpu(b), [True, affine, affine])
    same(g, c)
    same_error(ember.native_layer_norm, x, [7], None, None, 1e-5)


# ---- embedding ---------------------------------------------------------------------------------


@pytest.mark.parametrize("padding_idx,scale", [(-1, False), (2, False), (-1, True), (3, True)])
def test_embedding_and_its_backward_match_the_cpu(padding_idx, scale):
    w = rand(7, 4)
    idx = ember.tensor([[0, 2, 3], [3, 3, 6]])
    cpu, gpu = both(ember.embedding, w, idx)
    same(gpu, cpu)
    go = rand(2, 3, 4, seed=2)
    for ind in (idx, idx.to(ember.int32)):
        cpu, gpu = both(ember.embedding_dense_backward, go, ind, num_weights=7,
                        padding_idx=padding_idx, scale_grad_by_freq=scale)
        same(gpu, cpu)
    # no indices at all (cupy.bincount refuses an empty input)
    cpu, gpu = both(ember.embedding_dense_backward, rand(0, 4), ember.zeros(0, dtype=ember.int64),
                    num_weights=7, padding_idx=padding_idx, scale_grad_by_freq=scale)
    same(gpu, cpu)


def test_embedding_errors_are_the_cpus():
    same_error(ember.embedding, rand(5, 3), ember.tensor([1, 5]))
    same_error(ember.embedding, rand(5, 3), ember.tensor([1.0, 2.0]))
    same_error(ember.embedding_dense_backward, rand(2, 3), ember.tensor([1, 7]), num_weights=5,
               padding_idx=-1, scale_grad_by_freq=False)


# ---- softmax backward kernels (reached from autograd) -------------------------------------------


@pytest.mark.parametrize("kernel", ["_softmax_backward_data", "_log_softmax_backward_data"])
def test_softmax_backward_kernels_match_the_cpu(kernel):
    go, out = rand(3, 5), rand(3, 5, seed=1)
    for dim in (0, 1, -1):
        cpu, gpu = both(getattr(ember._C, kernel), go, out, dim)
        same(gpu, cpu)


# ---- activation gradients ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_threshold_and_hardtanh_backward_match_the_cpu_at_the_edges(dtype):
    # the edges: x on a bound (zeroed), a NaN x (keeps its gradient), non-finite gradients
    x = ember.tensor([-2.0, -1.0, 0.0, 0.5, 1.0, 3.0, float("nan"), 0.0], dtype=getattr(ember, dtype))
    go = ember.tensor([1.0, 2.0, 3.0, float("inf"), -4.0, float("nan"), 5.0, -0.0],
                      dtype=x.dtype)
    for fn, args in ((ember._C.threshold_backward, (0.0,)),
                     (ember._C.threshold_backward, (-1.0,)),
                     (ember._C.hardtanh_backward, (-1.0, 1.0))):
        cpu = fn(go, x, *args)
        gpu = fn(go.cuda(), x.cuda(), *args)
        assert gpu.is_cuda
        np.testing.assert_array_equal(gpu.cpu().numpy(), cpu.numpy())
        # a strided (transposed) operand
        x2, g2 = rand(3, 4, dtype=dtype), rand(4, 3, dtype=dtype, seed=1).t()
        np.testing.assert_array_equal(fn(g2.cuda(), x2.cuda(), *args).cpu().numpy(),
                                      fn(g2, x2, *args).numpy())
    # more elements than the launch's threads (the kernel loops)
    x3, g3 = rand(1 << 21, 3, dtype=dtype), rand(1 << 21, 3, dtype=dtype, seed=2)
    np.testing.assert_array_equal(
        ember._C.threshold_backward(g3.cuda(), x3.cuda(), 0.25).cpu().numpy(),
        ember._C.threshold_backward(g3, x3, 0.25).numpy())
