"""Elementwise ops: numpy broadcasting, one scalar rule each.

Every op is one `_unary`/`_binary` call: its scalar semantics (used by the per-op lowering and
by fused regions), its dtype rule and its gradient rule, side by side.
"""
from .. import dtypes as dt
from .. import shape_rules as R
from ..lowering import lower_elementwise
from ..registry import define

NOT_BOOL = dt.NUMBERS


def _binary(name, scalar, dtypes=dt.ALL, result=None, compute=None, grad=None, doc=""):
    return define(name, ["x", "y"], R.elementwise(result), signature=("T", "T"), dtypes=dtypes,
                  scalar=scalar, compute_dtype=compute, lower=lower_elementwise, grad=grad, doc=doc)


def _unary(name, scalar, dtypes=dt.ALL, result=None, compute=None, grad=None, doc=""):
    return define(name, ["x"], R.elementwise(result), signature=("T",), dtypes=dtypes,
                  scalar=scalar, compute_dtype=compute, lower=lower_elementwise, grad=grad, doc=doc)


# ---------------------------------------------------------------- arithmetic
_binary("ms.add", lambda s, x, y: s.add(x, y), doc="x + y (logical or on bool)")
_binary("ms.sub", lambda s, x, y: s.sub(x, y), dtypes=NOT_BOOL)
_binary("ms.mul", lambda s, x, y: s.mul(x, y), doc="x * y (logical and on bool)")
_binary("ms.div", lambda s, x, y: s.div(x, y), result=R.float_result, compute=R.float_result,
        doc="true division; integer inputs divide in float32")
_binary("ms.pow", lambda s, x, y: s.pow(x, y))
_binary("ms.maximum", lambda s, x, y: s.max(x, y))
_binary("ms.minimum", lambda s, x, y: s.min(x, y))

# ---------------------------------------------------------------- comparisons and logic
for _name, _pred in [("equal", "eq"), ("not_equal", "ne"), ("less", "lt"),
                     ("less_equal", "le"), ("greater", "gt"), ("greater_equal", "ge")]:
    _binary("ms." + _name, lambda s, x, y, p=_pred: s.cmp(p, x, y), result=R.bool_result)

_binary("ms.logical_and", lambda s, x, y: s.mul(x, y), dtypes=(dt.bool_,))
_binary("ms.logical_or", lambda s, x, y: s.add(x, y), dtypes=(dt.bool_,))
_unary("ms.logical_not", lambda s, x: s.cmp("eq", x, s.const(False)), dtypes=(dt.bool_,))

# ---------------------------------------------------------------- unary math
_unary("ms.neg", lambda s, x: s.neg(x), dtypes=NOT_BOOL)
_unary("ms.abs", lambda s, x: s.abs(x), dtypes=NOT_BOOL)
_unary("ms.relu", lambda s, x: s.max(x, s.const(0)), dtypes=NOT_BOOL)
_unary("ms.exp", lambda s, x: s.exp(x), result=R.float_result, compute=R.float_result)
_unary("ms.log", lambda s, x: s.log(x), result=R.float_result, compute=R.float_result)
_unary("ms.tanh", lambda s, x: s.tanh(x), result=R.float_result, compute=R.float_result)
_unary("ms.sqrt", lambda s, x: s.sqrt(x), result=R.float_result, compute=R.float_result)
_unary("ms.rsqrt", lambda s, x: s.rsqrt(x), result=R.float_result, compute=R.float_result)
_unary("ms.sigmoid", lambda s, x: s.div(s.const(1), s.add(s.const(1), s.exp(s.neg(x)))),
       result=R.float_result, compute=R.float_result, doc="1 / (1 + exp(-x))")

# ---------------------------------------------------------------- value-free and identity
_unary("ms.zeros_like", lambda s, x: s.const(0))
_unary("ms.ones_like", lambda s, x: s.const(1))
_unary("ms.stop_gradient", lambda s, x: x, doc="identity that blocks gradients")

# ---------------------------------------------------------------- select and cast
define("ms.select", ["cond", "x", "y"],
       lambda ins, attrs: dt.TensorSpec(R.broadcast_shapes(*(s.shape for s in ins)),
                                        R.same_group_dtype(ins[1:])),
       signature=("bool", "T", "T"),
       scalar=lambda s, c, x, y: s.select(c, x, y), lower=lower_elementwise,
       doc="cond ? x : y, broadcasting all three")

define("ms.cast", ["x"], lambda ins, attrs: dt.TensorSpec(ins[0].shape, attrs["dtype"]),
       attrs={"dtype": "type"}, signature=(None,),
       scalar=lambda s, x: s.cast(x, s.dtype, s.out_dtype), lower=lower_elementwise, doc="convert elements to `dtype` (numpy semantics; bool is != 0)")
