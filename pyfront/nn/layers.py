"""Layers: Dense, activations, Softmax, LayerNorm, Flatten (MindSpore's nn names)."""
from __future__ import annotations

import math

from ...dialects import dtypes as dt
from .. import ops
from ..tensor import Parameter
from .cell import Cell
from .init import initializer


class Dense(Cell):
    """y = activation(x @ weight.T + bias), weight of shape (out_channels, in_channels)."""

    def __init__(self, in_channels, out_channels, weight_init="he_uniform", bias_init=None,
                 has_bias=True, activation=None, dtype=dt.float32):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.weight = Parameter(initializer(weight_init, (out_channels, in_channels), dtype),
                                name="weight")
        self.has_bias = has_bias
        if has_bias:
            bias = initializer(bias_init if bias_init is not None else "bias_uniform",
                               (out_channels,), dtype, fan_in=in_channels)
            self.bias = Parameter(bias, name="bias")
        self.activation = _activation(activation)

    def construct(self, x):
        shape = x.shape
        if len(shape) != 2:
            x = ops.reshape(x, (-1, shape[-1]))
        y = ops.matmul(x, self.weight, transpose_b=True)
        if self.has_bias:
            y = y + self.bias
        if self.activation is not None:
            y = self.activation(y)
        if len(shape) != 2:
            y = ops.reshape(y, shape[:-1] + (self.out_channels,))
        return y

    def __repr__(self):
        return (f"Dense(in_channels={self.in_channels}, out_channels={self.out_channels}, "
                f"has_bias={self.has_bias})")


class ReLU(Cell):
    def construct(self, x):
        return ops.relu(x)


class Tanh(Cell):
    def construct(self, x):
        return ops.tanh(x)


class Sigmoid(Cell):
    def construct(self, x):
        return ops.sigmoid(x)


class GELU(Cell):
    """approximate=True (MindSpore's default): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)));
    approximate=False: the exact 0.5 x (1 + erf(x / sqrt(2)))."""

    def __init__(self, approximate=True):
        super().__init__()
        self.approximate = bool(approximate)

    def construct(self, x):
        if not self.approximate:
            return 0.5 * x * (1.0 + ops.erf(x * (1 / math.sqrt(2))))
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1.0 + ops.tanh(inner))


class Softmax(Cell):
    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis

    def construct(self, x):
        return ops.softmax(x, self.axis)


class Flatten(Cell):
    """(N, ...) -> (N, prod(...))."""

    def construct(self, x):
        return ops.reshape(x, (x.shape[0], -1))


class LayerNorm(Cell):
    """Normalize over the axes from `begin_norm_axis`, then scale by gamma and shift by beta."""

    def __init__(self, normalized_shape, begin_norm_axis=-1, begin_params_axis=-1,
                 epsilon=1e-7, dtype=dt.float32):
        super().__init__()
        self.normalized_shape = tuple(normalized_shape)
        self.begin_norm_axis = begin_norm_axis
        self.epsilon = epsilon
        self.gamma = Parameter(initializer("ones", self.normalized_shape, dtype), name="gamma")
        self.beta = Parameter(initializer("zeros", self.normalized_shape, dtype), name="beta")

    def construct(self, x):
        rank = len(x.shape)
        begin = self.begin_norm_axis % rank
        axes = tuple(range(begin, rank))
        mean = ops.reduce_mean(x, axes, keep_dims=True)
        centered = x - mean
        var = ops.reduce_mean(centered * centered, axes, keep_dims=True)
        return centered * ops.rsqrt(var + self.epsilon) * self.gamma + self.beta


_ACTIVATIONS = {"relu": ReLU, "tanh": Tanh, "sigmoid": Sigmoid, "gelu": GELU,
                "softmax": Softmax}


def _activation(act):
    if act is None or isinstance(act, Cell):
        return act
    try:
        return _ACTIVATIONS[act.lower()]()
    except (KeyError, AttributeError):
        raise ValueError(f"unknown activation {act!r}; use one of {', '.join(_ACTIVATIONS)}") from None
