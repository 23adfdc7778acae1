"""ops.vmap with per-op batching rules (pyfront/vmap.py, dialects/batching.py).

A table of cases, one or more per op with a rule: each case's function is vmapped with
several in_axes (all operands mapped at axis 0; each operand mapped alone at its last axis;
all mapped at alternating axes), all in one jit function, and compared with numpy applied to
each slice (float64). The traced program must not grow with the batch size, and every op
either has a rule checked here or is listed with the reason it has none. Then the API:
in_axes/out_axes forms, nested vmap, grad of vmap and vmap of grad against finite
differences, Parameters, eager calls and errors.
"""
import math
from dataclasses import dataclass

import numpy as np
import pytest

import mscc as ms
from mscc import nn, ops
from mscc.dialects.registry import OPS, MissingRuleError, lookup
from mscc.pyfront import dispatch
from mstest import finite_differences, line_of, op_counts
from test_conv import conv_ref
from test_pooling import Geometry, out_size, pool_ref, pool_grad_ref, windows

B = 3


def call(name, *operands, **attrs):
    """The ms op `name` on Tensors, const inputs passed by name like attributes."""
    opdef = lookup(name)
    consts = {k: v for k, v in attrs.items() if k in opdef.const_inputs}
    plain = {k: v for k, v in attrs.items() if k not in opdef.const_inputs}
    return dispatch.call(name, list(operands), plain, consts)


# ------------------------------------------------------------------ inputs

def _uniform(lo, hi):
    return lambda rng, shape: rng.uniform(lo, hi, shape)


def _ints(lo, hi, dtype):
    return lambda rng, shape: rng.integers(lo, hi, shape).astype(dtype)


def _special(rng, shape):
    x = rng.uniform(-2, 2, shape)
    flat = x.reshape(-1)
    flat[::3], flat[1::5] = np.inf, np.nan
    flat[2::7] = -np.inf
    return x


DRAW = {"any": _uniform(-2, 2), "pos": _uniform(0.5, 2.0), "unit": _uniform(-0.9, 0.9),
        "small": _uniform(0.5, 1.5), "bool": lambda rng, shape: rng.random(shape) < 0.5,
        "whole": lambda rng, shape: rng.integers(-2, 3, shape).astype(np.float64),
        "special": _special, "i32": _ints(-1, 5, np.int32), "i64": _ints(-1, 6, np.int64)}


def _np_batch_norm(x, gamma, beta, eps=1e-3):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mean, var = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma.reshape(shape) + beta.reshape(shape)


@dataclass
class Case:
    id: str
    covers: tuple       # ops whose batching rule the case exercises
    fn: object          # (*Tensors) -> Tensor or tuple, ms ops
    ref: object         # (*arrays) -> array or tuple: numpy, for one element
    inputs: tuple       # per operand: (element shape, DRAW key)
    variants: tuple = None
    tol: float = 1e-10

    def all_variants(self):
        """in_axes: all mapped at 0; each operand alone at its last axis; all at -1/0/-1..."""
        if self.variants is not None:
            return self.variants
        n = len(self.inputs)
        out = [(0,) * n] + [tuple(-1 if j == i else None for j in range(n)) for i in range(n)]
        return out + ([tuple(-1 if j % 2 == 0 else 0 for j in range(n))] if n > 1 else [])


def _draw(rng, shape, kind, axis, size):
    if axis is not None:
        axis %= len(shape) + 1
        shape = shape[:axis] + (size,) + shape[axis:]
    return DRAW[kind](rng, shape)


def _reference(case, axes, arrays, size):
    """numpy on each element, stacked on axis 0."""
    per = []
    for b in range(size):
        element = [x if a is None else np.take(x, b, axis=a) for x, a in zip(arrays, axes)]
        out = case.ref(*element)
        per.append(out if isinstance(out, tuple) else (out,))
    return [np.stack([np.asarray(p[k]) for p in per]) for k in range(len(per[0]))]


def _program(case):
    variants, n = case.all_variants(), len(case.inputs)

    def program(*flat):
        return tuple(ops.vmap(case.fn, in_axes=axes)(*flat[k * n:(k + 1) * n])
                     for k, axes in enumerate(variants))
    return program


def _arguments(case, size, seed=0):
    rng = np.random.default_rng(seed)
    return [[_draw(rng, shape, kind, a, size) for (shape, kind), a in zip(case.inputs, axes)]
            for axes in case.all_variants()]


# ------------------------------------------------------------------ numpy references

def _erf(x):
    return np.vectorize(math.erf)(x)


UNARY = {"neg": np.negative, "abs": np.abs, "relu": lambda x: np.maximum(x, 0), "exp": np.exp,
         "tanh": np.tanh, "erf": _erf, "sin": np.sin, "cos": np.cos,
         "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "atan": np.arctan, "exp2": np.exp2,
         "expm1": np.expm1, "floor": np.floor, "ceil": np.ceil, "round": np.round,
         "sign": np.sign, "zeros_like": np.zeros_like, "ones_like": np.ones_like,
         "stop_gradient": lambda x: x, "barrier": lambda x: x}
POSITIVE = {"log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
            "log2": np.log2, "log1p": np.log1p}
UNIT = {"tan": np.tan, "asin": np.arcsin, "acos": np.arccos}
CLASSIFY = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "maximum": np.maximum, "minimum": np.minimum}
COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less,
           "less_equal": np.less_equal, "greater": np.greater,
           "greater_equal": np.greater_equal}


def _table(names, domain, shapes=((3, 4),)):
    """One case applying every op of `names` ({mnemonic: numpy function}) to its operands."""
    return Case("-".join(names)[:40] + f"-{shapes}", tuple("ms." + n for n in names),
                lambda *xs: tuple(call("ms." + n, *xs) for n in names),
                lambda *xs: tuple(f(*xs) for f in names.values()),
                tuple((s, domain) for s in shapes))


def _logic(x, y):
    lt, ge = call("ms.less", x, y), call("ms.greater_equal", x, y)
    return (call("ms.logical_and", lt, call("ms.logical_not", ge)),
            call("ms.logical_or", lt, call("ms.equal", x, y)))


def _np_logic(x, y):
    return np.logical_and(x < y, ~(x >= y)), np.logical_or(x < y, x == y)


AXES = (((1,), False), ((0, 2), True), ((), False), ((-1,), True))
NP_REDUCE = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max,
             "reduce_min": np.min, "reduce_prod": np.prod}


def _reduce_case(name):
    f = NP_REDUCE[name]
    return Case(name, ("ms." + name,),
                lambda x: tuple(call("ms." + name, x, axis=a, keep_dims=k) for a, k in AXES),
                lambda x: tuple(f(x, axis=a or None, keepdims=k) for a, k in AXES),
                (((2, 3, 4), "any"),))


def _np_cumsum(x, axis, exclusive, reverse):
    y = np.flip(x, axis) if reverse else x
    c = np.cumsum(y, axis) - (y if exclusive else 0)
    return np.flip(c, axis) if reverse else c


CUMSUM = ((1, False, False), (0, True, False), (-1, False, True), (1, True, True))


def _np_softmax(x, axis, log):
    e = x - x.max(axis, keepdims=True)
    return e - np.log(np.exp(e).sum(axis, keepdims=True)) if log else \
        np.exp(e) / np.exp(e).sum(axis, keepdims=True)


def _np_gather(p, i, axis):
    """Out-of-range indices read zeros (mscc's gather)."""
    n = p.shape[axis]
    inside = (i >= 0) & (i < n)
    out = np.take(p, np.where(inside, i, 0), axis=axis)
    return out * inside.reshape((1,) * axis + i.shape + (1,) * (p.ndim - axis - 1))


def _np_one_hot(i, on, off, depth, axis):
    out = np.where(i[..., None] == np.arange(depth), on, off)
    return np.moveaxis(out, -1, axis) if axis != -1 else out


def _np_segment_sum(data, ids, n):
    out = np.zeros((n,) + data.shape[ids.ndim:])
    for k, s in np.ndenumerate(ids):
        if 0 <= s < n:
            out[s] += data[k]
    return out


def _np_update(x, u, i):
    y = x.copy()
    y[np.clip(i, 0, len(x) - 1)] = u
    return y


def _np_strided_grad(dy):
    z = np.zeros((6, 5))
    z[1:6:2, -4:5:3] = dy
    return z


# Convolution geometry (as test_autodiff_numeric): strided, dilated, asymmetric pads, 2 groups.
CONV = dict(stride=(2, 1), dilation=(1, 2), pad_lo=(1, 0), pad_hi=(0, 2), groups=2)
CONV_X, CONV_W, CONV_Y = (2, 4, 5, 6), (4, 2, 3, 2), (2, 4, 2, 6)


def _np_conv(x, w):
    return conv_ref(x, w, None, CONV["stride"], CONV["dilation"], CONV["pad_lo"],
                    CONV["pad_hi"], CONV["groups"])


def _np_conv_input_grad(dy, w):
    """conv is linear in x: its adjoint applied to dy, from the images of a basis of x."""
    size = int(np.prod(CONV_X))
    basis = np.eye(size).reshape((size * CONV_X[0],) + CONV_X[1:])
    images = _np_conv(basis, w).reshape((size,) + CONV_Y)
    return np.tensordot(images, dy, axes=dy.ndim).reshape(CONV_X)


def _np_conv_filter_grad(x, dy):
    size = int(np.prod(CONV_W))
    return np.array([(_np_conv(x, e.reshape(CONV_W)) * dy).sum()
                     for e in np.eye(size)]).reshape(CONV_W)


MAX_POOL = Geometry((3, 2), (2, 2), (1, 0), (1, 1), ceil_mode=True)
AVG_POOL = Geometry((3, 3), (2, 1), (1, 1), (1, 0), ceil_mode=True)
AVG_ATTRS = dict(AVG_POOL.attrs("avg"), count_include_pad=False, divisor_override=0)


def _pooled(shape, g):
    return shape[:2] + tuple(out_size(*a, g.ceil_mode) for a in zip(shape[2:], *g.per_dim()))


def _np_max_gather(x, v, g):
    """v at the first maximal element of each window of x."""
    y = np.zeros(_pooled(x.shape, g))
    for o, pos, inside in windows(x.shape, *g.per_dim(), g.ceil_mode):
        where = (slice(None), slice(None)) + np.ix_(*inside)
        part, vals = x[where], v[where]
        first = np.argmax(part.reshape(part.shape[:2] + (-1,)), -1)
        y[(...,) + o] = np.take_along_axis(vals.reshape(vals.shape[:2] + (-1,)),
                                           first[..., None], -1)[..., 0]
    return y


def _max_pool_cases():
    x = (2, 2, 5, 6)
    attrs = MAX_POOL.attrs("max")
    yield Case("max_pool", ("ms.max_pool",), lambda a: call("ms.max_pool", a, **attrs),
               lambda a: pool_ref(a, "max", MAX_POOL), ((x, "any"),))
    yield Case("max_pool_grad", ("ms.max_pool_grad",),
               lambda a, dy: call("ms.max_pool_grad", a, call("ms.max_pool", a, **attrs), dy,
                                  **attrs),
               lambda a, dy: pool_grad_ref(a, dy, "max", MAX_POOL),
               ((x, "any"), (_pooled(x, MAX_POOL), "any")))
    yield Case("max_pool_gather", ("ms.max_pool_gather",),
               lambda a, v: call("ms.max_pool_gather", a, call("ms.max_pool", a, **attrs), v,
                                 **attrs),
               lambda a, v: _np_max_gather(a, v, MAX_POOL), ((x, "any"), (x, "any")))


def _avg_pool_cases():
    x = (2, 2, 5, 4)
    yield Case("avg_pool", ("ms.avg_pool",), lambda a: call("ms.avg_pool", a, **AVG_ATTRS),
               lambda a: pool_ref(a, "avg", AVG_POOL, count_include_pad=False), ((x, "any"),))
    yield Case("avg_pool_grad", ("ms.avg_pool_grad",),
               lambda dy: call("ms.avg_pool_grad", dy, input_shape=x, **AVG_ATTRS),
               lambda dy: pool_grad_ref(np.zeros(x), dy, "avg", AVG_POOL,
                                        count_include_pad=False),
               ((_pooled(x, AVG_POOL), "any"),))


def _matmul_cases():
    for ta in (False, True):
        for tb in (False, True):
            a, b = ((4, 3) if ta else (3, 4)), ((5, 4) if tb else (4, 5))
            yield Case(f"matmul-{ta}-{tb}", ("ms.matmul",),
                       lambda x, y, ta=ta, tb=tb: call("ms.matmul", x, y, transpose_a=ta,
                                                       transpose_b=tb),
                       lambda x, y, ta=ta, tb=tb: (x.T if ta else x) @ (y.T if tb else y),
                       ((a, "any"), (b, "any")))
    for shapes, ta, tb in ((((2, 1, 3, 4), (3, 4, 5)), False, False),
                           (((1, 3, 4), (2, 5, 4)), False, True),
                           (((2, 4, 3), (2, 5, 4)), True, True)):
        yield Case(f"batch_matmul-{shapes}-{ta}-{tb}", ("ms.batch_matmul",),
                   lambda x, y, ta=ta, tb=tb: call("ms.batch_matmul", x, y, transpose_a=ta,
                                                   transpose_b=tb),
                   lambda x, y, ta=ta, tb=tb: (np.swapaxes(x, -1, -2) if ta else x)
                   @ (np.swapaxes(y, -1, -2) if tb else y),
                   tuple((s, "any") for s in shapes))


CASES = [
    _table(UNARY, "any"), _table(POSITIVE, "pos"), _table(UNIT, "unit"),
    Case("classify", tuple("ms." + n for n in CLASSIFY) + ("ms.logical_not",),
         lambda x: tuple(call("ms." + n, x) for n in CLASSIFY)
         + (call("ms.logical_not", call("ms.isnan", x)),),
         lambda x: tuple(f(x) for f in CLASSIFY.values()) + (~np.isnan(x),),
         (((3, 4), "special"),)),
    *(_table(BINARY, "any", s) for s in (((3, 4), (3, 4)), ((3, 4), (4,)),
                                          ((2, 1, 4), (3, 1)), ((3, 4), ()))),
    _table({"pow": np.power}, "pos", ((3, 4), (4,))),
    _table(COMPARE, "whole", ((3, 4), (4,))),
    Case("logic", ("ms.logical_and", "ms.logical_or", "ms.logical_not"), _logic, _np_logic,
         (((3, 4), "whole"), ((4,), "whole"))),
    Case("select", ("ms.select",), lambda c, x, y: call("ms.select", c, x, y), np.where,
         (((3, 1), "bool"), ((4,), "any"), ((3, 4), "any"))),
    Case("cast", ("ms.cast",),
         lambda x: (call("ms.cast", x, dtype=ms.float32), call("ms.cast", x, dtype=ms.int32),
                    call("ms.cast", x, dtype=ms.bool_)),
         lambda x: (x.astype(np.float32), x.astype(np.int32), x != 0), (((3, 4), "whole"),),
         tol=1e-6),
    Case("python-scalars", ("ms.mul", "ms.add"), lambda x: x * 2.0 + 1,
         lambda x: x * 2.0 + 1, (((3, 4), "any"),)),
    *(_reduce_case(n) for n in NP_REDUCE),
    Case("reduce-bool-and-rank0", ("ms.reduce_sum", "ms.reduce_max", "ms.reduce_mean"),
         lambda m, s: (call("ms.reduce_sum", m, axis=(1,), keep_dims=False),
                       call("ms.reduce_sum", s, axis=(), keep_dims=False),
                       call("ms.reduce_max", s, axis=(), keep_dims=True),
                       call("ms.reduce_mean", s, axis=(), keep_dims=False)),
         lambda m, s: (m.sum(1), s.astype(np.int64), s, s.astype(np.float32)),
         (((3, 4), "bool"), ((), "bool")), tol=1e-6),
    Case("argmax-argmin", ("ms.argmax", "ms.argmin"),
         lambda x: (call("ms.argmax", x, axis=1, keep_dims=False),
                    call("ms.argmax", x, axis=0, keep_dims=True),
                    call("ms.argmin", x, axis=-1, keep_dims=False)),
         lambda x: (x.argmax(1), x.argmax(0)[None], x.argmin(-1)), (((3, 4), "any"),)),
    Case("softmax", ("ms.softmax", "ms.log_softmax"),
         lambda x: (call("ms.softmax", x, axis=-1), call("ms.softmax", x, axis=0),
                    call("ms.log_softmax", x, axis=1), call("ms.log_softmax", x, axis=0)),
         lambda x: (_np_softmax(x, -1, False), _np_softmax(x, 0, False),
                    _np_softmax(x, 1, True), _np_softmax(x, 0, True)), (((3, 4), "any"),)),
    Case("batch_norm", ("ms.batch_norm",),
         lambda x, g, b: call("ms.batch_norm", x, g, b, epsilon=1e-3), _np_batch_norm,
         (((4, 3, 2, 2), "any"), ((3,), "pos"), ((3,), "any"))),
    Case("cumsum", ("ms.cumsum",),
         lambda x: tuple(call("ms.cumsum", x, axis=a, exclusive=e, reverse=r)
                         for a, e, r in CUMSUM),
         lambda x: tuple(_np_cumsum(x, a, e, r) for a, e, r in CUMSUM), (((3, 4), "any"),)),
    Case("reshape", ("ms.reshape",), lambda x: call("ms.reshape", x, shape=(4, -1)),
         lambda x: x.reshape(4, -1), (((2, 3, 4), "any"),)),
    Case("transpose", ("ms.transpose",), lambda x: call("ms.transpose", x, perm=(2, 0, 1)),
         lambda x: x.transpose(2, 0, 1), (((2, 3, 4), "any"),)),
    Case("broadcast_to", ("ms.broadcast_to",),
         lambda x: call("ms.broadcast_to", x, shape=(2, 3, 4)),
         lambda x: np.broadcast_to(x, (2, 3, 4)), (((3, 1), "any"),)),
    Case("expand_dims", ("ms.expand_dims",),
         lambda x: (call("ms.expand_dims", x, axis=-1), call("ms.expand_dims", x, axis=0)),
         lambda x: (x[..., None], x[None]), (((2, 3), "any"),)),
    Case("squeeze", ("ms.squeeze",),
         lambda x: (call("ms.squeeze", x, axis=()), call("ms.squeeze", x, axis=(2,))),
         lambda x: (x.reshape(3), x[..., 0]), (((1, 3, 1), "any"),)),
    Case("concat-1", ("ms.concat",), lambda x, y: call("ms.concat", x, y, axis=1),
         lambda x, y: np.concatenate([x, y], 1), (((2, 3), "any"), ((2, 2), "any"))),
    Case("concat-0", ("ms.concat",), lambda x, y: call("ms.concat", x, y, axis=-2),
         lambda x, y: np.concatenate([x, y], 0), (((2, 3), "any"), ((1, 3), "any"))),
    Case("tile", ("ms.tile",), lambda x: call("ms.tile", x, multiples=(2, 1, 2)),
         lambda x: np.tile(x, (2, 1, 2)), (((2, 3), "any"),)),
    Case("slice", ("ms.slice",), lambda x: call("ms.slice", x, begin=(1, 2), size=(2, -1)),
         lambda x: x[1:3, 2:], (((4, 5), "any"),)),
    Case("strided_slice", ("ms.strided_slice",),
         lambda x: call("ms.strided_slice", x, begin=(1, -4), end=(6, 5), strides=(2, 3)),
         lambda x: x[1:6:2, -4:5:3], (((6, 5), "any"),)),
    Case("strided_slice_grad", ("ms.strided_slice_grad",),
         lambda d: call("ms.strided_slice_grad", d, shape=(6, 5), begin=(1, -4), end=(6, 5),
                        strides=(2, 3)), _np_strided_grad, (((3, 2), "any"),)),
    *_matmul_cases(),
    Case("gather-0", ("ms.gather",), lambda p, i: call("ms.gather", p, i, axis=0),
         lambda p, i: _np_gather(p, i, 0), (((4, 3), "any"), ((2, 3), "i32"))),
    Case("gather-1", ("ms.gather",), lambda p, i: call("ms.gather", p, i, axis=1),
         lambda p, i: _np_gather(p, i, 1), (((2, 5, 3), "any"), ((4,), "i64"))),
    Case("one_hot", ("ms.one_hot",),
         lambda i, on, off: (call("ms.one_hot", i, on, off, depth=4, axis=-1),
                             call("ms.one_hot", i, on, off, depth=4, axis=0)),
         lambda i, on, off: (_np_one_hot(i, on, off, 4, -1), _np_one_hot(i, on, off, 4, 0)),
         (((2, 3), "i64"), ((), "any"), ((), "any"))),
    Case("unsorted_segment_sum", ("ms.unsorted_segment_sum",),
         lambda d, i: call("ms.unsorted_segment_sum", d, i, num_segments=4),
         lambda d, i: _np_segment_sum(d, i, 4), (((5, 3), "any"), ((5,), "i32"))),
    Case("dynamic_index", ("ms.dynamic_index",), lambda x, i: call("ms.dynamic_index", x, i),
         lambda x, i: x[np.clip(i, 0, len(x) - 1)], (((4, 3), "any"), ((), "i64"))),
    Case("dynamic_update_index", ("ms.dynamic_update_index",),
         lambda x, u, i: call("ms.dynamic_update_index", x, u, i), _np_update,
         (((4, 3), "any"), ((3,), "any"), ((), "i64"))),
    Case("conv", ("ms.conv",), lambda x, w: call("ms.conv", x, w, **CONV), _np_conv,
         ((CONV_X, "any"), (CONV_W, "any"))),
    Case("conv_input_grad", ("ms.conv_input_grad",),
         lambda dy, w: call("ms.conv_input_grad", dy, w, input_shape=CONV_X, **CONV),
         _np_conv_input_grad, ((CONV_Y, "any"), (CONV_W, "any"))),
    Case("conv_filter_grad", ("ms.conv_filter_grad",),
         lambda x, dy: call("ms.conv_filter_grad", x, dy, kernel_shape=CONV_W, **CONV),
         _np_conv_filter_grad, ((CONV_X, "any"), (CONV_Y, "any"))),
    *_max_pool_cases(),
    *_avg_pool_cases(),
]

# Ops without a batching rule, and why.
NO_RULE = {
    "ms.constant": "no operands: never mapped (replayed as a constant)",
    "ms.assign": "writing a mapped value into a Parameter would be one write per element; an "
                 "unmapped write is replayed as it is (test_parameter_writes)",
    "ms.grad": "ms-autodiff replaces it before the replay: vmap of grad batches the "
               "generated ops",
    "ms.fused": "made by ms-fuse, long after vmap",
    "ms.random_uniform": "its counter is a Parameter, never mapped: the same numbers for "
                         "every element (MindSpore's documented vmap behaviour)",
    **{name: "a collective across processes (dialects/ops/collective.py): no rule yet"
       for name in ("ms.all_reduce", "ms.all_gather", "ms.reduce_scatter", "ms.broadcast")},
    "ms.comm_rank": "no operands: never mapped",
    "ms.dim_size": "made by ms-autodiff for a size known only at run time (a mean's "
                   "count), after vmap",
    **{name: "made by the frontend for a shape with a dynamic size only (vmap traces "
             "static shapes)" for name in ("ms.broadcast_like", "ms.random_uniform_like")},
    "ms.print": "a side effect: one print per element or one of the whole batch would both "
                "differ from the program as written (print outside ops.vmap)",
}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_matches_numpy_per_slice(case):
    arguments = _arguments(case, B)
    got = ms.jit(_program(case))(*[ms.Tensor(a) for args in arguments for a in args])
    for axes, args, out in zip(case.all_variants(), arguments, got):
        outs = out if isinstance(out, tuple) else (out,)
        want = _reference(case, [None if a is None else a % (len(s) + 1)
                                 for a, (s, _) in zip(axes, case.inputs)], args, B)
        assert len(outs) == len(want)
        for k, (o, w) in enumerate(zip(outs, want)):
            assert o.shape == w.shape, (axes, k, o.shape, w.shape)
            np.testing.assert_allclose(o.asnumpy().astype(np.float64), w.astype(np.float64),
                                       rtol=case.tol, atol=case.tol, err_msg=f"{axes} #{k}")


_op_counts = op_counts


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_program_does_not_grow_with_the_batch(case):
    counts = []
    for size in (2, 5):
        args = [ms.Tensor(a) for arrays in _arguments(case, size) for a in arrays]
        counts.append(_op_counts(ms.jit(_program(case)).lower(*args).as_text("ms")))
    assert counts[0] == counts[1]


def test_every_op_has_a_checked_rule_or_a_reason():
    checked = {name for c in CASES for name in c.covers}
    with_rule = {n for n, d in OPS.items() if d.batch is not None}
    assert with_rule <= checked, with_rule - checked
    assert not with_rule & set(NO_RULE), with_rule & set(NO_RULE)
    assert set(OPS) <= with_rule | set(NO_RULE), set(OPS) - with_rule - set(NO_RULE)


# ------------------------------------------------------------------ in_axes and out_axes

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 3))
Y = RNG.standard_normal((3, 5))


def _check(got, want):
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12, atol=1e-12)


def test_in_axes_int_none_tuple_and_nested(mode):
    x, y, z = ms.Tensor(X), ms.Tensor(Y), ms.Tensor(X.T.copy())
    _check(ops.vmap(lambda a, b: a * b, in_axes=(1, 0))(ms.Tensor(X[:3]), y[:, :3]),
           (X[:3].T * Y[:, :3]))
    _check(ops.vmap(lambda a, b: a @ b, in_axes=(0, None))(x, y), X @ Y)
    _check(ops.vmap(lambda a, b: a @ b, in_axes=[-1, None])(z, y), X @ Y)
    nested = ops.vmap(lambda p, c: p[0] * p[1] + c, in_axes=((0, None), 1))
    _check(nested((x, ms.Tensor(X[0])), z), X * X[0] + X)
    _check(ops.vmap(lambda a, k: a * k, in_axes=(0, None))(X, 3.0), X * 3)  # numpy, static


def test_out_axes_move_keep_and_broadcast(mode):
    x = ms.Tensor(X)
    _check(ops.vmap(lambda r: r * 2, out_axes=-1)(x), (X * 2).T)
    first, const = ops.vmap(lambda r, c: (r + c, c * 2), in_axes=(0, None),
                            out_axes=(1, None))(x, ms.Tensor(Y[:, 0]))
    _check(first, (X + Y[:, 0]).T)
    _check(const, Y[:, 0] * 2)
    a, (b, c) = ops.vmap(lambda r: (r, (r.sum(), ops.ones((2,), ms.float64))),
                         out_axes=(0, (0, 1)))(x)
    _check(a, X)
    _check(b, X.sum(1))
    _check(c, np.ones((2, 4)))  # unmapped, broadcast along the batch at axis 1
    _check(ops.vmap(lambda r: r + 1, out_axes=(1,))(x), (X + 1).T)


@pytest.mark.parametrize("call, error, message", [
    (lambda: ops.vmap(lambda a: a, out_axes=None)(X), ValueError, "out_axes must be an int"),
    (lambda: ops.vmap(lambda a: a, out_axes=2)(X), ValueError, "out_axes 2 is out of range"),
    (lambda: ops.vmap(lambda a: a, in_axes="0"), ValueError, "in_axes must be an int"),
    (lambda: ops.vmap(lambda a, k: a * k)(X, 2.0), ValueError, "only Tensors can be mapped"),
    (lambda: ops.vmap(lambda a: a, in_axes=((0, 1),))(X), ValueError, "in_axes"),
    (lambda: ops.vmap(lambda a: "no")(X), TypeError, "returned a str"),
])
def test_axis_mistakes(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ------------------------------------------------------------------ composition

def test_nested_vmap_pairwise_distances(mode):
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((5, 3))
    dist = ops.vmap(ops.vmap(lambda p, q: ((p - q) ** 2).sum(), in_axes=(None, 0)),
                    in_axes=(0, None))
    _check(dist(ms.Tensor(a), ms.Tensor(b)), ((a[:, None] - b[None]) ** 2).sum(-1))
    # the inner map over axis 1 of its own argument, the outer one's output at axis 1
    inner = ops.vmap(lambda p, q: p * q, in_axes=(1, None), out_axes=0)
    both = ops.vmap(inner, in_axes=(0, 0), out_axes=1)
    m, v = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2,))
    _check(both(ms.Tensor(m), ms.Tensor(v)), (m * v[:, None, None]).transpose(2, 0, 1))


def _loss(r, w):
    """tanh(r @ w) squared and summed, for one row r."""
    return (ops.tanh(ops.matmul(ops.expand_dims(r, 0), w)) ** 2).sum()


def _np_loss(r, w):
    return (np.tanh(r @ w) ** 2).sum()


def test_grad_of_vmap_matches_finite_differences(mode):
    x, w = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 2))  # rows: axis 1 of x
    total = lambda a, b: ops.vmap(_loss, in_axes=(1, None))(a, b).sum()  # noqa: E731
    dx, dw = ms.grad(total, (0, 1))(ms.Tensor(x), ms.Tensor(w))
    np_total = lambda a, b: sum(_np_loss(a[:, i], b) for i in range(a.shape[1]))  # noqa: E731
    np.testing.assert_allclose(dx.asnumpy(), finite_differences(lambda a: np_total(a, w), x),
                               rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(dw.asnumpy(), finite_differences(lambda b: np_total(x, b), w),
                               rtol=1e-7, atol=1e-8)


def test_vmap_of_grad_gives_per_example_gradients(mode):
    x, w = RNG.standard_normal((5, 3)), RNG.standard_normal((3, 2))
    per_example = ops.vmap(ms.grad(_loss, (0, 1)), in_axes=(0, None))
    dx, dw = per_example(ms.Tensor(x), ms.Tensor(w))
    assert dx.shape == (5, 3) and dw.shape == (5, 3, 2)
    for i in range(5):
        np.testing.assert_allclose(dx.asnumpy()[i], finite_differences(
            lambda r: _np_loss(r, w), x[i]), rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(dw.asnumpy()[i], finite_differences(
            lambda b: _np_loss(x[i], b), w), rtol=1e-7, atol=1e-8)


def test_per_example_gradients_of_a_convolution():
    """vmap of grad through ms.conv: each element's weight gradient is a grouped
    conv_filter_grad (the rule's B * groups form)."""
    x = RNG.standard_normal((3,) + CONV_X)
    w = RNG.standard_normal(CONV_W)
    loss = lambda a, b: (call("ms.conv", a, b, **CONV) ** 2).sum()  # noqa: E731
    dw = ops.vmap(ms.grad(loss, 1), in_axes=(0, None))(ms.Tensor(x), ms.Tensor(w))
    for i in range(3):
        want = _np_conv_filter_grad(x[i], 2 * _np_conv(x[i], w))
        np.testing.assert_allclose(dw.asnumpy()[i], want, rtol=1e-10, atol=1e-10)


# ------------------------------------------------------------------ cells, Parameters, eager

def test_vmap_of_a_cell_reads_its_parameters(mode):
    ms.set_seed(1)
    net = nn.Dense(4, 3, dtype=ms.float64)
    x = RNG.standard_normal((2, 5, 4))  # 2 elements of 5 rows each
    w, b = net.weight.asnumpy(), net.bias.asnumpy()
    mapped = ops.vmap(net)
    _check(mapped(ms.Tensor(x)), x @ w.T + b)
    loss = lambda a: ops.tanh(mapped(a)).sum()  # noqa: E731
    _, (dw, db) = ms.value_and_grad(loss, None, net.trainable_params())(ms.Tensor(x))
    t = 1 - np.tanh(x @ w.T + b) ** 2
    _check(dw, np.einsum("nro,nri->oi", t, x))
    _check(db, t.sum((0, 1)))


def test_parameter_writes():
    """An unmapped write (a counter) is replayed once; a mapped one is an error naming
    ms.assign at the user's line."""
    count = ms.Parameter(np.array(0.0), name="count")

    def step(r):
        ops.assign(count, count + 1)
        return r * count
    out = ms.jit(ops.vmap(step))(ms.Tensor(X))
    _check(out, X)
    assert count.asnumpy() == 1.0
    with pytest.raises(MissingRuleError, match="ms.assign has no batching rule for vmap") as e:
        ms.jit(ops.vmap(lambda r: ops.assign(count, r.sum())))(ms.Tensor(X))  # mapped write
    assert f"test_vmap.py:{line_of(__file__, '# mapped write')}" in str(e.value)


def test_random_numbers_are_the_same_for_every_element():
    """MindSpore's documented vmap behaviour: draw them outside vmap to get different ones."""
    out = ms.jit(ops.vmap(lambda r: ops.dropout(r, 0.5)))(ms.Tensor(np.ones((4, 64))))
    rows = out.asnumpy()
    assert (rows == rows[0]).all() and 0 < (rows[0] == 0).sum() < 64


def test_closures_over_traced_and_concrete_tensors():
    w, c = ms.Tensor(Y), ms.Tensor(np.float64(2.5))
    f = ms.jit(lambda x, w: ops.vmap(lambda r: ops.matmul(ops.expand_dims(r, 0), w)[0] * c)(x))
    _check(f(ms.Tensor(X), w), X @ Y * 2.5)


def test_vmap_inside_a_loop_body_and_a_graph_mode_cell(mode):
    """The caller's trace may be a loop body's region (concrete Tensors become constants
    there) or a Cell's construct."""
    w = RNG.standard_normal((3, 3)) * 0.5

    def body(i, v):
        return ops.vmap(lambda r: ops.tanh(ops.matmul(ops.expand_dims(r, 0), ms.Tensor(w)))[0])(v)
    out = ms.jit(lambda v: ops.ForiLoop()(0, 3, body, v, unroll=False))(ms.Tensor(X))
    want = X
    for _ in range(3):
        want = np.tanh(want @ w)
    _check(out, want)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.dense = nn.Dense(3, 2, dtype=ms.float64)

        def construct(self, x):
            return ops.vmap(self.dense, in_axes=1, out_axes=1)(x)
    net, x = Net(), RNG.standard_normal((5, 4, 3))
    _check(net(ms.Tensor(x)), x @ net.dense.weight.asnumpy().T + net.dense.bias.asnumpy())


def test_eager_calls_compile_once_per_shape():
    mapped = ops.vmap(lambda r, w: ops.tanh(ops.matmul(ops.expand_dims(r, 0), w)),
                      in_axes=(0, None))
    before = dispatch.eager_compiles
    for _ in range(3):
        _check(mapped(ms.Tensor(X), ms.Tensor(Y)), np.tanh(X @ Y)[:, None])
    assert mapped.cache_info()["compiles"] == 1 and dispatch.eager_compiles == before
    mapped(ms.Tensor(X[:2]), ms.Tensor(Y))
    assert mapped.cache_info()["compiles"] == 2


def test_a_network_program_has_the_same_ops_for_any_batch():
    net = nn.SequentialCell([nn.Dense(4, 8), nn.ReLU(), nn.Dense(8, 3)])
    f = ms.jit(lambda x: ops.softmax(ops.vmap(net)(x), -1))
    counts = [_op_counts(f.lower(ms.Tensor(np.ones((b, 4), np.float32))).as_text("ms"))
              for b in (2, 64)]
    assert counts[0] == counts[1]
    per_slice = sum(v for k, v in counts[0].items() if k.startswith("ms.")
                    and k != "ms.constant")
    assert per_slice < 20, counts[0]


# ------------------------------------------------------------------ ops without a rule

def test_an_op_without_a_rule_is_an_error_naming_it(monkeypatch):
    monkeypatch.setattr(lookup("ms.tanh"), "batch", None)
    with pytest.raises(MissingRuleError, match="ms.tanh has no batching rule for vmap") as e:
        ms.jit(ops.vmap(lambda r: ops.tanh(r) + 1))(ms.Tensor(X))  # tanh has no rule now
    assert f"test_vmap.py:{line_of(__file__, '# tanh has no rule now')}" in str(e.value)
    # an unmapped operand needs no rule
    _check(ms.jit(ops.vmap(lambda r, c: r + ops.tanh(c), in_axes=(0, None)))(
        ms.Tensor(X), ms.Tensor(X[0])), X + np.tanh(X[0]))


def test_loops_cannot_be_mapped_yet():
    body = lambda i, v: v * 2  # noqa: E731
    with pytest.raises(MissingRuleError, match=r"scf\.\w+ has no batching rule for vmap"):
        ms.jit(ops.vmap(lambda r: ops.ForiLoop()(0, 3, body, r, unroll=False)))(ms.Tensor(X))
