"""MindSpore's convolution layers: nn.Conv1d/2d/3d and nn.Conv1d/2d/3dTranspose, each call one
ms.conv (or ms.conv_input_grad) op through pyfront/ops_conv.py, which turns MindSpore's pad
modes into explicit pads. (Pooling layers: pyfront/nn/pooling.py.)
"""
from __future__ import annotations

import math

from ...dialects import dtypes as dt
from .. import ops
from .. import ops_conv as conv_ops
from ..tensor import Parameter
from .cell import Cell
from .init import bias_array, weight_array


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
