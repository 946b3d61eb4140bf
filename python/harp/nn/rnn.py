"""Recurrent layers as torch.nn has them: RNNCell, LSTMCell, GRUCell and the
multi-layer RNN, LSTM and GRU, with torch's parameter names, shapes,
initialisation (every weight and bias U(-1/sqrt(hidden), 1/sqrt(hidden))),
gate order (LSTM: input, forget, cell, output; GRU: reset, update, new),
`batch_first`, `bidirectional`, `num_layers` and dropout between layers.

A layer's input projection is one product over the whole sequence
(`x @ W_ih^T + b_ih` for all time steps at once); each step then adds
`h @ W_hh^T + b_hh` and applies its gates, element-wise work that
harp-fuse joins into few kernels per step. The loop over time steps is
unrolled into the graph (a sequence of a new length compiles a new graph).
PackedSequence inputs and LSTM's proj_size are not supported.
"""

import math
import numbers

from . import functional as F
from . import init
from .modules import Module, _empty

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell",
           "RNNCellBase"]


def _stack(tensors, dim):
    from .. import stack
    return stack(tensors, dim)


def _cat(tensors, dim):
    from .. import cat
    return cat(tensors, dim)


def _zeros(shape, like):
    from .. import zeros
    return zeros(*shape, dtype=like.dtype, device=like.device)


def _shape(shape):
    return [int(d) for d in shape]


def _reset_uniform(module):
    """Draws every weight and bias of `module` from U(-1/sqrt(hidden),
    1/sqrt(hidden)), as torch's recurrent layers."""
    bound = 1.0 / math.sqrt(module.hidden_size)
    for weight in module.parameters():
        init.uniform_(weight, -bound, bound)


def _gate_count(mode):
    return {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}[mode]


def _activation(mode):
    return (lambda x: x.relu()) if mode == "RNN_RELU" else (lambda x: x.tanh())


def _step(mode, projected, h, c, w_hh, b_hh):
    """One time step of a cell whose input projection (x W_ih^T + b_ih) is
    `projected` [N, G H]: the new hidden state (and cell state for LSTM)."""
    recurrent = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":
        gi, gf, gg, go = projected.chunk(4, -1)
        ri, rf, rg, ro = recurrent.chunk(4, -1)
        i = (gi + ri).sigmoid()
        f = (gf + rf).sigmoid()
        g = (gg + rg).tanh()
        o = (go + ro).sigmoid()
        c = f * c + i * g
        return o * c.tanh(), c
    if mode == "GRU":
        xr, xz, xn = projected.chunk(3, -1)
        hr, hz, hn = recurrent.chunk(3, -1)
        r = (xr + hr).sigmoid()
        z = (xz + hz).sigmoid()
        n = (xn + r * hn).tanh()
        return (1 - z) * n + z * h, None
    return _activation(mode)(projected + recurrent), None


class RNNCellBase(Module):
    """The parameters of one recurrent cell: weight_ih [G H, input_size],
    weight_hh [G H, hidden_size], bias_ih and bias_hh [G H], G the gates."""

    _mode = "RNN_TANH"

    def __init__(self, input_size, hidden_size, bias=True):
        super().__init__()
        for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(value, numbers.Integral) or value <= 0:
                raise ValueError("%s: %s must be a positive integer, got %r"
                                 % (type(self).__name__, name, value))
        self.input_size = int(input_size)
        self.hidden_size = int(hidden_size)
        self.bias = bias
        gates = _gate_count(self._mode) * self.hidden_size
        self.weight_ih = _empty(gates, self.input_size)
        self.weight_hh = _empty(gates, self.hidden_size)
        if bias:
            self.bias_ih = _empty(gates)
            self.bias_hh = _empty(gates)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Draws every weight and bias from U(-1/sqrt(hidden), 1/sqrt(hidden))."""
        _reset_uniform(self)

    def extra_repr(self):
        text = "%d, %d" % (self.input_size, self.hidden_size)
        if not self.bias:
            text += ", bias=False"
        if self._mode == "RNN_RELU":
            text += ", nonlinearity='relu'"
        return text

    def _batched(self, input, state):
        """(input [N, I], state tensors [N, H], whether input was unbatched)."""
        name = type(self).__name__
        shape = _shape(input.shape)
        if len(shape) not in (1, 2) or shape[-1] != self.input_size:
            raise ValueError("%s: expected input [N, %d] or [%d], got %s"
                             % (name, self.input_size, self.input_size, shape))
        unbatched = len(shape) == 1
        if unbatched:
            input = input.unsqueeze(0)
        batch = _shape(input.shape)[0]
        states = []
        for s in state:
            if s is None:
                s = _zeros((batch, self.hidden_size), input)
            else:
                want = [self.hidden_size] if unbatched else [batch, self.hidden_size]
                if _shape(s.shape) != want:
                    raise ValueError("%s: expected a hidden state %s, got %s"
                                     % (name, want, _shape(s.shape)))
                if unbatched:
                    s = s.unsqueeze(0)
            states.append(s)
        return input, states, unbatched

    def _cell(self, input, h, c):
        projected = F.linear(input, self.weight_ih, self.bias_ih)
        return _step(self._mode, projected, h, c, self.weight_hh, self.bias_hh)


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (relu with
    nonlinearity='relu'); forward(input [N, I] or [I], hx=None) -> h'."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh"):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError("RNNCell: unknown nonlinearity %r (tanh or relu)" % (nonlinearity,))
        self.nonlinearity = nonlinearity
        self._mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(input_size, hidden_size, bias)

    def forward(self, input, hx=None):
        input, (h,), unbatched = self._batched(input, [hx])
        h, _ = self._cell(input, h, None)
        return h.squeeze(0) if unbatched else h


class LSTMCell(RNNCellBase):
    """An LSTM cell: gates i, f, g, o from x W_ih^T + b_ih + h W_hh^T +
    b_hh; c' = f c + i g, h' = o tanh(c'). forward(input, (h, c) = None)
    -> (h', c')."""

    _mode = "LSTM"

    def forward(self, input, hx=None):
        h, c = (None, None) if hx is None else hx
        input, (h, c), unbatched = self._batched(input, [h, c])
        h, c = self._cell(input, h, c)
        if unbatched:
            return h.squeeze(0), c.squeeze(0)
        return h, c


class GRUCell(RNNCellBase):
    """A GRU cell: r, z = sigmoid(...), n = tanh(x W_in^T + b_in + r (h
    W_hn^T + b_hn)), h' = (1 - z) n + z h. forward(input, hx=None) -> h'."""

    _mode = "GRU"

    def forward(self, input, hx=None):
        input, (h,), unbatched = self._batched(input, [hx])
        h, _ = self._cell(input, h, None)
        return h.squeeze(0) if unbatched else h


class RNNBase(Module):
    """A stack of recurrent layers over a sequence: parameters
    weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k} (with a
    `_reverse` twin per layer when bidirectional), layer k > 0 reading the
    previous layer's num_directions x hidden_size features."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0):
        super().__init__()
        name = type(self).__name__
        for key, value in (("input_size", input_size), ("hidden_size", hidden_size),
                           ("num_layers", num_layers)):
            if not isinstance(value, numbers.Integral) or value <= 0:
                raise ValueError("%s: %s must be a positive integer, got %r"
                                 % (name, key, value))
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1:
            raise ValueError("%s: dropout must be a number in [0, 1], got %r" % (name, dropout))
        if proj_size:
            raise ValueError("%s: proj_size is not supported" % name)
        self.mode = mode
        self.input_size = int(input_size)
        self.hidden_size = int(hidden_size)
        self.num_layers = int(num_layers)
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = 0
        directions = 2 if bidirectional else 1
        gates = _gate_count(mode) * self.hidden_size
        for layer in range(self.num_layers):
            features = self.input_size if layer == 0 else self.hidden_size * directions
            for suffix in ("", "_reverse")[:directions]:
                setattr(self, "weight_ih_l%d%s" % (layer, suffix), _empty(gates, features))
                setattr(self, "weight_hh_l%d%s" % (layer, suffix),
                        _empty(gates, self.hidden_size))
                if bias:
                    setattr(self, "bias_ih_l%d%s" % (layer, suffix), _empty(gates))
                    setattr(self, "bias_hh_l%d%s" % (layer, suffix), _empty(gates))
        self.reset_parameters()

    def reset_parameters(self):
        """Draws every weight and bias from U(-1/sqrt(hidden), 1/sqrt(hidden))."""
        _reset_uniform(self)

    def extra_repr(self):
        text = "%d, %d" % (self.input_size, self.hidden_size)
        if self.num_layers != 1:
            text += ", num_layers=%d" % self.num_layers
        if not self.bias:
            text += ", bias=False"
        if self.batch_first:
            text += ", batch_first=True"
        if self.dropout:
            text += ", dropout=%g" % self.dropout
        if self.bidirectional:
            text += ", bidirectional=True"
        return text

    def _layer_weights(self, layer, suffix):
        get = lambda kind: getattr(self, "%s_l%d%s" % (kind, layer, suffix), None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def _run(self, input, hx, cx):
        """(output, h_n, c_n) of the stack over `input` (any layout torch
        takes), hx / cx the initial states or None."""
        name = type(self).__name__
        shape = _shape(input.shape)
        if len(shape) not in (2, 3) or shape[-1] != self.input_size:
            raise ValueError("%s: expected input [L, N, %d] (batch_first: [N, L, %d]) or "
                             "[L, %d], got %s" % (name, self.input_size, self.input_size,
                                                  self.input_size, shape))
        unbatched = len(shape) == 2
        if unbatched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        length, batch = _shape(input.shape)[:2]
        directions = 2 if self.bidirectional else 1
        states = directions * self.num_layers
        want = [states, self.hidden_size] if unbatched else [states, batch, self.hidden_size]

        def initial(state, what):
            if state is None:
                return None
            if _shape(state.shape) != want:
                raise ValueError("%s: expected %s %s, got %s"
                                 % (name, what, want, _shape(state.shape)))
            return state.unsqueeze(1) if unbatched else state

        hx = initial(hx, "hx")
        cx = initial(cx, "cx")
        zero = None
        h_n, c_n = [], []
        layer_input = input
        for layer in range(self.num_layers):
            outputs = []
            for direction, suffix in enumerate(("", "_reverse")[:directions]):
                w_ih, w_hh, b_ih, b_hh = self._layer_weights(layer, suffix)
                index = layer * directions + direction
                if hx is None or (self.mode == "LSTM" and cx is None):
                    if zero is None:
                        zero = _zeros((batch, self.hidden_size), input)
                h = zero if hx is None else hx[index]
                c = None
                if self.mode == "LSTM":
                    c = zero if cx is None else cx[index]
                # The input projection of every time step as one product.
                projected = F.linear(layer_input, w_ih, b_ih)
                steps = range(length - 1, -1, -1) if direction else range(length)
                per_step = [None] * length
                for t in steps:
                    h, c = _step(self.mode, projected[t], h, c, w_hh, b_hh)
                    per_step[t] = h
                outputs.append(_stack(per_step, 0))
                h_n.append(h)
                if self.mode == "LSTM":
                    c_n.append(c)
            layer_input = outputs[0] if directions == 1 else _cat(outputs, 2)
            if self.dropout and self.training and layer + 1 < self.num_layers:
                layer_input = F.dropout(layer_input, self.dropout, training=True)
        output = layer_input
        h_n = _stack(h_n, 0)
        c_n = _stack(c_n, 0) if c_n else None
        if unbatched:
            output = output.squeeze(1)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, h_n, c_n


class RNN(RNNBase):
    """A multi-layer Elman RNN (tanh, or relu with nonlinearity='relu'):
    forward(input, hx=None) -> (output [L, N, D H], h_n [D num_layers, N,
    H]), [N, L, ...] with batch_first, unbatched [L, I] too."""

    def __init__(self, *args, nonlinearity="tanh", **kwargs):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError("RNN: unknown nonlinearity %r (tanh or relu)" % (nonlinearity,))
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)

    def forward(self, input, hx=None):
        output, h_n, _ = self._run(input, hx, None)
        return output, h_n


class LSTM(RNNBase):
    """A multi-layer LSTM: forward(input, (h_0, c_0) = None) -> (output,
    (h_n, c_n)), shapes as RNN's."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        h0, c0 = (None, None) if hx is None else hx
        output, h_n, c_n = self._run(input, h0, c0)
        return output, (h_n, c_n)


class GRU(RNNBase):
    """A multi-layer GRU: forward(input, hx=None) -> (output, h_n), shapes
    as RNN's."""

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        output, h_n, _ = self._run(input, hx, None)
        return output, h_n
