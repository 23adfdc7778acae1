"""mscc.common.dtype (MindSpore's `from mindspore.common import dtype as mstype`).

The element types mscc has, under MindSpore's names and aliases (half, single, double, ...);
MindSpore's generic types (number, int_, uint, float_) are categories that answer
`dtype in mstype.float_`. The complex types are absent: mscc's tensors have none (an
AttributeError, not a type that would fail later). bfloat16 values are numpy arrays of
ml_dtypes.bfloat16 (numpy has no bfloat16 of its own).
"""
import numpy as _np

from ...dialects import dtypes as _dt
from ...dialects.dtypes import (DType, bfloat16, bool_, float16, float32, float64, int8, int16,
                                int32, int64, uint8, uint16, uint32, uint64)

Type = DType
byte, short, intc, intp = int8, int16, int32, int64
ubyte, ushort, uintc, uintp = uint8, uint16, uint32, uint64
half, single, double = float16, float32, float64


class _Category:
    """A generic MindSpore type (Number, Int, UInt, Float): which dtypes belong to it."""

    def __init__(self, name, kinds):
        self.name, self._kinds = name, kinds

    def __contains__(self, dtype):
        return isinstance(dtype, DType) and dtype.kind in self._kinds

    def __repr__(self):
        return self.name


number = _Category("Number", ("bool", "int", "uint", "float"))  # (MindSpore's Bool is a Number)
int_ = _Category("Int", ("int",))
uint = _Category("UInt", ("uint",))
float_ = _Category("Float", ("float",))

int_type = (int8, int16, int32, int64)
uint_type = (uint8, uint16, uint32, uint64)
float_type = (float16, float32, float64, bfloat16)
number_type = int_type + uint_type + float_type
signed_type = int_type + float_type
all_types = (bool_, int8, uint8, int16, int32, int64, uint16, uint32, uint64, float16, float32,
             float64, bfloat16)

_PYTYPES = {bool: bool_, int: int64, float: float64}


def pytype_to_dtype(obj):
    """The dtype of a Python or numpy type (int -> int64, float -> float64, as MindSpore)."""
    if isinstance(obj, DType):
        return obj
    if isinstance(obj, _np.dtype):
        obj = obj.type
    if not isinstance(obj, type):
        raise TypeError(f"For 'pytype_to_dtype', the argument 'obj' must be a python type "
                        f"object, such as int, float, str, etc. But got type {type(obj)}.")
    if obj in _PYTYPES:
        return _PYTYPES[obj]
    try:
        return _dt.from_numpy(_np.dtype(obj))
    except (TypeError, KeyError):
        raise NotImplementedError(f"The python type {obj} cannot be converted to MindSpore "
                                  f"type.") from None


def dtype_to_nptype(type_):
    """The numpy type of a dtype (mstype.float32 -> np.float32)."""
    return _dt.as_dtype(type_).np.type


def dtype_to_pytype(type_):
    """The Python type of a dtype or generic type (float32, float_ -> float)."""
    if type_ is int_ or type_ is uint:
        return int
    if type_ is float_:
        return float
    return {"bool": bool, "int": int, "uint": int, "float": float}[_dt.as_dtype(type_).kind]


__all__ = ["Type", "bool_", "int8", "byte", "int16", "short", "int32", "intc", "int64", "intp",
           "uint8", "ubyte", "uint16", "ushort", "uint32", "uintc", "uint64", "uintp",
           "bfloat16", "float16", "half", "float32", "single", "float64", "double",
           "number", "int_", "uint", "float_", "int_type", "uint_type", "float_type",
           "number_type", "signed_type", "all_types", "pytype_to_dtype", "dtype_to_nptype",
           "dtype_to_pytype"]
