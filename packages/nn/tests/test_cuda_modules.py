"""nn modules, functionals and optimizers on CUDA tensors, over ember.cuda's simulated devices.

The CPU is the oracle: a module built on the CPU with a fixed seed is deep-copied to CUDA, both
run the same input, and outputs, gradients and buffers must agree. Modules built with
``device="cuda"`` must have every parameter and buffer there, and tensors that a forward creates
(masks, initial states, indices) must land on the input's device, or the op that mixes them
raises PyTorch's "Expected all tensors to be on the same device".

A test whose module needs a core op that has no CUDA kernel yet is an xfail naming that op
(:func:`needs`); it passes by itself once the op exists.
"""

import contextlib
import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import cuda
from ember.cuda._testing import GPU_WITHOUT_CUPY, REAL_GPU, devices

# On a machine with a GPU the same tests run on it, through CuPy.
pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")
MiB = 1 << 20
CUDA0 = ember.device("cuda", 0)


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(512 * MiB, 2):
        yield


@contextlib.contextmanager
def needs(*ops):
    """xfail, naming the op, when one of `ops` (core ops this test runs on CUDA) has no CUDA
    implementation yet; any other error fails the test."""
    try:
        yield
    except NotImplementedError as e:
        missing = [op for op in ops if f"'{op}' has no CUDA implementation" in str(e)]
        if not missing:
            raise
        pytest.xfail(f"core op {missing[0]!r} has no CUDA implementation yet")


def host(t):
    return t.detach().cpu().numpy()


def close(got, want, rtol=1e-5, atol=1e-6):
    assert got.device == CUDA0, f"result on {got.device}"
    np.testing.assert_allclose(host(got), host(want), rtol=rtol, atol=atol)


def on_cuda(module):
    return copy.deepcopy(module).to("cuda")


def assert_all_on(module, device=CUDA0):
    for name, t in list(module.named_parameters()) + list(module.named_buffers()):
        assert t.device == device, f"{name} is on {t.device}"


def check_parity(module, *inputs, rtol=1e-5, atol=1e-6, grad=True):
    """module (CPU) and its CUDA copy on the same inputs: outputs, then the gradients of the
    inputs and parameters for the same output gradient, then the buffers."""
    gpu = on_cuda(module)
    assert_all_on(gpu)
    cpu_in = [x.detach().requires_grad_(grad and x.dtype.is_floating_point) for x in inputs]
    gpu_in = [x.detach().cuda().requires_grad_(grad and x.dtype.is_floating_point)
              for x in inputs]
    want, got = module(*cpu_in), gpu(*gpu_in)
    want = want[0] if isinstance(want, tuple) else want
    got = got[0] if isinstance(got, tuple) else got
    close(got, want, rtol, atol)
    if grad:
        g = ember.randn(*want.shape, dtype=want.dtype)
        want.backward(g)
        got.backward(g.cuda())
        for x, y in zip(gpu_in, cpu_in):
            if y.grad is not None:
                close(x.grad, y.grad, rtol, atol)
        for (name, p), q in zip(gpu.named_parameters(), module.parameters()):
            assert (p.grad is None) == (q.grad is None), name
            if q.grad is not None:
                close(p.grad, q.grad, rtol, atol)
    for b, c in zip(gpu.buffers(), module.buffers()):
        close(b, c)
    return got


# ---- construction on the device -------------------------------------------------------------

CONSTRUCTORS = {
    "Linear": lambda **kw: nn.Linear(3, 4, **kw),
    "Bilinear": lambda **kw: nn.Bilinear(3, 2, 4, **kw),
    "Conv2d": lambda **kw: nn.Conv2d(2, 4, 3, **kw),
    "ConvTranspose1d": lambda **kw: nn.ConvTranspose1d(2, 4, 3, **kw),
    "BatchNorm1d": lambda **kw: nn.BatchNorm1d(3, **kw),
    "InstanceNorm2d": lambda **kw: nn.InstanceNorm2d(3, affine=True, track_running_stats=True,
                                                     **kw),
    "LayerNorm": lambda **kw: nn.LayerNorm(4, **kw),
    "GroupNorm": lambda **kw: nn.GroupNorm(2, 4, **kw),
    "RMSNorm": lambda **kw: nn.RMSNorm(4, **kw),
    "PReLU": lambda **kw: nn.PReLU(3, **kw),
    "Embedding": lambda **kw: nn.Embedding(10, 3, padding_idx=0, **kw),
    "EmbeddingBag": lambda **kw: nn.EmbeddingBag(10, 3, **kw),
    "RNN": lambda **kw: nn.RNN(3, 4, num_layers=2, bidirectional=True, **kw),
    "LSTM": lambda **kw: nn.LSTM(3, 4, proj_size=2, **kw),
    "GRU": lambda **kw: nn.GRU(3, 4, **kw),
    "RNNCell": lambda **kw: nn.RNNCell(3, 4, **kw),
    "LSTMCell": lambda **kw: nn.LSTMCell(3, 4, **kw),
    "GRUCell": lambda **kw: nn.GRUCell(3, 4, **kw),
    "MultiheadAttention": lambda **kw: nn.MultiheadAttention(4, 2, add_bias_kv=True, **kw),
    "MultiheadAttention-kdim": lambda **kw: nn.MultiheadAttention(4, 2, kdim=3, vdim=5, **kw),
    "TransformerEncoderLayer": lambda **kw: nn.TransformerEncoderLayer(4, 2, 8, **kw),
    "TransformerDecoderLayer": lambda **kw: nn.TransformerDecoderLayer(4, 2, 8, **kw),
    "Transformer": lambda **kw: nn.Transformer(4, 2, 1, 1, 8, **kw),
}


@pytest.mark.parametrize("name", list(CONSTRUCTORS))
def test_factory_kwargs_put_every_parameter_and_buffer_on_the_device(name):
    m = CONSTRUCTORS[name](device="cuda", dtype=ember.float64)
    assert list(m.parameters())
    assert_all_on(m)
    for pname, t in list(m.named_parameters()) + list(m.named_buffers()):
        if t.dtype.is_floating_point:
            assert t.dtype == ember.float64, pname
    assert_all_on(CONSTRUCTORS[name](), ember.device("cpu"))


def test_batch_norm_counter_follows_the_device():
    bn = nn.BatchNorm2d(3, device="cuda")
    assert bn.num_batches_tracked.device == CUDA0
    assert bn.num_batches_tracked.dtype == ember.int64


def test_a_cuda_module_refuses_a_cpu_input():
    m = nn.Linear(3, 4, device="cuda")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        m(ember.randn(2, 3))


def test_load_state_dict_into_a_cuda_module_from_either_device():
    """copy_ into parameters (they require grad) outside autograd, from CUDA and CPU tensors;
    the CPU module loads a CUDA state dict the same way."""
    src = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).cuda()
    src[1].running_mean.fill_(0.5)
    for state in (src.state_dict(), {k: v.cpu() for k, v in src.state_dict().items()}):
        dst = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).cuda()
        dst.load_state_dict(state)
        for (k, a), b in zip(dst.state_dict().items(), src.state_dict().values()):
            assert a.device == CUDA0, k
            np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    cpu = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    cpu.load_state_dict(src.state_dict())
    np.testing.assert_array_equal(cpu[0].weight.detach().numpy(),
                                  src[0].weight.detach().cpu().numpy())


def test_initialisers_that_copy_into_a_cuda_parameter():
    w = nn.Parameter(ember.empty(4, 6, device="cuda"))
    nn.init.orthogonal_(w)
    q = w.detach().cpu().numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-5)
    nn.init.eye_(w)
    np.testing.assert_array_equal(w.detach().cpu().numpy(), np.eye(4, 6))
    with ember.no_grad():
        w.copy_(ember.arange(6, dtype=ember.float64))  # broadcast and cast from the CPU
    np.testing.assert_array_equal(w.detach().cpu().numpy(), np.tile(np.arange(6.0), (4, 1)))


# ---- modules: the CUDA copy computes what the CPU module computes -------------------------------


def test_linear():
    check_parity(nn.Linear(5, 3), ember.randn(4, 5))


def test_bilinear():
    check_parity(nn.Bilinear(3, 2, 4), ember.randn(5, 3), ember.randn(5, 2))


def test_conv2d():
    check_parity(nn.Conv2d(3, 4, 3, stride=2, padding=1), ember.randn(2, 3, 7, 6), rtol=1e-4,
                 atol=1e-5)


def test_conv2d_grouped_dilated():
    check_parity(nn.Conv2d(4, 6, 3, padding=2, dilation=2, groups=2), ember.randn(2, 4, 6, 5),
                 rtol=1e-4, atol=1e-5)


def test_conv_transpose2d():
    check_parity(nn.ConvTranspose2d(3, 2, 3, stride=2), ember.randn(2, 3, 4, 4), rtol=1e-4,
                 atol=1e-5)


def test_conv2d_reflect_padding():
    with needs("flip"):
        check_parity(nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"),
                     ember.randn(1, 2, 5, 5), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm2d_training_updates_the_running_stats_as_on_the_cpu(momentum):
    bn = nn.BatchNorm2d(3, momentum=momentum)
    gpu = on_cuda(bn)
    for _ in range(3):
        x = ember.randn(4, 3, 5, 5) * 2 + 1
        close(gpu(x.cuda()), bn(x), rtol=1e-5, atol=1e-5)
    for name in ("running_mean", "running_var"):
        close(getattr(gpu, name), getattr(bn, name), rtol=1e-5, atol=1e-6)
    assert gpu.num_batches_tracked.device == CUDA0
    assert int(gpu.num_batches_tracked) == int(bn.num_batches_tracked) == 3


def test_batch_norm2d_gradients():
    check_parity(nn.BatchNorm2d(3), ember.randn(4, 3, 5, 5), rtol=1e-4, atol=1e-5)


def test_batch_norm2d_eval():
    bn = nn.BatchNorm2d(3)
    bn(ember.randn(4, 3, 5, 5) * 3 - 1)  # some running stats
    bn.eval()
    check_parity(bn, ember.randn(2, 3, 4, 4), rtol=1e-4, atol=1e-5)


def test_batch_norm1d_without_running_stats():
    check_parity(nn.BatchNorm1d(3, track_running_stats=False), ember.randn(6, 3), rtol=1e-4,
                 atol=1e-5)


def test_layer_norm():
    check_parity(nn.LayerNorm((4, 5)), ember.randn(3, 4, 5), rtol=1e-4, atol=1e-5)


def test_group_and_rms_norm():
    check_parity(nn.GroupNorm(2, 4), ember.randn(3, 4, 5), rtol=1e-4, atol=1e-5)
    check_parity(nn.RMSNorm(5), ember.randn(3, 4, 5), rtol=1e-4, atol=1e-5)


def test_embedding():
    emb = nn.Embedding(10, 4, padding_idx=0)
    idx = ember.tensor([[1, 0, 3], [9, 3, 3]])
    got = check_parity(emb, idx)
    assert got.shape == (2, 3, 4)


def test_embedding_max_norm_renormalises_the_device_weight():
    emb = nn.Embedding(6, 3, max_norm=1.0)
    gpu = on_cuda(emb)
    idx = ember.tensor([0, 2, 2, 5])
    close(gpu(idx.cuda()), emb(idx), rtol=1e-5, atol=1e-6)
    close(gpu.weight, emb.weight, rtol=1e-5, atol=1e-6)


def test_embedding_bag():
    bag = nn.EmbeddingBag(10, 3, mode="mean")
    check_parity(bag, ember.tensor([[1, 2, 4], [4, 3, 9]]))
    gpu = on_cuda(bag)
    idx, offsets = ember.tensor([1, 2, 4, 5, 4, 3]), ember.tensor([0, 2, 2])
    close(gpu(idx.cuda(), offsets.cuda()), bag(idx, offsets))
    mx = nn.EmbeddingBag(10, 3, mode="max")
    close(on_cuda(mx)(idx.cuda(), offsets.cuda()), mx(idx, offsets))


def test_prelu_and_activations():
    check_parity(nn.PReLU(3), ember.randn(2, 3, 4))
    for m in (nn.GELU(), nn.SiLU(), nn.Softmax(-1), nn.LogSoftmax(-1), nn.Tanh()):
        check_parity(m, ember.randn(3, 5), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", [nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.AlphaDropout])
def test_dropout_masks_are_made_on_the_device(cls):
    p = 0.3
    x = ember.ones(64, 8, 32, device="cuda")
    m = cls(p)
    y = m(x)
    assert y.device == CUDA0
    if cls is not nn.AlphaDropout:
        dropped = float((y == 0).to(ember.float32).mean())
        assert abs(dropped - p) < 0.05
        kept = y[y != 0]
        np.testing.assert_allclose(host(kept), 1 / (1 - p), rtol=1e-6)
    m.eval()
    assert m(x) is x


def test_dropout_gradient_is_the_mask():
    x = ember.ones(200, 10, device="cuda", requires_grad=True)
    y = F.dropout(x, 0.5, training=True)
    y.sum().backward()
    assert x.grad.device == CUDA0
    np.testing.assert_array_equal(host(x.grad), host(y))


def test_rrelu_and_gumbel_softmax_draw_on_the_device():
    x = ember.randn(4, 6, device="cuda")
    slope = F.rrelu(x, training=True) / x
    assert slope.device == CUDA0
    neg = host(slope)[host(x) < 0]
    assert ((neg >= 1 / 8 - 1e-6) & (neg <= 1 / 3 + 1e-6)).all()
    soft = F.gumbel_softmax(x, tau=0.5)
    assert soft.device == CUDA0
    np.testing.assert_allclose(host(soft.sum(-1)), 1.0, rtol=1e-5)


def _argmax_dim_works():
    try:
        return tuple(ember.zeros(4, 6, device="cuda").argmax(-1, keepdim=True).shape) == (4, 1)
    except ValueError:
        return False


def test_gumbel_softmax_hard():
    if not _argmax_dim_works():
        pytest.xfail("core: argmax(dim) on CUDA shapes its result as its one-element stand-in")
    hard = F.gumbel_softmax(ember.randn(4, 6, device="cuda"), hard=True)
    assert hard.device == CUDA0
    np.testing.assert_array_equal(host(hard.sum(-1)), 1.0)


# ---- attention and transformers -------------------------------------------------------------


def test_multihead_attention_with_a_causal_mask():
    mha = nn.MultiheadAttention(8, 2)
    q = ember.randn(5, 3, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(5)  # built here, moved below
    gpu = on_cuda(mha)
    out, w = mha(q, q, q, attn_mask=mask)
    gout, gw = gpu(q.cuda(), q.cuda(), q.cuda(), attn_mask=mask.cuda())
    close(gout, out, rtol=1e-4, atol=1e-5)
    close(gw, w, rtol=1e-4, atol=1e-5)
    assert float(host(gw)[:, 0, 1:].max()) == 0.0  # the first query sees only the first key


def test_multihead_attention_padding_bias_kv_and_zero_attn():
    mha = nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True, batch_first=True)
    q, kv = ember.randn(2, 4, 8), ember.randn(2, 6, 8)
    pad = ember.tensor([[False] * 5 + [True], [False] * 6])
    gpu = on_cuda(mha)
    with needs("constant_pad_nd"):
        gout = gpu(q.cuda(), kv.cuda(), kv.cuda(), key_padding_mask=pad.cuda())[0]
    close(gout, mha(q, kv, kv, key_padding_mask=pad)[0], rtol=1e-4, atol=1e-5)


def test_multihead_attention_is_causal_builds_its_mask_on_the_device():
    mha = nn.MultiheadAttention(8, 2)
    q = ember.randn(5, 3, 8)
    gpu = on_cuda(mha)
    with needs("triu"):
        gout = gpu(q.cuda(), q.cuda(), q.cuda(), is_causal=True, need_weights=False)[0]
    close(gout, mha(q, q, q, is_causal=True, need_weights=False)[0], rtol=1e-4, atol=1e-5)


def test_square_subsequent_mask_on_the_device():
    with needs("triu"):
        mask = nn.Transformer.generate_square_subsequent_mask(4, device="cuda")
    close(mask, nn.Transformer.generate_square_subsequent_mask(4))


def test_transformer_encoder_layer_with_a_causal_mask():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    x = ember.randn(2, 5, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    gpu = on_cuda(layer)
    gout = gpu(x.cuda(), src_mask=mask.cuda())
    close(gout, layer(x, src_mask=mask), rtol=1e-4, atol=1e-5)
    # the same layer made on the device from the start
    ember.manual_seed(3)
    made = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, device="cuda")
    assert_all_on(made)
    assert made(x.cuda(), src_mask=mask.cuda()).device == CUDA0


def test_transformer_encoder_layer_gradients():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=True)
    check_parity(layer, ember.randn(4, 2, 8), rtol=1e-4, atol=1e-5)


def test_transformer_encoder_layer_in_training_mode_drops_on_the_device():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5, device="cuda")
    out = layer(ember.randn(4, 2, 8, device="cuda"))
    assert out.device == CUDA0
    out.sum().backward()
    assert all(p.grad.device == CUDA0 for p in layer.parameters())


def test_transformer_encoder_layer_is_causal():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    x = ember.randn(5, 2, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    with needs("triu"):
        gout = on_cuda(layer)(x.cuda(), src_mask=mask.cuda(), is_causal=True)
    close(gout, layer(x, src_mask=mask, is_causal=True), rtol=1e-4, atol=1e-5)


def test_transformer():
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0)
    src, tgt = ember.randn(6, 2, 8), ember.randn(4, 2, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    gout = on_cuda(model)(src.cuda(), tgt.cuda(), tgt_mask=mask.cuda())
    close(gout, model(src, tgt, tgt_mask=mask), rtol=1e-4, atol=1e-5)


def test_scaled_dot_product_attention():
    q, k, v = ember.randn(2, 2, 5, 4), ember.randn(2, 2, 6, 4), ember.randn(2, 2, 6, 4)
    bool_mask = ember.rand(5, 6) > 0.3
    bool_mask[:, 0] = True
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=bool_mask)
    got = F.scaled_dot_product_attention(q.cuda(), k.cuda(), v.cuda(), attn_mask=bool_mask.cuda())
    close(got, want, rtol=1e-5, atol=1e-6)
    with needs("tril"):
        got = F.scaled_dot_product_attention(q.cuda(), k.cuda(), v.cuda(), is_causal=True)
    close(got, F.scaled_dot_product_attention(q, k, v, is_causal=True), rtol=1e-5, atol=1e-6)


# ---- recurrent layers -----------------------------------------------------------------------


def test_rnn_with_the_default_initial_state():
    rnn = nn.RNN(3, 5, num_layers=2, bidirectional=True)
    got = check_parity(rnn, ember.randn(4, 2, 3), rtol=1e-4, atol=1e-5)
    assert got.shape == (4, 2, 10)
    _, hn = on_cuda(rnn)(ember.randn(4, 3, device="cuda"))  # unbatched
    assert hn.device == CUDA0 and hn.shape == (4, 5)


def test_rnn_cell_with_the_default_state():
    check_parity(nn.RNNCell(3, 5, nonlinearity="relu"), ember.randn(2, 3), rtol=1e-4,
                 atol=1e-5)


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU])
def test_lstm_and_gru_with_the_default_initial_state(cls):
    m = cls(3, 5, num_layers=2, batch_first=True)
    with needs("_thnn_fused_lstm_cell", "_thnn_fused_gru_cell"):
        check_parity(m, ember.randn(2, 4, 3), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cls", [nn.LSTMCell, nn.GRUCell])
def test_lstm_and_gru_cells_with_the_default_state(cls):
    with needs("_thnn_fused_lstm_cell", "_thnn_fused_gru_cell"):
        check_parity(cls(3, 5), ember.randn(2, 3), rtol=1e-4, atol=1e-5)


def test_pad_and_pack_sequences_on_the_device():
    from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

    seqs = [ember.randn(n, 2) for n in (2, 4, 3)]
    padded = pad_sequence([s.cuda() for s in seqs], batch_first=True, padding_value=-1.0)
    close(padded, pad_sequence(seqs, batch_first=True, padding_value=-1.0))
    packed = pack_padded_sequence(padded, [2, 4, 3], batch_first=True, enforce_sorted=False)
    assert packed.data.device == packed.sorted_indices.device == CUDA0
    assert packed.unsorted_indices.device == CUDA0
    assert packed.batch_sizes.device.type == "cpu"  # as torch's
    out, lengths = pad_packed_sequence(packed, batch_first=True, padding_value=-1.0,
                                       total_length=5)
    assert out.device == CUDA0 and lengths.tolist() == [2, 4, 3]
    np.testing.assert_array_equal(host(out[:, :4]), host(padded))
    back = packed.to("cpu")
    assert back.data.device == back.sorted_indices.device == ember.device("cpu")


# ---- functionals ----------------------------------------------------------------------------


def test_one_hot():
    t = ember.tensor([[0, 3], [2, 1]])
    got = F.one_hot(t.cuda(), 5)
    assert got.dtype == ember.int64
    close(got, F.one_hot(t, 5))
    close(F.one_hot(t.cuda()), F.one_hot(t))


def test_cross_entropy_and_nll():
    x, y = ember.randn(6, 4, requires_grad=True), ember.tensor([0, 3, 1, 1, 2, 0])
    w = ember.rand(4)
    xg = x.detach().cuda().requires_grad_(True)
    want = F.cross_entropy(x, y, weight=w, label_smoothing=0.1)
    got = F.cross_entropy(xg, y.cuda(), weight=w.cuda(), label_smoothing=0.1)
    close(got, want, rtol=1e-5)
    want.backward()
    got.backward()
    close(xg.grad, x.grad, rtol=1e-5)


def test_ctc_loss():
    lp = ember.randn(6, 2, 4).log_softmax(-1)
    targets = ember.tensor([[1, 2, 2], [3, 1, 0]])
    in_lens, tg_lens = [6, 5], [3, 2]
    want = F.ctc_loss(lp, targets, in_lens, tg_lens)
    close(F.ctc_loss(lp.cuda(), targets.cuda(), in_lens, tg_lens), want, rtol=1e-5)


def test_unfold_and_fold():
    x = ember.randn(2, 3, 5, 5)
    cols = F.unfold(x, 3, padding=1)
    close(F.unfold(x.cuda(), 3, padding=1), cols, rtol=1e-5)
    close(F.fold(cols.cuda(), (5, 5), 3, padding=1), F.fold(cols, (5, 5), 3, padding=1),
          rtol=1e-5, atol=1e-5)


def test_max_pool_and_unpool():
    x = ember.randn(2, 3, 6, 6)
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    gout, gidx = F.max_pool2d(x.cuda(), 2, return_indices=True)
    close(gout, out)
    close(F.max_unpool2d(gout, gidx, 2), F.max_unpool2d(out, idx, 2))


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_interpolate(mode):
    x = ember.randn(1, 2, 4, 5)
    kw = {} if mode == "nearest" else {"align_corners": False}
    close(F.interpolate(x.cuda(), size=(7, 3), mode=mode, **kw),
          F.interpolate(x, size=(7, 3), mode=mode, **kw), rtol=1e-5, atol=1e-5)


def test_affine_grid_and_grid_sample():
    theta = ember.randn(2, 2, 3) * 0.3 + ember.tensor([[1.0, 0, 0], [0, 1, 0]])
    grid = F.affine_grid(theta, (2, 3, 4, 5), align_corners=False)
    ggrid = F.affine_grid(theta.cuda(), (2, 3, 4, 5), align_corners=False)
    close(ggrid, grid, rtol=1e-5, atol=1e-6)
    x = ember.randn(2, 3, 4, 5)
    close(F.grid_sample(x.cuda(), ggrid, align_corners=False),
          F.grid_sample(x, grid, align_corners=False), rtol=1e-5, atol=1e-5)


def test_multilabel_margin_loss():
    x, y = ember.randn(3, 4), ember.tensor([[3, 0, -1, 1], [1, 2, 3, -1], [0, -1, 1, 2]])
    close(F.multilabel_margin_loss(x.cuda(), y.cuda()), F.multilabel_margin_loss(x, y),
          rtol=1e-5)


# ---- init -----------------------------------------------------------------------------------


def test_init_on_the_device():
    w = ember.empty(3, 5, device="cuda")
    nn.init.eye_(w)
    close(w, ember.eye(3, 5))
    for fn in (nn.init.xavier_uniform_, nn.init.kaiming_normal_, nn.init.trunc_normal_):
        assert fn(ember.empty(4, 6, device="cuda")).device == CUDA0


def test_init_orthogonal_on_the_device():
    q = ember.empty(4, 6, device="cuda")
    nn.init.orthogonal_(q)
    assert q.device == CUDA0
    np.testing.assert_allclose(host(q) @ host(q).T, np.eye(4), atol=1e-5)


# ---- gradient clipping and optimizers -------------------------------------------------------


def _two_models(module):
    """module and its CUDA copy, each after one backward of the same loss."""
    gpu = on_cuda(module)
    x = ember.randn(8, module.in_features)
    for m, xi in ((module, x), (gpu, x.cuda())):
        m.zero_grad()
        (m(xi) ** 2).mean().backward()
    return module, gpu


@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
def test_clip_grad_norm(norm_type):
    cpu, gpu = _two_models(nn.Linear(6, 4))
    want = nn.utils.clip_grad_norm_(cpu.parameters(), 0.1, norm_type)
    got = nn.utils.clip_grad_norm_(gpu.parameters(), 0.1, norm_type)
    close(got, want, rtol=1e-5)
    for p, q in zip(gpu.parameters(), cpu.parameters()):
        close(p.grad, q.grad, rtol=1e-5)
    nn.utils.clip_grad_value_(gpu.parameters(), 0.01)
    assert all(p.grad.device == CUDA0 for p in gpu.parameters())


@pytest.mark.skipif(REAL_GPU and cuda.device_count() < 2, reason="needs two GPUs")
def test_clip_grad_norm_over_two_devices():
    cpu = [ember.randn(3, 4, requires_grad=True), ember.randn(5, requires_grad=True)]
    gpu = [cpu[0].detach().to("cuda:0").requires_grad_(True),
           cpu[1].detach().to("cuda:1").requires_grad_(True)]
    for ps in (cpu, gpu):
        sum((p * p).sum().to("cpu") for p in ps).backward()
    want = nn.utils.clip_grad_norm_(cpu, 1.0)
    got = nn.utils.clip_grad_norm_(gpu, 1.0)
    close(got, want, rtol=1e-5)  # on the first gradient's device
    assert gpu[1].grad.device == ember.device("cuda", 1)
    np.testing.assert_allclose(host(gpu[1].grad), host(cpu[1].grad), rtol=1e-5)


def test_clip_grad_norm_without_gradients_is_a_cpu_zero():
    total = nn.utils.clip_grad_norm_(nn.Linear(2, 2, device="cuda").parameters(), 1.0)
    assert total.device.type == "cpu" and float(total) == 0.0


OPTIMIZERS = {
    "SGD-momentum": lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-2),
    "SGD-nesterov": lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    "Adam": lambda ps: ember.optim.Adam(ps, lr=1e-2),
    "Adam-amsgrad": lambda ps: ember.optim.Adam(ps, lr=1e-2, amsgrad=True, weight_decay=0.1),
    "AdamW": lambda ps: ember.optim.AdamW(ps, lr=1e-2),
    "RMSprop": lambda ps: ember.optim.RMSprop(ps, lr=1e-2, momentum=0.5, centered=True),
    "Adagrad": lambda ps: ember.optim.Adagrad(ps, lr=1e-2),
    "NAdam": lambda ps: ember.optim.NAdam(ps, lr=1e-2),
    "RAdam": lambda ps: ember.optim.RAdam(ps, lr=1e-2),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_steps_match_the_cpu(name):
    cpu = nn.Linear(6, 4)
    gpu = on_cuda(cpu)
    opt_c, opt_g = OPTIMIZERS[name](cpu.parameters()), OPTIMIZERS[name](gpu.parameters())
    for _ in range(3):
        x = ember.randn(8, 6)
        for m, opt, xi in ((cpu, opt_c, x), (gpu, opt_g, x.cuda())):
            opt.zero_grad()
            (m(xi) ** 2).mean().backward()
            opt.step()
    for p, q in zip(gpu.parameters(), cpu.parameters()):
        close(p, q, rtol=1e-5, atol=1e-6)
    for p in gpu.parameters():
        for key, v in opt_g.state[p].items():
            if isinstance(v, ember.Tensor) and v.dim() > 0:
                assert v.device == CUDA0, key
            elif key in ("step", "mu_product"):
                assert v.device.type == "cpu", key  # torch's counters stay on the CPU


def test_capturable_counters_live_on_the_device():
    m = nn.Linear(3, 2, device="cuda")
    opt = ember.optim.Adam(m.parameters(), capturable=True)
    m(ember.randn(4, 3, device="cuda")).sum().backward()
    opt.step()
    assert all(opt.state[p]["step"].device == CUDA0 for p in m.parameters())


def test_optimizer_state_loads_onto_the_parameters_device():
    cpu = nn.Linear(4, 3)
    opt = ember.optim.Adam(cpu.parameters(), lr=1e-2)
    cpu(ember.randn(5, 4)).sum().backward()
    opt.step()
    gpu = on_cuda(cpu)
    opt_g = ember.optim.Adam(gpu.parameters(), lr=1e-2)
    opt_g.load_state_dict(opt.state_dict())
    for p in gpu.parameters():
        st = opt_g.state[p]
        assert st["exp_avg"].device == st["exp_avg_sq"].device == CUDA0
        assert st["step"].device.type == "cpu"
    x = ember.randn(5, 4)
    for m, o, xi in ((cpu, opt, x), (gpu, opt_g, x.cuda())):
        o.zero_grad()
        m(xi).sum().backward()
        o.step()
    for p, q in zip(gpu.parameters(), cpu.parameters()):
        close(p, q, rtol=1e-5, atol=1e-6)


def test_lbfgs_step():
    cpu = nn.Linear(3, 1)
    cpu.unused = nn.Parameter(ember.zeros(2))  # no gradient: zeros stand in for it
    gpu = on_cuda(cpu)
    x, y = ember.randn(10, 3), ember.randn(10, 1)
    for m, xi, yi in ((cpu, x, y), (gpu, x.cuda(), y.cuda())):
        opt = ember.optim.LBFGS(m.parameters(), lr=0.5, max_iter=5)

        def closure(m=m, xi=xi, yi=yi, opt=opt):
            opt.zero_grad()
            loss = ((m(xi) - yi) ** 2).mean()
            loss.backward()
            return loss

        opt.step(closure)
    for p, q in zip(gpu.parameters(), cpu.parameters()):
        close(p, q, rtol=1e-4, atol=1e-5)


def test_a_small_training_loop_on_the_device():
    ember.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.2), nn.Linear(4 * 4 * 4, 3))
    model.to("cuda")
    opt = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x = ember.randn(16, 1, 8, 8, device="cuda")
    y = ember.randint(0, 3, (16,)).cuda()
    losses = []
    for _ in range(15):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert_all_on(model)
