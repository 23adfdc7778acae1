"""Parameter initializers with MindSpore's names and semantics (mindspore.common.initializer),
and the global seed.

An initializer is an object (`Normal(sigma=0.01)`, `HeUniform(negative_slope=0)`, ...) or its
name ("normal", "he_uniform", "zeros", ...; case-insensitive, as MindSpore's alias table); a
number or an array is a constant. `initializer(init, shape, dtype)` gives a Tensor; layers
take the same values as `weight_init=` / `bias_init=`. Random initializers draw from one
numpy generator that `ms.set_seed` restarts.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ...dialects import dtypes as dt

_rng = np.random.default_rng(0)
_seed = 0


def set_seed(seed: int):
    """Seed the initializers, the datasets' shuffles (unless ms.dataset.config.set_seed) and
    the random numbers of compiled code (dropout), whose counter starts again (ms.set_seed)."""
    global _rng, _seed
    _rng, _seed = np.random.default_rng(seed), int(seed)
    from ..ops import _RandomState
    _RandomState.reset(seed)


def global_seed() -> int:
    """The seed last given to ms.set_seed (0 before)."""
    return _seed


def _fans(shape):
    """MindSpore's _calculate_fan_in_and_fan_out: (in, out) of a weight (out, in, *kernel)."""
    if len(shape) < 2:
        raise ValueError(f"'fan_in' and 'fan_out' can not be computed for initializer with "
                         f"fewer than 2 dimensions, but got dimensions {len(shape)}.")
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity, param=None):
    """MindSpore's (and PyTorch's) recommended gain for a nonlinearity."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, numbers.Real):
            raise ValueError(f"negative_slope {slope!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"The argument 'nonlinearity' should be one of {list(linear)} + "
                     f"['tanh', 'relu', 'leaky_relu', 'selu'], but got {nonlinearity!r}.")


class Initializer:
    """Base class: `init(shape)` gives a float64 numpy array of `shape`."""

    def __call__(self, shape):
        return np.asarray(self._draw(tuple(shape)), np.float64)

    def _draw(self, shape):
        raise NotImplementedError

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class Zero(Initializer):
    def _draw(self, shape):
        return np.zeros(shape)


class One(Initializer):
    def _draw(self, shape):
        return np.ones(shape)


class Constant(Initializer):
    def __init__(self, value):
        self.value = value

    def _draw(self, shape):
        return np.full(shape, self.value, np.float64)


class Normal(Initializer):
    """N(mean, sigma^2)."""

    def __init__(self, sigma=0.01, mean=0.0):
        self.sigma, self.mean = sigma, mean

    def _draw(self, shape):
        return _rng.normal(self.mean, self.sigma, shape)


class Uniform(Initializer):
    """U(-scale, scale)."""

    def __init__(self, scale=0.07):
        self.scale = scale

    def _draw(self, shape):
        return _rng.uniform(-self.scale, self.scale, shape)


class TruncatedNormal(Initializer):
    """N(mean, sigma^2) restricted to [a, b] (absolute bounds, as MindSpore 2.x), by
    redrawing the values that fall outside."""

    def __init__(self, sigma=0.01, mean=0.0, a=-2.0, b=2.0):
        if not a < b:
            raise ValueError(f"TruncatedNormal needs a < b, got a={a}, b={b}")
        self.sigma, self.mean, self.a, self.b = sigma, mean, a, b

    def _draw(self, shape):
        out = _rng.normal(self.mean, self.sigma, shape)
        bad = (out < self.a) | (out > self.b)
        while bad.any():
            out[bad] = _rng.normal(self.mean, self.sigma, int(bad.sum()))
            bad = (out < self.a) | (out > self.b)
        return out


class _Kaiming(Initializer):
    def __init__(self, negative_slope=0, mode="fan_in", nonlinearity="leaky_relu"):
        if mode not in ("fan_in", "fan_out"):
            raise ValueError(f"'mode' must be 'fan_in' or 'fan_out', but got {mode!r}.")
        self.negative_slope, self.mode, self.nonlinearity = negative_slope, mode, nonlinearity
        calculate_gain(nonlinearity, negative_slope)  # a bad nonlinearity fails here

    def _std(self, shape):
        fan_in, fan_out = _fans(shape)
        fan = fan_in if self.mode == "fan_in" else fan_out
        return calculate_gain(self.nonlinearity, self.negative_slope) / math.sqrt(fan)


class HeUniform(_Kaiming):
    """U(-b, b), b = gain * sqrt(3 / fan) (Kaiming uniform)."""

    def _draw(self, shape):
        bound = math.sqrt(3.0) * self._std(shape)
        return _rng.uniform(-bound, bound, shape)


class HeNormal(_Kaiming):
    """N(0, std^2), std = gain / sqrt(fan) (Kaiming normal)."""

    def _draw(self, shape):
        return _rng.normal(0.0, self._std(shape), shape)


class XavierUniform(Initializer):
    """U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out))."""

    def __init__(self, gain=1):
        self.gain = gain

    def _draw(self, shape):
        fan_in, fan_out = _fans(shape)
        bound = self.gain * math.sqrt(6.0 / (fan_in + fan_out))
        return _rng.uniform(-bound, bound, shape)


class XavierNormal(Initializer):
    """N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""

    def __init__(self, gain=1):
        self.gain = gain

    def _draw(self, shape):
        fan_in, fan_out = _fans(shape)
        return _rng.normal(0.0, self.gain * math.sqrt(2.0 / (fan_in + fan_out)), shape)


# MindSpore's alias table (initializer names are looked up lower-cased).
_ALIASES = {"zeros": Zero, "zero": Zero, "ones": One, "one": One, "normal": Normal,
            "uniform": Uniform, "truncatednormal": TruncatedNormal,
            "truncated_normal": TruncatedNormal, "he_uniform": HeUniform,
            "heuniform": HeUniform, "he_normal": HeNormal, "henormal": HeNormal,
            "xavier_uniform": XavierUniform, "xavieruniform": XavierUniform,
            "xavier_normal": XavierNormal, "xaviernormal": XavierNormal}


def _as_initializer(init):
    if isinstance(init, Initializer):
        return init
    if isinstance(init, str):
        try:
            return _ALIASES[init.lower()]()
        except KeyError:
            raise ValueError(f"unknown initializer {init!r}; use one of "
                             f"{', '.join(sorted(_ALIASES))}, an Initializer, a number or "
                             "an array") from None
    if isinstance(init, type) and issubclass(init, Initializer):
        return init()
    return None


def init_array(init, shape, dtype=dt.float32) -> np.ndarray:
    """The numpy array of `init` (an Initializer, its name, a number, an array or a Tensor)
    for `shape` in `dtype`: what layers store in their Parameters."""
    dtype, shape = dt.as_dtype(dtype), tuple(shape)
    chosen = _as_initializer(init)
    if chosen is not None:
        return chosen(shape).astype(dtype.np)
    if isinstance(init, bool) or init is None:
        raise TypeError(f"an initializer must be an Initializer, a name, a number or an "
                        f"array, got {init!r}")
    if isinstance(init, numbers.Number):
        return np.full(shape, init, dtype.np)
    arr = np.asarray(init.asnumpy() if hasattr(init, "asnumpy") else init, dtype.np)
    if arr.shape != shape:
        raise ValueError(f"initializer has shape {arr.shape}, expected {shape}")
    return arr


def initializer(init, shape=None, dtype=dt.float32):
    """MindSpore's `initializer(init, shape, dtype)`: a Tensor of `shape` and `dtype`
    initialized by `init`. mscc computes it at once (MindSpore defers it until the Tensor is
    first used; the values are the same kind). A Tensor or array `init` gives its own shape."""
    from ..tensor import Tensor
    if shape is None:
        if not hasattr(init, "shape"):
            raise ValueError("initializer needs a shape unless init is a Tensor or an array")
        shape = init.shape
    if isinstance(shape, numbers.Integral):
        shape = (int(shape),)
    return Tensor(init_array(init, shape, dtype), dtype=dtype)


def weight_array(init, shape, dtype):
    """A Dense/Conv2d weight: `init`, by default MindSpore 2.x's HeUniform(sqrt(5))."""
    return init_array(HeUniform(math.sqrt(5)) if init is None else init, shape, dtype)


def bias_array(init, shape, dtype, fan_in):
    """A Dense/Conv2d bias: `init`, by default MindSpore 2.x's U(-1/sqrt(fan_in), ...)."""
    return init_array(Uniform(1.0 / math.sqrt(fan_in)) if init is None else init, shape, dtype)


__all__ = ["Initializer", "Zero", "One", "Constant", "Normal", "Uniform", "TruncatedNormal",
           "HeUniform", "HeNormal", "XavierUniform", "XavierNormal", "initializer",
           "calculate_gain", "set_seed"]
