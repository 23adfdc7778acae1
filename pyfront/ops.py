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
from ..dialects.registry import plain_elementwise_ops as _plain_elementwise_ops
from .dispatch import call as _call
from .location import user_api as _user_api
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
    return _call("ms.matmul", (x, y), {"transpose_a": bool(transpose_a),
                                       "transpose_b": bool(transpose_b)})


def batch_matmul(x, y, transpose_a=False, transpose_b=False):
    return _call("ms.batch_matmul", (x, y), {"transpose_a": bool(transpose_a),
                                             "transpose_b": bool(transpose_b)})


@_user_api("ms.matmul", "x @ y")
def matmul_any(x, y):
    """`x @ y`: matmul for 2-D operands, batch_matmul when either has batch dims."""
    if not (hasattr(x, "shape") and hasattr(y, "shape")):
        return matmul(x, y)  # which says what is wrong with the other operand
    rx, ry = _rank(x), _rank(y)
    if rx < 2 or ry < 2:
        raise ValueError(f"'@' needs operands of rank >= 2, got shapes {tuple(x.shape)} and "
                         f"{tuple(y.shape)}")
    if rx == ry == 2:
        return matmul(x, y)
    if rx == 2:
        x = expand_dims(x, 0)
    if ry == 2:
        y = expand_dims(y, 0)
    return batch_matmul(x, y)


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
    return _call("ms.reshape", (x,), consts={"shape": _ints(shape)})


def transpose(x, perm):
    return _call("ms.transpose", (x,), consts={"perm": _ints(perm, "perm")})


def broadcast_to(x, shape):
    return _call("ms.broadcast_to", (x,), consts={"shape": _ints(shape)})


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
    return broadcast_to(Tensor(_np.array(fill_value, dtype.np)), _ints(size))


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
    return _call("ms.slice", (x,), consts={"begin": _ints(begin, "begin"),
                                           "size": _ints(size, "size")})


def strided_slice(x, begin, end, strides):
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
    u = _call("ms.random_uniform", (counter,), {"shape": _ints(shape), "seed": seed})
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
    """x[index] for ints, slices (positive steps), None and Ellipsis; a Tensor index gathers
    along axis 0."""
    if isinstance(index, list):
        index = Tensor(index)
    if isinstance(index, Tensor) or hasattr(index, "__array__"):
        return gather(x, index, 0)
    index = index if isinstance(index, tuple) else (index,)
    shape = x.shape
    n_real = _builtins.sum(i is not None and i is not Ellipsis for i in index)
    if n_real > len(shape):
        raise IndexError(f"too many indices ({n_real}) for a tensor of rank {len(shape)}")
    if _builtins.sum(i is Ellipsis for i in index) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    full = _builtins.slice(None)
    expanded = []
    for i in index:
        expanded += [full] * (len(shape) - n_real) if i is Ellipsis else [i]
    expanded += [full] * (len(shape) - _builtins.sum(i is not None for i in expanded))
    begin, end, strides, out_shape = [], [], [], []
    axis = 0
    for i in expanded:
        if i is None:
            out_shape.append(1)
            continue
        size = shape[axis]
        if isinstance(i, _builtins.slice):
            start, stop, step = i.indices(size)
            if step <= 0:
                raise IndexError("negative slice steps are not supported")
            stop = max(stop, start)
            begin.append(start), end.append(stop), strides.append(step)
            out_shape.append(len(range(start, stop, step)))
        else:
            k = _axis_index(i)
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for axis {axis} with size {size}")
            k %= size
            begin.append(k), end.append(k + 1), strides.append(1)
        axis += 1
    y = x
    if any(b != 0 or e != d or s != 1 for b, e, s, d in zip(begin, end, strides, shape)):
        y = strided_slice(x, begin, end, strides)
    if tuple(out_shape) != tuple(y.shape):
        y = reshape(y, out_shape)
    return y


def GradOperation(get_all=False, get_by_list=False, sens_param=False):  # noqa: N802
    """ms.ops.GradOperation (see mscc.pyfront.grad.GradOperation)."""
    from .grad import GradOperation as _GradOperation
    return _GradOperation(get_all, get_by_list, sens_param)


def _guard_public_functions(namespace):
    """Make each public function of this module a user-API boundary named after its op
    ('ms.<name>'), so a new op gets one without anyone remembering to add it."""
    for name, fn in list(namespace.items()):
        if (isinstance(fn, type(_guard_public_functions)) and not name.startswith("_")
                and fn.__module__ == __name__ and not hasattr(fn, "__user_api__")):
            namespace[name] = _user_api("ms." + fn.__name__)(fn)


_guard_public_functions(globals())
