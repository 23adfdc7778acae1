"""Matrix products. matmul lowers to linalg.matmul (the CPU backend tiles and vectorizes it);
batch_matmul to a linalg.generic contraction with numpy-broadcast batch dims."""
from ..lazy import ir, linalg

from .. import dtypes as dt
from .. import lowering
from .. import shape_rules as rules
from ..dtypes import TensorSpec
from ..grad import broadcasting, each
from ..registry import FusionRole, ShapeError, define

# An elementwise epilogue (bias, activation, scale) runs on the output tiles.
_CONTRACTION = FusionRole("matmul")

_MM_ATTRS = {"transpose_a": "bool", "transpose_b": "bool"}


def _mk(spec, transposed):
    m, k = spec.shape[-2:]
    return (k, m) if transposed else (m, k)


def _matmul_infer(ins, attrs):
    a, b = ins
    if a.rank != 2 or b.rank != 2:
        raise ShapeError(f"expects 2-D inputs, got shapes {a.shape} and {b.shape}")
    m, k = _mk(a, attrs.get("transpose_a", False))
    k2, n = _mk(b, attrs.get("transpose_b", False))
    if rules.same_size(k, k2, "the contracting dimensions of a matmul") is None:
        raise ShapeError(f"contracting dimensions differ: {a.shape} @ {b.shape} "
                         f"(transpose_a={attrs.get('transpose_a', False)}, "
                         f"transpose_b={attrs.get('transpose_b', False)})")
    return TensorSpec((m, n), rules.same_group_dtype(ins))


def _accumulator(d):
    return dt.float32 if d in dt.HALF_FLOATS else d


def _operand_maps(out_batch, a_batch, b_batch, ta, tb):
    """Indexing maps over (batch..., m, n, k) for A, B and C."""
    n = len(out_batch) + 3
    D = ir.AffineDimExpr.get
    zero = ir.AffineConstantExpr.get(0)
    nb = len(out_batch)

    def batch_exprs(shape):
        off = nb - len(shape)
        return [zero if s == 1 and out_batch[off + i] != 1 else D(off + i) for i, s in enumerate(shape)]
    m, nn, k = D(nb), D(nb + 1), D(nb + 2)
    a = batch_exprs(a_batch) + ([k, m] if ta else [m, k])
    b = batch_exprs(b_batch) + ([nn, k] if tb else [k, nn])
    c = [D(i) for i in range(nb)] + [m, nn]
    return [lowering.affine_map(n, e) for e in (a, b, c)]


def _lower_contraction(lc, a, b, named):
    sa, sb = lc.ins
    out = lc.out
    ta, tb = lc.attrs["transpose_a"], lc.attrs["transpose_b"]
    acc = _accumulator(out.dtype)
    out_batch = out.shape[:-2]
    maps = _operand_maps(out_batch, sa.shape[:-2], sb.shape[:-2], ta, tb)
    init = lowering.fill(TensorSpec(out.shape, acc), 0)
    if named:
        r = linalg.matmul(a, b, outs=[init], indexing_maps=maps)
    else:
        s = lowering.ScalarBuilder(acc, reassoc=True)
        iters = ["parallel"] * (len(out_batch) + 2) + ["reduction"]
        r = lowering.generic([a, b], [init], maps, iters,
                      lambda x, y, c: s.add(c, s.mul(lowering.cast_scalar(x, sa.dtype, acc),
                                                     lowering.cast_scalar(y, sb.dtype, acc))),
                      [sa.dtype, sb.dtype, acc])
    if acc is not out.dtype:
        r = lowering.elementwise([r], [TensorSpec(out.shape, acc)], out,
                          lambda v: lowering.cast_scalar(v, acc, out.dtype))
    return r


def _contraction_grads(name):
    """Cotangents of z = op(A) @ op(B) (op: transpose when the flag is set), each written as
    one more product of the same kind, so no explicit transpose is materialized:
        dA = dz B^T | dz B | B dz^T | B^T dz^T     for (ta, tb) = FF | FT | TF | TT
        dB = A^T dz | dz^T A | A dz | dz^T A^T"""
    def mm(g, a, b, ta, tb):
        return g.emit(name, a, b, transpose_a=ta, transpose_b=tb)

    def d_a(g, d):
        ta, tb = g.attrs["transpose_a"], g.attrs["transpose_b"]
        return mm(g, d, g.y, False, not tb) if not ta else mm(g, g.y, d, tb, True)

    def d_b(g, d):
        ta, tb = g.attrs["transpose_a"], g.attrs["transpose_b"]
        return mm(g, g.x, d, not ta, False) if not tb else mm(g, d, g.x, True, ta)
    return d_a, d_b


def _matmul_batch(b):
    """x mapped alone and not transposed: one matmul of the stacked rows, (B*m, k) @ y, which
    keeps the 2-D kernel; otherwise a batch_matmul of the batch-first operands (an unmapped
    one as a (1, r, c) view, broadcast over the batch)."""
    ta, tb = b.attrs["transpose_a"], b.attrs["transpose_b"]
    m, n = b.out_spec.shape
    if b.dims[1] is None and not ta:
        rows = b.reshape(b.front(0), (b.size * m, b.in_specs[0].shape[1]))
        out = b.emit("ms.matmul", rows, b.y, transpose_a=False, transpose_b=tb)
        return b.reshape(out, (b.size, m, n)), 0
    x, y = (b.front(i) if d is not None else b.reshape(b.inputs[i], (1,) + b.in_specs[i].shape)
            for i, d in enumerate(b.dims))
    return b.emit("ms.batch_matmul", x, y, transpose_a=ta, transpose_b=tb), 0


define("ms.matmul", ["x", "y"], _matmul_infer, attrs=_MM_ATTRS, signature=("T", "T"),
       dtypes=dt.NUMBERS, lower=lambda lc, a, b: _lower_contraction(lc, a, b, named=True),
       grad=each(*_contraction_grads("ms.matmul")), fusion=_CONTRACTION, batch=_matmul_batch,
       doc="2-D matrix product; float16 and bfloat16 accumulate in float32")


def _batch_matmul_infer(ins, attrs):
    a, b = ins
    if a.rank < 3 or b.rank < 3:
        raise ShapeError(f"expects inputs of rank >= 3, got shapes {a.shape} and {b.shape}")
    m, k = _mk(a, attrs.get("transpose_a", False))
    k2, n = _mk(b, attrs.get("transpose_b", False))
    if rules.same_size(k, k2, "the contracting dimensions of a batch_matmul") is None:
        raise ShapeError(f"contracting dimensions differ: {a.shape} @ {b.shape}")
    batch = rules.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return TensorSpec(batch + (m, n), rules.same_group_dtype(ins))


def _batch_matmul_batch(b):
    """The mapped operands batch-first with size-1 batch dims up to the result's batch rank;
    the op's numpy broadcasting of batch dims does the rest (JAX's rule for dot_general's
    batch dims, in broadcasting form)."""
    rank = b.out_spec.rank
    x, y = (b.aligned(i, rank) for i in range(2))
    return b.emit("ms.batch_matmul", x, y, **b.attrs), 0


define("ms.batch_matmul", ["x", "y"], _batch_matmul_infer, attrs=_MM_ATTRS,
       signature=("T", "T"), dtypes=dt.NUMBERS,
       lower=lambda lc, a, b: _lower_contraction(lc, a, b, named=False), fusion=_CONTRACTION,
       # the products have the broadcast batch dims; `broadcasting` sums them back
       grad=broadcasting(*_contraction_grads("ms.batch_matmul")), batch=_batch_matmul_batch,
       doc="batched matrix product; batch dims broadcast numpy-style")
