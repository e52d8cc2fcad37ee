"""RNN/LSTM/GRU (+cells), MultiheadAttention and the Transformer layers against PyTorch with
copied weights; gradcheck of the recurrences in float64."""

import pytest
from _parity import check_module, close, copy_weights, to_torch

import ember
from ember import nn
from ember.autograd import gradcheck

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bidirectional": True},
                                {"batch_first": True, "bias": False},
                                {"num_layers": 2, "dropout": 0.0}])
def test_rnn_modules(cls, kw):
    em = getattr(nn, cls)(4, 5, **kw)
    tm = getattr(torch.nn, cls)(4, 5, **kw)
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert repr(em) == repr(tm)
    x = ember.randn(6, 3, 4)
    check_module(em, tm, x, torch=torch, rtol=1e-4, atol=1e-5)
    # initial states and h_n / c_n
    nd = 2 if kw.get("bidirectional") else 1
    n = 6 if kw.get("batch_first") else 3
    h0 = ember.randn(kw.get("num_layers", 1) * nd, n, 5)
    hx = (h0, ember.randn(*h0.shape)) if cls == "LSTM" else h0
    thx = tuple(to_torch(t, torch) for t in hx) if cls == "LSTM" else to_torch(hx, torch)
    eo, eh = em(x, hx)
    to, th = tm(to_torch(x, torch), thx)
    close(eo, to)
    if cls == "LSTM":
        close(eh[0], th[0])
        close(eh[1], th[1])
    else:
        close(eh, th)
    # unbatched input
    xu = ember.randn(6, 4)
    close(em(xu)[0], tm(to_torch(xu, torch))[0])


def test_rnn_relu_and_cells():
    em, tm = nn.RNN(3, 4, nonlinearity="relu"), torch.nn.RNN(3, 4, nonlinearity="relu")
    assert repr(em) == repr(tm)
    check_module(em, tm, ember.randn(5, 2, 3), torch=torch)
    for cls in ["RNNCell", "LSTMCell", "GRUCell"]:
        em, tm = getattr(nn, cls)(3, 4), getattr(torch.nn, cls)(3, 4)
        copy_weights(em, tm, torch)
        x = ember.randn(2, 3)
        eo, to = em(x), tm(to_torch(x, torch))
        if cls == "LSTMCell":
            close(eo[0], to[0])
            close(eo[1], to[1])
        else:
            close(eo, to)


def test_rnn_default_init_matches_torch():
    ember.manual_seed(5)
    torch.manual_seed(5)
    em, tm = nn.LSTM(3, 4, num_layers=2), torch.nn.LSTM(3, 4, num_layers=2)
    for k, v in em.state_dict().items():
        close(v, tm.state_dict()[k], rtol=1e-6, atol=1e-7)


def test_rnn_errors():
    with pytest.raises(ValueError, match="dropout should be a number"):
        nn.LSTM(3, 4, dropout=2)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(RuntimeError, match="input_size"):
        nn.GRU(3, 4)(ember.randn(2, 1, 5))


def test_lstm_gradcheck():
    m = nn.LSTM(2, 3, bidirectional=True).double()
    x = ember.randn(3, 2, 2, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda x: m(x)[0], (x,))


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bidirectional": True},
                                {"batch_first": True, "bias": False, "num_layers": 2}])
def test_lstm_gru_gradients_match_torch_float64(cls, kw):
    """The whole-layer kernels (one node per layer and direction): output, final states and
    every gradient (input, initial states, parameters) against torch in float64."""
    em = getattr(nn, cls)(4, 5, dtype=ember.float64, **kw)
    tm = getattr(torch.nn, cls)(4, 5, dtype=torch.float64, **kw)
    copy_weights(em, tm, torch)
    nd, layers = (2 if kw.get("bidirectional") else 1), kw.get("num_layers", 1)
    x = ember.randn(3, 6, 4, dtype=ember.float64, requires_grad=True)
    h0 = ember.randn(layers * nd, 3 if kw.get("batch_first") else 6, 5, dtype=ember.float64,
                     requires_grad=True)
    states = [h0] + ([ember.randn(*h0.shape, dtype=ember.float64, requires_grad=True)]
                     if cls == "LSTM" else [])
    t_x = to_torch(x, torch).requires_grad_()
    t_states = [to_torch(s, torch).requires_grad_() for s in states]
    eo, eh = em(x, tuple(states) if cls == "LSTM" else states[0])
    to, th = tm(t_x, tuple(t_states) if cls == "LSTM" else t_states[0])
    eh, th = (eh, th) if cls == "LSTM" else ((eh,), (th,))
    nodes = {type(eo.grad_fn).__name__}
    ((eo * eo).sum() + sum((h * h * (i + 2)).sum() for i, h in enumerate(eh))).backward()
    ((to * to).sum() + sum((h * h * (i + 2)).sum() for i, h in enumerate(th))).backward()
    close(eo, to, rtol=1e-10, atol=1e-10)
    for a, b in zip([x] + states, [t_x] + t_states):
        close(a.grad, b.grad, rtol=1e-10, atol=1e-10)
    tp = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        close(p.grad, tp[name].grad, rtol=1e-10, atol=1e-10)
    assert nodes <= {"RnnLayerBackward0", "CatBackward0", "TransposeBackward0"}


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention(batch_first):
    em = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    assert repr(em) == repr(tm)
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    copy_weights(em, tm, torch)
    q, k = ember.randn(4, 3, 8), ember.randn(5, 3, 8)
    if batch_first:
        q, k = q.transpose(0, 1), k.transpose(0, 1)
    tq, tk = to_torch(q, torch), to_torch(k, torch)
    eo, ew = em(q, k, k)
    to, tw = tm(tq, tk, tk)
    close(eo, to)
    close(ew, tw)
    kpm = ember.tensor([[False] * 5, [False, False, False, True, True], [True] + [False] * 4])
    am = ember.rand(4, 5) > 0.7
    am = am & ~ember.eye(4, 5, dtype=ember.bool)
    tkpm, tam = torch.tensor(kpm.tolist()), torch.tensor(am.tolist())
    kpm_q, kpm_k = q, k
    eo, ew = em(kpm_q, kpm_k, kpm_k, key_padding_mask=kpm, attn_mask=am,
                average_attn_weights=False)
    to, tw = tm(to_torch(kpm_q, torch), to_torch(kpm_k, torch), to_torch(kpm_k, torch),
                key_padding_mask=tkpm, attn_mask=tam, average_attn_weights=False)
    close(eo, to)
    close(ew, tw)


def test_mha_default_init_matches_torch():
    ember.manual_seed(9)
    torch.manual_seed(9)
    em, tm = nn.MultiheadAttention(6, 3), torch.nn.MultiheadAttention(6, 3)
    for k, v in em.state_dict().items():
        close(v, tm.state_dict()[k], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_layers(norm_first, activation):
    kw = dict(dim_feedforward=16, dropout=0.0, norm_first=norm_first, activation=activation)
    em, tm = nn.TransformerEncoderLayer(8, 2, **kw), torch.nn.TransformerEncoderLayer(8, 2, **kw)
    em.eval()
    tm.eval()
    assert list(em.state_dict()) == list(tm.state_dict())
    copy_weights(em, tm, torch)
    x = ember.randn(5, 2, 8)
    close(em(x), tm(to_torch(x, torch)), rtol=1e-4, atol=1e-5)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    close(mask, torch.nn.Transformer.generate_square_subsequent_mask(5))
    close(em(x, src_mask=mask), tm(to_torch(x, torch), src_mask=to_torch(mask, torch)),
          rtol=1e-4, atol=1e-5)
    ed, td = nn.TransformerDecoderLayer(8, 2, **kw), torch.nn.TransformerDecoderLayer(8, 2, **kw)
    ed.eval()
    td.eval()
    copy_weights(ed, td, torch)
    mem = ember.randn(6, 2, 8)
    close(ed(x, mem, tgt_mask=mask), td(to_torch(x, torch), to_torch(mem, torch),
                                         tgt_mask=to_torch(mask, torch)), rtol=1e-4, atol=1e-5)


def test_full_transformer():
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
              dim_feedforward=12, dropout=0.0, batch_first=True)
    em, tm = nn.Transformer(**kw), torch.nn.Transformer(**kw)
    assert list(em.state_dict()) == list(tm.state_dict())
    assert repr(em) == repr(tm)
    em.eval()
    tm.eval()
    copy_weights(em, tm, torch)
    src, tgt = ember.randn(2, 5, 8), ember.randn(2, 4, 8)
    close(em(src, tgt), tm(to_torch(src, torch), to_torch(tgt, torch)), rtol=1e-4, atol=1e-5)
    out = em(src, tgt)
    out.sum().backward()
    assert em.encoder.layers[0].linear1.weight.grad is not None


@pytest.mark.parametrize("kw", [{"proj_size": 3}, {"proj_size": 2, "num_layers": 2,
                                                   "bidirectional": True}])
def test_lstm_proj_size(kw):
    em, tm = nn.LSTM(4, 5, **kw), torch.nn.LSTM(4, 5, **kw)
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert repr(em) == repr(tm)
    check_module(em, tm, ember.randn(6, 3, 4), torch=torch)
    with pytest.raises(ValueError, match="smaller than hidden_size"):
        nn.LSTM(4, 5, proj_size=5)
    with pytest.raises(ValueError, match="only supported for LSTM"):
        nn.GRU(4, 5, proj_size=2)


@pytest.mark.parametrize("kw", [{"add_bias_kv": True}, {"add_zero_attn": True},
                                {"add_bias_kv": True, "add_zero_attn": True},
                                {"kdim": 5, "vdim": 3}, {"bias": False}])
def test_mha_options(kw):
    em, tm = nn.MultiheadAttention(8, 2, **kw), torch.nn.MultiheadAttention(8, 2, **kw)
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    copy_weights(em, tm, torch)
    q = ember.randn(4, 3, 8)
    k = ember.randn(5, 3, kw.get("kdim", 8))
    v = ember.randn(5, 3, kw.get("vdim", 8))
    kpm = ember.tensor([[False] * 5, [False, False, False, True, True], [True] + [False] * 4])
    eo, ew = em(q, k, v, key_padding_mask=kpm)
    to, tw = tm(*(to_torch(t, torch) for t in (q, k, v)),
                key_padding_mask=torch.tensor(kpm.tolist()))
    close(eo, to)
    close(ew, tw)
