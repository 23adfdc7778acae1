"""mscc: an MLIR-based multi-level compiler for numerical Python, in the style of MindSpore.

    import mscc as ms

Importing mscc does not import mlir: the compiler loads on first use, so a machine with only
numpy (and cuda-bindings) can run compiled artifacts.
"""
from .dialects.dtypes import (bool_, float16, float32, float64, int8, int16, int32, int64,
                              uint8)
from .pyfront import amp, nn, ops
from .pyfront.context import GRAPH_MODE, PYNATIVE_MODE, get_context, set_context
from .pyfront.grad import GradOperation, grad, value_and_grad
from .pyfront.jit import jit
from .pyfront.nn.init import set_seed
from .pyfront.tensor import Parameter, Tensor

__version__ = "0.1.0"

__all__ = ["Tensor", "Parameter", "ops", "nn", "amp", "jit", "grad", "value_and_grad",
           "GradOperation", "set_seed", "set_context", "get_context", "GRAPH_MODE",
           "PYNATIVE_MODE", "bool_", "uint8", "int8", "int16", "int32", "int64", "float16",
           "float32", "float64"]
