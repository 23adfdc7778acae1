"""Losses with MindSpore's names, arguments, defaults and formulas (mindspore.nn.loss),
composed of ms ops so that they fuse and differentiate. `LossBase(reduction)` is the base a
user's loss subclasses: `self.get_loss(x, weights=1.0)` applies the reduction."""
from __future__ import annotations

import numbers

from .. import ops
from ..tensor import Parameter, Tensor
from .cell import Cell

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction, allowed=_REDUCTIONS, who="LossBase"):
    if reduction not in allowed:
        raise ValueError(f"For '{who}', the 'reduction' must be in {list(allowed)}, but got "
                         f"{reduction!r}.")
    return reduction


class LossBase(Cell):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = _check_reduction(reduction, who=type(self).__name__)

    def get_axis(self, x):
        return tuple(range(len(x.shape)))

    def get_loss(self, x, weights=1.0):
        """weights * x, then the mean or the sum over every axis (or x itself for 'none')."""
        if not (isinstance(weights, numbers.Number) and weights == 1.0):
            x = x * weights
        if self.reduction == "mean":
            return ops.reduce_mean(x)
        if self.reduction == "sum":
            return ops.reduce_sum(x)
        return x


_Loss = LossBase  # the old name of the base (MindSpore 1.x)


def _same_shape(who, logits, labels):
    if tuple(logits.shape) != tuple(labels.shape):
        raise ValueError(f"For '{who}', the shape of 'logits' must be the same as 'labels', but "
                         f"got {tuple(logits.shape)} and {tuple(labels.shape)}.")


def _positive(who, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"For '{who}', '{name}' must be a float or an int, got {value!r}")
    if value <= 0:
        raise ValueError(f"For '{who}', '{name}' must be greater than 0, but got {value}.")
    return float(value)


def _constant_tensor(who, name, value):
    """weight / pos_weight: None or a Tensor that is not a Parameter (MindSpore's rule)."""
    if value is None:
        return None
    if isinstance(value, Parameter):
        raise TypeError(f"For '{who}', the '{name}' can not be a Parameter.")
    if not isinstance(value, Tensor):
        raise TypeError(f"For '{who}', the '{name}' must be a Tensor, got "
                        f"{type(value).__name__}.")
    return value


class SoftmaxCrossEntropyWithLogits(LossBase):
    """-sum(labels * log_softmax(logits), -1); with `sparse`, labels are class indices."""

    def __init__(self, sparse=False, reduction="none"):
        super().__init__(reduction)
        self.sparse = sparse

    def construct(self, logits, labels):
        logp = ops.log_softmax(logits, -1)
        if self.sparse:
            labels = ops.one_hot(labels, logits.shape[-1], 1.0, 0.0)
            labels = ops.cast(labels, logp.dtype)
        return self.get_loss(-ops.reduce_sum(labels * logp, -1))


class MSELoss(LossBase):
    def construct(self, logits, labels):
        diff = logits - labels
        return self.get_loss(diff * diff)


class L1Loss(LossBase):
    """|logits - labels| (broadcast)."""

    def construct(self, logits, labels):
        return self.get_loss(ops.abs(logits - labels))


class SmoothL1Loss(LossBase):
    """0.5 d^2 / beta where d = |logits - labels| < beta, d - 0.5 beta elsewhere. MindSpore's
    defaults: beta=1.0, reduction='none'; the shapes must match."""

    def __init__(self, beta=1.0, reduction="none"):
        super().__init__(reduction)
        self.beta = _positive("SmoothL1Loss", "beta", beta)

    def construct(self, logits, labels):
        _same_shape("SmoothL1Loss", logits, labels)
        d = ops.abs(logits - labels)
        return self.get_loss(ops.select(d < self.beta, (0.5 / self.beta) * d * d,
                                        d - 0.5 * self.beta))


class HuberLoss(LossBase):
    """0.5 d^2 where d = |logits - labels| < delta, delta (d - 0.5 delta) elsewhere."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        self.delta = _positive("HuberLoss", "delta", delta)

    def construct(self, logits, labels):
        d = ops.abs(logits - labels)
        return self.get_loss(ops.select(d < self.delta, 0.5 * d * d,
                                        self.delta * (d - 0.5 * self.delta)))


class BCELoss(LossBase):
    """-weight * (y log(x + 1e-12) + (1 - y) log(1 - x + 1e-12)) for probabilities x: the
    epsilon is the one MindSpore's BinaryCrossEntropy kernels add inside the logarithms."""

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction)
        self.weight = _constant_tensor("BCELoss", "weight", weight)

    def construct(self, logits, labels):
        _same_shape("BCELoss", logits, labels)
        eps = 1e-12
        loss = -(labels * ops.log(logits + eps) + (1.0 - labels) * ops.log(1.0 - logits + eps))
        return self.get_loss(loss if self.weight is None else loss * self.weight)


class BCEWithLogitsLoss(LossBase):
    """-weight * (pos_weight * y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))), computed with
    softplus so that large |x| neither overflows nor loses the gradient."""

    def __init__(self, reduction="mean", weight=None, pos_weight=None):
        super().__init__(reduction)
        self.weight = _constant_tensor("BCEWithLogitsLoss", "weight", weight)
        self.pos_weight = _constant_tensor("BCEWithLogitsLoss", "pos_weight", pos_weight)

    def construct(self, logits, labels):
        positive = labels * ops.softplus(-logits)
        if self.pos_weight is not None:
            positive = positive * self.pos_weight
        loss = positive + (1.0 - labels) * ops.softplus(logits)
        return self.get_loss(loss if self.weight is None else loss * self.weight)


class KLDivLoss(LossBase):
    """labels * (log(labels) - logits), 0 where labels are 0; reductions 'none', 'mean'
    (over every element), 'batchmean' (sum / batch size) and 'sum'."""

    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = _check_reduction(reduction, ("none", "mean", "batchmean", "sum"),
                                          "KLDivLoss")

    def construct(self, logits, labels):
        _same_shape("KLDivLoss", logits, labels)
        positive = labels > 0
        # log of 1 where the label is 0: that term is 0 and its gradient stays finite
        safe = ops.select(positive, labels, ops.ones_like(labels))
        loss = ops.select(positive, labels * (ops.log(safe) - logits), ops.zeros_like(labels))
        if self.reduction == "batchmean":
            if not logits.shape:
                raise ValueError("For 'KLDivLoss', 'batchmean' needs inputs of rank >= 1")
            return ops.reduce_sum(loss) * (1.0 / logits.shape[0])
        return self.get_loss(loss)


def _class_axis(logits):
    return 0 if len(logits.shape) == 1 else 1


def _per_class(weight, logits, axis):
    """weight (C,) shaped to broadcast along the class axis of logits."""
    shape = [1] * len(logits.shape)
    shape[axis] = weight.shape[0]
    return ops.reshape(ops.cast(weight, logits.dtype), tuple(shape))


def _check_weight(who, weight):
    weight = _constant_tensor(who, "weight", weight)
    if weight is not None and not weight.dtype.is_float:
        raise TypeError(f"For '{who}', the 'weight' must be a float Tensor, got "
                        f"{weight.dtype.name}.")
    return weight


def _check_ignore_index(who, ignore_index):
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int):
        raise TypeError(f"For '{who}', the 'ignore_index' must be an int, got {ignore_index!r}.")
    return ignore_index


def _nll(logp, labels, weight, ignore_index, reduction, label_smoothing):
    """MindSpore's _nll_loss over class indices: -weight[y] * logp[y] with ignored targets
    masked; 'mean' divides by the summed weights of the kept targets; label smoothing mixes
    in -sum(logp) / C (its 'mean' over every target, as MindSpore computes it)."""
    axis = _class_axis(logp)
    classes = logp.shape[axis]
    if len(labels.shape) != len(logp.shape) - 1 or (
            len(logp.shape) > 1 and tuple(labels.shape) != (logp.shape[0],) + tuple(logp.shape[2:])):
        raise ValueError(f"the shape of 'logits' should be (N, C, d_0, d_1, ...), and the shape "
                         f"of 'labels' should be (N, d_0, d_1, ...), but got 'logits' shape: "
                         f"{tuple(logp.shape)} and 'labels' shape: {tuple(labels.shape)}.")
    keep = ops.not_equal(labels, ignore_index)
    safe = ops.select(keep, labels, ops.zeros_like(labels))
    hot = ops.cast(ops.one_hot(safe, classes, 1.0, 0.0, axis), logp.dtype)
    mask = ops.cast(keep, logp.dtype)
    picked = -ops.reduce_sum(hot * logp, axis)
    if weight is None:
        weights = mask
    else:
        weights = ops.reduce_sum(hot * _per_class(weight, logp, axis), axis) * mask
    loss = picked * weights
    smooth = -ops.reduce_sum(logp, axis) * mask
    if reduction == "sum":
        loss, smooth = ops.reduce_sum(loss), ops.reduce_sum(smooth)
    elif reduction == "mean":
        loss, smooth = ops.reduce_sum(loss) / ops.reduce_sum(weights), ops.reduce_mean(smooth)
    if not label_smoothing:
        return loss
    return (1.0 - label_smoothing) * loss + (label_smoothing / classes) * smooth


class NLLLoss(LossBase):
    """Negative log likelihood of log-probabilities (N, C) or (N, C, d...) at class indices
    (N,) or (N, d...)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.ignore_index = _check_ignore_index("NLLLoss", ignore_index)
        self.weight = _check_weight("NLLLoss", weight)

    def construct(self, logits, labels):
        if not labels.dtype.is_int:
            raise TypeError(f"For 'NLLLoss', the 'labels' must be int32 or int64, got "
                            f"{labels.dtype.name}.")
        return _nll(logits, labels, self.weight, self.ignore_index, self.reduction, 0.0)


class CrossEntropyLoss(LossBase):
    """log_softmax over the class axis (0 for (C,), else 1), then NLLLoss for class-index
    labels (rank one less than logits) or -sum(weight * labels * logp) for probabilities
    (same rank; 'mean' divides by the number of samples)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        self.ignore_index = _check_ignore_index("CrossEntropyLoss", ignore_index)
        if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, float):
            raise TypeError(f"For 'CrossEntropyLoss', the 'label_smoothing' must be a float, "
                            f"got {label_smoothing!r}.")
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"For 'CrossEntropyLoss', the 'label_smoothing' must be in range "
                             f"[0.0, 1.0], but got {label_smoothing}.")
        self.label_smoothing = label_smoothing
        self.weight = _check_weight("CrossEntropyLoss", weight)

    def construct(self, logits, labels):
        axis = _class_axis(logits)
        logp = ops.log_softmax(logits, axis)
        if len(labels.shape) == len(logits.shape) - 1:
            if not labels.dtype.is_int:
                raise TypeError(f"For 'CrossEntropyLoss', class-index 'labels' must be int32 "
                                f"or int64, got {labels.dtype.name}.")
            return _nll(logp, labels, self.weight, self.ignore_index, self.reduction,
                        self.label_smoothing)
        if len(labels.shape) != len(logits.shape):
            raise ValueError(f"For 'CrossEntropyLoss', the rank of 'logits' and 'labels' should "
                             f"be: 1. 'logits.ndim == labels.ndim' for probabilities, 2. "
                             f"'logits.ndim - 1 == labels.ndim' for class indices, but got "
                             f"'logits' rank: {len(logits.shape)} and 'labels' rank: "
                             f"{len(labels.shape)}.")
        _same_shape("CrossEntropyLoss", logits, labels)
        return self._probabilities(logp, ops.cast(labels, logp.dtype), axis)

    def _probabilities(self, logp, labels, axis):
        classes = logp.shape[axis]
        if self.label_smoothing > 0:
            labels = labels * (1.0 - self.label_smoothing) + self.label_smoothing / classes
        terms = logp * labels
        if self.weight is not None:
            terms = terms * _per_class(self.weight, logp, axis)
        if self.reduction == "mean":
            return -ops.reduce_sum(terms) * (classes / logp.size)
        if self.reduction == "sum":
            return -ops.reduce_sum(terms)
        return -ops.reduce_sum(terms, axis)


class CTCLoss(LossBase):
    """Connectionist Temporal Classification loss (nn.CTCLoss): ops.ctc_loss's loss of
    log_probs (T, N, C), targets (N, S), input_lengths and target_lengths (N,)."""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction)
        if isinstance(blank, bool) or not isinstance(blank, int) or blank < 0:
            raise ValueError(f"For 'CTCLoss', blank must be a non-negative int, got {blank!r}")
        self.blank, self.zero_infinity = blank, bool(zero_infinity)

    def construct(self, log_probs, targets, input_lengths, target_lengths):
        return ops.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                            self.reduction, self.zero_infinity)[0]
