"""MindSpore's pooling functions (ops.max_pool2d/3d, ops.avg_pool1d/2d/3d, ops.adaptive_*) over
the ms pooling ops (dialects/ops/pooling.py), and the argument handling the layers
(pyfront/nn/pooling.py) and the Primitives share.

Pad modes as for convolutions (pyfront/ops_conv.py): "valid", "same" (TensorFlow's: output
ceil(in / stride), the odd extra row at the end) or "pad" with explicit `padding`: an int, one
per spatial dim (both sides) or a (head, tail) pair per dim. Max pooling's padding never wins;
an average counts explicit padding when `count_include_pad`, never "same"'s (as TensorFlow's
SAME and MindSpore's AvgPool primitive). Inputs are (N, C, *spatial) or unbatched
(C, *spatial); `channels_last` reads and returns (N, *spatial, C) (data_format "NHWC").

Adaptive pooling takes windows [floor(i * in / out), ceil((i + 1) * in / out)) per dim: one
pooling op where `out` divides `in` (stride in / out, kernel in / out), else one slice and one
reduction per output index of that dim, joined by concatenation. Max and mean over a box are
nested maxima and means over its dims, so the dims are done one after the other: the number of
ops is the sum of the output sizes of the dims that do not divide, not their product.
"""
from __future__ import annotations

import operator

import numpy as np

from .dispatch import call
from .location import user_api
from .ops_conv import explicit_pads, ints, pads
from .tensor import Tensor

PAD_MODES = ("same", "valid", "pad")


def _one(value):
    """MindSpore reads a 1-tuple as its entry (kernel_size=(3,) is 3 along every dim)."""
    return value[0] if isinstance(value, (tuple, list)) and len(value) == 1 else value


def _flag(value, what):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be a bool, got {type(value).__name__} {value!r}")
    return bool(value)


def pad_mode_of(pad_mode):
    """MindSpore's pad modes are case-insensitive."""
    mode = pad_mode.lower() if isinstance(pad_mode, str) else pad_mode
    if mode not in PAD_MODES:
        raise ValueError(f"pad_mode must be one of {', '.join(PAD_MODES)} (any case), got "
                         f"{pad_mode!r}")
    return mode


def _geometry(rank, kernel_size, stride, dilation):
    kernel = ints(_one(kernel_size), rank, "kernel_size")
    stride = kernel if stride is None else ints(_one(stride), rank, "stride")
    return kernel, stride, ints(_one(dilation), rank, "dilation")


def _batched(x, rank, name):
    """x as (N, C, *spatial), and whether it came without the batch axis."""
    from . import ops
    shape = tuple(getattr(x, "shape", ()))
    if len(shape) == rank + 1:
        return ops.expand_dims(x, 0), True
    if len(shape) != rank + 2:
        raise ValueError(f"For '{name}', expects an input of rank {rank + 2} (N, C, *spatial) "
                         f"or {rank + 1} (C, *spatial), got shape {shape}")
    return x, False


def _to_channels_first(x, back=False):
    from . import ops
    rank = len(x.shape)
    perm = ((0, rank - 1) + tuple(range(1, rank - 1)) if not back
            else (0,) + tuple(range(2, rank)) + (1,))
    return ops.transpose(x, perm)


class Pooling:
    """One pooling's arguments, checked once (a layer builds it in __init__)."""

    def __init__(self, kind, rank, name, kernel_size, stride=None, pad_mode="pad", padding=0,
                 dilation=1, ceil_mode=False, count_include_pad=True, divisor_override=0,
                 return_indices=False, channels_last=False):
        self.kind, self.rank, self.name = kind, rank, name
        self.kernel, self.stride, self.dilation = _geometry(rank, kernel_size, stride, dilation)
        if kind == "avg" and self.dilation != (1,) * rank:
            raise ValueError(f"average pooling has no dilation, got {dilation!r}")
        self.pad_mode = pad_mode_of(pad_mode)
        padding = _one(tuple(padding) if isinstance(padding, list) else padding)
        lo, hi = explicit_pads(padding, rank)  # (checks it whatever the mode)
        if self.pad_mode != "pad" and any(lo + hi):
            raise ValueError(f"padding must be 0 when pad_mode is '{self.pad_mode}', got "
                             f"{padding!r}")
        self.padding = padding
        self.ceil_mode = _flag(ceil_mode, "ceil_mode")
        self.count_include_pad = _flag(count_include_pad, "count_include_pad")
        self.divisor_override = operator.index(divisor_override or 0)
        if self.divisor_override < 0:
            raise ValueError(f"divisor_override must be positive, got {divisor_override!r}")
        self.return_indices = _flag(return_indices, "return_indices")
        self.channels_last = channels_last

    def attrs(self, sizes):
        lo, hi = pads(self.pad_mode, self.padding, sizes, self.kernel, self.stride,
                      self.dilation)
        geom = {"kernel": self.kernel, "stride": self.stride, "pad_lo": lo, "pad_hi": hi,
                "ceil_mode": self.ceil_mode}
        if self.kind == "max":
            return {**geom, "dilation": self.dilation}
        return {**geom, "divisor_override": self.divisor_override,
                "count_include_pad": self.count_include_pad and self.pad_mode == "pad"}

    def __call__(self, x):
        if not isinstance(x, Tensor):
            if not isinstance(x, np.ndarray):
                raise TypeError(f"For '{self.name}', the input must be a Tensor, got "
                                f"{type(x).__name__}")
            x = Tensor(x)
        x, unbatched = _batched(x, self.rank, self.name)
        if self.channels_last:
            x = _to_channels_first(x)
        attrs = self.attrs(tuple(x.shape[2:]))
        self._check(x, attrs)
        outs = [call(f"ms.{self.kind}_pool", (x,), attrs)]
        if self.return_indices:
            outs.append(_argmax(x, outs[0], attrs))
        if self.channels_last:
            outs = [_to_channels_first(o, back=True) for o in outs]
        if unbatched:
            from . import ops
            outs = [ops.squeeze(o, 0) for o in outs]
        return tuple(outs) if self.return_indices else outs[0]

    def _check(self, x, attrs):
        """The op's own rules, reported for this layer or function (the kernel larger than
        the padded input, ...)."""
        from ..dialects.ops.pooling import geometry
        from ..dialects.registry import ShapeError
        if self.kind == "avg" and not x.dtype.is_float:
            raise TypeError(f"For '{self.name}', average pooling needs a float input, got "
                            f"{x.dtype.name}")
        try:
            geometry(tuple(x.shape), attrs)
        except ShapeError as e:
            raise ValueError(f"For '{self.name}', {e}") from None


def _argmax(x, y, attrs):
    """Each window's first maximum as an index into its (n, c) plane (int64, MindSpore's
    return_indices): max_pool_gather reads a tensor of positions there. The positions are
    floats of x's type, exact to 2**24 in float32 (half floats and integers are widened)."""
    from . import ops
    from ..dialects import dtypes as dt
    wide = x.dtype if x.dtype in (dt.float32, dt.float64) else (
        dt.float32 if x.dtype.is_float else dt.float64)
    if wide is not x.dtype:
        x, y = ops.cast(x, wide), ops.cast(y, wide)
    plane = tuple(x.shape[2:])
    positions = ops.broadcast_to(np.arange(int(np.prod(plane))).reshape(plane).astype(wide.np),
                                 tuple(x.shape))
    picked = call("ms.max_pool_gather", (x, y, positions), attrs)
    return ops.cast(picked, dt.int64)


# ------------------------------------------------------------------ adaptive pooling

def _output_sizes(output_size, sizes, name):
    """MindSpore's output_size: an int for every dim, or one entry per dim (None: the input's
    size)."""
    rank = len(sizes)
    entries = (output_size,) * rank if not isinstance(output_size, (tuple, list)) else tuple(
        output_size)
    if len(entries) != rank or any(e is not None and (not isinstance(e, int)
                                                      or isinstance(e, bool) or e < 1)
                                   for e in entries):
        raise ValueError(f"For '{name}', output_size must be a positive int or a tuple of {rank} "
                         f"of them (None: the input's size), got {output_size!r}")
    return tuple(n if e is None else e for e, n in zip(entries, sizes))


def _adaptive_dim(x, axis, n, out, kind):
    """Adaptive pooling along one axis whose size `out` does not divide: a slice and a
    reduction per output index, concatenated; or, where `out` is larger than the axis (each
    window one or two elements), the reduction of two gathers (a slice per output index
    made a compile, or a Python loop, as long as `out`: 2**40 hung the API fuzzer)."""
    from . import ops
    if out > n:
        first = np.arange(out, dtype=np.int64) * n // out
        last = -(-(np.arange(1, out + 1, dtype=np.int64) * n) // out) - 1
        a, b = (ops.gather(x, Tensor(index.astype(np.int32)), axis) for index in (first, last))
        return ops.maximum(a, b) if kind == "max" else (a + b) * 0.5
    reduce = ops.reduce_max if kind == "max" else ops.reduce_mean
    parts = []
    for i in range(out):
        start, end = i * n // out, -(-(i + 1) * n // out)
        parts.append(reduce(ops.narrow(x, axis, start, end - start), axis, True))
    return parts[0] if out == 1 else ops.concat(parts, axis)


def adaptive(x, kind, rank, name, output_size, return_indices=False):
    """Adaptive pooling of x (N, C, *spatial) or (C, *spatial) to `output_size`."""
    from . import ops
    return_indices = _flag(return_indices, "return_indices")
    x, unbatched = _batched(x, rank, name)
    sizes = tuple(x.shape[2:])
    out = _output_sizes(output_size, sizes, name)
    divides = [n % o == 0 for n, o in zip(sizes, out)]
    if return_indices and not all(divides):
        raise NotImplementedError(f"For '{name}', return_indices=True needs input sizes "
                                  f"{sizes} that the output_size {out} divides")
    kernel = tuple(n // o if d else 1 for n, o, d in zip(sizes, out, divides))
    if return_indices or kernel != (1,) * rank:  # the dims that divide: one pooling op
        x = Pooling(kind, rank, name, kernel, kernel, return_indices=return_indices)(x)
    for axis, (n, o, d) in enumerate(zip(sizes, out, divides)):
        if not d:
            x = _adaptive_dim(x, 2 + axis, n, o, kind)
    if unbatched:
        x = tuple(ops.squeeze(v, 0) for v in x) if return_indices else ops.squeeze(x, 0)
    return x


# ------------------------------------------------------------------ MindSpore's functions

@user_api("max_pool2d")
def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
               ceil_mode=False):
    """MindSpore's ops.max_pool2d: (N, C, H, W) windows, `padding` never wins; returns
    (output, argmax) with return_indices."""
    return Pooling("max", 2, "max_pool2d", kernel_size, stride, "pad", padding, dilation,
                   ceil_mode, return_indices=return_indices)(x)


@user_api("max_pool3d")
def max_pool3d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """MindSpore's ops.max_pool3d over (N, C, D, H, W)."""
    return Pooling("max", 3, "max_pool3d", kernel_size, stride, "pad", padding, dilation,
                   ceil_mode, return_indices=return_indices)(x)


def _avg_function(rank, name):
    def avg_pool(input_x, kernel_size=1, stride=1, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=0):
        return Pooling("avg", rank, name, kernel_size, stride, "pad", padding, 1, ceil_mode,
                       count_include_pad, divisor_override)(input_x)

    def avg_pool1d(input_x, kernel_size=1, stride=1, padding=0, ceil_mode=False,
                   count_include_pad=True):  # (MindSpore's 1-D form has no divisor_override)
        return avg_pool(input_x, kernel_size, stride, padding, ceil_mode, count_include_pad)
    fn = avg_pool1d if rank == 1 else avg_pool
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"MindSpore's ops.{name}: the mean of each window over (N, C, *{rank} "
                  f"spatial dims), divided by the count of its elements in the padded input "
                  f"(count_include_pad) or in the input, or by divisor_override if nonzero.")
    return user_api(name)(fn)


avg_pool1d = _avg_function(1, "avg_pool1d")
avg_pool2d = _avg_function(2, "avg_pool2d")
avg_pool3d = _avg_function(3, "avg_pool3d")


def _adaptive_function(kind, rank):
    name = f"adaptive_{kind}_pool{rank}d"
    if kind == "avg":
        def pool(input, output_size):  # noqa: A002  (MindSpore's name)
            return adaptive(input, "avg", rank, name, output_size)
    else:
        def pool(input, output_size, return_indices=False):  # noqa: A002
            return adaptive(input, "max", rank, name, output_size, return_indices)
    pool.__name__ = pool.__qualname__ = name
    pool.__doc__ = (f"MindSpore's ops.{name}: output cell i pools input "
                    f"[floor(i * in / out), ceil((i + 1) * in / out)) along each of the {rank} "
                    f"spatial dims.")
    return user_api(name)(pool)


adaptive_avg_pool1d = _adaptive_function("avg", 1)
adaptive_avg_pool2d = _adaptive_function("avg", 2)
adaptive_avg_pool3d = _adaptive_function("avg", 3)
adaptive_max_pool1d = _adaptive_function("max", 1)
adaptive_max_pool2d = _adaptive_function("max", 2)
adaptive_max_pool3d = _adaptive_function("max", 3)
