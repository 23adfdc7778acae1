"""Training wrappers (MindSpore's nn.WithLossCell, nn.WithEvalCell, nn.TrainOneStepCell) and
gradient clipping (nn.ClipByNorm, clip_by_global_norm). TrainOneStepCell's construct is the
functional loop of examples/train_digits.py (value_and_grad, then the optimizer), so in
GRAPH_MODE calling it compiles forward, gradients and update into one executable."""
from __future__ import annotations

import numbers

from .. import ops
from ..location import user_api
from ..tensor import Tensor
from .cell import Cell
from .optim import Optimizer


class WithLossCell(Cell):
    """loss_fn(backbone(data), label)."""

    def __init__(self, backbone, loss_fn):
        super().__init__()
        if not isinstance(backbone, Cell) or not isinstance(loss_fn, Cell):
            raise TypeError("For 'WithLossCell', 'backbone' and 'loss_fn' must be Cells, got "
                            f"{type(backbone).__name__} and {type(loss_fn).__name__}")
        self._backbone, self._loss_fn = backbone, loss_fn

    def construct(self, data, label):
        return self._loss_fn(self._backbone(data), label)

    @property
    def backbone_network(self):
        return self._backbone


class WithEvalCell(Cell):
    """(loss, outputs, label) for evaluation; add_cast_fp32 casts the outputs to float32."""

    def __init__(self, network, loss_fn, add_cast_fp32=False):
        super().__init__()
        self._network, self._loss_fn, self.add_cast_fp32 = network, loss_fn, bool(add_cast_fp32)

    def construct(self, data, label):
        outputs = self._network(data)
        if self.add_cast_fp32:
            from ...dialects import dtypes as dt
            outputs = ops.cast(outputs, dt.float32)
        return self._loss_fn(outputs, label), outputs, label


class TrainOneStepCell(Cell):
    """One training step of `network` (which returns the loss): the gradients of the loss
    with respect to optimizer.parameters, scaled by `sens` (MindSpore's sensitivity, 1.0 when
    None), given to the optimizer; returns the loss (and the gradients with return_grad)."""

    def __init__(self, network, optimizer, sens=None, return_grad=False):
        super().__init__()
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"For 'TrainOneStepCell', 'optimizer' must be an nn.Optimizer, got "
                            f"{type(optimizer).__name__}")
        if sens is not None and (isinstance(sens, bool) or not isinstance(sens, numbers.Real)):
            raise TypeError(f"For 'TrainOneStepCell', 'sens' must be a number or None, got "
                            f"{sens!r}")
        self.network, self.optimizer = network, optimizer
        self.sens = 1.0 if sens is None else float(sens)
        self.return_grad = bool(return_grad)
        from ..grad import value_and_grad
        object.__setattr__(self, "weights", optimizer.parameters)
        object.__setattr__(self, "grad_fn", value_and_grad(network, None, self.weights))
        self.grad_reducer = _grad_reducer(self.weights)

    def construct(self, *inputs):
        loss, grads = self.grad_fn(*inputs)
        if self.sens != 1.0:
            grads = tuple(g * self.sens for g in grads)
        if self.grad_reducer is not None:
            grads = self.grad_reducer(grads)
        self.optimizer(grads)
        return (loss, grads) if self.return_grad else loss


def _grad_reducer(weights):
    """MindSpore's TrainOneStepCell rule: under parallel_mode DATA_PARALLEL the gradients go
    through a DistributedGradReducer (gradients_mean and the group size from the context and
    the job) before the optimizer, so Model.train(...) trains data parallel unchanged."""
    from .. import parallel
    if parallel.get_auto_parallel_context("parallel_mode") != parallel.ParallelMode.DATA_PARALLEL:
        return None
    return parallel.DistributedGradReducer(weights)


def _l2(x, axis=()):
    """sqrt(sum(x^2)) with a zero norm (not NaN) gradient at x = 0."""
    squares = ops.reduce_sum(x * x, axis, keep_dims=True)
    positive = squares > 0
    safe = ops.select(positive, squares, ops.ones_like(squares))
    return ops.select(positive, ops.sqrt(safe), ops.zeros_like(squares))


class ClipByNorm(Cell):
    """x * clip_norm / max(||x||_2, clip_norm), the norm over `axis` (None: every axis)."""

    def __init__(self, axis=None):
        super().__init__()
        if axis is None:
            axis = ()
        elif isinstance(axis, int) and not isinstance(axis, bool):
            axis = (axis,)
        elif not (isinstance(axis, (tuple, list)) and all(isinstance(a, int) for a in axis)):
            raise TypeError(f"For 'ClipByNorm', 'axis' must be None, an int or a tuple of ints, "
                            f"got {axis!r}")
        self.axis = tuple(axis)

    def construct(self, x, clip_norm):
        norm = _l2(x, self.axis)
        return x * clip_norm / ops.maximum(norm, clip_norm)


@user_api("clip_by_global_norm")
def clip_by_global_norm(x, clip_norm=1.0, use_norm=None):
    """MindSpore's ops.clip_by_global_norm: every tensor of `x` (a tuple or list) scaled by
    clip_norm / max(global_norm, clip_norm), global_norm = sqrt(sum of all squares)."""
    if use_norm is not None:
        raise ValueError("For 'clip_by_global_norm', 'use_norm' only supports None (as "
                         "MindSpore's)")
    if isinstance(x, Tensor) or not isinstance(x, (tuple, list)) or not x:
        raise TypeError(f"For 'clip_by_global_norm', 'x' must be a non-empty tuple or list of "
                        f"Tensors, got {type(x).__name__}")
    if isinstance(clip_norm, bool) or not isinstance(clip_norm, (numbers.Real, Tensor)):
        raise TypeError(f"For 'clip_by_global_norm', 'clip_norm' must be a number or a Tensor, "
                        f"got {clip_norm!r}")
    total = ops.reduce_sum(x[0] * x[0])
    for t in x[1:]:
        total = total + ops.reduce_sum(t * t)
    positive = total > 0
    norm = ops.select(positive, ops.sqrt(ops.select(positive, total, ops.ones_like(total))),
                      ops.zeros_like(total))
    scale = clip_norm / ops.maximum(norm, clip_norm)
    return tuple(t * ops.cast(scale, t.dtype) for t in x)
