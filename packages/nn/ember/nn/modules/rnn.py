"""RNN, LSTM, GRU and their cells. LSTM and GRU on the CPU (float32/float64, no projection) run
each layer and direction as one core kernel (``_rnn_layer``: every step in C++, one graph node,
the weight gradients one product each). Elsewhere the input projection of a whole sequence is one
matrix product per layer and direction, the recurrence one small product and one fused cell
kernel (``_thnn_fused_lstm_cell``/``_thnn_fused_gru_cell``) per step. Parameter names, shapes,
gate order and initialisation are torch's."""

from __future__ import annotations

import math

import ember
from ember import _C

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _cell_step(mode, x_gates, h, c, w_hh_t, b_ih, b_hh):
    """One step: x_gates = x @ w_ih.T (without bias), w_hh_t = w_hh.T. LSTM and GRU run the
    core's fused cells, so a step records two graph nodes (the product and the cell)."""
    h_gates = h.matmul(w_hh_t)
    if mode in ("LSTM", "GRU") and x_gates.device.type != "cpu":
        return _composed_cell(mode, x_gates, h_gates, h, c, b_ih, b_hh)
    if mode == "LSTM":
        h, c, _ = _C._thnn_fused_lstm_cell(x_gates, h_gates, c, b_ih, b_hh)
        return h, c
    if mode == "GRU":
        return _C._thnn_fused_gru_cell(x_gates, h_gates, h, b_ih, b_hh)[0], None
    pre = x_gates + h_gates
    if b_ih is not None:
        pre = pre + b_ih + b_hh
    return (pre.tanh() if mode == "RNN_TANH" else ember.relu(pre)), None


def _composed_cell(mode, x_gates, h_gates, h, c, b_ih, b_hh):
    """The LSTM/GRU cell from element-wise ops, for devices without the fused (CPU) kernels.
    Gate order as torch's: i, f, g, o and r, z, n."""
    if b_ih is not None:
        x_gates, h_gates = x_gates + b_ih, h_gates + b_hh
    if mode == "LSTM":
        i, f, g, o = (x_gates + h_gates).chunk(4, -1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        return o.sigmoid() * c.tanh(), c
    xr, xz, xn = x_gates.chunk(3, -1)
    hr, hz, hn = h_gates.chunk(3, -1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return n + z * (h - n), None


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None,
                 dtype=None):
        super().__init__()
        if not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1 or \
                isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gate_size = _GATES[mode] * hidden_size
        num_directions = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                names = [f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}"]
                shapes = [(gate_size, layer_input), (gate_size, real_hidden)]
                if bias:
                    names += [f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"]
                    shapes += [(gate_size,), (gate_size,)]
                if proj_size > 0:
                    names += [f"weight_hr_l{layer}{suffix}"]
                    shapes += [(proj_size, hidden_size)]
                for n, s in zip(names, shapes):
                    setattr(self, n, Parameter(ember.empty(s, dtype=dtype, device=device)))
                self._flat_weights_names.extend(names)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """torch packs the weights into one cuDNN buffer here; ember's recurrent layers run
        their cells over the separate parameters, so there is nothing to pack: a no-op, as
        torch's is off cuDNN (scripts call it after moving the model or in every forward)."""

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        k = (4 if self.bias else 2) + (1 if self.proj_size else 0)
        return [[getattr(self, n) for n in self._flat_weights_names[i:i + k]]
                for i in range(0, len(self._flat_weights_names), k)]

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def _weights(self, layer, direction):
        suffix = "_reverse" if direction == 1 else ""
        w_ih = getattr(self, f"weight_ih_l{layer}{suffix}")
        w_hh = getattr(self, f"weight_hh_l{layer}{suffix}")
        b_ih = getattr(self, f"bias_ih_l{layer}{suffix}") if self.bias else None
        b_hh = getattr(self, f"bias_hh_l{layer}{suffix}") if self.bias else None
        w_hr = getattr(self, f"weight_hr_l{layer}{suffix}") if self.proj_size else None
        return w_ih, w_hh, b_ih, b_hh, w_hr

    def forward(self, input, hx=None):
        is_lstm = self.mode == "LSTM"
        batched = input.dim() == 3
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                             f"{input.dim()}D instead")
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.shape[-1]}")
        seq_len, n = x.shape[0], x.shape[1]
        nd = 2 if self.bidirectional else 1
        hs = self.proj_size if self.proj_size else self.hidden_size
        if hx is None:
            h0 = ember.zeros(self.num_layers * nd, n, hs, dtype=x.dtype, device=x.device)
            c0 = ember.zeros(self.num_layers * nd, n, self.hidden_size, dtype=x.dtype,
                             device=x.device) if is_lstm else None
        else:
            h0, c0 = hx if is_lstm else (hx, None)
            if not batched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            expected = (self.num_layers * nd, n, hs)
            if tuple(h0.shape) != expected:
                raise RuntimeError(f"Expected hidden size {expected}, got "
                                   f"{list(h0.shape)}")
        h_n, c_n = [], []
        layer_in = x
        # LSTM/GRU on the CPU in float32/float64 without projections: one core kernel (and one
        # graph node) per layer and direction, all steps inside; otherwise step by step below
        whole_layer = (self.mode in ("LSTM", "GRU") and not self.proj_size and not x.is_cuda
                       and x.dtype in (ember.float32, ember.float64)
                       and all(w.dtype == x.dtype for w in self._flat_weights)
                       and h0.dtype == x.dtype and (c0 is None or c0.dtype == x.dtype))
        for layer in range(self.num_layers):
            outs = []
            for d in range(nd):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, d)
                if whole_layer:
                    c = c0[layer * nd + d] if is_lstm else None
                    y, h, c, _ = _C._rnn_layer(layer_in, w_ih, w_hh, b_ih, b_hh,
                                               h0[layer * nd + d], c, self.mode, d == 1)
                    outs.append(y)
                    h_n.append(h)
                    if is_lstm:
                        c_n.append(c)
                    continue
                # the whole sequence's input projection is one product; unbind is one node
                xs = layer_in.matmul(w_ih.t()).unbind(0) if seq_len else ()
                w_hh_t = w_hh.t()
                h = h0[layer * nd + d]
                c = c0[layer * nd + d] if is_lstm else None
                steps = range(seq_len - 1, -1, -1) if d == 1 else range(seq_len)
                ys = [None] * seq_len
                for t in steps:
                    h, c = _cell_step(self.mode, xs[t], h, c, w_hh_t, b_ih, b_hh)
                    if w_hr is not None:
                        h = h.matmul(w_hr.t())
                    ys[t] = h
                outs.append(ember.stack(ys) if seq_len else
                            ember.zeros(0, n, hs, dtype=x.dtype, device=x.device))
                h_n.append(h)
                if is_lstm:
                    c_n.append(c)
            layer_in = outs[0] if nd == 1 else ember.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_in = F.dropout(layer_in, self.dropout, True)
        out = layer_in
        hn = ember.stack(h_n)
        cn = ember.stack(c_n) if is_lstm else None
        if batched and self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
            hn = hn.squeeze(1)
            cn = cn.squeeze(1) if cn is not None else None
        return (out, (hn, cn)) if is_lstm else (out, hn)


class RNN(RNNBase):
    def __init__(self, *args, **kwargs):
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        factory_kwargs = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(ember.empty(num_chunks * hidden_size, input_size,
                                               **factory_kwargs))
        self.weight_hh = Parameter(ember.empty(num_chunks * hidden_size, hidden_size,
                                               **factory_kwargs))
        if bias:
            self.bias_ih = Parameter(ember.empty(num_chunks * hidden_size, **factory_kwargs))
            self.bias_hh = Parameter(ember.empty(num_chunks * hidden_size, **factory_kwargs))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def _run(self, mode, input, h, c):
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got "
                             f"{input.dim()}D instead")
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if h is None:
            h = ember.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
        elif not batched:
            h = h.unsqueeze(0)
        if mode == "LSTM":
            if c is None:
                c = ember.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            elif not batched:
                c = c.unsqueeze(0)
        h, c = _cell_step(mode, x.matmul(self.weight_ih.t()), h, c, self.weight_hh.t(),
                          self.bias_ih, self.bias_hh)
        if not batched:
            h = h.squeeze(0)
            c = c.squeeze(0) if c is not None else None
        return h, c


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        mode = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}.get(self.nonlinearity)
        if mode is None:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return self._run(mode, input, hx, None)[0]


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        h, c = (None, None) if hx is None else hx
        return self._run("LSTM", input, h, c)


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        return self._run("GRU", input, hx, None)[0]
