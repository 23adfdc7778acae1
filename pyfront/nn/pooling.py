"""MindSpore 2.x's pooling layers: MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d
and AdaptiveMaxPool1d/2d/3d, over the ms pooling ops (one kernel each way, whatever the
window: dialects/ops/pooling.py) through pyfront/ops_pool.py.

Arguments as MindSpore's: pad_mode "valid" (the default), "same" or "pad" (any case), with
`padding` an int, one per spatial dim or a (head, tail) pair per dim; max pooling's padding,
dilation, return_indices and ceil_mode only with pad_mode "pad" (MindSpore's rule); an
average's padding only with "pad", where count_include_pad says whether it counts ("same"'s
never does). The 2-D layers take data_format "NHWC" (transposed in and out). Inputs may come
without the batch axis. Every argument is checked when the layer is built.
"""
from __future__ import annotations

from .. import ops_pool
from .cell import Cell


def _channels_last(data_format):
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    return data_format == "NHWC"


def _nonzero(padding):
    return any(v != 0 for v in (padding if isinstance(padding, (tuple, list)) else (padding,)))


class _MaxPoolNd(Cell):
    rank = 2

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, dilation=1,
                 return_indices=False, ceil_mode=False, data_format="NCHW"):
        super().__init__()
        mode = ops_pool.pad_mode_of(pad_mode)
        if mode != "pad" and (_nonzero(padding) or dilation not in (1, (1,) * self.rank)
                               or return_indices or ceil_mode):
            raise ValueError(f"padding, dilation, return_indices and ceil_mode must keep their "
                             f"defaults unless pad_mode is 'pad', got pad_mode={pad_mode!r}, "
                             f"padding={padding!r}, dilation={dilation!r}, return_indices="
                             f"{return_indices!r}, ceil_mode={ceil_mode!r}")
        self.kernel_size, self.stride, self.pad_mode = kernel_size, stride, mode
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode
        self.data_format = data_format
        self._pool = ops_pool.Pooling("max", self.rank, type(self).__name__, kernel_size,
                                      stride, mode, padding, dilation, ceil_mode,
                                      return_indices=return_indices,
                                      channels_last=_channels_last(data_format))

    def construct(self, x):
        return self._pool(x)


class MaxPool1d(_MaxPoolNd):
    """The maximum of each window over (N, C, L); padding never wins."""
    rank = 1

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, dilation=1,
                 return_indices=False, ceil_mode=False):
        super().__init__(kernel_size, stride, pad_mode, padding, dilation, return_indices,
                         ceil_mode)


class MaxPool2d(_MaxPoolNd):
    """The maximum of each window over (N, C, H, W); padding never wins."""
    rank = 2


class MaxPool3d(_MaxPoolNd):
    """The maximum of each window over (N, C, D, H, W); padding never wins."""
    rank = 3

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, dilation=1,
                 return_indices=False, ceil_mode=False):
        super().__init__(kernel_size, stride, pad_mode, padding, dilation, return_indices,
                         ceil_mode)


class _AvgPoolNd(Cell):
    rank = 2

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None, data_format="NCHW"):
        super().__init__()
        if divisor_override == 0:
            raise ValueError("divisor_override must not be 0 (None: the window's count)")
        self.kernel_size, self.stride = kernel_size, stride
        self.pad_mode, self.padding = ops_pool.pad_mode_of(pad_mode), padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override, self.data_format = divisor_override, data_format
        self._pool = ops_pool.Pooling("avg", self.rank, type(self).__name__, kernel_size,
                                      stride, self.pad_mode, padding, 1, ceil_mode,
                                      count_include_pad, divisor_override,
                                      channels_last=_channels_last(data_format))

    def construct(self, x):
        return self._pool(x)


class AvgPool1d(_AvgPoolNd):
    """The mean of each window over (N, C, L)."""
    rank = 1

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__(kernel_size, stride, pad_mode, padding, ceil_mode, count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """The mean of each window over (N, C, H, W), or divisor_override's quotient."""
    rank = 2


class AvgPool3d(_AvgPoolNd):
    """The mean of each window over (N, C, D, H, W), or divisor_override's quotient."""
    rank = 3

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__(kernel_size, stride, pad_mode, padding, ceil_mode, count_include_pad,
                         divisor_override)


class _AdaptivePoolNd(Cell):
    rank, kind = 2, "avg"

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        ops_pool._output_sizes(output_size, (1,) * self.rank, type(self).__name__)  # (a check)
        self.output_size, self.return_indices = output_size, return_indices

    def construct(self, x):
        return ops_pool.adaptive(x, self.kind, self.rank, type(self).__name__,
                                 self.output_size, self.return_indices)


class AdaptiveAvgPool1d(_AdaptivePoolNd):
    """Output cell i is the mean of input [floor(i * L / out), ceil((i + 1) * L / out))."""
    rank = 1

    def __init__(self, output_size):
        super().__init__(output_size)


class AdaptiveAvgPool2d(_AdaptivePoolNd):
    """Output cell (i, j) is the mean of the input's box [floor(i * H / out_h),
    ceil((i + 1) * H / out_h)) x (the same along W); None keeps a dim's size."""
    rank = 2

    def __init__(self, output_size):
        super().__init__(output_size)


class AdaptiveAvgPool3d(_AdaptivePoolNd):
    """AdaptiveAvgPool2d's windows along D, H and W."""
    rank = 3

    def __init__(self, output_size):
        super().__init__(output_size)


class AdaptiveMaxPool1d(_AdaptivePoolNd):
    """Output cell i is the maximum of input [floor(i * L / out), ceil((i + 1) * L / out))."""
    rank, kind = 1, "max"


class AdaptiveMaxPool2d(_AdaptivePoolNd):
    """The maximum over AdaptiveAvgPool2d's boxes; return_indices needs the output size to
    divide the input's."""
    rank, kind = 2, "max"


class AdaptiveMaxPool3d(_AdaptivePoolNd):
    """The maximum over AdaptiveAvgPool3d's boxes."""
    rank, kind = 3, "max"
