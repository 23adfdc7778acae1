"""Elementwise ops: numpy broadcasting, one scalar rule each.

Every op is one `_unary`/`_binary` call: its scalar semantics (used by the per-op lowering and
by fused regions), its dtype rule and its gradient rule, side by side. A primitive scalar rule
names the MLIR op it is per dtype kind (`by_kind`) and its cost relative to an add (fusion
recomputes cheap ops rather than storing them); a composed rule calls other ops by mnemonic
(`s.exp(x)`) and costs the sum of its parts. Gradient rules of binary ops compute in the
broadcast result shape; `broadcasting` sums them back to each operand's shape.

Adding an op (say ms.sin) is one call here, a `"sin"` entry in pyfront/ops.py's table of
plain wrappers, and a row of the numeric test table (test_ops_numeric.py).
"""
from .. import batching
from .. import dtypes as dt
from .. import shape_rules as rules
from ..grad import broadcasting, each, no_grad
from ..lazy import arith
from ..lazy import math as mmath
from ..lowering import by_kind, lower_elementwise
from ..registry import define

NOT_BOOL = dt.NUMBERS


def _binary(name, scalar, dtypes=dt.ALL, result=None, compute=None, grad=None, cost=None,
            doc=""):
    return define(name, ["x", "y"], rules.elementwise(result), signature=("T", "T"), dtypes=dtypes,
                  scalar=scalar, cost=cost, compute_dtype=compute, lower=lower_elementwise,
                  grad=grad, batch=batching.elementwise, doc=doc)


def _unary(name, scalar, dtypes=dt.ALL, result=None, compute=None, grad=None, cost=None,
           doc=""):
    return define(name, ["x"], rules.elementwise(result), signature=("T",), dtypes=dtypes,
                  scalar=scalar, cost=cost, compute_dtype=compute, lower=lower_elementwise,
                  grad=grad, batch=batching.elementwise, doc=doc)


def _op(dialect, name, fastmath=False):
    """An emitter `(ScalarBuilder, *values) -> value` applying the MLIR op <dialect>.<name>
    (looked up when the rule runs: the registry imports without MLIR); `fastmath` passes the
    builder's flags (contract, or reassoc for reductions)."""
    if fastmath:
        return lambda s, *xs: getattr(dialect, name)(*xs, fastmath=s.fm)
    return lambda s, *xs: getattr(dialect, name)(*xs)


def _float_math(name):
    """A primitive rule of the float-only function math.<name>, with fastmath."""
    return by_kind(float=_op(mmath, name, fastmath=True))


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
_binary("ms.add", by_kind(float=_op(arith, "addf", fastmath=True),
                         int=_op(arith, "addi"),
                         bool=_op(arith, "ori")),
        cost=1, doc="x + y (logical or on bool)",
        grad=broadcasting(lambda g, d: d, lambda g, d: d))
_binary("ms.sub", by_kind(float=_op(arith, "subf", fastmath=True),
                         int=_op(arith, "subi"),
                         bool=_op(arith, "xori")),
        cost=1, dtypes=NOT_BOOL, doc="x - y",
        grad=broadcasting(lambda g, d: d, lambda g, d: g.neg(d)))
_binary("ms.mul", by_kind(float=_op(arith, "mulf", fastmath=True),
                         int=_op(arith, "muli"),
                         bool=_op(arith, "andi")),
        cost=1, doc="x * y (logical and on bool)",
        grad=broadcasting(lambda g, d: g.mul(d, g.y), lambda g, d: g.mul(d, g.x)))
_binary("ms.div", by_kind(float=_op(arith, "divf", fastmath=True),
                         int=_op(arith, "divsi"),
                         uint=_op(arith, "divui")),
        cost=4, result=rules.float_result, compute=rules.float_result,
        doc="true division; integer inputs divide in float32",
        # d(x/y)/dy = -(x/y)/y: re-uses the result
        grad=broadcasting(lambda g, d: g.div(d, g.y),
                          lambda g, d: g.neg(g.div(g.mul(d, g.out), g.y))))
_binary("ms.pow", by_kind(float=_op(mmath, "powf"),
                         int=_op(mmath, "ipowi"),
                         # x**0 == 1, x**1 == x
                         bool=lambda s, x, y: arith.ori(x, arith.xori(y, s.const(True)))),
        cost=10, doc="x ** y",
        # d/dy = x^y log(x): defined for x > 0 (nan elsewhere, as in MindSpore and numpy)
        grad=broadcasting(
            lambda g, d: g.mul(g.mul(d, g.y), g.emit("ms.pow", g.x, g.sub(g.y, g.const(1, g.y)))),
            lambda g, d: g.mul(g.mul(d, g.out), g.emit("ms.log", g.x))))
# maximum/minimum: the MLIR op per dtype kind; ties send the gradient to x
for _name, _float, _int, _uint, _bool, _x_wins in [
        ("maximum", "maximumf", "maxsi", "maxui", "ori", "ms.greater_equal"),
        ("minimum", "minimumf", "minsi", "minui", "andi", "ms.less_equal")]:
    _binary("ms." + _name, by_kind(float=_op(arith, _float), int=_op(arith, _int),
                                   uint=_op(arith, _uint), bool=_op(arith, _bool)),
            cost=1, grad=broadcasting(*_pick_by(_x_wins)),
            doc=f"elementwise {_name[:3]} (ties send the gradient to x)")

# ---------------------------------------------------------------- comparisons and logic
for _name, _pred, _symbol in [("equal", "eq", "=="), ("not_equal", "ne", "!="),
                              ("less", "lt", "<"), ("less_equal", "le", "<="),
                              ("greater", "gt", ">"), ("greater_equal", "ge", ">=")]:
    _binary("ms." + _name, lambda s, x, y, p=_pred: s.cmp(p, x, y), result=rules.bool_result,
            grad=no_grad, doc=f"x {_symbol} y")

_binary("ms.logical_and", lambda s, x, y: s.mul(x, y), dtypes=(dt.bool_,), grad=no_grad,
        doc="x and y, on bool tensors")
_binary("ms.logical_or", lambda s, x, y: s.add(x, y), dtypes=(dt.bool_,), grad=no_grad,
        doc="x or y, on bool tensors")
_unary("ms.logical_not", lambda s, x: s.cmp("eq", x, s.const(False)), dtypes=(dt.bool_,),
       grad=no_grad,
       doc="not x, on bool tensors")

# ---------------------------------------------------------------- unary math
_unary("ms.neg", by_kind(float=_op(arith, "negf", fastmath=True),
                        int=lambda s, x: arith.subi(s.const(0), x)), cost=1, dtypes=NOT_BOOL,
       grad=each(lambda g, d: g.neg(d)), doc="-x")
_unary("ms.abs", by_kind(float=_op(mmath, "absf"), int=_op(mmath, "absi"),
                        uint=lambda s, x: x, bool=lambda s, x: x), cost=1, dtypes=NOT_BOOL,
       grad=each(lambda g, d: g.mul(d, _sign(g, g.x))),
       doc="|x|")
_unary("ms.relu", lambda s, x: s.maximum(x, s.const(0)), dtypes=NOT_BOOL,
       grad=each(lambda g, d: g.select(g.emit("ms.greater", g.x, g.const(0, g.x)), d,
                                       g.zeros_like(d))),
       doc="max(x, 0)")
_unary("ms.exp", _float_math("exp"), cost=10, result=rules.float_result, compute=rules.float_result,
       grad=each(lambda g, d: g.mul(d, g.out)),
       doc="e ** x")
_unary("ms.log", _float_math("log"), cost=10, result=rules.float_result, compute=rules.float_result,
       grad=each(lambda g, d: g.div(d, g.x)),
       doc="natural logarithm")
_unary("ms.tanh", _float_math("tanh"), cost=10, result=rules.float_result, compute=rules.float_result,
       grad=each(lambda g, d: g.mul(d, g.sub(g.const(1, g.out), g.mul(g.out, g.out)))),
       doc="hyperbolic tangent")
_unary("ms.erf", _float_math("erf"), cost=10, result=rules.float_result, compute=rules.float_result,
       doc="the error function (exact GELU: x/2 (1 + erf(x/sqrt 2)))",
       # d erf(x) = 2/sqrt(pi) exp(-x^2)
       grad=each(lambda g, d: g.mul(d, g.mul(g.const(1.1283791670955126, g.x),
                                             g.emit("ms.exp", g.neg(g.mul(g.x, g.x)))))))
_unary("ms.sqrt", _float_math("sqrt"), cost=4, result=rules.float_result, compute=rules.float_result,
       grad=each(lambda g, d: g.div(g.mul(d, g.const(0.5, g.out)), g.out)),
       doc="square root")
_unary("ms.rsqrt", _float_math("rsqrt"), cost=4, result=rules.float_result, compute=rules.float_result,
       # d(x^-1/2) = -1/2 x^-3/2 = -1/2 out^3
       grad=each(lambda g, d: g.mul(g.mul(d, g.const(-0.5, g.out)),
                                    g.mul(g.out, g.mul(g.out, g.out)))),
       doc="1 / sqrt(x)")
_unary("ms.sin", _float_math("sin"), cost=10, result=rules.float_result, compute=rules.float_result,
       grad=each(lambda g, d: g.mul(d, g.emit("ms.cos", g.x))), doc="sine (radians)")
_unary("ms.cos", _float_math("cos"), cost=10, result=rules.float_result, compute=rules.float_result,
       grad=each(lambda g, d: g.neg(g.mul(d, g.emit("ms.sin", g.x)))), doc="cosine (radians)")
_unary("ms.sigmoid", lambda s, x: s.div(s.const(1), s.add(s.const(1), s.exp(s.neg(x)))),
       result=rules.float_result, compute=rules.float_result, doc="1 / (1 + exp(-x))",
       grad=each(lambda g, d: g.mul(d, g.mul(g.out, g.sub(g.const(1, g.out), g.out)))))

# ---------------------------------------------------------------- more unary math (MindSpore
# functional names). Each is the math-dialect function: libm/LLVM intrinsics on the CPU,
# libdevice on CUDA; log1p and expm1 stay accurate near 0, where log(1 + x) would not.
_FLOAT = dict(result=rules.float_result, compute=rules.float_result)
_unary("ms.tan", _float_math("tan"), cost=10, **_FLOAT, doc="tangent (radians)",
       # d tan = 1 + tan^2
       grad=each(lambda g, d: g.mul(d, g.add(g.const(1, g.out), g.mul(g.out, g.out)))))
_unary("ms.asin", _float_math("asin"), cost=10, **_FLOAT, doc="arcsine",
       grad=each(lambda g, d: g.mul(d, g.emit("ms.rsqrt", g.sub(g.const(1, g.x),
                                                                 g.mul(g.x, g.x))))))
_unary("ms.acos", _float_math("acos"), cost=10, **_FLOAT, doc="arccosine",
       grad=each(lambda g, d: g.neg(g.mul(d, g.emit("ms.rsqrt", g.sub(g.const(1, g.x),
                                                                       g.mul(g.x, g.x)))))))
_unary("ms.atan", _float_math("atan"), cost=10, **_FLOAT, doc="arctangent",
       grad=each(lambda g, d: g.div(d, g.add(g.const(1, g.x), g.mul(g.x, g.x)))))
_unary("ms.exp2", _float_math("exp2"), cost=10, **_FLOAT, doc="2 ** x",
       grad=each(lambda g, d: g.mul(d, g.mul(g.out, g.const(0.6931471805599453, g.out)))))
_unary("ms.log2", _float_math("log2"), cost=10, **_FLOAT, doc="base-2 logarithm",
       grad=each(lambda g, d: g.div(d, g.mul(g.x, g.const(0.6931471805599453, g.x)))))
_unary("ms.log1p", _float_math("log1p"), cost=10, **_FLOAT, doc="log(1 + x), accurate near 0",
       grad=each(lambda g, d: g.div(d, g.add(g.x, g.const(1, g.x)))))
_unary("ms.expm1", _float_math("expm1"), cost=10, **_FLOAT, doc="exp(x) - 1, accurate near 0",
       grad=each(lambda g, d: g.mul(d, g.add(g.out, g.const(1, g.out)))))
# Rounding: integers are their own floor/ceil/round (MindSpore keeps the dtype); the gradient
# is zero almost everywhere, as in MindSpore.
_ROUNDING = dict(int=lambda s, x: x)
_unary("ms.floor", by_kind(float=_op(mmath, "floor"), **_ROUNDING), cost=1, dtypes=NOT_BOOL,
       grad=no_grad, doc="largest integer <= x")
_unary("ms.ceil", by_kind(float=_op(mmath, "ceil"), **_ROUNDING), cost=1, dtypes=NOT_BOOL,
       grad=no_grad, doc="smallest integer >= x")
_unary("ms.round", by_kind(float=_op(mmath, "roundeven"), **_ROUNDING), cost=1,
       dtypes=NOT_BOOL, grad=no_grad, doc="nearest integer, halves to even (numpy's rule)")
_unary("ms.sign", lambda s, x: s.select(s.cmp("gt", x, s.const(0)), s.const(1),
                                        s.select(s.cmp("lt", x, s.const(0)), s.const(-1), x)),
       dtypes=NOT_BOOL, grad=no_grad, doc="1, -1 or 0 by the sign of x (NaN stays NaN)")

# ---------------------------------------------------------------- float classification
# Integer values are always finite (MindSpore's IsNan/IsInf/IsFinite accept them).
_unary("ms.isnan", by_kind(float=lambda s, x: s.cmp("ne", x, x),
                           int=lambda s, x: s.const(False, dt.bool_)),
       cost=1, result=rules.bool_result, grad=no_grad, doc="x is NaN")
_unary("ms.isinf", by_kind(float=lambda s, x: s.cmp("eq", s.abs(x), s.const(float("inf"))),
                           int=lambda s, x: s.const(False, dt.bool_)),
       cost=2, result=rules.bool_result, grad=no_grad, doc="x is +inf or -inf")
_unary("ms.isfinite", by_kind(float=lambda s, x: s.cmp("lt", s.abs(x), s.const(float("inf"))),
                              int=lambda s, x: s.const(True, dt.bool_)),
       cost=2, result=rules.bool_result, grad=no_grad, doc="x is neither NaN nor infinite")

# ---------------------------------------------------------------- value-free and identity
_unary("ms.zeros_like", lambda s, x: s.const(0), grad=no_grad,
       doc="zeros with x's shape and dtype")
_unary("ms.ones_like", lambda s, x: s.const(1), grad=no_grad,
       doc="ones with x's shape and dtype")
_unary("ms.stop_gradient", lambda s, x: x, doc="identity that blocks gradients", grad=no_grad)

# ---------------------------------------------------------------- select and cast
define("ms.select", ["cond", "x", "y"],
       lambda ins, attrs: dt.TensorSpec(rules.broadcast_shapes(*(s.shape for s in ins)),
                                        rules.same_group_dtype(ins[1:])),
       signature=("bool", "T", "T"),
       scalar=lambda s, c, x, y: s.select(c, x, y), lower=lower_elementwise,
       grad=broadcasting(None, lambda g, d: g.select(g.x, d, g.zeros_like(d)),
                         lambda g, d: g.select(g.x, g.zeros_like(d), d)),
       batch=batching.elementwise, doc="cond ? x : y, broadcasting all three")

define("ms.cast", ["x"], lambda ins, attrs: dt.TensorSpec(ins[0].shape, attrs["dtype"]),
       attrs={"dtype": "type"}, signature=(None,),
       scalar=lambda s, x: s.cast(x, s.dtype, s.out_dtype), lower=lower_elementwise,
       grad=each(lambda g, d: g.cast(d, g.in_specs[0].dtype)), batch=batching.elementwise,
       doc="convert elements to `dtype` (numpy semantics; bool is != 0); float to float "
           "passes the gradient back in the input's dtype")
