"""MindSpore's dynamic learning-rate functions (mindspore.nn.dynamic_lr): each returns a list
of per-step learning rates, which an optimizer takes as `learning_rate`."""
from __future__ import annotations

import math
import numbers


def _positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"The '{name}' must be an int, but got {type(value).__name__}.")
    if value <= 0:
        raise ValueError(f"The '{name}' must be a positive int, but got {value}.")
    return value


def _float(name, value, positive=True):
    if isinstance(value, bool) or not isinstance(value, float):
        raise TypeError(f"The '{name}' must be a float, but got {type(value).__name__}.")
    if value < 0 or (positive and value == 0):
        raise ValueError(f"The '{name}' must be {'positive' if positive else 'non-negative'}, "
                         f"but got {value}.")
    return value


def _steps(total_step, step_per_epoch, decay_epoch):
    _positive_int("total_step", total_step)
    _positive_int("step_per_epoch", step_per_epoch)
    _positive_int("decay_epoch", decay_epoch)
    return [math.floor(i / step_per_epoch) for i in range(total_step)]  # the epoch of each step


def piecewise_constant_lr(milestone, learning_rates):
    """learning_rates[i] for the steps from milestone[i-1] up to milestone[i]."""
    if not isinstance(milestone, (list, tuple)) or not isinstance(learning_rates, (list, tuple)):
        raise TypeError("The 'milestone' and 'learning_rates' must be lists or tuples.")
    if len(milestone) != len(learning_rates):
        raise ValueError(f"For 'piecewise_constant_lr', the size of 'milestone' must be the "
                         f"same as the size of 'learning_rates', but got {len(milestone)} and "
                         f"{len(learning_rates)}.")
    out, last = [], 0
    for m, lr in zip(milestone, learning_rates):
        _positive_int("milestone", m)
        if isinstance(lr, bool) or not isinstance(lr, numbers.Real):
            raise TypeError(f"The 'learning_rates' must be floats, but got {lr!r}.")
        if m <= last:
            raise ValueError(f"The 'milestone' must be a strictly increasing list, got "
                             f"{list(milestone)}.")
        out += [lr] * (m - last)
        last = m
    return out


def _decayed(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch, rule):
    """[rule(epoch) for each step]: the shared body of the decay schedules below."""
    _float("learning_rate", learning_rate), _float("decay_rate", decay_rate)
    return [rule(epoch) for epoch in _steps(total_step, step_per_epoch, decay_epoch)]


def _progress(epoch, decay_epoch, is_stair):
    """epoch / decay_epoch, floored when is_stair."""
    t = epoch / decay_epoch
    return math.floor(t) if is_stair else t


def exponential_decay_lr(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch,
                         is_stair=False):
    """learning_rate * decay_rate ^ (epoch / decay_epoch) (floored when is_stair)."""
    return _decayed(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch,
                    lambda e: learning_rate * decay_rate ** _progress(e, decay_epoch, is_stair))


def natural_exp_decay_lr(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch,
                         is_stair=False):
    """learning_rate * e ^ (-decay_rate * epoch) (the epoch floored to decay_epoch's multiple
    when is_stair)."""
    def rule(epoch):
        t = math.floor(epoch / decay_epoch) * decay_epoch if is_stair else epoch
        return learning_rate * math.e ** (-decay_rate * t)
    return _decayed(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch, rule)


def inverse_decay_lr(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch,
                     is_stair=False):
    """learning_rate / (1 + decay_rate * epoch / decay_epoch) (floored when is_stair)."""
    return _decayed(
        learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch,
        lambda e: learning_rate / (1 + decay_rate * _progress(e, decay_epoch, is_stair)))


def cosine_decay_lr(min_lr, max_lr, total_step, step_per_epoch, decay_epoch):
    """min_lr + (max_lr - min_lr) / 2 * (1 + cos(pi * min(epoch, decay_epoch) / decay_epoch))."""
    _float("min_lr", min_lr, positive=False), _float("max_lr", max_lr)
    if min_lr >= max_lr:
        raise ValueError(f"The 'max_lr' should be greater than 'min_lr', but got 'max_lr' "
                         f"value: {max_lr}, 'min_lr' value: {min_lr}.")
    delta = 0.5 * (max_lr - min_lr)
    return [min_lr + delta * (1 + math.cos(math.pi * min(epoch, decay_epoch) / decay_epoch))
            for epoch in _steps(total_step, step_per_epoch, decay_epoch)]


def polynomial_decay_lr(learning_rate, end_learning_rate, total_step, step_per_epoch,
                        decay_epoch, power, update_decay_epoch=False):
    """(learning_rate - end) * (1 - t / decay_epoch) ^ power + end, t = min(epoch,
    decay_epoch); with update_decay_epoch the decay period grows to cover the epoch."""
    _float("learning_rate", learning_rate), _float("end_learning_rate", end_learning_rate,
                                                  positive=False)
    _float("power", power)
    delta = learning_rate - end_learning_rate
    out, period = [], decay_epoch
    for epoch in _steps(total_step, step_per_epoch, decay_epoch):
        if update_decay_epoch:  # MindSpore carries the grown period on to later steps
            period, t = period * max(math.ceil(epoch / period), 1), epoch
        else:
            t = min(period, epoch)
        out.append(delta * (1 - t / period) ** power + end_learning_rate)
    return out


def warmup_lr(learning_rate, total_step, step_per_epoch, warmup_epoch):
    """learning_rate * min(epoch, warmup_epoch) / warmup_epoch."""
    _float("learning_rate", learning_rate)
    return [learning_rate * min(epoch, warmup_epoch) / warmup_epoch
            for epoch in _steps(total_step, step_per_epoch, warmup_epoch)]


__all__ = ["piecewise_constant_lr", "exponential_decay_lr", "natural_exp_decay_lr",
           "inverse_decay_lr", "cosine_decay_lr", "polynomial_decay_lr", "warmup_lr"]
