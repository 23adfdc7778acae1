"""MindSpore's Primitive classes (`ops.MatMul()`, `ops.Concat(axis)`, ...) over the functional ops.

A Primitive is configured by its constructor attributes and called with its inputs, as in
MindSpore: `ops.MatMul(transpose_b=True)(x, w)`. There is no second implementation: every
Primitive forwards to one function of pyfront/ops.py (or to a short composition of them
below, where MindSpore's Primitive has no functional twin in mscc), so it traces to the same
ms ops as the functional form. All Primitives come from the table `_ROWS` (one row each:
name, function, constructor attributes with MindSpore's defaults) and `_ELEMENTWISE` (MindSpore
name -> registry mnemonic); a new op needs one row.

Attributes (`add_prim_attr(name, value)`, returns the Primitive, as MindSpore's):
- constructor attributes are read at call time, so `MatMul().add_prim_attr("transpose_b",
  True)` transposes;
- attributes whose other values mscc does not implement (Gather's batch_dims, Exp's base) take
  only their default: another value is a ValueError naming the attribute;
- any other attribute is recorded in `.attrs` and has no effect, as in MindSpore, whose kernels
  read only their own attributes (`primitive_target`, user annotations, ...).
"""
from __future__ import annotations

import inspect
import operator
from typing import NamedTuple

from ..dialects import dtypes as dt
from ..dialects.ops.shape import OPEN
from ..dialects.symdim import Dim, has_dynamic
from . import control_flow, dispatch, ops
from . import ops_conv as conv_ops
from . import ops_last, ops_more
from .location import user_api
from .tensor import Tensor


def _hashable(value):
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


class Primitive:
    """Base of the Primitive classes: `.name`, `.attrs`, `add_prim_attr`, MindSpore's repr."""

    _row: "_Row" = None

    def __init__(self, *args, **kwargs):
        row = self._row
        if row is None:
            raise TypeError("mscc has no generic Primitive(name): use its Primitive classes "
                            "(ops.MatMul(), ops.Concat(axis), ...)")
        self.name = row.name
        self.attrs = {}
        bound = row.init_signature.bind(*args, **kwargs)
        bound.apply_defaults()
        for attr, value in {**row.fixed, **bound.arguments}.items():
            self.add_prim_attr(attr, value)

    def add_prim_attr(self, name, value):
        """Set attribute `name` (see the module doc for what mscc does with it); returns self."""
        fixed = self._row.fixed
        if name in fixed and not _same(value, fixed[name]):
            raise ValueError(f"For '{self.name}', {name}={value!r} is not supported by mscc "
                             f"(only {name}={fixed[name]!r})")
        self.attrs[name] = value
        self.__dict__[name] = value  # (MindSpore reads attributes as prim.<name> too)
        return self

    def _static_key(self):
        """What this Primitive contributes to the cache key of a Cell that holds it (a Cell
        compiled in graph mode): changing an attribute with add_prim_attr recompiles."""
        return (self.name, tuple(sorted((k, _hashable(v)) for k, v in self.attrs.items())))

    def del_prim_attr(self, name):
        """Delete a recorded attribute; constructor attributes cannot be deleted (the call
        reads them)."""
        if name in self._row.params or name in self._row.fixed:
            raise ValueError(f"For '{self.name}', attribute '{name}' is read by the call and "
                             f"cannot be deleted")
        self.attrs.pop(name, None)
        self.__dict__.pop(name, None)
        return self

    def set_device(self, device_target):
        """MindSpore's per-primitive device: recorded; mscc places the whole compiled function
        on one target (ms.set_context(device_target=...)), so it must be that target."""
        from .context import get_context
        if device_target != get_context("device_target"):
            raise ValueError(f"For '{self.name}', set_device('{device_target}'): mscc runs "
                             f"every op on the context's device_target "
                             f"('{get_context('device_target')}')")
        return self.add_prim_attr("primitive_target", device_target)

    @user_api(lambda self: self.name)
    def __call__(self, *args, **kwargs):
        row = self._row
        if kwargs or len(args) != row.arity:
            bound = row.call_signature.bind(*args, **kwargs)
            bound.apply_defaults()  # (a keyword after an omitted default stays in .args)
            args = bound.args
        return row.fn(*args, **{a: self.attrs[a] for a in row.call_attrs})

    def __repr__(self):
        attrs = ", ".join(f"{k}={v}" for k, v in self.attrs.items())
        return f"Prim[{self.name}]<{attrs}>" if attrs else f"Prim[{self.name}]"


def _same(a, b) -> bool:
    """Whether attribute value `a` is the supported value `b` (1 and 1.0 are; True and 1
    are not, nor an array)."""
    numbers = (int, float)
    if type(a) in numbers and type(b) in numbers:
        return a == b
    return type(a) is type(b) and a == b


class _Row(NamedTuple):
    name: str
    fn: object               # the functional op the call forwards to
    params: dict             # constructor attributes -> MindSpore's defaults, in order
    fixed: dict              # attributes mscc implements only at this value
    init_signature: inspect.Signature
    call_signature: inspect.Signature
    call_attrs: tuple        # the attributes passed to fn as keyword arguments
    arity: int


def _row(name, fn, params=None, fixed=None, call_attrs=None):
    """One Primitive: `name(**params)(inputs...)` calls `fn(inputs..., **attrs)`. `call_attrs`
    (default: every constructor attribute) are the ones fn takes; the inputs are fn's other
    parameters, in its order."""
    params, fixed = dict(params or {}), dict(fixed or {})
    call_attrs = tuple(params if call_attrs is None else call_attrs)
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    init_signature = inspect.Signature([inspect.Parameter(p, kind, default=d)
                                        for p, d in params.items()])
    inputs = [p.replace(default=p.default) for n, p in inspect.signature(fn).parameters.items()
              if n not in call_attrs and p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY,
                                                    p.VAR_POSITIONAL)]
    call_signature = inspect.Signature(inputs)
    variadic = any(p.kind is p.VAR_POSITIONAL for p in inputs)  # (Print: any number)
    return _Row(name, fn, params, fixed, init_signature, call_signature, call_attrs,
                -1 if variadic else len(inputs))


# ------------------------------------------------------- compositions of the functional ops
# MindSpore Primitives whose functional form mscc has under other arguments, or not at all:
# each is a few calls of pyfront/ops.py, so it compiles to those ms ops.

def _index(indices, output_type, name):
    """Argmax/Argmin's output_type: int32 (what ms.argmax gives) or int64 (a cast)."""
    output_type = dt.as_dtype(output_type)
    if output_type not in (dt.int32, dt.int64):
        raise TypeError(f"For '{name}', output_type must be int32 or int64, got "
                        f"{output_type.name}")
    return indices if output_type is dt.int32 else ops.cast(indices, output_type)


def _argmax(x, axis, output_type):
    return _index(ops.argmax(x, axis), output_type, "Argmax")


def _argmin(x, axis, output_type):
    return _index(ops.argmin(x, axis), output_type, "Argmin")


def _reduce_sum(x, axis=(), keep_dims=False, skip_mode=False):
    """ReduceSum: skip_mode=True with an empty axis returns x unreduced (MindSpore 2.x)."""
    if skip_mode and (axis is None or axis == () or axis == []):
        return x
    return ops.reduce_sum(x, axis, keep_dims)


def _single_axis(fn):
    """Softmax/LogSoftmax take an int or a tuple of one int (MindSpore accepts tuples; mscc's
    ops normalize over one axis)."""
    def op(x, axis):
        if isinstance(axis, (tuple, list)):
            if len(axis) != 1:
                raise ValueError(f"axis must be an int or a tuple of one int, got {axis!r}")
            axis = axis[0]
        return fn(x, axis)
    op.__name__ = fn.__name__
    return op


def _bias_add(input_x, bias, data_format):
    """input_x + bias along the channel axis: 1 for NCHW/NCDHW (and 2-D inputs), -1 for NHWC."""
    if data_format not in ("NCHW", "NHWC", "NCDHW"):
        raise ValueError(f"data_format must be 'NCHW', 'NHWC' or 'NCDHW', got {data_format!r}")
    rank = len(input_x.shape)
    if rank < 2:
        raise ValueError(f"input_x must have rank >= 2, got shape {tuple(input_x.shape)}")
    channel = rank - 1 if data_format == "NHWC" else 1
    shape = [1] * rank
    shape[channel] = -1
    return ops.add(input_x, ops.reshape(bias, shape))


def _split(input_x, axis, output_num):
    """Split into output_num equal parts along axis (ops.split; MindSpore's Split needs the
    parts equal: along a dynamic axis, checked when the code runs)."""
    shape = tuple(input_x.shape)
    axis = operator.index(axis)
    n = shape[axis] if -len(shape) <= axis < len(shape) else 0
    output_num = operator.index(output_num)
    if output_num < 1 or not isinstance(n, Dim) and n % output_num:
        raise ValueError(f"output_num {output_num} must be positive and divide dimension "
                         f"{axis} of shape {shape}")
    return ops._equal_parts(input_x, output_num, axis)


def _unstack(input_x, axis, num):
    """ops.unstack; `num`, when given, must be the size of the axis (MindSpore checks it)."""
    shape = tuple(input_x.shape)
    if num is not None and not (-len(shape) <= axis < len(shape) and num == shape[axis]):
        raise ValueError(f"num {num} must equal dimension {axis} of shape {shape}")
    return ops.unstack(input_x, axis)


def _strided_slice(input_x, begin, end, strides, begin_mask=0, end_mask=0, ellipsis_mask=0,
                   new_axis_mask=0, shrink_axis_mask=0):
    """StridedSlice with begin/end/shrink-axis masks (bit i: axis i); ellipsis and new-axis
    masks are refused (index with x[..., None] instead). A masked bound is the axis' start
    or end for the stride's direction (an open end along a dynamic axis)."""
    if ellipsis_mask or new_axis_mask:
        raise ValueError(f"ellipsis_mask={ellipsis_mask} and new_axis_mask={new_axis_mask} "
                         f"are not supported by mscc (only 0): index with x[...] instead")
    shape = tuple(input_x.shape)
    begin, end, strides = list(begin), list(end), list(strides)
    shrunk = []
    for i in range(len(begin)):
        forward = strides[i] > 0
        if begin_mask >> i & 1:
            begin[i] = 0 if forward else -1
        if end_mask >> i & 1:
            end[i] = (shape[i] if not isinstance(shape[i], Dim) else OPEN) if forward else -OPEN
        if shrink_axis_mask >> i & 1:
            if not isinstance(shape[i], Dim):
                begin[i] = begin[i] + shape[i] if begin[i] < 0 else begin[i]
            end[i] = OPEN if begin[i] == -1 else begin[i] + 1
            strides[i] = abs(strides[i])  # (one element, taken forward)
            shrunk.append(i)
    out = ops.strided_slice(input_x, begin, end, strides)
    if shrunk and has_dynamic(shape):
        return ops.squeeze(out, tuple(shrunk))  # (one element each: checked when it runs)
    if shrunk:
        out = ops.reshape(out, [d for i, d in enumerate(out.shape) if i not in shrunk])
    return out


def _flatten(input_x):
    """(N, ...) -> (N, product of the rest): ops.flatten, and (N,) -> (N, 1) as MindSpore's
    Flatten (ops.flatten keeps a 1-D tensor 1-D)."""
    shape = tuple(input_x.shape)
    if not shape:
        raise ValueError("input_x must have rank >= 1, got a scalar")
    return ops.reshape(input_x, (shape[0], 1)) if len(shape) == 1 else ops.flatten(input_x)


def _cumsum(x, axis, exclusive, reverse):
    """CumSum; exclusive and reverse are fixed at False (ops.cumsum has neither argument)."""
    return ops.cumsum(x, axis)


def _reduce(fn):
    """ReduceProd/All/Any: called (x, axis=()) like the other reductions."""
    def op(x, axis=(), keep_dims=False):
        return fn(x, axis, keep_dims)
    op.__name__ = fn.__name__
    return op


def _topk(input_x, k, sorted):  # noqa: A002  (MindSpore's attribute name)
    return ops.topk(input_x, k, sorted=sorted)


def _add_n(inputs):
    """The sum of a tuple/list of tensors (a chain of ms.add)."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("inputs must hold at least one Tensor")
    out = inputs[0]
    for x in inputs[1:]:
        out = ops.add(out, x)
    return out


def _fill(type, shape, value):  # noqa: A002  (MindSpore's input name)
    return ops.full(shape, value, dtype=type)


def _zeros(size, type=None):  # noqa: A002
    return ops.zeros(size, type)


def _ones(shape, type=None):  # noqa: A002
    return ops.ones(shape, type)


def _shape(input_x):
    """The static shape, a tuple of ints (MindSpore's Shape; a Python number's is ())."""
    return tuple(getattr(input_x, "shape", ()))


def _rank(input_x):
    return len(_shape(input_x))


def _size(input_x):
    n = 1
    for d in _shape(input_x):
        n *= d
    return n


def _dtype(input_x):
    return input_x.dtype if isinstance(input_x, Tensor) else Tensor(input_x).dtype


def _depend(value, expr):
    """`value`; `expr` is evaluated already. mscc runs side effects (assign, optimizers) in
    Python order in both modes, so the dependency MindSpore's Depend adds holds anyway. (A
    float status Tensor records it: pyfront/ops_last.py's NPUGetFloatStatus checks expr.)"""
    ops_last.watch_depend(value, expr)
    return value


# Convolutions (ms.conv and ms.conv_input_grad through pyfront/ops_conv.py): MindSpore's
# Primitive conventions on top of the functional ones.

def _conv_geometry(name, rank, kernel_size, stride, dilation, pad_mode):
    """kernel, stride, dilation as `rank` ints and the lower-cased pad mode. stride and
    dilation may be MindSpore's full-rank forms ((1, 1, sh, sw) for 2-D, five for 3-D): their
    spatial entries count, as in MindSpore."""
    def spatial(v):
        return tuple(v)[2:] if isinstance(v, (tuple, list)) and len(v) == rank + 2 else v
    kernel = conv_ops.ints(kernel_size, rank, "kernel_size")
    stride = conv_ops.ints(spatial(stride), rank, "stride")
    dilation = conv_ops.ints(spatial(dilation), rank, "dilation")
    if not isinstance(pad_mode, str):
        raise TypeError(f"For '{name}', pad_mode must be a str, got {pad_mode!r}")
    return kernel, stride, dilation, pad_mode.lower()


def _channels_first(name, rank, data_format, *tensors):
    """NHWC data (and its NHWC weight) as NCHW, or the tensors unchanged for NCHW/NCDHW."""
    formats = ("NCHW", "NHWC") if rank == 2 else ("NCDHW",)
    if data_format not in formats:
        raise ValueError(f"For '{name}', data_format must be one of {', '.join(formats)}, "
                         f"got {data_format!r}")
    if data_format != "NHWC":
        return tensors
    return tuple(ops.transpose(t, (0, 3, 1, 2)) for t in tensors)


def _check_weight(name, weight, kernel, leading=None):
    """The weight's kernel is kernel_size; leading, (attribute, value) when given, is its
    first dim (MindSpore checks both)."""
    shape = tuple(weight.shape)
    if shape[2:] != kernel:
        raise ValueError(f"For '{name}', kernel_size {kernel} is not the weight's kernel "
                         f"{shape[2:]} (weight shape {shape})")
    if leading is not None and shape[0] != leading[1]:
        raise ValueError(f"For '{name}', {leading[0]} {leading[1]} is not the weight's first "
                         f"dim {shape[0]} (weight shape {shape})")


def _conv(rank, name):
    def conv(x, weight, out_channel, kernel_size, mode, pad_mode, pad, stride, dilation,
             group, data_format):
        """MindSpore's Conv2D/Conv3D: x (N, C, *spatial), weight (out_channel, C / group,
        *kernel_size) (NHWC: x (N, H, W, C), weight (out_channel, kh, kw, C / group))."""
        kernel, stride, dilation, pad_mode = _conv_geometry(name, rank, kernel_size, stride,
                                                            dilation, pad_mode)
        x, weight = _channels_first(name, rank, data_format, x, weight)
        _check_weight(name, weight, kernel, ("out_channel", out_channel))
        y = conv_ops.convolution(x, weight, None, stride, pad_mode, pad, dilation, group,
                                 rank, name)
        return ops.transpose(y, (0, 2, 3, 1)) if data_format == "NHWC" else y
    conv.__name__ = f"conv{rank}d"
    return conv


def _conv2d_input_grad(name):
    def conv2d_backprop_input(dout, weight, input_size, out_channel, kernel_size, pad_mode,
                              pad, pad_list, mode, stride, dilation, group, data_format):
        """The gradient of Conv2D (these attributes) with respect to an input of shape
        input_size, at dout: ms.conv_input_grad with the pads Conv2D has for that input
        (pad_list, when given: the (top, bottom, left, right) pads). The weight is Conv2D's,
        (C_out, C_in / group, kh, kw); out_channel is recorded (MindSpore's shapes come from
        the weight and input_size)."""
        kernel, stride, dilation, pad_mode = _conv_geometry(name, 2, kernel_size, stride,
                                                            dilation, pad_mode)
        conv_ops.check_pad_mode(pad_mode, pad, 2)
        try:
            size = tuple(operator.index(d) for d in input_size)
        except TypeError:
            raise TypeError(f"For '{name}', input_size must be a tuple of 4 ints (the "
                            f"input's shape), got {input_size!r}") from None
        if len(size) != 4:
            raise ValueError(f"For '{name}', input_size must have 4 entries, got {size}")
        if data_format == "NHWC":
            size = (size[0], size[3], size[1], size[2])
        dout, weight = _channels_first(name, 2, data_format, dout, weight)
        _check_weight(name, weight, kernel)
        if pad_list is not None:
            lo, hi = conv_ops.explicit_pads(tuple(pad_list), 2)
        else:
            lo, hi = conv_ops.pads(pad_mode, pad, size[2:], kernel, stride, dilation)
        dx = dispatch.call("ms.conv_input_grad", (dout, weight),
                           {"stride": stride, "dilation": dilation, "pad_lo": lo, "pad_hi": hi,
                            "groups": operator.index(group), "input_shape": size})
        return ops.transpose(dx, (0, 2, 3, 1)) if data_format == "NHWC" else dx
    return conv2d_backprop_input


def _conv3d_transpose(dout, weight, in_channel, out_channel, kernel_size, mode, stride,
                      pad_mode, pad, dilation, group, output_padding, data_format):
    """MindSpore's Conv3DTranspose: dout (N, in_channel, D, H, W), weight (in_channel,
    out_channel / group, *kernel_size); the output size as nn.Conv3dTranspose's."""
    name = "Conv3DTranspose"
    kernel, stride, dilation, pad_mode = _conv_geometry(name, 3, kernel_size, stride,
                                                        dilation, pad_mode)
    dout, weight = _channels_first(name, 3, data_format, dout, weight)
    _check_weight(name, weight, kernel, ("in_channel", in_channel))
    if weight.shape[1] * group != out_channel:
        raise ValueError(f"For '{name}', out_channel {out_channel} is not the weight's "
                         f"{weight.shape[1]} x group {group} (weight shape "
                         f"{tuple(weight.shape)})")
    if isinstance(output_padding, (tuple, list)) and len(output_padding) == 5:
        output_padding = tuple(output_padding)[2:]
    return conv_ops.transposed_convolution(dout, weight, None, stride, pad_mode, pad,
                                           output_padding, dilation, group, 3, name)


# Pooling (ms.max_pool and ms.avg_pool through pyfront/ops_pool.py).

def _pool_primitive(kind, rank, name, kernel_size, strides, pad_mode, data_format, **extra):
    """MaxPool/AvgPool (2-D, NCHW or NHWC) and MaxPool3D/AvgPool3D (NCDHW); the 2-D ones pad
    "same" or "valid" only, as MindSpore's."""
    from . import ops_pool
    formats = ("NCHW", "NHWC") if rank == 2 else ("NCDHW",)
    if data_format not in formats:
        raise ValueError(f"data_format must be one of {', '.join(formats)}, got "
                         f"{data_format!r}")
    if rank == 2 and ops_pool.pad_mode_of(pad_mode) == "pad":
        raise ValueError(f"pad_mode must be 'same' or 'valid', got {pad_mode!r}")
    return ops_pool.Pooling(kind, rank, name, kernel_size, strides, pad_mode,
                            channels_last=data_format == "NHWC", **extra)


def _max_pool(x, kernel_size, strides, pad_mode, data_format):
    return _pool_primitive("max", 2, "MaxPool", kernel_size, strides, pad_mode, data_format)(x)


def _avg_pool(x, kernel_size, strides, pad_mode, data_format):
    return _pool_primitive("avg", 2, "AvgPool", kernel_size, strides, pad_mode, data_format)(x)


def _max_pool3d(x, kernel_size, strides, pad_mode, pad_list, ceil_mode, data_format):
    """MaxPool3D; ceil_mode None is False."""
    return _pool_primitive("max", 3, "MaxPool3D", kernel_size, strides, pad_mode, data_format,
                           padding=pad_list, ceil_mode=bool(ceil_mode))(x)


def _avg_pool3d(x, kernel_size, strides, pad_mode, pad, ceil_mode, count_include_pad,
                divisor_override, data_format):
    return _pool_primitive("avg", 3, "AvgPool3D", kernel_size, strides, pad_mode, data_format,
                           padding=pad, ceil_mode=ceil_mode,
                           count_include_pad=count_include_pad,
                           divisor_override=divisor_override)(x)


def _adaptive_avg_pool2d(input_x, output_size):
    return ops.adaptive_avg_pool2d(input_x, output_size)


_REQUIRED = inspect.Parameter.empty  # a constructor attribute without a default
_TRANSPOSES = {"transpose_a": False, "transpose_b": False}
_REDUCE = {"keep_dims": False}
# Exp and Log: MindSpore sets base/scale/shift (y = log_base(scale * x + shift)); mscc
# computes base e, scale 1, shift 0.
_BASE_E = {"base": -1.0, "scale": 1.0, "shift": 0.0}
_POOL = {"kernel_size": 1, "strides": 1, "pad_mode": "valid", "data_format": "NCHW"}
# Conv2D/Conv3D (MindSpore 2.x's order); `mode` is unused by MindSpore and must be 1 there
_CONV = {"out_channel": _REQUIRED, "kernel_size": _REQUIRED, "mode": 1, "pad_mode": "valid",
         "pad": 0, "stride": 1, "dilation": 1, "group": 1}
_CONV_INPUT_GRAD = {"out_channel": _REQUIRED, "kernel_size": _REQUIRED, "pad_mode": "valid",
                    "pad": 0, "pad_list": None, "mode": 1, "stride": 1, "dilation": 1,
                    "group": 1, "data_format": "NCHW"}

_ROWS = [
    _row("MatMul", ops.matmul, _TRANSPOSES),
    _row("BatchMatMul", ops.batch_matmul, _TRANSPOSES),
    _row("Concat", ops.concat, {"axis": 0}),
    _row("Stack", ops.stack, {"axis": 0}),
    _row("Split", _split, {"axis": 0, "output_num": 1}),
    _row("Unstack", _unstack, {"axis": 0, "num": None}),
    _row("Gather", ops.gather, {"batch_dims": 0}, fixed={"batch_dims": 0}, call_attrs=()),
    _row("Squeeze", ops.squeeze, {"axis": ()}),
    _row("ExpandDims", ops.expand_dims),
    _row("Reshape", ops.reshape),
    _row("Transpose", ops.transpose),
    _row("Flatten", _flatten),
    _row("Tile", ops.tile),
    _row("BroadcastTo", ops.broadcast_to, {"shape": _REQUIRED}),
    _row("Slice", ops.slice),
    _row("StridedSlice", _strided_slice, {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0,
                                          "new_axis_mask": 0, "shrink_axis_mask": 0}),
    _row("Cast", ops.cast),
    _row("ReduceSum", _reduce_sum, {"keep_dims": False, "skip_mode": False}),
    _row("ReduceMean", ops.reduce_mean, _REDUCE),
    _row("ReduceMax", ops.reduce_max, _REDUCE),
    _row("ReduceMin", ops.reduce_min, _REDUCE),
    _row("Argmax", _argmax, {"axis": -1, "output_type": dt.int32}),
    _row("Argmin", _argmin, {"axis": -1, "output_type": dt.int32}),
    _row("Softmax", _single_axis(ops.softmax), {"axis": -1}),
    _row("LogSoftmax", _single_axis(ops.log_softmax), {"axis": -1}),
    _row("OneHot", ops.one_hot, {"axis": -1}),
    _row("BiasAdd", _bias_add, {"data_format": "NCHW"}),
    _row("UnsortedSegmentSum", ops.unsorted_segment_sum),
    _row("Assign", ops.assign),
    _row("AddN", _add_n),
    _row("Square", ops.square),
    _row("Fill", _fill),
    _row("Zeros", _zeros),
    _row("Ones", _ones),
    _row("Shape", _shape),
    _row("Rank", _rank),
    _row("Size", _size),
    _row("DType", _dtype),
    _row("Depend", _depend),
    # (over the compositions of pyfront/ops.py)
    _row("CumSum", _cumsum, {"exclusive": False, "reverse": False},
         fixed={"exclusive": False, "reverse": False}),
    _row("ReduceProd", _reduce(ops.prod), _REDUCE),
    _row("ReduceAll", _reduce(ops.all), _REDUCE),
    _row("ReduceAny", _reduce(ops.any), _REDUCE),
    _row("Reciprocal", ops.reciprocal),
    _row("Softplus", lambda x: ops.softplus(x)),
    _row("GeLU", lambda x: ops.gelu(x, "tanh")),  # (MindSpore's GeLU is the tanh form)
    _row("Elu", lambda input_x, alpha: ops.elu(input_x, alpha), {"alpha": 1.0}),
    _row("ReLU6", ops.relu6),
    _row("HSwish", ops.hardswish),
    _row("Mish", ops.mish),
    _row("Softsign", ops.softsign),
    _row("MaskedFill", ops.masked_fill),
    _row("Tril", ops.tril, {"diagonal": 0}),
    _row("Triu", ops.triu, {"diagonal": 0}),
    _row("TopK", _topk, {"sorted": True}),
    _row("Sort", ops.sort, {"axis": -1, "descending": False}),
    _row("Eye", lambda n, m, t: ops.eye(n, m, t)),
    # (convolutions: pyfront/ops_conv.py)
    _row("Conv2D", _conv(2, "Conv2D"), {**_CONV, "data_format": "NCHW"}, fixed={"mode": 1}),
    _row("Conv3D", _conv(3, "Conv3D"), {**_CONV, "data_format": "NCDHW"}, fixed={"mode": 1}),
    _row("Conv2DBackpropInput", _conv2d_input_grad("Conv2DBackpropInput"), _CONV_INPUT_GRAD,
         fixed={"mode": 1}),
    _row("Conv2DTranspose", _conv2d_input_grad("Conv2DTranspose"), _CONV_INPUT_GRAD,
         fixed={"mode": 1}),
    _row("Conv3DTranspose", _conv3d_transpose,
         {"in_channel": _REQUIRED, "out_channel": _REQUIRED, "kernel_size": _REQUIRED,
          "mode": 1, "stride": 1, "pad_mode": "valid", "pad": 0, "dilation": 1, "group": 1,
          "output_padding": 0, "data_format": "NCDHW"}, fixed={"mode": 1}),
    # (pooling: pyfront/ops_pool.py)
    _row("MaxPool", _max_pool, _POOL),
    _row("AvgPool", _avg_pool, _POOL),
    _row("MaxPool3D", _max_pool3d, {"kernel_size": 1, "strides": 1, "pad_mode": "VALID",
                                    "pad_list": 0, "ceil_mode": None, "data_format": "NCDHW"}),
    _row("AvgPool3D", _avg_pool3d, {"kernel_size": 1, "strides": 1, "pad_mode": "valid",
                                    "pad": 0, "ceil_mode": False, "count_include_pad": True,
                                    "divisor_override": 0, "data_format": "NCDHW"}),
    _row("AdaptiveAvgPool2D", _adaptive_avg_pool2d, {"output_size": _REQUIRED}),
    # loops (pyfront/control_flow.py): called with functions, no attributes
    _row("WhileLoop", control_flow.while_loop),
    _row("ForiLoop", control_flow.fori_loop),
    _row("Scan", control_flow.scan),
]

# The Primitives of the ops MindSpore's models use most (pyfront/mindspore_modules/
# usage_rank.txt) that mscc lacked: compositions in pyfront/ops_more.py, tested by
# test/python/test_ops_more.py (values, errors, same IR as the functional form).
_MORE = ops_more
_SEEDS = {"seed": 0, "seed2": 0}
_BOXES = {"means": (0.0, 0.0, 0.0, 0.0), "stds": (1.0, 1.0, 1.0, 1.0)}
RANKED_ROWS = [
    _row("ArgMaxWithValue", _MORE._arg_max_with_value, {"axis": 0, "keep_dims": False}),
    _row("ArgMinWithValue", _MORE._arg_min_with_value, {"axis": 0, "keep_dims": False}),
    _row("GatherV2", ops.gather),  # (MindSpore 1.x's name of Gather)
    _row("GatherNd", _MORE.gather_nd),
    _row("GatherD", _MORE.gather_elements),
    _row("ScatterNd", _MORE.scatter_nd),
    _row("ScatterNdUpdate", _MORE._scatter_nd_update, {"use_locking": True}, call_attrs=()),
    _row("ScatterAdd", _MORE.scatter_add, {"use_locking": False}, call_attrs=()),
    _row("AssignAdd", _MORE.assign_add),
    _row("ReverseV2", lambda x, axis: _MORE.flip(x, axis), {"axis": _REQUIRED}),
    _row("ReverseSequence", _MORE.reverse_sequence, {"seq_dim": _REQUIRED, "batch_dim": 0}),
    _row("Pad", _MORE._pad, {"paddings": _REQUIRED}),
    _row("DepthToSpace", _MORE._depth_to_space, {"block_size": _REQUIRED,
                                                 "data_format": "NCHW"}),
    _row("Meshgrid", lambda inputs, indexing: _MORE.meshgrid(*inputs, indexing=indexing),
         {"indexing": "xy"}),
    _row("FloorDiv", _MORE.floor_divide),
    _row("FloorMod", _MORE.floor_mod),
    _row("Identity", _MORE._identity),
    _row("Range", _MORE._range_prim, {"maxlen": 1000000}),
    _row("LinSpace", ops.linspace),
    _row("TupleToArray", _MORE.tuple_to_array),
    _row("ScalarToTensor", _MORE.scalar_to_tensor),
    _row("ResizeNearestNeighbor", _MORE._resize_nearest_neighbor,
         {"size": _REQUIRED, "align_corners": False}),
    _row("ResizeBilinear", _MORE._resize_bilinear,
         {"size": _REQUIRED, "align_corners": False, "half_pixel_centers": False}),
    _row("L2Normalize", _MORE._l2_normalize, {"axis": 0, "epsilon": 1e-4}),
    _row("L2Loss", _MORE._l2_loss),
    _row("RmsNorm", _MORE.rms_norm, {"epsilon": 1e-6}),
    _row("Gelu", lambda x: ops.gelu(x, "tanh")),  # (MindSpore 1.x's name of GeLU)
    _row("SigmoidCrossEntropyWithLogits", _MORE._sigmoid_cross_entropy_with_logits),
    _row("SoftmaxCrossEntropyWithLogits", _MORE._softmax_cross_entropy_with_logits),
    _row("SmoothL1Loss", _MORE.smooth_l1_loss, {"beta": 1.0, "reduction": "none"}),
    _row("BinaryCrossEntropy", _MORE.binary_cross_entropy, {"reduction": "mean"}),
    _row("FloatStatus", _MORE._float_status),
    _row("IOU", _MORE.iou, {"mode": "iou"}),
    _row("CheckValid", _MORE.check_valid),
    _row("BoundingBoxEncode", _MORE.bounding_box_encode, _BOXES),
    _row("BoundingBoxDecode", _MORE.bounding_box_decode,
         {"max_shape": _REQUIRED, **_BOXES, "wh_ratio_clip": 0.016}),
    _row("UniformReal", _MORE._uniform_real, _SEEDS),
    _row("StandardNormal", _MORE._standard_normal_prim, _SEEDS),
    _row("Dropout", _MORE._dropout, {"keep_prob": 0.5, "Seed0": 0, "Seed1": 0}),
    _row("ScalarSummary", _MORE._scalar_summary),
    _row("NMSWithMask", _MORE._nms_with_mask, {"iou_threshold": 0.5}),
    _row("ROIAlign", _MORE._roi_align, {"pooled_height": _REQUIRED, "pooled_width": _REQUIRED,
                                        "spatial_scale": _REQUIRED, "sample_num": 2,
                                        "roi_end_mode": 1}),
]
_ROWS += RANKED_ROWS

# The last of the top 150: pyfront/ops_last.py, tested by test/python/test_ops_last.py.
LAST_ROWS = [
    _row("Print", ops_last._print_primitive),
    _row("NPUAllocFloatStatus", ops_last._npu_alloc_float_status),
    _row("NPUClearFloatStatus", ops_last._npu_clear_float_status),
    _row("NPUGetFloatStatus", ops_last._npu_get_float_status),
    _row("RandomChoiceWithMask", ops_last._random_choice_with_mask,
         {"count": 256, **_SEEDS}),
    _row("DynamicRNN", ops_last._dynamic_rnn,
         {"cell_type": "LSTM", "direction": "UNIDIRECTIONAL", "cell_depth": 1,
          "use_peephole": False, "keep_prob": 1.0, "cell_clip": -1.0, "num_proj": 0,
          "time_major": True, "activation": "tanh", "forget_bias": 0.0, "is_training": True}),
    _row("CTCLoss", ops_last._ctc_loss_primitive,
         {"preprocess_collapse_repeated": False, "ctc_merge_repeated": True,
          "ignore_longer_outputs_than_inputs": False}),
]
_ROWS += LAST_ROWS

# MindSpore Primitive name -> the registry's plain elementwise op (ops.<mnemonic>). Every
# plain elementwise op has a row here or is in NO_PRIMITIVE (a test checks).
_ELEMENTWISE = {
    "Add": "add", "Sub": "sub", "Mul": "mul", "RealDiv": "div", "Div": "div", "Pow": "pow",
    "Maximum": "maximum", "Minimum": "minimum", "Equal": "equal", "NotEqual": "not_equal",
    "Less": "less", "LessEqual": "less_equal", "Greater": "greater",
    "GreaterEqual": "greater_equal", "LogicalAnd": "logical_and", "LogicalOr": "logical_or",
    "LogicalNot": "logical_not", "Neg": "neg", "Abs": "abs", "ReLU": "relu", "Exp": "exp",
    "Log": "log", "Tanh": "tanh", "Erf": "erf", "Sqrt": "sqrt", "Rsqrt": "rsqrt", "Sin": "sin",
    "Cos": "cos", "Sigmoid": "sigmoid", "ZerosLike": "zeros_like", "OnesLike": "ones_like",
    "StopGradient": "stop_gradient", "Select": "select",
    # (ops being added to the registry: their rows apply once the op exists)
    "Tan": "tan", "Asin": "asin", "ACos": "acos", "Atan": "atan", "Log1p": "log1p",
    "Expm1": "expm1", "Floor": "floor", "Ceil": "ceil", "Round": "round", "Sign": "sign",
    "IsNan": "isnan", "IsInf": "isinf", "IsFinite": "isfinite",
}
_ELEMENTWISE_FIXED = {"Exp": _BASE_E, "Log": _BASE_E}

# Plain elementwise ops of the registry that MindSpore has no Primitive class for (its
# functional form exists: ops.<mnemonic>).
NO_PRIMITIVE = {"exp2", "log2"}


def _elementwise_rows():
    """Rows of _ELEMENTWISE whose op is in the registry (ops.<mnemonic> exists)."""
    return [_row(name, getattr(ops, mnemonic), fixed=_ELEMENTWISE_FIXED.get(name))
            for name, mnemonic in _ELEMENTWISE.items() if hasattr(ops, mnemonic)]


def _make_class(row):
    return type(row.name, (Primitive,), {"_row": row, "__module__": __name__,
                                         "__qualname__": row.name, "__doc__": _doc(row)})


def _doc(row):
    fn = getattr(row.fn, "__name__", "?")
    return (f"MindSpore's {row.name}{row.init_signature}: called with "
            f"{row.call_signature}, computes ops.{fn.lstrip('_')}.")


PRIMITIVES = {row.name: _make_class(row) for row in _ROWS + _elementwise_rows()}
globals().update(PRIMITIVES)

__all__ = ["Primitive", *PRIMITIVES]
