"""Conv2d, MaxPool2d and AvgPool2d (NCHW), composed from ms ops, so every piece is fused,
differentiated and lowered for both targets like any other program: the padded input is read
through one strided slice per kernel offset; a convolution sums, over the offsets, the weight's
slice times that window (a matmul each), a pooling folds the windows with maximum or add.

Padding follows MindSpore: pad_mode "valid" (none), "same" (output ceil(in / stride), the extra
row or column at the bottom/right, as TensorFlow) or "pad" with explicit `padding`.
"""
from __future__ import annotations

import math

import numpy as np

from ...dialects import dtypes as dt
from .. import ops
from ..dispatch import call
from ..tensor import Parameter
from .cell import Cell
from .init import bias_array, weight_array


def _pair(v, what):
    pair = (v, v) if isinstance(v, int) else tuple(v)
    if len(pair) != 2 or any(not isinstance(d, int) or d < 1 for d in pair):
        raise ValueError(f"{what} must be a positive int or a pair of them, got {v!r}")
    return pair


def _padding(pad_mode, padding, size, kernel, stride, dilation):
    """((top, bottom), (left, right)) for an input of spatial `size`."""
    if pad_mode == "valid":
        return ((0, 0), (0, 0))
    if pad_mode == "pad":
        p = (padding,) * 4 if isinstance(padding, int) else tuple(padding)
        if len(p) == 2:
            p = (p[0], p[0], p[1], p[1])
        if len(p) != 4 or any(v < 0 for v in p):
            raise ValueError(f"padding must be an int, (h, w) or (top, bottom, left, right) "
                             f"of non-negative ints, got {padding!r}")
        return ((p[0], p[1]), (p[2], p[3]))
    if pad_mode == "same":
        out = []
        for n, k, s, d in zip(size, kernel, stride, dilation):
            total = max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
            out.append((total // 2, total - total // 2))
        return tuple(out)
    raise ValueError(f"pad_mode must be 'same', 'valid' or 'pad', got {pad_mode!r}")


def _pad(x, pads, value=0.0):
    """x (N, C, H, W) inside a border of `value` (ms.strided_slice_grad writes x into zeros)."""
    (top, bottom), (left, right) = pads
    if top == bottom == left == right == 0:
        return x
    n, c, h, w = x.shape
    shape = (n, c, h + top + bottom, w + left + right)
    slot = {"shape": shape, "begin": (0, 0, top, left), "end": (n, c, top + h, left + w),
            "strides": (1, 1, 1, 1)}
    padded = call("ms.strided_slice_grad", (x,), slot)
    if value == 0.0:
        return padded
    inside = call("ms.strided_slice_grad", (ops.ones_like(x),), slot)
    return ops.select(ops.greater(inside, 0), padded, value)


def _windows(x, kernel, stride, dilation, pads, pad_value=0.0, channels_first=False):
    """One strided view of the padded x per kernel offset, in row-major kernel order: each
    (N, C, OH, OW), or with `channels_first` (C, N, OH, OW) from x transposed once."""
    if len(x.shape) != 4:
        raise ValueError(f"expected an (N, C, H, W) input, got shape {tuple(x.shape)}")
    x = _pad(x, pads, pad_value)
    if channels_first:
        x = ops.transpose(x, (1, 0, 2, 3))
    a, b, h, w = x.shape
    out = [(size - (k - 1) * d - 1) // s + 1
           for size, k, s, d in zip((h, w), kernel, stride, dilation)]
    if min(out) < 1:
        raise ValueError(f"the input {(h, w)} (padded) is smaller than the kernel {kernel} "
                         f"with dilation {dilation}")
    views = []
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            top, left = i * dilation[0], j * dilation[1]
            views.append(ops.strided_slice(
                x, (0, 0, top, left),
                (a, b, top + (out[0] - 1) * stride[0] + 1, left + (out[1] - 1) * stride[1] + 1),
                (1, 1) + tuple(stride)))
    return views, out


class Conv2d(Cell):
    """MindSpore's nn.Conv2d (NCHW, group=1): weight (out, in, kh, kw), bias optional."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, has_bias=False, weight_init=None,
                 bias_init=None, data_format="NCHW", dtype=dt.float32):
        super().__init__()
        if group != 1 or data_format != "NCHW":
            raise NotImplementedError("Conv2d supports group=1 and data_format='NCHW'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.stride, self.dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
        self.pad_mode, self.padding = pad_mode, padding
        _padding(pad_mode, padding, (1, 1), self.kernel_size, self.stride, self.dilation)
        shape = (out_channels, in_channels) + self.kernel_size
        self.weight = Parameter(weight_array(weight_init, shape, dtype), name="weight")
        self.has_bias = has_bias
        if has_bias:
            fan_in = in_channels * self.kernel_size[0] * self.kernel_size[1]
            self.bias = Parameter(bias_array(bias_init, (out_channels,), dtype, fan_in),
                                  name="bias")

    def construct(self, x):
        if len(x.shape) != 4 or x.shape[1] != self.in_channels:
            raise ValueError(f"expects (N, {self.in_channels}, H, W) input (in_channels="
                             f"{self.in_channels}), got shape {tuple(x.shape)}")
        pads = _padding(self.pad_mode, self.padding, x.shape[2:], self.kernel_size,
                        self.stride, self.dilation)
        # y = sum over kernel offsets (i, j) of weight[:, :, i, j] @ window(i, j), with the
        # windows as (C, N*OH*OW) matrices: plain matmuls, the running sum fused into each
        # one's epilogue, and no im2col matrix materialized.
        views, (oh, ow) = _windows(x, self.kernel_size, self.stride, self.dilation, pads,
                                   channels_first=True)
        n, c, o = x.shape[0], self.in_channels, self.out_channels
        kw = self.kernel_size[1]
        y = None
        for k, view in enumerate(views):
            i, j = divmod(k, kw)
            tap = ops.reshape(ops.strided_slice(self.weight, (0, 0, i, j), (o, c, i + 1, j + 1),
                                                (1, 1, 1, 1)), (o, c))
            term = ops.matmul(tap, ops.reshape(view, (c, n * oh * ow)))
            y = term if y is None else y + term
        y = ops.transpose(ops.reshape(y, (o, n, oh, ow)), (1, 0, 2, 3))
        if self.has_bias:
            y = y + ops.reshape(self.bias, (1, o, 1, 1))
        return y


class _Pool2d(Cell):
    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", data_format="NCHW"):
        super().__init__()
        if data_format != "NCHW":
            raise NotImplementedError("pooling supports data_format='NCHW'")
        if pad_mode not in self.pad_modes:
            raise ValueError(f"{type(self).__name__} pad_mode must be one of "
                             f"{', '.join(self.pad_modes)}, got {pad_mode!r}")
        self.kernel_size, self.stride = _pair(kernel_size, "kernel_size"), _pair(stride, "stride")
        self.pad_mode = pad_mode

    def _views(self, x, pad_value):
        pads = _padding(self.pad_mode, 0, x.shape[2:], self.kernel_size, self.stride, (1, 1))
        return _windows(x, self.kernel_size, self.stride, (1, 1), pads, pad_value)[0]


class MaxPool2d(_Pool2d):
    """The maximum of each window; "same" padding never wins (it is -inf)."""
    pad_modes = ("valid", "same")

    def construct(self, x):
        views = self._views(x, float("-inf") if x.dtype.is_float else np.iinfo(x.dtype.np).min)
        y = views[0]
        for v in views[1:]:
            y = ops.maximum(y, v)
        return y


class AvgPool2d(_Pool2d):
    """The mean of each window (pad_mode "valid" only: no padded values to count)."""
    pad_modes = ("valid",)

    def construct(self, x):
        views = self._views(x, 0.0)
        y = views[0]
        for v in views[1:]:
            y = y + v
        return y * (1.0 / len(views))
