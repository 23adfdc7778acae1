"""Element types of ms tensors and MindSpore's type-promotion order.

Imports neither mlir nor the rest of the compiler: the runtime and `import mscc` use it too.
"""
from __future__ import annotations

import importlib.util
import sys
from typing import NamedTuple

import numpy as np

# numpy has no bfloat16; ml_dtypes (a dependency) registers one with numpy. Importing it takes
# ~0.5 s here (most of `import mscc`), so it is imported when bfloat16's numpy dtype is first
# needed. Absent on a GPU host with only numpy: bfloat16 is then not a dtype at all.
_HAS_ML_DTYPES = importlib.util.find_spec("ml_dtypes") is not None


def _bfloat16_np():
    import ml_dtypes
    return ml_dtypes.bfloat16


class DTypeError(TypeError):
    """An element-type rule failed (also: dtypes MindSpore does not promote together); the
    message does not name the op yet."""


class DType:
    """One element type. `priority` is MindSpore's implicit-cast order."""

    __slots__ = ("name", "_np", "_np_factory", "kind", "bits", "priority", "ir_name", "short")

    def __init__(self, name, np_dtype, kind, bits, priority, ir_name, short):
        """`np_dtype`: a numpy dtype, a function returning one (imported when first used),
        or None (not representable here)."""
        self.name = name
        self._np_factory = np_dtype if callable(np_dtype) and not isinstance(np_dtype, type) \
            else None
        self._np = None if self._np_factory or np_dtype is None else np.dtype(np_dtype)
        self.kind = kind  # "bool" | "uint" | "int" | "float"
        self.bits = bits
        self.priority = priority
        self.ir_name = ir_name  # spelling of the element type in ms IR
        self.short = short  # spelling in CLI input signatures, e.g. f32[8,16]

    @property
    def np(self):
        if self._np is None and self._np_factory is not None:
            self._np = np.dtype(self._np_factory())
        return self._np

    @property
    def available(self):
        """Whether numpy can represent it here (without importing anything to find out)."""
        return self._np is not None or self._np_factory is not None

    @property
    def is_float(self):
        return self.kind == "float"

    @property
    def is_int(self):
        return self.kind in ("int", "uint")

    @property
    def is_bool(self):
        return self.kind == "bool"

    @property
    def itemsize(self):
        return self.np.itemsize

    def __repr__(self):
        return f"mscc.{self.name}"

    def __reduce__(self):
        return (by_name, (self.name,))


# `priority` orders MindSpore's promotion; the pairs it does not decide are in _join.
bool_ = DType("bool", np.bool_, "bool", 1, 0, "i1", "bool")
uint8 = DType("uint8", np.uint8, "uint", 8, 1, "ui8", "u8")
int8 = DType("int8", np.int8, "int", 8, 2, "i8", "i8")
int16 = DType("int16", np.int16, "int", 16, 3, "i16", "i16")
int32 = DType("int32", np.int32, "int", 32, 4, "i32", "i32")
int64 = DType("int64", np.int64, "int", 64, 5, "i64", "i64")
uint16 = DType("uint16", np.uint16, "uint", 16, 6, "ui16", "u16")
uint32 = DType("uint32", np.uint32, "uint", 32, 7, "ui32", "u32")
uint64 = DType("uint64", np.uint64, "uint", 64, 8, "ui64", "u64")
float16 = DType("float16", np.float16, "float", 16, 9, "f16", "f16")
bfloat16 = DType("bfloat16", _bfloat16_np if _HAS_ML_DTYPES else None, "float", 16, 10, "bf16",
                 "bf16")
float32 = DType("float32", np.float32, "float", 32, 11, "f32", "f32")
float64 = DType("float64", np.float64, "float", 64, 12, "f64", "f64")

# The tables hold only dtypes numpy can represent here (bfloat16 needs ml_dtypes).
_avail = lambda *ds: tuple(d for d in ds if d.available)  # noqa: E731
ALL = _avail(bool_, uint8, int8, int16, int32, int64, uint16, uint32, uint64, float16,
             bfloat16, float32, float64)
FLOATS = _avail(float16, bfloat16, float32, float64)
INTS = (uint8, int8, int16, int32, int64, uint16, uint32, uint64)
NUMBERS = INTS + FLOATS
# Unsigned types MindSpore promotes only with bool and themselves (see _join).
WIDE_UNSIGNED = (uint16, uint32, uint64)
# Float types whose arithmetic is done in float32 (reductions, matmul accumulators).
HALF_FLOATS = _avail(float16, bfloat16)

_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({d.short: d for d in ALL})
_BY_NAME["bool_"] = bool_
_BY_IR = {d.ir_name: d for d in ALL}
_BY_NP = {d.np: d for d in ALL if d._np_factory is None}  # bfloat16: see from_numpy


def by_name(name: str) -> DType:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise TypeError(f"unknown dtype {name!r}; expected one of "
                        f"{', '.join(d.name for d in ALL)}") from None


def from_ir_name(name: str) -> DType | None:
    return _BY_IR.get(name)


def from_numpy(np_dtype) -> DType:
    d = _BY_NP.get(np.dtype(np_dtype))
    if d is None and "ml_dtypes" in sys.modules and bfloat16.available:
        # a bfloat16 array exists only once ml_dtypes is imported: resolve it then
        _BY_NP[bfloat16.np] = bfloat16
        d = _BY_NP.get(np.dtype(np_dtype))
    if d is None:
        raise TypeError(f"numpy dtype {np.dtype(np_dtype)} has no mscc equivalent; "
                        f"supported: {', '.join(d.name for d in ALL)}")
    return d


def as_dtype(x) -> DType:
    """Accepts a DType, its name, or anything numpy understands as a dtype."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str):
        return by_name(x)
    return from_numpy(x)


# The most bytes a tensor may hold. MLIR computes sizes, strides and offsets in int64, and an
# overflow there is an assertion (the process aborts), not a diagnostic: shapes are checked
# against this before they become MLIR types (dialects/ir.tensor_type, the verifier).
MAX_TENSOR_BYTES = 2 ** 63 - 1


from .symdim import Dim  # noqa: E402


def shape_problem(shape, itemsize: int) -> str | None:
    """Why a shape of `itemsize`-byte elements cannot be a tensor (negative dimensions, or
    more than MAX_TENSOR_BYTES bytes), else None. Dynamic dimensions (None or a
    symdim.Dim) count as 1."""
    n = itemsize
    for d in shape:
        if d is None or isinstance(d, Dim):
            continue
        if d < 0:
            return f"shape {tuple(shape)} has a negative dimension"
        n *= d
    if n > MAX_TENSOR_BYTES:
        return (f"shape {tuple(shape)} of {itemsize}-byte elements is {n} bytes, more than "
                "sizes in int64 can hold (2**63-1)")
    return None


def check_shape(shape, dtype: DType):
    """Raise ValueError if `shape` of `dtype` cannot be a tensor (see shape_problem)."""
    problem = shape_problem(shape, dtype.itemsize)
    if problem:
        raise ValueError(problem)


class TensorSpec(NamedTuple):
    """Shape and element type of a ranked tensor: what shape rules take and return."""

    shape: tuple
    dtype: DType

    @property
    def rank(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __str__(self):
        return f"{self.dtype.short}[{','.join(map(str, self.shape))}]"


def _join(a: DType, b: DType) -> DType:
    """MindSpore's tensor-with-tensor promotion of two dtypes (its tensor_tensor_convert_map,
    mindspore/ccsrc ConvertTypeForTensorsOrScalars): bool yields to anything; uint16/32/64
    meet nothing else (TypeError, as in MindSpore); float16 with bfloat16 is float32 (neither
    holds the other); uint8 with int8 is int16; otherwise the higher priority wins.
    DTypeError (a TypeError) for a pair MindSpore does not promote."""
    if a is b or b.is_bool:
        return a
    if a.is_bool:
        return b
    if a in WIDE_UNSIGNED or b in WIDE_UNSIGNED:
        raise DTypeError(f"Type implicit conversion between {a.name} and {b.name} is not "
                        "supported (MindSpore promotes uint16/32/64 only with bool and "
                        "themselves); cast one of them explicitly")
    pair = {a, b}
    if pair == {float16, bfloat16}:
        return float32
    if pair == {uint8, int8}:  # int8 outranks uint8 but cannot hold it
        return int16
    return a if a.priority > b.priority else b


def promote(tensor_dtypes, scalar_kinds=()) -> DType:
    """MindSpore's destination dtype for one signature group.

    `tensor_dtypes` are the dtypes of the group's tensor inputs; `scalar_kinds` holds "bool",
    "int" or "float" for each Python scalar in the group. Tensors meet pairwise (_join).
    Scalars never raise a tensor's dtype, except that a bool group becomes int64 with a Python
    int and float32 with a Python float, and any non-float group becomes float32 with a Python
    float. A Python int or float with a uint16/32/64 tensor is a DTypeError (MindSpore's
    scalar_tensor_convert_map has no such pair); a Python bool takes the tensor's dtype.
    """
    tensor_dtypes = list(tensor_dtypes)
    if not tensor_dtypes:
        return (float32 if "float" in scalar_kinds else int64 if "int" in scalar_kinds
                else bool_)
    dest = tensor_dtypes[0]
    for d in tensor_dtypes[1:]:
        dest = _join(dest, d)
    numeric = [k for k in scalar_kinds if k != "bool"]
    if numeric and dest in WIDE_UNSIGNED:
        scalar = "float" if "float" in numeric else "int"
        raise DTypeError(f"Type implicit conversion between Tensor[{dest.name}] and a Python "
                        f"{scalar} is not supported (MindSpore); use a Tensor of dtype "
                        f"{dest.name} or cast explicitly")
    if "float" in scalar_kinds and not dest.is_float:
        return float32
    if "int" in scalar_kinds and dest.is_bool:
        return int64
    return dest
