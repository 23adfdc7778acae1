"""Losses: SoftmaxCrossEntropyWithLogits and MSELoss (MindSpore's semantics)."""
from __future__ import annotations

from .. import ops
from .cell import Cell

_REDUCTIONS = ("mean", "sum", "none")


class _Loss(Cell):
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(f"reduction must be one of {', '.join(_REDUCTIONS)}, got {reduction!r}")
        self.reduction = reduction

    def reduce(self, x):
        if self.reduction == "mean":
            return ops.reduce_mean(x)
        if self.reduction == "sum":
            return ops.reduce_sum(x)
        return x


class SoftmaxCrossEntropyWithLogits(_Loss):
    """-sum(labels * log_softmax(logits), -1); with `sparse`, labels are class indices."""

    def __init__(self, sparse=False, reduction="none"):
        super().__init__(reduction)
        self.sparse = sparse

    def construct(self, logits, labels):
        logp = ops.log_softmax(logits, -1)
        if self.sparse:
            labels = ops.one_hot(labels, logits.shape[-1], 1.0, 0.0)
            labels = ops.cast(labels, logp.dtype)
        return self.reduce(-ops.reduce_sum(labels * logp, -1))


class MSELoss(_Loss):
    def construct(self, logits, labels):
        diff = logits - labels
        return self.reduce(diff * diff)
