"""Ops that read or write at positions held in a tensor: gather, one_hot and
unsorted_segment_sum (gather's gradient).

Out-of-range positions read zeros (gather), select nothing (one_hot) and are dropped
(unsorted_segment_sum), as MindSpore's GPU kernels do, so no index is ever used unchecked.
"""
import numpy as np

from ..lazy import arith, ir, linalg, scf, tensor

from .. import dtypes as dt
from .. import lowering
from .. import shape_rules as rules
from ..dtypes import TensorSpec
from ..grad import each
from ..registry import DTypeError, ShapeError, define



def D(i):
    """The affine dimension i (of an indexing map)."""
    return ir.AffineDimExpr.get(i)


def _need(attrs, *names):
    if not rules.known(attrs, *names):
        raise ShapeError(f"{' and '.join(names)} must be a compile-time constant")


_INDEX_DTYPES = (dt.int32, dt.int64)


def _gather_infer(ins, attrs):
    _need(attrs, "axis")
    params, indices = ins
    if indices.dtype not in _INDEX_DTYPES:
        raise DTypeError(f"indices must be int32 or int64, got {indices.dtype.name}")
    axis = rules.normalize_axis(attrs["axis"], params.rank)
    return TensorSpec(params.shape[:axis] + indices.shape + params.shape[axis + 1:], params.dtype)


def _in_range(s: lowering.ScalarBuilder, i, bound):
    return arith.andi(s.cmp("ge", i, s.const(0)), s.cmp("lt", i, s.const(bound)))


def _lower_gather(lc, params, indices, *_):
    """out[..., i..., ...] = params[..., indices[i...], ...]; out-of-range indices give 0."""
    sp, si = lc.ins
    out = lc.out
    axis = rules.normalize_axis(lc.attrs["axis"], sp.rank)
    n = out.rank
    idx_map = lowering.affine_map(n, [D(axis + j) for j in range(si.rank)])
    index_t = ir.IndexType.get()
    bound = sp.shape[axis]

    def body(i, _out):
        s = lowering.ScalarBuilder(si.dtype)
        ok = _in_range(s, i, bound)
        safe = arith.select(ok, i, s.const(0))
        coords = [linalg.IndexOp(d).result for d in range(axis)]
        coords.append(arith.index_cast(index_t, safe))
        coords += [linalg.IndexOp(axis + si.rank + j).result for j in range(sp.rank - axis - 1)]
        v = lowering.to_compute(tensor.extract(params, coords), sp.dtype)
        return arith.select(ok, v, lowering.ScalarBuilder(sp.dtype).const(0))
    return lowering.generic([indices], [lowering.empty(out)], [idx_map, lowering.identity_map(n)], ["parallel"] * n,
                     body, [si.dtype, out.dtype])


def _gather_grad(g, d):
    """Scatter-add of the cotangent back to the gathered positions: with d viewed as
    (pre, n, post), dparams[:, p, :] = sum of d[:, k, :] over k with indices[k] == p. Summed
    along the leading axis by unsorted_segment_sum, so axis != 0 moves n to the front and back.
    Out-of-range indices are dropped, as the forward reads zeros there."""
    params, indices = g.in_specs
    axis = rules.normalize_axis(g.attrs["axis"], params.rank)
    depth, n = params.shape[axis], indices.size
    pre, post = rules.prod(params.shape[:axis]), rules.prod(params.shape[axis + 1:])
    ids = g.reshape(g.y, (n,))
    if pre == 1:
        rows = g.emit("ms.unsorted_segment_sum", g.reshape(d, (n, post)), ids,
                      num_segments=depth)
        return g.reshape(rows, params.shape)
    front = g.emit("ms.transpose", g.reshape(d, (pre, n, post)), perm=(1, 0, 2))
    rows = g.emit("ms.unsorted_segment_sum", front, ids, num_segments=depth)
    return g.reshape(g.emit("ms.transpose", rows, perm=(1, 0, 2)), params.shape)


def offset_indices(b, ids, n):
    """Batch-first indices `ids` into the batch-stacked rows of a mapped operand (B*n rows):
    element b's in-range indices moved by b * n, the others -1 (still out of range, so still
    reading zeros / dropped)."""
    spec = b.spec(ids)
    dtype = spec.dtype
    steps = (np.arange(b.size) * n).reshape((b.size,) + (1,) * (spec.rank - 1))
    inside = b.emit("ms.logical_and", b.emit("ms.greater_equal", ids, b.const(0, dtype)),
                    b.emit("ms.less", ids, b.const(n, dtype)))
    return b.emit("ms.select", inside, b.emit("ms.add", ids, b.const(steps, dtype)),
                  b.const(-1, dtype))


def _gather_batch(b):
    """params mapped: gathered past the batch dim. indices mapped: their batch dim lands
    where the indices go (at `axis`). Both: one gather of offset indices from the params
    with the batch and the gathered axis stacked, (B*n, rest...), then the result's batch
    dim first again."""
    params, indices = b.in_specs
    axis = rules.normalize_axis(b.attrs["axis"], params.rank)
    if b.dims[1] is None:
        return b.emit("ms.gather", b.front(0), b.y, axis=axis + 1), 0
    ids = b.moved(b.y, b.dims[1], 0)
    if b.dims[0] is None:
        return b.emit("ms.gather", b.x, ids, axis=axis), axis
    n = params.shape[axis]
    rows = b.moved(b.front(0), axis + 1, 1)
    rows = b.reshape(rows, (b.size * n,) + params.shape[:axis] + params.shape[axis + 1:])
    out = b.emit("ms.gather", rows, offset_indices(b, ids, n), axis=0)  # (B, I, pre, post)
    k, rank = indices.rank, b.out_spec.rank + 1
    perm = ((0,) + tuple(range(1 + k, 1 + k + axis)) + tuple(range(1, 1 + k))
            + tuple(range(1 + k + axis, rank)))
    return (out if axis == 0 else b.emit("ms.transpose", out, perm=perm)), 0


define("ms.gather", ["params", "indices", ("axis", "optional")], _gather_infer,
       const_inputs={"axis": "int"}, signature=(None, None), lower=_lower_gather,
       grad=each(_gather_grad, None), batch=_gather_batch,
       canonicalize=lambda ins, a: {**a, "axis": rules.normalize_axis(a["axis"], ins[0].rank)},
       doc="take slices of params along axis at indices (MindSpore Gather)")


def _one_hot_infer(ins, attrs):
    _need(attrs, "depth")
    indices, on, off = ins
    if indices.dtype not in _INDEX_DTYPES:
        raise DTypeError(f"indices must be int32 or int64, got {indices.dtype.name}")
    if on.rank != 0 or off.rank != 0:
        raise ShapeError(f"on_value and off_value must be scalars, got shapes {on.shape} and "
                         f"{off.shape}")
    if attrs["depth"] < 0:
        raise ShapeError(f"depth {attrs['depth']} must be non-negative")
    axis = attrs["axis"]
    if not -1 <= axis <= indices.rank:
        raise ShapeError(f"axis {axis} is out of range for the rank-{indices.rank + 1} result")
    axis = indices.rank if axis == -1 else axis
    return TensorSpec(indices.shape[:axis] + (attrs["depth"],) + indices.shape[axis:],
                      rules.same_group_dtype(ins[1:]))


def _lower_one_hot(lc, indices, on, off):
    si = lc.ins[0]
    out = lc.out
    axis = si.rank if lc.attrs["axis"] == -1 else lc.attrs["axis"]
    n = out.rank
    idx_map = lowering.affine_map(n, [D(i) for i in range(n) if i != axis])
    scalar_map = lowering.affine_map(n, [])
    i64 = ir.IntegerType.get_signless(64)

    def body(i, on_v, off_v, _out):
        pos = arith.index_cast(i64, linalg.IndexOp(axis).result)
        hit = arith.cmpi(arith.CmpIPredicate.eq, lowering.cast_scalar(i, si.dtype, dt.int64), pos)
        return arith.select(hit, lowering.cast_scalar(on_v, lc.ins[1].dtype, out.dtype),
                            lowering.cast_scalar(off_v, lc.ins[2].dtype, out.dtype))
    return lowering.generic([indices, on, off], [lowering.empty(out)],
                     [idx_map, scalar_map, scalar_map, lowering.identity_map(n)], ["parallel"] * n, body,
                     [si.dtype, lc.ins[1].dtype, lc.ins[2].dtype, out.dtype])


def _one_hot_value_grad(on):
    """on_value receives the cotangent summed where the index hits, off_value elsewhere."""
    def rule(g, d):
        hit = g.emit("ms.one_hot", g.x, g.const(1, d), g.const(0, d), depth=g.attrs["depth"],
                     axis=g.attrs["axis"])
        total = g.emit("ms.reduce_sum", g.mul(d, hit), axis=(), keep_dims=False)
        return total if on else g.sub(g.emit("ms.reduce_sum", d, axis=(), keep_dims=False),
                                      total)
    return rule


def _one_hot_batch(b):
    """Mapped indices: batch dim first, the depth axis shifted past it (-1 stays last). A
    mapped on/off value (a scalar per element): the one-hot mask selects between them."""
    axis, depth = b.attrs["axis"], b.attrs["depth"]
    shifted = -1 if axis == -1 else axis + 1
    if b.dims[1] is None and b.dims[2] is None:
        return b.emit("ms.one_hot", b.front(0), b.inputs[1], b.inputs[2], depth=depth,
                      axis=shifted), 0
    one, zero = b.const(1, dt.int32), b.const(0, dt.int32)
    hot = b.bind("ms.one_hot", [b.x, one, zero], [b.dims[0], None, None], depth=depth,
                 axis=axis)
    mask = b.bind("ms.equal", [hot[0], one], [hot[1], None])
    return b.bind("ms.select", [mask[0], b.inputs[1], b.inputs[2]], [mask[1], *b.dims[1:]])


define("ms.one_hot", ["indices", ("depth", "optional"), "on_value", "off_value"],
       _one_hot_infer, attrs={"axis": "int"}, const_inputs={"depth": "int"},
       signature=(None, "T", "T"), lower=_lower_one_hot,
       grad=each(None, _one_hot_value_grad(True), _one_hot_value_grad(False)),
       batch=_one_hot_batch,
       doc="on_value where the position along `axis` equals the index, else off_value")


# ------------------------------------------------------------------ unsorted_segment_sum

def _segment_sum_infer(ins, attrs):
    _need(attrs, "num_segments")
    data, ids = ins
    if ids.dtype not in _INDEX_DTYPES:
        raise DTypeError(f"segment_ids must be int32 or int64, got {ids.dtype.name}")
    if data.dtype.is_bool:
        raise ShapeError("data must be a number tensor, got bool")
    if data.shape[:ids.rank] != ids.shape:
        raise ShapeError(f"segment_ids of shape {ids.shape} must match the leading dimensions "
                         f"of data {data.shape}")
    if attrs["num_segments"] < 0:
        raise ShapeError(f"num_segments {attrs['num_segments']} must be non-negative")
    return TensorSpec((attrs["num_segments"],) + data.shape[ids.rank:], data.dtype)


def _lower_segment_sum(lc, data, ids, *_):
    """On (n, width) rows: out[ids[k], :] += data[k, :] for in-range ids. `scatter=loops`
    (the CPU) writes each row where its id says, O(n * width); `scatter=reduction` (the GPU,
    whose launch plans have no host loops) is one linalg reduction, O(segments * n * width)
    as written, tagged so that the GPU mapping makes it an atomic scatter, O(n * width)."""
    sd, si = lc.ins
    out = lc.out
    n, segments = si.size, out.shape[0]
    width = rules.prod(sd.shape[si.rank:])
    rows = lowering.reshape(data, sd.shape, (n, width), sd.dtype)
    flat_ids = lowering.reshape(ids, si.shape, (n,), si.dtype)
    flat_out = TensorSpec((segments, width), out.dtype)
    scatter = _scatter_reduction if lc.options.get("scatter") == "reduction" else _scatter_loop
    summed = scatter(rows, flat_ids, flat_out, si.dtype)
    return lowering.reshape(summed, flat_out.shape, out.shape, out.dtype)


def _scatter_loop(rows, ids, out: TensorSpec, id_dtype):
    index = ir.IndexType.get()
    n, width = ir.RankedTensorType(rows.type).shape
    acc0 = lowering.fill(out, 0)
    c = lambda v: arith.constant(index, v)  # noqa: E731
    loop = scf.ForOp(c(0), c(n), c(1), [acc0])
    with ir.InsertionPoint(loop.body):
        k, acc = loop.induction_variable, loop.inner_iter_args[0]
        i = tensor.extract(ids, [k])
        branch = scf.IfOp(_in_range(lowering.ScalarBuilder(id_dtype), i, out.shape[0]), [acc.type],
                          has_else=True)
        with ir.InsertionPoint(branch.then_block):
            dyn = ir.ShapedType.get_dynamic_stride_or_offset()
            row_t = ir.RankedTensorType.get([1, width], ir.RankedTensorType(acc.type).element_type)
            at = arith.index_cast(index, i)
            src = tensor.extract_slice(row_t, rows, [k], [], [], [dyn, 0], [1, width], [1, 1])
            dst = tensor.extract_slice(row_t, acc, [at], [], [], [dyn, 0], [1, width], [1, 1])
            # dst as the generic's output (not an input): updated in place after bufferization
            total = lowering.generic([src], [dst], [lowering.identity_map(2)] * 2, ["parallel"] * 2,
                              lambda x, a: lowering.ScalarBuilder(out.dtype).add(a, x),
                              [out.dtype, out.dtype])
            scf.YieldOp([tensor.insert_slice(total, acc, [at], [], [], [dyn, 0], [1, width],
                                             [1, 1])])
        with ir.InsertionPoint(branch.else_block):
            scf.YieldOp([acc])
        scf.YieldOp([branch.results[0]])
    return loop.results[0]


# Marks the reduction form of a scatter-add: out[ids[k], p] += rows[k, p], with the loops
# (segment, p, k). A GPU maps it to one thread per (k, p) adding atomically (passes/gpu.py);
# elsewhere it runs as the reduction it is.
SCATTER_ADD_ATTR = "ms.scatter_add"


def _scatter_reduction(rows, ids, out: TensorSpec, id_dtype):
    maps = [lowering.affine_map(3, [D(2), D(1)]), lowering.affine_map(3, [D(2)]), lowering.affine_map(3, [D(0), D(1)])]
    i64 = ir.IntegerType.get_signless(64)

    def body(x, i, acc):
        s = lowering.ScalarBuilder(out.dtype)
        here = arith.index_cast(i64, linalg.IndexOp(0).result)
        hit = arith.cmpi(arith.CmpIPredicate.eq, lowering.cast_scalar(i, id_dtype, dt.int64), here)
        return s.add(acc, arith.select(hit, x, s.const(0)))
    summed = lowering.generic([rows, ids], [lowering.fill(out, 0)], maps, ["parallel", "parallel", "reduction"],
                       body, [out.dtype, id_dtype, out.dtype])
    summed.owner.attributes[SCATTER_ADD_ATTR] = ir.UnitAttr.get()
    return summed


def _segment_sum_batch(b):
    """data mapped alone: its batch dim moved just past the ids' dims, where the result has
    it at dim 1 (within each segment's row). ids mapped: one sum into B * num_segments
    segments, element b's ids offset by b * num_segments."""
    ids, segments = b.in_specs[1], b.attrs["num_segments"]
    if b.dims[1] is None:
        data = b.moved(b.x, b.dims[0], ids.rank)
        return b.emit("ms.unsorted_segment_sum", data, b.y, num_segments=segments), 1
    offset = offset_indices(b, b.moved(b.y, b.dims[1], 0), segments)
    out = b.emit("ms.unsorted_segment_sum", b.front(0), offset,
                 num_segments=b.size * segments)
    return b.reshape(out, (b.size,) + b.out_spec.shape), 0


define("ms.unsorted_segment_sum", ["data", "segment_ids", ("num_segments", "optional")],
       _segment_sum_infer, const_inputs={"num_segments": "int"}, signature=(None, None),
       lower=_lower_segment_sum,
       grad=each(lambda g, d: g.emit("ms.gather", d, g.y, axis=0), None),
       batch=_segment_sum_batch,
       doc="out[s, ...] = sum of data[k..., ...] over k with segment_ids[k...] == s; ids "
           "outside [0, num_segments) are dropped (MindSpore UnsortedSegmentSum)")
