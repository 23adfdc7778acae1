"""Pooling over the spatial dims of (N, C, *spatial) tensors, 1 to 3 of them: max_pool and
avg_pool, their gradients, and max_pool_gather (the gradient of max_pool_grad); each lowers to
one linalg.generic (plus a padded copy of the input for the forward ops, and a cast for the
half floats, which accumulate in float32).

Geometry, one entry per spatial dim: `kernel`, `stride`, `dilation` (max pooling), `pad_lo`
and `pad_hi` (explicit padding; the frontend computes "same"), and `ceil_mode`: the output
size rounds up, but the last window must start inside the input or the low padding
(MindSpore's and PyTorch's rule); windows running past the high padding read nothing there.
Padding never wins a maximum and adds nothing to a sum. An average divides by
`divisor_override` when it is positive, else by the number of its window's elements inside
the padded input (`count_include_pad`) or inside the input.

Forward ops read the padded input through the affine maps `o * stride + k * dilation` of a
reduction over the window, whose sizes come from an extra input: a tensor.empty of the kernel
shape indexed only by the window loops (the trick of linalg's named pooling ops). Gradients
are gathers over dx's positions h: the reduction runs over the windows that may cover h
(ceil(kernel / stride) candidates per dim when dilation is 1, else one per kernel offset) and
reads dy at computed positions (tensor.extract, clamped, masked by a select), so no scatter.

max_pool's gradient goes to the first maximal element of each window (row-major window order,
padding excluded, a NaN counting as maximal), as MindSpore's and PyTorch's kernels do: ties do
not double-count. The gather form needs no argmax tensor: an element equal to its window's
maximum checks, in an scf.for that runs only then, that no earlier element of the window is.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..lazy import arith, ir, linalg, scf, tensor

from .. import dtypes as dt
from .. import lowering
from ..builders import element_type, numpy_to_dense, tensor_type
from ..dtypes import TensorSpec
from ..grad import each
from ..registry import ShapeError, define

_GEOMETRY = {"kernel": "ints", "stride": "ints", "pad_lo": "ints", "pad_hi": "ints",
             "ceil_mode": "bool"}
_MAX_ATTRS = {**_GEOMETRY, "dilation": "ints"}
_AVG_ATTRS = {**_GEOMETRY, "count_include_pad": "bool", "divisor_override": "int"}


def D(i):
    """The affine dimension i (of an indexing map)."""
    return ir.AffineDimExpr.get(i)


# ------------------------------------------------------------------ geometry (no MLIR)

class Dim(NamedTuple):
    """One spatial dim of a pooling."""
    size: int   # of the input
    k: int
    s: int
    d: int      # dilation
    lo: int
    hi: int
    out: int

    @property
    def extent(self):
        return self.d * (self.k - 1) + 1

    @property
    def read_hi(self):
        """High padding the windows read: pad_hi, or more where ceil_mode's last window runs
        past it."""
        return max(self.hi, (self.out - 1) * self.s + self.extent - self.size - self.lo)

    @property
    def candidates(self):
        """How many windows may cover one input position (the gradients' reduction)."""
        return -(-self.k // self.s) if self.d == 1 else self.k


def _per_dim(attrs, name, shape):
    rank = len(shape) - 2
    if name == "dilation" and name not in attrs:  # (avg_pool has none)
        return (1,) * rank
    value = tuple(attrs[name])
    if len(value) != rank:
        raise ShapeError(f"{name} {value} must have one entry per spatial dim: {rank} for the "
                         f"input of shape {tuple(shape)}")
    low = 0 if name.startswith("pad") else 1
    if any(v < low for v in value):
        raise ShapeError(f"{name} {value} must be {'non-negative' if low == 0 else 'positive'}")
    return value


def _out_size(span, stride, start_bound, ceil_mode):
    """Windows along a dim whose padded input is `span` longer than the window extent."""
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= start_bound:  # that last window would start in the high padding
        out -= 1
    return out


def geometry(shape, attrs) -> list:
    """The Dims of pooling an input of `shape` (ShapeError for an impossible geometry)."""
    shape = tuple(shape)
    if len(shape) - 2 not in (1, 2, 3):
        raise ShapeError(f"expects an (N, C, *spatial) input with 1, 2 or 3 spatial dims, got "
                         f"shape {shape}")
    per = {n: _per_dim(attrs, n, shape) for n in ("kernel", "stride", "dilation", "pad_lo",
                                                  "pad_hi")}
    dims = []
    for i, size in enumerate(shape[2:]):
        k, s, d, lo, hi = (per[n][i] for n in ("kernel", "stride", "dilation", "pad_lo",
                                               "pad_hi"))
        extent = d * (k - 1) + 1
        if max(lo, hi) >= extent:  # (else a window could lie in the padding only)
            raise ShapeError(f"padding ({lo}, {hi}) of spatial dim {i} must be smaller than the "
                             f"kernel's extent {extent}")
        if extent > size + lo + hi:
            raise ShapeError(f"kernel {per['kernel']} (extent {extent} along spatial dim {i}) is "
                             f"larger than the padded input: {size} + {lo} + {hi} for the "
                             f"input of shape {shape}")
        out = _out_size(size + lo + hi - extent, s, size + lo, attrs["ceil_mode"])
        dims.append(Dim(size, k, s, d, lo, hi, out))
    return dims


def pooled_shape(shape, attrs) -> tuple:
    return tuple(shape[:2]) + tuple(d.out for d in geometry(shape, attrs))


def _check_divisor(attrs):
    if attrs["divisor_override"] < 0:
        raise ShapeError(f"divisor_override {attrs['divisor_override']} must be positive (or 0: "
                         "none)")


def _pool_infer(ins, attrs):
    x = ins[0]
    if "divisor_override" in attrs:
        _check_divisor(attrs)
    return TensorSpec(pooled_shape(x.shape, attrs), x.dtype)


def _same_shape(what, spec, shape):
    if spec.shape != tuple(shape):
        raise ShapeError(f"{what} has shape {spec.shape}, but pooling gives {tuple(shape)}")


def _max_grad_infer(ins, attrs):
    x, y, dy = ins
    pooled = pooled_shape(x.shape, attrs)
    _same_shape("y", y, pooled)
    _same_shape("dy", dy, pooled)
    return TensorSpec(x.shape, dy.dtype)


def _gather_infer(ins, attrs):
    x, y, v = ins
    _same_shape("y", y, pooled_shape(x.shape, attrs))
    if v.shape != x.shape:
        raise ShapeError(f"v has shape {v.shape}, but it must have x's shape {x.shape}")
    return TensorSpec(y.shape, v.dtype)


def _avg_grad_infer(ins, attrs):
    dy, shape = ins[0], tuple(attrs["input_shape"])
    _check_divisor(attrs)
    _same_shape("dy", dy, pooled_shape(shape, attrs))
    return TensorSpec(shape, dy.dtype)


# ------------------------------------------------------------------ lowering helpers

def _c(value):
    return arith.constant(ir.IndexType.get(), value)


def _bit(value):
    return arith.constant(ir.IntegerType.get_signless(1), int(value))


def _cmp(pred, a, b):
    return arith.cmpi(getattr(arith.CmpIPredicate, pred), a, b)


def _all(first, *rest):
    for bit in rest:
        first = arith.andi(first, bit)
    return first


def _accumulator(d):
    return dt.float32 if d in dt.HALF_FLOATS else d


def _cast(value, out: TensorSpec, acc):
    """`value` (out's shape, accumulated in acc) in out's dtype."""
    if acc is out.dtype:
        return value
    return lowering.elementwise([value], [TensorSpec(out.shape, acc)], out,
                                lambda v: lowering.cast_scalar(v, acc, out.dtype))


def _lowest(dtype):
    """The padding value of a maximum: never above an element."""
    if dtype.is_float:
        return float("-inf")
    return 0 if dtype.kind == "uint" else -(1 << (dtype.bits - 1))


def _padded(x, spec, dims, value):
    """x inside a border of `value`: fill, then insert x (as strided_slice_grad does)."""
    lo, hi = [d.lo for d in dims], [d.read_hi for d in dims]
    if not any(lo) and not any(hi):
        return x
    shape = spec.shape[:2] + tuple(d.size + d.lo + d.read_hi for d in dims)
    return tensor.insert_slice(x, lowering.fill(TensorSpec(shape, spec.dtype), value), [], [],
                               [], [0, 0, *lo], list(spec.shape), [1] * spec.rank)


def _window_loops(padded, spec, dims, acc, init, combine, extras=()):
    """out[n, c, o...] = the fold, over the window offsets k, of
    combine(out, padded[n, c, o*s + k*d ...], *extras[o]) from `init`. Loops (n, c, o..., k...);
    the window's sizes come from a tensor.empty of the kernel shape read only by the k loops.
    `extras`: (1-D tensor, its dtype, spatial dim) read at that dim's output position."""
    r = len(dims)
    n_loops = 2 + 2 * r
    o, k = [D(2 + i) for i in range(r)], [D(2 + r + i) for i in range(r)]
    read = [D(0), D(1)] + [o[i] * d.s + k[i] * d.d for i, d in enumerate(dims)]
    window = tensor.empty([d.k for d in dims], element_type(spec.dtype, storage=True))
    out = TensorSpec(spec.shape[:2] + tuple(d.out for d in dims), acc)
    maps = ([lowering.affine_map(n_loops, read), lowering.affine_map(n_loops, k)]
            + [lowering.affine_map(n_loops, [o[i]]) for _, _, i in extras]
            + [lowering.affine_map(n_loops, [D(0), D(1)] + o)])
    iters = ["parallel"] * (2 + r) + ["reduction"] * r
    dtypes = [spec.dtype, spec.dtype] + [d for _, d, _ in extras] + [acc]
    return lowering.generic([padded, window] + [t for t, _, _ in extras],
                            [lowering.fill(out, init)], maps, iters,
                            lambda v, _w, *rest: combine(rest[-1], v, *rest[:-1]), dtypes)


def _over_inputs(shape, x_dtype, dims, acc, body, x=None):
    """dx[n, c, h...] = the sum over the candidate windows j of body(*(x[n, c, h...],), _, dx):
    loops (n, c, h..., j...), the candidates' counts given by a tensor.empty read only by the
    j loops."""
    r = len(dims)
    n_loops = 2 + 2 * r
    ident = lowering.affine_map(n_loops, [D(i) for i in range(2 + r)])
    cand = tensor.empty([d.candidates for d in dims], element_type(acc, storage=True))
    inputs, maps, dtypes = [cand], [lowering.affine_map(n_loops, [D(2 + r + i)
                                                                  for i in range(r)])], [acc]
    if x is not None:
        inputs, maps, dtypes = [x] + inputs, [ident] + maps, [x_dtype] + dtypes
    iters = ["parallel"] * (2 + r) + ["reduction"] * r
    return lowering.generic(inputs, [lowering.fill(TensorSpec(tuple(shape), acc), 0)],
                            maps + [ident], iters, body, dtypes + [acc])


def _loop_indices(dims):
    """(n, c), the spatial loops and the window loops of a pooling generic's body."""
    r = len(dims)
    idx = [linalg.IndexOp(i).result for i in range(2 + 2 * r)]
    return idx[:2], idx[2:2 + r], idx[2 + r:]


def _covering(dims, h, j):
    """Per spatial dim, the window o covering position h as its candidate j, and h's offset k
    in it (both clamped to 0 where there is none); and whether every dim has one (i1)."""
    os, ks, oks = [], [], []
    for d, hi, ji in zip(dims, h, j):
        t = arith.addi(hi, _c(d.lo))  # h in padded coordinates (>= 0)
        if d.d == 1:  # windows o = t // s - j, j < ceil(k / s): at most one too many
            o = arith.subi(arith.divui(t, _c(d.s)), ji)
            k = arith.subi(t, arith.muli(o, _c(d.s)))
            ok = _all(_cmp("sge", o, _c(0)), _cmp("slt", o, _c(d.out)), _cmp("slt", k, _c(d.k)))
        else:  # offset k = j: o * s = t - k * d, when that divides
            k = ji
            u = arith.subi(t, arith.muli(k, _c(d.d)))
            ok = _all(_cmp("sge", u, _c(0)), _cmp("eq", arith.remsi(u, _c(d.s)), _c(0)),
                      _cmp("slt", u, _c(d.out * d.s)))
            o = arith.divsi(u, _c(d.s))
        os.append(o), ks.append(k), oks.append(ok)
    ok = _all(*oks)
    return [arith.select(ok, v, _c(0)) for v in os], [arith.select(ok, v, _c(0)) for v in ks], ok


def _window_position(dims, o, k):
    """The input position of offset k in window o (clamped) and whether it is inside (i1)."""
    pos, inside = [], []
    for d, oi, ki in zip(dims, o, k):
        p = arith.subi(arith.addi(arith.muli(oi, _c(d.s)), arith.muli(ki, _c(d.d))), _c(d.lo))
        ok = arith.andi(_cmp("sge", p, _c(0)), _cmp("slt", p, _c(d.size)))
        pos.append(arith.select(ok, p, _c(0))), inside.append(ok)
    return pos, _all(*inside)


def _linear(k, dims):
    """Row-major position of the offsets k in the window."""
    lin = k[0]
    for d, ki in zip(dims[1:], k[1:]):
        lin = arith.addi(arith.muli(lin, _c(d.k)), ki)
    return lin


def _delinearize(q, dims):
    """The offsets of row-major window position q (the inverse of _linear)."""
    out = []
    for d in reversed(dims[1:]):
        out.append(arith.remui(q, _c(d.k)))
        q = arith.divui(q, _c(d.k))
    return [q] + out[::-1]


def _is_max(v, y):
    """v is its window's maximum y (a NaN is: the maximum of a window holding one is NaN)."""
    return arith.ori(arith.cmpf(arith.CmpFPredicate.OEQ, v, y),
                     arith.cmpf(arith.CmpFPredicate.UNO, v, v))


def _earlier_max(x, nc, o, klin, y, dims):
    """Whether an element of window o before row-major offset klin is maximal: a loop."""
    loop = scf.ForOp(_c(0), klin, _c(1), [_bit(False)])
    with ir.InsertionPoint(loop.body):
        q, found = loop.induction_variable, loop.inner_iter_args[0]
        pos, inside = _window_position(dims, o, _delinearize(q, dims))
        hit = arith.andi(inside, _is_max(tensor.extract(x, nc + pos), y))
        scf.YieldOp([arith.ori(found, hit)])
    return loop.results[0]


def _first_max(hit, x, nc, o, klin, y, dims):
    """hit (the element at offset klin of window o is maximal) and it is the window's first
    maximal element; the scan for earlier ones runs only for hits (scf.if)."""
    branch = scf.IfOp(hit, [ir.IntegerType.get_signless(1)], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp([arith.xori(_earlier_max(x, nc, o, klin, y, dims), _bit(True))])
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp([_bit(False)])
    return branch.results[0]


def _avg_scale(dims, attrs):
    """1 / each window's divisor, as a scalar times a vector per spatial dim whose windows
    count differently (None for the dims where all count the same)."""
    if attrs["divisor_override"]:
        return 1.0 / attrs["divisor_override"], [None] * len(dims)
    scale, vectors = 1.0, []
    for d in dims:
        low, high = (-d.lo, d.size + d.hi) if attrs["count_include_pad"] else (0, d.size)
        starts = np.arange(d.out) * d.s - d.lo
        # (at least 1: a ceil_mode window past asymmetric padding may count none; it sums 0)
        counts = np.maximum(np.minimum(starts + d.k, high) - np.maximum(starts, low), 1)
        if np.all(counts == counts[0]):
            scale /= float(counts[0])
            vectors.append(None)
        else:
            vectors.append(1.0 / counts)
    return scale, vectors


def _const_vector(values, dtype):
    spec = TensorSpec((len(values),), dtype)
    return arith.constant(tensor_type(spec, storage=True),
                          numpy_to_dense(np.asarray(values, dtype.np), dtype))


# ------------------------------------------------------------------ the ops

def _lower_max_pool(lc, x):
    spec = lc.ins[0]
    dims = geometry(spec.shape, lc.attrs)
    low = _lowest(spec.dtype)
    s = lowering.ScalarBuilder(spec.dtype)
    return _window_loops(_padded(x, spec, dims, low), spec, dims, spec.dtype, low,
                         lambda acc, v: s.maximum(acc, v))


def _lower_avg_pool(lc, x):
    spec = lc.ins[0]
    dims = geometry(spec.shape, lc.attrs)
    acc = _accumulator(spec.dtype)
    scale, vectors = _avg_scale(dims, lc.attrs)
    extras = [(_const_vector(v, acc), acc, i) for i, v in enumerate(vectors) if v is not None]
    s = lowering.ScalarBuilder(acc, reassoc=True)

    def combine(total, v, *weights):
        # each element is scaled by its window's 1 / divisor: one loop nest, no division pass
        w = s.const(scale)
        for wi in weights:
            w = s.mul(w, wi)
        return s.add(total, s.mul(lowering.cast_scalar(v, spec.dtype, acc), w))
    summed = _window_loops(_padded(x, spec, dims, 0), spec, dims, acc, 0, combine, extras)
    return _cast(summed, lc.out, acc)


def _lower_max_pool_grad(lc, x, y, dy):
    """dx[h] = the sum of dy[o] over the windows o whose first maximal element h is."""
    spec, out = lc.ins[0], lc.out
    dims = geometry(spec.shape, lc.attrs)
    acc = _accumulator(out.dtype)

    def body(xv, _cand, total):
        nc, h, j = _loop_indices(dims)
        o, k, ok = _covering(dims, h, j)
        ymax = tensor.extract(y, nc + o)
        first = _first_max(arith.andi(ok, _is_max(xv, ymax)), x, nc, o, _linear(k, dims), ymax,
                           dims)
        s = lowering.ScalarBuilder(acc)
        g = lowering.cast_scalar(tensor.extract(dy, nc + o), out.dtype, acc)
        return s.add(total, arith.select(first, g, s.const(0)))
    return _cast(_over_inputs(out.shape, spec.dtype, dims, acc, body, x=x), out, acc)


def _lower_avg_pool_grad(lc, dy):
    """dx[h] = the sum of dy[o] / divisor[o] over the windows o that cover h."""
    out = lc.out
    dims = geometry(out.shape, lc.attrs)
    acc = _accumulator(out.dtype)
    scale, vectors = _avg_scale(dims, lc.attrs)
    weights = [None if v is None else _const_vector(v, acc) for v in vectors]

    def body(_cand, total):
        nc, h, j = _loop_indices(dims)
        o, _, ok = _covering(dims, h, j)
        s = lowering.ScalarBuilder(acc)
        w = s.const(scale)
        for wi, oi in zip(weights, o):
            if wi is not None:
                w = s.mul(w, tensor.extract(wi, [oi]))
        g = lowering.cast_scalar(tensor.extract(dy, nc + o), out.dtype, acc)
        return s.add(total, arith.select(ok, s.mul(g, w), s.const(0)))
    return _cast(_over_inputs(out.shape, out.dtype, dims, acc, body), out, acc)


def _lower_max_pool_gather(lc, x, y, v):
    """out[o] = v at the first maximal element of window o of x (y = max_pool(x))."""
    spec, out = lc.ins[0], lc.out
    dims = geometry(spec.shape, lc.attrs)
    acc = _accumulator(out.dtype)
    r = len(dims)
    n_loops = 2 + 2 * r
    at_o = lowering.affine_map(n_loops, [D(i) for i in range(2 + r)])
    window = tensor.empty([d.k for d in dims], element_type(spec.dtype, storage=True))
    k_map = lowering.affine_map(n_loops, [D(2 + r + i) for i in range(r)])

    def body(ymax, _w, total):
        nc, o, k = _loop_indices(dims)
        pos, inside = _window_position(dims, o, k)
        hit = arith.andi(inside, _is_max(tensor.extract(x, nc + pos), ymax))
        first = _first_max(hit, x, nc, o, _linear(k, dims), ymax, dims)
        s = lowering.ScalarBuilder(acc)
        g = lowering.cast_scalar(tensor.extract(v, nc + pos), out.dtype, acc)
        return s.add(total, arith.select(first, g, s.const(0)))
    summed = lowering.generic([y, window], [lowering.fill(TensorSpec(out.shape, acc), 0)],
                              [at_o, k_map, at_o], ["parallel"] * (2 + r) + ["reduction"] * r,
                              body, [spec.dtype, spec.dtype, acc])
    return _cast(summed, out, acc)


def _geometry_of(attrs):
    return {k: v for k, v in attrs.items() if k != "input_shape"}


define("ms.max_pool", ["x"], _pool_infer, attrs=_MAX_ATTRS, signature=(None,),
       dtypes=dt.NUMBERS, lower=_lower_max_pool,
       grad=each(lambda g, d: g.emit("ms.max_pool_grad", g.x, g.out, d, **g.attrs)),
       doc="the maximum of each window over the spatial dims of (N, C, *spatial), 1 to 3 of "
           "them; padding never wins")

define("ms.avg_pool", ["x"], _pool_infer, attrs=_AVG_ATTRS, signature=(None,),
       dtypes=dt.FLOATS, lower=_lower_avg_pool,
       grad=each(lambda g, d: g.emit("ms.avg_pool_grad", d, input_shape=g.in_specs[0].shape,
                                     **g.attrs)),
       doc="the mean of each window over the spatial dims of (N, C, *spatial): the sum over "
           "divisor_override, or the count of window elements in the padded input "
           "(count_include_pad) or in the input")

define("ms.max_pool_grad", ["x", "y", "dy"], _max_grad_infer, attrs=_MAX_ATTRS,
       signature=("T", "T", "T"), dtypes=dt.FLOATS, lower=_lower_max_pool_grad,
       grad=each(None, None, lambda g, d: g.emit("ms.max_pool_gather", g.inputs[0],
                                                 g.inputs[1], d, **g.attrs)),
       structure_note="The gradient of max_pool (y = max_pool(x)), emitted by ms-autodiff.",
       doc="dy of each window of x added at its first maximal element (y = max_pool(x)): the "
           "gradient of max_pool")

define("ms.max_pool_gather", ["x", "y", "v"], _gather_infer, attrs=_MAX_ATTRS,
       signature=("T", "T", "T"), dtypes=dt.FLOATS, lower=_lower_max_pool_gather,
       grad=each(None, None, lambda g, d: g.emit("ms.max_pool_grad", g.inputs[0], g.inputs[1],
                                                 d, **g.attrs)),
       structure_note="The gradient of max_pool_grad with respect to dy, emitted by "
                      "ms-autodiff.",
       doc="v read at the first maximal element of each window of x (y = max_pool(x)): the "
           "gradient of max_pool_grad with respect to dy")

define("ms.avg_pool_grad", ["dy"], _avg_grad_infer, attrs={**_AVG_ATTRS, "input_shape": "ints"},
       signature=(None,), dtypes=dt.FLOATS, lower=_lower_avg_pool_grad,
       # linear in dy, and the transpose of avg_pool: its gradient is avg_pool
       grad=each(lambda g, d: g.emit("ms.avg_pool", d, **_geometry_of(g.attrs))),
       structure_note="The gradient of avg_pool, emitted by ms-autodiff: the input's shape is "
                      "an attribute.",
       doc="dy of each window spread evenly (by its divisor) over the window's elements: the "
           "gradient of avg_pool on an input of input_shape")
