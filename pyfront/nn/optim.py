"""Optimizers that update Parameters through ms.assign, so that a training step under jit
(forward, loss, gradients, update) compiles into one function. State (moments, step powers,
the global step) lives in Parameters too, and is updated the same way.

As MindSpore's Optimizer: `learning_rate` is a number (fixed: a plain attribute, part of the
compiled function's key), a list / 1-D Tensor / array of per-step values (a Parameter read at
`global_step`; past its end the last value is kept, where MindSpore's gather would read out of
range) or a LearningRateSchedule cell (called on `global_step` inside the compiled update).
Either way one executable serves every step. `weight_decay` applies to the parameters whose
names hold neither 'beta' nor 'gamma' (MindSpore's default filter: not to normalization
parameters; SGD's decays every parameter, as MindSpore's SGD op). `params` may be MindSpore's parameter groups: dicts with 'params' and optionally
'lr', 'weight_decay', 'grad_centralization', plus one {'order_params': [...]} giving the order
of the parameters; a group's missing keys take the optimizer's arguments, and with groups the
decay applies wherever a group's weight_decay is > 0 (names aside), as in MindSpore.
"""
from __future__ import annotations

import numbers
from collections.abc import Iterable

import numpy as np

from .. import ops
from ..tensor import Parameter, Tensor
from .cell import Cell, CellList
from .learning_rate_schedule import LearningRateSchedule


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


_GROUP_KEYS = ("params", "lr", "weight_decay", "grad_centralization", "order_params")


def _parameter_list(parameters, what):
    """MindSpore's _parameters_base_check: an iterable, not None, not empty."""
    if parameters is None:
        raise ValueError(f"Optimizer {what} can not be None.")
    if isinstance(parameters, (Parameter, str, dict)) or not isinstance(parameters, Iterable):
        raise TypeError(f"Optimizer {what} must be Iterable, got {type(parameters).__name__}.")
    parameters = list(parameters)
    if not parameters:
        raise ValueError(f"Optimizer got an empty {what} list.")
    return parameters


def _check_lr(who, lr):
    """MindSpore's _preprocess_single_lr: a number or 0-d Tensor is a fixed rate (a float); a
    list, 1-D Tensor or array holds per-step rates (a float32 array); a LearningRateSchedule
    is computed from the step."""
    if isinstance(lr, LearningRateSchedule):
        return lr
    if isinstance(lr, Tensor) and lr.ndim == 0:
        lr = float(lr.asnumpy())
    if isinstance(lr, numbers.Real) and not isinstance(lr, bool):
        return _nonnegative(who, "learning_rate", lr)
    if isinstance(lr, (Tensor, np.ndarray)) or (isinstance(lr, Iterable) and
                                                 not isinstance(lr, (str, bytes, dict, Cell))):
        values = np.asarray(lr.asnumpy() if isinstance(lr, Tensor) else list(lr), np.float32)
        if values.ndim != 1 or values.size == 0:
            raise ValueError(f"For '{who}', a dynamic learning_rate must be a non-empty 1-D "
                             f"sequence, got shape {values.shape}")
        if (values < 0).any():
            raise ValueError(f"For '{who}', the learning_rate values must be >= 0")
        return values
    raise TypeError(f"For '{who}', the 'learning_rate' should be int, float, Tensor, Iterable or "
                    f"LearningRateSchedule, but got {type(lr).__name__}.")


class _FixedLR(LearningRateSchedule):
    """A group's fixed rate (MindSpore's _ConvertToCell). A plain attribute: part of the
    compiled update's key, so changing it recompiles instead of going stale."""

    def __init__(self, learning_rate):
        super().__init__()
        self.learning_rate = learning_rate

    def construct(self, global_step):
        return self.learning_rate


class _IteratorLR(LearningRateSchedule):
    """Per-step rates (MindSpore's _IteratorLearningRate): a Parameter read at the step, so the
    rate is data, not a constant. Past its end the last value is kept, where MindSpore's
    gather would read out of range."""

    def __init__(self, values, name):
        super().__init__()
        self.learning_rate = Parameter(values, name=name, requires_grad=False)

    def construct(self, global_step):
        index = ops.minimum(global_step, self.learning_rate.shape[0] - 1)
        return ops.reshape(ops.gather(self.learning_rate, ops.reshape(index, (1,)), 0), ())


def _build_lr(lr, name, in_group):
    """The rate as the update reads it: a float (one shared fixed rate) or a schedule cell."""
    if isinstance(lr, np.ndarray):
        return _IteratorLR(lr, name)
    if isinstance(lr, float) and in_group:
        return _FixedLR(lr)
    return lr


def _check_group_keys(groups):
    """MindSpore's _check_group_params: known keys only; an order_params dict holds only that
    key; every other group has a non-empty 'params' of Parameters."""
    for group in groups:
        unknown = [k for k in group if k not in _GROUP_KEYS]
        if unknown:
            raise KeyError(f'The key "{unknown}" cannot be recognized in group params.')
        if "order_params" in group:
            if len(group) > 1:
                raise ValueError("The order params dict in group parameters should only include "
                                 "the 'order_params' key.")
            if not isinstance(group["order_params"], Iterable):
                raise TypeError("The value of 'order_params' should be an Iterable type.")
            continue
        if "params" not in group:
            raise KeyError("A parameter group (a dict) needs the key 'params'.")
        if not all(isinstance(p, Parameter)
                   for p in _parameter_list(group["params"], "group `params`")):
            raise TypeError("The group `params` should be an iterator of Parameter type.")


def _group_lr_sizes(who, groups, default_lr):
    """MindSpore's _parse_group_params: per-step rate lists must all have one length."""
    sizes = {lr.size for lr in [default_lr] + [_check_lr(who, g["lr"]) for g in groups
                                                if "lr" in g] if isinstance(lr, np.ndarray)}
    if len(sizes) > 1:
        raise ValueError("The Tensor type dynamic learning rate in group should be the same size.")


def _parse_groups(who, groups, default_lr, default_wd):
    """MindSpore's _init_group_params: per-parameter lists (params, rate cells or None when no
    group sets 'lr', weight decays, centralization flags), in order_params' order if given.
    A group's missing keys take the optimizer's values; grad_centralization defaults to False."""
    _check_group_keys(groups)
    _group_lr_sizes(who, groups, default_lr)
    default_cell = _build_lr(default_lr, "learning_rate", in_group=True)
    rows, order, seen = [], None, set()
    for n, group in enumerate(groups):
        if "order_params" in group:
            order = list(group["order_params"])
            continue
        lr = (_build_lr(_check_lr(who, group["lr"]), f"learning_rate_group_{n}", True)
              if "lr" in group else default_cell)
        wd = _nonnegative(who, "weight_decay", group.get("weight_decay", default_wd))
        gc = group.get("grad_centralization", False)
        if not isinstance(gc, bool):
            raise TypeError(f"For 'Optimizer', the 'gradients_centralization' should be bool "
                            f"type, but got {type(gc)}.")
        for p in group["params"]:
            if id(p) in seen:
                raise RuntimeError(f"For 'Optimizer', the {p.name} parameter already exists, it "
                                   "does not support repeated setting. Please check whether the "
                                   "optimizer parameter has been set multiple times.")
            seen.add(id(p))
            rows.append((p, lr, wd, gc))
    if order is not None:
        rows = _ordered(rows, order)
    group_lr = any("lr" in g for g in groups)
    p, lr, wd, gc = zip(*rows)
    return list(p), (list(lr) if group_lr else None), wd, gc


def _ordered(rows, order):
    """The rows in the order of `order_params` (MindSpore's _order_and_adjust_group_params)."""
    if len(order) != len(rows):
        raise ValueError("The value of 'order_params' should be same with all group parameters.")
    where = {id(p): i for i, p in enumerate(order)}
    if len(where) != len(order) or any(id(row[0]) not in where for row in rows):
        missing = [row[0].name for row in rows if id(row[0]) not in where]
        raise ValueError(f"The value of 'order_params' should be same with all group "
                         f"parameters; not in it: {missing}")
    return sorted(rows, key=lambda row: where[id(row[0])])


class Optimizer(Cell):
    # As MindSpore's optimizers (`@jit def construct`): in PyNative mode too the update of all
    # parameters is one compiled function, not a dozen eager ops per parameter.
    always_compiled = True

    def __init__(self, learning_rate, parameters, weight_decay=0.0):
        super().__init__()
        who = type(self).__name__
        params = _parameter_list(parameters, "parameters")
        if not (all(isinstance(p, Parameter) for p in params)
                or all(isinstance(p, dict) for p in params)):
            raise TypeError("For 'Optimizer', all elements of the argument 'parameters' must be "
                            "'Parameter' or 'dict'.")
        weight_decay = _nonnegative(who, "weight_decay", weight_decay)
        lr = _check_lr(who, learning_rate)
        self.global_step = Parameter(np.zeros((), np.int32), name="global_step",
                                     requires_grad=False)
        self.is_group = isinstance(params[0], dict)
        if self.is_group:
            params, group_lr, decays, centralize = _parse_groups(who, params, lr, weight_decay)
            self.weight_decay = decays  # a tuple: one per parameter, as MindSpore's
            flags = tuple(wd > 0 for wd in decays)  # groups decay whatever asks, names aside
        else:
            group_lr, centralize = None, (False,) * len(params)
            self.weight_decay = weight_decay
            flags = tuple("beta" not in p.name and "gamma" not in p.name for p in params)
        object.__setattr__(self, "parameters", params)
        object.__setattr__(self, "decay_flags", flags)
        object.__setattr__(self, "grad_centralization_flags", centralize)
        self.is_group_lr = group_lr is not None
        if self.is_group_lr:
            self.learning_rate = CellList(group_lr)
            self.dynamic_lr = any(not isinstance(c, _FixedLR) for c in group_lr)
        else:
            self.learning_rate = _build_lr(lr, "learning_rate", in_group=False)
            self.dynamic_lr = not isinstance(self.learning_rate, float)

    def _static_state(self):
        # Per-parameter weight decays and flags are tuples, which Cell's key leaves out: add
        # them, so that changing one recompiles instead of running with the traced values.
        return super()._static_state() + (
            ("weight_decay", self.weight_decay), ("decay_flags", self.decay_flags),
            ("grad_centralization_flags", self.grad_centralization_flags))

    def get_lr(self):
        """This step's learning rate (a tuple, one per parameter, when groups set 'lr'). As
        MindSpore's, a dynamic rate advances global_step: call it once per step."""
        if self.is_group_lr:
            lr = tuple(self._rate(c) for c in self.learning_rate)
        else:
            lr = self._rate(self.learning_rate)
        if self.dynamic_lr:
            ops.assign(self.global_step, self.global_step + 1)
        return lr

    def _rate(self, source):
        return source if isinstance(source, float) else source(self.global_step)

    def get_lr_parameter(self, param):
        """The rate of `param` (or of each in a list): a Tensor for a fixed rate, the
        Parameter of per-step rates, or the LearningRateSchedule cell (MindSpore's rules)."""
        if not isinstance(param, (Parameter, list)):
            raise TypeError(f"For 'get_lr_parameter', the 'param' must be 'Parameter' or 'list' "
                            f"type, but got {type(param)}.")
        ids = [id(p) for p in self.parameters]
        out = []
        for p in param if isinstance(param, list) else [param]:
            if not isinstance(p, Parameter):
                raise TypeError(f"For '{type(self).__name__}', the 'parameter' must be a "
                                f"Parameter, but got {type(p).__name__}.")
            if id(p) not in ids:
                raise ValueError(f"For 'get_lr_parameter', the parameter {p.name} is not in "
                                 "optimizer, please check whether the argument 'param' is "
                                 "correct.")
            source = (self.learning_rate[ids.index(id(p))] if self.is_group_lr
                      else self.learning_rate)
            if isinstance(source, (_FixedLR, _IteratorLR)):
                source = source.learning_rate
            out.append(Tensor(np.float32(source)) if isinstance(source, float) else source)
        return out if isinstance(param, list) else out[0]

    def weight_decay_of(self, i):
        """Parameter i's weight decay: its group's, else the optimizer's; 0.0 where the decay
        filter leaves it out."""
        wd = self.weight_decay[i] if self.is_group else self.weight_decay
        return wd if self.decay_flags[i] else 0.0

    def decay_weight(self, i, p, g):
        """g + weight_decay * p for the parameters the decay filter (or the groups) select."""
        wd = self.weight_decay_of(i)
        return g + wd * p if wd else g

    def gradients_centralization(self, i, g):
        """MindSpore's Centralization for the groups with grad_centralization: g minus its
        mean over every axis but the first, only where g has 2+ dims and shape[1] % 16 == 0
        (MindSpore's condition: it is meant for convolution kernels)."""
        shape = tuple(g.shape)
        if self.grad_centralization_flags[i] and len(shape) >= 2 and shape[1] % 16 == 0:
            return g - ops.reduce_mean(g, tuple(range(1, len(shape))), keep_dims=True)
        return g

    def preprocess_gradient(self, i, p, g):
        """MindSpore's order in most optimizers: decay_weight, then gradients_centralization."""
        return self.gradients_centralization(i, self.decay_weight(i, p, g))

    def construct(self, gradients):
        gradients = tuple(gradients)
        if len(gradients) != len(self.parameters):
            raise ValueError(f"{type(self).__name__} updates {len(self.parameters)} parameters "
                             f"but got {len(gradients)} gradients")
        step = self.global_step + 1  # this step's number from 1, read before get_lr writes it
        lr = self.get_lr()
        if not self.dynamic_lr:  # (get_lr advanced the step already when the rate is dynamic)
            ops.assign(self.global_step, step)
        self.prepare(step)
        for i, (p, g) in enumerate(zip(self.parameters, gradients)):
            rate = lr[i] if self.is_group_lr else lr
            if isinstance(rate, Tensor) and rate.dtype is not p.dtype:
                rate = ops.cast(rate, p.dtype)  # float32 schedules also serve float16/64 params
            self.update(i, p, self.preprocess_gradient(i, p, g), rate)
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
        params = _parameter_list(params, "parameters")
        if any(isinstance(g, dict) and "weight_decay" in g for g in params):
            raise ValueError("For 'SGD', the key 'weight_decay' of a parameter group is not "
                             "supported: MindSpore's SGD applies its one weight_decay to every "
                             "parameter (using different weight_decay by grouping parameters "
                             "is not supported)")
        super().__init__(learning_rate, params, weight_decay)
        _no_loss_scale("SGD", loss_scale)
        # MindSpore's SGD op decays every parameter (no 'beta'/'gamma' name filter).
        object.__setattr__(self, "decay_flags", (True,) * len(self.parameters))
        self.momentum = _nonnegative("SGD", "momentum", momentum)
        self.dampening, self.nesterov = float(dampening), bool(nesterov)
        if nesterov and (not momentum or dampening):
            raise ValueError("For 'SGD', nesterov needs momentum > 0 and dampening = 0")
        if momentum:
            object.__setattr__(self, "accum", self._state("accum"))

    def preprocess_gradient(self, i, p, g):
        # MindSpore's SGD centralizes first; its SGD op adds the weight decay afterwards.
        return self.decay_weight(i, p, self.gradients_centralization(i, g))

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
        if self.weight_decay_of(i):
            update = update + self.weight_decay_of(i) * p
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
        if self.weight_decay_of(i):
            r = r + self.weight_decay_of(i) * p
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
