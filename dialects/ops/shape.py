"""Ops that move data without arithmetic: reshape, transpose, broadcast, concat, tile, slicing.

Their shape/axis/perm/... arguments are const inputs: operands from ms.constant before
ms-const-input-to-attr, attributes after it. Their gradients move the cotangent back the other
way (reshape back, inverse permutation, sum over broadcast or tiled copies, scatter into zeros).
"""
from ..lazy import ir, linalg, tensor

from .. import batching
from .. import lowering
from .. import shape_rules as rules
from ..dtypes import TensorSpec
from ..grad import broadcasting, each, no_grad
from ..builders import tensor_type
from ..registry import ShapeError, define
from ..symdim import (Dim, ceil_div, dim_max, dim_min, exact_quotient, floor_div,
                      has_dynamic, unify)



def D(i):
    """The affine dimension i (of an indexing map)."""
    return ir.AffineDimExpr.get(i)


def _need(attrs, *names):
    if not rules.known(attrs, *names):
        raise ShapeError(f"{' and '.join(names)} must be a compile-time constant")


# ------------------------------------------------------------------ reshape

def resolve_shape(in_shape, shape):
    """MindSpore/numpy reshape target; at most one -1, inferred from the element count. A
    dynamic count that a static rest may not divide (? rows into (2, -1): an axis split in
    equal parts) is divided when the code runs, after a check that it divides."""
    size = rules.prod(in_shape)
    if sum(d == -1 for d in shape) > 1 or any(d < -1 for d in shape):
        raise ShapeError(f"shape {tuple(shape)} may hold one -1 and otherwise sizes >= 0")
    known = rules.prod(d for d in shape if d != -1)
    inferred = (exact_quotient(size, known) if -1 in shape and (isinstance(known, Dim) or known)
                else None)
    checked = inferred is None and -1 in shape and isinstance(size, Dim) and \
        not isinstance(known, Dim) and known > 0
    if checked:
        inferred = floor_div(size, known)
        unify(known * inferred, size, f"the element count of 'ms.reshape' to {tuple(shape)} "
                                      f"and {known} times its -1")
    if inferred is not None:
        shape = tuple(inferred if d == -1 else d for d in shape)
    if -1 in shape or not checked and rules.prod(shape) != size:
        raise ShapeError(f"cannot reshape {tuple(in_shape)} ({size} elements) into {tuple(shape)}")
    return tuple(shape)


def _reshape_infer(ins, attrs):
    _need(attrs, "shape")
    return TensorSpec(resolve_shape(ins[0].shape, attrs["shape"]), ins[0].dtype)


def _lower_reshape(lc, x, *_):
    return lowering.reshape(x, lc.ins[0].shape, lc.out.shape, lc.out.dtype)


def _reshape_back(g, d):
    return g.reshape(d, g.in_specs[0].shape)


define("ms.reshape", ["x", ("shape", "optional")], _reshape_infer,
       const_inputs={"shape": "ints"}, signature=(None,), lower=_lower_reshape,
       grad=each(_reshape_back), batch=batching.reshaping,
       canonicalize=lambda ins, a: {**a, "shape": rules.shape_attr(_reshape_infer(ins, a).shape)},
       doc="new shape with the same elements; one -1 is inferred")


# ------------------------------------------------------------------ transpose

def _transpose_infer(ins, attrs):
    _need(attrs, "perm")
    x, perm = ins[0], _perm(ins, attrs)
    return TensorSpec(tuple(x.shape[p] for p in perm), x.dtype)


def _perm(ins, attrs):
    rank, perm = ins[0].rank, tuple(attrs["perm"])
    norm = tuple(p % rank if -rank <= p < rank else p for p in perm) if rank else perm
    if sorted(norm) != list(range(rank)):
        raise ShapeError(f"perm {perm} is not a permutation of the {rank} axes")
    return norm


def _lower_transpose(lc, x, *_):
    perm = list(_perm(lc.ins, lc.attrs))
    return linalg.transpose(x, outs=[lowering.empty(lc.out)], permutation=perm).results[0]


def _transpose_grad(g, d):
    perm = _perm(g.in_specs, g.attrs)
    inverse = tuple(sorted(range(len(perm)), key=lambda i: perm[i]))
    return g.emit("ms.transpose", d, perm=inverse)


def _transpose_batch(b):
    """The batch dim first and kept there; the traced axes permuted after it."""
    perm = _perm(b.in_specs, b.attrs)
    return b.emit("ms.transpose", b.front(0), perm=(0,) + tuple(p + 1 for p in perm)), 0


define("ms.transpose", ["x", ("perm", "optional")], _transpose_infer,
       const_inputs={"perm": "ints"}, signature=(None,), lower=_lower_transpose,
       grad=each(_transpose_grad), batch=_transpose_batch,
       canonicalize=lambda ins, a: {**a, "perm": _perm(ins, a)})


# ------------------------------------------------------------------ broadcast_to

def _broadcast_infer(ins, attrs):
    _need(attrs, "shape")
    x, shape = ins[0], tuple(attrs["shape"])
    if len(shape) < x.rank:
        raise ShapeError(f"cannot broadcast {x.shape} to the lower-rank shape {shape}")
    off = len(shape) - x.rank
    out = list(shape)
    for i, d in enumerate(x.shape):
        t = shape[off + i]
        if t == -1:
            out[off + i] = d
        elif d != t and d != 1:
            raise ShapeError(f"cannot broadcast {x.shape} to {shape}")
    if any(d < 0 for d in out):
        raise ShapeError(f"shape {shape} has a negative dimension")
    return TensorSpec(tuple(out), x.dtype)


def _broadcast_batch(b):
    """Batch dim first, size-1 dims after it up to the target rank, then the target shape."""
    shape = b.out_spec.shape
    return b.emit("ms.broadcast_to", b.aligned(0, len(shape)), shape=(b.size,) + shape), 0


define("ms.broadcast_to", ["x", ("shape", "optional")], _broadcast_infer,
       const_inputs={"shape": "ints"}, signature=(None,),
       canonicalize=lambda ins, a: {**a, "shape": _broadcast_infer(ins, a).shape},
       lower=lambda lc, x, *_: lowering.elementwise([x], lc.ins, lc.out, lambda v: v),
       # The identity on each element, read through numpy broadcasting: so ms-fuse treats
       # it as a (free) elementwise op and a fused loop reads x in place of a broadcast copy.
       scalar=lambda s, x: x,
       grad=broadcasting(lambda g, d: d), batch=_broadcast_batch)


# ------------------------------------------------------------------ expand_dims / squeeze

def _expand_dims_infer(ins, attrs):
    _need(attrs, "axis")
    x, axis = ins[0], attrs["axis"]
    if not -x.rank - 1 <= axis <= x.rank:
        raise ShapeError(f"axis {axis} is out of range for inserting into rank {x.rank}")
    axis %= x.rank + 1
    return TensorSpec(x.shape[:axis] + (1,) + x.shape[axis:], x.dtype)


define("ms.expand_dims", ["x", ("axis", "optional")], _expand_dims_infer,
       const_inputs={"axis": "int"}, signature=(None,), lower=_lower_reshape,
       grad=each(_reshape_back), batch=batching.reshaping,
       canonicalize=lambda ins, a: {**a, "axis": a["axis"] % (ins[0].rank + 1)})


def _squeeze_infer(ins, attrs):
    x, axis = ins[0], attrs["axis"]
    if len(axis) == 0:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = rules.normalize_axes(axis, x.rank)
        for a in axes:  # (a dynamic size must be 1 when the code runs: x[k] on one)
            if rules.same_size(x.shape[a], 1, f"dimension {a} of 'ms.squeeze' (an axis "
                               "indexed or squeezed away) and 1") is None:
                raise ShapeError(f"cannot squeeze axis {a} of size {x.shape[a]} (shape {x.shape})")
    return TensorSpec(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)


def _lower_squeeze(lc, x):
    """A reshape; a dynamic axis squeezed away holds 1 by then (checked before the code
    runs), which a cast to that type says first."""
    spec = lc.ins[0]
    axes = set(rules.normalize_axes(lc.attrs["axis"], spec.rank))
    if any(isinstance(spec.shape[a], Dim) for a in axes):
        spec = TensorSpec(tuple(1 if i in axes else d for i, d in enumerate(spec.shape)),
                          spec.dtype)
        x = tensor.cast(tensor_type(spec, storage=True), x)
    return lowering.reshape(x, spec.shape, lc.out.shape, lc.out.dtype)


def _squeeze_grad(g, d):
    """d with the axes back; a dynamic axis (1 when the code ran) written into zeros of x's
    sizes, as its type says `?`, which no reshape gives (a scatter of one row: a copy)."""
    x = g.in_specs[0]
    if not has_dynamic(x.shape) or len(g.attrs["axis"]) == 0:
        return _reshape_back(g, d)
    axes = set(rules.normalize_axes(g.attrs["axis"], x.rank))
    if not any(isinstance(x.shape[a], Dim) for a in axes):
        return _reshape_back(g, d)
    ones = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
    for a in sorted(axes):
        d = g.emit("ms.expand_dims", d, axis=a)
    return _scatter_into_zeros(g, d, begin=(0,) * x.rank, strides=(1,) * x.rank,
                               end=tuple(OPEN if isinstance(n, Dim) else n for n in ones))


define("ms.squeeze", ["x"], _squeeze_infer, attrs={"axis": "ints"}, signature=(None,),
       lower=_lower_squeeze, grad=each(_squeeze_grad), batch=batching.reshaping,
       doc="drop size-1 axes (all of them when `axis` is empty)")


# ------------------------------------------------------------------ concat

def _concat_infer(ins, attrs):
    x, y = ins
    axis = rules.normalize_axis(attrs["axis"], x.rank)
    joined = f"shapes {x.shape} and {y.shape} cannot be joined along axis {axis}"
    if x.rank != y.rank:
        raise ShapeError(joined)
    shape = []
    for i, (a, b) in enumerate(zip(x.shape, y.shape)):
        size = a if i == axis else rules.same_size(
            a, b, f"dimension {i} of concatenated tensors")
        if size is None:
            raise ShapeError(joined)
        shape.append(size)
    shape[axis] += y.shape[axis]
    return TensorSpec(tuple(shape), rules.same_group_dtype(ins))


def _lower_concat(lc, x, y):
    """Both inputs inserted into one destination. A chain of concats (the N-ary form) lowers
    the same way once per link."""
    out = lc.out
    axis = rules.normalize_axis(lc.attrs["axis"], out.rank)
    acc = lowering.empty(out)
    offset = 0
    for value, spec in zip((x, y), lc.ins):
        offsets = [0] * out.rank
        offsets[axis] = offset
        acc = lowering.insert_slice(value, acc, offsets, list(spec.shape))
        offset += spec.shape[axis]
    return acc


def _concat_part(which):
    """The slice of the cotangent that came from operand `which` (0: x, 1: y)."""
    def rule(g, d):
        x, part = g.in_specs[0], g.in_specs[which]
        axis = rules.normalize_axis(g.attrs["axis"], x.rank)
        begin = [0] * x.rank
        begin[axis] = x.shape[axis] if which else 0
        # a dynamic size the part takes whole (any dimension but the axis, or the axis
        # from y's start to the end) as -1: "to the end" of the cotangent
        size = tuple(-1 if isinstance(n, Dim) and (i != axis or which) else n
                     for i, n in enumerate(part.shape))
        return g.emit("ms.slice", d, begin=tuple(begin), size=size)
    return rule


def _concat_batch(b):
    """Both operands batch-first (an unmapped one broadcast), joined past the batch dim."""
    axis = rules.normalize_axis(b.attrs["axis"], b.in_specs[0].rank)
    return b.emit("ms.concat", b.front(0), b.front(1), axis=axis + 1), 0


define("ms.concat", ["x", "y"], _concat_infer, attrs={"axis": "int"}, signature=("T", "T"),
       lower=_lower_concat, grad=each(_concat_part(0), _concat_part(1)), batch=_concat_batch,
       structure_note="Binary: IRDL unifies the types of a variadic operand group, so an "
                      "N-ary concat with\ndifferently shaped inputs cannot be expressed. The "
                      "frontend chains concats instead.",
       doc="join x and y along `axis` (binary: see ms.irdl.mlir)")


# ------------------------------------------------------------------ tile

def _tile_infer(ins, attrs):
    _need(attrs, "multiples")
    x, mult = ins[0], tuple(attrs["multiples"])
    if len(mult) < x.rank:
        raise ShapeError(f"multiples {mult} has fewer entries than the rank {x.rank} of the input")
    if any(m < 1 for m in mult):
        raise ShapeError(f"multiples {mult} must be positive")
    shape = (1,) * (len(mult) - x.rank) + x.shape
    return TensorSpec(tuple(m * d for m, d in zip(mult, shape)), x.dtype)


def _lower_tile(lc, x, *_):
    """Broadcast to (m0, d0, m1, d1, ...) and collapse each pair: two views and one copy."""
    spec, out = lc.ins[0], lc.out
    mult = tuple(lc.attrs["multiples"])
    shape = (1,) * (len(mult) - spec.rank) + spec.shape
    x = lowering.reshape(x, spec.shape, shape, spec.dtype)
    n = len(shape)
    pairs = TensorSpec(tuple(v for m, d in zip(mult, shape) for v in (m, d)), out.dtype)
    in_map = lowering.affine_map(2 * n, [D(2 * i + 1) for i in range(n)])
    y = lowering.generic([x], [lowering.empty(pairs)], [in_map, lowering.identity_map(2 * n)],
                  ["parallel"] * (2 * n), lambda v, _o: v, [spec.dtype, out.dtype])
    if n == 0:
        return y
    return tensor.collapse_shape(tensor_type(out, storage=True), y,
                                 [[2 * i, 2 * i + 1] for i in range(n)])


def _tile_grad(g, d):
    """View the result as (m0, d0, m1, d1, ...) and sum over the copies m_i."""
    x, mult = g.in_specs[0], tuple(g.attrs["multiples"])
    shape = (1,) * (len(mult) - x.rank) + x.shape
    pairs = tuple(v for m, s in zip(mult, shape) for v in (m, s))
    summed = g.reduce_sum(g.reshape(d, pairs), tuple(range(0, 2 * len(mult), 2)))
    return g.reshape(summed, x.shape)


def _tile_batch(b):
    """Batch dim first with size-1 dims up to the multiples' length; the batch tiled once."""
    mult = tuple(b.attrs["multiples"])
    return b.emit("ms.tile", b.aligned(0, len(mult)), multiples=(1,) + mult), 0


define("ms.tile", ["x", ("multiples", "optional")], _tile_infer,
       const_inputs={"multiples": "ints"}, signature=(None,), lower=_lower_tile,
       grad=each(_tile_grad), batch=_tile_batch)


# ------------------------------------------------------------------ slice / strided_slice
# A slice along a dynamic dimension has a symbolic size (symdim: x[1:] of ? rows has
# max(0, ? - 1)); its gradient scatters into zeros of the input's sizes, which a dynamic input
# lends to ms.strided_slice_grad (its `like` operand, -1 in `shape`).

def _slice_infer(ins, attrs):
    _need(attrs, "begin", "size")
    x, begin, size = ins[0], tuple(attrs["begin"]), tuple(attrs["size"])
    if len(begin) != x.rank or len(size) != x.rank:
        raise ShapeError(f"begin {begin} and size {size} must have one entry per axis "
                         f"of the rank-{x.rank} input")
    out = []
    for i, (b, s, d) in enumerate(zip(begin, size, x.shape)):
        if isinstance(d, Dim) and b >= 0 and s >= -1:
            out.append(_dynamic_slice_size(i, b, s, d))
            continue
        s = d - b if s == -1 else s
        if b < 0 or s < 0 or b + s > d:
            raise ShapeError(f"slice [{b}, {b}+{s}) is out of range for axis {i} of size {d}")
        out.append(s)
    return TensorSpec(tuple(out), x.dtype)


def _dynamic_slice_size(axis, begin, size, d):
    """The size of [begin, begin + size) along a dynamic axis (size -1: to its end), whose
    end must lie within the axis: a check before the code runs (max(end, d) == d)."""
    end = begin + max(size, 0)
    unify(dim_max(d, end), d, f"the end of 'ms.slice' [{begin}, "
                              f"{'end' if size == -1 else end}) within axis {axis}: "
                              f"max({end}, its size) and its size")
    return d - begin if size == -1 else size


def _lower_slice(lc, x, *_):
    if _has_no_elements(lc.out.shape):
        return lowering.empty(lc.out)
    return lowering.extract_slice(x, lc.out, lc.attrs["begin"], lc.out.shape)


def _slice_grad(g, d):
    begin = tuple(g.attrs["begin"])
    end = tuple(OPEN if isinstance(s, Dim) else b + s
                for b, s in zip(begin, g.out_spec.shape))
    return _scatter_into_zeros(g, d, begin=begin, end=end, strides=(1,) * len(begin))


def _scatter_into_zeros(g, d, **slicing):
    """The gradient of a slice: d in zeros of the input's shape where the slice read
    (ms.strided_slice_grad); a dynamic input's sizes come from the input itself."""
    shape = g.in_specs[0].shape
    if not has_dynamic(shape):
        return g.emit("ms.strided_slice_grad", d, shape=shape, **slicing)
    return g.emit("ms.strided_slice_grad", d, g.x, **slicing,
                  shape=tuple(-1 if isinstance(n, Dim) else n for n in shape))


def _slice_batch(b):
    """Batch dim first, taken whole."""
    return b.emit("ms.slice", b.front(0), begin=(0,) + tuple(b.attrs["begin"]),
                  size=(b.size,) + b.out_spec.shape), 0


define("ms.slice", ["x", ("begin", "optional"), ("size", "optional")], _slice_infer,
       const_inputs={"begin": "ints", "size": "ints"}, signature=(None,), lower=_lower_slice,
       grad=each(_slice_grad), batch=_slice_batch,
       canonicalize=lambda ins, a: {**a, "size": tuple(
           -1 if isinstance(d, Dim) else d for d in _slice_infer(ins, a).shape)},
       doc="x[begin : begin + size] per axis; size -1 runs to the end")

OPEN = 2 ** 63 - 1  # a begin/end of this size (or its negative) is an open end: Python's None


def strided_bounds(shape, begin, end, strides):
    """Python-slice semantics per axis (negative begin/end count from the end; bounds clamp
    to [0, size] for positive strides and to [-1, size - 1] for negative ones, so +-OPEN is
    an open end); axes past len(begin) are taken whole. Returns (starts, sizes, strides),
    symbolic along a dynamic axis (symdim's clamps)."""
    if not len(begin) == len(end) == len(strides):
        raise ShapeError(f"begin {begin}, end {end} and strides {strides} differ in length")
    if len(begin) > len(shape):
        raise ShapeError(f"{len(begin)} slice entries for a tensor of rank {len(shape)}")
    starts, sizes, steps = [], [], []
    for i, d in enumerate(shape):
        if i >= len(begin):
            starts.append(0), sizes.append(d), steps.append(1)
            continue
        b, e, s = begin[i], end[i], strides[i]
        if s == 0:
            raise ShapeError(f"stride 0 on axis {i} must be nonzero")
        lo, hi = (0, d) if s > 0 else (-1, d - 1)
        b = dim_min(dim_max(b + d if b < 0 else b, lo), hi)
        e = dim_min(dim_max(e + d if e < 0 else e, lo), hi)
        size = dim_max(0, ceil_div(e - b, s) if s > 0 else ceil_div(b - e, -s))
        starts.append(b), sizes.append(size), steps.append(s)
    return starts, sizes, steps


def _typed_sizes(sizes, typed):
    """A slice's sizes as the slice's type has them: static where the type is (a size the
    rule computes but a run-time check fixed, x[k] along a dynamic axis: 1)."""
    return [s if isinstance(t, Dim) else t for s, t in zip(sizes, typed)]


def _has_no_elements(shape):
    """Whether a slice of this shape reads nothing: it is not built (MLIR's verifier refuses
    a static offset at or past the end of an axis even for no elements)."""
    return any(not isinstance(d, Dim) and d == 0 for d in shape)


def _strided_slice_infer(ins, attrs):
    _need(attrs, "begin", "end", "strides")
    x = ins[0]
    _, sizes, _ = strided_bounds(x.shape, attrs["begin"], attrs["end"], attrs["strides"])
    return TensorSpec(tuple(sizes), x.dtype)


def _lower_strided_slice(lc, x, *_):
    starts, sizes, steps = strided_bounds(lc.ins[0].shape, lc.attrs["begin"], lc.attrs["end"],
                                          lc.attrs["strides"])
    sizes = _typed_sizes(sizes, lc.out.shape)
    if _has_no_elements(sizes):
        return lowering.empty(lc.out)
    return lowering.extract_slice(x, lc.out, starts, sizes, steps)


def _slicing(attrs):
    return {k: tuple(attrs[k]) for k in ("begin", "end", "strides")}


def _batched_slicing(b, **shape):
    """strided_slice/strided_slice_grad on batch-first operands: the batch dim taken whole
    (`shape`, the grad's full shape, gains it too; a `like` operand is batched alike)."""
    a = _slicing(b.attrs)
    extra = {k: (b.size,) + tuple(v) for k, v in shape.items()}
    operands = [b.front(i) for i in range(len(b.inputs))]
    return b.emit(b.opdef.name, *operands, begin=(0,) + a["begin"], end=(b.size,) + a["end"],
                  strides=(1,) + a["strides"], **extra), 0


define("ms.strided_slice", ["x", ("begin", "optional"), ("end", "optional"),
                            ("strides", "optional")], _strided_slice_infer,
       const_inputs={"begin": "ints", "end": "ints", "strides": "ints"}, signature=(None,),
       lower=_lower_strided_slice,
       doc="x[begin:end:strides] per axis with Python's clamping (negative strides too; "
           "+-(2**63-1) is an open end)",
       batch=_batched_slicing,
       grad=each(lambda g, d: _scatter_into_zeros(g, d, **_slicing(g.attrs))))


def _strided_slice_grad_infer(ins, attrs):
    dy, shape = ins[0], tuple(attrs["shape"])
    if len(ins) > 1:  # `like`: its sizes where `shape` says -1
        if len(shape) != ins[1].rank:
            raise ShapeError(f"shape {shape} and like {ins[1].shape} differ in rank")
        shape = tuple(n if s == -1 else s for s, n in zip(shape, ins[1].shape))
    if any(not isinstance(d, Dim) and d < 0 for d in shape):
        raise ShapeError(f"shape {shape} has a negative dimension")
    _, sizes, _ = strided_bounds(shape, attrs["begin"], attrs["end"], attrs["strides"])
    if len(sizes) != dy.rank or any(rules.same_size(a, b, "the sizes of a slice and its "
                                                          "gradient") is None
                                    for a, b in zip(sizes, dy.shape)):
        raise ShapeError(f"dy has shape {dy.shape}, but slicing {shape} with begin "
                         f"{tuple(attrs['begin'])}, end {tuple(attrs['end'])}, strides "
                         f"{tuple(attrs['strides'])} gives {tuple(sizes)}")
    return TensorSpec(shape, dy.dtype)


def _lower_strided_slice_grad(lc, dy, *_like):
    starts, sizes, steps = strided_bounds(lc.out.shape, lc.attrs["begin"], lc.attrs["end"],
                                          lc.attrs["strides"])
    sizes = _typed_sizes(sizes, lc.ins[0].shape)
    zeros = lowering.fill(lc.out, 0)
    if _has_no_elements(sizes):
        return zeros
    return lowering.insert_slice(dy, zeros, starts, sizes, steps)


def _strided_slice_grad_grad(g, d):
    """The slice again (`like` lends only sizes: no gradient)."""
    return [g.emit("ms.strided_slice", d, **_slicing(g.attrs)) if g.needs[0] else None] + \
        [None] * (len(g.inputs) - 1)


define("ms.strided_slice_grad", ["dy", ("like", "optional")], _strided_slice_grad_infer,
       attrs={"shape": "ints", "begin": "ints", "end": "ints", "strides": "ints"},
       signature=(None, None), lower=_lower_strided_slice_grad,
       structure_note="The gradient of slice/strided_slice: zeros of `shape` with dy "
                      "scattered where\nstrided_slice would read. Emitted by ms-autodiff, so "
                      "its arguments are attributes only;\n`like` (the sliced input) gives "
                      "the sizes that `shape` leaves dynamic (-1).",
       grad=_strided_slice_grad_grad,
       batch=lambda b: _batched_slicing(b, shape=b.attrs["shape"]),
       doc="zeros of `shape` with dy written where strided_slice(begin, end, strides) reads: "
           "the gradient of slice and strided_slice (MindSpore StridedSliceGrad); a -1 in "
           "`shape` is the size of `like` there")


# ------------------------------------------------------------------ run-time sizes

def _dim_size_infer(ins, attrs):
    rules.normalize_axes(attrs["axis"], ins[0].rank)
    return TensorSpec((), attrs["dtype"])


def _lower_dim_size(lc, x):
    shape = lc.ins[0].shape
    n = rules.prod(shape[a] for a in rules.normalize_axes(lc.attrs["axis"], len(shape)))
    scalar = lowering.to_storage(lowering.size_scalar(n, lc.out.dtype), lc.out.dtype)
    return tensor.from_elements(tensor_type(lc.out, storage=True), [scalar])


define("ms.dim_size", ["x"], _dim_size_infer, attrs={"axis": "ints", "dtype": "type"},
       signature=(None,), lower=_lower_dim_size, grad=no_grad,
       doc="the number of elements of x along `axis` (their sizes' product), as a 0-d "
           "tensor of `dtype`: a mean's count when a size is known only at run time")


def _broadcast_like_infer(ins, attrs):
    x, like = ins
    shape, axes = tuple(attrs["shape"]), tuple(attrs["axes"])
    if len(shape) != len(axes) or any(a >= like.rank for a in axes):
        raise ShapeError(f"shape {shape} and axes {axes} must have one entry per result "
                         f"dimension, each axis one of like's {like.rank}")
    out = tuple(like.shape[a] if a >= 0 else d for d, a in zip(shape, axes))
    if any(a < 0 and d < 0 for d, a in zip(shape, axes)):
        raise ShapeError(f"shape {shape} has a negative dimension")
    if len(out) < x.rank or rules.broadcast_shapes(x.shape, out) != out:
        raise ShapeError(f"cannot broadcast {x.shape} to {out}")
    return TensorSpec(out, x.dtype)


define("ms.broadcast_like", ["x", "like"], _broadcast_like_infer,
       attrs={"shape": "ints", "axes": "ints"}, signature=(None, None),
       lower=lambda lc, x, like: lowering.elementwise([x], lc.ins[:1], lc.out, lambda v: v),
       grad=each(lambda g, d: g.unbroadcast(d, g.in_specs[0]), None),
       doc="x broadcast to `shape`, whose dimensions with an axis >= 0 in `axes` take the "
           "size of that axis of `like` (a size known only at run time: zeros, ones or a "
           "random mask shaped like a batch)")
