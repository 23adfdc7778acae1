"""The direct forms of grouped convolutions with few input channels per group (depthwise
ones and groups of up to DIRECT_MAX_CHANNELS), on the CPU: one loop nest each, no im2col
matrix and no product (dialects/ops/conv.py decides, with direct_grouped_applies, and calls
them).

- direct_grouped: the forward and the input gradient, parallel over the output, each of the
  Cg*K terms of an output element read through a view of the ready input (padded, or dilated
  and padded): LLVM vectorizes the loop along a row of outputs and keeps the sum in registers.
  A strided one first splits the input into its stride phases, so every view has unit
  strides.
- direct_filter_grad: partial sums per position along the last spatial dim, then their sum.

`win` is conv.py's _Windows (prepare, kernel, spatial, stride, dilation).

Why (AMD EPYC, 2 threads, 32x128x28x28 float32, 3x3, against torch's oneDNN in the same
process): the batched product over the groups (an im2col matrix 9x the input, a matmul with
one row per group) ran the forward in 10-11 ms (torch 1.9), the weight gradient in ~14 ms.
"""
import itertools

from ..lazy import ir, tensor

from .. import lowering
from .. import shape_rules as rules
from ..builders import tensor_type
from ..dtypes import TensorSpec


def D(i):
    return ir.AffineDimExpr.get(i)


def _const(v):
    return ir.AffineConstantExpr.get(v)


# Most input channels per group a convolution multiplies directly (with 4, a 3x3 output
# element has 36 terms). Measured for 32x128x28x28, 3x3, 32 groups of 4, in one process
# against torch: on AMD EPYC (znver4) the direct forward was as fast as the products; on
# Intel Xeon (Emerald Rapids) 6.1 against 9.0-10.5 ms (torch 5.0-6.0), and forward plus
# gradients 9.3-12.4 against 23-28 ms.
DIRECT_MAX_CHANNELS = 4
# Most terms (channels per group times kernel elements) of a direct loop nest's output
# element, each an operand of its own: 7x7 windows at most (more would spill registers
# and grow the nest's code).
DIRECT_MAX_TERMS = 49
# Up to 8 channels per group (72 terms for 3x3) the direct nests win too, once an output
# element's terms are summed in chains (_sum_in_chains), where the rows they vectorize
# along fill more than half a vector; a narrower row leaves most lanes idle and the
# products win. Intel Xeon (Emerald Rapids, 16 floats a vector), 32x256xHxW, 3x3, 32 groups
# of 8, forward / forward and gradients, direct against products: 28x28 17.8 / 65 against
# 22 / 132 ms, 14x14 3.3 / 15 against 5.3 / 30, 7x7 1.7 / 13 against 1.0 / 5.7.
WIDE_ROW_MAX_CHANNELS = 8
WIDE_ROW_MAX_TERMS = 72


def direct_grouped_applies(lc, sx: TensorSpec, groups, win) -> bool:
    """The one place deciding which convolutions (forward, input gradient, weight gradient)
    on the CPU (conv=per-image) run as direct loop nests: grouped ones with at most
    DIRECT_MAX_CHANNELS input channels per group (sx: the op's input, x or dy) and
    DIRECT_MAX_TERMS terms, or WIDE_ROW_MAX_CHANNELS and WIDE_ROW_MAX_TERMS where the
    nest's rows (the last of win.spatial) fill more than half a vector of
    convert-ms-to-linalg's conv-vector-bits."""
    if lc.options.get("conv") != "per-image" or groups < 2:
        return False
    cg = sx.shape[1] // groups
    terms = cg * rules.prod(win.kernel)
    if cg <= DIRECT_MAX_CHANNELS and terms <= DIRECT_MAX_TERMS:
        return True
    # (the sums are float32 for half floats: conv.py's _accumulator)
    lanes = lc.options.get("conv-vector-bits", 0) // max(32, sx.dtype.bits)
    return (cg <= WIDE_ROW_MAX_CHANNELS and terms <= WIDE_ROW_MAX_TERMS
            and lanes > 0 and 2 * win.spatial[-1] > lanes)


def _strided_view(xp, padded: TensorSpec, c, cg, groups, k, win, sizes):
    """The elements of xp (N, g*Cg, *S) that kernel offset k of channel c of every group
    meets, (N, g, *P): channel g*Cg + c, position p*s + k*d."""
    n, spatial = sizes[0], sizes[1:]
    shape = (n, groups) + tuple(spatial)
    return tensor.extract_slice(
        tensor_type(TensorSpec(shape, padded.dtype), storage=True), xp, [], [], [],
        [0, c] + [ki * d for ki, d in zip(k, win.dilation)], list(shape),
        [1, cg] + list(win.stride))


def _phase_view(xph, phased: TensorSpec, c, cg, groups, k, win, sizes):
    """_strided_view's elements from the phases of xp (_phases): kernel offset k reads phase
    k*d % s at position p + k*d // s, unit stride along p."""
    n, spatial = sizes[0], tuple(sizes[1:])
    r = len(spatial)
    at = [ki * d for ki, d in zip(k, win.dilation)]
    return tensor.extract_slice(
        tensor_type(TensorSpec((n, groups) + spatial, phased.dtype), storage=True), xph, [],
        [], [], [0, c] + [a % s for a, s in zip(at, win.stride)]
        + [a // s for a, s in zip(at, win.stride)], [n, groups] + [1] * r + list(spatial),
        [1, cg] + [1] * (2 * r))


def _phases(xp, padded: TensorSpec, win):
    """xp (N, C, *S) split by the stride into its phases, (N, C, *s, *Q):
    xph[n, c, a, q] = xp[n, c, q*s + a], so that a strided convolution's windows read unit
    strides (strided reads were gathers: a 3x3 stride-2 depthwise convolution ran 4x slower
    than with stride 1). Q = P + (K-1)*d // s per dim covers every window (_phase_padding
    made S at least Q*s). Its loops run (n, c, a[:-1], q[:-1], q[-1], a[-1]): the last
    phase innermost, unrolled by LLVM into one interleaved read of a row of xp."""
    r = len(win.stride)
    q = [p + (k - 1) * d // s for p, k, d, s in zip(win.spatial, win.kernel, win.dilation,
                                                    win.stride)]
    a_at = [2 + i for i in range(r - 1)] + [2 + 2 * r - 1]
    q_at = [2 + (r - 1) + i for i in range(r)]
    dims = 2 + 2 * r
    read = lowering.affine_map(dims, [D(0), D(1)] + [D(qi) * s + D(ai) for qi, ai, s in
                                                     zip(q_at, a_at, win.stride)])
    write = lowering.affine_map(dims, [D(0), D(1)] + [D(ai) for ai in a_at]
                                + [D(qi) for qi in q_at])
    shape = tuple(padded.shape[:2]) + tuple(win.stride) + tuple(q)
    out = TensorSpec(shape, padded.dtype)
    # (xp is not the first operand indexing q directly: linalg sizes each loop from the
    # output, whose every dim is one loop)
    phases = lowering.generic([xp], [lowering.empty(out)], [read, write], ["parallel"] * dims,
                              lambda v, _o: v, [padded.dtype, padded.dtype])
    return phases, out


def phase_padding(sizes, lo, hi, win):
    """pad_hi, grown where _phases' Q*s passes the padded size."""
    grown = []
    for n, a, b, p, k, d, s in zip(sizes, lo, hi, win.spatial, win.kernel, win.dilation,
                                   win.stride):
        need = (p + (k - 1) * d // s) * s
        grown.append(b + max(0, need - (n + a + b)))
    return grown


def direct_grouped(x, sx: TensorSpec, wm, win, groups, acc):
    """out (N, g*M, *P), in `acc`: the sum over c < Cg and k of xp[n, g*Cg + c, p*s + k*d] *
    wm[g, o, c*K + k] for the input x made ready by win.prepare (padded, or dilated and
    padded) and wm (g, M, Cg*K): one loop nest parallel over the output, each (c, k) term an
    operand of its own (a strided view of xp), so each output element is computed once, in
    registers, and written once, with no im2col matrix."""
    xp, padded = win.prepare(x, sx)
    strided = any(e > 1 for e in win.stride)
    if strided:
        xp, padded = _phases(xp, padded, win)
    g, m, ckk = ir.RankedTensorType(wm.type).shape
    cg, r = sx.shape[1] // groups, len(win.kernel)
    wg = lowering.reshape(wm, (g, m, ckk), (g, m, cg) + tuple(win.kernel), sx.dtype)
    n, spatial = sx.shape[0], tuple(win.spatial)
    lead = [D(0), D(1)] + ([D(2)] if m > 1 else [])
    dims = len(lead) + r
    o = D(2) if m > 1 else _const(0)
    views, w_maps = [], []
    view = _phase_view if strided else _strided_view
    for c in range(cg):
        for k in itertools.product(*(range(size) for size in win.kernel)):
            views.append(view(xp, padded, c, cg, groups, k, win, (n,) + spatial))
            w_maps.append(lowering.affine_map(dims, [D(1), o, _const(c)]
                                              + [_const(e) for e in k]))
    terms = len(views)
    x_map = lowering.affine_map(dims, [D(0), D(1)] + [D(len(lead) + i) for i in range(r)])
    shape = (n, groups) + ((m,) if m > 1 else ()) + spatial
    sb = lowering.ScalarBuilder(acc)  # (no reassoc: LLVM would make the chains one again)

    def body(*a):
        products = [sb.mul(lowering.cast_scalar(xv, sx.dtype, acc),
                           lowering.cast_scalar(wv, sx.dtype, acc))
                    for xv, wv in zip(a[:terms], a[terms:2 * terms])]
        return _sum_in_chains(sb, products)
    y = lowering.generic(views + [wg] * terms, [lowering.empty(TensorSpec(shape, acc))],
                         [x_map] * terms + w_maps + [lowering.identity_map(dims)],
                         ["parallel"] * dims, body, [sx.dtype] * (2 * terms) + [acc])
    return lowering.reshape(y, shape, (n, groups * m) + spatial, acc)


# Independent partial sums of a direct nest's output element. Its terms summed in order are
# one chain of dependent multiply-adds, each waiting out the latency of the one before (~4
# cycles) where the core could start two every cycle, and LLVM keeps the order given (with
# `reassoc` it made separate chains one again). So the terms are summed in up to CHAINS
# interleaved running sums, enough to cover an FMA's latency times the FMA units of
# x86-64 and Arm server cores (4 x 2), each at least TERMS_PER_CHAIN terms long (each
# further chain costs one add). Intel Xeon (Emerald Rapids), 32x128x28x28, 3x3, 32 groups
# of 4 (36 terms): 6.1-7.3 -> 4.4-4.6 ms; the depthwise one (9 terms, 2 chains) is
# memory-bound and stays ~1.7 ms.
CHAINS = 8
TERMS_PER_CHAIN = 4


def _sum_in_chains(sb, products):
    """The sum of `products` as running sums of every k-th term (k chains), added pairwise
    at the end."""
    partial = [None] * max(1, min(CHAINS, len(products) // TERMS_PER_CHAIN))
    for i, p in enumerate(products):
        j = i % len(partial)
        partial[j] = p if partial[j] is None else sb.add(partial[j], p)
    while len(partial) > 1:
        partial = [sb.add(partial[i], partial[i + 1]) if i + 1 < len(partial) else partial[i]
                   for i in range(0, len(partial), 2)]
    return partial[0]


def _multiply_accumulate(dtypes, acc):
    """The body of a sum of products: o + a*b, both operands cast from `dtypes` to `acc`."""
    sb = lowering.ScalarBuilder(acc, reassoc=True)
    return lambda a, b, o: sb.add(o, sb.mul(lowering.cast_scalar(a, dtypes[0], acc),
                                            lowering.cast_scalar(b, dtypes[1], acc)))


def cast_to(y, acc, out: TensorSpec):
    """y (out's shape, in acc) as out's dtype."""
    if acc is out.dtype:
        return y
    return lowering.elementwise([y], [TensorSpec(out.shape, acc)], out,
                                lambda v: lowering.cast_scalar(v, acc, out.dtype))


def _as_weight(c, shape, acc, out: TensorSpec):
    """A weight gradient computed as (g, Og, Cg, *K) in `acc`, as the op's result."""
    c = cast_to(c, acc, TensorSpec(shape, out.dtype))
    return lowering.reshape(c, shape, out.shape, out.dtype)


def _dots(dy2, sdy: TensorSpec, copy, copy_dtype, maps, groups, acc, out: TensorSpec, kernel):
    """The weight gradient as dot products of dy's images (n, O, P) with a copy of the
    input's: loops (g, o, c, k..., n, j), n and j reduced, through `maps`."""
    shape = (groups, out.shape[0] // groups, out.shape[1]) + tuple(kernel)
    c = lowering.generic([dy2, copy], [lowering.fill(TensorSpec(shape, acc), 0)], maps,
                         ["parallel"] * (3 + len(kernel)) + ["reduction"] * 2,
                         _multiply_accumulate((sdy.dtype, copy_dtype), acc),
                         [sdy.dtype, copy_dtype, acc])
    return _as_weight(c, shape, acc, out)


def direct_filter_grad(x, sx, dy, sdy, win, groups, acc, out: TensorSpec):
    """dW[g*Og + o, c, k] = sum over n and p of dy[n, g*Og + o, p] * xp[n, g*Cg + c,
    p*s + k*d]: for 1-D and 2-D ones long dot products over a copy of the image
    (per_image_dots; conv.py runs them image by image), for 3-D ones in two steps that keep
    every loop's inner run long and vectorized: partial
    sums per position along the last spatial dim, part[g, o, c, k..., q] (a loop nest
    (g, o, c, n, p[:-1], k..., q): per row of dy, each kernel offset's row of partial sums
    updated in place), then their sum over q. (As one reduction per weight element, each
    row of 28 positions ended in a horizontal sum: 14 ms for a 32x128x28x28 depthwise
    weight gradient.)"""
    xp, padded = win.prepare(x, sx)
    if per_image_dots(win):
        dots = _filter_grad_by_rows if by_rows(win) else _filter_grad_by_windows
        return dots(xp, padded, dy, sdy, win, groups, acc, out)
    strided = any(e > 1 for e in win.stride)
    if strided:  # (read unit strides: see _phases)
        xp, padded = _phases(xp, padded, win)
    r = len(win.kernel)
    cg, og = sx.shape[1] // groups, out.shape[0] // groups
    g_, o_, c_, n_ = 0, 1, 2, 3
    p = [4 + i for i in range(r - 1)]
    k = [4 + (r - 1) + i for i in range(r)]
    q_ = 4 + 2 * r - 1
    p.append(q_)
    dims = q_ + 1
    if strided:
        at = [D(ki) * d for ki, d in zip(k, win.dilation)]
        window = ([ir.AffineModExpr.get(a, _const(s)) for a, s in zip(at, win.stride)]
                  + [D(pi) + ir.AffineFloorDivExpr.get(a, _const(s))
                     for pi, a, s in zip(p, at, win.stride)])
    else:
        window = [D(pi) + D(ki) * d for pi, ki, d in zip(p, k, win.dilation)]
    maps = [lowering.affine_map(dims, [D(n_), D(g_) * og + D(o_)] + [D(pi) for pi in p]),
            lowering.affine_map(dims, [D(n_), D(g_) * cg + D(c_)] + window),
            lowering.affine_map(dims, [D(g_), D(o_), D(c_)] + [D(ki) for ki in k] + [D(q_)])]
    iterators = ["reduction" if i == n_ or i in p[:-1] else "parallel" for i in range(dims)]
    width = win.spatial[-1]
    shape = (groups, og, cg) + tuple(win.kernel)
    part = lowering.generic(
        [dy, xp], [lowering.fill(TensorSpec(shape + (width,), acc), 0)], maps, iterators,
        _multiply_accumulate((sdy.dtype, sx.dtype), acc), [sdy.dtype, sx.dtype, acc])
    sb = lowering.ScalarBuilder(acc, reassoc=True)
    c = lowering.reduce(part, TensorSpec(shape + (width,), acc), (len(shape),), acc, 0,
                        lambda a, v: sb.add(a, v))
    return _as_weight(c, shape, acc, out)


def per_image_dots(win) -> bool:
    """Whether direct_filter_grad is long dot products over a copy of the image (conv.py
    runs it image by image, so the copy stays in cache): 1-D and 2-D convolutions. (A 3-D
    image's windows would be 27 times the image: partial rows instead.)"""
    return len(win.kernel) <= 2


def by_rows(win) -> bool:
    """Whether those dot products read the image shifted along its last dim only
    (_filter_grad_by_rows, 3x the image for 3-wide kernels): stride 1, whose windows' rows
    are runs of the shifted image; else every window (_filter_grad_by_windows)."""
    return all(e == 1 for e in win.stride)


def _filter_grad_by_rows(xp, padded: TensorSpec, dy, sdy: TensorSpec, win, groups, acc,
                         out: TensorSpec):
    """direct_filter_grad of a 1-D or 2-D stride-1 convolution as long dot products: xw[n,
    c, kw, h, q] = xp[n, c, h, q + kw*d] (the input shifted by each last-dim kernel offset,
    rows of the output's width), whose rows kh*d .. kh*d + Ho are then one contiguous run,
    like dy's image: dW[g, o, c, kh, kw] = sum over n and j < Ho*Wo of dy[n, g*Og + o, j] *
    xw[n, g*Cg + c, kw, j + kh*d*Wo]. Image by image (conv.py), the shifted copy is used while
    in cache: the 32x128x28x28 3x3 weight gradient ~6.5 -> ~3.3 ms, where the batch's copy
    (3x the input, through memory) made it slower than the partial rows."""
    n, channels = padded.shape[:2]
    cg, og = channels // groups, out.shape[0] // groups
    kw, dw, width = win.kernel[-1], win.dilation[-1], win.spatial[-1]
    lead = tuple(padded.shape[2:-1])  # (Hp,) for 2-D, () for 1-D
    r = len(lead)
    shifted = (n, channels, kw) + lead + (width,)
    dims = len(shifted)
    read = lowering.affine_map(dims, [D(0), D(1)] + [D(3 + i) for i in range(r)]
                               + [D(dims - 1) + D(2) * dw])
    xw = lowering.generic([xp], [lowering.empty(TensorSpec(shifted, padded.dtype))],
                          [read, lowering.identity_map(dims)], ["parallel"] * dims,
                          lambda v, _o: v, [padded.dtype, padded.dtype])
    run = rules.prod(lead) * width
    xw = lowering.reshape(xw, shifted, (n, channels, kw, run), padded.dtype)
    positions = rules.prod(win.spatial)
    dy2 = lowering.reshape(dy, sdy.shape, (n, sdy.shape[1], positions), sdy.dtype)
    # loops (g, o, c, kh (2-D), kw, n, j)
    kh = [3] if r else []
    k_w, n_, j_ = 3 + r, 4 + r, 5 + r
    loops = j_ + 1
    shift = D(kh[0]) * (win.dilation[0] * width) if r else _const(0)
    maps = [lowering.affine_map(loops, [D(n_), D(0) * og + D(1), D(j_)]),
            lowering.affine_map(loops, [D(n_), D(0) * cg + D(2), D(k_w), D(j_) + shift]),
            lowering.affine_map(loops, [D(0), D(1), D(2)] + [D(i) for i in kh] + [D(k_w)])]
    return _dots(dy2, sdy, xw, padded.dtype, maps, groups, acc, out, win.kernel)


def _filter_grad_by_windows(xp, padded: TensorSpec, dy, sdy: TensorSpec, win, groups, acc,
                            out: TensorSpec):
    """direct_filter_grad as long dot products over every window: col[n, c, k..., p...] =
    xp[n, c, p*s + k*d] (the image's im2col matrix, per channel), then dW[g, o, c, k] = sum
    over n and j < P of dy[n, g*Og + o, j] * col[n, g*Cg + c, k, j]. For strided ones, whose
    windows' rows are not runs of one shifted image: per image, the 32x128x28x28 3x3
    stride-2 weight gradient (with the forward) 6.3 -> 3.6-4.0 ms against the partial rows
    over the stride phases."""
    n, channels = padded.shape[:2]
    cg, og = channels // groups, out.shape[0] // groups
    r = len(win.kernel)
    shape = (n, channels) + tuple(win.kernel) + tuple(win.spatial)
    dims = len(shape)
    read = lowering.affine_map(dims, [D(0), D(1)] + [
        D(2 + r + i) * s + D(2 + i) * d for i, (s, d) in enumerate(zip(win.stride, win.dilation))])
    col = lowering.generic([xp], [lowering.empty(TensorSpec(shape, padded.dtype))],
                           [read, lowering.identity_map(dims)], ["parallel"] * dims,
                           lambda v, _o: v, [padded.dtype, padded.dtype])
    positions = rules.prod(win.spatial)
    col = lowering.reshape(col, shape, (n, channels) + tuple(win.kernel) + (positions,),
                           padded.dtype)
    dy2 = lowering.reshape(dy, sdy.shape, (n, sdy.shape[1], positions), sdy.dtype)
    k = [3 + i for i in range(r)]
    n_, j_ = 3 + r, 4 + r
    loops = j_ + 1
    maps = [lowering.affine_map(loops, [D(n_), D(0) * og + D(1), D(j_)]),
            lowering.affine_map(loops, [D(n_), D(0) * cg + D(2)] + [D(i) for i in k] + [D(j_)]),
            lowering.affine_map(loops, [D(0), D(1), D(2)] + [D(i) for i in k])]
    return _dots(dy2, sdy, col, padded.dtype, maps, groups, acc, out, win.kernel)
