"""Layers: Dense, activations, Softmax, LayerNorm, Flatten (MindSpore's nn names)."""
from __future__ import annotations

import numbers

import numpy as np

from ...dialects import dtypes as dt
from .. import ops
from ..tensor import Parameter
from . import activation as _act
from .cell import Cell
from .init import bias_array, init_array, weight_array


class Dense(Cell):
    """y = activation(x @ weight.T + bias), weight of shape (out_channels, in_channels)."""

    def __init__(self, in_channels, out_channels, weight_init=None, bias_init=None,
                 has_bias=True, activation=None, dtype=dt.float32):
        super().__init__()
        for what, v in (("in_channels", in_channels), ("out_channels", out_channels)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"For 'Dense', '{what}' must be a positive int, got {v!r}")
        if not isinstance(has_bias, (bool, np.bool_)):
            raise TypeError(f"For 'Dense', 'has_bias' must be a bool, got {has_bias!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.weight = Parameter(weight_array(weight_init, (out_channels, in_channels), dtype),
                                name="weight")
        self.has_bias = has_bias
        if has_bias:
            bias = bias_array(bias_init, (out_channels,), dtype, in_channels)
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
        return ops.gelu(x, "tanh" if self.approximate else "none")


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
                 gamma_init="ones", beta_init="zeros", epsilon=1e-7, dtype=dt.float32):
        super().__init__()
        self.normalized_shape = tuple(normalized_shape)
        self.begin_norm_axis = begin_norm_axis
        self.epsilon = epsilon
        self.gamma = Parameter(init_array(gamma_init, self.normalized_shape, dtype), name="gamma")
        self.beta = Parameter(init_array(beta_init, self.normalized_shape, dtype), name="beta")

    def construct(self, x):
        rank = len(x.shape)
        begin = self.begin_norm_axis % rank
        axes = tuple(range(begin, rank))
        mean = ops.reduce_mean(x, axes, keep_dims=True)
        centered = x - mean
        var = ops.reduce_mean(centered * centered, axes, keep_dims=True)
        return centered * ops.rsqrt(var + self.epsilon) * self.gamma + self.beta


class Dropout(Cell):
    """MindSpore's nn.Dropout(keep_prob=None, p=None): in training, zero each element with
    probability p (= 1 - keep_prob, default 0.5) and scale the rest by 1 / (1 - p); the
    identity in inference."""

    def __init__(self, keep_prob=None, p=None, seed=None):
        super().__init__()
        if keep_prob is not None and p is not None:
            raise ValueError("give keep_prob or p, not both")
        self.p = float(p if p is not None else 1 - keep_prob if keep_prob is not None else 0.5)
        if not 0.0 <= self.p < 1.0:
            raise ValueError(f"Dropout's p must be in [0, 1), got {self.p}")
        self.seed = seed

    def construct(self, x):
        return ops.dropout(x, self.p, self.training, self.seed)


class _BatchNorm(Cell):
    """MindSpore's BatchNorm over the channel axis 1. Training (`set_train()`, or
    use_batch_statistics=True) normalizes with the batch's mean and (biased) variance and
    updates the moving statistics through ms.assign, moving = momentum * moving + (1 - momentum)
    * batch (the variance unbiased, as cuDNN does); inference uses the moving statistics."""

    rank = None  # the input rank the subclass takes

    def __init__(self, num_features, eps=1e-5, momentum=0.9, affine=True, gamma_init="ones",
                 beta_init="zeros", moving_mean_init="zeros", moving_var_init="ones",
                 use_batch_statistics=None, dtype=dt.float32):
        super().__init__()
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"momentum must be in [0, 1], got {momentum}")
        self.num_features, self.eps, self.momentum = num_features, float(eps), float(momentum)
        self.use_batch_statistics = use_batch_statistics
        shape = (num_features,)
        self.gamma = Parameter(init_array(gamma_init, shape, dtype), name="gamma",
                               requires_grad=affine)
        self.beta = Parameter(init_array(beta_init, shape, dtype), name="beta",
                              requires_grad=affine)
        self.moving_mean = Parameter(init_array(moving_mean_init, shape, dtype),
                                     name="mean", requires_grad=False)
        self.moving_variance = Parameter(init_array(moving_var_init, shape, dtype),
                                         name="variance", requires_grad=False)

    def construct(self, x):
        if len(x.shape) != self.rank or x.shape[1] != self.num_features:
            raise ValueError(f"expects input of rank {self.rank} with {self.num_features} "
                             f"channels on axis 1 (num_features={self.num_features}), got "
                             f"shape {tuple(x.shape)}")
        batch = self.training if self.use_batch_statistics is None else self.use_batch_statistics
        # The statistics are written into the Parameters themselves (self._params): under
        # to_float, the attributes are cast copies.
        moving_mean, moving_var = self._params["moving_mean"], self._params["moving_variance"]
        return ops.batch_norm(x, moving_mean if batch else self.moving_mean,
                              moving_var if batch else self.moving_variance, self.gamma,
                              self.beta, training=bool(batch), momentum=1.0 - self.momentum,
                              eps=self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) inputs."""
    rank = 2


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W) inputs."""
    rank = 4


class Embedding(Cell):
    """A lookup table: ids of any shape -> ids.shape + (embedding_size,), gathered from the
    Parameter `embedding_table` (vocab_size, embedding_size); MindSpore's arguments. With
    use_one_hot the lookup is one_hot(ids) @ table (a matmul). padding_idx's row starts as
    zeros. An id outside [0, vocab_size) reads zeros (the gather's rule)."""

    def __init__(self, vocab_size, embedding_size, use_one_hot=False, embedding_table="normal",
                 dtype=dt.int32, padding_idx=None):
        super().__init__()
        for what, v in (("vocab_size", vocab_size), ("embedding_size", embedding_size)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"For 'Embedding', '{what}' must be a positive int, got {v!r}")
        if dt.as_dtype(dtype) not in (dt.int32, dt.int64):
            raise TypeError(f"For 'Embedding', 'dtype' (of the input ids) must be int32 or "
                            f"int64, got {dt.as_dtype(dtype).name}")
        if padding_idx is not None and not (isinstance(padding_idx, int)
                                            and 0 <= padding_idx < vocab_size):
            raise ValueError(f"For 'Embedding', 'padding_idx' must be an int in [0, "
                             f"{vocab_size}), got {padding_idx!r}")
        self.vocab_size, self.embedding_size = vocab_size, embedding_size
        self.use_one_hot, self.dtype, self.padding_idx = bool(use_one_hot), dtype, padding_idx
        table = init_array(embedding_table, (vocab_size, embedding_size), dt.float32)
        if padding_idx is not None:
            table[padding_idx] = 0
        self.embedding_table = Parameter(table, name="embedding_table")

    def construct(self, ids):
        if not ids.dtype.is_int:
            raise TypeError(f"For 'Embedding', the ids must be integers, got {ids.dtype.name}")
        flat = ops.reshape(ids, (-1,))
        if self.use_one_hot:
            hot = ops.one_hot(flat, self.vocab_size, 1.0, 0.0)
            out = ops.matmul(ops.cast(hot, self.embedding_table.dtype), self.embedding_table)
        else:
            out = ops.gather(self.embedding_table, flat, 0)
        return ops.reshape(out, tuple(ids.shape) + (self.embedding_size,))


_ACTIVATIONS = {"relu": ReLU, "tanh": Tanh, "sigmoid": Sigmoid, "gelu": GELU,
                "softmax": Softmax}
# MindSpore's get_activation names for the cells of activation.py
_ACTIVATIONS.update({"logsoftmax": _act.LogSoftmax, "relu6": _act.ReLU6, "elu": _act.ELU,
                     "prelu": _act.PReLU, "leakyrelu": _act.LeakyReLU, "hswish": _act.HSwish,
                     "hsigmoid": _act.HSigmoid, "silu": _act.SiLU, "mish": _act.Mish})


def _activation(act):
    if act is None or isinstance(act, Cell):
        return act
    try:
        return _ACTIVATIONS[act.lower()]()
    except (KeyError, AttributeError):
        raise ValueError(f"unknown activation {act!r}; use one of {', '.join(_ACTIVATIONS)}") from None
