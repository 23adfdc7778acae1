"""MindSpore's learning-rate schedule cells (mindspore.nn.learning_rate_schedule).

Each is a Cell whose construct maps the current step (an int Tensor) to a float32 scalar
learning rate. Given to an optimizer as `learning_rate=`, it is called on the optimizer's
`global_step` Parameter inside the compiled update, so the rate is computed from data: one
executable serves every step. The hyperparameters are plain attributes, part of the compiled
function's key (changing one recompiles). Formulas follow MindSpore's construct code; where
its docstring differs (NaturalExpDecayLR: e^(-decay_rate * step), not step / decay_steps, and
with is_stair the step floored to a multiple of decay_steps), the code is what runs there.
"""
from __future__ import annotations

import math
import numbers

from .. import ops
from ...dialects.dtypes import float32 as _float32
from .cell import Cell


class LearningRateSchedule(Cell):
    """Base class: subclasses define construct(global_step) returning a scalar Tensor."""

    def construct(self, global_step):
        raise NotImplementedError(f"{type(self).__name__} must define construct(global_step)")


def _is_float(who, name, value):
    if not isinstance(value, float):
        raise TypeError(f"For '{who}', the argument '{name}' must be type of float, but got "
                        f"'{name}' type: {type(value).__name__}.")
    return value


def _positive_float(who, name, value):
    if _is_float(who, name, value) <= 0:
        raise ValueError(f"For '{who}', the '{name}' must be a positive float, but got {value}.")
    return value


def _non_negative_float(who, name, value):
    if _is_float(who, name, value) < 0:
        raise ValueError(f"For '{who}', the '{name}' must be a non-negative float, but got "
                         f"{value}.")
    return value


def _positive_int(who, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"For '{who}', the '{name}' must be an int, but got "
                        f"{type(value).__name__}.")
    if value <= 0:
        raise ValueError(f"For '{who}', the '{name}' must be a positive int, but got {value}.")
    return int(value)


def _bool(who, name, value):
    if not isinstance(value, bool):
        raise TypeError(f"For '{who}', the '{name}' must be a bool, but got "
                        f"{type(value).__name__}.")
    return value


def _step(global_step):
    return ops.cast(global_step, _float32)


class _DecayLR(LearningRateSchedule):
    """The three (learning_rate, decay_rate, decay_steps, is_stair) schedules' checks."""

    def __init__(self, learning_rate, decay_rate, decay_steps, is_stair=False):
        super().__init__()
        who = type(self).__name__
        self.decay_steps = _positive_int(who, "decay_steps", decay_steps)
        self.learning_rate = _positive_float(who, "learning_rate", learning_rate)
        self.decay_rate = _positive_float(who, "decay_rate", decay_rate)
        self.is_stair = _bool(who, "is_stair", is_stair)


class ExponentialDecayLR(_DecayLR):
    """learning_rate * decay_rate ^ p, p = step / decay_steps (floored when is_stair)."""

    def construct(self, global_step):
        p = _step(global_step) / self.decay_steps
        if self.is_stair:
            p = ops.floor(p)
        return self.learning_rate * ops.pow(self.decay_rate, p)


class NaturalExpDecayLR(_DecayLR):
    """learning_rate * e ^ (-decay_rate * p), p = step (with is_stair, floored to a multiple
    of decay_steps), as MindSpore's construct computes it."""

    def construct(self, global_step):
        p = _step(global_step)
        if self.is_stair:
            p = ops.floor(p / self.decay_steps) * self.decay_steps
        return self.learning_rate * ops.exp(-self.decay_rate * p)


class InverseDecayLR(_DecayLR):
    """learning_rate / (1 + decay_rate * p), p = step / decay_steps (floored when is_stair)."""

    def construct(self, global_step):
        p = _step(global_step) / self.decay_steps
        if self.is_stair:
            p = ops.floor(p)
        return self.learning_rate / (1.0 + self.decay_rate * p)


class CosineDecayLR(LearningRateSchedule):
    """min_lr + (max_lr - min_lr) / 2 * (1 + cos(pi * min(step, decay_steps) / decay_steps))."""

    def __init__(self, min_lr, max_lr, decay_steps):
        super().__init__()
        who = "CosineDecayLR"
        self.min_lr = _non_negative_float(who, "min_lr", min_lr)
        self.max_lr = _positive_float(who, "max_lr", max_lr)
        self.decay_steps = _positive_int(who, "decay_steps", decay_steps)
        if min_lr >= max_lr:
            raise ValueError(f"For 'CosineDecayLR', the 'max_lr' must be greater than the "
                             f"'min_lr', but got 'max_lr' value: {max_lr}, 'min_lr' value: "
                             f"{min_lr}.")

    def construct(self, global_step):
        p = _step(ops.minimum(global_step, self.decay_steps))
        delta = 0.5 * (self.max_lr - self.min_lr)
        return self.min_lr + delta * (1.0 + ops.cos(math.pi * p / self.decay_steps))


class PolynomialDecayLR(LearningRateSchedule):
    """(learning_rate - end) * (1 - t / T) ^ power + end with t = min(step, decay_steps) and
    T = decay_steps; with update_decay_steps t = step and T = decay_steps * max(ceil(step /
    decay_steps), 1). (The list function polynomial_decay_lr carries a grown T on to later
    steps; this cell, as MindSpore's, computes T from each step alone.)"""

    def __init__(self, learning_rate, end_learning_rate, decay_steps, power,
                 update_decay_steps=False):
        super().__init__()
        who = "PolynomialDecayLR"
        self.learning_rate = _positive_float(who, "learning_rate", learning_rate)
        self.end_learning_rate = _non_negative_float(who, "end_learning_rate", end_learning_rate)
        self.decay_steps = _positive_int(who, "decay_steps", decay_steps)
        self.update_decay_steps = _bool(who, "update_decay_steps", update_decay_steps)
        self.power = _positive_float(who, "power", power)

    def construct(self, global_step):
        step, period = _step(global_step), float(self.decay_steps)
        if self.update_decay_steps:
            period = period * ops.maximum(ops.ceil(step / period), 1.0)
        else:
            step = ops.minimum(step, period)
        diff = self.learning_rate - self.end_learning_rate
        return diff * ops.pow(1.0 - step / period, self.power) + self.end_learning_rate


class WarmUpLR(LearningRateSchedule):
    """learning_rate * min(step, warmup_steps) / warmup_steps."""

    def __init__(self, learning_rate, warmup_steps):
        super().__init__()
        self.learning_rate = _non_negative_float("WarmUpLR", "learning_rate", learning_rate)
        self.warmup_steps = _positive_int("WarmUpLR", "warmup_steps", warmup_steps)

    def construct(self, global_step):
        return self.learning_rate * _step(ops.minimum(global_step, self.warmup_steps)) \
            / self.warmup_steps


__all__ = ["LearningRateSchedule", "ExponentialDecayLR", "NaturalExpDecayLR", "InverseDecayLR",
           "CosineDecayLR", "PolynomialDecayLR", "WarmUpLR"]
