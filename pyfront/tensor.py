"""ms.Tensor and ms.Parameter.

A Tensor is either concrete (it holds a C-contiguous numpy array) or traced (inside jit it
stands for an SSA value of the function being built). Operators dispatch to ms ops
(pyfront/ops.py), with MindSpore's implicit-cast semantics. This module does not import mlir.
"""
from __future__ import annotations

import operator

import numpy as np

from ..dialects import dtypes as dt
from ..dialects.dtypes import TensorSpec
from ..dialects.symdim import ANY
from .location import CONVERTED, as_user_error, located_error, mark_boundary, user_api


class Tensor:
    """A tensor of one of mscc's dtypes: `Tensor(data, dtype=None)`, or a placeholder
    `Tensor(shape=..., dtype=...)` describing an input (for `jit(input_signature=...)`)."""

    __array_priority__ = 100  # numpy defers `ndarray + Tensor` to Tensor.__radd__

    # _data: the host array (None for a placeholder, a traced Tensor, or a device Tensor not
    # yet copied back); _device: its copy in GPU memory (runtime/cuda.DeviceArray) or None.
    __slots__ = ("_data", "_spec", "_value", "_trace", "_device", "__weakref__")

    def __init__(self, data=None, dtype=None, shape=None):
        # A user-API boundary (location.py) written out, rather than the user_api wrapper or
        # a helper call: Tensor(ndarray) takes ~0.7 us, and those add 10-20% to it.
        try:
            self._value = self._trace = self._device = None
            if data is None:
                if shape is None or dtype is None:
                    raise TypeError("Tensor() needs data, or both shape and dtype for a "
                                    "placeholder")
                self._data = None
                self._spec = TensorSpec(_placeholder_shape(shape), dt.as_dtype(dtype))
                return
            if shape is not None:
                raise TypeError("Tensor(data, shape=...) is ambiguous: give data or a shape")
            if isinstance(data, Tensor):
                data = data.asnumpy()
            python_scalar_or_list = not isinstance(data, np.ndarray)
            try:
                arr = np.asarray(data)
            except (ValueError, TypeError) as e:
                raise TypeError(f"cannot make a Tensor from {type(data).__name__}: {e}") from None
            if dtype is not None:
                target = dt.as_dtype(dtype)
            elif python_scalar_or_list and arr.dtype == np.float64:
                target = dt.float32  # MindSpore: Python floats default to float32
            elif arr.dtype.kind in "US O":
                _check_python_ints(arr)
                raise TypeError(f"cannot make a Tensor from {type(data).__name__} of "
                                f"{arr.dtype}: the data must be numbers")
            else:
                target = dt.from_numpy(arr.dtype)
            try:
                self._data = np.asarray(arr, dtype=target.np, order="C")
            except OverflowError:
                _check_python_ints(arr)
                raise
            self._spec = TensorSpec(self._data.shape, target)
        except CONVERTED as e:
            better = as_user_error(e, "ms.Tensor")
            if better is e:
                raise
            raise better

    mark_boundary(__init__.__code__)

    # ------------------------------------------------------------- construction helpers
    @classmethod
    def _make(cls, spec: TensorSpec, data=None, device=None, value=None, trace=None):
        t = object.__new__(cls)
        t._data, t._spec, t._device, t._value, t._trace = data, spec, device, value, trace
        return t

    @classmethod
    def _wrap(cls, array: np.ndarray) -> "Tensor":
        """A Tensor owning `array` (already C-contiguous with a supported dtype)."""
        return cls._make(TensorSpec(array.shape, dt.from_numpy(array.dtype)), data=array)

    @classmethod
    def _wrap_spec(cls, array: np.ndarray, spec: TensorSpec) -> "Tensor":
        """_wrap when the spec is known: the jit cache-hit path, written out (no keyword
        call) because it runs on every call."""
        t = object.__new__(cls)
        t._data, t._spec, t._device, t._value, t._trace = array, spec, None, None, None
        return t

    @classmethod
    def _wrap_device(cls, array, spec: TensorSpec) -> "Tensor":
        """A Tensor that lives in GPU memory (copied to the host by asnumpy, once)."""
        return cls._make(spec, device=array)

    @classmethod
    def _traced(cls, value, spec: TensorSpec, trace) -> "Tensor":
        return cls._make(spec, value=value, trace=trace)

    # ------------------------------------------------------------- properties
    @property
    def shape(self) -> tuple:
        return self._spec.shape

    @property
    def dtype(self) -> dt.DType:
        return self._spec.dtype

    @property
    def ndim(self) -> int:
        return len(self._spec.shape)

    @property
    def size(self) -> int:
        return self._spec.size

    @property
    def is_placeholder(self) -> bool:
        return self._data is None and self._trace is None and self._device is None

    @property
    def device(self) -> str:
        """Where the value lives: "CPU", or "GPU:<ordinal>" for a Tensor kept in GPU memory
        between compiled calls."""
        return "CPU" if self._device is None else "GPU:0"

    @user_api("Tensor.__len__")
    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d Tensor")
        return self.shape[0]

    def asnumpy(self) -> np.ndarray:
        if self._trace is not None:
            raise RuntimeError(
                "asnumpy() on a traced Tensor: inside jit its value is only known when the "
                "compiled function runs; return it from the function instead")
        if self._data is None:
            if self._device is not None:
                self._data = self._device.asnumpy()  # one copy back; the device copy stays
                return self._data
            raise RuntimeError(f"asnumpy() on a placeholder Tensor {self._spec} holds no data")
        return self._data

    def _converted(self) -> np.ndarray:
        """The data for a conversion that Python or numpy make (np.asarray, int(), float(),
        an index): on a traced Tensor a TypeError, not asnumpy's RuntimeError. Those
        conversions read an op's argument that must be known when the function is traced (a
        shape, an axis, a count): a user's mistake, which the op's boundary names and
        locates, where a RuntimeError passed through as an internal error (API fuzzing,
        bench/fuzz_api.py: `ops.reshape(x, t)` under jit with t a Tensor argument)."""
        if self._trace is not None:
            raise TypeError("expected a value known when the function is traced (a Python "
                            "number, tuple or list), got a traced Tensor: inside jit its value "
                            "is only known when the compiled function runs")
        return self.asnumpy()

    def __array__(self, dtype=None, copy=None):
        a = self._converted()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self):
        if self._trace is not None:
            return f"Tensor(shape={list(self.shape)}, dtype={self.dtype.name}, traced)"
        if self._data is None and self._device is None:
            return f"Tensor(shape={list(self.shape)}, dtype={self.dtype.name}, placeholder)"
        return (f"Tensor(shape={list(self.shape)}, dtype={self.dtype.name}, "
                f"value={np.array2string(self.asnumpy(), separator=', ')})")

    __hash__ = object.__hash__

    @user_api("Tensor.__bool__")
    def __bool__(self):
        if self._trace is not None:
            raise located_error(TypeError,
                "Python `if`/`while`/`and`/`or` on a traced Tensor: its value is only known "
                "when the compiled function runs. Use ms.ops.cond(pred, true_fn, false_fn) "
                "for a branch, ms.ops.WhileLoop()/ForiLoop() for a loop, ms.ops.select(cond, "
                "x, y) for an elementwise choice, or pass the condition as a non-Tensor "
                "argument so that it is static.")
        return bool(self.asnumpy())

    # Conversions to Python numbers are called by Python itself from user code (float(x),
    # range(x)): each is its own boundary, so numpy's complaint gets the user's line.
    @user_api("Tensor.__float__")
    def __float__(self):
        return float(self._converted())

    @user_api("Tensor.__int__")
    def __int__(self):
        return int(self._converted())

    @user_api("Tensor.__index__")
    def __index__(self):
        if self.dtype.is_float:
            raise TypeError("only integer Tensors can be used as an index")
        return int(self._converted())

    @user_api("Tensor.item")
    def item(self):
        return self.asnumpy().item()

    @user_api("Tensor.tolist")
    def tolist(self):
        return self.asnumpy().tolist()

    # ------------------------------------------------------------- operators
    def __add__(self, other): return _ops().add(self, other)
    def __radd__(self, other): return _ops().add(other, self)
    def __sub__(self, other): return _ops().sub(self, other)
    def __rsub__(self, other): return _ops().sub(other, self)
    def __mul__(self, other): return _ops().mul(self, other)
    def __rmul__(self, other): return _ops().mul(other, self)
    def __truediv__(self, other): return _ops().div(self, other)
    def __rtruediv__(self, other): return _ops().div(other, self)
    def __floordiv__(self, other): return _ops().floor_divide(self, other)
    def __rfloordiv__(self, other): return _ops().floor_divide(other, self)
    def __mod__(self, other): return _ops().floor_mod(self, other)
    def __rmod__(self, other): return _ops().floor_mod(other, self)
    def __pow__(self, other): return _ops().pow(self, other)
    def __rpow__(self, other): return _ops().pow(other, self)
    def __matmul__(self, other): return _ops().matmul_any(self, other)
    def __rmatmul__(self, other): return _ops().matmul_any(other, self)
    def __neg__(self): return _ops().neg(self)
    def __pos__(self): return self
    def __abs__(self): return _ops().abs(self)
    def __invert__(self): return _ops().logical_not(self)
    def __and__(self, other): return _ops().logical_and(self, other)
    def __or__(self, other): return _ops().logical_or(self, other)
    def __lt__(self, other): return _ops().less(self, other)
    def __le__(self, other): return _ops().less_equal(self, other)
    def __gt__(self, other): return _ops().greater(self, other)
    def __ge__(self, other): return _ops().greater_equal(self, other)
    def __eq__(self, other): return _ops().equal(self, other)
    def __ne__(self, other): return _ops().not_equal(self, other)
    def __getitem__(self, index): return _ops().getitem(self, index)

    # ------------------------------------------------------------- methods (MindSpore names)
    # Each forwards to the functional op in pyfront/ops.py, with the Tensor method's own
    # MindSpore signature where it differs from the function's (sum's dtype, flatten's
    # start_dim=0, cumsum's axis=None, repeat's numpy semantics).
    def astype(self, dtype, copy=True): return _ops().cast(self, dtype)
    def float(self): return _ops().cast(self, dt.float32)
    def half(self): return _ops().cast(self, dt.float16)
    def bfloat16(self): return _ops().cast(self, dt.bfloat16)
    def double(self): return _ops().cast(self, dt.float64)
    def int(self): return _ops().cast(self, dt.int32)
    def long(self): return _ops().cast(self, dt.int64)
    def bool(self): return _ops().cast(self, dt.bool_)
    def reshape(self, *shape): return _ops().reshape(self, _varargs(shape))
    def view(self, *shape): return _ops().reshape(self, _varargs(shape))
    def transpose(self, *perm):
        return _ops().transpose(self, _varargs(perm) or tuple(reversed(range(self.ndim))))
    def permute(self, *axis): return _ops().transpose(self, _varargs(axis))
    def swapaxes(self, axis0, axis1): return _ops().swapaxes(self, axis0, axis1)
    @property
    def T(self): return _ops().transpose(self, tuple(reversed(range(self.ndim))))
    def sum(self, axis=None, dtype=None, keepdims=False, initial=None):
        out = _ops().sum(self, axis, keepdims, dtype=dtype)
        return out if initial is None else out + initial
    def mean(self, axis=None, keep_dims=False): return _ops().mean(self, axis, keep_dims)
    def prod(self, axis=None, keep_dims=False): return _ops().prod(self, axis, keep_dims)
    def max(self, axis=None, keepdims=False, *, initial=None, where=None, return_indices=False):
        return _extremum(self, "max", axis, keepdims, initial, where, return_indices)
    def min(self, axis=None, keepdims=False, *, initial=None, where=None, return_indices=False):
        return _extremum(self, "min", axis, keepdims, initial, where, return_indices)
    def all(self, axis=None, keep_dims=False): return _ops().all(self, axis, keep_dims)
    def any(self, axis=None, keep_dims=False): return _ops().any(self, axis, keep_dims)
    def argmax(self, axis=None, keepdims=False): return _ops().argmax(self, axis, keepdims)
    def argmin(self, axis=None, keepdims=False): return _ops().argmin(self, axis, keepdims)
    def exp(self): return _ops().exp(self)
    def log(self): return _ops().log(self)
    def sqrt(self): return _ops().sqrt(self)
    def abs(self): return _ops().abs(self)
    def square(self): return _ops().square(self)
    def pow(self, exponent): return _ops().pow(self, exponent)
    def clip(self, min=None, max=None): return _ops().clamp(self, min, max)  # noqa: A002
    def clamp(self, min=None, max=None): return _ops().clamp(self, min, max)  # noqa: A002
    def gather(self, input_indices, axis): return _ops().gather(self, input_indices, axis)
    def norm(self, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
        return _ops().norm(self, ord, dim, keepdim, dtype=dtype)
    def cumsum(self, axis=None, dtype=None):
        if axis is None:  # MindSpore's Tensor.cumsum: of the flattened tensor
            return _ops().cumsum(_ops().reshape(self, (-1,)), 0, dtype)
        return _ops().cumsum(self, axis, dtype)
    def flatten(self, order="C", *, start_dim=0, end_dim=-1):
        return _ops().flatten(self, order, start_dim=start_dim, end_dim=end_dim)
    def expand_dims(self, axis): return _ops().expand_dims(self, axis)
    def squeeze(self, axis=None): return _ops().squeeze(self, axis)
    def unsqueeze(self, dim): return _ops().expand_dims(self, dim)
    def tril(self, diagonal=0): return _ops().tril(self, diagonal)
    def triu(self, diagonal=0): return _ops().triu(self, diagonal)
    def masked_fill(self, mask, value): return _ops().masked_fill(self, mask, value)
    def expand_as(self, other): return _ops().broadcast_to(self, other.shape)
    def expand(self, *size): return _ops().broadcast_to(self, _varargs(size))
    def broadcast_to(self, shape): return _ops().broadcast_to(self, shape)
    def repeat(self, repeats, axis=None): return _ops().repeat_interleave(self, repeats, axis)
    def topk(self, k, dim=None, largest=True, sorted=True):  # noqa: A002
        return _ops().topk(self, k, dim, largest, sorted)
    def sort(self, axis=-1, descending=False): return _ops().sort(self, axis, descending)
    def argsort(self, axis=-1, descending=False): return _ops().argsort(self, axis, descending)
    def split(self, split_size_or_sections, axis=0):
        return _ops().split(self, split_size_or_sections, axis)
    def chunk(self, chunks, axis=0): return _ops().chunk(self, chunks, axis)
    def narrow(self, axis, start, length): return _ops().narrow(self, axis, start, length)
    # (the ops MindSpore's models use most: pyfront/ops_more.py, usage_rank.txt)
    def eq(self, other): return _ops().equal(self, other)
    def ne(self, other): return _ops().not_equal(self, other)
    def gt(self, other): return _ops().greater(self, other)
    def ge(self, other): return _ops().greater_equal(self, other)
    def lt(self, other): return _ops().less(self, other)
    def le(self, other): return _ops().less_equal(self, other)
    def reciprocal(self): return _ops().reciprocal(self)
    def softmax(self, axis=-1, dtype=None):
        x = self if dtype is None else _ops().cast(self, dtype)
        return _ops().softmax(x, axis)
    def tile(self, *reps): return _ops().tile(self, _varargs(reps))
    def fill(self, value):
        """A new Tensor of this shape and dtype filled with `value` (MindSpore's Tensor.fill
        returns a new Tensor, unlike numpy's)."""
        return _ops().broadcast_to(_ops()._like(value, self), self.shape)
    def select(self, condition, y): return _ops().select(condition, self, y)
    def bmm(self, mat2): return _ops().bmm(self, mat2)
    def amax(self, axis=None, keepdims=False, *, initial=None, where=None):
        return _ops().amax(self, axis, keepdims, initial=initial, where=where)
    def amin(self, axis=None, keepdims=False, *, initial=None, where=None):
        return _ops().amin(self, axis, keepdims, initial=initial, where=where)
    def flip(self, dims): return _ops().flip(self, dims)
    def gather_nd(self, indices): return _ops().gather_nd(self, indices)
    def gather_elements(self, dim, index): return _ops().gather_elements(self, dim, index)
    def floor_divide(self, value): return _ops().floor_divide(self, value)
    def reverse_sequence(self, seq_lengths, seq_dim=0, batch_dim=0):
        return _ops().reverse_sequence(self, seq_lengths, seq_dim, batch_dim)
    def scatter_add(self, *args, **kwargs):
        """scatter_add(dim, index, src): src added at the elements index selects along dim;
        scatter_add(indices, updates): ops.tensor_scatter_add (MindSpore's two forms)."""
        from .ops_more import _scatter_along
        if len(args) + len(kwargs) == 3:
            return _scatter_along(self, *args, **kwargs)
        return _ops().tensor_scatter_add(self, *args, **kwargs)
    def uniform(self, from_=0.0, to=1.0, *, generator=None):
        """A new Tensor of this shape and dtype, uniform in [from_, to)."""
        if generator is not None:
            raise ValueError("Tensor.uniform: mscc has no generator objects (use ms.set_seed)")
        u = _ops().uniform(self.shape)
        return _ops().cast(_ops().add(_ops().mul(u, float(to) - float(from_)), float(from_)),
                           self.dtype)
    def contiguous(self): return self
    def copy(self): return _ops().reshape(self, self.shape)
    def value(self): return self


def _varargs(values):
    """A shape given as f(2, 3) or f((2, 3)) (reshape, view, expand, permute)."""
    return values[0] if len(values) == 1 and isinstance(values[0], (tuple, list)) else values


def _extremum(x, which, axis, keepdims, initial, where, return_indices):
    """Tensor.max / Tensor.min: the reduction, or (values, int32 indices) with
    return_indices (MindSpore's Tensor.max)."""
    if initial is not None or where is not None:
        raise ValueError(f"Tensor.{which}: initial and where are not supported")
    ops = _ops()
    if return_indices:
        if axis is None:
            raise ValueError(f"Tensor.{which}: return_indices needs an int axis")
        values = (ops.reduce_max if which == "max" else ops.reduce_min)(x, axis, keepdims)
        return values, (ops.argmax if which == "max" else ops.argmin)(x, axis, keepdims)
    return (ops.reduce_max if which == "max" else ops.reduce_min)(x, axis, keepdims)


class Parameter(Tensor):
    """A named, trainable tensor. Functions compiled with jit read Parameters as implicit
    inputs and write them through ms.assign; the runtime stores the new values back."""

    __slots__ = ("name", "requires_grad")

    @user_api("ms.Parameter")
    def __init__(self, data, name=None, requires_grad=True, dtype=None):
        super().__init__(data.asnumpy() if isinstance(data, Tensor) else data, dtype=dtype)
        self.name = name or f"Parameter{id(self):x}"
        self.requires_grad = requires_grad

    @user_api("Parameter.set_data")
    def set_data(self, data):
        """Replace the value (same shape and dtype), as MindSpore's Parameter.set_data."""
        arr = np.array(data.asnumpy() if isinstance(data, Tensor) else data,
                       dtype=self.dtype.np, order="C")
        if arr.shape != self.shape:
            raise ValueError(f"Parameter '{self.name}' has shape {self.shape}; got {arr.shape}")
        self._data = arr
        self._device = None  # a device copy is stale now
        return self

    def __repr__(self):
        return f"Parameter(name={self.name!r}, shape={list(self.shape)}, dtype={self.dtype.name})"


def _placeholder_shape(shape) -> tuple:
    """A placeholder's shape: non-negative ints, and None or -1 for a dimension of any size
    (MindSpore's dynamic dimension, for input_signature and Cell.set_inputs; a float or a
    string is a mistake, not a size to truncate)."""
    try:
        dims = tuple(ANY if d is None or d is ANY else operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"shape must be a tuple of ints (None or -1: any size), got "
                        f"{shape!r}") from None
    dims = tuple(ANY if d is not ANY and d == -1 else d for d in dims)
    if any(d is not ANY and d < 0 for d in dims):
        raise ValueError(f"shape {tuple(shape)} has a negative dimension (only -1 or None "
                         "mark a dimension of any size)")
    return dims


def _check_python_ints(arr):
    """numpy keeps a Python int beyond 64 bits as an object: say so (a ValueError), rather
    than "cannot make a Tensor from list of object" or numpy's OverflowError."""
    for v in arr.flat:
        if type(v) is int and not -2**63 <= v < 2**63:
            raise ValueError(f"the Python int {v} is outside the range of int64")


def _ops():
    from . import ops
    return ops


# Ops that are no methods (MindSpore's Tensor has none of these names as methods either).
_NOT_METHODS = {"zeros_like", "ones_like", "stop_gradient", "select"}


def _elementwise_method(name):
    def method(self, *others):
        return getattr(_ops(), name)(self, *others)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"ops.{name}(self, ...)"
    return method


def _add_elementwise_methods():
    """Tensor.add, .sub, .mul, .tanh, .isnan, ... for the registry's plain elementwise ops
    (MindSpore's Tensor methods of the same names), where the class defines none itself."""
    from ..dialects.registry import plain_elementwise_ops
    for opdef in plain_elementwise_ops():
        name = opdef.mnemonic
        if name not in _NOT_METHODS and not hasattr(Tensor, name):
            setattr(Tensor, name, _elementwise_method(name))
    if not hasattr(Tensor, "matmul"):
        Tensor.matmul = lambda self, other: _ops().matmul(self, other)


_add_elementwise_methods()
