"""Activation cells beyond ReLU/Tanh/Sigmoid/GELU/Softmax (MindSpore's nn names and
defaults): each calls its functional op in pyfront/ops.py (one composition of elementwise ms
ops, so it fuses and differentiates)."""
from __future__ import annotations

import numbers

import numpy as np

from .. import ops
from ..tensor import Parameter, Tensor
from .cell import Cell


class LeakyReLU(Cell):
    """max(alpha * x, x) for alpha <= 1 (MindSpore computes it so), min(...) above 1."""

    def __init__(self, alpha=0.2):
        super().__init__()
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
            raise TypeError(f"For 'LeakyReLU', 'alpha' must be a number, got {alpha!r}")
        self.alpha = float(alpha)

    def construct(self, x):
        pick = ops.maximum if self.alpha <= 1 else ops.minimum
        return pick(x * self.alpha, x)


class ELU(Cell):
    """x for x > 0, alpha * (exp(x) - 1) otherwise. (MindSpore's Elu kernel only takes
    alpha=1.0; mscc computes any alpha.)"""

    def __init__(self, alpha=1.0):
        super().__init__()
        self.alpha = float(alpha)

    def construct(self, x):
        return ops.elu(x, self.alpha)


class SiLU(Cell):
    """x * sigmoid(x)."""

    def construct(self, x):
        return ops.silu(x)


class Mish(Cell):
    """x * tanh(softplus(x))."""

    def construct(self, x):
        return ops.mish(x)


class HSwish(Cell):
    """x * relu6(x + 3) / 6."""

    def construct(self, x):
        return ops.hardswish(x)


class HSigmoid(Cell):
    """relu6(x + 3) / 6."""

    def construct(self, x):
        return ops.relu6(x + 3.0) * (1.0 / 6.0)


class ReLU6(Cell):
    """min(max(x, 0), 6)."""

    def construct(self, x):
        return ops.relu6(x)


class LogSoftmax(Cell):
    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis

    def construct(self, x):
        return ops.log_softmax(x, self.axis)


class Identity(Cell):
    def construct(self, x):
        return x


class PReLU(Cell):
    """max(0, x) + w * min(0, x), w a Parameter of shape (channel,) applied along axis 1
    (one value for all channels when channel=1). MindSpore's names: channel=1, w=0.25."""

    def __init__(self, channel=1, w=0.25):
        super().__init__()
        if isinstance(channel, bool) or not isinstance(channel, numbers.Integral) or channel < 1:
            raise ValueError(f"For 'PReLU', 'channel' must be a positive int, got {channel!r}")
        if isinstance(w, (numbers.Real, np.floating)) and not isinstance(w, bool):
            weight = np.full((channel,), float(w), np.float32)
        elif isinstance(w, (list, tuple, np.ndarray, Tensor)):
            weight = np.asarray(w.asnumpy() if isinstance(w, Tensor) else w)
            if weight.shape != (channel,):
                raise ValueError(f"For 'PReLU', 'w' must have shape ({channel},), got "
                                 f"{weight.shape}")
            if weight.dtype.kind != "f":
                weight = weight.astype(np.float32)
        else:
            raise TypeError(f"For 'PReLU', 'w' must be a float, list, tuple or Tensor, got "
                            f"{type(w).__name__}")
        self.channel = int(channel)
        self.w = Parameter(weight, name="a")

    def construct(self, x):
        w = self.w
        if self.channel != 1:
            if x.ndim < 2 or x.shape[1] != self.channel:
                raise ValueError(f"For 'PReLU', the input must have {self.channel} channels "
                                 f"on axis 1, got shape {tuple(x.shape)}")
            w = ops.reshape(w, (1, self.channel) + (1,) * (x.ndim - 2))
        return ops.relu(x) + w * ops.minimum(x, 0.0)


class Dropout2d(Cell):
    """Zero whole channels of an (N, C, H, W) input with probability p in training and
    scale the rest by 1 / (1 - p); the identity in inference (MindSpore's nn.Dropout2d)."""

    def __init__(self, p=0.5):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
            raise ValueError(f"For 'Dropout2d', 'p' must be a float in range [0, 1], got {p!r}")
        self.p = float(p)

    def construct(self, x):
        if x.ndim != 4:
            raise ValueError(f"For 'Dropout2d', the input must be 4-D (N, C, H, W), got "
                             f"shape {tuple(x.shape)}")
        if not self.training or self.p == 0.0:
            return x
        if self.p == 1.0:
            return ops.zeros_like(x)
        keep = ops.greater_equal(ops.uniform(x.shape[:2] + (1, 1)), self.p)
        return x * ops.cast(keep, x.dtype) * (1.0 / (1.0 - self.p))

