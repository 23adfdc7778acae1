"""Optimizers that update Parameters through ms.assign, so that a training step under jit
(forward, loss, gradients, update) compiles into one function. State (moments, step powers,
the global step) lives in Parameters too, and is updated the same way.

As MindSpore's Optimizer: `learning_rate` is a number (fixed: a plain attribute, part of the
compiled function's key) or a list / 1-D Tensor / array of per-step values (dynamic: a
Parameter read at `global_step`; past its end the last value is kept, where MindSpore's
gather would read out of range); `weight_decay` applies to the parameters whose names hold
neither 'beta' nor 'gamma' (MindSpore's default filter: not to normalization parameters).
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import ops
from ..tensor import Parameter, Tensor
from .cell import Cell


def _nonnegative(who, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"For '{who}', the '{name}' must be a float or an int, got {value!r}")
    if value < 0:
        raise ValueError(f"For '{who}', the '{name}' must be >= 0, but got {value}.")
    return float(value)


def _open_unit(who, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"For '{who}', the '{name}' must be a float, got {value!r}")
    if not 0.0 < value < 1.0:
        raise ValueError(f"For '{who}', the '{name}' must be in range (0.0, 1.0), but got "
                         f"{value}.")
    return float(value)


class Optimizer(Cell):
    # As MindSpore's optimizers (`@jit def construct`): in PyNative mode too the update of all
    # parameters is one compiled function, not a dozen eager ops per parameter.
    always_compiled = True

    def __init__(self, learning_rate, parameters, weight_decay=0.0):
        super().__init__()
        params = list(parameters)
        if params and any(isinstance(p, dict) for p in params):
            raise TypeError(f"For '{type(self).__name__}', parameter groups (dicts with "
                            "'params', 'lr', 'weight_decay') are not supported by mscc: give "
                            "one list of Parameters")
        if not params or not all(isinstance(p, Parameter) for p in params):
            raise TypeError("an optimizer needs a non-empty list of Parameters")
        object.__setattr__(self, "parameters", params)
        self.weight_decay = _nonnegative(type(self).__name__, "weight_decay", weight_decay)
        object.__setattr__(self, "decay_flags",
                           tuple("beta" not in p.name and "gamma" not in p.name for p in params))
        self.global_step = Parameter(np.zeros((), np.int32), name="global_step",
                                     requires_grad=False)
        self._set_learning_rate(learning_rate)

    def _set_learning_rate(self, lr):
        who = type(self).__name__
        if isinstance(lr, Tensor) and lr.ndim == 0:
            lr = float(lr.asnumpy())
        if isinstance(lr, (Tensor, np.ndarray, list, tuple)):
            values = np.asarray(lr.asnumpy() if isinstance(lr, Tensor) else lr, np.float32)
            if values.ndim != 1 or values.size == 0:
                raise ValueError(f"For '{who}', a dynamic learning_rate must be a non-empty "
                                 f"1-D sequence, got shape {values.shape}")
            if (values < 0).any():
                raise ValueError(f"For '{who}', the learning_rate values must be >= 0")
            self.dynamic_lr = True
            self.learning_rate = Parameter(values, name="learning_rate", requires_grad=False)
        elif isinstance(lr, numbers.Real) and not isinstance(lr, bool):
            self.dynamic_lr = False
            self.learning_rate = _nonnegative(who, "learning_rate", lr)
        else:
            raise TypeError(f"For '{who}', the 'learning_rate' must be a float, int, Tensor or "
                            f"list of floats (mscc has no LearningRateSchedule cells), got "
                            f"{type(lr).__name__}")

    def get_lr(self):
        """This step's learning rate: the fixed value, or the dynamic list at global_step."""
        if not self.dynamic_lr:
            return self.learning_rate
        last = self.learning_rate.shape[0] - 1
        index = ops.minimum(self.global_step, last)
        return ops.reshape(ops.gather(self.learning_rate, ops.reshape(index, (1,)), 0), ())

    def decay_weight(self, i, p, g):
        """g + weight_decay * p for the parameters the decay filter selects."""
        if self.weight_decay and self.decay_flags[i]:
            return g + self.weight_decay * p
        return g

    def construct(self, gradients):
        gradients = tuple(gradients)
        if len(gradients) != len(self.parameters):
            raise ValueError(f"{type(self).__name__} updates {len(self.parameters)} parameters "
                             f"but got {len(gradients)} gradients")
        lr = self.get_lr()
        step = ops.assign(self.global_step, self.global_step + 1)
        self.prepare(step)
        for i, (p, g) in enumerate(zip(self.parameters, gradients)):
            self.update(i, p, self.decay_weight(i, p, g), lr)
        return True

    def prepare(self, step):
        """Per-step work shared by every parameter (bias corrections); `step` counts from 1."""

    def update(self, i, param, grad, lr):
        raise NotImplementedError

    def _state(self, prefix, value=0.0):
        """One state Parameter per parameter, named after it."""
        return [Parameter(np.full(p.shape, value, p.dtype.np), name=f"{prefix}.{p.name}",
                          requires_grad=False) for p in self.parameters]


class SGD(Optimizer):
    """p -= lr * accum, accum = momentum * accum + (1 - dampening) * grad (plain SGD without
    momentum)."""

    def __init__(self, params, learning_rate=0.1, momentum=0.0, dampening=0.0,
                 weight_decay=0.0, nesterov=False, loss_scale=1.0):
        super().__init__(learning_rate, params, weight_decay)
        _no_loss_scale("SGD", loss_scale)
        self.momentum = _nonnegative("SGD", "momentum", momentum)
        self.dampening, self.nesterov = float(dampening), bool(nesterov)
        if nesterov and (not momentum or dampening):
            raise ValueError("For 'SGD', nesterov needs momentum > 0 and dampening = 0")
        if momentum:
            object.__setattr__(self, "accum", self._state("accum"))

    def update(self, i, p, g, lr):
        if not self.momentum:
            ops.assign(p, p - lr * g)
            return
        a = ops.assign(self.accum[i], self.momentum * self.accum[i] + (1 - self.dampening) * g)
        step = g + self.momentum * a if self.nesterov else a
        ops.assign(p, p - lr * step)


class Momentum(Optimizer):
    """MindSpore's ApplyMomentum: accum = momentum * accum + grad; p -= lr * accum."""

    def __init__(self, params, learning_rate, momentum, weight_decay=0.0, loss_scale=1.0,
                 use_nesterov=False):
        super().__init__(learning_rate, params, weight_decay)
        _no_loss_scale("Momentum", loss_scale)
        self.momentum = _nonnegative("Momentum", "momentum", momentum)
        self.use_nesterov = bool(use_nesterov)
        object.__setattr__(self, "moments", self._state("moments"))

    def update(self, i, p, g, lr):
        a = ops.assign(self.moments[i], self.momentum * self.moments[i] + g)
        step = g + self.momentum * a if self.use_nesterov else a
        ops.assign(p, p - lr * step)


class _AdamBase(Optimizer):
    def __init__(self, params, learning_rate, beta1, beta2, eps, weight_decay):
        super().__init__(learning_rate, params, weight_decay)
        who = type(self).__name__
        self.beta1, self.beta2 = _open_unit(who, "beta1", beta1), _open_unit(who, "beta2", beta2)
        self.eps = _nonnegative(who, "eps", eps)
        if not self.eps:
            raise ValueError(f"For '{who}', the 'eps' must be greater than 0")
        object.__setattr__(self, "moment1", self._state("moment1"))
        object.__setattr__(self, "moment2", self._state("moment2"))

    def _moments(self, i, g):
        m = ops.assign(self.moment1[i], self.beta1 * self.moment1[i] + (1 - self.beta1) * g)
        v = ops.assign(self.moment2[i], self.beta2 * self.moment2[i] + (1 - self.beta2) * g * g)
        return m, v


class Adam(_AdamBase):
    """Adam with bias correction folded into the step size, as MindSpore's Adam; the beta
    powers are float32 Parameters, as MindSpore's."""

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                 use_locking=False, use_nesterov=False, weight_decay=0.0, loss_scale=1.0):
        super().__init__(params, learning_rate, beta1, beta2, eps, weight_decay)
        _no_loss_scale("Adam", loss_scale)
        if use_nesterov:
            raise ValueError("For 'Adam', use_nesterov=True is not supported by mscc")
        self.beta1_power = Parameter(np.array(1.0, np.float32), name="beta1_power",
                                     requires_grad=False)
        self.beta2_power = Parameter(np.array(1.0, np.float32), name="beta2_power",
                                     requires_grad=False)

    def prepare(self, step):
        b1p = ops.assign(self.beta1_power, self.beta1_power * self.beta1)
        b2p = ops.assign(self.beta2_power, self.beta2_power * self.beta2)
        object.__setattr__(self, "_correction", ops.sqrt(1.0 - b2p) / (1.0 - b1p))

    def update(self, i, p, g, lr):
        m, v = self._moments(i, g)
        ops.assign(p, p - lr * self._correction * m / (ops.sqrt(v) + self.eps))


class AdamWeightDecay(_AdamBase):
    """MindSpore's AdamWeightDecay (AdamW without bias correction): update = m / (sqrt(v) +
    eps) + weight_decay * p (decoupled from the gradient); p -= lr * update."""

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-6,
                 weight_decay=0.0):
        super().__init__(params, learning_rate, beta1, beta2, eps, weight_decay)

    def decay_weight(self, i, p, g):
        return g  # the decay is added to the update, not to the gradient

    def update(self, i, p, g, lr):
        m, v = self._moments(i, g)
        update = m / (ops.sqrt(v) + self.eps)
        if self.weight_decay and self.decay_flags[i]:
            update = update + self.weight_decay * p
        ops.assign(p, p - lr * update)


class Lamb(_AdamBase):
    """LAMB: r = mhat / (sqrt(vhat) + eps) + weight_decay * p, with bias-corrected moments;
    p -= lr * (||p|| / ||r||) * r, the trust ratio 1 where either norm is 0."""

    def __init__(self, params, learning_rate, beta1=0.9, beta2=0.999, eps=1e-6,
                 weight_decay=0.0):
        super().__init__(params, learning_rate, beta1, beta2, eps, weight_decay)

    def prepare(self, step):
        t = ops.cast(step, self.parameters[0].dtype)
        object.__setattr__(self, "_corrections",
                           (1.0 - ops.pow(self.beta1, t), 1.0 - ops.pow(self.beta2, t)))

    def decay_weight(self, i, p, g):
        return g

    def update(self, i, p, g, lr):
        m, v = self._moments(i, g)
        c1, c2 = self._corrections
        r = (m / c1) / (ops.sqrt(v / c2) + self.eps)
        if self.weight_decay and self.decay_flags[i]:
            r = r + self.weight_decay * p
        w_norm = ops.sqrt(ops.reduce_sum(p * p))
        r_norm = ops.sqrt(ops.reduce_sum(r * r))
        usable = ops.logical_and(w_norm > 0, r_norm > 0)
        ratio = ops.select(usable, w_norm / ops.select(usable, r_norm, ops.ones_like(r_norm)),
                           ops.ones_like(w_norm))
        ops.assign(p, p - lr * ratio * r)


class Adagrad(Optimizer):
    """MindSpore's ApplyAdagrad: accum += g^2; p -= lr * g / sqrt(accum); accum starts at
    `accum` (0.1)."""

    def __init__(self, params, accum=0.1, learning_rate=0.001, update_slots=True,
                 loss_scale=1.0, weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay)
        _no_loss_scale("Adagrad", loss_scale)
        self.update_slots = bool(update_slots)
        object.__setattr__(self, "accum", self._state("accum",
                                                      _nonnegative("Adagrad", "accum", accum)))

    def update(self, i, p, g, lr):
        a = self.accum[i]
        if self.update_slots:
            a = ops.assign(a, a + g * g)
        ops.assign(p, p - lr * g * ops.rsqrt(a))


class RMSProp(Optimizer):
    """MindSpore's ApplyRMSProp (mean_square starts at ones): ms = decay ms + (1 - decay) g^2;
    mom = momentum mom + lr g / sqrt(ms + eps); p -= mom. centered also tracks the mean
    gradient mg and divides by sqrt(ms - mg^2 + eps)."""

    def __init__(self, params, learning_rate=0.1, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking=False, centered=False, loss_scale=1.0, weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay)
        _no_loss_scale("RMSProp", loss_scale)
        self.decay = _nonnegative("RMSProp", "decay", decay)
        self.momentum = _nonnegative("RMSProp", "momentum", momentum)
        self.epsilon = _nonnegative("RMSProp", "epsilon", epsilon)
        if not self.epsilon:
            raise ValueError("For 'RMSProp', the 'epsilon' must be greater than 0")
        self.centered = bool(centered)
        object.__setattr__(self, "mean_square", self._state("mean_square", 1.0))
        object.__setattr__(self, "moment", self._state("moment"))
        if centered:
            object.__setattr__(self, "mean_grad", self._state("mean_grad"))

    def update(self, i, p, g, lr):
        d = self.decay
        ms = ops.assign(self.mean_square[i], d * self.mean_square[i] + (1 - d) * g * g)
        denom = ms + self.epsilon
        if self.centered:
            mg = ops.assign(self.mean_grad[i], d * self.mean_grad[i] + (1 - d) * g)
            denom = denom - mg * mg
        mom = ops.assign(self.moment[i], self.momentum * self.moment[i] + lr * g * ops.rsqrt(denom))
        ops.assign(p, p - mom)


def _no_loss_scale(who, loss_scale):
    """MindSpore's optimizers divide the gradients by loss_scale; mscc's loss scaling is
    ms.amp's scalers (unscale before the optimizer), so only 1.0 is accepted here."""
    if loss_scale != 1.0:
        raise ValueError(f"For '{who}', loss_scale={loss_scale} is not supported by mscc: "
                         "unscale the gradients with ms.amp's loss scaler instead")


__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "AdamWeightDecay", "Lamb", "Adagrad",
           "RMSProp"]
