"""MindSpore's functional convolutions (ops.conv1d/2d/3d, ops.conv_transpose2d) over the ms.conv
ops, and the geometry the layers (pyfront/nn/conv.py) and Primitives share: MindSpore's pad
modes turned into explicit pads.

Pad modes: "valid" (none), "same" (output ceil(in / stride), the odd extra row or column at the
end, as TensorFlow and MindSpore do) or "pad" with explicit `padding`: an int (every side), one
int per spatial dim (both sides of it) or two per dim ((head, tail) pairs, MindSpore's
(top, bottom, left, right) order for 2-D).
"""
from __future__ import annotations

import math
import operator

from ..dialects.ops.conv import batch_as_attr
from .dispatch import call
from .location import user_api

PAD_MODES = ("same", "valid", "pad")


def ints(value, rank, what, low=1):
    """`value` (an int, or a tuple of `rank` ints) as a tuple of `rank` ints >= low."""
    vals = tuple(value) if isinstance(value, (tuple, list)) else (value,) * rank
    if len(vals) != rank or any(not isinstance(v, int) or isinstance(v, bool) or v < low
                                for v in vals):
        kind = "positive" if low == 1 else "non-negative"
        raise ValueError(f"{what} must be a {kind} int or a tuple of {rank} of them, got "
                         f"{value!r}")
    return vals


def explicit_pads(padding, rank):
    """(lo, hi) tuples from MindSpore's `padding` of pad_mode "pad"."""
    p = (padding,) * (2 * rank) if isinstance(padding, int) else tuple(padding)
    if len(p) == rank:
        p = tuple(v for v in p for _ in (0, 1))
    if len(p) != 2 * rank or any(not isinstance(v, int) or v < 0 for v in p):
        raise ValueError(f"padding must be a non-negative int, {rank} or {2 * rank} of them, "
                         f"got {padding!r}")
    return p[0::2], p[1::2]


def pads(pad_mode, padding, sizes, kernel, stride, dilation):
    """(pad_lo, pad_hi) per spatial dim for an input of spatial `sizes`."""
    rank = len(kernel)
    if pad_mode == "valid":
        return (0,) * rank, (0,) * rank
    if pad_mode == "pad":
        return explicit_pads(padding, rank)
    if pad_mode == "same":
        lo, hi = [], []
        for n, k, s, d in zip(sizes, kernel, stride, dilation):
            total = max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
            lo.append(total // 2)
            hi.append(total - total // 2)
        return tuple(lo), tuple(hi)
    raise ValueError(f"pad_mode must be one of {', '.join(PAD_MODES)}, got {pad_mode!r}")


def check_pad_mode(pad_mode, padding, rank):
    """Validate the pad arguments up front (a layer checks them at construction)."""
    if pad_mode not in PAD_MODES:
        raise ValueError(f"pad_mode must be one of {', '.join(PAD_MODES)}, got {pad_mode!r}")
    if pad_mode != "pad" and padding not in (0, (0,) * rank, (0,) * 2 * rank):
        raise ValueError(f"padding must be 0 when pad_mode is '{pad_mode}', got {padding!r}")
    explicit_pads(padding, rank)


def _spatial(x, weight, rank, name):
    if len(x.shape) != rank + 2 or len(weight.shape) != rank + 2:
        raise ValueError(f"For '{name}', expects an input of rank {rank + 2} (N, C, "
                         f"{'*spatial' if rank > 1 else 'L'}) and a weight of the same rank, "
                         f"got shapes {tuple(x.shape)} and {tuple(weight.shape)}")
    return tuple(x.shape[2:]), tuple(weight.shape[2:])


def _add_bias(y, bias):
    if bias is None:
        return y
    from . import ops
    return y + ops.reshape(bias, (1, -1) + (1,) * (len(y.shape) - 2))


def convolution(x, weight, bias, stride, pad_mode, padding, dilation, groups, rank, name):
    """y = conv(x, weight) + bias over `rank` spatial dims, MindSpore's pad modes."""
    sizes, kernel = _spatial(x, weight, rank, name)
    stride, dilation = ints(stride, rank, "stride"), ints(dilation, rank, "dilation")
    groups = operator.index(groups)
    check_pad_mode(pad_mode, padding, rank)
    lo, hi = pads(pad_mode, padding, sizes, kernel, stride, dilation)
    y = call("ms.conv", (x, weight), {"stride": stride, "dilation": dilation, "pad_lo": lo,
                                      "pad_hi": hi, "groups": groups})
    return _add_bias(y, bias)


def transposed_sizes(sizes, kernel, stride, dilation, pad_mode, padding, output_padding):
    """(output sizes, pad_lo, pad_hi) of a transposed convolution: the input size of the
    convolution whose gradient it is, and that convolution's pads."""
    rank = len(kernel)
    extra = ints(output_padding, rank, "output_padding", low=0)
    if pad_mode == "same":
        out = tuple(n * s for n, s in zip(sizes, stride))
        lo, hi = pads("same", 0, out, kernel, stride, dilation)
        return out, lo, hi
    lo, hi = pads(pad_mode, padding, sizes, kernel, stride, dilation)
    # (n - 1) * s + span - pads. MindSpore's 1-D and 2-D ones (Conv2DBackpropInput sized by
    # nn's _deconv_output_length) give at least n * s for "valid", where the stride exceeds
    # the dilated kernel (the rows no window reads get zeros); Conv3DTranspose does not.
    floor = 0 if pad_mode != "valid" or rank > 2 else 1
    out = tuple(max((n - 1) * s + (k - 1) * d + 1, floor * n * s) - a - b + e
                for n, k, s, d, a, b, e in zip(sizes, kernel, stride, dilation, lo, hi, extra))
    if any(e >= max(s, d) for e, s, d in zip(extra, stride, dilation)):
        raise ValueError(f"output_padding {extra} must be smaller than the stride or the "
                         f"dilation")
    return out, lo, hi


def transposed_convolution(x, weight, bias, stride, pad_mode, padding, output_padding,
                           dilation, groups, rank, name):
    """The gradient of conv(., weight) applied to x: weight (C_in, C_out / groups, *kernel)."""
    sizes, kernel = _spatial(x, weight, rank, name)
    stride, dilation = ints(stride, rank, "stride"), ints(dilation, rank, "dilation")
    groups = operator.index(groups)
    check_pad_mode(pad_mode, padding, rank)
    out, lo, hi = transposed_sizes(sizes, kernel, stride, dilation, pad_mode, padding,
                                   output_padding)
    if min(out) < 1:
        raise ValueError(f"For '{name}', the output size {out} is not positive")
    shape = (x.shape[0], weight.shape[1] * groups) + out
    y = call("ms.conv_input_grad", (x, weight),
             {"stride": stride, "dilation": dilation, "pad_lo": lo, "pad_hi": hi,
              "groups": groups, "input_shape": batch_as_attr(shape)})
    return _add_bias(y, bias)


def _functional(rank, name):
    @user_api(name)
    def conv(input, weight, bias=None, stride=1, pad_mode="valid", padding=0,  # noqa: A002
             dilation=1, groups=1):
        if isinstance(padding, str):   # MindSpore 2.3+: padding="same" | "valid"
            pad_mode, padding = padding, 0
        return convolution(input, weight, bias, stride, pad_mode, padding, dilation, groups,
                           rank, name)
    conv.__name__ = conv.__qualname__ = name
    conv.__doc__ = (f"MindSpore's ops.{name}: a {rank}-D convolution of input (N, C_in, ...) "
                    f"by weight (C_out, C_in / groups, *kernel), plus bias (C_out,).")
    return conv


conv1d = _functional(1, "conv1d")
conv2d = _functional(2, "conv2d")
conv3d = _functional(3, "conv3d")


@user_api("conv_transpose2d")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0,  # noqa: A002
                     output_padding=0, groups=1, dilation=1):
    """MindSpore 2.x's ops.conv_transpose2d (PyTorch's arguments): weight (C_in, C_out /
    groups, kh, kw), `padding` removed from both sides of the output."""
    return transposed_convolution(input, weight, bias, stride, "pad", padding, output_padding,
                                  dilation, groups, 2, "conv_transpose2d")
