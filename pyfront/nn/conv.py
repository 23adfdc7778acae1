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
from .. import ops_conv as conv_ops
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


class _ConvNd(Cell):
    """MindSpore's convolution layers: weight (out, in / group, *kernel), or (in, out / group,
    *kernel) for the transposed ones; bias (out,) when has_bias. Each call is one ms.conv
    (or ms.conv_input_grad) op."""
    rank = 2
    transposed = False
    channels_last_format = None   # the data_format that puts channels last (Conv2d: NHWC)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, has_bias=False, weight_init=None,
                 bias_init=None, data_format=None, dtype=dt.float32, output_padding=0):
        super().__init__()
        name, r = type(self).__name__, self.rank
        for what, v in (("in_channels", in_channels), ("out_channels", out_channels),
                        ("group", group)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"For '{name}', '{what}' must be a positive int, got {v!r}")
        if in_channels % group or out_channels % group:
            raise ValueError(f"For '{name}', 'in_channels' ({in_channels}) and 'out_channels' "
                             f"({out_channels}) must be divisible by 'group' ({group})")
        formats = ("NCHW", "NCDHW", "NCL", None, self.channels_last_format)
        if data_format not in formats:
            raise ValueError(f"For '{name}', data_format {data_format!r} is not supported")
        self.channels_last = data_format is not None and data_format == self.channels_last_format
        self.in_channels, self.out_channels, self.group = in_channels, out_channels, group
        self.kernel_size = conv_ops.ints(kernel_size, r, "kernel_size")
        self.stride = conv_ops.ints(stride, r, "stride")
        self.dilation = conv_ops.ints(dilation, r, "dilation")
        conv_ops.check_pad_mode(pad_mode, padding, r)
        self.pad_mode, self.padding, self.output_padding = pad_mode, padding, output_padding
        if self.transposed:
            conv_ops.ints(output_padding, r, "output_padding", low=0)
        lead = (in_channels, out_channels // group) if self.transposed else \
            (out_channels, in_channels // group)
        shape = lead + self.kernel_size
        layout = (lead[0],) + self.kernel_size + (lead[1],) if self.channels_last else shape
        self.weight = Parameter(weight_array(weight_init, layout, dtype), name="weight")
        self.has_bias = has_bias
        if has_bias:
            fan_in = lead[1] * math.prod(self.kernel_size)
            self.bias = Parameter(bias_array(bias_init, (out_channels,), dtype, fan_in),
                                  name="bias")

    def construct(self, x):
        channel_axis = len(x.shape) - 1 if self.channels_last else 1
        if len(x.shape) != self.rank + 2 or x.shape[channel_axis] != self.in_channels:
            dims = {1: ["L"], 2: ["H", "W"], 3: ["D", "H", "W"]}[self.rank]
            c = str(self.in_channels)
            layout = ["N"] + (dims + [c] if self.channels_last else [c] + dims)
            raise ValueError(f"expects ({', '.join(layout)}) input (in_channels="
                             f"{self.in_channels}), got shape {tuple(x.shape)}")
        w = self.weight
        if self.channels_last:   # NHWC data, weight (out, kh, kw, in / group)
            x = ops.transpose(x, (0, 3, 1, 2))
            w = ops.transpose(w, (0, 3, 1, 2))
        bias = self.bias if self.has_bias else None
        if self.transposed:
            y = conv_ops.transposed_convolution(
                x, w, bias, self.stride, self.pad_mode, self.padding, self.output_padding,
                self.dilation, self.group, self.rank, type(self).__name__)
        else:
            y = conv_ops.convolution(x, w, bias, self.stride, self.pad_mode, self.padding,
                                     self.dilation, self.group, self.rank, type(self).__name__)
        return ops.transpose(y, (0, 2, 3, 1)) if self.channels_last else y


class Conv1d(_ConvNd):
    """MindSpore's nn.Conv1d: input (N, C_in, L)."""
    rank = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, has_bias=False, weight_init=None,
                 bias_init=None, dtype=dt.float32):
        super().__init__(in_channels, out_channels, kernel_size, stride, pad_mode, padding,
                         dilation, group, has_bias, weight_init, bias_init, None, dtype)


class Conv2d(_ConvNd):
    """MindSpore's nn.Conv2d: input (N, C_in, H, W), or (N, H, W, C_in) with
    data_format="NHWC" (weight (out, kh, kw, in / group) then)."""
    rank = 2
    channels_last_format = "NHWC"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, has_bias=False, weight_init=None,
                 bias_init=None, data_format="NCHW", dtype=dt.float32):
        super().__init__(in_channels, out_channels, kernel_size, stride, pad_mode, padding,
                         dilation, group, has_bias, weight_init, bias_init, data_format, dtype)


class Conv3d(_ConvNd):
    """MindSpore's nn.Conv3d: input (N, C_in, D, H, W)."""
    rank = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, has_bias=False, weight_init=None,
                 bias_init=None, data_format="NCDHW", dtype=dt.float32):
        super().__init__(in_channels, out_channels, kernel_size, stride, pad_mode, padding,
                         dilation, group, has_bias, weight_init, bias_init, data_format, dtype)


class Conv1dTranspose(_ConvNd):
    """MindSpore's nn.Conv1dTranspose: the gradient of a Conv1d with respect to its input."""
    rank, transposed = 1, True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, has_bias=False, weight_init=None,
                 bias_init=None, dtype=dt.float32):
        super().__init__(in_channels, out_channels, kernel_size, stride, pad_mode, padding,
                         dilation, group, has_bias, weight_init, bias_init, None, dtype)


class Conv2dTranspose(_ConvNd):
    """MindSpore's nn.Conv2dTranspose: weight (in, out / group, kh, kw); output H * stride
    for pad_mode "same", (H - 1) * stride + dilation * (k - 1) + 1 - pads + output_padding
    otherwise."""
    rank, transposed = 2, True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, output_padding=0, dilation=1, group=1, has_bias=False,
                 weight_init=None, bias_init=None, dtype=dt.float32):
        super().__init__(in_channels, out_channels, kernel_size, stride, pad_mode, padding,
                         dilation, group, has_bias, weight_init, bias_init, None, dtype,
                         output_padding)


class Conv3dTranspose(_ConvNd):
    """MindSpore's nn.Conv3dTranspose."""
    rank, transposed = 3, True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, output_padding=0, has_bias=False,
                 weight_init=None, bias_init=None, data_format="NCDHW", dtype=dt.float32):
        super().__init__(in_channels, out_channels, kernel_size, stride, pad_mode, padding,
                         dilation, group, has_bias, weight_init, bias_init, data_format, dtype,
                         output_padding)
