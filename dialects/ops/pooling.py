"""Pooling over the spatial dims of (N, C, *spatial) tensors, 1 to 3 of them: max_pool and
avg_pool, their gradients, and max_pool_gather (the gradient of max_pool_grad), lowered to
linalg.generic loop nests (plus a cast for the half floats, which accumulate in float32).

Geometry, one entry per spatial dim: `kernel`, `stride`, `dilation` (max pooling), `pad_lo`
and `pad_hi` (explicit padding; the frontend computes "same"), and `ceil_mode`: the output
size rounds up, but the last window must start inside the input or the low padding
(MindSpore's and PyTorch's rule); windows running past the high padding read nothing there.
Padding never wins a maximum and adds nothing to a sum. An average divides by
`divisor_override` when it is positive, else by the number of its window's elements inside
the padded input (`count_include_pad`) or inside the input.

A nest over windows reads its input through the affine maps `o * stride + k * dilation` and
reduces over the window offsets k, whose sizes come from an extra input: a tensor.empty of
the kernel shape indexed only by the offset loops (the trick of linalg's named pooling ops).
Its loops are ordered so that LLVM vectorizes along a row of windows (_Nest).

The CPU's forms (convert-ms-to-linalg's scatter=loops, its default): the windows come in boxes
with the same offsets inside the input (the interior, each border), each box a nest reading
the input itself (no padded copy; past MAX_BOXES boxes, one nest over a padded copy).
max_pool_grad finds each window's first maximal offset (a min-reduction over the offsets:
_first_maxima) and adds dy there, one read-modify-write per window in scf.for loops
(_add_at_first_maxima); max_pool_gather reads v at those offsets (a fold over the offsets
keeping the one); avg_pool_grad adds each window's share at its elements, box by box, a
scatter over the kernel offsets (_spread), one spatial dim at a time where windows overlap
(_spread_avg).

With scatter=reduction (CUDA, whose every linalg op becomes one kernel parallel over its
output), each op is one nest: the forward ops read a padded copy (fill + insert_slice), and
the gradients are gathers over dx's positions h: the reduction runs over the windows that may
cover h (ceil(kernel / stride) candidates per dim when dilation is 1, else one per kernel
offset) and reads dy at computed positions (tensor.extract, clamped, masked by a select), so
no scatter. There, an element equal to its window's maximum checks, in an scf.for that runs
only then, that no earlier element of the window is.

max_pool's gradient goes to the first maximal element of each window (row-major window order,
padding excluded, a NaN counting as maximal), as MindSpore's and PyTorch's kernels do: ties do
not double-count.
"""
from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

from ..lazy import arith, ir, linalg, scf, tensor

from .. import batching
from .. import dtypes as dt
from .. import lowering
from .. import shape_rules as rules
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
    """(dynamic sizes must agree at run time: a check of the call)"""
    if len(spec.shape) != len(shape) or any(
            rules.same_size(a, b, f"dimension {i} of {what} and of the pooled input") is None
            for i, (a, b) in enumerate(zip(spec.shape, shape))):
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

_c = lowering.index_constant


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


# ------------------------------------------------------------------ window loop nests

class Piece(NamedTuple):
    """Along one spatial dim, the windows o0 <= o < o1, whose offsets k0 <= k < k1 are the
    ones inside the input."""
    o0: int
    o1: int
    k0: int
    k1: int


def _pieces(d):
    """The windows of a dim in runs with the same offsets inside the input: the interior
    (all k) and each border window; windows with none inside (ceil_mode past asymmetric
    padding) are left out."""
    pieces = []
    for o in range(d.out):
        start = o * d.s - d.lo
        k0, k1 = max(0, -(start // d.d)), min(d.k, (d.size - 1 - start) // d.d + 1)
        if k0 >= k1:
            continue
        if pieces and pieces[-1][1:] == (o, k0, k1):
            pieces[-1] = pieces[-1]._replace(o1=o + 1)
        else:
            pieces.append(Piece(o, o + 1, k0, k1))
    return pieces


def _boxes(dims):
    """The windows as boxes (a Piece per dim) that read the input only, no padding: reading
    a padded copy of the input instead took 20-40% longer (3x3 windows, stride 2, on 56x56)."""
    return list(itertools.product(*(_pieces(d) for d in dims)))


def _whole(dims):
    """All windows and offsets as one box (over a padded input)."""
    return tuple(Piece(0, d.out, 0, d.k) for d in dims)


def _whole_box(box, dims):
    return all(p.o0 == 0 and p.o1 == d.out for p, d in zip(box, dims))


# Rows of fewer windows than this LLVM left scalar in max-like folds (a vector of 16 float32
# is wider): there, the whole window is carried in a register (_Nest's short_rows), 25-35%
# faster than updating the row once per offset (2x2 max pools over 28x28 and 14x14 inputs).
SHORT_ROW = 16


class _Nest:
    """The loops of a nest over a box of windows: n, c, the window loops o and the offset
    loops k. A fold over each window's offsets runs (n, c, o[:-1], k[:-1], o[-1], k[-1]): the
    last offset loop, innermost, carries its window's value in a register and LLVM unrolls
    it, so the loop along a row of windows becomes the innermost one, vectorized: unit stride
    at the windows, one interleaved group of stride-s loads for all the row's offsets. (The
    old order, all offsets innermost, left a 2- or 3-trip scalar reduction: a 3x3 max pool ran
    4x slower.) With `short_rows`, a box whose rows are shorter than SHORT_ROW keeps that
    order: (n, c, o, k). A scatter runs (n, c, o[:-1], k, o[-1]), the row of windows
    innermost: its offsets write different elements, so they cannot be carried."""

    def __init__(self, box, scatter=False, short_rows=False):
        r = len(box)
        self.scatter = scatter
        if scatter:
            order = ([("n",), ("c",)] + [("o", i) for i in range(r - 1)]
                     + [("k", i) for i in range(r)] + [("o", r - 1)])
        elif short_rows and box[-1].o1 - box[-1].o0 < SHORT_ROW:
            order = ([("n",), ("c",)] + [("o", i) for i in range(r)]
                     + [("k", i) for i in range(r)])
        else:
            order = ([("n",), ("c",)] + [("o", i) for i in range(r - 1)]
                     + [("k", i) for i in range(r - 1)] + [("o", r - 1), ("k", r - 1)])
        at = {name: i for i, name in enumerate(order)}
        self.kinds = [name[0] for name in order]
        self.nc = [at[("n",)], at[("c",)]]
        self.o = [at[("o", i)] for i in range(r)]
        self.k = [at[("k", i)] for i in range(r)]

    def map(self, positions_or_exprs):
        return lowering.affine_map(len(self.kinds), [D(e) if isinstance(e, int) else e
                                                     for e in positions_or_exprs])

    def at_window(self):
        """(n, c, o): a tensor of the box's windows."""
        return self.map(self.nc + self.o)

    def elements(self, dims, box, shift):
        """(n, c, o * s + k * d - shift) in the whole tensor, for the box's windows o and
        offsets k."""
        return self.map(self.nc + [
            D(oi) * d.s + D(ki) * d.d + (p.o0 * d.s + p.k0 * d.d - sh)
            for oi, ki, d, p, sh in zip(self.o, self.k, dims, box, shift)])

    def iterators(self):
        """Parallel over the windows (reducing over the offsets), or for a scatter, which
        overlapping windows send to one element, parallel over n and c only."""
        return ["reduction" if kind == "k" or (self.scatter and kind == "o") else "parallel"
                for kind in self.kinds]

    def inside(self, dims):
        """In the body of a nest over all windows of a padded input: whether the iteration's
        element is inside the input (None where all are)."""
        bits = []
        for oi, ki, d in zip(self.o, self.k, dims):
            if d.lo or d.read_hi:
                at = arith.addi(arith.muli(linalg.IndexOp(oi).result, _c(d.s)),
                                arith.muli(linalg.IndexOp(ki).result, _c(d.d)))
                bits += [_cmp("sge", at, _c(d.lo)), _cmp("slt", at, _c(d.lo + d.size))]
        return _all(*bits) if bits else None

    def offsets(self, box):
        """In the body: the iteration's offsets k in the whole window."""
        return [arith.addi(linalg.IndexOp(ki).result, _c(p.k0)) if p.k0
                else linalg.IndexOp(ki).result for ki, p in zip(self.k, box)]


def _box_part(t, box, dims):
    """The box's windows of a tensor of the pooled shape (a slice: a view once bufferized)."""
    if _whole_box(box, dims):
        return t
    tt = ir.RankedTensorType(t.type)
    shape = list(tt.shape[:2]) + [p.o1 - p.o0 for p in box]
    return tensor.extract_slice(ir.RankedTensorType.get(shape, tt.element_type), t, [], [], [],
                                [0, 0] + [p.o0 for p in box], shape, [1] * len(shape))


def _box_vector(t, p):
    """A 1-D tensor's entries for the windows of a Piece."""
    tt = ir.RankedTensorType(t.type)
    if p.o0 == 0 and p.o1 == tt.shape[0]:
        return t
    return tensor.extract_slice(ir.RankedTensorType.get([p.o1 - p.o0], tt.element_type), t,
                                [], [], [], [p.o0], [p.o1 - p.o0], [1])


def _over_window(out, init, box, dims, shift, elems, at_window, vectors, body, dtypes,
                 short_rows=False):
    """out (pooled shape; None for a box of all windows) at the box's windows o: the fold
    over the offsets k of body(*elements, *at_window values, *vector values, acc), from
    `init`. `elems` are read at the window's elements (n, c, o * s + k * d - shift),
    `at_window` (pooled shape) at the window, `vectors` (1-D tensor, spatial dim) at the
    window's position along their dim; dtypes: theirs, then out's. The body may read its
    offsets (_Nest.offsets): it gets the nest first."""
    nest = _Nest(box, short_rows=short_rows)
    whole = _whole_box(box, dims)
    # (N and C as the shape rules know them: a dynamic batch is a size computed at run time)
    shape = list(lowering.lowered_spec(elems[0], {}).shape[:2]) + [p.o1 - p.o0 for p in box]
    # (the box's own fill, not a slice of a filled tensor: canonicalize folds that slice into
    # a fill of its own, whose insert_slice then bufferizes as a copy)
    part = lowering.fill(TensorSpec(tuple(shape), dtypes[-1]), init)
    window = tensor.empty([p.k1 - p.k0 for p in box], element_type(dtypes[-1], storage=True))
    # (every operand read at the windows is the box's part: linalg takes a loop's size from
    # the first operand indexing it directly)
    maps = ([nest.elements(dims, box, shift)] * len(elems) + [nest.map(nest.k)]
            + [nest.at_window()] * len(at_window) + [nest.map([nest.o[i]]) for _, i in vectors]
            + [nest.at_window()])
    n = len(elems)
    result = lowering.generic(
        list(elems) + [window] + [_box_part(t, box, dims) for t in at_window]
        + [_box_vector(t, box[i]) for t, i in vectors], [part], maps, nest.iterators(),
        lambda *a: body(nest, *a[:n], *a[n + 1:]), dtypes[:n] + [dtypes[-1]] + dtypes[n:])
    if whole:
        return result
    return tensor.insert_slice(result, out, [], [], [], [0, 0] + [p.o0 for p in box], shape,
                               [1] * len(shape))


def _onto_elements(dx, box, dims, shift, at_window, vectors, body, dtypes):
    """dx (the input's shape) updated at every element (n, c, o * s + k * d - shift) of the
    box's windows o to body(*at_window values at o, *vector values, dx's value there): a
    scatter over the kernel offsets, in one nest whose innermost loop runs along a row of
    windows. Windows may overlap, so every loop but n and c is a reduction (the CPU's threads
    split n or c). (Where they do not, writing each element once without zeros first ran
    slower: LLVM's scatter stores to lines not in cache.)"""
    nest = _Nest(box, True)
    parts = [_box_part(t, box, dims) for t in at_window]
    window = tensor.empty([p.k1 - p.k0 for p in box], ir.RankedTensorType(dx.type).element_type)
    maps = ([nest.at_window()] * len(parts) + [nest.map(nest.k)]
            + [nest.map([nest.o[i]]) for _, i in vectors]
            + [nest.elements(dims, box, shift)])
    n = len(parts)
    return lowering.generic(
        parts + [window] + [_box_vector(t, box[i]) for t, i in vectors], [dx], maps,
        nest.iterators(), lambda *a: body(*a[:n], *a[n + 1:]),
        dtypes[:n] + [dtypes[-1]] + dtypes[n:])


def _spread(shape, acc, dims, at_window, vectors, term, dtypes):
    """dx (the input's shape, in acc) = the sum, over the windows o that hold each element,
    of term(*at_window values at o, *vector values at o): box by box onto zeros, each box a
    scatter over its kernel offsets (_onto_elements); or, for too many boxes, one scatter of
    all windows onto a padded dx, then its inside."""
    s = lowering.ScalarBuilder(acc)
    boxes, shift, padded = _plan(dims)
    full = tuple(shape[:2]) + tuple(d.size + d.lo + d.read_hi for d in dims) if padded else \
        tuple(shape)
    dx = lowering.fill(TensorSpec(full, acc), 0)
    for box in boxes:
        dx = _onto_elements(dx, box, dims, shift, at_window, vectors,
                            lambda *args: s.add(args[-1], term(*args[:-1])), dtypes)
    if not padded:
        return dx
    return tensor.extract_slice(tensor_type(TensorSpec(tuple(shape), acc), storage=True), dx,
                                [], [], [], [0, 0] + [d.lo for d in dims], list(shape),
                                [1] * len(shape))


def _spread_avg(dy, out: TensorSpec, acc, dims, scale, weights):
    """avg_pool_grad on the CPU: dy times each window's 1 / divisor (scale times a weight
    vector per spatial dim, or None) spread over the window's elements. Where windows
    overlap, one spatial dim at a time, the last first: a scatter with that dim's kernel
    offsets only, from the windows' shape to the input's along that dim, with that dim's
    weights (for 3x3 windows, stride 2: 3 + 3 strided read-modify-writes per window instead
    of 9, 1.7x faster); else (2x2, stride 2: 1.6x faster so) all dims in one scatter."""
    s = lowering.ScalarBuilder(acc)

    def term(src, with_scale):
        def share(v, *ws):
            v = lowering.cast_scalar(v, src, acc)
            if with_scale and scale != 1.0:
                v = s.mul(v, s.const(scale))
            for wi in ws:
                v = s.mul(v, wi)
            return v
        return share
    if not _overlap(dims):
        extras = [(w, i) for i, w in enumerate(weights) if w is not None]
        return _spread(out.shape, acc, dims, [dy], extras, term(out.dtype, True),
                       [out.dtype] + [acc] * len(extras) + [acc])
    g, src = dy, out.dtype
    shape = list(out.shape[:2]) + [d.out for d in dims]
    for i in reversed(range(len(dims))):
        shape[2 + i] = dims[i].size
        one = [d if j == i else Dim(n, 1, 1, 1, 0, 0, n)  # the other dims: 1-wide windows
               for j, (d, n) in enumerate(zip(dims, shape[2:]))]
        extras = [(weights[i], i)] if weights[i] is not None else []
        g = _spread(tuple(shape), acc, one, [g], extras, term(src, i == len(dims) - 1),
                    [src] + [acc] * len(extras) + [acc])
        src = acc
    return g


def _overlap(dims):
    """Whether an input element may be in two windows."""
    return any(d.s < d.extent for d in dims)


def _pooled_start(shape, dtype, init, dims, boxes):
    """What the boxes of windows are inserted into (None for one box of all of them): filled
    with `init` (for the windows no box has, and since an empty tensor there bufferized the
    first box as a copy from a buffer of its own)."""
    if len(boxes) == 1 and _whole_box(boxes[0], dims):
        return None
    return lowering.fill(TensorSpec(tuple(shape[:2]) + tuple(d.out for d in dims), dtype), init)


# Most boxes of windows the CPU's forms make: more (small odd sizes, large kernels with
# stride 1, 3-D) read a padded copy in one nest instead. Each box is a loop nest that LLVM
# vectorizes: 9 of them (3x3 windows over odd sizes) took a pooling's gradient from 0.08 to
# 0.3 s to compile, 49 (7x7, stride 1) to 2.3 s.
MAX_BOXES = 4


def _plan(dims, cpu=True):
    """(boxes, shift, padded): the nests over windows read their input box by box, shifted
    by the padding (the CPU, unless that is more than MAX_BOXES boxes), or as one box from a
    copy padded on every side (shift 0; padded is False where there is no padding)."""
    boxes = _boxes(dims)
    if cpu and len(boxes) <= MAX_BOXES:
        return boxes, [d.lo for d in dims], False
    return [_whole(dims)], [0] * len(dims), any(d.lo or d.read_hi for d in dims)


def _source(x, spec, dims, padded, pad):
    """x as the nests read it (_plan): itself, or padded with `pad`."""
    return _padded(x, spec, dims, pad) if padded else x


def _forward(x, spec, dims, acc, init, pad, body, vectors, cpu, short_rows=False):
    """A pooling: out[n, c, o] = the fold of body(element, *vector values, acc) over window
    o's elements inside the input, from `init`. The CPU reads x box by box; other targets
    (one kernel per op) read a copy padded with `pad`, all windows in one nest."""
    boxes, shift, padded = _plan(dims, cpu)
    sources = _source(x, spec, dims, padded, pad)
    out = _pooled_start(spec.shape, acc, init, dims, boxes)
    for box in boxes:
        out = _over_window(out, init, box, dims, shift, [sources], [], vectors,
                           lambda _, *args: body(*args),
                           [spec.dtype] + [acc] * len(vectors) + [acc], short_rows)
    return out


_NO_MAX = 1 << 30  # first_maxima of a window with no element inside the input


def _lin32(k, dims):
    """The row-major position of offsets k in the window, as an i32."""
    return arith.index_cast(ir.IntegerType.get_signless(32), _linear(k, dims))


def _first_maxima(x, y, spec, dims):
    """idx[n, c, o]: the row-major offset in window o of its first maximal element (int32),
    a min-reduction over the offsets (y = max_pool(x)); padding is never one."""
    boxes, shift, padded = _plan(dims)
    source = _source(x, spec, dims, padded, _lowest(spec.dtype))
    idx = _pooled_start(spec.shape, dt.int32, _NO_MAX, dims, boxes)
    i32 = lowering.ScalarBuilder(dt.int32)
    for box in boxes:
        def body(nest, xv, ymax, first, box=box):
            hit = _is_max(xv, ymax)
            inside = nest.inside(dims) if padded else None
            if inside is not None:  # (-inf padding may equal a window's maximum)
                hit = arith.andi(hit, inside)
            lin = _lin32(nest.offsets(box), dims)
            return arith.minsi(first, arith.select(hit, lin, i32.const(_NO_MAX)))
        idx = _over_window(idx, _NO_MAX, box, dims, shift, [source], [y], [], body,
                           [spec.dtype, spec.dtype, dt.int32], short_rows=True)
    return idx


def _for_loops(bounds, init, body):
    """scf.for loops over 0 <= i < b, one per bound, carrying a value: body(indices, value)
    -> the next value."""
    def nest(ivs, value):
        if len(ivs) == len(bounds):
            return body(ivs, value)
        loop = scf.ForOp(_c(0), _c(bounds[len(ivs)]), _c(1), [value])
        with ir.InsertionPoint(loop.body):
            scf.YieldOp([nest(ivs + [loop.induction_variable], loop.inner_iter_args[0])])
        return loop.results[0]
    return nest([], init)


def _add_at_first_maxima(idx, dy, out: TensorSpec, acc, dims):
    """dx (out's shape, in acc): dy of each window added at its first maximal element, whose
    offset idx holds (_first_maxima). A scatter that depends on the data: scf.for loops over
    the windows of each image, one read-modify-write each, the images split over the threads
    (an scf.forall). (A scatter over every kernel offset, dy where the offset is idx's, was
    as many strided read-modify-writes as offsets: 1.6x slower for 3x3 windows.)"""
    image = TensorSpec((1,) + tuple(out.shape[1:]), acc)
    s = lowering.ScalarBuilder(acc)

    def add(n, ivs, dx):
        ch, o = ivs[0], ivs[1:]
        first = tensor.extract(idx, [n, ch] + o)
        found = _cmp("slt", first, arith.constant(first.type, _NO_MAX))
        k = _delinearize(arith.index_cast(ir.IndexType.get(), arith.select(
            found, first, arith.constant(first.type, 0))), dims)
        pos = [arith.subi(arith.addi(arith.muli(oi, _c(d.s)), arith.muli(ki, _c(d.d))), _c(d.lo))
               for oi, ki, d in zip(o, k, dims)]
        if any(d.lo for d in dims):  # (a window without maxima would read at a negative one)
            pos = [arith.select(found, p, _c(0)) for p in pos]
        g = lowering.cast_scalar(tensor.extract(dy, [n, ch] + o), out.dtype, acc)
        at = [_c(0), ch] + pos
        return tensor.insert(s.add(tensor.extract(dx, at), arith.select(found, g, s.const(0))),
                             dx, at)
    loop = scf.ForallOp([0], [lowering.loop_bound(out.shape[0])], [1],
                        shared_outs=[lowering.empty(TensorSpec(out.shape, acc))])
    body = loop.regions[0].blocks[0]
    with ir.InsertionPoint(body):
        n, shared = body.arguments
        dx = _for_loops([out.shape[1]] + [d.out for d in dims], lowering.fill(image, 0),
                        lambda ivs, dx: add(n, ivs, dx))
        in_parallel = scf.InParallelOp()
        with ir.InsertionPoint(in_parallel.regions[0].blocks[0]):
            tensor.parallel_insert_slice(dx, shared, [n], [], [],
                                         [ir.ShapedType.get_dynamic_stride_or_offset()]
                                         + [0] * (len(out.shape) - 1),
                                         list(image.shape), [1] * len(out.shape))
    return loop.results[0]


# ------------------------------------------------------------------ gathers (scatter=reduction)

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

def _cpu(lc):
    """The CPU's forms (convert-ms-to-linalg's scatter=loops, its default): boxes of windows
    reading the input directly, gradients scattered over the kernel offsets. With
    scatter=reduction (CUDA: each linalg op one kernel, parallel over its output) the forward
    ops read a padded copy in one nest and the gradients are gathers over dx."""
    return lc.options.get("scatter", "loops") == "loops"


def _lower_max_pool(lc, x):
    spec = lc.ins[0]
    dims = geometry(spec.shape, lc.attrs)
    low = _lowest(spec.dtype)
    s = lowering.ScalarBuilder(spec.dtype)
    return _forward(x, spec, dims, spec.dtype, low, low, lambda v, m: s.maximum(m, v), [],
                    _cpu(lc), short_rows=_cpu(lc))


def _lower_avg_pool(lc, x):
    spec = lc.ins[0]
    dims = geometry(spec.shape, lc.attrs)
    acc = _accumulator(spec.dtype)
    scale, vectors = _avg_scale(dims, lc.attrs)
    extras = [(_const_vector(v, acc), i) for i, v in enumerate(vectors) if v is not None]
    s = lowering.ScalarBuilder(acc, reassoc=True)

    def body(v, *rest):
        # each element is scaled by its window's 1 / divisor: one loop nest, no division pass
        *weights, total = rest
        w = s.const(scale)
        for wi in weights:
            w = s.mul(w, wi)
        return s.add(total, s.mul(lowering.cast_scalar(v, spec.dtype, acc), w))
    return _cast(_forward(x, spec, dims, acc, 0, 0, body, extras, _cpu(lc)), lc.out, acc)


def _lower_max_pool_grad(lc, x, y, dy):
    """dx[h] = the sum of dy[o] over the windows o whose first maximal element h is."""
    spec, out = lc.ins[0], lc.out
    dims = geometry(spec.shape, lc.attrs)
    acc = _accumulator(out.dtype)
    s = lowering.ScalarBuilder(acc)
    if _cpu(lc):
        # the first maxima's offsets, then dy added there
        idx = _first_maxima(x, y, spec, dims)
        return _cast(_add_at_first_maxima(idx, dy, out, acc, dims), out, acc)

    def body(xv, _cand, total):
        nc, h, j = _loop_indices(dims)
        o, k, ok = _covering(dims, h, j)
        ymax = tensor.extract(y, nc + o)
        first = _first_max(arith.andi(ok, _is_max(xv, ymax)), x, nc, o, _linear(k, dims), ymax,
                           dims)
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
    s = lowering.ScalarBuilder(acc)
    if _cpu(lc):
        return _cast(_spread_avg(dy, out, acc, dims, scale, weights), out, acc)

    def body(_cand, total):
        nc, h, j = _loop_indices(dims)
        o, _, ok = _covering(dims, h, j)
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
    s = lowering.ScalarBuilder(acc)
    if _cpu(lc):
        idx = _first_maxima(x, y, spec, dims)
        boxes, shift, padded = _plan(dims)
        source = _source(v, spec, dims, padded, 0)
        res = _pooled_start(out.shape, acc, 0, dims, boxes)
        for box in boxes:
            def pick(nest, vv, first, total, box=box):
                hit = _cmp("eq", first, _lin32(nest.offsets(box), dims))
                vv = lowering.cast_scalar(vv, out.dtype, acc)
                return s.add(total, arith.select(hit, vv, s.const(0)))
            res = _over_window(res, 0, box, dims, shift, [source], [idx], [], pick,
                               [out.dtype, dt.int32, acc], short_rows=True)
        return _cast(res, out, acc)
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
       batch=batching.fold_leading(),
       doc="the maximum of each window over the spatial dims of (N, C, *spatial), 1 to 3 of "
           "them; padding never wins")

define("ms.avg_pool", ["x"], _pool_infer, attrs=_AVG_ATTRS, signature=(None,),
       dtypes=dt.FLOATS, lower=_lower_avg_pool,
       grad=each(lambda g, d: g.emit("ms.avg_pool_grad", d, input_shape=g.in_specs[0].shape,
                                     **g.attrs)),
       batch=batching.fold_leading(),
       doc="the mean of each window over the spatial dims of (N, C, *spatial): the sum over "
           "divisor_override, or the count of window elements in the padded input "
           "(count_include_pad) or in the input")

define("ms.max_pool_grad", ["x", "y", "dy"], _max_grad_infer, attrs=_MAX_ATTRS,
       signature=("T", "T", "T"), dtypes=dt.FLOATS, lower=_lower_max_pool_grad,
       grad=each(None, None, lambda g, d: g.emit("ms.max_pool_gather", g.inputs[0],
                                                 g.inputs[1], d, **g.attrs)),
       batch=batching.fold_leading(),
       structure_note="The gradient of max_pool (y = max_pool(x)), emitted by ms-autodiff.",
       doc="dy of each window of x added at its first maximal element (y = max_pool(x)): the "
           "gradient of max_pool")

define("ms.max_pool_gather", ["x", "y", "v"], _gather_infer, attrs=_MAX_ATTRS,
       signature=("T", "T", "T"), dtypes=dt.FLOATS, lower=_lower_max_pool_gather,
       grad=each(None, None, lambda g, d: g.emit("ms.max_pool_grad", g.inputs[0], g.inputs[1],
                                                 d, **g.attrs)),
       batch=batching.fold_leading(),
       structure_note="The gradient of max_pool_grad with respect to dy, emitted by "
                      "ms-autodiff.",
       doc="v read at the first maximal element of each window of x (y = max_pool(x)): the "
           "gradient of max_pool_grad with respect to dy")

define("ms.avg_pool_grad", ["dy"], _avg_grad_infer, attrs={**_AVG_ATTRS, "input_shape": "ints"},
       signature=(None,), dtypes=dt.FLOATS, lower=_lower_avg_pool_grad,
       # linear in dy, and the transpose of avg_pool: its gradient is avg_pool
       grad=each(lambda g, d: g.emit("ms.avg_pool", d, **_geometry_of(g.attrs))),
       batch=batching.fold_leading(shape_attrs=("input_shape",)),
       structure_note="The gradient of avg_pool, emitted by ms-autodiff: the input's shape is "
                      "an attribute.",
       doc="dy of each window spread evenly (by its divisor) over the window's elements: the "
           "gradient of avg_pool on an input of input_shape")
