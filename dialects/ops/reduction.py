"""Reductions and the normalizations built on them (softmax, log_softmax)."""
import numpy as np
from ..lazy import arith, ir, linalg, scf, tensor

from .. import batching
from .. import dtypes as dt
from .. import lowering
from .. import shape_rules as rules
from ..dtypes import TensorSpec
from ..grad import each, no_grad
from ..registry import FusionRole, ShapeError, define
from ..symdim import Dim

# Elementwise producers of the input fuse into the reduction loop (read once).
_REDUCTION = FusionRole("reduction", prologue=True)


def _reduce_infer(result_dtype):
    def rule(ins, attrs):
        x = ins[0]
        if not rules.known(attrs, "axis"):
            raise ShapeError("axis must be a compile-time constant")
        axes = rules.reduce_axes(x, attrs["axis"])
        return TensorSpec(rules.reduced_shape(x.shape, axes, attrs.get("keep_dims", False)),
                          result_dtype(x.dtype))
    return rule


def _canonical_axes(ins, attrs):
    axis = attrs["axis"]
    return {**attrs, "axis": rules.normalize_axes(axis, ins[0].rank) if axis else ()}


def _accumulator(d: dt.DType) -> dt.DType:
    """float16 and bfloat16 sums accumulate in float32."""
    return dt.float32 if d in dt.HALF_FLOATS else d


# Float sums over more than SUM_BLOCK * 2 elements are summed in blocks: one reduction sums
# each block of about SUM_BLOCK consecutive elements (of the reduced dims) into a partial sum,
# a second one sums the partials (itself blocked when they are many). A running float32 sum
# of n elements errs by up to ~n ulps (1e-5..1e-3 relative over a few million: each element
# is rounded to the ulp of the growing total, and elements below half of it are lost); in
# blocks, by ~SUM_BLOCK + n / SUM_BLOCK. The first reduction has a parallel loop over the
# blocks besides the kept dims (threads on the CPU, a GPU block per block of elements).
SUM_BLOCK = 4096
# A block of fewer elements than this (the reduced extent has no divisor near SUM_BLOCK, e.g.
# a prime): accumulate in float64 in one reduction instead.
MIN_SUM_BLOCK = 64


def _prod(sizes):
    n = 1
    for d in sizes:
        n *= d
    return n


def _merge_reduced_runs(x, spec, axes):
    """Adjacent reduced dims merged into one (a longer inner loop), when x has such a view."""
    groups, shape, new_axes, i = [], [], [], 0
    while i < spec.rank:
        j = i + 1
        if i in axes:
            while j < spec.rank and j in axes:
                j += 1
            new_axes.append(len(shape))
        groups.append((tuple(range(i, j)), (len(shape),)))
        shape.append(_prod(spec.shape[i:j]))
        i = j
    if len(shape) == spec.rank:
        return x, spec, axes
    merged = lowering.regroup(x, spec, groups, shape)
    if merged is None:
        return x, spec, axes
    return merged, TensorSpec(tuple(shape), spec.dtype), tuple(new_axes)


def _block_plan(spec, axes):
    """(split, inner axes): the trailing reduced dims making a block of at most SUM_BLOCK
    elements, and where the next one must be split to fill it, (dim, its inner factor);
    None for a block under MIN_SUM_BLOCK."""
    inner, size = [], 1
    for a in sorted(axes, reverse=True):
        d = spec.shape[a]
        if size * d <= SUM_BLOCK:
            inner.append(a)
            size *= d
            continue
        f = max(k for k in range(1, SUM_BLOCK // size + 1) if d % k == 0)
        if size * f < MIN_SUM_BLOCK:
            return None
        return ((a, f) if f > 1 else None), inner
    return None, inner


def _sum_reduce(x, spec, axes, acc, init, combine):
    """reduce() of `axes` into `acc` (float accumulators: blocked, see SUM_BLOCK). Returns the
    result without the reduced dims and its dtype (float64 where blocks do not fit)."""
    def plain(dtype):
        s = lowering.ScalarBuilder(dtype, reassoc=True)
        return lowering.reduce(x, spec, axes, dtype, init(dtype),
                               lambda a, e: combine(s, a, e)), dtype
    if any(isinstance(spec.shape[a], Dim) for a in axes):
        # a run-time count: no blocks to plan, so the sum is exact enough in float64
        return plain(dt.float64 if acc.is_float and acc.bits < 64 else acc)
    if not acc.is_float or _prod(spec.shape[a] for a in axes) <= 2 * SUM_BLOCK:
        return plain(acc)
    x, spec, axes = _merge_reduced_runs(x, spec, axes)
    plan = _block_plan(spec, axes)
    if plan is None:
        return plain(dt.float64 if acc.bits < 64 else acc)
    split, inner = plan
    if split is not None:  # dim a as (d / f, f): the f consecutive elements join the block
        a, f = split
        shape = spec.shape[:a] + (spec.shape[a] // f, f) + spec.shape[a + 1:]
        groups = [((i,), (i,) if i < a else (i + 1,)) for i in range(spec.rank)]
        groups[a] = ((a,), (a, a + 1))
        blocks = lowering.regroup(x, spec, groups, shape)
        if blocks is None:  # (a view of an Expr's leaves always exists for a split)
            return plain(acc)
        x, spec = blocks, TensorSpec(shape, spec.dtype)
        inner = [a + 1] + [i + 1 for i in inner]
        axes = tuple(i + 1 if i > a else i for i in axes) + (a + 1,)
    partial = _sum_reduce(x, spec, tuple(sorted(inner)), acc, init, combine)[0]
    kept = [i for i in range(spec.rank) if i not in inner]
    outer = tuple(kept.index(i) for i in sorted(axes) if i not in inner)
    part_spec = TensorSpec(tuple(spec.shape[i] for i in kept), acc)
    return _sum_reduce(partial, part_spec, outer, acc, init, combine)


def _lower_reduce(init, combine, finish=None, blocked=False):
    """Reduction lowering: reduce into the accumulator dtype (float sums in blocks when
    `blocked`, see SUM_BLOCK), optionally post-process (mean divides by the count), cast to
    the result dtype, re-insert kept dims."""
    def lower(lc, x):
        spec, out = lc.ins[0], lc.out
        axes = rules.reduce_axes(spec, lc.attrs["axis"])
        acc_dtype = _accumulator(out.dtype)
        if blocked:
            r, acc_dtype = _sum_reduce(x, spec, tuple(axes), acc_dtype, init, combine)
        else:
            s = lowering.ScalarBuilder(acc_dtype, reassoc=True)
            r = lowering.reduce(x, spec, axes, acc_dtype, init(acc_dtype),
                                lambda a, e: combine(s, a, e))
        flat = TensorSpec(rules.reduced_shape(spec.shape, axes, False), acc_dtype)
        count = 1
        for a in axes:
            count *= spec.shape[a]
        runtime_count = None
        if isinstance(count, Dim):  # computed before the loop that divides by it
            runtime_count = lowering.size_scalar(count, acc_dtype)
        if finish is not None or acc_dtype is not out.dtype:
            def body(v):
                sb = lowering.ScalarBuilder(acc_dtype)
                if finish is not None:
                    v = finish(sb, v, count if not isinstance(count, Dim) else runtime_count)
                return lowering.cast_scalar(v, acc_dtype, out.dtype)
            r = lowering.elementwise([r], [flat], TensorSpec(flat.shape, out.dtype), body)
        return lowering.reshape(r, flat.shape, out.shape, out.dtype)
    return lower


def _lowest(d):
    if d.is_float:
        return float("-inf")
    if d.is_bool:
        return False
    return int(np.iinfo(d.np).min)


def _highest(d):
    if d.is_float:
        return float("inf")
    if d.is_bool:
        return True
    return int(np.iinfo(d.np).max)


def _sum_dtype(d):
    return dt.int64 if d.is_bool else d


def _spread(g, v):
    """A reduced value (keep_dims or not) broadcast back over the input's shape."""
    return g.broadcast_to(g.keep_reduced_dims(v, g.reduction_axes()), g.in_specs[0].shape)


def _sum_grad(g, d):
    return _spread(g, d)


def _mean_grad(g, d):
    count = rules.prod(g.in_specs[0].shape[a] for a in g.reduction_axes())
    if isinstance(count, Dim):  # a run-time count (ms.dim_size)
        return g.div(_spread(g, d), g.dim_size(g.x, g.reduction_axes(), g.in_specs[0].dtype))
    return g.mul(_spread(g, d), g.const(1 / count, d))


def _extremum_grad(g, d):
    """MindSpore's rule: the gradient is shared equally by the elements equal to the extremum."""
    dtype = g.in_specs[0].dtype
    hit = g.cast(g.emit("ms.equal", g.x, _spread(g, g.out)), dtype)
    ties = g.emit("ms.reduce_sum", hit, axis=g.reduction_axes(), keep_dims=True)
    return g.mul(g.div(hit, ties), _spread(g, d))


define("ms.reduce_sum", ["x", ("axis", "optional")], _reduce_infer(_sum_dtype),
       attrs={"keep_dims": "bool"}, const_inputs={"axis": "ints"}, signature=(None,),
       canonicalize=_canonical_axes, fusion=_REDUCTION,
       lower=_lower_reduce(lambda d: 0, lambda s, a, e: s.add(a, e), blocked=True),
       grad=each(_sum_grad), batch=batching.reducing,
       doc="sum over `axis` (all axes when empty); bool sums to int64")

define("ms.reduce_mean", ["x", ("axis", "optional")], _reduce_infer(rules.float_result),
       attrs={"keep_dims": "bool"}, const_inputs={"axis": "ints"}, signature=(None,),
       canonicalize=_canonical_axes, fusion=_REDUCTION,
       lower=_lower_reduce(lambda d: 0, lambda s, a, e: s.add(a, e),
                           finish=lambda s, v, n: s.div(v, n if isinstance(n, ir.Value)
                                                    else s.const(n)), blocked=True),
       grad=each(_mean_grad), batch=batching.reducing, doc="mean over `axis`; integers average in float32")

define("ms.reduce_max", ["x", ("axis", "optional")], _reduce_infer(lambda d: d),
       attrs={"keep_dims": "bool"}, const_inputs={"axis": "ints"}, signature=(None,),
       canonicalize=_canonical_axes, fusion=_REDUCTION,
       lower=_lower_reduce(_lowest, lambda s, a, e: s.maximum(a, e)), grad=each(_extremum_grad),
       batch=batching.reducing)

define("ms.reduce_min", ["x", ("axis", "optional")], _reduce_infer(lambda d: d),
       attrs={"keep_dims": "bool"}, const_inputs={"axis": "ints"}, signature=(None,),
       canonicalize=_canonical_axes, fusion=_REDUCTION,
       lower=_lower_reduce(_highest, lambda s, a, e: s.minimum(a, e)), grad=each(_extremum_grad),
       batch=batching.reducing)


# ------------------------------------------------------------------ argmax / argmin

def _arg_infer(ins, attrs):
    x = ins[0]
    if x.rank == 0:
        raise ShapeError("needs a tensor of rank 1 or more")
    axis = rules.normalize_axis(attrs["axis"], x.rank)
    return TensorSpec(rules.reduced_shape(x.shape, (axis,), attrs["keep_dims"]), dt.int32)


def _lower_arg(order, start):
    """The first position along `axis` of the largest (smallest) value, NaN counting as the
    extreme as in numpy: one reduction carrying (value, index)."""
    def lower(lc, x):
        spec, out = lc.ins[0], lc.out
        axis = rules.normalize_axis(lc.attrs["axis"], spec.rank)
        flat = rules.reduced_shape(spec.shape, (axis,), False)
        best = lowering.fill(TensorSpec(flat, spec.dtype), start(spec.dtype))
        at = lowering.fill(TensorSpec(flat, dt.int32), 0)
        kept = lowering.affine_map(spec.rank, [ir.AffineDimExpr.get(i) for i in range(spec.rank)
                                        if i != axis])
        iters = ["reduction" if i == axis else "parallel" for i in range(spec.rank)]
        i32 = ir.IntegerType.get_signless(32)

        def body(e, b, k):
            s = lowering.ScalarBuilder(spec.dtype)
            take = s.cmp(order, e, b)
            if spec.dtype.is_float:  # a first NaN wins and stays
                nan_e = arith.cmpf(arith.CmpFPredicate.UNO, e, e)
                b_ordered = arith.cmpf(arith.CmpFPredicate.ORD, b, b)
                take = arith.ori(take, arith.andi(nan_e, b_ordered))
            here = arith.index_cast(i32, linalg.IndexOp(axis).result)
            return [arith.select(take, e, b), arith.select(take, here, k)]
        _, index = lowering.generic([x], [best, at], [lowering.identity_map(spec.rank), kept, kept], iters,
                             body, [spec.dtype, spec.dtype, dt.int32])
        return lowering.reshape(index, flat, out.shape, dt.int32)
    return lower


define("ms.argmax", ["x"], _arg_infer, attrs={"axis": "int", "keep_dims": "bool"},
       dtypes=dt.NUMBERS, signature=(None,), lower=_lower_arg("gt", _lowest), grad=no_grad,
       batch=batching.along_axis,
       doc="int32 index of the first largest element along `axis` (MindSpore Argmax)")

define("ms.argmin", ["x"], _arg_infer, attrs={"axis": "int", "keep_dims": "bool"},
       dtypes=dt.NUMBERS, signature=(None,), lower=_lower_arg("lt", _highest), grad=no_grad,
       batch=batching.along_axis,
       doc="int32 index of the first smallest element along `axis` (MindSpore Argmin)")


# ------------------------------------------------------------------ softmax family

def _softmax_infer(ins, attrs):
    x = ins[0]
    rules.normalize_axis(attrs["axis"], x.rank)
    return TensorSpec(x.shape, rules.float_result(x.dtype))


def _lower_softmax(log):
    """max-subtracted softmax along one axis, computed in float32 for float16/bfloat16 inputs: max,
    sum of exp(x - max), then exp(x - max) * (1 / sum) (or x - max - log(sum)). As tensors the
    exponential is recomputed rather than stored: the three loops only read x, and no element
    is divided. On the CPU the loops run per tile of rows (passes/cpu_rows.py, x read from
    cache after the first loop) and the summing loop stores the exponentials into the output,
    which the last loop then scales (passes/cpu_terms.py)."""
    def lower(lc, x):
        spec, out = lc.ins[0], lc.out
        axis = rules.normalize_axis(lc.attrs["axis"], spec.rank)
        cd = _accumulator(out.dtype)
        rank = spec.rank
        ident = lowering.identity_map(rank)
        drop = lowering.affine_map(rank, [ir.AffineDimExpr.get(i) for i in range(rank) if i != axis])
        red_spec = TensorSpec(tuple(d for i, d in enumerate(spec.shape) if i != axis), cd)
        s = lowering.ScalarBuilder(cd, reassoc=True)
        # The maximum only shifts the exponent: a NaN it skips (maxnum) still makes its row's
        # sum, and so the whole row, NaN, as numpy's. maxnum is cheaper than the
        # NaN-propagating maximum on the CPU (~3% of a softmax).
        mx = lowering.reduce(x, spec, (axis,), cd, float("-inf"), lambda a, e: arith.maxnumf(a, e))
        iters = ["parallel"] * rank
        red_iters = ["reduction" if i == axis else "parallel" for i in range(rank)]

        def shifted(e, m):
            return s.sub(lowering.cast_scalar(e, spec.dtype, cd), m)
        total = lowering.generic([x, mx], [lowering.fill(red_spec, 0)], [ident, drop, drop], red_iters,
                          lambda v, m, acc: s.add(acc, s.exp(shifted(v, m))), [spec.dtype, cd, cd])
        if log:
            scale = lowering.elementwise([total], [red_spec], red_spec, lambda t: s.log(t))
            finish = lambda v, m, r: s.sub(shifted(v, m), r)  # noqa: E731
        else:
            scale = lowering.elementwise([total], [red_spec], red_spec, lambda t: s.div(s.const(1), t))
            finish = lambda v, m, r: s.mul(s.exp(shifted(v, m)), r)  # noqa: E731
        return lowering.generic([x, mx, scale], [lowering.empty(out)], [ident, drop, drop, ident], iters,
                         lambda v, m, r, _o: lowering.cast_scalar(finish(v, m, r), cd, out.dtype),
                         [spec.dtype, cd, cd, out.dtype])
    return lower


def _softmax_grad(g, d):
    """dx = y * (d - sum(d * y)) along the axis, y the softmax (re-used)."""
    axis = (rules.normalize_axis(g.attrs["axis"], g.in_specs[0].rank),)
    dot = g.emit("ms.reduce_sum", g.mul(d, g.out), axis=axis, keep_dims=True)
    return g.mul(g.out, g.sub(d, dot))


def _log_softmax_grad(g, d):
    """dx = d - exp(y) * sum(d) along the axis, y the log-softmax (re-used)."""
    axis = (rules.normalize_axis(g.attrs["axis"], g.in_specs[0].rank),)
    total = g.emit("ms.reduce_sum", d, axis=axis, keep_dims=True)
    return g.sub(d, g.mul(g.emit("ms.exp", g.out), total))


# The lowering reads x in three loops (max, exp-sum, normalize).
_SOFTMAX = FusionRole("reduction", prologue=True, input_passes=3)

define("ms.softmax", ["x"], _softmax_infer, attrs={"axis": "int"}, signature=(None,),
       dtypes=dt.FLOATS, lower=_lower_softmax(log=False), grad=each(_softmax_grad),
       batch=batching.along_axis,
       fusion=_SOFTMAX,
       doc="exp(x - max) / sum(exp(x - max)) along `axis`")

define("ms.log_softmax", ["x"], _softmax_infer, attrs={"axis": "int"}, signature=(None,),
       dtypes=dt.FLOATS, lower=_lower_softmax(log=True), grad=each(_log_softmax_grad),
       batch=batching.along_axis,
       fusion=_SOFTMAX,
       doc="x - max - log(sum(exp(x - max))) along `axis`")


# ------------------------------------------------------------------ reduce_prod

def _prod_grad(g, d):
    """d prod / d x_i = the product of the other elements, exact with zeros (prod / x_i is
    not): with z zeros along the axes, it is prod / x_i where z == 0, the product of the
    non-zero elements at the one zero where z == 1, and 0 otherwise. (Its own derivative is
    exact away from zeros only: the count of zeros is taken as locally constant.)"""
    x, axes = g.x, g.reduction_axes()
    dtype = g.in_specs[0].dtype
    zero, one = g.const(0, x), g.const(1, x)
    is_zero = g.emit("ms.equal", x, zero)
    zeros = _spread(g, g.emit("ms.reduce_sum", g.cast(is_zero, dtype), axis=axes,
                              keep_dims=True))
    nonzero = g.select(is_zero, g.emit("ms.ones_like", x), x)
    rest = _spread(g, g.emit("ms.reduce_prod", nonzero, axis=axes, keep_dims=True))
    none = g.div(rest, nonzero)  # where no element is zero: prod / x_i
    one_zero = g.select(is_zero, rest, g.zeros_like(x))
    others = g.select(g.emit("ms.equal", zeros, zero), none,
                      g.select(g.emit("ms.equal", zeros, one), one_zero, g.zeros_like(x)))
    return g.mul(others, _spread(g, d))


define("ms.reduce_prod", ["x", ("axis", "optional")], _reduce_infer(_sum_dtype),
       attrs={"keep_dims": "bool"}, const_inputs={"axis": "ints"}, signature=(None,),
       canonicalize=_canonical_axes, fusion=_REDUCTION, dtypes=dt.NUMBERS,
       lower=_lower_reduce(lambda d: 1, lambda s, a, e: s.mul(a, e)), grad=each(_prod_grad),
       batch=batching.reducing,
       doc="product over `axis` (all axes when empty); float16/bfloat16 multiply in float32 "
           "(MindSpore ReduceProd)")


# ------------------------------------------------------------------ cumsum

def _cumsum_infer(ins, attrs):
    x = ins[0]
    if x.rank == 0:
        raise ShapeError("needs a tensor of rank 1 or more")
    if not rules.known(attrs, "axis"):
        raise ShapeError("axis must be a compile-time constant")
    rules.normalize_axis(attrs["axis"], x.rank)
    return TensorSpec(x.shape, x.dtype)


def _lower_cumsum(lc, x, *_):
    """Along `axis` (exclusive: the sum before each position; reverse: from the end). Where
    host loops are allowed (`scatter=loops`, the CPU) an scf.for over the axis carries the
    running sum of one slice, O(n); on CUDA (`scatter=reduction`: straight-line host code) one
    masked reduction, each output summing the positions before it, O(n^2) per line but one
    parallel kernel."""
    spec = lc.ins[0]
    axis = rules.normalize_axis(lc.attrs["axis"], spec.rank)
    exclusive, reverse = lc.attrs["exclusive"], lc.attrs["reverse"]
    if lc.options.get("scatter") == "reduction":
        return _cumsum_reduction(x, spec, axis, exclusive, reverse)
    return _cumsum_loop(x, spec, axis, exclusive, reverse)


def _cumsum_loop(x, spec, axis, exclusive, reverse):
    from ..builders import tensor_type
    index = ir.IndexType.get()
    n = spec.shape[axis]
    part = TensorSpec(spec.shape[:axis] + (1,) + spec.shape[axis + 1:], spec.dtype)
    part_t = tensor_type(part, storage=True)
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    offsets = [dyn if i == axis else 0 for i in range(spec.rank)]
    sizes, ones = list(part.shape), [1] * spec.rank
    c = lambda v: arith.constant(index, v)  # noqa: E731
    loop = scf.ForOp(c(0), c(n), c(1), [lowering.empty(spec), lowering.fill(part, 0)])
    with ir.InsertionPoint(loop.body):
        k = loop.induction_variable
        at = arith.subi(c(n - 1), k) if reverse else k
        out, running = loop.inner_iter_args
        here = tensor.extract_slice(part_t, x, [at], [], [], offsets, sizes, ones)
        if exclusive:
            out = tensor.insert_slice(running, out, [at], [], [], offsets, sizes, ones)
        # running as the generic's output: updated in place (a loop-carried buffer)
        ident = lowering.identity_map(spec.rank)
        running = lowering.generic([here], [running], [ident, ident], ["parallel"] * spec.rank,
                                   lambda e, a: lowering.ScalarBuilder(spec.dtype).add(a, e),
                                   [spec.dtype, spec.dtype])
        if not exclusive:
            out = tensor.insert_slice(running, out, [at], [], [], offsets, sizes, ones)
        scf.YieldOp([out, running])
    return loop.results[0]


def _cumsum_reduction(x, spec, axis, exclusive, reverse):
    """out[..., i, ...] = sum over j of x[..., j, ...] where j is before i (or at it)."""
    rank = spec.rank
    dims = [ir.AffineDimExpr.get(i) for i in range(rank + 1)]  # the last loop is j
    read = lowering.affine_map(rank + 1, [dims[rank] if i == axis else dims[i]
                                          for i in range(rank)])
    write = lowering.affine_map(rank + 1, dims[:rank])
    pred = {(False, False): "ule", (True, False): "ult", (False, True): "uge",
            (True, True): "ugt"}[(exclusive, reverse)]

    def body(e, acc):
        s = lowering.ScalarBuilder(spec.dtype)
        take = arith.cmpi(getattr(arith.CmpIPredicate, pred), linalg.IndexOp(rank).result,
                          linalg.IndexOp(axis).result)
        return s.add(acc, arith.select(take, e, s.const(0)))
    return lowering.generic([x], [lowering.fill(spec, 0)], [read, write],
                            ["parallel"] * rank + ["reduction"], body, [spec.dtype, spec.dtype])


define("ms.cumsum", ["x", ("axis", "optional")], _cumsum_infer,
       attrs={"exclusive": "bool", "reverse": "bool"}, const_inputs={"axis": "int"},
       signature=(None,), dtypes=dt.NUMBERS, lower=_lower_cumsum,
       canonicalize=lambda ins, a: {**a, "axis": rules.normalize_axis(a["axis"], ins[0].rank)},
       # the adjoint of a running sum is the running sum the other way
       grad=each(lambda g, d: g.emit("ms.cumsum", d, axis=g.attrs["axis"],
                                     exclusive=g.attrs["exclusive"],
                                     reverse=not g.attrs["reverse"])),
       batch=batching.along_axis,
       doc="running sum along `axis`; exclusive: of the elements before; reverse: from the "
           "end (MindSpore CumSum)")
