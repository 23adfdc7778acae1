"""ms.amp: mixed precision as in MindSpore 2.x.

`auto_mixed_precision(network, amp_level)`: "O0" changes nothing; "O2" computes the network in
float16 except LayerNorm and BatchNorm (kept in float32, as MindSpore keeps its normalizations) and casts the
output back to float32, so the loss is float32; "O3" computes everything in float16 and casts
the output to float32. Parameters stay float32 (the master weights): cells cast them with
ms.cast ops, visible in the IR, and their gradients flow back through the casts.

Loss scaling: `StaticLossScaler(scale_value)` and `DynamicLossScaler(scale_value,
scale_factor, scale_window)` with `scale`, `unscale` and `adjust(grads_finite)`; `all_finite`.
"""
from __future__ import annotations

import numpy as np

from ..dialects import dtypes as dt
from . import ops, pytree
from .nn.cell import Cell
from .nn.layers import LayerNorm, _BatchNorm
from .tensor import Parameter, Tensor

_LEVELS = ("O0", "O2", "O3")


class _OutputTo32(Cell):
    """Casts the wrapped network's float outputs to float32."""

    def __init__(self, network):
        super().__init__()
        self.network = network

    def construct(self, *args):
        out = self.network(*args)
        leaves, tree = pytree.flatten(out)
        leaves = [ops.cast(x, dt.float32) if isinstance(x, Tensor) and x.dtype.is_float
                  and x.dtype is not dt.float32 else x for x in leaves]
        return pytree.unflatten(tree, leaves)


def auto_mixed_precision(network: Cell, amp_level="O0") -> Cell:
    if amp_level not in _LEVELS:
        raise ValueError(f"amp_level must be one of {', '.join(_LEVELS)} (O1 is not supported)")
    if amp_level == "O0":
        return network
    network.to_float(dt.float16)
    if amp_level == "O2":
        for _, cell in network.cells_and_names():
            if isinstance(cell, (LayerNorm, _BatchNorm)):
                object.__setattr__(cell, "_compute_dtype", dt.float32)
    return _OutputTo32(network)


def all_finite(inputs) -> Tensor:
    """True when no element of any tensor in `inputs` is inf or nan."""
    leaves = pytree.flatten(inputs)[0]
    result = None
    for g in leaves:
        finite = ops.logical_and(ops.equal(g, g), ops.less(ops.abs(g), float("inf")))
        finite = ops.reduce_min(finite)
        result = finite if result is None else ops.logical_and(result, finite)
    return result if result is not None else Tensor(True)


class StaticLossScaler:
    def __init__(self, scale_value):
        self.scale_value = Parameter(np.array(scale_value, np.float32), name="scale_value",
                                     requires_grad=False)

    def scale(self, inputs):
        return pytree.unflatten(*_map(inputs, lambda x: x * self.scale_value))

    def unscale(self, inputs):
        return pytree.unflatten(*_map(inputs, lambda x: x / self.scale_value))

    def adjust(self, grads_finite):
        return True


class DynamicLossScaler(StaticLossScaler):
    """Halve (divide by scale_factor) the scale after a step with inf/nan gradients; multiply
    it by scale_factor after `scale_window` finite steps in a row."""

    def __init__(self, scale_value, scale_factor=2, scale_window=1000):
        super().__init__(scale_value)
        self.scale_factor = float(scale_factor)
        self.scale_window = int(scale_window)
        self.counter = 0

    def adjust(self, grads_finite):
        finite = bool(grads_finite.asnumpy()) if isinstance(grads_finite, Tensor) else bool(grads_finite)
        scale = float(self.scale_value.asnumpy())
        if finite:
            self.counter += 1
            if self.counter >= self.scale_window:
                scale *= self.scale_factor
                self.counter = 0
        else:
            scale = max(scale / self.scale_factor, 1.0)
            self.counter = 0
        self.scale_value.set_data(np.array(scale, np.float32))
        return finite


def _map(inputs, fn):
    leaves, tree = pytree.flatten(inputs)
    return tree, [fn(x) for x in leaves]
