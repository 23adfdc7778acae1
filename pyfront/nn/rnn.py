"""nn.RNN, nn.GRU and nn.LSTM with MindSpore's signatures and equations (those of its
_DynamicRNN cells, PyTorch's too): `RNN(input_size, hidden_size, num_layers=1,
nonlinearity='tanh', has_bias=True, batch_first=False, dropout=0.0, bidirectional=False)`,
`construct(x, hx=None, seq_length=None)` -> (output, h_n); LSTM's state is a tuple (h, c).
Their one-step cells nn.RNNCell, nn.GRUCell and nn.LSTMCell are at the end of the file.

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
MindSpore's. The reverse direction is a Scan with reverse=True (from the last step, each
output kept at its step: no reversed copies of the input and the output).

A dynamic batch (issue 16) compiles once for every batch size, forward and gradients: the
initial states are zeros shaped like x's batch (ms.broadcast_like), each step projects its
own x_t (the steps' rows together could not be split back into steps and a dynamic batch),
and the final states and the directions' outputs are stacked by writing rows
(ms.dynamic_update_index: concat's gradient has no dynamic form yet). A dynamic sequence
length compiles once for the forward pass; its gradient compiles per shape (the Scan's trip
count is then dynamic, and ms-autodiff differentiates static trip counts only).

Parameters are named as MindSpore's: weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k},
bias_hh_l{k}, with the suffix _reverse for the second direction; all drawn from
U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
"""
from __future__ import annotations

import math

import numpy as np

from ...dialects import dtypes as dt
from ...dialects.symdim import is_dynamic
from .. import ops
from ..dispatch import call
from ..tensor import Parameter, Tensor
from .cell import Cell
from .init import Uniform, init_array


def _linear(x, w, b):
    y = ops.matmul(x, w, transpose_b=True)
    return y if b is None else y + b


def _step_inputs(x, w_ih, b_ih):
    """(what the Scan reads at each step, the projection it applies to it). Static: every
    step's x @ w_ih.T + b_ih, (steps, batch, gates), as one matmul of the steps' rows before
    the loop. With a dynamic batch those rows (steps * batch) could not be split back into
    steps and batch where only the IR types (steps * ?) are known, and a batch_matmul
    against w_ih broadcast over the steps ran 5x slower than this matmul (its gradient 12x,
    measured for 32 steps of 64 x 32 -> 512): each step projects its own x_t instead, a
    matmul of dynamic rows."""
    steps, batch = x.shape[0], x.shape[1]
    if is_dynamic(batch) or is_dynamic(steps):
        return x, lambda x_t: _linear(x_t, w_ih, b_ih)
    y = _linear(ops.reshape(x, (steps * batch, x.shape[2])), w_ih, b_ih)
    return ops.reshape(y, (steps, batch, y.shape[-1])), lambda gi: gi


def _last_step(x):
    """steps - 1 of x (steps, batch, ...): an int, or a 0-d int64 Tensor when the sequence
    length is known only at run time."""
    steps = x.shape[0]
    if not is_dynamic(steps):
        return steps - 1
    return call("ms.dim_size", (x,), {"axis": (0,), "dtype": dt.int64}) - 1


def _has_dynamic(t):
    return any(is_dynamic(d) for d in t.shape)


def _stack(parts):
    """ops.stack(parts, 0). With a dynamic batch each part is written into its row of one
    zero tensor instead (ms.dynamic_update_index): stack is a concat, whose gradient slices
    the cotangent with static sizes, which a dynamic batch does not have."""
    if len(parts) == 1 or not _has_dynamic(parts[0]):
        return ops.stack(parts, 0)
    first, rank = parts[0], len(parts[0].shape)
    zero = Tensor(np.zeros((), first.dtype.np))
    out = call("ms.broadcast_like", (zero, first), {  # zeros (n,) + first's shape
        "shape": (len(parts),) + (-1,) * rank, "axes": (-1,) + tuple(range(rank))})
    for k, part in enumerate(parts):
        out = call("ms.dynamic_update_index", (out, part, Tensor(np.array(k, np.int64))))
    return out


def _concat(parts, axis):
    """ops.concat(parts, axis) of tensors of one shape; with a dynamic batch, their _stack
    with the new axis moved before `axis` and merged into it (one transpose, one reshape).
    With a dynamic sequence length too that reshape is not expressible (two dynamic sizes),
    and concat is kept: such a Scan has no gradient anyway (its trip count is dynamic)."""
    dynamic = sum(is_dynamic(d) for d in parts[0].shape)
    if len(parts) == 1 or dynamic != 1:
        return ops.concat(parts, axis)
    shape = tuple(parts[0].shape)
    perm = tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, len(shape) + 1))
    merged = shape[:axis] + (len(parts) * shape[axis],) + shape[axis + 1:]
    return ops.reshape(ops.transpose(_stack(parts), perm), merged)


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


def _zero_rows(like, axis, width, dtype):
    """Zeros of shape (like.shape[axis], width): an initial state for a batch whose size,
    static or dynamic, is that axis of `like` (read from it at run time)."""
    rows = like.shape[axis]
    if not is_dynamic(rows):
        return ops.zeros((rows, width), dtype)
    return call("ms.broadcast_like", (Tensor(np.zeros((), dtype.np)), like),
                {"shape": (-1, width), "axes": (axis, -1)})


def _fits(shape, expected):
    """Whether `shape` is `expected` where both sizes are static; where one is dynamic the
    ops that combine them check the sizes at run time."""
    return len(shape) == len(expected) and all(
        a == b or is_dynamic(a) or is_dynamic(b) for a, b in zip(shape, expected))


def _on_batch_of(x, h):
    """h (batch, n), a given initial state or the sequence lengths, whose dynamic batch is
    another argument's than x's (axis 1): as zeros of x's batch + h, so the Scan's carry has
    the sizes its body's results have (x's), and the add checks at run time that the two
    agree."""
    if not is_dynamic(h.shape[0]) or h.shape[0] == x.shape[1]:
        return h
    return _zero_rows(x, 1, h.shape[1], h.dtype) + h


def _check_sizes(**sizes):
    for name, v in sizes.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")


class _RNNBase(Cell):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, has_bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, dtype=dt.float32):
        super().__init__()
        _check_sizes(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers)
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
            x = _concat(outputs, 2)
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
        over the steps carrying the state (and the step number, with seq_length). The
        reverse direction scans from the last step (each output kept at its step): with
        seq_length a sequence's state stays the initial one over its padding, so it starts
        at its own last step, as MindSpore's."""
        w_ih, w_hh, b_ih, b_hh = self._weights(layer, direction)
        xs, project = _step_inputs(x, w_ih, b_ih)
        cell = _MODES[self.mode][1]
        w_hh_t = ops.transpose(w_hh, (1, 0))
        reverse = bool(direction)

        def step(state, x_t):
            return cell(project(x_t), state, w_hh_t, b_hh)
        if seq_length is None:
            return ops.Scan()(step, state0, xs, unroll=False, reverse=reverse)
        lengths = _on_batch_of(x, ops.reshape(ops.cast(seq_length, dt.int64), (-1, 1)))
        move = -1 if reverse else 1

        def masked(carry, x_t):  # the step number is carried only where lengths need it
            state, t = carry
            new, out = step(state, x_t)
            valid = t < lengths
            new, out = _where(valid, new, state), ops.select(valid, out, ops.zeros_like(out))
            return (new, t + move), out
        first = _last_step(x) if reverse else 0
        (state, _), ys = ops.Scan()(masked, (state0, first), xs, unroll=False, reverse=reverse)
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
                states.append(tuple(_zero_rows(x, 1, self.hidden_size, x.dtype)
                                    for _ in range(n)))
                continue
            p = p if isinstance(p, Tensor) else Tensor(p)
            if not _fits(p.shape, shape):
                raise ValueError(f"hx must have shape {shape}, got {p.shape}")
            states.append(tuple(_on_batch_of(x, h) for h in ops.unstack(p, 0)))
        return states[0] if len(states) == 1 else list(zip(*states))

    def _stacked(self, finals):
        if self.mode == "LSTM":
            return _stack([h for h, _ in finals]), _stack([c for _, c in finals])
        return _stack(finals)

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


class _CellBase(Cell):
    """One step of a layer's recurrence (MindSpore's RNNCell, GRUCell, LSTMCell):
    `construct(x, hx=None)`, x (batch, input_size), hx the state (LSTM: (h, c)), each
    (batch, hidden_size); None (mscc's addition, as PyTorch's) starts from zeros. Returns the
    new state. Parameters weight_ih, weight_hh, bias_ih, bias_hh, drawn as the layers'."""

    def __init__(self, mode, input_size, hidden_size, has_bias=True, dtype=dt.float32):
        super().__init__()
        _check_sizes(input_size=input_size, hidden_size=hidden_size)
        if not isinstance(has_bias, (bool, np.bool_)):
            raise TypeError(f"has_bias must be a bool, got {type(has_bias).__name__}")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.has_bias = bool(has_bias)
        gates = _MODES[mode][0] * hidden_size
        init = Uniform(1.0 / math.sqrt(hidden_size))
        for kind, shape in (("weight_ih", (gates, input_size)),
                            ("weight_hh", (gates, hidden_size)),
                            ("bias_ih", (gates,)), ("bias_hh", (gates,))):
            if has_bias or not kind.startswith("bias"):
                setattr(self, kind, Parameter(init_array(init, shape, dtype), name=kind))

    def construct(self, x, hx=None):
        x = x if isinstance(x, Tensor) else Tensor(x)
        if len(x.shape) != 2 or x.shape[1] != self.input_size:
            raise ValueError(f"x must have shape (batch, {self.input_size}), got {x.shape}")
        bias_ih, bias_hh = getattr(self, "bias_ih", None), getattr(self, "bias_hh", None)
        gi = _linear(x, self.weight_ih, bias_ih)
        step = _MODES[self.mode][1]
        new, _ = step(gi, self._state(hx, x), ops.transpose(self.weight_hh, (1, 0)), bias_hh)
        return new

    def _state(self, hx, x):
        parts = 2 if self.mode == "LSTM" else 1
        if hx is None:
            zeros = tuple(_zero_rows(x, 0, self.hidden_size, x.dtype) for _ in range(parts))
            return zeros if parts == 2 else zeros[0]
        if parts == 2 and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError("For LSTMCell, hx must be a tuple (h, c)")
        states = tuple(t if isinstance(t, Tensor) else Tensor(t)
                       for t in (hx if parts == 2 else (hx,)))
        for t in states:
            if not _fits(t.shape, (x.shape[0], self.hidden_size)):
                raise ValueError(f"hx must have shape (batch, {self.hidden_size}) with x's "
                                 f"batch {x.shape[0]}, got {t.shape}")
        return states if parts == 2 else states[0]

    def __repr__(self):
        return (f"{type(self).__name__}(input_size={self.input_size}, hidden_size="
                f"{self.hidden_size}, has_bias={self.has_bias})")


class RNNCell(_CellBase):
    """h' = nonlinearity(x W_ih^T + b_ih + h W_hh^T + b_hh), tanh or relu."""

    def __init__(self, input_size, hidden_size, has_bias=True, nonlinearity="tanh",
                 dtype=dt.float32):
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if nonlinearity not in modes:
            raise ValueError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__(modes[nonlinearity], input_size, hidden_size, has_bias, dtype)


class GRUCell(_CellBase):
    """One GRU step (gates r, z, n, as nn.GRU's)."""

    def __init__(self, input_size, hidden_size, has_bias=True, dtype=dt.float32):
        super().__init__("GRU", input_size, hidden_size, has_bias, dtype)


class LSTMCell(_CellBase):
    """One LSTM step (gates i, f, g, o, as nn.LSTM's); hx and the result are (h, c)."""

    def __init__(self, input_size, hidden_size, has_bias=True, dtype=dt.float32):
        super().__init__("LSTM", input_size, hidden_size, has_bias, dtype)
