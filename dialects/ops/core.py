"""Ops outside the numeric families: constants, Parameter writes, gradients, fused regions."""
import numpy as np
from mlir import ir
from mlir.dialects import arith

from .. import dtypes as dt
from .. import lowering as L
from ..dtypes import TensorSpec
from ..grad import each, no_grad
from ..ir import numpy_to_dense, tensor_type
from ..registry import ShapeError, define


def _constant_infer(ins, attrs):
    v = attrs["value"]
    return TensorSpec(tuple(v.shape), dt.from_numpy(v.dtype))


def _lower_constant(lc):
    attr = lc.op.attributes["value"]
    if lc.out.dtype in (dt.uint8, dt.bool_):  # stored as i8 (see element_type)
        attr = numpy_to_dense(lc.attrs["value"].astype(np.uint8).view(np.int8), dt.int8)
    return arith.constant(tensor_type(lc.out, storage=True), attr)


define("ms.constant", [], _constant_infer, attrs={"value": "dense"}, lower=_lower_constant,
       grad=no_grad, doc="a tensor literal; the unit attribute `is_scalar` marks a Python scalar")


def _assign_infer(ins, attrs):
    var, value = ins
    if var.shape != value.shape:
        raise ShapeError(f"cannot assign a value of shape {value.shape} to a Parameter of "
                         f"shape {var.shape}")
    return var


define("ms.assign", ["variable", "value"], _assign_infer, signature=("T", "T"), write=(0,),
       lower=lambda lc, var, value: value, pure=False,
       # the result is `value`; the variable's old value does not reach it
       grad=each(None, lambda g, d: d),
       doc="write `value` into the Parameter `variable`; under jit the new value is returned "
           "and the runtime stores it in the Parameter")

# No gradient rule: ms-autodiff replaces every ms.grad (callees first) before it differentiates
# a function, so grad of grad differentiates the generated code instead.
define("ms.grad", [], None,
       attrs={"callee": "symbol", "grad_position": "ints", "get_by_list": "bool",
              "sens_param": "bool", "with_value": "bool"},
       doc="the gradient function of @callee (a function value; ms-autodiff generates it)")

define("ms.fused", [], None, attrs={"kind": "string"}, lower=lambda lc: L.lower_fused(lc),
       doc="ops that lower to one loop nest (CPU) or one kernel (GPU); the region reads "
           "values from above and ends in gpu.yield")
