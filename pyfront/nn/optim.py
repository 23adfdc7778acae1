"""Optimizers that update Parameters through ms.assign, so that a training step under jit
(forward, loss, gradients, update) compiles into one function. State (moments, step powers)
lives in Parameters too, and is updated the same way."""
from __future__ import annotations

import numpy as np

from .. import ops
from ..tensor import Parameter
from .cell import Cell


class Optimizer(Cell):
    # As MindSpore's optimizers (`@jit def construct`): in PyNative mode too the update of all
    # parameters is one compiled function, not a dozen eager ops per parameter.
    always_compiled = True

    def __init__(self, learning_rate, parameters, weight_decay=0.0):
        super().__init__()
        params = list(parameters)
        if not params or not all(isinstance(p, Parameter) for p in params):
            raise TypeError("an optimizer needs a non-empty list of Parameters")
        object.__setattr__(self, "parameters", params)
        self.learning_rate = float(learning_rate)
        self.weight_decay = float(weight_decay)

    def _state(self, prefix, value=0.0):
        """One state Parameter per parameter, named after it."""
        return [Parameter(np.full(p.shape, value, p.dtype.np), name=f"{prefix}.{p.name}",
                          requires_grad=False) for p in self.parameters]

    def construct(self, gradients):
        gradients = tuple(gradients)
        if len(gradients) != len(self.parameters):
            raise ValueError(f"{type(self).__name__} updates {len(self.parameters)} parameters "
                             f"but got {len(gradients)} gradients")
        for i, (p, g) in enumerate(zip(self.parameters, gradients)):
            if self.weight_decay:
                g = g + self.weight_decay * p
            self.update(i, p, g)
        return True

    def update(self, i, param, grad):
        raise NotImplementedError


class SGD(Optimizer):
    """p -= lr * accum, accum = momentum * accum + (1 - dampening) * grad (plain SGD without
    momentum)."""

    def __init__(self, params, learning_rate=0.1, momentum=0.0, dampening=0.0,
                 weight_decay=0.0, nesterov=False):
        super().__init__(learning_rate, params, weight_decay)
        self.momentum, self.dampening, self.nesterov = float(momentum), float(dampening), nesterov
        if momentum:
            object.__setattr__(self, "accum", self._state("accum"))

    def update(self, i, p, g):
        if not self.momentum:
            ops.assign(p, p - self.learning_rate * g)
            return
        a = ops.assign(self.accum[i], self.momentum * self.accum[i] + (1 - self.dampening) * g)
        step = g + self.momentum * a if self.nesterov else a
        ops.assign(p, p - self.learning_rate * step)


class Momentum(Optimizer):
    """MindSpore's ApplyMomentum: accum = momentum * accum + grad; p -= lr * accum."""

    def __init__(self, params, learning_rate, momentum, weight_decay=0.0, use_nesterov=False):
        super().__init__(learning_rate, params, weight_decay)
        self.momentum, self.use_nesterov = float(momentum), use_nesterov
        object.__setattr__(self, "moments", self._state("moments"))

    def update(self, i, p, g):
        a = ops.assign(self.moments[i], self.momentum * self.moments[i] + g)
        step = g + self.momentum * a if self.use_nesterov else a
        ops.assign(p, p - self.learning_rate * step)


class Adam(Optimizer):
    """Adam with bias correction folded into the step size, as MindSpore's Adam."""

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                 weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay)
        self.beta1, self.beta2, self.eps = float(beta1), float(beta2), float(eps)
        object.__setattr__(self, "moment1", self._state("moment1"))
        object.__setattr__(self, "moment2", self._state("moment2"))
        self.beta1_power = Parameter(np.array(1.0, np.float32), name="beta1_power",
                                     requires_grad=False)
        self.beta2_power = Parameter(np.array(1.0, np.float32), name="beta2_power",
                                     requires_grad=False)

    def construct(self, gradients):
        b1p = ops.assign(self.beta1_power, self.beta1_power * self.beta1)
        b2p = ops.assign(self.beta2_power, self.beta2_power * self.beta2)
        object.__setattr__(self, "_step_size",
                           self.learning_rate * ops.sqrt(1.0 - b2p) / (1.0 - b1p))
        return super().construct(gradients)

    def update(self, i, p, g):
        m = ops.assign(self.moment1[i], self.beta1 * self.moment1[i] + (1 - self.beta1) * g)
        v = ops.assign(self.moment2[i], self.beta2 * self.moment2[i] + (1 - self.beta2) * g * g)
        ops.assign(p, p - self._step_size * m / (ops.sqrt(v) + self.eps))


__all__ = ["Optimizer", "SGD", "Momentum", "Adam"]
