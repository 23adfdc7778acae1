"""Parameter initializers (MindSpore's names) and the global seed."""
from __future__ import annotations

import math

import numpy as np

from ...dialects import dtypes as dt

_rng = np.random.default_rng(0)


def set_seed(seed: int):
    """Seed the initializers and the random numbers of compiled code (dropout), whose counter
    starts again (ms.set_seed)."""
    global _rng
    _rng = np.random.default_rng(seed)
    from ..ops import _RandomState
    _RandomState.reset(seed)


def _fans(shape):
    if len(shape) < 2:
        return shape[0] if shape else 1, shape[0] if shape else 1
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def initializer(init, shape, dtype=dt.float32, fan_in=None) -> np.ndarray:
    """A numpy array for `init`: a name ("zeros", "ones", "normal", "uniform", "he_uniform",
    "xavier_uniform", "bias_uniform"), a number, or an array. `fan_in` overrides the fan-in
    computed from the shape (a bias takes its layer's)."""
    dtype = dt.as_dtype(dtype)
    shape = tuple(shape)
    if isinstance(init, (int, float)):
        return np.full(shape, init, dtype.np)
    if not isinstance(init, str):
        arr = np.asarray(init, dtype.np)
        if arr.shape != shape:
            raise ValueError(f"initializer has shape {arr.shape}, expected {shape}")
        return arr
    fan_in, fan_out = (fan_in, _fans(shape)[1]) if fan_in is not None else _fans(shape)
    if init == "zeros":
        arr = np.zeros(shape)
    elif init == "ones":
        arr = np.ones(shape)
    elif init == "normal":
        arr = _rng.normal(0.0, 0.01, shape)
    elif init == "uniform":
        arr = _rng.uniform(-0.07, 0.07, shape)
    elif init == "he_uniform":  # MindSpore's Dense default: HeUniform(negative_slope=sqrt(5))
        gain = math.sqrt(2.0 / (1 + 5.0))
        bound = gain * math.sqrt(3.0 / fan_in)
        arr = _rng.uniform(-bound, bound, shape)
    elif init == "bias_uniform":  # Dense bias: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        bound = 1 / math.sqrt(fan_in)
        arr = _rng.uniform(-bound, bound, shape)
    elif init == "xavier_uniform":
        bound = math.sqrt(6.0 / (fan_in + fan_out))
        arr = _rng.uniform(-bound, bound, shape)
    else:
        raise ValueError(f"unknown initializer '{init}'")
    return arr.astype(dtype.np)
