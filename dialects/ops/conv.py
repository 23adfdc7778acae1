"""Convolutions (MindSpore's Conv1D/Conv2D/Conv3D, NCHW-style layouts): ms.conv and its two
gradients, ms.conv_input_grad (the transposed convolution) and ms.conv_filter_grad.

    y[n, g*Og + o, p] = sum over c < Cg and kernel offsets k of
                        w[g*Og + o, c, k] * xpad[n, g*Cg + c, p*stride + k*dilation]

for `groups` groups of Cg = C / groups input and Og = O / groups output channels, xpad being x
inside pad_lo / pad_hi zeros per spatial dim (MindSpore's pad modes become explicit pads in the
frontend). All three ops are bilinear in their two operands, so each one's gradient is one of
the three again and grad of grad needs nothing else.

Each lowers to one im2col gather (a parallel linalg.generic whose input map is the convolution's
affine window map, `p*s + k*d`), one contraction (a linalg.matmul for one group, so the CPU and
CUDA matmul schedules tile it, or a batched generic over the groups) and one copy into the
output layout: three kernels per convolution whatever the kernel size, where composing it from
ms ops took one matmul per kernel offset. On the CPU, grouped convolutions with few input
channels per group (depthwise ones, groups of up to 4) are one direct loop nest each instead
(conv_direct.py).
"""
from typing import NamedTuple

from ..lazy import arith, func, ir, linalg, scf, tensor

from .. import batching
from .. import dtypes as dt
from .. import lowering
from .. import shape_rules as rules
from ..builders import tensor_type
from ..ir_helpers import enclosing_module, fresh_symbol, functions
from ..dtypes import TensorSpec
from ..grad import each
from ..symdim import Dim
from ..registry import FusionRole, ShapeError, define
from .conv_direct import (cast_to, direct_filter_grad, direct_grouped,
                          direct_grouped_applies, per_image_dots, phase_padding)

_ATTRS = {"stride": "ints", "dilation": "ints", "pad_lo": "ints", "pad_hi": "ints",
          "groups": "int"}
_SPATIAL_RANKS = (1, 2, 3)


def D(i):
    return ir.AffineDimExpr.get(i)


# ------------------------------------------------------------------ shape rules

def _geometry(attrs, rank):
    """(stride, dilation, pad_lo, pad_hi, groups), each checked against the spatial rank."""
    vals = [tuple(attrs[n]) for n in ("stride", "dilation", "pad_lo", "pad_hi")]
    for name, v in zip(("stride", "dilation", "pad_lo", "pad_hi"), vals):
        if len(v) != rank:
            raise ShapeError(f"{name} has {len(v)} entries for {rank} spatial dims")
        low = 0 if name.startswith("pad") else 1
        if any(e < low for e in v):
            raise ShapeError(f"{name} {v} must be {'non-negative' if low == 0 else 'positive'}")
    groups = attrs["groups"]
    if groups < 1:
        raise ShapeError(f"groups {groups} must be positive")
    return (*vals, groups)


def _check_operands(x, w, groups, what="x"):
    """(spatial rank, C, O) of an input-like (N, C, *S) and a weight (O, C/groups, *K)."""
    r = x.rank - 2
    if r not in _SPATIAL_RANKS or w.rank != x.rank:
        raise ShapeError(f"expects {what} (N, C, *spatial) and weight (O, C/groups, *kernel) of "
                         f"the same rank 3, 4 or 5, got shapes {x.shape} and {w.shape}")
    o, cg = w.shape[0], w.shape[1]
    if o % groups:
        raise ShapeError(f"weight's {o} output channels are not divisible by groups={groups}")
    return r, cg * groups, o


def _out_sizes(sizes, kernel, stride, dilation, lo, hi):
    out = []
    for n, k, s, d, a, b in zip(sizes, kernel, stride, dilation, lo, hi):
        span = (k - 1) * d + 1
        if n + a + b < span:
            raise ShapeError(f"the padded input {tuple(sizes)} (pads {lo}, {hi}) is smaller "
                             f"than the kernel {tuple(kernel)} with dilation {dilation}")
        out.append((n + a + b - span) // s + 1)
    return tuple(out)


def _conv_infer(ins, attrs):
    x, w = ins
    stride, dilation, lo, hi, groups = _geometry(attrs, x.rank - 2)
    r, c, _ = _check_operands(x, w, groups)
    if x.shape[1] != c:
        raise ShapeError(f"input has {x.shape[1]} channels, the weight {w.shape} with "
                         f"groups={groups} expects {c}")
    out = _out_sizes(x.shape[2:], w.shape[2:], stride, dilation, lo, hi)
    return TensorSpec((x.shape[0], w.shape[0]) + out, rules.same_group_dtype(ins))


def batch_as_attr(shape):
    """An input_shape for ms.conv_input_grad: a dynamic batch as -1 (dy's batch)."""
    return tuple(-1 if isinstance(d, Dim) else d for d in shape)


def _input_grad_infer(ins, attrs):
    dy, w = ins
    shape = tuple(attrs["input_shape"])
    if shape and shape[0] == -1:  # (the batch dy has: a dynamic one)
        shape = (dy.shape[0],) + shape[1:]
    stride, dilation, lo, hi, groups = _geometry(attrs, dy.rank - 2)
    _check_operands(dy, w, groups, what="dy")
    x = TensorSpec(shape, dy.dtype)
    if _conv_infer([x, w], attrs) != TensorSpec(dy.shape, dy.dtype):
        raise ShapeError(f"dy {dy.shape} is not the shape of a convolution of {shape} by "
                         f"the weight {w.shape}")
    return x


def _filter_grad_infer(ins, attrs):
    x, dy = ins
    kernel = tuple(attrs["kernel_shape"])
    w = TensorSpec(kernel, x.dtype)
    if len(kernel) != x.rank:
        raise ShapeError(f"kernel_shape {kernel} does not match the input rank {x.rank}")
    if _conv_infer([x, w], attrs) != TensorSpec(dy.shape, dy.dtype):
        raise ShapeError(f"dy {dy.shape} is not the shape of a convolution of {x.shape} by "
                         f"a weight {kernel}")
    return w


# ------------------------------------------------------------------ lowering pieces

def _pad(v, spec: TensorSpec, lo, hi):
    """v inside zeros: pad_lo/pad_hi per spatial dim (batch and channel dims unpadded)."""
    if not any(lo) and not any(hi):
        return v
    shape = spec.shape[:2] + tuple(n + a + b for n, a, b in zip(spec.shape[2:], lo, hi))
    return lowering.insert_slice(v, lowering.fill(TensorSpec(shape, spec.dtype), 0),
                                 [0, 0, *lo], list(spec.shape))


def _im2col(xp, spec: TensorSpec, groups, kernel, out, stride, dilation, order):
    """The windows of xp (N, groups*Cg, *padded): col[g, c, k..., n, p...] = xp[n, g*Cg + c,
    p*s + k*d]. `order` (the five loop names "g", "c",
    "k", "n", "p", "g" first) is the result's layout, returned as the matrices
    (g, order[1] x order[2], order[3] x order[4])."""
    shape, matrices = _window_shapes(spec, groups, kernel, out, order)
    col = _windows(xp, spec, groups, kernel, out, stride, dilation, order,
                   lowering.empty(TensorSpec(shape, spec.dtype)))
    return lowering.reshape(col, shape, matrices, spec.dtype)


def _window_sizes(spec: TensorSpec, groups, kernel, out):
    return {"g": (groups,), "c": (spec.shape[1] // groups,), "k": tuple(kernel),
            "n": (spec.shape[0],), "p": tuple(out)}


def _window_shapes(spec: TensorSpec, groups, kernel, out, order):
    """(the shape of _windows' result, the (g, rows, cols) matrices _im2col makes of it)."""
    sizes = _window_sizes(spec, groups, kernel, out)
    shape = sum((sizes[name] for name in order), ())
    rows = rules.prod(sizes[order[1]] + sizes[order[2]])
    cols = rules.prod(sizes[order[3]] + sizes[order[4]])
    return shape, (groups, rows, cols)


def _windows(xp, spec: TensorSpec, groups, kernel, out, stride, dilation, order, dest):
    """_im2col's gather into `dest` (of _window_shapes' first shape), one dim per loop."""
    sizes = _window_sizes(spec, groups, kernel, out)
    loops, dims = {}, 0
    for name in order:
        loops[name] = list(range(dims, dims + len(sizes[name])))
        dims += len(sizes[name])
    g, c, n = D(loops["g"][0]), D(loops["c"][0]), D(loops["n"][0])
    window = [D(p) * s + D(k) * d for p, k, s, d in zip(loops["p"], loops["k"], stride, dilation)]
    in_map = lowering.affine_map(dims, [n, g * sizes["c"][0] + c] + window)
    return lowering.generic([xp], [dest], [in_map, lowering.identity_map(dims)],
                            ["parallel"] * dims, lambda v, _o: v, [spec.dtype, spec.dtype])


# Marks the function of an image's windows (image_windows) with what it computes.
WINDOWS_ATTR = "ms.windows"
# The ops whose lowerings take one image's windows at a time (per image, one group).
_WINDOW_TAKERS = ("ms.conv", "ms.conv_filter_grad")


def image_windows(lc, x, sx: TensorSpec, i, win: "_Windows", groups, order):
    """Image i's padded windows, as _im2col's (g, rows, cols) matrices. Where another
    convolution of the same input with the same geometry takes them too (a forward and its
    weight gradient), both call one private function that pads and gathers an image (the
    same loop nests were lowered and compiled twice: a Conv2d forward and backward's LLVM
    time ~6% less)."""
    one = TensorSpec((1,) + sx.shape[1:], sx.dtype)
    shape, matrices = _window_shapes(one, groups, win.kernel, win.spatial, order)
    dest = TensorSpec(shape, sx.dtype)
    callee = _shared_windows(lc, x, sx, win, groups, order, tensor_type(dest))
    if callee is None:
        xp, padded = win.prepare(_image(x, sx, i), one)
        return _im2col(xp, padded, groups, win.kernel, win.spatial, win.stride, win.dilation,
                       order)
    empty = lowering.empty(dest)
    col = func.CallOp([empty.type], ir.FlatSymbolRefAttr.get(callee), [x, i, empty]).result
    return lowering.reshape(col, shape, matrices, sx.dtype)


def _shared_windows(lc, x, sx: TensorSpec, win: "_Windows", groups, order, dest_type):
    """The name of the function of image windows (into a tensor of `dest_type`) that this
    convolution shares, made if it is the first of its kind and another will want it; None
    where it takes them alone."""
    if lc.op.name not in _WINDOW_TAKERS or any(isinstance(d, Dim) for d in sx.shape):
        return None  # (an input gradient's windows are of dy dilated, not padded)
    key = ir.StringAttr.get(repr((str(x.type), win.kernel, win.spatial, win.stride,
                                  win.dilation, _geometry_of(lc)[2:4], groups, order)))
    module = enclosing_module(lc.op)
    for fn in functions(module):
        if WINDOWS_ATTR in fn.attributes and fn.attributes[WINDOWS_ATTR] == key:
            return ir.StringAttr(fn.attributes["sym_name"]).value
    if not any(use.operand_number == 0 and _same_geometry_use(use.owner, lc)
               for use in x.uses):
        return None
    name = fresh_symbol(module, "ms_image_windows")
    one = TensorSpec((1,) + sx.shape[1:], sx.dtype)
    with ir.InsertionPoint(module.regions[0].blocks[0]), lc.loc:
        fn = func.FuncOp(name, ([x.type, ir.IndexType.get(), dest_type], [dest_type]),
                         visibility="private")
        fn.attributes[WINDOWS_ATTR] = key
        entry = fn.add_entry_block()
        with ir.InsertionPoint(entry):
            image, i, dest = entry.arguments
            xp, padded = win.prepare(_image(image, sx, i), one)
            func.ReturnOp([_windows(xp, padded, groups, win.kernel, win.spatial, win.stride,
                                    win.dilation, order, dest)])
    return name


def _same_geometry_use(owner, lc) -> bool:
    """Whether `owner` (an op whose first operand is the convolution's input) is another
    ms.conv or ms.conv_filter_grad with the same stride, dilation, padding and groups."""
    op = owner.operation
    if op == lc.op.operation or op.name not in _WINDOW_TAKERS:
        return False
    return all(n in op.attributes and lc.op.attributes[n] == op.attributes[n]
               for n in _ATTRS)


def _accumulator(d):
    return dt.float32 if d in dt.HALF_FLOATS else d


def _groups_as_loop(lc) -> bool:
    """Whether several groups' products are an scf.for of linalg.matmuls (the CPU) rather
    than one batched generic (CUDA, conv=implicit-gemm: a loop whose induction variable
    indexes tensors is a launch-plan node there, and the generic is one kernel)."""
    return lc.options.get("conv") != "implicit-gemm"


def _contract(a, b, gmkn, in_dtype, acc, loop=True):
    """c[g] = a[g] @ b[g] for a (g, m, k) and b (g, k, n), accumulated in `acc`: one
    linalg.matmul (scheduled by the matmul passes) per group, in an scf.for over the groups
    when there are several and `loop` (_groups_as_loop), else a batched generic. (On the CPU
    the batched generic was not tiled: a 16-group 3x3 convolution of 32x128x28x28 took
    242 ms, torch 3.6.)"""
    g, m, k, n = gmkn
    if g > 1 and not loop:
        s = lowering.ScalarBuilder(acc, reassoc=True)
        maps = [lowering.affine_map(4, [D(0), D(1), D(3)]),
                lowering.affine_map(4, [D(0), D(3), D(2)]),
                lowering.affine_map(4, [D(0), D(1), D(2)])]
        return lowering.generic(
            [a, b], [lowering.fill(TensorSpec((g, m, n), acc), 0)], maps,
            ["parallel"] * 3 + ["reduction"],
            lambda x, y, acc_v: s.add(acc_v, s.mul(lowering.cast_scalar(x, in_dtype, acc),
                                                   lowering.cast_scalar(y, in_dtype, acc))),
            [in_dtype, in_dtype, acc])
    if g == 1:
        a2 = lowering.reshape(a, (1, m, k), (m, k), in_dtype)
        b2 = lowering.reshape(b, (1, k, n), (k, n), in_dtype)
        c = linalg.matmul(a2, b2, outs=[lowering.fill(TensorSpec((m, n), acc), 0)])
        return lowering.reshape(c, (m, n), (1, m, n), acc)
    loop = _row_block_loop(g, lowering.empty(TensorSpec((g, m, n), acc)))
    with ir.InsertionPoint(loop.body):
        i, c = loop.induction_variable, loop.inner_iter_args[0]
        a2 = _group_of(a, (g, m, k), in_dtype, i)
        b2 = _group_of(b, (g, k, n), in_dtype, i)
        product = linalg.matmul(a2, b2, outs=[lowering.fill(TensorSpec((m, n), acc), 0)])
        scf.YieldOp([tensor.insert_slice(product, c, [i], [], [], [_dynamic(), 0, 0],
                                         [1, m, n], [1, 1, 1])])
    return loop.results[0]


def _group_of(v, shape, dtype, i):
    """Group i of v (g, r, c) as an (r, c) tensor."""
    _, r, c = shape
    return tensor.extract_slice(tensor_type(TensorSpec((r, c), dtype), storage=True), v, [i],
                                [], [], [_dynamic(), 0, 0], [1, r, c], [1, 1, 1])


# Products with fewer columns than this are dot products of rows instead (_dot_rows): two
# 512-bit vectors of float32, the widest register tile row any x86 vector ISA gives a matmul
# kernel; narrower, its tiles are all edge.
NARROW_COLUMNS = 32


def _dot_rows(a, b, gmkn, in_dtype, acc):
    """c[g] = a[g] @ b[g]^T for a (g, m, k) and b (g, n, k), as _contract returns it: each
    element one dot product of two contiguous rows, the reduction innermost (vectorized
    along k). For products with few columns and a long reduction: a LeNet5 conv's 1x5x5
    weight gradient (6 x 25 from 784 positions per image) ran at 6 GFLOP/s as a matmul,
    whose register tiles were all edge."""
    g, m, k, n = gmkn
    s = lowering.ScalarBuilder(acc, reassoc=True)

    def body(x, y, acc_v):
        return s.add(acc_v, s.mul(lowering.cast_scalar(x, in_dtype, acc),
                                  lowering.cast_scalar(y, in_dtype, acc)))
    if g == 1:
        a2 = lowering.reshape(a, (1, m, k), (m, k), in_dtype)
        b2 = lowering.reshape(b, (1, n, k), (n, k), in_dtype)
        maps = [lowering.affine_map(3, [D(0), D(2)]), lowering.affine_map(3, [D(1), D(2)]),
                lowering.affine_map(3, [D(0), D(1)])]
        return lowering.generic([a2, b2], [lowering.fill(TensorSpec((m, n), acc), 0)], maps,
                                ["parallel"] * 2 + ["reduction"], body, [in_dtype, in_dtype, acc])
    maps = [lowering.affine_map(4, [D(0), D(1), D(3)]), lowering.affine_map(4, [D(0), D(2), D(3)]),
            lowering.affine_map(4, [D(0), D(1), D(2)])]
    return lowering.generic([a, b], [lowering.fill(TensorSpec((g, m, n), acc), 0)], maps,
                            ["parallel"] * 3 + ["reduction"], body, [in_dtype, in_dtype, acc])


def _to_output(c, acc, out: TensorSpec, groups, n, spatial):
    """The contraction's (g, Og, N*P) as the (N, g*Og, *spatial) result, cast from `acc`."""
    og = out.shape[1] // groups
    r = len(spatial)
    src = lowering.reshape(c, (groups, og, n * rules.prod(spatial)),
                           (groups, og, n) + tuple(spatial), acc)
    dims = 3 + r   # result loops (n, g, o, p...)
    in_map = lowering.affine_map(dims, [D(1), D(2), D(0)] + [D(3 + i) for i in range(r)])
    grouped = TensorSpec((n, groups, og) + tuple(spatial), out.dtype)
    y = lowering.generic([src], [lowering.empty(grouped)], [in_map, lowering.identity_map(dims)],
                         ["parallel"] * dims, lambda v, _o: lowering.cast_scalar(v, acc, out.dtype),
                         [acc, out.dtype])
    return lowering.reshape(y, grouped.shape, out.shape, out.dtype)


def _dilate(dy, spec: TensorSpec, sizes, begin, stride):
    """Zeros of (N, O, *sizes) holding dy[..., q] at position q*stride + begin per spatial
    dim; the rows of dy that fall outside (begin < 0, or past the end) are dropped."""
    first, count = [], []
    for q, b, s, z in zip(spec.shape[2:], begin, stride, sizes):
        lo = max(0, -(b // s) if b < 0 else 0)
        hi = min(q - 1, (z - 1 - b) // s)
        first.append(lo)
        count.append(hi - lo + 1)
    zeros = lowering.fill(TensorSpec(spec.shape[:2] + tuple(sizes), spec.dtype), 0)
    if min(count) <= 0:
        return zeros
    kept = spec.shape[:2] + tuple(count)
    if kept != spec.shape:  # (a dynamic batch is kept whole: sizes given at run time)
        dy = lowering.extract_slice(dy, TensorSpec(kept, spec.dtype), [0, 0, *first],
                                    list(kept))
    at = [f * s + b for f, s, b in zip(first, stride, begin)]
    return lowering.insert_slice(dy, zeros, [0, 0, *at], list(kept), [1, 1, *stride])


def _flipped_per_group(w, spec: TensorSpec, groups):
    """wt[g, c, o, k...] = w[g*Og + o, c, K-1-k...]: the weight of the transposed
    convolution, channel dims swapped per group and the kernel reversed; without the g dim
    for one group, (C, O, *K) as a convolution's weight is (the input gradient's windows
    product is then the same loop nest as a forward convolution of those shapes: one
    function for both, compiled once). A gather (indices computed in the body): an indexing
    map with a negative coefficient cannot be tiled."""
    og, cg, kernel = spec.shape[0] // groups, spec.shape[1], spec.shape[2:]
    lead = (groups,) if groups > 1 else ()
    shape = lead + (cg, og) + kernel
    index = ir.IndexType.get()

    def body(_out):
        at = [linalg.IndexOp(i).result for i in range(len(shape))]
        c = lambda v: arith.constant(index, v)  # noqa: E731
        g, (ch, o, *ks) = (at[0], at[1:]) if lead else (None, at)
        coords = [o if g is None else arith.addi(arith.muli(g, c(og)), o), ch]
        coords += [arith.subi(c(k - 1), ki) for k, ki in zip(kernel, ks)]
        return lowering.to_compute(tensor.extract(w, coords), spec.dtype)
    out = TensorSpec(shape, spec.dtype)
    return lowering.generic([], [lowering.empty(out)], [lowering.identity_map(len(shape))],
                            ["parallel"] * len(shape), body, [spec.dtype]), shape


def _channels_first(dy, spec: TensorSpec, groups):
    """A copy of dy (N, O, *P) as (g, Og, N, *P)."""
    n, o, rest = spec.shape[0], spec.shape[1], spec.shape[2:]
    og, dims = o // groups, 3 + len(rest)
    in_map = lowering.affine_map(dims, [D(2), D(0) * og + D(1)] +
                                 [D(3 + i) for i in range(len(rest))])
    shape = (groups, og, n) + rest
    return lowering.generic([dy], [lowering.empty(TensorSpec(shape, spec.dtype))],
                            [in_map, lowering.identity_map(dims)], ["parallel"] * dims,
                            lambda e, _o: e, [spec.dtype, spec.dtype])


def _geometry_of(lc):
    return _geometry(lc.attrs, lc.out.rank - 2)


class _Windows(NamedTuple):
    """Which windows an im2col gathers: of the input made ready by `prepare(value, spec) ->
    (value, spec)` (padded, or dilated and padded), `kernel`-sized, one per output position
    of `spatial`, with `stride` and `dilation`."""
    prepare: object
    kernel: tuple
    spatial: tuple
    stride: tuple
    dilation: tuple


def _image_product(x, sx, wm, win: _Windows, groups, acc, out: TensorSpec, loop=True):
    """out[n] = wm (g, M, K) @ the windows of image n, for the images of x at once."""
    xp, padded = win.prepare(x, sx)
    col = _im2col(xp, padded, groups, win.kernel, win.spatial, win.stride, win.dilation,
                  "gcknp")
    g, m, k = ir.RankedTensorType(wm.type).shape
    npix = sx.shape[0] * rules.prod(win.spatial)
    return _contract(wm, col, (g, m, k, npix), sx.dtype, acc, loop)


# Tags the direct contraction of a convolution (see _direct_product) for
# ms-gpu-conv-implicit-gemm (passes/gpu_conv.py), with its stride and dilation.
IMPLICIT_GEMM_ATTR = "ms.implicit_gemm"


def implicit_gemm_applies(lc, sx: TensorSpec, groups) -> bool:
    """The one place deciding which convolutions (forward, input gradient) lower to the direct
    contraction that CUDA's ms-gpu-conv-implicit-gemm makes an implicit-GEMM kernel
    (conv=implicit-gemm): one group and static sizes. The others keep im2col + matmul."""
    static = not any(isinstance(d, Dim) for d in sx.shape + lc.out.shape)
    return lc.options.get("conv") == "implicit-gemm" and groups == 1 and static


def _direct_product(x, sx, weight, win: _Windows, out: TensorSpec, acc):
    """y (N, F, *P) = sum over c, k of xp[n, c, p*s + k*d] * w[f, c, k] for the input made
    ready by win.prepare (padded, or dilated and padded) and `weight` = (w, spec of
    (F, C, *K)): one linalg.generic over (n, f, p..., c, k...), accumulated in `acc`, no
    im2col matrix. Tagged with its geometry: a GPU pass builds the implicit-GEMM kernel from
    it; untagged, or elsewhere, it is an ordinary contraction."""
    w, sw = weight
    xp, padded = win.prepare(x, sx)
    r = len(win.kernel)
    dims = 3 + 2 * r
    p = [D(2 + i) for i in range(r)]
    k = [D(3 + r + i) for i in range(r)]
    window = [pi * s + ki * d for pi, ki, s, d in zip(p, k, win.stride, win.dilation)]
    maps = [lowering.affine_map(dims, [D(0), D(2 + r)] + window),
            lowering.affine_map(dims, [D(1), D(2 + r)] + k),
            lowering.affine_map(dims, [D(0), D(1)] + p)]
    s = lowering.ScalarBuilder(acc, reassoc=True)
    y = lowering.generic(
        [xp, w], [lowering.fill(TensorSpec(out.shape, acc), 0)], maps,
        ["parallel"] * (2 + r) + ["reduction"] * (1 + r),
        lambda a, b, o: s.add(o, s.mul(lowering.cast_scalar(a, padded.dtype, acc),
                                       lowering.cast_scalar(b, sw.dtype, acc))),
        [padded.dtype, sw.dtype, acc])
    y.owner.attributes[IMPLICIT_GEMM_ATTR] = ir.DictAttr.get({
        "stride": ir.DenseI64ArrayAttr.get(list(win.stride)),
        "dilation": ir.DenseI64ArrayAttr.get(list(win.dilation))})
    if acc is out.dtype:
        return y
    return lowering.elementwise([y], [TensorSpec(out.shape, acc)], out,
                                lambda v: lowering.cast_scalar(v, acc, out.dtype))


def _windows_product(lc, x, sx, wm, win: _Windows, groups, epilogue=None, weight=None):
    """The (N, g*M, *spatial) result of wm times the windows of every image, followed by the
    fused `epilogue` (root Expr, the leaf standing for the product) when given: with one
    group and several images, an scf.forall over the images (threads take whole images, each
    image's im2col matrix is used while it is in cache, the batch's being K times the input
    written and read back through memory, and the epilogue runs on the image's result while
    it is in cache too); otherwise one product for the batch, then the epilogue. A dynamic
    batch takes the loop over images whatever the groups (each image's sizes are static).
    `weight` (w, spec of (O, C, *K)) is wm's tensor form, for the direct contraction
    (implicit_gemm_applies)."""
    out, acc = lc.out, _accumulator(lc.out.dtype)
    n = sx.shape[0]
    root = epilogue[0] if epilogue else None
    direct = direct_grouped_applies(lc, sx, groups, win)
    if ((not isinstance(n, Dim) and n == 1)
            or lc.options.get("conv") != "per-image"
            or (root is not None and root.spec.shape != out.shape)):
        if weight is not None and implicit_gemm_applies(lc, sx, groups):
            y = _direct_product(x, sx, weight, win, out, acc)
        elif direct:
            y = cast_to(direct_grouped(x, sx, wm, win, groups, acc), acc, out)
        else:
            c = _image_product(x, sx, wm, win, groups, acc, out, _groups_as_loop(lc))
            y = _to_output(c, acc, out, groups, n, win.spatial)
        if root is None:
            return y
        return lowering.materialize(lowering.rebind(
            root, lambda v, s: (y, out) if v is epilogue[1] else None))
    final = TensorSpec(out.shape, root.spec.dtype if root is not None else out.dtype)
    m, npix = out.shape[1], rules.prod(win.spatial)
    rows = _block_rows(lc, sx, ir.RankedTensorType(wm.type).shape[2], win, groups)
    if rows:
        return _over_images(final, lambda i, shared: _image_in_row_blocks(
            x, sx, wm, win, rows, acc, out, epilogue, i, _image(shared, final, i)))

    def image(i, shared):
        one = TensorSpec((1,) + sx.shape[1:], sx.dtype)
        if direct:
            c = lowering.reshape(direct_grouped(_image(x, sx, i), one, wm, win, groups, acc),
                                 (1, m) + tuple(win.spatial), (1, m, npix), acc)
        else:
            g, og, ckk = ir.RankedTensorType(wm.type).shape
            c = _contract(wm, image_windows(lc, x, sx, i, win, groups, "gcknp"),
                          (g, og, ckk, npix), sx.dtype, acc)
        if groups > 1 and not direct:  # (g, Og, P): the image's (1, O, P), channels in group order
            c = lowering.reshape(c, (groups, m // groups, npix), (1, m, npix), acc)
        # (a cast or an epilogue writes the output's slice for the image directly)
        return lowering.reshape(_image_epilogue(c, acc, out, epilogue, i,
                                                _image(shared, final, i)),
                                (1, m, npix), (1,) + out.shape[1:], final.dtype)
    return _over_images(final, image)


def _block_rows(lc, sx, ckk, win: _Windows, groups):
    """Output rows per block of an image's 2-D one-group product (a forward's, an input
    gradient's or a transposed weight gradient's) whose im2col matrix is larger than the
    cache budget (convert-ms-to-linalg's conv-block-bytes: on the CPU 3/4 of the L2, the
    rest for the weights and the block's product), so that each block's matrix is written
    and read back while in L2 (the whole image's, 7 MB for a ResNet block's 64x56x56 layer,
    went through L3); None for one block. The rows divide the height (whole blocks: every
    product static)."""
    budget = lc.options.get("conv-block-bytes", 0) if lc.options else 0
    if not budget or groups != 1 or len(win.spatial) != 2:
        return None
    height, width = win.spatial
    row_bytes = ckk * width * sx.dtype.itemsize
    if row_bytes * height <= budget:
        return None
    fits = [r for r in range(1, height) if height % r == 0 and r * row_bytes <= budget]
    return max(fits) if fits else None


def _image_in_row_blocks(x, sx, wm, win: _Windows, rows, acc, out: TensorSpec, epilogue, i,
                         tile):
    """Image i's product (and epilogue) written into `tile` (1, M, H, W) block by block of
    `rows` output rows: an scf.for whose body gathers the block's windows (an im2col matrix
    of C*K x rows*W), multiplies and writes the block's rows."""
    one = TensorSpec((1,) + sx.shape[1:], sx.dtype)
    xp, padded = win.prepare(_image(x, sx, i), one)
    height, width = win.spatial
    loop = _row_block_loop(height // rows, tile)
    with ir.InsertionPoint(loop.body):
        b, current = loop.induction_variable, loop.inner_iter_args[0]
        first, col = _block_windows(xp, padded, win, b, rows)
        m, ckk = ir.RankedTensorType(wm.type).shape[1:]
        c = _contract(wm, col, (1, m, ckk, rows * width), sx.dtype, acc)
        scf.YieldOp([_write_block(c, acc, out, epilogue, i, first, rows, current)])
    return loop.results[0]


def _row_block_loop(blocks, init):
    """An scf.for over `blocks` blocks of rows carrying `init`."""
    c = lowering.index_constant
    return scf.ForOp(c(0), c(blocks), c(1), [init])


def _block_windows(xp, padded: TensorSpec, win: _Windows, b, rows):
    """(the block's first output row, the im2col matrix (1, C*K, rows*W) of block b of
    `rows` output rows) from the padded image xp (1, C, Hp, Wp): its rows that the block's
    windows read, gathered."""
    span = (rows - 1) * win.stride[0] + (win.kernel[0] - 1) * win.dilation[0] + 1
    block_in = TensorSpec(padded.shape[:2] + (span, padded.shape[3]), padded.dtype)
    first = arith.muli(b, lowering.index_constant(rows))
    xb = tensor.extract_slice(tensor_type(block_in, storage=True), xp, [
        arith.muli(first, lowering.index_constant(win.stride[0]))], [], [],
        [0, 0, _dynamic(), 0], list(block_in.shape), [1, 1, 1, 1])
    return first, _im2col(xb, block_in, 1, win.kernel, (rows, win.spatial[1]), win.stride,
                          win.dilation, "gcknp")


def _write_block(c, acc, out: TensorSpec, epilogue, i, first, rows, tile):
    """The block's product c (1, M, rows*W), cast and through the epilogue (its batch-sized
    operands read at image i and the block's rows), inserted into the image's `tile`."""
    n, m, height, width = out.shape
    block = TensorSpec((1, m, rows, width), out.dtype)
    offsets, sizes = [0, 0, _dynamic(), 0], [1, m, rows, width]

    def block_of(v, s):
        if not (s.rank == out.rank and s.shape[0] == n):
            return None
        tall = s.shape[2] == height  # (else a size-1 axis, broadcast over the rows)
        shape = (1, s.shape[1], rows if tall else 1, s.shape[3])
        return tensor.extract_slice(
            tensor_type(TensorSpec(shape, s.dtype), storage=True), v,
            [i] + ([first] if tall else []), [], [],
            [_dynamic(), 0, _dynamic() if tall else 0, 0], list(shape),
            [1, 1, 1, 1]), TensorSpec(shape, s.dtype)
    value = _through_epilogue(lowering.reshape(c, (1, m, rows * width), block.shape, acc),
                              acc, block, epilogue, block_of)
    dest = tensor.extract_slice(tensor_type(TensorSpec(block.shape, value.spec.dtype),
                                            storage=True), tile, [first], [], [], offsets,
                                sizes, [1, 1, 1, 1])
    written = lowering.materialize(value, out=dest)
    return tensor.insert_slice(written, tile, [first], [], [], offsets, sizes, [1, 1, 1, 1])


def _through_epilogue(c, acc, spec: TensorSpec, epilogue, operand_slice):
    """The product c (of spec's shape, in `acc`) cast to spec's dtype, then through the fused
    `epilogue` (root Expr, product leaf) when given, each other leaf read through
    operand_slice(value, spec) -> (value, spec), or as it is where that gives None."""
    value = lowering.Expr(spec, [c], [TensorSpec(spec.shape, acc)],
                          lambda v: lowering.cast_scalar(v, acc, spec.dtype))
    if epilogue is None:
        return value
    root, product = epilogue
    return lowering.rebind(
        root, lambda v, s: (value, value.spec) if v is product else operand_slice(v, s))


def _over_images(result: TensorSpec, image):
    """An scf.forall over the images (result.shape[0] of them) building `result`: image(i,
    shared) gives image i's slice (1, ...), which goes to row i of the shared result."""
    loop = scf.ForallOp([0], [lowering.loop_bound(result.shape[0])], [1],
                        shared_outs=[lowering.empty(result)])
    body = loop.regions[0].blocks[0]
    with ir.InsertionPoint(body):
        i, shared = body.arguments
        tile = image(i, shared)
        in_parallel = scf.InParallelOp()
        with ir.InsertionPoint(in_parallel.regions[0].blocks[0]):
            tensor.parallel_insert_slice(tile, shared, [i], [], [],
                                         [_dynamic()] + [0] * (result.rank - 1),
                                         [1] + list(result.shape[1:]), [1] * result.rank)
    return loop.results[0]


def _dynamic():
    """The static offset that says "given as an operand" (the image index)."""
    return ir.ShapedType.get_dynamic_stride_or_offset()


def _image(v, spec: TensorSpec, i):
    """Image i of v (N, ...) as (1, ...)."""
    one = TensorSpec((1,) + spec.shape[1:], spec.dtype)
    return tensor.extract_slice(tensor_type(one, storage=True), v, [i], [], [],
                                [_dynamic()] + [0] * (spec.rank - 1), list(one.shape),
                                [1] * spec.rank)


def _image_epilogue(c, acc, out: TensorSpec, epilogue, i, dest=None):
    """Image i's product c (1, M, P), in `acc`, as the tile (1, M, P) of the result: cast to
    the op's dtype, then the fused epilogue with every batch-sized operand read at image i,
    written into `dest` (the output's slice for the image: no copy afterwards) when given."""
    n = out.shape[0]
    if epilogue is None and acc is out.dtype:
        return c
    shape = (1,) + out.shape[1:]

    def image_of(v, s):
        if s.rank == out.rank and s.shape[0] == n:
            return _image(v, s, i), TensorSpec((1,) + s.shape[1:], s.dtype)
        return None
    value = _through_epilogue(
        lowering.reshape(c, (1, out.shape[1], rules.prod(shape[2:])), shape, acc), acc,
        TensorSpec(shape, out.dtype), epilogue, image_of)
    y = lowering.materialize(value, out=dest)
    return lowering.reshape(y, value.spec.shape, (1, out.shape[1], rules.prod(shape[2:])),
                            value.spec.dtype)


def _padded(lo, hi):
    def prepare(v, spec):
        shape = spec.shape[:2] + tuple(n + a + b for n, a, b in zip(spec.shape[2:], lo, hi))
        return _pad(v, spec, lo, hi), TensorSpec(shape, spec.dtype)
    return prepare


def _lower_conv(lc, x, w, epilogue=None):
    sx, sw = lc.ins
    stride, dilation, lo, hi, groups = _geometry_of(lc)
    og, ckk = lc.out.shape[1] // groups, rules.prod(sw.shape[1:])
    wm = lowering.reshape(w, sw.shape, (groups, og, ckk), sw.dtype)
    win = _Windows(_padded(lo, hi), sw.shape[2:], lc.out.shape[2:], stride, dilation)
    if direct_grouped_applies(lc, sx, groups, win) and any(e > 1 for e in stride):
        win = win._replace(prepare=_padded(lo, phase_padding(sx.shape[2:], lo, hi, win)))
    return _windows_product(lc, x, sx, wm, win, groups, epilogue, weight=(w, sw))


def _lower_input_grad(lc, dy, w):
    """dx = the stride-1 convolution of dy, dilated by the stride and padded by
    (K-1)*d - pad_lo, with the kernel flipped and its channel dims swapped."""
    sdy, sw = lc.ins
    stride, dilation, lo, _hi, groups = _geometry_of(lc)
    kernel, spatial = sw.shape[2:], lc.out.shape[2:]
    reach = [(k - 1) * d for k, d in zip(kernel, dilation)]
    sizes = tuple(n + e for n, e in zip(spatial, reach))

    def prepare(v, spec):
        zp = _dilate(v, spec, sizes, [e - a for e, a in zip(reach, lo)], stride)
        return zp, TensorSpec(spec.shape[:2] + sizes, spec.dtype)
    flipped, wt_shape = _flipped_per_group(w, sw, groups)  # (g, Cg, Og, *K); (C, O, *K)
    win = _Windows(prepare, kernel, spatial, (1,) * len(kernel), dilation)
    okk = (sw.shape[0] // groups) * rules.prod(kernel)
    wt = lowering.reshape(flipped, wt_shape, (groups, sw.shape[1], okk), sw.dtype)
    weight = (flipped, TensorSpec(wt_shape, sw.dtype)) if groups == 1 else None
    return _windows_product(lc, dy, sdy, wt, win, groups, weight=weight)


def _filter_grad_batched(x, sx, dy, sdy, win: _Windows, groups, acc, out: TensorSpec,
                         loop=True):
    """dW (g, Og, Cg*K) = dy (g, Og, N*P) @ im2col(x) (g, N*P, Cg*K), for the whole batch."""
    n, og = sx.shape[0], out.shape[0] // groups
    xp, padded = win.prepare(x, sx)
    col = _im2col(xp, padded, groups, win.kernel, win.spatial, win.stride, win.dilation,
                  "gnpck")
    npix, ckk = n * rules.prod(win.spatial), rules.prod(out.shape[1:])
    if n == 1:
        dym = lowering.reshape(dy, sdy.shape, (groups, og, npix), sdy.dtype)
    else:
        dym = lowering.reshape(_channels_first(dy, sdy, groups), (groups, og, n) + win.spatial,
                               (groups, og, npix), sdy.dtype)
    return _contract(dym, col, (groups, og, npix, ckk), sx.dtype, acc, loop)


def _filter_grad_per_image(lc, x, sx, dy, sdy, win: _Windows, groups, acc, out: TensorSpec,
                           rows_per_block=None):
    """dW (g, Og, Cg*K) as the sum over images of dy[n] (g, Og, P) @ im2col(x[n])
    (g, P, Cg*K): an scf.forall writes each image's product (its im2col matrix used while in
    cache), then one reduction over the images adds them.

    One group of 32 columns or more: each image's product is transposed, dW^T (Cg*K, Og) =
    im2col(x[n]) (Cg*K, P) @ dy[n]^T (P, Og), and the sum over images transposed once.
    That im2col matrix is a copy of the input's rows (runs of output-width floats, vectorized)
    where the (P, Cg*K) one gathered kernel-width pieces (3 floats at a time for 3x3), and
    what is transposed is dy's image (P x Og), not the im2col matrix (P x Cg*K, 9x larger for
    3x3 and Og = Cg). AMD EPYC, one process, calls alternated: the ResNet block's training
    step (32x64x56x56) 314-316 -> 272-282 ms, LeNet5's 1.55 -> 1.31 ms (its second
    convolution)."""
    n, o, ckk = sx.shape[0], out.shape[0], rules.prod(out.shape[1:])
    og, npix = o // groups, rules.prod(win.spatial)
    narrow = ckk < NARROW_COLUMNS  # (ckk: one group's columns)

    transposed = not narrow and groups == 1

    def image(i, _shared):
        if transposed and rows_per_block:
            one = TensorSpec((1,) + sx.shape[1:], sx.dtype)
            xp, padded = win.prepare(_image(x, sx, i), one)
            return _filter_image_in_row_blocks(xp, padded, dy, sdy, i, win, rows_per_block,
                                               ckk, sx.dtype, acc)
        col = image_windows(lc, x, sx, i, win, groups,
                            "gcknp" if narrow or transposed else "gnpck")
        dyi = lowering.reshape(_image(dy, sdy, i), (1,) + sdy.shape[1:], (groups, og, npix),
                               sdy.dtype)
        if transposed:
            return _contract(col, _transposed_image(dyi, og, npix, sdy.dtype),
                             (1, ckk, npix, og), sx.dtype, acc)
        product = _dot_rows if narrow else _contract
        c = product(dyi, col, (groups, og, npix, ckk), sx.dtype, acc)
        return c if groups == 1 else lowering.reshape(c, (groups, og, ckk), (1, o, ckk), acc)
    rows, cols = (ckk, o) if transposed else (o, ckk)
    parts = _over_images(TensorSpec((n, rows, cols), acc), image)
    total = lowering.reduce(parts, TensorSpec((n, rows, cols), acc), (0,), acc, 0,
                            lambda a, v: lowering.ScalarBuilder(acc).add(a, v))
    if transposed:
        total = _transposed(total, (ckk, o), acc)
    return lowering.reshape(total, (o, ckk), (groups, og, ckk), acc)


def _filter_image_in_row_blocks(xp, padded, dy, sdy, i, win: _Windows, rows, ckk, in_dtype,
                                acc):
    """Image i's transposed weight gradient (1, C*K, O) summed block by block of `rows`
    output rows: each block's windows (C*K x rows*W) @ its rows of dy transposed
    (rows*W x O), accumulated in one product's output."""
    o, width = sdy.shape[1], win.spatial[1]
    cols = rows * width
    loop = _row_block_loop(win.spatial[0] // rows, lowering.fill(TensorSpec((ckk, o), acc), 0))
    with ir.InsertionPoint(loop.body):
        b, total = loop.induction_variable, loop.inner_iter_args[0]
        first, col = _block_windows(xp, padded, win, b, rows)
        dyb = tensor.extract_slice(
            tensor_type(TensorSpec((1, o, rows, width), sdy.dtype), storage=True), dy,
            [i, first], [], [], [_dynamic(), 0, _dynamic(), 0], [1, o, rows, width],
            [1, 1, 1, 1])
        dyt = _transposed_image(lowering.reshape(dyb, (1, o, rows, width), (1, o, cols),
                                                 sdy.dtype), o, cols, sdy.dtype)
        product = linalg.matmul(lowering.reshape(col, (1, ckk, cols), (ckk, cols), in_dtype),
                                lowering.reshape(dyt, (1, cols, o), (cols, o), sdy.dtype),
                                outs=[total])
        scf.YieldOp([product])
    return lowering.reshape(loop.results[0], (ckk, o), (1, ckk, o), acc)


def _transposed(m, shape, dtype):
    """The transpose of the 2-D tensor m of `shape`."""
    out = lowering.empty(TensorSpec(tuple(reversed(shape)), dtype))
    return linalg.transpose(m, outs=[out], permutation=[1, 0]).results[0]


def _transposed_image(dyi, og, npix, dtype):
    """An image's output gradient (1, Og, P) as (1, P, Og)."""
    dyt = _transposed(lowering.reshape(dyi, (1, og, npix), (og, npix), dtype), (og, npix), dtype)
    return lowering.reshape(dyt, (npix, og), (1, npix, og), dtype)


def _direct_filter_grad_per_image(x, sx, dy, sdy, win, groups, acc, out: TensorSpec):
    """direct_filter_grad image by image (its shifted copy of the image used in cache), the
    images' partial weight gradients summed after."""
    n = sx.shape[0]
    part = TensorSpec(out.shape, acc)

    def image(i, _shared):
        one_x = TensorSpec((1,) + sx.shape[1:], sx.dtype)
        one_dy = TensorSpec((1,) + sdy.shape[1:], sdy.dtype)
        w = direct_filter_grad(_image(x, sx, i), one_x, _image(dy, sdy, i), one_dy, win,
                               groups, acc, part)
        return lowering.reshape(w, out.shape, (1,) + out.shape, acc)
    parts = _over_images(TensorSpec((n,) + out.shape, acc), image)
    total = lowering.reduce(parts, TensorSpec((n,) + out.shape, acc), (0,), acc, 0,
                            lambda a, v: lowering.ScalarBuilder(acc).add(a, v))
    return cast_to(total, acc, out)


def _lower_filter_grad(lc, x, dy):
    """Per image when the images' products are small next to the batch's im2col matrix
    (O output channels against P output positions), else for the batch at once."""
    sx, sdy = lc.ins
    stride, dilation, lo, hi, groups = _geometry_of(lc)
    out = lc.out
    win = _Windows(_padded(lo, hi), out.shape[2:], sdy.shape[2:], stride, dilation)
    acc = _accumulator(out.dtype)
    n, og, ckk = sx.shape[0], out.shape[0] // groups, rules.prod(out.shape[1:])
    per_image = lc.options.get("conv") == "per-image" and (
        isinstance(n, Dim)  # (a dynamic batch has only the per-image form yet)
        or (n > 1 and 4 * out.shape[0] <= rules.prod(win.spatial)))
    if direct_grouped_applies(lc, sx, groups, win):
        if per_image_dots(win):
            if isinstance(n, Dim) or n > 1:
                return _direct_filter_grad_per_image(x, sx, dy, sdy, win, groups, acc, out)
        elif any(e > 1 for e in stride):  # (the partial rows read the stride phases)
            win = win._replace(prepare=_padded(lo, phase_padding(sx.shape[2:], lo, hi, win)))
        return direct_filter_grad(x, sx, dy, sdy, win, groups, acc, out)
    if per_image:
        c = _filter_grad_per_image(lc, x, sx, dy, sdy, win, groups, acc, out,
                                   _block_rows(lc, sx, ckk, win, groups))
    else:
        c = _filter_grad_batched(x, sx, dy, sdy, win, groups, acc, out, _groups_as_loop(lc))
    c = cast_to(c, acc, TensorSpec((groups, og, ckk), out.dtype))
    return lowering.reshape(c, (groups, og, ckk), out.shape, out.dtype)


# ------------------------------------------------------------------ the ops

def _same_geometry(g, **extra):
    return dict({n: g.attrs[n] for n in _ATTRS}, **extra)


def _conv(g, x, w):
    return g.emit("ms.conv", x, w, **_same_geometry(g))


def _input_grad(g, dy, w, input_shape):
    return g.emit("ms.conv_input_grad", dy, w,
                  **_same_geometry(g, input_shape=batch_as_attr(input_shape)))


def _filter_grad(g, x, dy, kernel_shape):
    return g.emit("ms.conv_filter_grad", x, dy, **_same_geometry(g, kernel_shape=kernel_shape))


_DOC_ATTRS = ("stride, dilation, pad_lo, pad_hi per spatial dim, groups")


# vmap: a mapped weight makes B times the groups, each element's channels and filters groups
# of their own (JAX's rule for a batched convolution's feature_group_count).

def _as_channels(b, i):
    """Operand i (N, C, ...) of every element as the channels of one batch of images,
    (N, B*C, ...)."""
    spec = b.in_specs[i]
    v = b.materialized(b.inputs[i], b.dims[i], at=1)
    return b.reshape(v, (spec.shape[0], b.size * spec.shape[1]) + spec.shape[2:])


def _stacked(b, i):
    """Operand i (O, C/groups, ...) of every element stacked as more filters, (B*O, ...)."""
    spec = b.in_specs[i]
    return b.reshape(b.front(i), (b.size * spec.shape[0],) + spec.shape[1:])


def _grouped(b, operands, out_at, **shape):
    """The op with B times the groups; its result's (B*K) axis at `out_at` split as (B, K)."""
    out = b.emit(b.opdef.name, *operands, **dict(b.attrs, groups=b.size * b.attrs["groups"],
                                                 **shape))
    s = b.out_spec.shape
    return b.reshape(out, s[:out_at] + (b.size,) + s[out_at:]), out_at


def _conv_batch(b):
    """Images mapped alone: folded into N. A mapped weight: one grouped convolution."""
    if b.dims[1] is None:
        return batching.fold_leading(images=(0,))(b)
    return _grouped(b, [_as_channels(b, 0), _stacked(b, 1)], 1)


def _input_grad_batch(b):
    if b.dims[1] is None:
        return batching.fold_leading(images=(0,), shape_attrs=("input_shape",))(b)
    shape = tuple(b.attrs["input_shape"])
    return _grouped(b, [_as_channels(b, 0), _stacked(b, 1)], 1,
                    input_shape=(shape[0], b.size * shape[1]) + shape[2:])


def _filter_grad_batch(b):
    """Every element has a weight gradient of its own: always the grouped form."""
    kernel = tuple(b.attrs["kernel_shape"])
    return _grouped(b, [_as_channels(b, 0), _as_channels(b, 1)], 0,
                    kernel_shape=(b.size * kernel[0],) + kernel[1:])

# A bias, activation or inference BatchNorm after a convolution runs on each image's result
# inside the convolution's loop over images (see _windows_product).
_CONV = FusionRole("conv", epilogue_inside=True)

define("ms.conv", ["x", "weight"], _conv_infer, attrs=_ATTRS, signature=("T", "T"),
       dtypes=dt.FLOATS, lower=_lower_conv, fusion=_CONV,
       grad=each(lambda g, d: _input_grad(g, d, g.y, g.in_specs[0].shape),
                 lambda g, d: _filter_grad(g, g.x, d, g.in_specs[1].shape)),
       batch=_conv_batch,
       doc="N-D convolution of x (N, C, *spatial) by weight (O, C/groups, *kernel) "
           f"(MindSpore Conv1D/2D/3D, NCHW): {_DOC_ATTRS}; float16 and bfloat16 accumulate "
           "in float32")

define("ms.conv_input_grad", ["dy", "weight"], _input_grad_infer,
       attrs={**_ATTRS, "input_shape": "ints"}, signature=("T", "T"), dtypes=dt.FLOATS,
       lower=_lower_input_grad,
       grad=each(lambda g, d: _conv(g, d, g.y),
                 lambda g, d: _filter_grad(g, d, g.x, g.in_specs[1].shape)),
       batch=_input_grad_batch,
       doc="the gradient of ms.conv with respect to its input, of shape input_shape (the "
           "transposed convolution of dy by weight; MindSpore Conv2DBackpropInput); a batch "
           "of -1 is dy's")

define("ms.conv_filter_grad", ["x", "dy"], _filter_grad_infer,
       attrs={**_ATTRS, "kernel_shape": "ints"}, signature=("T", "T"), dtypes=dt.FLOATS,
       lower=_lower_filter_grad,
       grad=each(lambda g, d: _input_grad(g, g.y, d, g.in_specs[0].shape),
                 lambda g, d: _conv(g, g.x, d)),
       batch=_filter_grad_batch,
       doc="the gradient of ms.conv with respect to its weight, of shape kernel_shape "
           "(MindSpore Conv2DBackpropFilter)")
