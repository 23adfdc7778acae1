"""nn.RNN, nn.GRU and nn.LSTM with MindSpore's signatures and equations (those of its
_DynamicRNN cells, PyTorch's too): `RNN(input_size, hidden_size, num_layers=1,
nonlinearity='tanh', has_bias=True, batch_first=False, dropout=0.0, bidirectional=False)`,
`construct(x, hx=None, seq_length=None)` -> (output, h_n); LSTM's state is a tuple (h, c).

Each layer and direction is one ops.Scan over the time steps, not unrolled: one loop in the
compiled code whatever the sequence length, differentiated by ms-autodiff's loop rule (the
weights are read from above and their gradients accumulated over the steps). The input's
product with the input weights is one matmul for all the steps, before the loop; the loop
carries the state and multiplies it by the hidden weights, transposed once before the loop
(given to the matmul as transpose_b, the CPU backend copied them transposed at every step, in
the forward loop and in the backward one that recomputes it; their gradient is now summed
transposed and transposed back once: bench/lstm.py's step 6.7 -> 6.0 ms). With `seq_length` (one length per
sequence of the batch) a sequence's state stops changing after its last step, its outputs
there are zeros, and the reverse direction reads each sequence from its own last step, as
MindSpore's.

Parameters are named as MindSpore's: weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k},
bias_hh_l{k}, with the suffix _reverse for the second direction; all drawn from
U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
"""
from __future__ import annotations

import math

import numpy as np

from ...dialects import dtypes as dt
from .. import ops
from ..tensor import Parameter, Tensor
from .cell import Cell
from .init import Uniform, init_array


def _linear(x, w, b):
    y = ops.matmul(x, w, transpose_b=True)
    return y if b is None else y + b


def _hidden(h, w_hh_t, b_hh):
    """h @ w_hh.T + b_hh, with w_hh_t = w_hh.T (hidden_size, gates) computed before the loop."""
    y = ops.matmul(h, w_hh_t)
    return y if b_hh is None else y + b_hh


# Each step takes (input projection, state, w_hh_t, b_hh): the hidden weights transposed.
def _rnn_step(activation):
    def step(gi, state, w_hh_t, b_hh):
        h = activation(gi + _hidden(state, w_hh_t, b_hh))
        return h, h
    return step


def _gru_step(gi, h, w_hh_t, b_hh):
    gh = _hidden(h, w_hh_t, b_hh)
    i_r, i_z, i_n = ops.split(gi, gi.shape[-1] // 3, -1)
    h_r, h_z, h_n = ops.split(gh, gh.shape[-1] // 3, -1)
    r = ops.sigmoid(i_r + h_r)
    z = ops.sigmoid(i_z + h_z)
    n = ops.tanh(i_n + r * h_n)
    h = n + z * (h - n)
    return h, h


def _lstm_step(gi, state, w_hh_t, b_hh):
    h, c = state
    gates = gi + _hidden(h, w_hh_t, b_hh)
    i, f, g, o = ops.split(gates, gates.shape[-1] // 4, -1)
    c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
    h = ops.sigmoid(o) * ops.tanh(c)
    return (h, c), h


# mode -> (gates per hidden unit, the cell's step: (input projection, state, w_hh_t, b_hh) ->
# (new state, output))
_MODES = {
    "RNN_TANH": (1, _rnn_step(ops.tanh)),
    "RNN_RELU": (1, _rnn_step(ops.relu)),
    "GRU": (3, _gru_step),
    "LSTM": (4, _lstm_step),
}


def _where(valid, new, old):
    """new where the sequence is still running (valid: (batch, 1) bool), else old."""
    if isinstance(new, tuple):
        return tuple(_where(valid, n, o) for n, o in zip(new, old))
    return ops.select(valid, new, old)


def _reverse_time(x, seq_length):
    """x (time, batch, ...) with each sequence's steps reversed: all of them, or with
    seq_length the first seq_length[b] of sequence b (the padding stays where it is)."""
    steps, batch = x.shape[0], x.shape[1]
    if seq_length is None:
        return ops.gather(x, Tensor(np.arange(steps - 1, -1, -1, dtype=np.int64)), 0)
    t = Tensor(np.arange(steps, dtype=np.int64).reshape(steps, 1))
    lengths = ops.reshape(ops.cast(seq_length, dt.int64), (1, batch))
    source = ops.select(t < lengths, lengths - 1 - t, ops.broadcast_to(t, (steps, batch)))
    flat = ops.reshape(x, (steps * batch,) + tuple(x.shape[2:]))
    rows = source * batch + Tensor(np.arange(batch, dtype=np.int64))
    return ops.gather(flat, rows, 0)


class _RNNBase(Cell):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, has_bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, dtype=dt.float32):
        super().__init__()
        for name, v in (("input_size", input_size), ("hidden_size", hidden_size),
                        ("num_layers", num_layers)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not (isinstance(dropout, (int, float)) and 0.0 <= dropout < 1.0):
            raise ValueError(f"dropout must be a float in [0, 1), got {dropout!r}")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.has_bias, self.batch_first = num_layers, has_bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bool(bidirectional)
        self.num_directions = 2 if bidirectional else 1
        gates = _MODES[mode][0] * hidden_size
        init = Uniform(1.0 / math.sqrt(hidden_size))
        for layer in range(num_layers):
            width = input_size if layer == 0 else hidden_size * self.num_directions
            for suffix in ("", "_reverse")[:self.num_directions]:
                for kind, shape in (("weight_ih", (gates, width)),
                                    ("weight_hh", (gates, hidden_size)),
                                    ("bias_ih", (gates,)), ("bias_hh", (gates,))):
                    if kind.startswith("bias") and not has_bias:
                        continue
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, Parameter(init_array(init, shape, dtype), name=name))

    def _weights(self, layer, direction):
        suffix = "_reverse" if direction else ""
        get = lambda kind: getattr(self, f"{kind}_l{layer}{suffix}", None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def construct(self, x, hx=None, seq_length=None):
        x = self._check_input(x)
        if self.batch_first:
            x = ops.transpose(x, (1, 0, 2))
        states = self._initial_states(hx, x)
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(self.num_directions):
                index = layer * self.num_directions + direction
                state, out = self._direction(x, states[index], layer, direction, seq_length)
                finals.append(state)
                outputs.append(out)
            x = outputs[0] if len(outputs) == 1 else ops.concat(outputs, 2)
            if self.training and self.dropout and layer < self.num_layers - 1:
                x = ops.dropout(x, self.dropout, True)
        if self.batch_first:
            x = ops.transpose(x, (1, 0, 2))
        return x, self._stacked(finals)

    def _check_input(self, x):
        if not isinstance(x, Tensor):
            x = Tensor(x)
        if len(x.shape) != 3 or x.shape[2] != self.input_size:
            raise ValueError(f"x must have shape (seq_len, batch, {self.input_size}) (batch "
                             f"first: (batch, seq_len, {self.input_size})), got {x.shape}")
        return x

    def _direction(self, x, state0, layer, direction, seq_length):
        """One layer in one direction: the input projection for every step, then one Scan
        over the steps carrying the state (and the step number, with seq_length)."""
        w_ih, w_hh, b_ih, b_hh = self._weights(layer, direction)
        steps, batch = x.shape[0], x.shape[1]
        if direction:
            x = _reverse_time(x, seq_length)
        gi = _linear(ops.reshape(x, (steps * batch, x.shape[2])), w_ih, b_ih)
        gi = ops.reshape(gi, (steps, batch, gi.shape[-1]))
        step = _MODES[self.mode][1]
        w_hh_t = ops.transpose(w_hh, (1, 0))
        if seq_length is None:
            def body(state, g):
                return step(g, state, w_hh_t, b_hh)
            state, ys = ops.Scan()(body, state0, gi, unroll=False)
        else:
            lengths = ops.reshape(ops.cast(seq_length, dt.int64), (batch, 1))

            def body(carry, g):  # the step number is carried only where lengths need it
                state, t = carry
                new, out = step(g, state, w_hh_t, b_hh)
                valid = t < lengths
                new, out = _where(valid, new, state), ops.select(valid, out, ops.zeros_like(out))
                return (new, t + 1), out
            (state, _), ys = ops.Scan()(body, (state0, 0), gi, unroll=False)
        if direction:
            ys = _reverse_time(ys, seq_length)
        return state, ys

    def _initial_states(self, hx, x):
        """Per layer and direction, the initial state (a (h, c) pair for LSTM)."""
        n, batch = self.num_layers * self.num_directions, x.shape[1]
        shape = (n, batch, self.hidden_size)
        parts = hx if self.mode == "LSTM" and hx is not None else (hx,)
        if self.mode == "LSTM" and hx is not None and not (
                isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError("For LSTM, hx must be a tuple (h_0, c_0)")
        if self.mode == "LSTM" and hx is None:
            parts = (None, None)
        states = []
        for p in parts:
            if p is None:  # each layer's zeros (no slices of a batch that may be dynamic)
                states.append(tuple(ops.zeros((batch, self.hidden_size), x.dtype)
                                    for _ in range(n)))
                continue
            p = p if isinstance(p, Tensor) else Tensor(p)
            if tuple(p.shape) != shape:
                raise ValueError(f"hx must have shape {shape}, got {p.shape}")
            states.append(ops.unstack(p, 0))
        return states[0] if len(states) == 1 else list(zip(*states))

    def _stacked(self, finals):
        if self.mode == "LSTM":
            return ops.stack([h for h, _ in finals], 0), ops.stack([c for _, c in finals], 0)
        return ops.stack(finals, 0)

    def __repr__(self):
        return (f"{type(self).__name__}(input_size={self.input_size}, hidden_size="
                f"{self.hidden_size}, num_layers={self.num_layers}, batch_first="
                f"{self.batch_first}, bidirectional={self.bidirectional})")


class RNN(_RNNBase):
    """h_t = nonlinearity(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), tanh or relu."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh",
                 has_bias=True, batch_first=False, dropout=0.0, bidirectional=False,
                 dtype=dt.float32):
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if nonlinearity not in modes:
            raise ValueError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__(modes[nonlinearity], input_size, hidden_size, num_layers, has_bias,
                         batch_first, dropout, bidirectional, dtype)


class GRU(_RNNBase):
    """r, z = sigmoid(...), n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn)),
    h_t = (1 - z) * n + z * h_{t-1} (gates in the order r, z, n)."""

    def __init__(self, input_size, hidden_size, num_layers=1, has_bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, dtype=dt.float32):
        super().__init__("GRU", input_size, hidden_size, num_layers, has_bias, batch_first,
                         dropout, bidirectional, dtype)


class LSTM(_RNNBase):
    """i, f, g, o gates; c_t = f * c_{t-1} + i * g, h_t = o * tanh(c_t); state (h, c)."""

    def __init__(self, input_size, hidden_size, num_layers=1, has_bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, dtype=dt.float32):
        super().__init__("LSTM", input_size, hidden_size, num_layers, has_bias, batch_first,
                         dropout, bidirectional, dtype)
