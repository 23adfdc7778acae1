"""Reverse-mode gradients of every op with a gradient rule, first and second order (grad of the
generated gradient function), against central finite differences in float64; then the grad
API's options (sens_param, with_value, grad_position, get_by_list with Parameters), stop_gradient,
integer inputs, and a 2-layer MLP against a hand-written numpy backward.

Each case is ms IR built in Python with ms.grad + func.call_indirect and compiled through the
whole CPU pipeline (gradcheck.py).
"""
from dataclasses import dataclass, field

import numpy as np
import pytest

from gradcheck import GradCheck, check_gradients, compile_grad
from mscc.dialects import dtypes as dt
from mscc.dialects.builders import constant
from mscc.dialects.registry import OPS
from mstest import op, spec

F64 = dt.float64


@dataclass
class Case:
    id: str
    covers: tuple                     # ops whose gradient rule the case exercises
    shapes: tuple                     # float64 inputs unless `dtypes` says otherwise
    body: object                      # (*args) -> value(s), ms ops
    domains: tuple = ()               # per input: "any" | "positive" | "small" | an array
    dtypes: tuple = ()
    wrt: tuple | None = None          # default: every float input
    second_order: bool = True
    tol: GradCheck = field(default_factory=GradCheck)

    def specs(self):
        dtypes = self.dtypes or (F64,) * len(self.shapes)
        return [spec(s, d) for s, d in zip(self.shapes, dtypes)]

    def inputs(self, rng):
        out = []
        for i, s in enumerate(self.specs()):
            dom = self.domains[i] if i < len(self.domains) else "any"
            if isinstance(dom, np.ndarray):
                out.append(dom.astype(s.dtype.np))
            elif dom == "positive":
                out.append(rng.uniform(0.5, 2.0, s.shape))
            elif dom == "small":
                out.append(rng.uniform(0.5, 1.5, s.shape))
            elif s.dtype.is_bool:
                out.append(rng.random(s.shape) < 0.5)
            else:
                out.append(rng.uniform(-2, 2, s.shape).astype(s.dtype.np))
        return out


def unary(name, domain="any", **attrs):
    return Case(name[3:], (name,), ((3, 4),), lambda x: op(name, x, **attrs), (domain,))


def binary(name, shapes, domains=("any", "any")):
    return Case(f"{name[3:]}-{shapes}", (name,), shapes, lambda x, y: op(name, x, y), domains)


BROADCAST = (((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((3, 4), ()))


def _reduce_cases():
    for name in ("ms.reduce_sum", "ms.reduce_mean", "ms.reduce_max", "ms.reduce_min",
                 "ms.reduce_prod"):
        for axis, keep in (((1,), False), ((0, 2), True), ((), False), ((-1,), True)):
            yield Case(f"{name[3:]}-{axis}-{keep}", (name,), ((2, 3, 4),),
                       lambda x, n=name, a=axis, k=keep: op(n, x, axis=a, keep_dims=k))


def _matmul_cases():
    for ta in (False, True):
        for tb in (False, True):
            a, b = ((4, 3) if ta else (3, 4)), ((5, 4) if tb else (4, 5))
            yield Case(f"matmul-{ta}-{tb}", ("ms.matmul",), (a, b),
                       lambda x, y, ta=ta, tb=tb: op("ms.matmul", x, y, transpose_a=ta,
                                                     transpose_b=tb))
    for shapes, ta, tb in ((((2, 1, 3, 4), (3, 4, 5)), False, False),
                           (((1, 3, 4), (2, 5, 4)), False, True),
                           (((2, 4, 3), (2, 5, 4)), True, True)):
        yield Case(f"batch_matmul-{shapes}-{ta}-{tb}", ("ms.batch_matmul",), shapes,
                   lambda x, y, ta=ta, tb=tb: op("ms.batch_matmul", x, y, transpose_a=ta,
                                                 transpose_b=tb))


def _one_hot(indices, on, off):
    return op("ms.one_hot", indices, on, off, depth=4, axis=-1)


COMPARISONS = ("ms.equal", "ms.not_equal", "ms.less", "ms.less_equal", "ms.greater",
               "ms.greater_equal", "ms.logical_and", "ms.logical_or", "ms.logical_not")


def _piecewise(x, y):
    """x*y where (x < y and x >= 0) or not (x == y or x > y), else y*y: the conditions carry
    no gradient."""
    left = op("ms.logical_and", op("ms.less", x, y), op("ms.greater_equal", x, constant(0.0)))
    right = op("ms.logical_not", op("ms.logical_or", op("ms.equal", x, y), op("ms.greater", x, y)))
    cond = op("ms.logical_or", left, op("ms.logical_and", right, op("ms.not_equal", x, y)))
    cond = op("ms.logical_or", cond, op("ms.less_equal", y, constant(-5.0)))
    return op("ms.select", cond, op("ms.mul", x, y), op("ms.mul", y, y))


def _pick_extremes(x):
    """x times the one-hot masks of its row argmax and argmin: the indices carry no gradient
    (locally constant), so the gradient is the masks."""
    def hot(name):
        return op("ms.one_hot", op(name, x, axis=1, keep_dims=False), constant(1.0),
                  constant(0.0), depth=4, axis=-1)
    return op("ms.add", op("ms.mul", x, hot("ms.argmax")), op("ms.mul", x, hot("ms.argmin")))


# Pooling geometries (dialects/ops/pooling.py): 2-D padded with ceil_mode, 1-D dilated.
_MAX_POOL = dict(kernel=(3, 2), stride=(2, 2), dilation=(1, 1), pad_lo=(1, 0), pad_hi=(1, 1),
                 ceil_mode=True)
_MAX_POOL_1D = dict(kernel=(3,), stride=(2,), dilation=(2,), pad_lo=(2,), pad_hi=(0,),
                    ceil_mode=False)
_AVG_POOL = dict(kernel=(3, 3), stride=(2, 1), pad_lo=(1, 1), pad_hi=(1, 0), ceil_mode=True,
                 count_include_pad=False, divisor_override=0)


# Convolution geometry (dialects/ops/conv.py): strided, dilated, asymmetric pads, 2 groups.
_CONV = dict(stride=(2, 1), dilation=(1, 2), pad_lo=(1, 0), pad_hi=(0, 2), groups=2)
_CONV_X, _CONV_W, _CONV_Y = (2, 4, 5, 6), (4, 2, 3, 2), (2, 4, 2, 6)


def _conv_cases():
    """The three conv ops are bilinear; each one's gradient rule emits the other ones, so
    second order checks every rule once more."""
    yield Case("conv", ("ms.conv",), (_CONV_X, _CONV_W),
               lambda x, w: op("ms.tanh", op("ms.conv", x, w, **_CONV)))
    yield Case("conv_input_grad", ("ms.conv_input_grad",), (_CONV_Y, _CONV_W),
               lambda dy, w: op("ms.tanh", op("ms.conv_input_grad", dy, w,
                                              input_shape=_CONV_X, **_CONV)))
    yield Case("conv_filter_grad", ("ms.conv_filter_grad",), (_CONV_X, _CONV_Y),
               lambda x, dy: op("ms.tanh", op("ms.conv_filter_grad", x, dy,
                                              kernel_shape=_CONV_W, **_CONV)))


def _pooling_cases():
    """Random inputs have no ties (max pooling's gradient is exact away from them). The
    gradient ops are linear in dy: differentiated with respect to it, max_pool_grad needs
    max_pool_gather's rule and that one max_pool_grad's (first and second order)."""
    def max_grad(a):
        return lambda x, dy: op("ms.max_pool_grad", x, op("ms.max_pool", x, **a), dy, **a)
    yield Case("max_pool-2d", ("ms.max_pool",), ((2, 2, 5, 6),),
               lambda x: op("ms.tanh", op("ms.max_pool", x, **_MAX_POOL)))
    yield Case("max_pool-1d", ("ms.max_pool",), ((2, 2, 9),),
               lambda x: op("ms.max_pool", x, **_MAX_POOL_1D))
    yield Case("max_pool_grad", ("ms.max_pool_grad", "ms.max_pool_gather"),
               ((2, 2, 5, 6), (2, 2, 3, 3)), max_grad(_MAX_POOL), wrt=(1,))
    yield Case("avg_pool", ("ms.avg_pool",), ((2, 2, 5, 4),),
               lambda x: op("ms.tanh", op("ms.avg_pool", x, **_AVG_POOL)))
    yield Case("avg_pool_grad", ("ms.avg_pool_grad",), ((2, 2, 3, 3),),
               lambda dy: op("ms.tanh", op("ms.avg_pool_grad", dy, input_shape=(2, 2, 5, 4),
                                           **{**_AVG_POOL, "divisor_override": 4})))


CASES = [
    *(unary(n) for n in ("ms.neg", "ms.exp", "ms.tanh", "ms.erf", "ms.sigmoid", "ms.relu",
                         "ms.abs", "ms.sin", "ms.cos")),
    *(unary(n, "positive") for n in ("ms.log", "ms.sqrt", "ms.rsqrt", "ms.log2",
                                     "ms.log1p")),
    *(unary(n) for n in ("ms.atan", "ms.exp2", "ms.expm1")),
    unary("ms.tan", "small"),
    *(unary(n, np.linspace(-0.9, 0.9, 12).reshape(3, 4)) for n in ("ms.asin", "ms.acos")),
    # rounding and classification are locally constant: d(x * floor(x)) = floor(x), ...
    Case("rounding-classification", ("ms.floor", "ms.ceil", "ms.round", "ms.sign",
                                     "ms.isnan", "ms.isinf", "ms.isfinite"), ((3, 4),),
         lambda x: op("ms.select", op("ms.logical_and", op("ms.isfinite", x), op(
             "ms.logical_not", op("ms.logical_or", op("ms.isnan", x), op("ms.isinf", x)))),
             op("ms.mul", x, op("ms.add", op("ms.add", op("ms.floor", x), op("ms.ceil", x)),
                                op("ms.add", op("ms.round", x), op("ms.sign", x)))),
             op("ms.zeros_like", x))),
    # zeros: two in one row, one in another. The first-order gradient is exact there; the
    # second order is not (the rule selects by the count of zeros, which is locally constant
    # only away from them), so it is checked above, at points without zeros.
    Case("reduce_prod-zeros", ("ms.reduce_prod",), ((3, 4),),
         lambda x: op("ms.reduce_prod", x, axis=(1,), keep_dims=False),
         domains=(np.array([[0.0, 1.5, 0.0, -0.7], [0.3, 0.0, 1.2, 2.0],
                            [0.5, -1.1, 0.9, 1.3]]),), second_order=False),
    *(Case(f"cumsum-{axis}-{ex}-{rv}", ("ms.cumsum",), ((3, 4),), lambda x, a=axis, e=ex,
           r=rv: op("ms.tanh", op("ms.cumsum", x, axis=a, exclusive=e, reverse=r)))
      for axis, ex, rv in ((1, False, False), (0, True, False), (-1, False, True),
                           (1, True, True))),
    *(binary(n, s) for n in ("ms.add", "ms.sub", "ms.mul") for s in BROADCAST),
    *(binary("ms.div", s, ("any", "positive")) for s in BROADCAST),
    *(binary("ms.pow", s, ("positive", "small")) for s in BROADCAST[:2]),
    *(binary(n, s) for n in ("ms.maximum", "ms.minimum") for s in BROADCAST[1:3]),
    # the identity that keeps a recomputed forward apart (dialects/ops/custom.py)
    Case("barrier", ("ms.barrier",), ((3, 4),),
         lambda x: op("ms.tanh", op("ms.mul", op("ms.barrier", x), x))),
    Case("select", ("ms.select",), ((3, 1), (4,), (3, 4)),
         lambda c, x, y: op("ms.select", c, x, y), dtypes=(dt.bool_, F64, F64)),
    Case("comparisons-logic", ("ms.select", *COMPARISONS), ((3, 4), (3, 4)), _piecewise),
    Case("argmax-argmin", ("ms.argmax", "ms.argmin", "ms.one_hot"), ((3, 4),), _pick_extremes),
    # a dropout mask from a fixed counter: the random numbers carry no gradient
    Case("random-mask", ("ms.random_uniform",), ((3, 4),), lambda x: op(
        "ms.select", op("ms.greater_equal", op("ms.random_uniform", constant(
            np.array(9, np.int64)), shape=(3, 4), seed=0), constant(0.5)),
        op("ms.mul", x, x), op("ms.tanh", x))),
    Case("cast-f64-f32", ("ms.cast",), ((3, 4),), lambda x: op("ms.cast", x, dtype=dt.float32),
         tol=GradCheck(eps=1e-3, rtol=1e-4, atol=1e-4)),
    Case("cast-f32-f64", ("ms.cast",), ((3, 4),), lambda x: op("ms.exp", op("ms.cast", x,
                                                                            dtype=F64)),
         dtypes=(dt.float32,), tol=GradCheck(eps=1e-2, rtol=1e-3, atol=1e-3)),
    *_matmul_cases(),
    *_reduce_cases(),
    *(Case(f"{n[3:]}-{axis}", (n,), ((3, 4),), lambda x, n=n, a=axis: op(n, x, axis=a))
      for n in ("ms.softmax", "ms.log_softmax") for axis in (-1, 0)),
    Case("reshape", ("ms.reshape",), ((2, 3, 4),), lambda x: op("ms.tanh", op(
        "ms.reshape", x, shape=(4, -1)))),
    Case("transpose", ("ms.transpose",), ((2, 3, 4),), lambda x: op("ms.tanh", op(
        "ms.transpose", x, perm=(2, 0, 1)))),
    Case("broadcast_to", ("ms.broadcast_to",), ((3, 1),), lambda x: op("ms.tanh", op(
        "ms.broadcast_to", x, shape=(2, 3, 4)))),
    Case("expand_dims", ("ms.expand_dims",), ((2, 3),), lambda x: op("ms.tanh", op(
        "ms.expand_dims", x, axis=-1))),
    Case("squeeze", ("ms.squeeze",), ((1, 3, 1),), lambda x: op("ms.tanh", op(
        "ms.squeeze", x, axis=()))),
    Case("concat-1", ("ms.concat",), ((2, 3), (2, 2)), lambda x, y: op("ms.tanh", op(
        "ms.concat", x, y, axis=1))),
    Case("concat-0", ("ms.concat",), ((2, 3), (1, 3)), lambda x, y: op("ms.tanh", op(
        "ms.concat", x, y, axis=-2))),
    Case("tile", ("ms.tile",), ((2, 3),), lambda x: op("ms.tanh", op(
        "ms.tile", x, multiples=(2, 1, 2)))),
    Case("slice", ("ms.slice",), ((4, 5),), lambda x: op("ms.tanh", op(
        "ms.slice", x, begin=(1, 2), size=(2, -1)))),
    Case("strided_slice", ("ms.strided_slice",), ((6, 5),), lambda x: op("ms.tanh", op(
        "ms.strided_slice", x, begin=(1, -4), end=(6, 5), strides=(2, 3)))),
    Case("strided_slice_grad", ("ms.strided_slice_grad",), ((3, 2),), lambda x: op("ms.tanh", op(
        "ms.strided_slice_grad", x, shape=(6, 5), begin=(1, -4), end=(6, 5), strides=(2, 3)))),
    Case("gather-0", ("ms.gather",), ((4, 3), (2, 3)), lambda p, i: op("ms.tanh", op(
        "ms.gather", p, i, axis=0)), domains=("any", np.array([[0, 3, 0], [2, 7, 3]])),
         dtypes=(F64, dt.int32)),
    Case("gather-1", ("ms.gather",), ((2, 5, 3), (4,)), lambda p, i: op("ms.tanh", op(
        "ms.gather", p, i, axis=1)), domains=("any", np.array([4, 1, 1, 0])),
         dtypes=(F64, dt.int64)),
    # rows read and written at a run-time index (loops: dialects/ops/control.py); index 7
    # is clamped to the last row
    *(Case(f"dynamic_index-{i}", ("ms.dynamic_index", "ms.dynamic_update_index"),
           ((4, 3), (), (3,)), lambda x, i, u: op("ms.tanh", op(
               "ms.dynamic_update_index", op("ms.mul", x, x), op("ms.mul", op(
                   "ms.dynamic_index", x, i), u), i)),
           domains=("any", np.array(i), "any"), dtypes=(F64, dt.int64, F64)) for i in (2, 7)),
    Case("unsorted_segment_sum", ("ms.unsorted_segment_sum",), ((5, 3), (5,)),
         lambda d, i: op("ms.tanh", op("ms.unsorted_segment_sum", d, i, num_segments=4)),
         domains=("any", np.array([0, 3, 3, 7, -1])), dtypes=(F64, dt.int32)),
    Case("one_hot", ("ms.one_hot",), ((2, 3), (), ()), lambda i, on, off: op("ms.tanh",
                                                                              _one_hot(i, on, off)),
         domains=(np.array([[0, 3, 1], [5, 2, 2]]),), dtypes=(dt.int64, F64, F64)),
    Case("zeros_ones_like", ("ms.zeros_like", "ms.ones_like"), ((3, 4),),
         lambda x: op("ms.add", op("ms.mul", x, op("ms.ones_like", x)),
                      op("ms.exp", op("ms.zeros_like", x)))),
    Case("constant", ("ms.constant",), ((3, 4),),
         lambda x: op("ms.mul", x, constant(np.linspace(-1, 1, 12).reshape(3, 4)))),
    Case("assign", ("ms.assign",), ((3,), (3,)),
         lambda w, v: op("ms.tanh", op("ms.assign", w, op("ms.mul", v, v)))),
    *_pooling_cases(),
    *_conv_cases(),
    # training-mode BatchNorm (MindSpore's BatchNormGrad rule); tanh makes the input's
    # gradient non-zero (a normalized value's sum does not depend on x)
    *(Case(f"batch_norm-{len(shape)}d", ("ms.batch_norm",), (shape, shape[1:2], shape[1:2]),
           lambda x, g, b: op("ms.tanh", op("ms.batch_norm", x, g, b, epsilon=1e-3)),
           domains=("any", "positive", "any")) for shape in ((3, 2, 2, 3), (5, 3))),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_gradient(case):
    rng = np.random.default_rng(0)
    specs = case.specs()
    wrt = case.wrt if case.wrt is not None else tuple(
        i for i, s in enumerate(specs) if s.dtype.is_float)
    check_gradients(specs, case.body, case.inputs(rng), wrt, case.second_order, case.tol)


def test_every_op_with_a_gradient_rule_is_checked():
    checked = {name for c in CASES for name in c.covers} | {"ms.stop_gradient"}  # see below
    # the collectives' gradients need several processes: test_distributed.py checks them
    checked |= {"ms.all_reduce", "ms.all_gather", "ms.reduce_scatter", "ms.broadcast",
                "ms.comm_rank"}
    # ms.print has no gradient (no_grad): test_ops_last.py checks a gradient through a print
    checked |= {"ms.print"}
    # ms.dim_size (a run-time size) has no gradient (no_grad): test_dynamic_shapes.py checks
    # the mean's gradient over a dynamic dimension, which divides by it
    checked |= {"ms.dim_size"}
    # ms.broadcast_like (a broadcast to a dynamic size) and ms.random_uniform_like (no_grad):
    # test_dynamic_shapes.py checks the broadcast's gradient against finite differences
    checked |= {"ms.broadcast_like", "ms.random_uniform_like"}
    with_rule = {n for n, d in OPS.items() if d.grad is not None}
    assert with_rule <= checked, with_rule - checked


# ------------------------------------------------------------------ the grad options

F34 = spec((3, 4), F64)


def _inputs(*shapes, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, s) for s in shapes]


def test_default_sensitivity_is_ones_for_every_output():
    """Without sens_param each output is seeded with ones_like: non-scalar outputs work, and
    several outputs add up."""
    x, = _inputs((3, 4))
    exe = compile_grad([F34], lambda a: [op("ms.exp", a), op("ms.reduce_sum", op(
        "ms.mul", a, a), axis=(), keep_dims=False)])
    dx, = exe(x)
    np.testing.assert_allclose(dx, np.exp(x) + 2 * x, rtol=1e-13)


def test_sens_param_gives_the_vector_jacobian_product():
    x, v = _inputs((3, 4), (3, 4))
    exe = compile_grad([F34], lambda a: op("ms.tanh", a), sens_param=True)
    dx, = exe(x, v)
    np.testing.assert_allclose(dx, v * (1 - np.tanh(x) ** 2), rtol=1e-13)


def test_with_value_returns_the_outputs_then_the_gradients():
    x, = _inputs((3, 4))
    exe = compile_grad([F34], lambda a: op("ms.exp", a), with_value=True)
    value, dx = exe(x)
    np.testing.assert_allclose(value, np.exp(x), rtol=1e-13)
    np.testing.assert_allclose(dx, np.exp(x), rtol=1e-13)


def test_grad_position_order_and_no_position():
    x, y = _inputs((3, 4), (4,))
    body = lambda a, b: op("ms.mul", a, b)  # noqa: E731
    dy, dx = compile_grad([F34, spec((4,), F64)], body, wrt=(1, 0))(x, y)
    np.testing.assert_allclose(dy, x.sum(0), rtol=1e-13)
    np.testing.assert_allclose(dx, np.broadcast_to(y, (3, 4)), rtol=1e-13)
    assert compile_grad([F34, spec((4,), F64)], body, wrt=(), with_value=True)(x, y)[0].shape \
        == (3, 4)


def _dense(x, w, b):
    return op("ms.add", op("ms.matmul", x, w, transpose_a=False, transpose_b=False), b)


def test_get_by_list_differentiates_the_parameter_arguments():
    """Arguments marked {ms.parameter} come after the grad_position gradients, in order."""
    x, w, b = _inputs((2, 3), (3, 4), (4,))
    exe = compile_grad([spec((2, 3), F64), spec((3, 4), F64), spec((4,), F64)],
                       lambda a, p, q: op("ms.tanh", _dense(a, p, q)), wrt=(0,),
                       get_by_list=True, parameters=[None, "w", "b"])
    dx, dw, db = exe(x, w, b)
    d = 1 - np.tanh(x @ w + b) ** 2
    np.testing.assert_allclose(dx, d @ w.T, rtol=1e-12)
    np.testing.assert_allclose(dw, x.T @ d, rtol=1e-12)
    np.testing.assert_allclose(db, d.sum(0), rtol=1e-12)


def test_stop_gradient_blocks_the_flow():
    x, = _inputs((3, 4))
    exe = compile_grad([F34], lambda a: op("ms.mul", a, op("ms.stop_gradient", op(
        "ms.exp", a))))
    dx, = exe(x)
    np.testing.assert_allclose(dx, np.exp(x), rtol=1e-13)  # not exp(x) * (1 + x)


def test_integer_and_bool_inputs_get_zero_gradients_of_their_type():
    x, = _inputs((3, 4))
    n = np.arange(12, dtype=np.int32).reshape(3, 4)
    c = n % 3 == 0
    exe = compile_grad([F34, spec((3, 4), dt.int32), spec((3, 4), dt.bool_)],
                       lambda a, i, b: op("ms.add", op("ms.mul", a, op("ms.cast", i, dtype=F64)),
                                          op("ms.cast", b, dtype=F64)), wrt=(0, 1, 2))
    dx, dn, dc = exe(x, n, c)
    np.testing.assert_array_equal(dx, n.astype(np.float64))
    assert dn.dtype == np.int32 and not dn.any()
    assert dc.dtype == np.bool_ and not dc.any()


def test_output_independent_of_the_input_gives_zeros():
    x, y = _inputs((3, 4), (3, 4))
    dx, = compile_grad([F34, F34], lambda a, b: op("ms.exp", b))(x, y)
    np.testing.assert_array_equal(dx, np.zeros((3, 4)))


def test_calls_inside_the_callee_are_inlined_first():
    from mlir import ir
    from mscc.dialects.builders import build_function, mlir_context
    from mscc.dialects.grad_op import call_gradient, emit_grad
    from gradcheck import compile_main, private
    from mlir.dialects import func
    with mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        inner = private(build_function(module, "inner", [F34], lambda a: op("ms.tanh", a)))
        f = private(build_function(module, "f", [F34], lambda a: op(
            "ms.mul", func.CallOp(inner, [a]).result, a)))
        build_function(module, "main", [F34], lambda a: call_gradient(emit_grad(f), [a]))
        exe = compile_main(module)
    x, = _inputs((3, 4))
    dx, = exe(x)
    np.testing.assert_allclose(dx, np.tanh(x) + x * (1 - np.tanh(x) ** 2), rtol=1e-13)


def test_third_order_by_chaining_grads():
    """d/dx sum(x^4) = 4x^3; the gradients of the gradient functions give 12x^2 and 24x."""
    from mlir import ir
    from mscc.dialects.builders import build_function, mlir_context
    from mscc.dialects.grad_op import call_gradient, emit_grad
    from gradcheck import compile_main, private
    with mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        fn = private(build_function(module, "f", [F34], lambda a: op(
            "ms.pow", a, constant(4.0))))
        for i in (1, 2):
            fn = private(build_function(module, f"g{i}", [F34], lambda a, fn=fn: call_gradient(
                emit_grad(fn), [a])))
        build_function(module, "main", [F34], lambda a: call_gradient(emit_grad(fn), [a]))
        exe = compile_main(module)
    x, = _inputs((3, 4))
    np.testing.assert_allclose(exe(x)[0], 24 * x, rtol=1e-12)


# ------------------------------------------------------------------ a training step

def _mlp_loss(x, labels, w1, b1, w2, b2, use_gather):
    """mean softmax cross-entropy of a 2-layer MLP (relu), labels by one_hot or gather."""
    logp = op("ms.log_softmax", _dense(op("ms.relu", _dense(x, w1, b1)), w2, b2), axis=-1)
    if use_gather:
        # pick logp[i, labels[i]] as the diagonal of gather(logp, labels, axis=1)
        picked = op("ms.mul", op("ms.gather", logp, labels, axis=1),
                    constant(np.eye(8)))
        nll = op("ms.neg", op("ms.reduce_sum", picked, axis=(1,), keep_dims=False))
    else:
        hot = op("ms.one_hot", labels, constant(1.0), constant(0.0), depth=3, axis=-1)
        nll = op("ms.neg", op("ms.reduce_sum", op("ms.mul", logp, hot), axis=(1,),
                              keep_dims=False))
    return op("ms.reduce_mean", nll, axis=(), keep_dims=False)


def _numpy_mlp_step(x, labels, w1, b1, w2, b2):
    h_pre = x @ w1 + b1
    h = np.maximum(h_pre, 0)
    logits = h @ w2 + b2
    z = logits - logits.max(1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    n = len(x)
    loss = -np.log(p[np.arange(n), labels]).mean()
    dlogits = (p - np.eye(3)[labels]) / n
    dw2, db2 = h.T @ dlogits, dlogits.sum(0)
    dh = dlogits @ w2.T * (h_pre > 0)
    return loss, x.T @ dh, dh.sum(0), dw2, db2


@pytest.mark.parametrize("use_gather", [False, True], ids=["one_hot", "gather"])
def test_mlp_cross_entropy_gradients_match_numpy(use_gather):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(8, 5))
    labels = rng.integers(0, 3, 8).astype(np.int32)
    params = [rng.normal(size=s) for s in ((5, 6), (6,), (6, 3), (3,))]
    specs = [spec((8, 5), F64), spec((8,), dt.int32)] + [spec(p.shape, F64) for p in params]
    exe = compile_grad(specs, lambda *a: _mlp_loss(*a, use_gather=use_gather), wrt=(),
                       get_by_list=True, with_value=True,
                       parameters=[None, None, "w1", "b1", "w2", "b2"])
    got = exe(x, labels, *params)
    want = _numpy_mlp_step(x, labels, *params)
    for g, w, name in zip(got, want, ["loss", "w1", "b1", "w2", "b2"]):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14, err_msg=name)


def test_bad_grad_position_is_a_value_error():
    from mlir import ir
    from mscc.dialects.builders import build_function, mlir_context
    from mscc.dialects.grad_op import emit_grad
    with mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        f = build_function(module, "f", [F34], lambda a: op("ms.exp", a))
        with ir.InsertionPoint(module.body):
            with pytest.raises(ValueError, match="grad_position 1 is out of range for @f"):
                emit_grad(f, 1)
            with pytest.raises(ValueError, match="names an argument twice"):
                emit_grad(f, (0, 0))


def test_emit_grad_finds_the_callee_by_name_and_types_the_gradient_function():
    from mlir import ir
    from mscc.dialects.builders import build_function, mlir_context, tensor_type
    from mscc.dialects.grad_op import emit_grad
    with mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        build_function(module, "f", [F34, spec((4,), dt.int32)], lambda a, n: op(
            "ms.reduce_sum", a, axis=(), keep_dims=False))
        seen = []
        build_function(module, "main", [F34], lambda a: seen.append(
            emit_grad("f", (1, 0), sens_param=True, with_value=True)) or a)
        want = ir.FunctionType.get(
            [tensor_type(F34), tensor_type(spec((4,), dt.int32)), tensor_type(spec((), F64))],
            [tensor_type(spec((), F64)), tensor_type(spec((4,), dt.int32)), tensor_type(F34)])
        assert seen[0].type == want
        with ir.InsertionPoint(module.body):
            with pytest.raises(ValueError, match="no function @g"):
                emit_grad("g")


@pytest.mark.parametrize("dtype,rtol", [(dt.float32, 1e-5), (dt.float16, 2e-2)],
                         ids=["float32", "float16"])
def test_lower_precision_gradients_agree_with_float64(dtype, rtol):
    """The rules' constants and casts follow the input dtype (no float64 leaks in)."""
    def loss(x, w):
        z = op("ms.matmul", x, w, transpose_a=False, transpose_b=False)
        y = op("ms.mul", op("ms.softmax", z, axis=-1), op("ms.rsqrt", op("ms.add", op(
            "ms.mul", z, z), constant(np.array(1.0, dtype.np)))))
        return op("ms.reduce_mean", op("ms.sigmoid", y), axis=(), keep_dims=False)
    x, w = _inputs((4, 3), (3, 5), seed=3)
    grads = {}
    for d in (F64, dtype):
        exe = compile_grad([spec((4, 3), d), spec((3, 5), d)], loss, wrt=(0, 1))
        grads[d] = exe(x.astype(d.np), w.astype(d.np))
    for low, ref in zip(grads[dtype], grads[F64]):
        assert low.dtype == dtype.np
        np.testing.assert_allclose(low.astype(np.float64), ref, rtol=rtol, atol=rtol * 1e-2)
