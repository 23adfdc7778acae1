"""mscc.common (MindSpore's mindspore.common): its submodules dtype, initializer, api,
parameter, and the names MindSpore exports from it."""
from ...dialects.dtypes import (bfloat16, bool_, float16, float32, float64, int8, int16, int32,
                                int64, uint8, uint16, uint32, uint64)
from ..jit import jit
from ..nn.init import set_seed
from ..tensor import Parameter, Tensor
from . import api, dtype, initializer, parameter
from .api import ms_function
from .parameter import ParameterTuple


def tensor(input_data=None, dtype=None, shape=None, init=None, const_arg=False):
    """MindSpore 2.x's function form of Tensor: Tensor(input_data, dtype), a placeholder
    Tensor(shape=..., dtype=...) without data, or `init` (an initializer name or object) of
    `shape` and `dtype`."""
    if const_arg:
        raise TypeError("tensor(const_arg=True) is not supported by mscc: pass the value as a "
                        "Python number or tuple to make it static under jit")
    if init is not None:
        if input_data is not None or shape is None:
            raise TypeError("tensor(init=...) needs a shape and no input_data")
        from ..nn.init import initializer as _initializer
        value = _initializer(init, shape, float32 if dtype is None else dtype)
        return Tensor(value.asnumpy() if isinstance(value, Tensor) else value,
                      dtype=float32 if dtype is None else dtype)
    return Tensor(input_data, dtype=dtype, shape=shape)


_MUTABLE_LEAVES = (Tensor, bool, int, float)


def mutable(input_data, dynamic_len=False):
    """MindSpore's hint that a graph input varies: returns `input_data` itself. mscc treats
    Tensors as variable inputs always and specializes Python numbers and the lengths of
    tuples/lists per value (one compiled executable each, cached), so the hint changes no
    result; it is checked like MindSpore's (Tensors, numbers, and tuples/lists/dicts of them)."""
    def check(x):
        if isinstance(x, (tuple, list)):
            return all(check(v) for v in x)
        if isinstance(x, dict):
            return all(check(v) for v in x.values())
        return isinstance(x, _MUTABLE_LEAVES)
    if not check(input_data):
        raise TypeError(f"For 'mutable', the 'input_data' should be one of (int, float, bool, "
                        f"Tensor, tuple, list, dict), but got {type(input_data).__name__}")
    if dynamic_len and not isinstance(input_data, (tuple, list)):
        raise TypeError("For 'mutable', dynamic_len=True needs a tuple or list")
    return input_data

__all__ = ["dtype", "initializer", "api", "parameter", "Tensor", "Parameter", "ParameterTuple",
           "tensor", "mutable",
           "jit", "ms_function", "set_seed", "bool_", "uint8", "int8", "int16", "int32",
           "int64", "uint16", "uint32", "uint64", "float16", "bfloat16", "float32", "float64"]
