"""ms.ops: the functional ops, with MindSpore's argument conventions.

Each function applies one ms op (pyfront/dispatch.call): inside jit it is traced, outside it
runs eagerly. Arguments may be Tensors, numpy arrays or Python numbers (implicit cast applies).
Every public function here is a user-API boundary (location.user_api, applied at the end of
the module): a mistake is reported naming the op, at the user's line.
"""

import builtins as _builtins
import inspect as _inspect
import operator as _operator

import numpy as _np

from ..dialects import dtypes as _dt
from ..dialects import shape_rules as _rules
from ..dialects.symdim import Dim as _Dim
from ..dialects.symdim import DynamicDimError as _DynamicDimError
from ..dialects.symdim import has_dynamic as _has_dynamic
from ..dialects.ops.shape import OPEN as _OPEN  # (+-OPEN: a slice's open end)
from ..dialects.ops.shape import strided_bounds as _strided_bounds
from ..dialects.registry import plain_elementwise_ops as _plain_elementwise_ops
from .dispatch import call as _call
from .location import located_error as _located_error
from .location import user_api as _user_api
from .state import active_bodies as _active_bodies
from .tensor import Parameter, Tensor


def _plain_op(opdef):
    """`ms.ops.<mnemonic>(x[, y...])`: the op applied to tensors, numpy arrays or numbers."""
    kind = _inspect.Parameter.POSITIONAL_OR_KEYWORD
    signature = _inspect.Signature([_inspect.Parameter(o.name, kind)
                                    for o in opdef.data_operands])
    arity, name = len(signature.parameters), opdef.name

    def op(*args, **kwargs):
        if kwargs or len(args) != arity:
            args = signature.bind(*args, **kwargs).args
        return _call(name, args)
    op.__name__ = op.__qualname__ = opdef.mnemonic
    op.__doc__ = opdef.doc or f"elementwise {name}"
    op.__signature__ = signature
    return op


# One wrapper per elementwise op of the registry (ms.add -> ops.add, ...): defining the op in
# dialects/ops/ is all it takes to have it here.
globals().update({d.mnemonic: _plain_op(d) for d in _plain_elementwise_ops()})


def cast(x, dtype):
    if dtype is None:  # (numpy would read None as float64)
        raise TypeError("dtype must be an mscc dtype such as ms.float32, got None")
    return _call("ms.cast", (x,), {"dtype": _dt.as_dtype(dtype)})


def matmul(x, y, transpose_a=False, transpose_b=False):
    """The matrix product; operands that are not both 2-D follow numpy's rules (1-D vectors,
    broadcast batch axes), as MindSpore 2.x's ops.matmul; transposes only for 2-D ones."""
    if hasattr(x, "shape") and hasattr(y, "shape") and not _rank(x) == _rank(y) == 2:
        if transpose_a or transpose_b:
            raise ValueError(f"transpose_a/transpose_b need 2-D operands, got shapes "
                             f"{tuple(x.shape)} and {tuple(y.shape)}")
        return _numpy_matmul(x, y)
    return _call("ms.matmul", (x, y), {"transpose_a": bool(transpose_a),
                                       "transpose_b": bool(transpose_b)})


def batch_matmul(x, y, transpose_a=False, transpose_b=False):
    return _call("ms.batch_matmul", (x, y), {"transpose_a": bool(transpose_a),
                                             "transpose_b": bool(transpose_b)})


@_user_api("ms.matmul", "x @ y")
def matmul_any(x, y):
    """`x @ y`: numpy's matmul rules (matmul, batch_matmul, 1-D operands as vectors)."""
    if not (hasattr(x, "shape") and hasattr(y, "shape")):
        return matmul(x, y)  # which says what is wrong with the other operand
    return _numpy_matmul(x, y)


def _rank(x):
    return x.ndim if isinstance(x, Tensor) else len(getattr(x, "shape", ()))


def _int(v, what="axis"):
    """An int argument: ints, numpy integers and integer 0-d Tensors, not floats or strings
    (MindSpore rejects them where int() would silently truncate 1.5 to 1)."""
    try:
        return _operator.index(v)
    except TypeError:
        raise TypeError(f"{what} must be an int, got {type(v).__name__} {v!r}") from None


def _ints(v, what="shape"):
    """An int, or a tuple/list (or 1-D array) of ints, as a tuple (see _int)."""
    try:
        if isinstance(v, (tuple, list)):
            return tuple(map(_operator.index, v))
        if isinstance(v, str) or getattr(v, "ndim", 0) == 0:  # an int, or a 0-d array of one
            return (_operator.index(v),)
        return tuple(map(_operator.index, v))
    except TypeError:
        raise TypeError(f"{what} must be an int or a tuple of ints, got {type(v).__name__} "
                        f"{v!r}") from None


def _sizes(v, what="shape"):
    """A shape: ints, and dynamic sizes (symdim.Dim, from a traced Tensor's `shape`)."""
    if isinstance(v, (tuple, list)) and _builtins.any(isinstance(d, _Dim) for d in v):
        return tuple(d if isinstance(d, _Dim) else _int(d, what) for d in v)
    return _ints(v, what)


def _dynamic_like(shape):
    """A shape with dynamic sizes as (like, static shape, axes) for ms.broadcast_like: each
    dynamic size is a dimension of one traced argument, `like`."""
    from .trace import current_trace
    tr = current_trace()
    if tr is None:
        raise _DynamicDimError(f"a tensor of shape {shape} has sizes known only at run time")
    sources = [tr.size_source(d) if isinstance(d, _Dim) else None for d in shape]
    like = next(s[0] for s in sources if s is not None)
    if _builtins.any(s is not None and s[0] is not like for s in sources):
        raise _DynamicDimError(f"the dynamic sizes of {shape} come from different tensors")
    return (like, tuple(-1 if s is not None else d for s, d in zip(sources, shape)),
            tuple(s[1] if s is not None else -1 for s in sources))


def _dim_size(x, axis, dtype=None):
    """The number of elements of x along `axis` as a 0-d Tensor of `dtype` (float32 unless
    given): a count that is known only at run time when a size is dynamic."""
    dtype = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    return _call("ms.dim_size", (x,), {"axis": _axes(axis), "dtype": dtype})


def _axes(axis):
    """A reduction's axis: None or () for every axis, an int, or a tuple of ints."""
    return () if axis is None else _ints(axis, "axis")


def _reduction(name):
    def op(x, axis=(), keep_dims=False):
        return _call("ms." + name, (x,), {"keep_dims": bool(keep_dims)}, {"axis": _axes(axis)})
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"{name} over `axis` (int or tuple; () reduces every axis)"
    return op


reduce_sum = _reduction("reduce_sum")
reduce_mean = _reduction("reduce_mean")
reduce_max = _reduction("reduce_max")
reduce_min = _reduction("reduce_min")


def softmax(x, axis=-1):
    return _call("ms.softmax", (x,), {"axis": _int(axis)})


def log_softmax(x, axis=-1):
    return _call("ms.log_softmax", (x,), {"axis": _int(axis)})


def reshape(x, shape):
    shape = _sizes(shape)
    if _has_dynamic(shape):  # (x.shape[0], -1): the -1 is known; the dynamic size becomes -1
        from ..dialects.ops.shape import resolve_shape
        shape = _rules.shape_attr(resolve_shape(x.shape, shape))
    return _call("ms.reshape", (x,), consts={"shape": shape})


def transpose(x, perm):
    return _call("ms.transpose", (x,), consts={"perm": _ints(perm, "perm")})


def broadcast_to(x, shape):
    shape = _sizes(shape)
    if _has_dynamic(shape):
        off = len(shape) - len(x.shape)
        kept = tuple(-1 if isinstance(d, _Dim) and 0 <= i - off and x.shape[i - off] == d
                     else d for i, d in enumerate(shape))  # (-1: x's own size)
        if _has_dynamic(kept):
            like, static, axes = _dynamic_like(kept)
            return _call("ms.broadcast_like", (x, like), {"shape": static, "axes": axes})
        shape = kept
    return _call("ms.broadcast_to", (x,), consts={"shape": shape})


def expand_dims(x, axis):
    return _call("ms.expand_dims", (x,), consts={"axis": _int(axis)})


def squeeze(x, axis=()):
    return _call("ms.squeeze", (x,), {"axis": _axes(axis)})


def tile(x, multiples):
    return _call("ms.tile", (x,), consts={"multiples": _ints(multiples, "multiples")})


def _tensor_list(tensors):
    """The tensors of concat/stack: a tuple or list (any iterable but a Tensor), not empty."""
    if isinstance(tensors, (Tensor, str)) or not hasattr(tensors, "__iter__"):
        raise TypeError(f"tensors must be a tuple or list of Tensors, got "
                        f"{type(tensors).__name__}")
    tensors = list(tensors)
    if not tensors:
        raise ValueError("tensors must hold at least one Tensor, got an empty sequence")
    return tensors


def concat(tensors, axis=0):
    """Join a tuple/list of tensors along `axis` (a chain of binary ms.concat)."""
    tensors, axis = _tensor_list(tensors), _int(axis)
    out = tensors[0]
    for t in tensors[1:]:
        out = _call("ms.concat", (out, t), {"axis": axis})
    return out


# ------------------------------------------------------------ MindSpore 2.x functional names

def square(x):
    """x * x (MindSpore's ops.square)."""
    return mul(x, x)


def sum(x, dim=None, keepdim=False, *, dtype=None):  # noqa: A001  (MindSpore's name)
    """reduce_sum with MindSpore 2.x's ops.sum arguments (dim None: every axis)."""
    out = reduce_sum(x, _axes(dim), keepdim)
    return out if dtype is None else cast(out, dtype)


def mean(x, axis=None, keep_dims=False):
    """reduce_mean with MindSpore 2.x's ops.mean arguments (axis None: every axis)."""
    return reduce_mean(x, _axes(axis), keep_dims)


def zeros(size, dtype=None):
    """A tensor of zeros (float32 unless `dtype`), MindSpore's ops.zeros."""
    return full(size, 0, dtype=dtype)


def ones(shape, dtype=None):
    """A tensor of ones (float32 unless `dtype`), MindSpore's ops.ones."""
    return full(shape, 1, dtype=dtype)


def full(size, fill_value, *, dtype=None):
    """A tensor of `size` filled with `fill_value` (float32 unless `dtype`), MindSpore's
    ops.full: a broadcast scalar, so inside jit one constant, not one of the whole size."""
    dtype = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    size = _sizes(size, "size")
    if _has_dynamic(size):
        like, static, axes = _dynamic_like(size)
        return _call("ms.broadcast_like", (Tensor(_np.array(fill_value, dtype.np)), like),
                     {"shape": static, "axes": axes})
    return broadcast_to(Tensor(_np.array(fill_value, dtype.np)), size)


def cat(tensors, axis=0):
    """concat (MindSpore's ops.cat)."""
    return concat(tensors, axis)


def stack(tensors, axis=0):
    """Join tensors of one shape along a new axis (MindSpore's ops.stack)."""
    tensors, axis = _tensor_list(tensors), _int(axis)
    rank = len(tensors[0].shape) if hasattr(tensors[0], "shape") else 0
    axis = axis + rank + 1 if axis < 0 else axis
    return concat([expand_dims(t, axis) for t in tensors], axis)


def slice(x, begin, size):  # noqa: A001  (MindSpore's name)
    begin, size = _ints(begin, "begin"), _sizes(size, "size")
    if _has_dynamic(size):  # a dynamic size taken to the end: -1
        size = tuple(-1 if isinstance(s, _Dim) and s == x.shape[i] - begin[i] else s
                     for i, s in enumerate(size))
    return _call("ms.slice", (x,), consts={"begin": begin, "size": size})


def strided_slice(x, begin, end, strides):
    """x[begin:end:strides] per axis, Python's bounds (negative strides too); an end that is
    a dynamic axis' own size (x.shape[i]) runs to its end."""
    shape = _shape(x)
    end = tuple(_OPEN if isinstance(e, _Dim) and i < len(shape) and e == shape[i] else e
                for i, e in enumerate(end if isinstance(end, (tuple, list)) else (end,)))
    return _call("ms.strided_slice", (x,), consts={"begin": _ints(begin, "begin"),
                                                   "end": _ints(end, "end"),
                                                   "strides": _ints(strides, "strides")})


def argmax(x, axis=None, keep_dims=False):
    """int32 index of the first largest element along `axis` (None: of the flattened x)."""
    return _arg("ms.argmax", x, axis, keep_dims)


def argmin(x, axis=None, keep_dims=False):
    """int32 index of the first smallest element along `axis` (None: of the flattened x)."""
    return _arg("ms.argmin", x, axis, keep_dims)


def _arg(name, x, axis, keep_dims):
    if axis is None:
        flat = reshape(x, (-1,))
        index = _call(name, (flat,), {"axis": 0, "keep_dims": False})
        ndim = len(x.shape) if hasattr(x, "shape") else 0
        return reshape(index, (1,) * ndim) if keep_dims else index
    return _call(name, (x,), {"axis": _int(axis), "keep_dims": bool(keep_dims)})


class _RandomState:
    """The global random state of compiled code: a seed, and a counter Parameter that every
    draw reads and advances with ms.assign (so a jit function draws new numbers on each call,
    and a gradient that recomputes the forward sees the same ones)."""
    seed = 0
    _counter = None

    @classmethod
    def counter(cls):
        if cls._counter is None:
            cls._counter = Parameter(_np.zeros((), _np.int64), name="random_counter",
                                     requires_grad=False)
        return cls._counter

    @classmethod
    def reset(cls, seed):
        cls.seed = int(seed)
        cls.counter().set_data(_np.zeros((), _np.int64))


def uniform(shape, seed=None):
    """float32 numbers uniform in [0, 1) of `shape` (a counter-based generator)."""
    counter = _RandomState.counter()
    seed = _RandomState.seed if seed is None else _int(seed, "seed")
    shape = _sizes(shape)
    if _has_dynamic(shape):  # the same numbers, for a shape known at run time
        u = _call("ms.random_uniform_like", (counter, full(shape, 0)), {"seed": seed})
    else:
        u = _call("ms.random_uniform", (counter,), {"shape": shape, "seed": seed})
    assign(counter, counter + 1)
    return u


def dropout(x, p=0.5, training=True, seed=None):
    """Zero each element with probability p and scale the others by 1 / (1 - p) (MindSpore's
    ops.dropout); the identity when not training."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"p must be in [0, 1), got {p}")
    if not training or p == 0.0:
        return x
    keep = greater_equal(uniform(x.shape, seed), p)
    return select(keep, x * (1.0 / (1.0 - p)), zeros_like(x))


def batch_norm(input_x, running_mean, running_var, weight, bias, training=False, momentum=0.1,
               eps=1e-5):
    """MindSpore's ops.batch_norm over the channel axis 1 of an (N, C, ...) input. Training
    normalizes with the batch's mean and biased variance (one ms.batch_norm op: its gradient
    is MindSpore's BatchNormGrad) and writes the Parameters running_mean and running_var:
    new = (1 - momentum) * running + momentum * batch, the variance unbiased (as cuDNN
    does). Otherwise it normalizes with running_mean and running_var."""
    if not isinstance(training, bool):
        raise TypeError(f"For 'batch_norm', training must be a bool, got "
                        f"{type(training).__name__}")
    for name, v in (("momentum", momentum), ("eps", eps)):
        if not isinstance(v, float):
            raise TypeError(f"For 'batch_norm', {name} must be a float, got {type(v).__name__}")
    if not 0.0 <= momentum <= 1.0:
        raise ValueError(f"For 'batch_norm', momentum must be in [0, 1], got {momentum}")
    rank = len(input_x.shape)
    if rank < 2:
        raise ValueError(f"For 'batch_norm', input_x must be (N, C, ...), got shape "
                         f"{tuple(input_x.shape)}")
    channels = input_x.shape[1]
    per_channel = (1, channels) + (1,) * (rank - 2)
    if not training:
        centered = input_x - reshape(running_mean, per_channel)
        return (centered * rsqrt(reshape(running_var, per_channel) + eps)
                * reshape(weight, per_channel) + reshape(bias, per_channel))
    axes = (0,) + tuple(_builtins.range(2, rank))
    # (the statistics as ms.batch_norm's expansion builds them: ms-canonicalize merges them)
    mean = reduce_mean(input_x, axes, keep_dims=True)
    centered = input_x - mean
    var = reduce_mean(centered * centered, axes, keep_dims=True)
    batch_mean = cast(reshape(mean, (channels,)), running_mean.dtype)
    batch_var = cast(reshape(var, (channels,)), running_var.dtype)
    assign(running_mean, (1 - momentum) * running_mean + momentum * batch_mean)
    count = input_x.size // channels
    if isinstance(count, _Dim):  # the batch is dynamic: its count at run time
        count = _dim_size(input_x, axes, running_var.dtype)
        unbias = count / maximum(count - 1, 1)
    else:
        unbias = count / _builtins.max(count - 1, 1)
    assign(running_var, (1 - momentum) * running_var + momentum * batch_var * unbias)
    return _call("ms.batch_norm", (input_x, weight, bias), {"epsilon": float(eps)})


def gather(params, indices, axis=0):
    return _call("ms.gather", (params, indices), consts={"axis": _int(axis)})


def unsorted_segment_sum(input_x, segment_ids, num_segments):
    """out[s] = sum of input_x[k] over k with segment_ids[k] == s (ids out of range dropped)."""
    return _call("ms.unsorted_segment_sum", (input_x, segment_ids),
                 consts={"num_segments": _int(num_segments, "num_segments")})


def one_hot(indices, depth, on_value=1.0, off_value=0.0, axis=-1):
    return _call("ms.one_hot", (indices, on_value, off_value), {"axis": _int(axis)},
                 {"depth": _int(depth, "depth")})


def assign(variable, value):
    """Write `value` into the Parameter `variable` (implicit cast to its dtype) and return
    the new value. Under jit the runtime stores it when the compiled function returns."""
    from .trace import current_trace
    if not isinstance(variable, Parameter):
        raise TypeError(f"the 0th input must be a Parameter, got {type(variable).__name__}")
    if _active_bodies.items:
        api, role = _active_bodies[-1]
        raise _located_error(TypeError, f"For '{api}', {role} assigns the Parameter "
                             f"'{variable.name}': the bodies of loops and conditionals must "
                             "not have side effects (MindSpore forbids them); return the new "
                             "value and assign it after the loop")
    trace = current_trace()
    if trace is not None:
        from .location import user_location
        if not isinstance(value, Tensor):
            value = Tensor(value, dtype=variable.dtype)
        return trace.assign(variable, value, user_location())
    out = _call("ms.assign", (variable, value))
    variable._data, variable._device = out._data, out._device  # (the old copies are stale)
    return out


# Indexing mistakes raise plain IndexErrors: getitem's boundary names the op and adds the
# user's line.
_INDEX_KINDS = "integers, slices (`:`), ellipsis (`...`), None and integer Tensors"


def _axis_index(i):
    """An int index (an int, numpy integer or integer 0-d Tensor), else an IndexError."""
    try:
        return _operator.index(i)
    except TypeError:
        raise IndexError(f"only {_INDEX_KINDS} are valid indices, got {type(i).__name__} "
                           f"{i!r}") from None


@_user_api("ms.strided_slice", "x[...]")
def getitem(x, index):
    """x[index] for ints, slices (any step), None and Ellipsis; a Tensor index gathers along
    axis 0. Along a dynamic axis the bounds stay open (ms.strided_slice clamps them when the
    code runs) and an int index must find an element then (ms.squeeze checks it)."""
    if isinstance(index, list):
        index = Tensor(index)
    if isinstance(index, Tensor) or hasattr(index, "__array__"):
        return gather(x, index, 0)
    shape = x.shape
    entries = _expanded_index(index if isinstance(index, tuple) else (index,), len(shape))
    bounds = [_axis_bounds(i, d, axis)
              for axis, (i, d) in enumerate(zip((e for e in entries if e is not None), shape))]
    begin, end, strides = ([b[k] for b in bounds] for k in range(3))
    whole = _builtins.all((b, e, st) in ((0, d, 1), (0, _OPEN, 1))
                          for b, e, st, d in zip(begin, end, strides, shape))
    y = x if whole else strided_slice(x, begin, end, strides)
    if _has_dynamic(shape):
        return _drop_and_insert_axes(y, entries)
    out_shape, kept = [], iter(zip(bounds, shape))
    for i in entries:
        if i is None:
            out_shape.append(1)
            continue
        (b, e, st, is_slice), d = next(kept)
        if is_slice:
            out_shape += _strided_bounds((d,), [b], [e], [st])[1]
    if tuple(out_shape) != tuple(y.shape):
        y = reshape(y, out_shape)
    return y


def _expanded_index(index, rank):
    """The index with its Ellipsis (or the missing trailing axes) as full slices."""
    n_real = _builtins.sum(i is not None and i is not Ellipsis for i in index)
    if n_real > rank:
        raise IndexError(f"too many indices ({n_real}) for a tensor of rank {rank}")
    if _builtins.sum(i is Ellipsis for i in index) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    full = _builtins.slice(None)
    expanded = []
    for i in index:
        expanded += [full] * (rank - n_real) if i is Ellipsis else [i]
    return expanded + [full] * (rank - _builtins.sum(i is not None for i in expanded))


def _axis_bounds(i, size, axis):
    """(begin, end, stride, is_slice) of one entry of an index along an axis of `size` (an
    int takes one element, and the axis goes). A static size gets Python's bounds, a
    dynamic one open ends (+-OPEN) that ms.strided_slice clamps when the code runs."""
    if isinstance(i, _builtins.slice):
        step = 1 if i.step is None else _axis_index(i.step)
        if step == 0:
            raise ValueError("slice step cannot be zero")
        if isinstance(size, _Dim):
            start = (0 if step > 0 else -1) if i.start is None else _axis_index(i.start)
            stop = (_OPEN if step > 0 else -_OPEN) if i.stop is None else _axis_index(i.stop)
            return start, stop, step, True
        start, stop, step = i.indices(size)
        if step > 0:
            return start, max(stop, start), step, True
        # (-1 from indices() is "before the first element", not the last one)
        return (*(-size - 1 if v < 0 else v for v in (start, stop)), step, True)
    k = _axis_index(i)
    if isinstance(size, _Dim):
        return k, _OPEN if k == -1 else k + 1, 1, False
    if not -size <= k < size:
        raise IndexError(f"index {k} is out of bounds for axis {axis} with size {size}")
    k %= size
    return k, k + 1, 1, False


def _drop_and_insert_axes(y, entries):
    """y (the slice, of x's rank) without the axes an int indexed and with a new one for each
    None: squeeze and expand_dims, as a reshape cannot say where dynamic sizes go."""
    dropped = [a for a, i in enumerate(e for e in entries if e is not None)
               if not isinstance(i, _builtins.slice)]
    if dropped:
        y = squeeze(y, tuple(dropped))
    at = 0
    for i in entries:
        if i is None:
            y = expand_dims(y, at)
        if i is None or isinstance(i, _builtins.slice):
            at += 1
    return y


# ------------------------------------------------------------ more MindSpore 2.x functional ops
# Compositions of ms ops where one is exact: differentiable, fused and compiled for both
# targets like any other ms code. Shapes are static, so sizes and masks are Python values.

def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else ()


def _dim(axis, rank, what="axis"):
    """A normalized axis of a rank-`rank` tensor (ValueError when out of range, as
    MindSpore's)."""
    axis = _int(axis, what)
    if not -max(rank, 1) <= axis < max(rank, 1):
        raise ValueError(f"{what} {axis} is out of range [{-max(rank, 1)}, {max(rank, 1) - 1}]")
    return axis % max(rank, 1)


def _like(value, x):
    """A Python number or Tensor as a Tensor of x's dtype (masked_fill, where MindSpore casts
    the fill value to the input's dtype)."""
    dtype = x.dtype if isinstance(x, Tensor) else Tensor(x).dtype
    if isinstance(value, Tensor):
        return cast(value, dtype) if value.dtype is not dtype else value
    return Tensor(_np.array(value, dtype.np))


def where(condition, x, y):
    """x where condition (a bool tensor) holds, else y; all three broadcast (ops.where)."""
    return select(condition, x, y)


def clip_by_value(x, clip_value_min=None, clip_value_max=None):
    """min(max(x, clip_value_min), clip_value_max); either bound may be None (not both). A list
    or tuple of tensors clips each (MindSpore's ops.clip_by_value)."""
    if clip_value_min is None and clip_value_max is None:
        raise ValueError("at least one of clip_value_min and clip_value_max must be given")
    if isinstance(x, (list, tuple)):
        return type(x)(clip_by_value(t, clip_value_min, clip_value_max) for t in x)
    if clip_value_min is not None:
        x = maximum(x, clip_value_min)
    if clip_value_max is not None:
        x = minimum(x, clip_value_max)
    return x


def clamp(input, min=None, max=None):  # noqa: A002  (MindSpore's names)
    """clip_by_value with MindSpore 2.x's ops.clamp arguments."""
    return clip_by_value(input, min, max)


clip = clamp


def split(tensor, split_size_or_sections, axis=0):
    """A tuple of pieces along `axis`: of split_size_or_sections elements each (the last may
    be smaller), or of the sizes in a list/tuple, which must add up to the axis' size."""
    shape = _shape(tensor)
    axis = _dim(axis, len(shape))
    n = shape[axis]
    if isinstance(n, _Dim):
        raise _DynamicDimError(f"split_size_or_sections {split_size_or_sections!r} along the "
                               f"dynamic axis {axis}: how many pieces is known only at run "
                               "time (ops.chunk or ops.Split make equal parts)")
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = list(_ints(split_size_or_sections, "split_size_or_sections"))
        if _builtins.sum(sizes) != n or _builtins.any(s < 0 for s in sizes):
            raise ValueError(f"split_size_or_sections {tuple(sizes)} must be non-negative and "
                             f"add up to {n}, the size of axis {axis}")
    else:
        size = _int(split_size_or_sections, "split_size_or_sections")
        if size <= 0:
            raise ValueError(f"split_size_or_sections must be positive, got {size}")
        sizes = [size] * (n // size) + ([n % size] if n % size else [])
    return tuple(_along(tensor, axis, start, s) for start, s in zip(_offsets(sizes), sizes))


def _equal_parts(x, parts, axis):
    """x split into `parts` equal parts along `axis`: slices of a static axis; a dynamic one
    viewed as (parts, size / parts) (ms.reshape, which checks that it divides when the code
    runs), each part a slice of that."""
    shape = _shape(x)
    axis = _dim(axis, len(shape))
    if not isinstance(shape[axis], _Dim):  # (an empty axis too: empty parts)
        size = shape[axis] // parts
        return tuple(_along(x, axis, k * size, size) for k in range(parts))
    if _has_dynamic(shape[:axis] + shape[axis + 1:]):
        raise _DynamicDimError(f"a split of {shape} along axis {axis}: only that size may be "
                               "dynamic")
    grouped = reshape(x, shape[:axis] + (parts, -1) + shape[axis + 1:])
    begin, end = [0] * (len(shape) + 1), [_OPEN] * (len(shape) + 1)
    out = []
    for k in range(parts):
        begin[axis], end[axis] = k, k + 1
        out.append(squeeze(strided_slice(grouped, begin, end, [1] * len(begin)), (axis,)))
    return tuple(out)


def _offsets(sizes):
    out, at = [], 0
    for s in sizes:
        out.append(at)
        at += s
    return out


def _along(x, axis, start, length):
    """x[..., start:start + length, ...] along `axis`."""
    shape = _shape(x)
    begin = [0] * len(shape)
    size = list(shape)
    begin[axis], size[axis] = start, length
    return slice(x, begin, size)


def chunk(input, chunks, axis=0):  # noqa: A002
    """Up to `chunks` pieces of ceil(size / chunks) elements along `axis` (ops.chunk); along
    a dynamic axis `chunks` equal pieces, its size a multiple of `chunks` when it runs."""
    chunks = _int(chunks, "chunks")
    if chunks <= 0:
        raise ValueError(f"chunks must be positive, got {chunks}")
    shape = _shape(input)
    n = shape[_dim(axis, len(shape))]
    if isinstance(n, _Dim):
        return _equal_parts(input, chunks, axis)
    return split(input, max(1, -(-n // chunks)), axis)


def narrow(input, axis, start, length):  # noqa: A002
    """input[..., start:start + length, ...] along `axis` (ops.narrow); along a dynamic axis
    the end is checked when the code runs."""
    shape = _shape(input)
    axis = _dim(axis, len(shape))
    start, length = _int(start, "start"), _int(length, "length")
    n = shape[axis]
    if start < 0 or length < 0 or not isinstance(n, _Dim) and (start > n or start + length > n):
        raise ValueError(f"start {start} and length {length} are out of range for axis {axis} "
                         f"of size {n}")
    return _along(input, axis, start, length)


def unstack(input_x, axis=0):
    """The slices along `axis`, without it, as a tuple (ops.unstack)."""
    shape = _shape(input_x)
    if not shape:
        raise ValueError("unstack needs a tensor of rank 1 or more")
    axis = _dim(axis, len(shape))
    return tuple(squeeze(_along(input_x, axis, i, 1), axis) for i in range(shape[axis]))


def unsqueeze(input, dim):  # noqa: A002
    """expand_dims (ops.unsqueeze)."""
    return expand_dims(input, dim)


def permute(input, axis):  # noqa: A002
    """transpose (ops.permute)."""
    return transpose(input, axis)


def swapaxes(input, axis0, axis1):  # noqa: A002
    """input with two axes exchanged (ops.swapaxes)."""
    rank = len(_shape(input))
    a, b = _dim(axis0, rank, "axis0"), _dim(axis1, rank, "axis1")
    perm = list(range(rank))
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(input, perm) if a != b else input


def flatten(input, order="C", *, start_dim=1, end_dim=-1):  # noqa: A002
    """Merge the axes start_dim..end_dim into one (ops.flatten; note the default start_dim=1
    of MindSpore before 2.9). order 'F' flattens the reversed axes, as MindSpore does."""
    if not isinstance(order, str):
        raise TypeError(f"order must be a string, got {type(order).__name__}")
    if order not in ("C", "F"):
        raise ValueError(f"order must be 'C' or 'F', got {order!r}")
    shape = _shape(input)
    if len(shape) <= 1:
        return reshape(input, (-1,))
    if order == "F":
        input, shape = transpose(input, tuple(reversed(range(len(shape))))), shape[::-1]
    start, end = _dim(start_dim, len(shape), "start_dim"), _dim(end_dim, len(shape), "end_dim")
    if start > end:
        raise ValueError(f"start_dim {start_dim} comes after end_dim {end_dim}")
    if start == end:
        return input
    return reshape(input, shape[:start] + (-1,) + shape[end + 1:])


def cumsum(x, axis, dtype=None):
    """Running sum along `axis`, after casting x to `dtype` if given (ops.cumsum)."""
    if dtype is not None:
        x = cast(x, dtype)
    return _call("ms.cumsum", (x,), {"exclusive": False, "reverse": False},
                 {"axis": _int(axis)})


def reciprocal(x):
    """1 / x (integers divide in float32)."""
    return div(1, x)


def softplus(input, beta=1, threshold=20):  # noqa: A002
    """log(1 + exp(beta x)) / beta, and x where beta x > threshold (ops.softplus). exp reads
    min(beta x, threshold), so that the unused branch neither overflows nor sends a NaN
    into the gradient."""
    bx = mul(input, beta)
    soft = div(log1p(exp(minimum(bx, threshold))), beta)
    return select(greater(bx, threshold), input, soft)


def silu(x):
    """x * sigmoid(x)."""
    return mul(x, sigmoid(x))


def gelu(input_x, approximate="none"):
    """x/2 (1 + erf(x / sqrt 2)), or its tanh form with approximate='tanh' (ops.gelu)."""
    if approximate == "none":
        return mul(mul(input_x, 0.5), add(erf(mul(input_x, 0.7071067811865476)), 1.0))
    if approximate == "tanh":
        inner = mul(add(input_x, mul(mul(mul(input_x, input_x), input_x), 0.044715)),
                    0.7978845608028654)
        return mul(mul(input_x, 0.5), add(tanh(inner), 1.0))
    raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")


def elu(input_x, alpha=1.0):
    """x where x > 0, else alpha (exp(x) - 1) (ops.elu); expm1 reads min(x, 0) so that the
    unused branch cannot overflow."""
    return select(greater(input_x, 0), input_x, mul(expm1(minimum(input_x, 0)), alpha))


def leaky_relu(input, alpha=0.2):  # noqa: A002
    """x where x >= 0, else alpha x (ops.leaky_relu; MindSpore's default slope is 0.2)."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise TypeError(f"alpha must be an int or a float, got {type(alpha).__name__}")
    return select(greater_equal(input, 0), input, mul(input, alpha))


def relu6(x):
    """min(max(x, 0), 6)."""
    return clip_by_value(x, 0, 6)


def hardswish(x):
    """x * relu6(x + 3) / 6."""
    return mul(x, div(relu6(add(x, 3)), 6))


def mish(x):
    """x * tanh(softplus(x))."""
    return mul(x, tanh(softplus(x)))


def softsign(x):
    """x / (1 + |x|)."""
    return div(x, add(abs(x), 1))


def masked_fill(input_x, mask, value):
    """input_x with `value` (cast to its dtype) where the bool `mask` holds; mask broadcasts
    (ops.masked_fill)."""
    return select(mask, _like(value, input_x), input_x)


def pad(input_x, padding, mode="constant", value=None):
    """Constant padding (ops.pad): `padding` holds (before, after) pairs from the last axis
    backwards, as torch's; a negative amount crops. Other modes raise."""
    if mode != "constant":
        raise ValueError(f"pad: mode {mode!r} is not supported (only 'constant')")
    pads = _ints(padding, "padding")
    shape = _shape(input_x)
    if len(pads) % 2 or len(pads) // 2 > len(shape):
        raise ValueError(f"padding {pads} must hold an even number of entries, at most 2 per "
                         f"axis of the rank-{len(shape)} input")
    x = input_x
    fill = 0 if value is None else value
    for i in range(len(pads) // 2):
        axis = len(shape) - 1 - i
        for before, amount in ((True, pads[2 * i]), (False, pads[2 * i + 1])):
            x = _pad_side(x, axis, amount, before, fill)
    return x


def _pad_side(x, axis, amount, before, fill):
    n = _shape(x)[axis]
    if amount < 0:
        if -amount > n:
            raise ValueError(f"padding {amount} crops more than the {n} elements of axis {axis}")
        return _along(x, axis, -amount if before else 0, n + amount)
    if amount == 0:
        return x
    block = list(_shape(x))
    block[axis] = amount
    block = broadcast_to(_like(fill, x), block)
    return concat([block, x] if before else [x, block], axis)


def _triangle(input, diagonal, lower):  # noqa: A002
    shape = _shape(input)
    if len(shape) < 2:
        raise ValueError(f"needs a tensor of rank 2 or more, got shape {shape}")
    rows, cols = shape[-2:]
    k = _int(diagonal, "diagonal")
    keep = _np.tri(rows, cols, k, dtype=bool) if lower else ~_np.tri(rows, cols, k - 1,
                                                                       dtype=bool)
    return select(Tensor(keep), input, zeros_like(input))


def tril(input, diagonal=0):  # noqa: A002
    """The elements on and below the `diagonal`-th diagonal of the last two axes, zeros above."""
    return _triangle(input, diagonal, True)


def triu(input, diagonal=0):  # noqa: A002
    """The elements on and above the `diagonal`-th diagonal of the last two axes, zeros below."""
    return _triangle(input, diagonal, False)


def _numpy_matmul(x, y):
    """numpy's matmul rules: a 1-D operand is a row (x) or column (y) vector whose axis is
    dropped from the result; batch axes broadcast."""
    rx, ry = _rank(x), _rank(y)
    if rx == 0 or ry == 0:
        raise ValueError(f"matmul needs operands of rank >= 1, got shapes {_shape(x)} and "
                         f"{_shape(y)}")
    x2 = expand_dims(x, 0) if rx == 1 else x
    y2 = expand_dims(y, 1) if ry == 1 else y
    if _rank(x2) == _rank(y2) == 2:
        out = matmul(x2, y2)
    else:
        out = batch_matmul(expand_dims(x2, 0) if _rank(x2) == 2 else x2,
                           expand_dims(y2, 0) if _rank(y2) == 2 else y2)
    if ry == 1:
        out = squeeze(out, -1)
    if rx == 1:
        out = squeeze(out, -1 if ry == 1 else -2)
    return out


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002, N803
    """Vector norms (ord None/2, p, inf, -inf, 0) over an int `dim`, matrix norms ('fro', 1,
    -1, inf, -inf) over two; dim None: the 2-norm of every element, or with `ord` the vector
    (1-D) or matrix (2-D) norm of A (ops.norm). Norms that need singular values (2, -2 and
    'nuc' over two axes) raise."""
    if dtype is not None:
        A = cast(A, dtype)
    rank = len(_shape(A))
    if dim is None:
        if ord is not None and rank not in (1, 2):
            raise ValueError(f"norm: with dim None, ord {ord!r} needs a 1-D or 2-D input, got "
                             f"rank {rank}")
        axes = tuple(range(rank))
    else:
        axes = tuple(_dim(a, rank, "dim") for a in _ints(dim, "dim"))
    if len(set(axes)) != len(axes):
        raise ValueError(f"dim {dim} has duplicate entries")
    if ord is None:
        return _vector_norm(A, 2, axes, keepdim)
    if len(axes) == 2:
        return _matrix_norm(A, ord, axes, keepdim)
    if len(axes) != 1 or isinstance(ord, str):
        raise ValueError(f"norm: ord {ord!r} needs dim of one axis (a vector norm) or two "
                         f"('fro', 1, -1, inf, -inf), got {len(axes)} axes")
    return _vector_norm(A, ord, axes, keepdim)


def _vector_norm(x, p, axes, keep):
    a = abs(x)
    if p == float("inf"):
        return reduce_max(a, axes, keep)
    if p == float("-inf"):
        return reduce_min(a, axes, keep)
    if p == 0:
        return reduce_sum(cast(not_equal(x, 0), x.dtype), axes, keep)
    if p == 1:
        return reduce_sum(a, axes, keep)
    if p == 2:
        return sqrt(reduce_sum(mul(x, x), axes, keep))
    return pow(reduce_sum(pow(a, p), axes, keep), 1.0 / p)


def _matrix_norm(x, ord, axes, keep):  # noqa: A002
    rows, cols = axes
    if ord == "fro":
        return sqrt(reduce_sum(mul(x, x), axes, keep))
    # 1 / -1: the largest / smallest column sum of |x|; inf / -inf: of the row sums
    sums = {1: rows, -1: rows, float("inf"): cols, float("-inf"): cols}
    if ord not in sums:
        raise ValueError(f"norm: ord {ord!r} over two axes is not supported (2, -2 and 'nuc' "
                         "need singular values)")
    total = reduce_sum(abs(x), sums[ord], True)
    pick = reduce_max if ord in (1, float("inf")) else reduce_min
    return pick(total, axes, keep)


def logsumexp(input, axis, keep_dims=False):  # noqa: A002
    """log(sum(exp(x))) over `axis`, computed as m + log(sum(exp(x - m))) with m the maximum
    (a constant for the gradient: it cancels), 0 where m is infinite (ops.logsumexp)."""
    axes = _axes(axis)
    m = stop_gradient(reduce_max(input, axes, True))
    m = select(isfinite(m), m, zeros_like(m))
    out = log(reduce_sum(exp(sub(input, m)), axes, True))
    out = add(out, m)
    return out if keep_dims else squeeze(out, axes or ())


reduce_prod = _reduction("reduce_prod")


def prod(input, axis=None, keep_dims=False, dtype=None):  # noqa: A002
    """reduce_prod with ops.prod's arguments (axis None: every axis), after casting to
    `dtype` if given."""
    if dtype is not None:
        input = cast(input, dtype)
    return reduce_prod(input, _axes(axis), keep_dims)


def all(input, axis=None, keep_dims=False):  # noqa: A001, A002
    """Whether every element over `axis` is true (non-zero): the minimum of bools."""
    return reduce_min(cast(input, _dt.bool_), _axes(axis), keep_dims)


def any(input, axis=None, keep_dims=False):  # noqa: A001, A002
    """Whether some element over `axis` is true (non-zero): the maximum of bools."""
    return reduce_max(cast(input, _dt.bool_), _axes(axis), keep_dims)


reduce_all, reduce_any = all, any


def _number(v, what):
    """A Python number (or a concrete 0-d Tensor) for a static size or bound."""
    if isinstance(v, Tensor):
        v = _np.asarray(v).item()  # (a traced Tensor: __array__'s TypeError)
    if isinstance(v, bool) or not isinstance(v, (int, float, _np.integer, _np.floating)):
        raise TypeError(f"{what} must be a number, got {type(v).__name__}")
    return v


def arange(start=0, end=None, step=1, *, dtype=None):
    """[start, end) in steps of `step` (ops.arange): int64 when every bound is an int, else
    float32, unless `dtype`. A constant (its size is static)."""
    if end is None:
        start, end = 0, start
    start, end, step = (_number(v, n) for v, n in ((start, "start"), (end, "end"),
                                                   (step, "step")))
    if step == 0:
        raise ValueError("arange: step must not be 0")
    if (end - start) * step < 0:
        raise ValueError(f"arange: step {step} points away from end {end} (start {start})")
    if dtype is None:
        floats = _builtins.any(isinstance(v, (float, _np.floating)) for v in (start, end, step))
        dtype = _dt.float32 if floats else _dt.int64
    return Tensor(_np.arange(start, end, step).astype(_dt.as_dtype(dtype).np))


def linspace(start, end, steps):
    """`steps` evenly spaced float32 values from start to end inclusive (ops.linspace)."""
    steps = _int(steps, "steps")
    if steps <= 0:
        raise ValueError(f"linspace: steps must be positive, got {steps}")
    values = _np.linspace(_number(start, "start"), _number(end, "end"), steps)
    return Tensor(values.astype(_np.float32))


def eye(n, m=None, dtype=None):
    """The n x m identity (ops.eye; float32 unless `dtype`)."""
    n = _int(n, "n")
    m = n if m is None else _int(m, "m")
    if n < 0 or m < 0:
        raise ValueError(f"eye: n and m must be non-negative, got {n} and {m}")
    dtype = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    return Tensor(_np.eye(n, m, dtype=dtype.np))


def repeat_interleave(input, repeats, axis=None):  # noqa: A002
    """Each element (or slice along `axis`) repeated `repeats` times, or repeats[i] times for
    a list (ops.repeat_interleave; axis None repeats the flattened input). A gather of
    static indices, so the gradient sums the copies."""
    x = input
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    shape = _shape(x)
    axis = _dim(axis, len(shape))
    if isinstance(repeats, Tensor):
        repeats = _np.asarray(repeats).tolist()  # (a traced Tensor: __array__'s TypeError)
    reps = _ints(repeats, "repeats")
    if len(reps) not in (1, shape[axis]) or _builtins.any(r < 0 for r in reps):
        raise ValueError(f"repeats {reps} must be one count or one per element of axis {axis} "
                         f"(size {shape[axis]}), none negative")
    counts = reps if len(reps) > 1 else reps[0]
    index = _np.repeat(_np.arange(shape[axis], dtype=_np.int64), counts)
    return gather(x, Tensor(index), axis)


def topk(input, k, dim=None, largest=True, sorted=True):  # noqa: A002
    """(values, int32 indices) of the k largest (smallest) elements along `dim` (None: the
    last axis), ordered, ties by lower index first, NaN largest (ops.topk). k rounds of an
    extremum over the row, O(k n): for the small k of models, not a sort."""
    if not isinstance(sorted, bool) or not isinstance(largest, bool):
        raise TypeError("largest and sorted must be bools")
    shape = _shape(input)
    if not shape:
        raise ValueError("topk needs a tensor of rank 1 or more")
    axis = len(shape) - 1 if dim is None else _dim(dim, len(shape), "dim")
    k = _int(k, "k")
    if not 1 <= k <= shape[axis]:
        raise ValueError(f"k {k} is out of range for axis {axis} of size {shape[axis]}")
    x = input if isinstance(input, Tensor) else Tensor(input)
    # chosen as the last axis, so that one_hot's depth axis lines up with it
    x = swapaxes(x, axis, -1)
    taken = zeros_like(cast(x, _dt.bool_))
    values, indices = [], []
    for _ in range(k):
        index, hit = _next_extreme(x, taken, largest)
        values.append(reduce_sum(select(hit, x, zeros_like(x)), -1, True))
        indices.append(expand_dims(index, -1))
        taken = logical_or(taken, hit)
    return (swapaxes(concat(values, -1), axis, -1), swapaxes(concat(indices, -1), axis, -1))


def _next_extreme(x, taken, largest):
    """The first index not yet taken whose value is the extreme of those not taken (NaN
    counts as the largest; for the smallest, NaN and +inf tie, by index), and its one-hot
    mask."""
    lowest = _np.array(-_np.inf if x.dtype.is_float else _np.iinfo(x.dtype.np).min, x.dtype.np)
    highest = _np.array(_np.inf if x.dtype.is_float else _np.iinfo(x.dtype.np).max, x.dtype.np)
    if not largest and x.dtype.is_float:  # NaN is the largest: last for the smallest
        x = select(isnan(x), Tensor(highest), x)
    left = select(taken, Tensor(lowest if largest else highest), x)
    best = (reduce_max if largest else reduce_min)(left, -1, True)
    same = equal(left, best)
    if x.dtype.is_float:
        same = logical_or(same, logical_and(isnan(left), isnan(best)))
    index = argmax(cast(logical_and(same, logical_not(taken)), _dt.int32), -1)
    hit = cast(one_hot(index, x.shape[-1], 1, 0), _dt.bool_)
    return index, hit


def sort(input_x, axis=-1, descending=False):
    """(sorted values, int32 indices) along `axis` (ops.sort): stable (ties keep their
    order), NaN last ascending and first descending, as numpy. Each element's rank is counted
    by comparing it with every other element of its row, and the row is then gathered by
    rank: O(n^2) work and memory per row, no sorting network (fine for the rows of models,
    not for sorting millions of elements); differentiable in the values."""
    if not isinstance(descending, bool):
        raise TypeError(f"descending must be a bool, got {type(descending).__name__}")
    x = input_x if isinstance(input_x, Tensor) else Tensor(input_x)
    if not x.shape:
        raise ValueError("sort needs a tensor of rank 1 or more")
    axis = _dim(axis, len(x.shape), "axis")
    rows = swapaxes(x, axis, -1)
    rank = _ranks(rows, descending)                            # (..., n) int32
    n = rows.shape[-1]
    at = equal(expand_dims(rank, -2), _position_column(n))     # (..., k, i): rank_i == k
    values = reduce_sum(select(at, expand_dims(rows, -2), zeros_like(expand_dims(rows, -2))), -1)
    positions = _np.broadcast_to(_np.arange(n, dtype=_np.int32), (n, n))
    indices = reduce_sum(select(at, Tensor(positions), Tensor(_np.zeros((n, n), _np.int32))), -1)
    return swapaxes(values, axis, -1), swapaxes(indices, axis, -1)


def argsort(input, axis=-1, descending=False):  # noqa: A002  (MindSpore's name)
    """The int32 indices that sort `input` along `axis` (ops.argsort; see ops.sort)."""
    return sort(input, axis, descending)[1]


def _position_column(n):
    return Tensor(_np.arange(n, dtype=_np.int32).reshape(n, 1))


def _ranks(rows, descending):
    """Each element's position in its row once sorted (last axis): the elements that come
    before it, plus the equal ones at lower indices (a stable sort)."""
    n = rows.shape[-1]
    mine, other = expand_dims(rows, -1), expand_dims(rows, -2)  # (..., i, 1), (..., 1, j)
    before = _comes_before(other, mine, descending)               # element j sorts before i
    if rows.dtype.is_float:
        ties = logical_or(equal(other, mine), logical_and(isnan(other), isnan(mine)))
    else:
        ties = equal(other, mine)
    lower = Tensor(_np.tril(_np.ones((n, n), bool), -1))         # j < i
    counted = logical_or(before, logical_and(ties, lower))
    return reduce_sum(cast(counted, _dt.int32), -1)


def _comes_before(a, b, descending):
    """Whether a sorts strictly before b, NaN as the largest value (numpy's order)."""
    first = greater(a, b) if descending else less(a, b)
    if not a.dtype.is_float:
        return first
    nan_a, nan_b = isnan(a), isnan(b)
    if descending:  # NaN first: before every number
        return logical_or(first, logical_and(nan_a, logical_not(nan_b)))
    return logical_or(first, logical_and(nan_b, logical_not(nan_a)))


def vmap(fn, in_axes=0, out_axes=0):
    """`fn` mapped over an axis of its inputs (MindSpore's ops.vmap, JAX's vmap): in_axes is
    an int or None (every argument), or one per positional argument (None: not mapped, the
    same value for every element; nested tuples/lists for nested arguments); out_axes the
    same for the outputs. `fn` is traced once on one element and each op is rewritten by its
    batching rule (pyfront/vmap.py), so the program does not grow with the mapped size."""
    from .vmap import vmap as _vmap
    return _vmap(fn, in_axes, out_axes)


def GradOperation(get_all=False, get_by_list=False, sens_param=False):  # noqa: N802
    """ms.ops.GradOperation (see mscc.pyfront.grad.GradOperation)."""
    from .grad import GradOperation as _GradOperation
    return _GradOperation(get_all, get_by_list, sens_param)


from .ops_conv import conv1d, conv2d, conv3d, conv_transpose2d  # noqa: E402,F401
from .ops_pool import (adaptive_avg_pool1d, adaptive_avg_pool2d,  # noqa: E402,F401
                       adaptive_avg_pool3d, adaptive_max_pool1d, adaptive_max_pool2d,
                       adaptive_max_pool3d, avg_pool1d, avg_pool2d, avg_pool3d, max_pool2d,
                       max_pool3d)
from .ops_more import *  # noqa: E402,F401,F403  (pyfront/ops_more.py: its __all__)
from .ops_more import BUILTIN_NAMED as _BUILTIN_NAMED  # noqa: E402  (ops.max, .min, .range)
from .ops_last import *  # noqa: E402,F401,F403  (pyfront/ops_last.py: its __all__)


def __getattr__(name):
    """ops.max, ops.min and ops.range (pyfront/ops_more.py): attributes, not globals, so
    that this module's own max(), min() and range() stay Python's."""
    try:
        return _BUILTIN_NAMED[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__():
    return sorted({*globals(), *_BUILTIN_NAMED})


from .control_flow import cond as _cond  # noqa: E402  (loops are Primitives: ops.ForiLoop())

cond = _user_api("cond")(_cond)


def _guard_public_functions(namespace):
    """Make each public function of this module a user-API boundary named after its op
    ('ms.<name>'), so a new op gets one without anyone remembering to add it."""
    for name, fn in list(namespace.items()):
        if (isinstance(fn, type(_guard_public_functions)) and not name.startswith("_")
                and fn.__module__ == __name__ and not hasattr(fn, "__user_api__")):
            namespace[name] = _user_api("ms." + fn.__name__)(fn)


_guard_public_functions(globals())
