"""Elementwise ops: numpy broadcasting, one scalar rule each.

Every op is one `_unary`/`_binary` call: its scalar semantics (used by the per-op lowering and
by fused regions), its dtype rule and its gradient rule, side by side. Gradient rules of binary
ops compute in the broadcast result shape; `broadcasting` sums them back to each operand's shape.
"""
from .. import dtypes as dt
from .. import shape_rules as R
from ..grad import broadcasting, each, no_grad
from ..lowering import lower_elementwise
from ..registry import define

NOT_BOOL = dt.NUMBERS


def _binary(name, scalar, dtypes=dt.ALL, result=None, compute=None, grad=None, doc=""):
    return define(name, ["x", "y"], R.elementwise(result), signature=("T", "T"), dtypes=dtypes,
                  scalar=scalar, compute_dtype=compute, lower=lower_elementwise, grad=grad, doc=doc)


def _unary(name, scalar, dtypes=dt.ALL, result=None, compute=None, grad=None, doc=""):
    return define(name, ["x"], R.elementwise(result), signature=("T",), dtypes=dtypes,
                  scalar=scalar, compute_dtype=compute, lower=lower_elementwise, grad=grad, doc=doc)


def _pick_by(predicate):
    """maximum/minimum: the gradient goes to x where `predicate(x, y)` holds, else to y."""
    def to_x(g, d):
        return g.select(g.emit(predicate, g.x, g.y), d, g.zeros_like(d))

    def to_y(g, d):
        return g.select(g.emit(predicate, g.x, g.y), g.zeros_like(d), d)
    return to_x, to_y


def _sign(g, x):
    """(x > 0) - (x < 0) in x's dtype: the derivative of abs (0 at 0, as in MindSpore)."""
    dtype = g.in_specs[0].dtype
    zero = g.const(0, x)
    return g.sub(g.cast(g.emit("ms.greater", x, zero), dtype),
                 g.cast(g.emit("ms.less", x, zero), dtype))


# ---------------------------------------------------------------- arithmetic
_binary("ms.add", lambda s, x, y: s.add(x, y), doc="x + y (logical or on bool)",
        grad=broadcasting(lambda g, d: d, lambda g, d: d))
_binary("ms.sub", lambda s, x, y: s.sub(x, y), dtypes=NOT_BOOL,
        grad=broadcasting(lambda g, d: d, lambda g, d: g.neg(d)))
_binary("ms.mul", lambda s, x, y: s.mul(x, y), doc="x * y (logical and on bool)",
        grad=broadcasting(lambda g, d: g.mul(d, g.y), lambda g, d: g.mul(d, g.x)))
_binary("ms.div", lambda s, x, y: s.div(x, y), result=R.float_result, compute=R.float_result,
        doc="true division; integer inputs divide in float32",
        # d(x/y)/dy = -(x/y)/y: re-uses the result
        grad=broadcasting(lambda g, d: g.div(d, g.y),
                          lambda g, d: g.neg(g.div(g.mul(d, g.out), g.y))))
_binary("ms.pow", lambda s, x, y: s.pow(x, y),
        # d/dy = x^y log(x): defined for x > 0 (nan elsewhere, as in MindSpore and numpy)
        grad=broadcasting(
            lambda g, d: g.mul(g.mul(d, g.y), g.emit("ms.pow", g.x, g.sub(g.y, g.const(1, g.y)))),
            lambda g, d: g.mul(g.mul(d, g.out), g.emit("ms.log", g.x))))
_binary("ms.maximum", lambda s, x, y: s.max(x, y),
        grad=broadcasting(*_pick_by("ms.greater_equal")), doc="ties send the gradient to x")
_binary("ms.minimum", lambda s, x, y: s.min(x, y),
        grad=broadcasting(*_pick_by("ms.less_equal")), doc="ties send the gradient to x")

# ---------------------------------------------------------------- comparisons and logic
for _name, _pred in [("equal", "eq"), ("not_equal", "ne"), ("less", "lt"),
                     ("less_equal", "le"), ("greater", "gt"), ("greater_equal", "ge")]:
    _binary("ms." + _name, lambda s, x, y, p=_pred: s.cmp(p, x, y), result=R.bool_result,
            grad=no_grad)

_binary("ms.logical_and", lambda s, x, y: s.mul(x, y), dtypes=(dt.bool_,), grad=no_grad)
_binary("ms.logical_or", lambda s, x, y: s.add(x, y), dtypes=(dt.bool_,), grad=no_grad)
_unary("ms.logical_not", lambda s, x: s.cmp("eq", x, s.const(False)), dtypes=(dt.bool_,),
       grad=no_grad)

# ---------------------------------------------------------------- unary math
_unary("ms.neg", lambda s, x: s.neg(x), dtypes=NOT_BOOL, grad=each(lambda g, d: g.neg(d)))
_unary("ms.abs", lambda s, x: s.abs(x), dtypes=NOT_BOOL,
       grad=each(lambda g, d: g.mul(d, _sign(g, g.x))))
_unary("ms.relu", lambda s, x: s.max(x, s.const(0)), dtypes=NOT_BOOL,
       grad=each(lambda g, d: g.select(g.emit("ms.greater", g.x, g.const(0, g.x)), d,
                                       g.zeros_like(d))))
_unary("ms.exp", lambda s, x: s.exp(x), result=R.float_result, compute=R.float_result,
       grad=each(lambda g, d: g.mul(d, g.out)))
_unary("ms.log", lambda s, x: s.log(x), result=R.float_result, compute=R.float_result,
       grad=each(lambda g, d: g.div(d, g.x)))
_unary("ms.tanh", lambda s, x: s.tanh(x), result=R.float_result, compute=R.float_result,
       grad=each(lambda g, d: g.mul(d, g.sub(g.const(1, g.out), g.mul(g.out, g.out)))))
_unary("ms.erf", lambda s, x: s.erf(x), result=R.float_result, compute=R.float_result,
       doc="the error function (exact GELU: x/2 (1 + erf(x/sqrt 2)))",
       # d erf(x) = 2/sqrt(pi) exp(-x^2)
       grad=each(lambda g, d: g.mul(d, g.mul(g.const(1.1283791670955126, g.x),
                                             g.emit("ms.exp", g.neg(g.mul(g.x, g.x)))))))
_unary("ms.sqrt", lambda s, x: s.sqrt(x), result=R.float_result, compute=R.float_result,
       grad=each(lambda g, d: g.div(g.mul(d, g.const(0.5, g.out)), g.out)))
_unary("ms.rsqrt", lambda s, x: s.rsqrt(x), result=R.float_result, compute=R.float_result,
       # d(x^-1/2) = -1/2 x^-3/2 = -1/2 out^3
       grad=each(lambda g, d: g.mul(g.mul(d, g.const(-0.5, g.out)),
                                    g.mul(g.out, g.mul(g.out, g.out)))))
_unary("ms.sigmoid", lambda s, x: s.div(s.const(1), s.add(s.const(1), s.exp(s.neg(x)))),
       result=R.float_result, compute=R.float_result, doc="1 / (1 + exp(-x))",
       grad=each(lambda g, d: g.mul(d, g.mul(g.out, g.sub(g.const(1, g.out), g.out)))))

# ---------------------------------------------------------------- value-free and identity
_unary("ms.zeros_like", lambda s, x: s.const(0), grad=no_grad)
_unary("ms.ones_like", lambda s, x: s.const(1), grad=no_grad)
_unary("ms.stop_gradient", lambda s, x: x, doc="identity that blocks gradients", grad=no_grad)

# ---------------------------------------------------------------- select and cast
define("ms.select", ["cond", "x", "y"],
       lambda ins, attrs: dt.TensorSpec(R.broadcast_shapes(*(s.shape for s in ins)),
                                        R.same_group_dtype(ins[1:])),
       signature=("bool", "T", "T"),
       scalar=lambda s, c, x, y: s.select(c, x, y), lower=lower_elementwise,
       grad=broadcasting(None, lambda g, d: g.select(g.x, d, g.zeros_like(d)),
                         lambda g, d: g.select(g.x, g.zeros_like(d), d)),
       doc="cond ? x : y, broadcasting all three")

define("ms.cast", ["x"], lambda ins, attrs: dt.TensorSpec(ins[0].shape, attrs["dtype"]),
       attrs={"dtype": "type"}, signature=(None,),
       scalar=lambda s, x: s.cast(x, s.dtype, s.out_dtype), lower=lower_elementwise,
       grad=each(lambda g, d: g.cast(d, g.in_specs[0].dtype)),
       doc="convert elements to `dtype` (numpy semantics; bool is != 0); float to float "
           "passes the gradient back in the input's dtype")
