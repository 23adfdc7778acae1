"""More of MindSpore's functional ops: the ones among the 150 ops MindSpore's models use most
(pyfront/mindspore_modules/usage_rank.txt, ranked by bench/rank_mindspore_ops.py) that
pyfront/ops.py did not have, with MindSpore's names, defaults, dtypes and errors.

Each is a composition of the functional ops of pyfront/ops.py (so of existing ms ops): it
traces into those ms ops under jit, runs them eagerly in PyNative mode, fuses and
differentiates like them. Shapes are static, so index arithmetic that depends only on shapes
(strides, flipped ranges, resampling positions) is done in numpy and enters the program as
constants; index arithmetic on Tensor values (gather_nd, gather_elements, scatter_nd, ...)
turns indices into flat offsets and uses ms.gather / ms.unsorted_segment_sum on the
flattened tensor, whose gradient rules make the results differentiable in the gathered or
scattered values.

pyfront/ops.py exports every public name of `__all__` into mscc.ops (and so into
mscc.ops.functional), and `BUILTIN_NAMED` (max, min, range) through its module __getattr__;
the Primitive classes of the same ops are rows of pyfront/primitives.py (RANKED_ROWS) that
call the functions and private helpers of this module; the Tensor methods of
pyfront/tensor.py forward here.
"""
from __future__ import annotations

import builtins as _builtins
import functools as _functools
import math as _math
import numbers as _numbers
import operator as _operator

import numpy as _np

from ..dialects import dtypes as _dt
from . import ops as _ops
from .location import user_api as _user_api
from .tensor import Parameter as _Parameter
from .tensor import Tensor as _Tensor

__all__ = [
    "tensor_add", "tensor_mul", "tensor_pow", "absolute", "partial", "bmm", "amax", "amin",
    "expand_as", "addn", "flip", "floor_divide", "floor_mod", "remainder", "meshgrid",
    "gather_nd", "gather_elements", "scatter_nd", "scatter_add", "tensor_scatter_add",
    "bias_add", "smooth_l1_loss", "binary_cross_entropy", "iou", "check_valid",
    "bounding_box_encode", "bounding_box_decode", "repeat_elements", "interpolate",
    "standard_normal", "rms_norm", "reverse_sequence", "tuple_to_array", "scalar_to_tensor",
    "make_range", "tuple_len", "add_flags", "assign_add",
]


# ------------------------------------------------------------------ helpers

def _t(x):
    """x as a Tensor (numpy arrays and Python numbers become constants)."""
    return x if isinstance(x, _Tensor) else _Tensor(x)


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else ()


def _dtype(x):
    return x.dtype if isinstance(x, _Tensor) else _t(x).dtype


def _int(v, what):
    try:
        return _operator.index(v)
    except TypeError:
        raise TypeError(f"{what} must be an int, got {type(v).__name__} {v!r}") from None


def _dim(axis, rank, what="axis"):
    axis = _int(axis, what)
    n = _builtins.max(rank, 1)
    if not -n <= axis < n:
        raise ValueError(f"{what} {axis} is out of range [{-n}, {n - 1}]")
    return axis % n


def _dims(axes, rank, what="axis"):
    """An int or a tuple/list of ints as normalized axes, duplicates refused."""
    if isinstance(axes, (tuple, list)):
        out = tuple(_dim(a, rank, what) for a in axes)
    else:
        out = (_dim(axes, rank, what),)
    if len(set(out)) != len(out):
        raise ValueError(f"{what} {axes} has duplicate entries")
    return out


def _index_tensor(x, what):
    """An int32/int64 index Tensor (MindSpore's index inputs accept no other dtype)."""
    x = _t(x)
    if x.dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"{what} must be an int32 or int64 Tensor, got {x.dtype.name}")
    return x


def _floats(name, x, *more):
    for t in (x, *more):
        if not _dtype(t).is_float:
            raise TypeError(f"For '{name}', the inputs must be float Tensors, got "
                            f"{_dtype(t).name}")


def _strides(shape):
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= d
    return tuple(reversed(out))


def _prod(values):
    n = 1
    for v in values:
        n *= v
    return n


def _constant_like(values, like):
    """A numpy array as a constant Tensor of `like`'s dtype."""
    return _Tensor(_np.asarray(values).astype(_dtype(like).np))


def _along_axis(values, axis, rank):
    """A 1-D numpy array shaped to broadcast along `axis` of a rank-`rank` tensor."""
    shape = [1] * rank
    shape[axis] = -1
    return _np.asarray(values).reshape(shape)


def _reduce_keep(result, keepdims, axes):
    return result if keepdims else _ops.squeeze(result, axes)


# ------------------------------------------------------------------ names of MindSpore 1.x

def tensor_add(x, y):
    """x + y (MindSpore's F.tensor_add, the 1.x name of ops.add)."""
    return _ops.add(x, y)


def tensor_mul(x, y):
    """x * y (F.tensor_mul, the 1.x name of ops.mul)."""
    return _ops.mul(x, y)


def tensor_pow(x, y):
    """x ** y (F.tensor_pow, the 1.x name of ops.pow)."""
    return _ops.pow(x, y)


def absolute(input):  # noqa: A002  (MindSpore's argument name)
    """|input| (ops.absolute, MindSpore's alias of ops.abs)."""
    return _ops.abs(input)


def partial(func, *args):
    """`func` with its leading arguments bound (MindSpore's ops.partial)."""
    if not callable(func):
        raise TypeError(f"partial: func must be callable, got {type(func).__name__}")
    return _functools.partial(func, *args)


# ------------------------------------------------------------------ matmul and reductions

def bmm(input_x, mat2):
    """The batched matrix product of (*B, N, C) and (*B, C, M) tensors, batch axes
    broadcast (ops.bmm; both operands of rank 3 or more)."""
    shapes = _shape(input_x), _shape(mat2)
    if len(shapes[0]) < 3 or len(shapes[1]) < 3:
        raise ValueError(f"bmm needs operands of rank >= 3, got shapes {shapes[0]} and "
                         f"{shapes[1]}")
    return _ops.batch_matmul(input_x, mat2)


def _masked_initial(name, input, initial, where):  # noqa: A002
    """input with `initial` where `where` is False (amax/amin/max/min's where=)."""
    if where is None:
        return input
    if initial is None:
        raise ValueError(f"For '{name}', where needs initial (the value of the masked "
                         "elements)")
    return _ops.select(where, input, _ops._like(initial, input))


def _extreme(name, largest, input, axis, keepdims, initial, where):  # noqa: A002
    x = _masked_initial(name, _t(input), initial, where)
    axes = () if axis is None else _dims(axis, len(_shape(x)))
    out = (_ops.reduce_max if largest else _ops.reduce_min)(x, axes, keepdims)
    if initial is not None:
        out = (_ops.maximum if largest else _ops.minimum)(out, _ops._like(initial, out))
    return out


def amax(input, axis=None, keepdims=False, *, initial=None, where=None):  # noqa: A002
    """The maximum over `axis` (an int, a tuple, or None for every axis), at least `initial`;
    elements where `where` is False count as `initial` (ops.amax)."""
    return _extreme("amax", True, input, axis, keepdims, initial, where)


def amin(input, axis=None, keepdims=False, *, initial=None, where=None):  # noqa: A002
    """The minimum over `axis`, at most `initial` (ops.amin; see amax)."""
    return _extreme("amin", False, input, axis, keepdims, initial, where)


def _extreme_with_index(name, largest, input, axis, keepdims, initial, where):  # noqa: A002
    if not isinstance(keepdims, bool):
        raise TypeError(f"For '{name}', keepdims must be a bool, got "
                        f"{type(keepdims).__name__}")
    x = _masked_initial(name, _t(input), initial, where)
    if axis is None:  # MindSpore: every element, and the index is 0
        values = _extreme(name, largest, x, None, False, initial, None)
        return values, _Tensor(_np.zeros((), _np.int32))
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"For '{name}', axis must be an int or None, got "
                        f"{type(axis).__name__}")
    axis = _dim(axis, len(_shape(x)))
    values = _extreme(name, largest, x, axis, keepdims, initial, None)
    index = (_ops.argmax if largest else _ops.argmin)(x, axis, keepdims)
    return values, index


def max(input, axis=None, keepdims=False, *, initial=None, where=None):  # noqa: A001, A002
    """(values, int32 indices) of the maximum along `axis`, the first one on ties; axis None:
    the maximum of every element and index 0 (ops.max)."""
    return _extreme_with_index("max", True, input, axis, keepdims, initial, where)


def min(input, axis=None, keepdims=False, *, initial=None, where=None):  # noqa: A001, A002
    """(values, int32 indices) of the minimum along `axis` (ops.min; see ops.max)."""
    return _extreme_with_index("min", False, input, axis, keepdims, initial, where)


def expand_as(input, other):  # noqa: A002
    """input broadcast to other's shape (ops.expand_as)."""
    return _ops.broadcast_to(input, _shape(other))


def addn(x):
    """The sum of a tuple or list of tensors of one shape (ops.addn)."""
    if not isinstance(x, (tuple, list)) or not x:
        raise TypeError("addn: x must be a non-empty tuple or list of Tensors")
    shapes = {_shape(t) for t in x}
    if len(shapes) != 1:
        raise ValueError(f"addn: the tensors must have one shape, got {sorted(shapes)}")
    out = x[0]
    for t in x[1:]:
        out = _ops.add(out, t)
    return out


def _scalar_value(v, what):
    """A Python number from a number or a concrete 0-d Tensor (a static value)."""
    if isinstance(v, _Tensor):
        if v.shape != ():
            raise ValueError(f"{what} must be a 0-d Tensor, got shape {v.shape}")
        if v._trace is not None:
            raise ValueError(f"{what} must be a constant: the output's size depends on it")
        return v.asnumpy().item(), v.dtype
    if isinstance(v, bool) or not isinstance(v, _numbers.Real):
        raise TypeError(f"{what} must be an int, a float or a 0-d Tensor, got "
                        f"{type(v).__name__}")
    return v, None


def range(start, end, step):  # noqa: A001  (MindSpore's name)
    """[start, end) in steps of `step` (ops.range): the dtype of Tensor bounds, else int64 for
    ints and float32 for floats. The bounds must be constants (they fix the size)."""
    (a, da), (b, db), (s, ds) = (_scalar_value(start, "start"), _scalar_value(end, "end"),
                                 _scalar_value(step, "step"))
    if s == 0:
        raise ValueError("range: step must not be 0")
    if (b - a) * s < 0:
        raise ValueError(f"range: step {s} points away from end {b} (start {a})")
    dtypes = [d for d in (da, db, ds) if d is not None]
    if dtypes:
        dtype = _dt.promote(dtypes)
    else:
        floats = _builtins.any(isinstance(v, float) for v in (a, b, s))
        dtype = _dt.float32 if floats else _dt.int64
    return _Tensor(_np.arange(a, b, s).astype(dtype.np))


# ------------------------------------------------------------------ shapes and indexing

def flip(input, dims):  # noqa: A002
    """input reversed along each axis of `dims` (ops.flip): a gather of reversed static
    indices per axis."""
    x = _t(input)
    axes = _dims(dims, len(x.shape), "dims")
    for a in axes:
        n = x.shape[a]
        if n > 1:
            x = _ops.gather(x, _Tensor(_np.arange(n - 1, -1, -1, dtype=_np.int32)), a)
    return x


def _division_dtype(input, other, name):  # noqa: A002
    """The dtype of floor_divide's and floor_mod's result: MindSpore's implicit casts."""
    tensors = [_dtype(v) for v in (input, other) if isinstance(v, (_Tensor, _np.ndarray))]
    kinds = ["float" if isinstance(v, float) else "bool" if isinstance(v, bool) else "int"
             for v in (input, other) if not isinstance(v, (_Tensor, _np.ndarray))]
    dtype = _dt.promote(tensors, kinds)
    if dtype.is_bool:
        raise TypeError(f"{name} does not support bool inputs")
    return dtype


def floor_divide(input, other):  # noqa: A002
    """floor(input / other), elementwise with MindSpore's implicit casts (ops.floor_divide):
    integers divide exactly (in float64, then floor) and stay integers."""
    dtype = _division_dtype(input, other, "floor_divide")
    if dtype.is_float:
        return _ops.floor(_ops.div(_ops.cast(input, dtype), _ops.cast(other, dtype)))
    divisor = _ops.cast(other, _dt.float64)
    q = _ops.floor(_ops.div(_ops.cast(input, _dt.float64), divisor))
    # by zero 0, numpy's integer result (the cast of its infinity or nan is defined, and the
    # same in both modes, but not 0; out of range, the cast wraps as numpy's division does)
    q = _ops.select(_ops.equal(divisor, 0.0), _ops.zeros_like(q), q)
    return _ops.cast(q, dtype)


def floor_mod(x, y):
    """x - floor(x / y) * y, with the sign of y (ops.floor_mod, Tensor's %): MindSpore's
    implicit casts; integers exactly, by zero 0 (numpy's)."""
    dtype = _division_dtype(x, y, "floor_mod")
    a, b = _ops.cast(x, dtype), _ops.cast(y, dtype)
    r = a - floor_divide(a, b) * b
    return r if dtype.is_float else _ops.select(_ops.equal(b, 0), _ops.zeros_like(r), r)


def remainder(input, other):  # noqa: A002
    """input - floor(input / other) * other (ops.remainder: floor_mod's semantics)."""
    return floor_mod(input, other)


def meshgrid(*inputs, indexing="xy"):
    """Coordinate tensors of the 1-D inputs, each broadcast to the grid's shape
    (ops.meshgrid): indexing 'xy' (the first two axes swapped, as numpy) or 'ij'."""
    if len(inputs) == 1 and isinstance(inputs[0], (tuple, list)):
        inputs = tuple(inputs[0])
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    if len(inputs) < 2:
        raise ValueError(f"meshgrid needs at least 2 inputs, got {len(inputs)}")
    inputs = [_t(x) for x in inputs]
    for x in inputs:
        if len(x.shape) != 1:
            raise ValueError(f"meshgrid: every input must be 1-D, got shape {x.shape}")
    if len({x.dtype for x in inputs}) != 1:
        raise TypeError("meshgrid: the inputs must have one dtype")
    sizes = [x.shape[0] for x in inputs]
    if indexing == "xy":
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, x in enumerate(inputs):
        axis = {0: 1, 1: 0}.get(i, i) if indexing == "xy" else i
        shape = [1] * len(inputs)
        shape[axis] = -1
        out.append(_ops.broadcast_to(_ops.reshape(x, shape), sizes))
    return tuple(out)


def gather_nd(input_x, indices):
    """input_x[indices[..., 0], ..., indices[..., K-1]] for the last axis of `indices` (K <=
    rank): shape indices.shape[:-1] + input_x.shape[K:] (ops.gather_nd)."""
    x, idx = _t(input_x), _index_tensor(indices, "indices")
    if len(idx.shape) < 1:
        raise ValueError("gather_nd: indices must have rank >= 1")
    k, shape = idx.shape[-1], x.shape
    if k > len(shape):
        raise ValueError(f"gather_nd: the last axis of indices ({k}) is longer than the rank "
                         f"of input_x ({len(shape)})")
    flat = _ops.reshape(x, (_prod(shape[:k]),) + shape[k:])
    offsets = _flat_offsets(idx, shape[:k])
    return _ops.gather(flat, offsets, 0)


def _flat_offsets(indices, dims):
    """sum_i indices[..., i] * stride_i for the row-major strides of `dims`."""
    strides = _np.array(_strides(dims), indices.dtype.np)
    if len(dims) == 1:
        return _ops.squeeze(indices, -1)
    return _ops.reduce_sum(_ops.mul(indices, _Tensor(strides)), -1)


def _element_offsets(shape, index, dim):
    """The flat offsets into a tensor of `shape` of the elements index selects along `dim`
    (gather_elements' and scatter-along-dim's addressing): index * stride[dim] plus the
    static offsets of the other coordinates."""
    strides = _strides(shape)
    ishape = index.shape
    rest = _np.zeros(ishape, _np.int64)
    for a, n in enumerate(ishape):
        if a != dim:
            rest = rest + _along_axis(_np.arange(n) * strides[a], a, len(ishape))
    rest = _Tensor(rest.astype(index.dtype.np))
    return _ops.add(_ops.mul(index, _Tensor(_np.array(strides[dim], index.dtype.np))), rest)


def _check_elements(name, shape, index, dim, src=None):
    ishape = index.shape
    if len(ishape) != len(shape):
        raise ValueError(f"For '{name}', index must have the rank of the input "
                         f"({len(shape)}), got shape {ishape}")
    for a, (n, m) in enumerate(zip(ishape, shape)):
        if a != dim and n > m:
            raise ValueError(f"For '{name}', index's size {n} on axis {a} exceeds the "
                             f"input's {m}")
    if src is not None:
        if len(src.shape) != len(shape) or _builtins.any(
                s < n for s, n in zip(src.shape, ishape)):
            raise ValueError(f"For '{name}', src of shape {src.shape} must have index's rank "
                             f"and at least its size on every axis {ishape}")


def gather_elements(input, dim, index):  # noqa: A002
    """out[i][j] = input[index[i][j]][j] for dim 0 (and so on): index has input's rank and
    the output index's shape (ops.gather_elements)."""
    x, idx = _t(input), _index_tensor(index, "index")
    dim = _dim(dim, len(x.shape), "dim")
    _check_elements("gather_elements", x.shape, idx, dim)
    return _ops.gather(_ops.reshape(x, (-1,)), _element_offsets(x.shape, idx, dim), 0)


def _scatter_along(x, dim, idx, src):
    """x with src[...] added at the elements idx selects along dim (Tensor.scatter_add)."""
    x, idx, src = _t(x), _index_tensor(idx, "index"), _t(src)
    dim = _dim(dim, len(x.shape), "dim")
    _check_elements("scatter_add", x.shape, idx, dim, src)
    if src.shape != idx.shape:
        src = _ops.slice(src, (0,) * len(idx.shape), idx.shape)
    offsets = _ops.reshape(_element_offsets(x.shape, idx, dim), (-1,))
    added = _ops.unsorted_segment_sum(_ops.reshape(_ops.cast(src, x.dtype), (-1,)), offsets,
                                      _prod(x.shape))
    return _ops.add(x, _ops.reshape(added, x.shape))


def _scatter_shape(shape):
    if not isinstance(shape, tuple):
        raise TypeError(f"scatter_nd: shape must be a tuple, got {type(shape).__name__}")
    shape = tuple(_int(d, "shape") for d in shape)
    if not shape or _builtins.any(d < 1 for d in shape):
        raise ValueError(f"scatter_nd: shape must be non-empty with every entry >= 1, got "
                         f"{shape}")
    return shape


def _scatter_rows(indices, updates, shape, name):
    """unsorted_segment_sum of the updates into the rows of `shape` flattened over the
    indexed axes: (flat result of shape (prod(shape[:K]),) + shape[K:])."""
    idx, upd = _index_tensor(indices, "indices"), _t(updates)
    if len(idx.shape) < 2:
        raise ValueError(f"For '{name}', indices must have rank >= 2, got shape {idx.shape}")
    k = idx.shape[-1]
    if k > len(shape):
        raise ValueError(f"For '{name}', indices.shape[-1] ({k}) exceeds the rank of the "
                         f"output ({len(shape)})")
    want = idx.shape[:-1] + tuple(shape[k:])
    if upd.shape != want:
        raise ValueError(f"For '{name}', updates must have shape indices.shape[:-1] + "
                         f"shape[indices.shape[-1]:] = {want}, got {upd.shape}")
    rows = _prod(shape[:k])
    offsets = _ops.reshape(_flat_offsets(idx, tuple(shape[:k])), (-1,))
    flat = _ops.reshape(upd, (-1,) + tuple(shape[k:]))
    return _ops.unsorted_segment_sum(flat, offsets, rows), k


def scatter_nd(indices, updates, shape):
    """A zero tensor of `shape` with the updates added at the indices (the last axis of
    indices addresses the leading axes); repeated indices add up (ops.scatter_nd)."""
    shape = _scatter_shape(shape)
    rows, _ = _scatter_rows(indices, updates, shape, "scatter_nd")
    return _ops.reshape(rows, shape)


def tensor_scatter_add(input_x, indices, updates):
    """input_x plus scatter_nd(indices, updates, input_x.shape) (ops.tensor_scatter_add)."""
    x = _t(input_x)
    rows, _ = _scatter_rows(indices, _ops.cast(updates, x.dtype), x.shape,
                            "tensor_scatter_add")
    return _ops.add(x, _ops.reshape(rows, x.shape))


def _parameter(name, x):
    if not isinstance(x, _Parameter):
        raise TypeError(f"For '{name}', input_x must be a Parameter, got {type(x).__name__}")
    return x


def scatter_add(input_x, indices, updates):
    """input_x[indices[i]] += updates[i] along axis 0 of the Parameter input_x, written back;
    repeated indices add up; returns the new value (ops.scatter_add)."""
    x = _parameter("scatter_add", input_x)
    idx = _index_tensor(indices, "indices")
    upd = _t(updates)
    want = idx.shape + x.shape[1:]
    if upd.shape != want:
        raise ValueError(f"For 'scatter_add', updates must have shape indices.shape + "
                         f"input_x.shape[1:] = {want}, got {upd.shape}")
    flat = _ops.reshape(_ops.cast(upd, x.dtype), (-1,) + x.shape[1:])
    added = _ops.unsorted_segment_sum(flat, _ops.reshape(idx, (-1,)), x.shape[0])
    return _ops.assign(x, _ops.add(x, added))


def _scatter_nd_update(input_x, indices, updates):
    """ScatterNdUpdate: the Parameter's elements at the indices replaced by the updates
    (with repeated indices, their updates add up: MindSpore leaves that order undefined)."""
    x = _parameter("ScatterNdUpdate", input_x)
    upd = _ops.cast(updates, x.dtype)
    rows, _ = _scatter_rows(indices, upd, x.shape, "ScatterNdUpdate")
    hits, _ = _scatter_rows(indices, _ops.ones_like(upd), x.shape, "ScatterNdUpdate")
    new = _ops.select(_ops.greater(_ops.reshape(hits, x.shape), 0),
                      _ops.reshape(rows, x.shape), x)
    return _ops.assign(x, new)


def reverse_sequence(x, seq_lengths, seq_dim, batch_dim=0):
    """For each b, the first seq_lengths[b] elements along seq_dim reversed, the rest kept
    (ops.reverse_sequence)."""
    x, lengths = _t(x), _index_tensor(seq_lengths, "seq_lengths")
    rank = len(x.shape)
    seq_dim, batch_dim = _dim(seq_dim, rank, "seq_dim"), _dim(batch_dim, rank, "batch_dim")
    if seq_dim == batch_dim:
        raise ValueError(f"reverse_sequence: seq_dim and batch_dim must differ, both are "
                         f"{seq_dim}")
    if lengths.shape != (x.shape[batch_dim],):
        raise ValueError(f"reverse_sequence: seq_lengths must have shape "
                         f"({x.shape[batch_dim]},), got {lengths.shape}")
    t = _Tensor(_along_axis(_np.arange(x.shape[seq_dim]), seq_dim, rank)
                .astype(lengths.dtype.np))
    n = _ops.reshape(lengths, _along_axis(_np.zeros(x.shape[batch_dim]), batch_dim,
                                          rank).shape)
    index = _ops.select(_ops.less(t, n), _ops.sub(_ops.sub(n, 1), t), t)
    return gather_elements(x, seq_dim, _ops.broadcast_to(index, x.shape))


def repeat_elements(x, rep, axis=0):
    """Each slice along `axis` repeated `rep` times in place (ops.repeat_elements)."""
    rep = _int(rep, "rep")
    if rep < 1:
        raise ValueError(f"repeat_elements: rep must be positive, got {rep}")
    return _ops.repeat_interleave(x, rep, axis)


# ------------------------------------------------------------------ layers and losses

def bias_add(input_x, bias):
    """input_x + bias along axis 1, the channels (ops.bias_add; bias is 1-D)."""
    shape = _shape(input_x)
    if len(shape) < 2:
        raise ValueError(f"bias_add: input_x must have rank >= 2, got shape {shape}")
    if _shape(bias) != (shape[1],):
        raise ValueError(f"bias_add: bias must have shape ({shape[1]},), the channels of "
                         f"input_x, got {_shape(bias)}")
    return _ops.add(input_x, _ops.reshape(bias, [1, -1] + [1] * (len(shape) - 2)))


_REDUCTIONS = ("none", "mean", "sum")


def _reduce(name, loss, reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"For '{name}', reduction must be one of {list(_REDUCTIONS)}, got "
                         f"{reduction!r}")
    if reduction == "mean":
        return _ops.reduce_mean(loss)
    if reduction == "sum":
        return _ops.reduce_sum(loss)
    return loss


def smooth_l1_loss(input, target, beta=1.0, reduction="none"):  # noqa: A002
    """0.5 d^2 / beta where d = |input - target| < beta, else d - 0.5 beta
    (ops.smooth_l1_loss; the shapes must match)."""
    if isinstance(beta, bool) or not isinstance(beta, _numbers.Real):
        raise TypeError(f"For 'smooth_l1_loss', beta must be a float, got {beta!r}")
    if beta <= 0:
        raise ValueError(f"For 'smooth_l1_loss', beta must be greater than 0, got {beta}")
    if _shape(input) != _shape(target):
        raise ValueError(f"For 'smooth_l1_loss', input and target must have one shape, got "
                         f"{_shape(input)} and {_shape(target)}")
    _floats("smooth_l1_loss", input, target)
    d = _ops.abs(_ops.sub(input, target))
    loss = _ops.select(_ops.less(d, beta), _ops.mul(_ops.mul(d, d), 0.5 / beta),
                       _ops.sub(d, 0.5 * beta))
    return _reduce("smooth_l1_loss", loss, reduction)


def binary_cross_entropy(logits, labels, weight=None, reduction="mean"):
    """-weight (y log x + (1 - y) log(1 - x)) for probabilities x = logits
    (ops.binary_cross_entropy), with the 1e-12 MindSpore's kernels add inside the logs."""
    if _shape(logits) != _shape(labels):
        raise ValueError(f"For 'binary_cross_entropy', logits and labels must have one shape, "
                         f"got {_shape(logits)} and {_shape(labels)}")
    _floats("binary_cross_entropy", logits, labels)
    eps = 1e-12
    loss = _ops.neg(_ops.add(_ops.mul(labels, _ops.log(_ops.add(logits, eps))),
                             _ops.mul(_ops.sub(1.0, labels),
                                      _ops.log(_ops.add(_ops.sub(1.0, logits), eps)))))
    if weight is not None:
        loss = _ops.mul(loss, weight)
    return _reduce("binary_cross_entropy", loss, reduction)


def rms_norm(x, gamma, epsilon=1e-6):
    """(x / sqrt(mean(x^2) + epsilon) * gamma, the reciprocal rms as float32), the mean
    over the trailing gamma.ndim axes (ops.rms_norm)."""
    x, gamma = _t(x), _t(gamma)
    if x.dtype not in (_dt.float16, _dt.float32, _dt.bfloat16) or gamma.dtype is not x.dtype:
        raise TypeError(f"For 'rms_norm', x and gamma must share a dtype of float16, float32 "
                        f"or bfloat16, got {x.dtype.name} and {gamma.dtype.name}")
    if isinstance(epsilon, bool) or not isinstance(epsilon, float) or not 0 < epsilon <= 1:
        raise ValueError(f"For 'rms_norm', epsilon must be a float in (0, 1], got {epsilon!r}")
    k = len(gamma.shape)
    if k > len(x.shape):
        raise ValueError(f"For 'rms_norm', gamma's rank {k} exceeds x's {len(x.shape)}")
    axes = tuple(_builtins.range(len(x.shape) - k, len(x.shape)))
    xf = _ops.cast(x, _dt.float32)
    rstd = _ops.rsqrt(_ops.add(_ops.reduce_mean(_ops.mul(xf, xf), axes, True), epsilon))
    y = _ops.cast(_ops.mul(_ops.mul(xf, rstd), _ops.cast(gamma, _dt.float32)), x.dtype)
    return y, rstd


# ------------------------------------------------------------------ detection boxes

def _boxes(name, *boxes):
    for b in boxes:
        shape = _shape(b)
        if len(shape) != 2 or shape[1] != 4:
            raise ValueError(f"For '{name}', the boxes must have shape (N, 4), got {shape}")
    _floats(name, *boxes)


def _columns(b):
    """The four coordinate columns (N,) of (N, 4) boxes."""
    return [_ops.reshape(_ops.slice(b, (0, i), (b.shape[0], 1)), (-1,)) for i in _builtins.range(4)]


def iou(anchor_boxes, gt_boxes, mode="iou"):
    """(M, N) overlaps of N anchors and M ground truths (x0, y0, x1, y1), areas counted in
    pixels ((x1 - x0 + 1)(y1 - y0 + 1)): intersection over union, or over the ground truth's
    area with mode 'iof' (ops.iou)."""
    if mode not in ("iou", "iof"):  # (MindSpore: a KeyError; mscc's located errors for
        # a bad argument value are ValueErrors)
        raise ValueError(f"iou: mode must be 'iou' or 'iof', got {mode!r}")
    anchor_boxes, gt_boxes = _t(anchor_boxes), _t(gt_boxes)
    _boxes("iou", anchor_boxes, gt_boxes)
    ax0, ay0, ax1, ay1 = (_ops.expand_dims(c, 0) for c in _columns(anchor_boxes))  # (1, N)
    gx0, gy0, gx1, gy1 = (_ops.expand_dims(c, 1) for c in _columns(gt_boxes))      # (M, 1)
    w = _ops.maximum(_ops.add(_ops.sub(_ops.minimum(ax1, gx1), _ops.maximum(ax0, gx0)), 1), 0)
    h = _ops.maximum(_ops.add(_ops.sub(_ops.minimum(ay1, gy1), _ops.maximum(ay0, gy0)), 1), 0)
    overlap = _ops.mul(w, h)
    area_a = _ops.mul(_ops.add(_ops.sub(ax1, ax0), 1), _ops.add(_ops.sub(ay1, ay0), 1))
    area_g = _ops.mul(_ops.add(_ops.sub(gx1, gx0), 1), _ops.add(_ops.sub(gy1, gy0), 1))
    if mode == "iof":
        return _ops.div(overlap, _ops.add(area_g, 1e-10))
    return _ops.div(overlap, _ops.add(_ops.sub(_ops.add(area_a, area_g), overlap), 1e-10))


def check_valid(bboxes, img_metas):
    """Whether each (x0, y0, x1, y1) box lies inside the image of img_metas (height, width,
    ratio): x0, y0 >= 0, x1 <= width * ratio - 1, y1 <= height * ratio - 1 (ops.check_valid)."""
    bboxes, img_metas = _t(bboxes), _t(img_metas)
    if len(bboxes.shape) != 2 or bboxes.shape[1] != 4:
        raise ValueError(f"For 'check_valid', bboxes must have shape (N, 4), got "
                         f"{bboxes.shape}")
    if img_metas.shape != (3,):
        raise ValueError(f"For 'check_valid', img_metas must have shape (3,), got "
                         f"{img_metas.shape}")
    if img_metas.dtype is not bboxes.dtype:
        raise TypeError(f"For 'check_valid', bboxes and img_metas must share a dtype, got "
                        f"{bboxes.dtype.name} and {img_metas.dtype.name}")
    x0, y0, x1, y1 = (_ops.cast(c, _dt.float64) for c in _columns(bboxes))
    meta = [_ops.reshape(_ops.slice(_ops.cast(img_metas, _dt.float64), (i,), (1,)), ())
            for i in _builtins.range(3)]
    height, width, ratio = meta
    right = _ops.sub(_ops.mul(width, ratio), 1.0)
    bottom = _ops.sub(_ops.mul(height, ratio), 1.0)
    ok = _ops.logical_and(_ops.greater_equal(x0, 0.0), _ops.greater_equal(y0, 0.0))
    ok = _ops.logical_and(ok, _ops.less_equal(x1, right))
    return _ops.logical_and(ok, _ops.less_equal(y1, bottom))


def _four(name, what, values):
    if not isinstance(values, (tuple, list)):
        raise TypeError(f"For '{name}', {what} must be a tuple, got {type(values).__name__}")
    values = tuple(float(v) for v in values)
    if len(values) < 4:
        raise ValueError(f"For '{name}', {what} must have 4 entries, got {len(values)}")
    return values[:4]


def _centers(b):
    x0, y0, x1, y1 = _columns(b)
    return (_ops.mul(_ops.add(x0, x1), 0.5), _ops.mul(_ops.add(y0, y1), 0.5),
            _ops.add(_ops.sub(x1, x0), 1.0), _ops.add(_ops.sub(y1, y0), 1.0))


def bounding_box_encode(anchor_box, groundtruth_box, means=(0.0, 0.0, 0.0, 0.0),
                        stds=(1.0, 1.0, 1.0, 1.0)):
    """The offsets (dx, dy, dw, dh) of each ground truth from its anchor, normalized by means
    and stds; widths count pixels (x1 - x0 + 1) (ops.bounding_box_encode)."""
    anchor_box, groundtruth_box = _t(anchor_box), _t(groundtruth_box)
    means = _four("bounding_box_encode", "means", means)
    stds = _four("bounding_box_encode", "stds", stds)
    _boxes("bounding_box_encode", anchor_box, groundtruth_box)
    if anchor_box.shape != groundtruth_box.shape:
        raise ValueError(f"For 'bounding_box_encode', the boxes must have one shape, got "
                         f"{anchor_box.shape} and {groundtruth_box.shape}")
    px, py, pw, ph = _centers(anchor_box)
    gx, gy, gw, gh = _centers(groundtruth_box)
    deltas = [_ops.div(_ops.sub(gx, px), pw), _ops.div(_ops.sub(gy, py), ph),
              _ops.log(_ops.div(gw, pw)), _ops.log(_ops.div(gh, ph))]
    deltas = [_ops.div(_ops.sub(d, m), s) for d, m, s in zip(deltas, means, stds)]
    return _ops.stack(deltas, 1)


def bounding_box_decode(anchor_box, deltas, max_shape, means=(0.0, 0.0, 0.0, 0.0),
                        stds=(1.0, 1.0, 1.0, 1.0), wh_ratio_clip=0.016):
    """The boxes the deltas (dx, dy, dw, dh) make of the anchors (bounding_box_encode's
    inverse), dw and dh clipped to |log(wh_ratio_clip)|, the corners clipped to [0, width]
    and [0, height] of max_shape (height, width) (ops.bounding_box_decode)."""
    anchor_box, deltas = _t(anchor_box), _t(deltas)
    means = _four("bounding_box_decode", "means", means)
    stds = _four("bounding_box_decode", "stds", stds)
    if not isinstance(max_shape, (tuple, list)) or len(max_shape) < 2:
        raise TypeError(f"For 'bounding_box_decode', max_shape must be a tuple of 2 ints, got "
                        f"{max_shape!r}")
    if isinstance(wh_ratio_clip, bool) or not isinstance(wh_ratio_clip, float):
        raise TypeError(f"For 'bounding_box_decode', wh_ratio_clip must be a float, got "
                        f"{wh_ratio_clip!r}")
    _boxes("bounding_box_decode", anchor_box, deltas)
    if anchor_box.shape != deltas.shape:
        raise ValueError(f"For 'bounding_box_decode', anchor_box and deltas must have one "
                         f"shape, got {anchor_box.shape} and {deltas.shape}")
    dx, dy, dw, dh = (_ops.add(_ops.mul(c, s), m) for c, m, s in
                      zip(_columns(deltas), means, stds))
    clip = abs(_math.log(wh_ratio_clip))
    dw, dh = _ops.clip_by_value(dw, -clip, clip), _ops.clip_by_value(dh, -clip, clip)
    px, py, pw, ph = _centers(anchor_box)
    gx, gy = _ops.add(px, _ops.mul(pw, dx)), _ops.add(py, _ops.mul(ph, dy))
    gw, gh = _ops.mul(pw, _ops.exp(dw)), _ops.mul(ph, _ops.exp(dh))
    half_w, half_h = _ops.mul(gw, 0.5), _ops.mul(gh, 0.5)
    height, width = float(max_shape[0]), float(max_shape[1])
    x0 = _ops.clip_by_value(_ops.add(_ops.sub(gx, half_w), 0.5), 0.0, width)
    y0 = _ops.clip_by_value(_ops.add(_ops.sub(gy, half_h), 0.5), 0.0, height)
    x1 = _ops.clip_by_value(_ops.sub(_ops.add(gx, half_w), 0.5), 0.0, width)
    y1 = _ops.clip_by_value(_ops.sub(_ops.add(gy, half_h), 0.5), 0.0, height)
    return _ops.stack([x0, y0, x1, y1], 1)


def _nms_with_mask(bboxes, iou_threshold=0.5):
    """NMSWithMask: (the boxes sorted by score, descending; int32 positions 0..N-1 in that
    order; whether each survives greedy suppression), as MindSpore's CPU kernel computes them:
    a box is dropped when its overlap (intersection over union, areas (x1 - x0)(y1 - y0))
    with a kept box of higher score exceeds iou_threshold. The sort is ops.sort (stable:
    equal scores keep their order) and the greedy pass one ForiLoop over the boxes; no
    gradient flows (MindSpore's has none either)."""
    from .control_flow import fori_loop
    from .dispatch import call
    x = _t(bboxes)
    if len(x.shape) != 2 or x.shape[1] != 5:
        raise ValueError(f"For 'NMSWithMask', bboxes must have shape (N, 5), got {x.shape}")
    if x.dtype not in (_dt.float16, _dt.float32):
        raise TypeError(f"For 'NMSWithMask', bboxes must be float16 or float32, got "
                        f"{x.dtype.name}")
    if isinstance(iou_threshold, bool) or not isinstance(iou_threshold, _numbers.Real):
        raise TypeError(f"For 'NMSWithMask', iou_threshold must be a float, got "
                        f"{iou_threshold!r}")
    n = x.shape[0]
    x = _ops.stop_gradient(x)
    order = _ops.argsort(_ops.reshape(_ops.slice(x, (0, 4), (n, 1)), (-1,)), descending=True)
    boxes = _ops.gather(x, order, 0)
    x0, y0, x1, y1 = _columns(_ops.slice(boxes, (0, 0), (n, 4)))
    w = _ops.maximum(_ops.sub(_ops.minimum(_ops.expand_dims(x1, 1), _ops.expand_dims(x1, 0)),
                              _ops.maximum(_ops.expand_dims(x0, 1), _ops.expand_dims(x0, 0))),
                     0.0)
    h = _ops.maximum(_ops.sub(_ops.minimum(_ops.expand_dims(y1, 1), _ops.expand_dims(y1, 0)),
                              _ops.maximum(_ops.expand_dims(y0, 1), _ops.expand_dims(y0, 0))),
                     0.0)
    inter = _ops.mul(w, h)
    area = _ops.mul(_ops.sub(x1, x0), _ops.sub(y1, y0))
    union = _ops.sub(_ops.add(_ops.expand_dims(area, 1), _ops.expand_dims(area, 0)), inter)
    later = _Tensor(_np.triu(_np.ones((n, n), bool), 1))      # j > i
    drop = _ops.logical_and(_ops.greater(_ops.div(inter, union), float(iou_threshold)), later)

    def suppress(i, keep):
        kept_i = call("ms.dynamic_index", (keep, i))
        return _ops.logical_and(keep, _ops.logical_not(
            _ops.logical_and(kept_i, call("ms.dynamic_index", (drop, i)))))

    keep = _ops.ones((n,), _dt.bool_)
    if n > 1:
        keep = fori_loop(0, n - 1, suppress, keep, unroll=False)
    return boxes, _Tensor(_np.arange(n, dtype=_np.int32)), keep


def _roi_align(features, rois, pooled_height, pooled_width, spatial_scale, sample_num=2,
               roi_end_mode=1):
    """ROIAlign (MindSpore's kernel): for each region (batch index, x0, y0, x1, y1) scaled
    by spatial_scale (x1, y1 + roi_end_mode first), the (pooled_height, pooled_width) bins,
    each the mean of sample_num x sample_num bilinear samples at the sample centres; samples
    beyond one pixel outside the map read 0; regions whose x0 and x1 are both ~0 give 0.
    Composed of gathers of computed indices (differentiable in features; MindSpore gives
    the regions no gradient, nor does this). sample_num must be positive (MindSpore's
    adaptive count, <= 0, depends on the values)."""
    x, r = _t(features), _t(rois)
    ph, pw, samples = _roi_align_checks(x, r, pooled_height, pooled_width, spatial_scale,
                                        sample_num, roi_end_mode)
    count = r.shape[0]
    r = _ops.stop_gradient(_ops.cast(r, x.dtype))
    cols = [_ops.reshape(_ops.slice(r, (0, i), (count, 1)), (-1,)) for i in
            _builtins.range(r.shape[1])]
    if len(cols) == 5:
        batch = _ops.cast(_ops.round(_ops.add(cols[0], 0.00007)), _dt.int32)
        cols = cols[1:]
    else:
        batch = _ops.zeros((count,), _dt.int32)
    ys, xs = _roi_sample_positions(x, cols, ph, pw, samples, float(spatial_scale),
                                   roi_end_mode)
    out = _roi_bilinear(x, batch, ys, xs)                         # (R, PH, PW, C)
    out = _ops.reshape(out, (count, ph, samples, pw, samples, x.shape[1]))
    out = _ops.reduce_mean(out, (2, 4))                          # (R, ph, pw, C)
    out = _ops.transpose(out, (0, 3, 1, 2))
    empty = _ops.logical_and(_ops.less(_ops.abs(cols[0]), 0.001),
                             _ops.less(_ops.abs(cols[2]), 0.001))
    return _ops.select(_ops.reshape(empty, (count, 1, 1, 1)), _ops.zeros_like(out), out)


def _roi_align_checks(x, r, pooled_height, pooled_width, spatial_scale, sample_num,
                      roi_end_mode):
    """ROIAlign's argument errors, as MindSpore's; returns (ph, pw, samples)."""
    name = "ROIAlign"
    if len(x.shape) != 4:
        raise ValueError(f"For '{name}', features must be 4-D (N, C, H, W), got {x.shape}")
    if len(r.shape) != 2 or r.shape[1] not in (4, 5):
        raise ValueError(f"For '{name}', rois must have shape (R, 5), got {r.shape}")
    _floats(name, x, r)
    ph, pw = _int(pooled_height, "pooled_height"), _int(pooled_width, "pooled_width")
    if ph <= 0 or pw <= 0:
        raise ValueError(f"For '{name}', pooled_height and pooled_width must be positive, got "
                         f"{ph} and {pw}")
    samples = _int(sample_num, "sample_num")
    if samples <= 0:
        raise ValueError(f"For '{name}', sample_num must be positive in mscc, got {samples} "
                         "(MindSpore's adaptive sample count depends on the region sizes)")
    if _int(roi_end_mode, "roi_end_mode") not in (0, 1):
        raise ValueError(f"For '{name}', roi_end_mode must be 0 or 1, got {roi_end_mode}")
    if isinstance(spatial_scale, bool) or not isinstance(spatial_scale, _numbers.Real):
        raise TypeError(f"For '{name}', spatial_scale must be a float, got {spatial_scale!r}")
    return ph, pw, samples


def _roi_sample_positions(x, cols, ph, pw, samples, scale, roi_end_mode):
    """The sample rows (R, ph * samples) and columns (R, pw * samples) of each region:
    start + bin * (p + (s + 0.5) / samples)."""
    start_w, start_h = _ops.mul(cols[0], scale), _ops.mul(cols[1], scale)
    end_w = _ops.mul(_ops.add(cols[2], float(roi_end_mode)), scale)
    end_h = _ops.mul(_ops.add(cols[3], float(roi_end_mode)), scale)
    roi_w, roi_h = _ops.sub(end_w, start_w), _ops.sub(end_h, start_h)
    if roi_end_mode == 0:
        roi_w, roi_h = _ops.maximum(roi_w, 1.0), _ops.maximum(roi_h, 1.0)
    bin_h, bin_w = _ops.div(roi_h, float(ph)), _ops.div(roi_w, float(pw))
    steps_h = _np.repeat(_np.arange(ph), samples) + _np.tile(
        (_np.arange(samples) + 0.5) / samples, ph)
    steps_w = _np.repeat(_np.arange(pw), samples) + _np.tile(
        (_np.arange(samples) + 0.5) / samples, pw)
    ys = _ops.add(_ops.expand_dims(start_h, 1), _ops.mul(_ops.expand_dims(bin_h, 1),
                                                           _constant_like(steps_h, x)))
    xs = _ops.add(_ops.expand_dims(start_w, 1), _ops.mul(_ops.expand_dims(bin_w, 1),
                                                           _constant_like(steps_w, x)))
    return ys, xs


def _roi_bilinear(x, batch, ys, xs):
    """Bilinear samples of the (N, C, H, W) map at rows ys and columns xs of each region's
    image: (R, len(ys), len(xs), C), four weighted gathers."""
    n, c, height, width = x.shape
    y_lo, y_hi, y_w_lo, y_w_hi = _roi_axis(ys, height)
    x_lo, x_hi, x_w_lo, x_w_hi = _roi_axis(xs, width)
    flat = _ops.reshape(_ops.transpose(x, (0, 2, 3, 1)), (n * height * width, c))
    base = _ops.mul(batch, height * width)                       # (R,)
    out = None
    for yi, wy in ((y_lo, y_w_lo), (y_hi, y_w_hi)):
        row = _ops.add(_ops.expand_dims(base, 1), _ops.mul(yi, width))    # (R, PH)
        for xi, wx in ((x_lo, x_w_lo), (x_hi, x_w_hi)):
            index = _ops.add(_ops.expand_dims(row, 2), _ops.expand_dims(xi, 1))  # (R, PH, PW)
            weight = _ops.mul(_ops.expand_dims(wy, 2), _ops.expand_dims(wx, 1))
            term = _ops.mul(_ops.gather(flat, index, 0), _ops.expand_dims(weight, 3))
            out = term if out is None else _ops.add(out, term)
    return out


def _roi_axis(pos, size):
    """Bilinear taps along one axis as ROIAlign's kernel takes them: (low index, high index,
    weight of low, weight of high), the weights 0 for a position beyond [-1, size]."""
    inside = _ops.logical_and(_ops.greater_equal(pos, -1.0), _ops.less_equal(pos, float(size)))
    p = _ops.maximum(pos, 0.0)
    low = _ops.select(_ops.less_equal(p, 0.00007), _ops.zeros_like(p), _ops.floor(p))
    at_end = _ops.greater_equal(low, float(size - 1))
    low = _ops.select(at_end, _ops.full(p.shape, float(size - 1), dtype=p.dtype), low)
    p = _ops.select(at_end, low, p)
    high = _ops.select(at_end, low, _ops.add(low, 1.0))
    frac = _ops.sub(p, low)
    gate = _ops.cast(inside, p.dtype)
    return (_ops.cast(low, _dt.int32), _ops.cast(high, _dt.int32),
            _ops.mul(_ops.sub(1.0, frac), gate), _ops.mul(frac, gate))


# ------------------------------------------------------------------ resampling

def _nearest_index(n_in, n_out, scale, mode):
    """Source index of each output position along one axis, as MindSpore's kernels compute
    them in float32: 'floor' (dst * scale), 'round' (align_corners), 'exact' ((dst + 0.5)
    * scale)."""
    dst = _np.arange(n_out, dtype=_np.float32)
    scale = _np.float32(scale)
    if mode == "round":  # roundf: halves away from zero
        src = _np.floor(dst * scale + _np.float32(0.5))
    elif mode == "exact":
        src = _np.floor((dst + _np.float32(0.5)) * scale)
    else:
        src = _np.floor(dst * scale)
    return _np.minimum(src.astype(_np.int64), n_in - 1).astype(_np.int32)


def _linear_weights(n_in, n_out, scale, half_pixel):
    """(lower, upper, lerp) per output position: the source position dst * scale, or
    (dst + 0.5) * scale - 0.5 with half_pixel, clamped to [0, n_in - 1]."""
    dst = _np.arange(n_out, dtype=_np.float64)
    src = (dst + 0.5) * scale - 0.5 if half_pixel else dst * scale
    src = _np.clip(src, 0, n_in - 1)
    lower = _np.floor(src)
    upper = _np.minimum(_np.ceil(src), n_in - 1)
    return lower.astype(_np.int32), upper.astype(_np.int32), src - lower


def _resample_nearest(x, axis, index):
    if len(index) == x.shape[axis] and (index == _np.arange(len(index))).all():
        return x
    return _ops.gather(x, _Tensor(index), axis)


def _resample_linear(x, axis, lower, upper, lerp):
    if len(lower) == x.shape[axis] and (lower == _np.arange(len(lower))).all() \
            and not lerp.any():
        return x
    a = _ops.gather(x, _Tensor(lower), axis)
    b = _ops.gather(x, _Tensor(upper), axis)
    w = _constant_like(_along_axis(lerp, axis, len(x.shape)), x)
    return _ops.add(a, _ops.mul(_ops.sub(b, a), w))


def _scale(n_in, n_out, align_corners):
    """MindSpore's Scaling: (in - 1) / (out - 1) with align_corners (and out > 1), else
    in / out."""
    if align_corners and n_out > 1:
        return (n_in - 1) / (n_out - 1)
    return n_in / n_out


def _resize_size(name, size, rank):
    if not isinstance(size, (tuple, list)) or len(size) != rank:
        raise ValueError(f"For '{name}', size must be a tuple of {rank} ints, got {size!r}")
    size = tuple(_int(s, "size") for s in size)
    if _builtins.any(s <= 0 for s in size):
        raise ValueError(f"For '{name}', size must be positive, got {size}")
    return size


def _resize_nearest_neighbor(input_x, size, align_corners):
    """ResizeNearestNeighbor (NCHW): the source pixel floor(dst * in / out), or with
    align_corners round(dst * (in - 1) / (out - 1))."""
    x = _t(input_x)
    if len(x.shape) != 4:
        raise ValueError(f"For 'ResizeNearestNeighbor', input_x must be 4-D (NCHW), got shape "
                         f"{x.shape}")
    size = _resize_size("ResizeNearestNeighbor", size, 2)
    for axis, n_out in zip((2, 3), size):
        n_in = x.shape[axis]
        index = _nearest_index(n_in, n_out, _scale(n_in, n_out, align_corners),
                               "round" if align_corners else "floor")
        x = _resample_nearest(x, axis, index)
    return x


def _resize_bilinear(x, size, align_corners, half_pixel_centers):
    """ResizeBilinear (NCHW, float): TensorFlow's legacy sampling, the source position
    dst * scale (half_pixel_centers: (dst + 0.5) * scale - 0.5), scale (in - 1) / (out - 1)
    with align_corners, else in / out."""
    x = _t(x)
    if align_corners and half_pixel_centers:
        raise ValueError("For 'ResizeBilinear', align_corners and half_pixel_centers cannot "
                         "both be True")
    if len(x.shape) != 4:
        raise ValueError(f"For 'ResizeBilinear', x must be 4-D (NCHW), got shape {x.shape}")
    _floats("ResizeBilinear", x)
    size = _resize_size("ResizeBilinear", size, 2)
    for axis, n_out in zip((2, 3), size):
        n_in = x.shape[axis]
        lower, upper, lerp = _linear_weights(n_in, n_out, _scale(n_in, n_out, align_corners),
                                             half_pixel_centers)
        x = _resample_linear(x, axis, lower, upper, lerp)
    return x


_MODES = {"nearest": 0, "nearest-exact": 0, "linear": 1, "bilinear": 2, "trilinear": 3,
          "area": 0}


def interpolate(input, size=None, scale_factor=None, mode="nearest",  # noqa: A002
                align_corners=None, recompute_scale_factor=None):
    """Resize the spatial axes of an (N, C, *spatial) input (ops.interpolate): modes
    'nearest' (source floor(dst * scale)), 'nearest-exact' (floor((dst + 0.5) * scale)),
    'linear' (3-D input), 'bilinear' (4-D), 'trilinear' (5-D) with align_corners or
    half-pixel centers, and 'area' (adaptive average pooling). The output size is `size`, or
    floor(in * scale_factor), where scale is then 1 / scale_factor unless
    recompute_scale_factor. 'bicubic' is not supported."""
    x = _t(input)
    if mode not in _MODES:
        raise ValueError(f"interpolate: mode must be one of {sorted(_MODES)}, got {mode!r}"
                         + (" (mscc has no bicubic)" if mode == "bicubic" else ""))
    rank = len(x.shape) - 2
    if rank not in (1, 2, 3):
        raise ValueError(f"interpolate: input must be 3-D, 4-D or 5-D, got shape {x.shape}")
    if _MODES[mode] and _MODES[mode] != rank:
        raise ValueError(f"interpolate: mode {mode!r} needs a {_MODES[mode] + 2}-D input, got "
                         f"shape {x.shape}")
    if align_corners and not _MODES[mode]:
        raise ValueError(f"interpolate: align_corners applies to linear modes only, not "
                         f"{mode!r}")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    spatial = x.shape[2:]
    if size is not None:
        sizes = (size,) * rank if isinstance(size, int) else tuple(size)
        sizes = _resize_size("interpolate", sizes, rank)
        scales = [n_in / n_out for n_in, n_out in zip(spatial, sizes)]
    else:
        factors = (scale_factor,) * rank if isinstance(scale_factor, (int, float)) \
            else tuple(scale_factor)
        if len(factors) != rank or _builtins.any(f <= 0 for f in factors):
            raise ValueError(f"interpolate: scale_factor must be {rank} positive numbers, got "
                             f"{scale_factor!r}")
        sizes = tuple(int(_math.floor(n * f)) for n, f in zip(spatial, factors))
        scales = [n_in / n_out if recompute_scale_factor else 1.0 / f
                  for n_in, n_out, f in zip(spatial, sizes, factors)]
    if mode == "area":
        pool = {1: _ops.adaptive_avg_pool1d, 2: _ops.adaptive_avg_pool2d,
                3: _ops.adaptive_avg_pool3d}[rank]
        return pool(x, sizes if rank > 1 else sizes[0])
    for axis, n_out, scale in zip(_builtins.range(2, 2 + rank), sizes, scales):
        n_in = x.shape[axis]
        if _MODES[mode]:
            if align_corners:
                scale = _scale(n_in, n_out, True)
            lower, upper, lerp = _linear_weights(n_in, n_out, scale, not align_corners)
            x = _resample_linear(x, axis, lower, upper, lerp)
        else:
            x = _resample_nearest(x, axis, _nearest_index(
                n_in, n_out, scale, "exact" if mode == "nearest-exact" else "floor"))
    return x


def _depth_to_space(x, block_size, data_format="NCHW"):
    """DepthToSpace (NCHW): (N, C * b * b, H, W) -> (N, C, H * b, W * b), the channel
    blocks in depth-column-row order (TensorFlow's DCR)."""
    if data_format != "NCHW":
        raise ValueError(f"For 'DepthToSpace', data_format must be 'NCHW', got "
                         f"{data_format!r}")
    b = _int(block_size, "block_size")
    if b < 2:
        raise ValueError(f"For 'DepthToSpace', block_size must be >= 2, got {b}")
    n, c, h, w = _shape(x) if len(_shape(x)) == 4 else (None,) * 4
    if n is None:
        raise ValueError(f"For 'DepthToSpace', x must be 4-D, got shape {_shape(x)}")
    if c % (b * b):
        raise ValueError(f"For 'DepthToSpace', the channels {c} must be a multiple of "
                         f"block_size^2 = {b * b}")
    y = _ops.reshape(x, (n, b, b, c // (b * b), h, w))
    y = _ops.transpose(y, (0, 3, 4, 1, 5, 2))
    return _ops.reshape(y, (n, c // (b * b), h * b, w * b))


# ------------------------------------------------------------------ random numbers

def _seed(seed, seed2=0):
    """MindSpore's (seed, seed2) pair: both 0 take the global seed (None for ops.uniform)."""
    seed, seed2 = _int(seed, "seed"), _int(seed2, "seed2")
    if seed < 0 or seed2 < 0:
        raise ValueError(f"seed and seed2 must be non-negative, got {seed} and {seed2}")
    return None if seed == seed2 == 0 else seed * 1000003 + seed2


def standard_normal(shape, seed=None):
    """float32 numbers from the standard normal distribution (ops.standard_normal): the
    Box-Muller transform of two uniform draws."""
    shape = tuple(_int(d, "shape") for d in (shape if isinstance(shape, (tuple, list))
                                             else (shape,)))
    u1 = _ops.uniform(shape, seed)
    u2 = _ops.uniform(shape, None if seed is None else _int(seed, "seed") + 1)
    radius = _ops.sqrt(_ops.mul(_ops.log(_ops.sub(1.0, u1)), -2.0))  # 1 - u1 is in (0, 1]
    return _ops.mul(radius, _ops.cos(_ops.mul(u2, 2 * _math.pi)))


def _uniform_real(shape, seed=0, seed2=0):
    return _ops.uniform(tuple(shape), _seed(seed, seed2))


def _standard_normal_prim(shape, seed=0, seed2=0):
    return standard_normal(tuple(shape), _seed(seed, seed2))


def _dropout(x, keep_prob=0.5, Seed0=0, Seed1=0):  # noqa: N803  (MindSpore's names)
    """Dropout (the Primitive): (x scaled by 1 / keep_prob where kept, else 0, the mask of
    kept elements in x's dtype)."""
    if isinstance(keep_prob, bool) or not isinstance(keep_prob, _numbers.Real) \
            or not 0 < keep_prob <= 1:
        raise ValueError(f"For 'Dropout', keep_prob must be a float in (0, 1], got "
                         f"{keep_prob!r}")
    x = _t(x)
    if keep_prob == 1:
        return x, _ops.ones_like(x)
    keep = _ops.less(_ops.uniform(x.shape, _seed(Seed0, Seed1)), float(keep_prob))
    out = _ops.select(keep, _ops.mul(x, 1.0 / keep_prob), _ops.zeros_like(x))
    return out, _ops.cast(keep, x.dtype)


# ------------------------------------------------------------------ graph-mode helpers

def tuple_to_array(input_x):
    """A 1-D Tensor of a tuple of numbers: int64 when the first is an int, else float32
    (ops.tuple_to_array)."""
    if not isinstance(input_x, (tuple, list)) or not input_x:
        raise TypeError(f"tuple_to_array: input_x must be a non-empty tuple of numbers, got "
                        f"{input_x!r}")
    for v in input_x:
        if isinstance(v, bool) or not isinstance(v, _numbers.Real):
            raise TypeError(f"tuple_to_array: the elements must be ints or floats, got "
                            f"{type(v).__name__}")
    dtype = _np.int64 if isinstance(input_x[0], int) else _np.float32
    return _Tensor(_np.array(input_x).astype(dtype))


def scalar_to_tensor(input_x, dtype=_dt.float32):
    """A 0-d Tensor of a Python number (ops.scalar_to_tensor; float32 unless `dtype`)."""
    if isinstance(input_x, _Tensor) or not isinstance(input_x, _numbers.Number):
        raise TypeError(f"scalar_to_tensor: input_x must be an int, a float or a bool, got "
                        f"{type(input_x).__name__}")
    return _Tensor(_np.array(input_x).astype(_dt.as_dtype(dtype).np))


def make_range(start=0, limit=None, delta=1):
    """The tuple range(start, limit, delta) (MindSpore's F.make_range; one argument is the
    limit)."""
    if limit is None:
        start, limit = 0, start
    for v, what in ((start, "start"), (limit, "limit"), (delta, "delta")):
        _int(v, what)
    if delta == 0:
        raise ValueError("make_range: delta must not be 0")
    return tuple(_builtins.range(start, limit, delta))


def tuple_len(input_x):
    """The number of elements of a tuple or list (MindSpore's F.tuple_len)."""
    if not isinstance(input_x, (tuple, list)):
        raise TypeError(f"tuple_len: input must be a tuple or list, got "
                        f"{type(input_x).__name__}")
    return len(input_x)


def add_flags(fn=None, **flags):
    """Record graph-compilation flags on a function or Cell and return it (MindSpore's
    F.add_flags); mscc reads none of them."""
    def record(target):
        if not hasattr(target, "_mindspore_flags"):
            try:
                target._mindspore_flags = {}
            except AttributeError:
                raise TypeError(f"add_flags: cannot set flags on {type(target).__name__}") \
                    from None
        target._mindspore_flags.update(flags)
        return target
    return record if fn is None else record(fn)


def assign_add(variable, value):
    """variable += value for a Parameter, written back; returns the new value
    (ops.assign_add)."""
    return _ops.assign(_parameter("assign_add", variable), _ops.add(variable, value))


# ------------------------------------------------------------------ Primitive conventions
# The call conventions of MindSpore's Primitive classes over the functions above
# (pyfront/primitives.py's rows call these).

def _arg_max_with_value(input_x, axis=0, keep_dims=False):
    """ArgMaxWithValue: (int32 index, values), index first."""
    values, index = max(input_x, axis, keep_dims)
    return index, values


def _arg_min_with_value(input_x, axis=0, keep_dims=False):
    values, index = min(input_x, axis, keep_dims)
    return index, values


def _sigmoid_cross_entropy_with_logits(logits, label):
    """max(x, 0) - x y + log(1 + exp(-|x|)): the elementwise loss of a logit (stable for
    large |x|)."""
    if _shape(logits) != _shape(label):
        raise ValueError(f"For 'SigmoidCrossEntropyWithLogits', logits and label must have "
                         f"one shape, got {_shape(logits)} and {_shape(label)}")
    _floats("SigmoidCrossEntropyWithLogits", logits, label)
    return _ops.add(_ops.sub(_ops.relu(logits), _ops.mul(logits, label)),
                    _ops.log1p(_ops.exp(_ops.neg(_ops.abs(logits)))))


def _softmax_cross_entropy_with_logits(logits, labels):
    """SoftmaxCrossEntropyWithLogits: (loss (N,), its gradient softmax(logits) - labels)."""
    if len(_shape(logits)) != 2 or _shape(logits) != _shape(labels):
        raise ValueError(f"For 'SoftmaxCrossEntropyWithLogits', logits and labels must be 2-D "
                         f"of one shape, got {_shape(logits)} and {_shape(labels)}")
    _floats("SoftmaxCrossEntropyWithLogits", logits, labels)
    loss = _ops.neg(_ops.reduce_sum(_ops.mul(labels, _ops.log_softmax(logits, -1)), -1))
    return loss, _ops.sub(_ops.softmax(logits, -1), labels)


def _l2_normalize(x, axis=0, epsilon=1e-4):
    """L2Normalize: x / sqrt(max(sum(x^2 over axis), epsilon))."""
    x = _t(x)
    axes = _dims(tuple(axis) if isinstance(axis, (tuple, list)) else axis, len(x.shape))
    square_sum = _ops.reduce_sum(_ops.mul(x, x), axes, True)
    return _ops.div(x, _ops.sqrt(_ops.maximum(square_sum, float(epsilon))))


def _l2_loss(input_x):
    """L2Loss: sum(x^2) / 2, a scalar of x's dtype."""
    return _ops.mul(_ops.reduce_sum(_ops.mul(input_x, input_x)), 0.5)


def _float_status(x):
    """FloatStatus: [1.] of x's dtype when x holds a NaN or an infinity, else [0.]."""
    x = _t(x)
    _floats("FloatStatus", x)
    bad = _ops.any(_ops.logical_not(_ops.isfinite(x)))
    return _ops.reshape(_ops.cast(bad, x.dtype), (1,))


def _pad(input_x, paddings):
    """Pad: constant zero padding by ((before, after), ...) per axis, from the first."""
    rank = len(_shape(input_x))
    if not isinstance(paddings, (tuple, list)) or len(paddings) != rank or _builtins.any(
            not isinstance(p, (tuple, list)) or len(p) != 2 for p in paddings):
        raise ValueError(f"For 'Pad', paddings must be {rank} (before, after) pairs, got "
                         f"{paddings!r}")
    flat = []
    for before, after in reversed(paddings):
        if before < 0 or after < 0:
            raise ValueError(f"For 'Pad', paddings must be non-negative, got {paddings!r}")
        flat += [before, after]
    return _ops.pad(input_x, flat)


def _range_prim(start, limit, delta, maxlen=1000000):
    """Range (the Primitive): ops.range, at most maxlen elements."""
    out = range(start, limit, delta)
    if out.shape[0] > maxlen:
        raise ValueError(f"For 'Range', the output has {out.shape[0]} elements, more than "
                         f"maxlen {maxlen}")
    return out


def _identity(x):
    """Identity: a copy of x (a reshape to its own shape: the value, not the Parameter)."""
    return _ops.reshape(x, _shape(x))


def _scalar_summary(name, value):
    """ScalarSummary: checks its inputs and records nothing (mscc has no summary writer; in
    MindSpore the op also does nothing without a SummaryRecord)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"For 'ScalarSummary', name must be a non-empty str, got {name!r}")
    if _shape(value) not in ((), (1,)):
        raise ValueError(f"For 'ScalarSummary', value must be a scalar, got shape "
                         f"{_shape(value)}")


# MindSpore's ops.max, ops.min and ops.range: mscc.ops has them as module attributes that are
# not globals of pyfront/ops.py (its module __getattr__), since its own code calls Python's
# max(), min() and range().
BUILTIN_NAMED = ("max", "min", "range")


def _guard(namespace):
    """Each public function a user-API boundary named after its op (as in pyfront/ops.py)."""
    for name in (*__all__, *BUILTIN_NAMED):
        fn = namespace[name]
        if not hasattr(fn, "__user_api__"):
            namespace[name] = _user_api("ms." + fn.__name__)(fn)


_guard(globals())
BUILTIN_NAMED = {name: globals()[name] for name in BUILTIN_NAMED}
