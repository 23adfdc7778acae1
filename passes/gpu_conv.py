"""ms-gpu-conv-implicit-gemm: a convolution's direct contraction as an implicit-GEMM kernel.

The CUDA lowering of a one-group, statically shaped convolution (forward, or the input
gradient as a stride-1 convolution of the dilated dy: dialects/ops/conv.py,
`implicit_gemm_applies`) is one linalg.generic tagged `ms.implicit_gemm` that reads the
padded input through the window map. Seen as a GEMM, C (M x F) = A (M x K) @ B (K x F) with
M = N*P (images times output positions), F the output channels and K = C*KS (input channels
times kernel offsets), A[m, k] being the input element under kernel offset k of window m and
B[k, f] the weight. This pass builds the kernel without materializing A:

- one block per BM x BN tile of C (a 1-D grid: the tile's row and column from the block id,
  neighbouring blocks sharing the A rows),
- for each BK step its threads gather the A tile from the input into workgroup memory,
  computing (n, p...) from m and (c, k...) from k with the stride and dilation, and copy the B
  tile from the weight; rows and columns past M, F or K read a clamped, in-bounds element
  and store zero (no branch); a barrier, then every thread accumulates its TM x TN sub-tile
  (a private array, constant indices only, so it lives in registers); a barrier before the
  next step's copies,
- each thread adds its sub-tile into the NCHW output (guarded where the tiles do not divide).

Threads along M are the fast index: the A gather and the output stores are coalesced along
the output's last spatial dim; shared-memory reads are conflict-free or broadcasts.
The tiles are in the accumulator's type (float32 for half types): the conversion happens
once, in the copy. The generic's output initialization (a fill) stays a kernel of its own.
"""
from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf

from ..dialects.ir_helpers import indexing_maps, iterator_kinds, ops_of_kind, public_functions
from ..dialects.ops.conv import IMPLICIT_GEMM_ATTR
from .base import ModulePass, fail, register
from .gpu_kernels import MAX_GRID_X, delinearize

WORKGROUP = "#gpu.address_space<workgroup>"
PRIVATE = "#gpu.address_space<private>"


@dataclass(frozen=True)
class ConvTiles:
    """BM x BN of C per block, BK of K per step, TM x TN of C per thread."""
    bm: int
    bn: int
    bk: int
    tm: int
    tn: int

    @property
    def threads_m(self):
        return self.bm // self.tm

    @property
    def threads(self):
        return self.threads_m * (self.bn // self.tn)

    def blocks(self, m, f):
        return _ceil(m, self.bm) * _ceil(f, self.bn)

    @property
    def name(self):
        return f"{self.bm}x{self.bn}x{self.bk}"


def _ceil(a, b):
    return -(-a // b)


# 256 threads each. Largest first: 8x8 per thread reads each shared element for 8 FMAs;
# smaller tiles keep enough blocks busy on small problems (and waste less on ragged edges).
CONV_TILES = (ConvTiles(128, 128, 8, 8, 8), ConvTiles(64, 64, 16, 4, 4),
              ConvTiles(32, 32, 16, 2, 2))
MIN_BLOCKS = 128  # as the matmul schedule: every SM of an H100/H200 busy once


def conv_tiles(m, f) -> ConvTiles:
    """The largest tiling that still gives MIN_BLOCKS blocks, else the smallest; never one
    whose BN exceeds F (rounded up to 32): its columns would be mostly padding (F = 64
    output channels would waste half of a 128-wide tile's FMAs)."""
    narrow = [t for t in CONV_TILES if t.bn <= max(32, -(-f // 32) * 32)]
    for t in narrow:
        if t.blocks(m, f) >= MIN_BLOCKS:
            return t
    return CONV_TILES[-1]


@dataclass
class ConvGemm:
    """What the kernel needs from a tagged generic: the padded input xp (N, C, *S), the
    weight w (F, C, *KS), the output y (N, F, *P), stride and dilation."""
    op: ir.Operation
    xp: ir.Value
    w: ir.Value
    y: ir.Value
    stride: list
    dilation: list

    def shape(self, v):
        return list(ir.MemRefType(v.type).shape)

    @property
    def m_sizes(self):  # m = (n, p...) row-major
        y = self.shape(self.y)
        return [y[0]] + y[2:]

    @property
    def k_sizes(self):  # k = (c, k...) row-major
        return self.shape(self.w)[1:]

    @property
    def mfk(self):
        return _prod(self.m_sizes), self.shape(self.w)[0], _prod(self.k_sizes)

    @property
    def acc_type(self):
        return ir.MemRefType(self.y.type).element_type


def _prod(sizes):
    out = 1
    for s in sizes:
        out *= s
    return out


def read_conv_gemm(op) -> ConvGemm:
    """The tagged generic's operands and geometry, after checking that it is the contraction
    conv.py builds (a located error otherwise: a tag on anything else is a bug)."""
    if len(op.operands) != 3 or any(not isinstance(v.type, ir.MemRefType)
                                    for v in op.operands):
        fail(op, "ms.implicit_gemm expects a generic on memrefs (input, weight; output)")
    xp, w, y = op.operands
    if any(not ir.MemRefType(v.type).has_static_shape for v in (xp, w, y)):
        fail(op, "ms.implicit_gemm expects static shapes (dynamic ones keep im2col)")
    g = ConvGemm(op, xp, w, y, *_geometry(op))
    # The maps fix the structure; linalg's verifier then makes the shapes a convolution's
    # (every window inside the input, channels matching).
    r = len(g.stride)
    if len(g.dilation) != r or indexing_maps(op) != _expected_maps(r, g.stride, g.dilation) or (
            iterator_kinds(op) != ["parallel"] * (2 + r) + ["reduction"] * (1 + r)):
        fail(op, "ms.implicit_gemm: the indexing maps are not the convolution's window maps")
    return g


def _geometry(op) -> tuple[list, list]:
    """(stride, dilation) of the tag: a dictionary with both as array<i64> (a located error
    otherwise: IR read from a file may tag with anything; a missing key was a KeyError)."""
    attr = op.attributes[IMPLICIT_GEMM_ATTR]
    found = []
    for key in ("stride", "dilation"):
        value = attr[key] if isinstance(attr, ir.DictAttr) and key in attr else None
        if not isinstance(value, ir.DenseI64ArrayAttr):
            fail(op, f"ms.implicit_gemm expects a dictionary with '{key}' = array<i64: ...>")
        found.append(list(value))
    return found[0], found[1]


def _expected_maps(r, stride, dilation):
    """(n, c, p*s + k*d), (f, c, k), (n, f, p) over the loops (n, f, p..., c, k...)."""
    dims = 3 + 2 * r
    d = ir.AffineDimExpr.get
    p, k = [d(2 + i) for i in range(r)], [d(3 + r + i) for i in range(r)]
    window = [pi * s + ki * dl for pi, ki, s, dl in zip(p, k, stride, dilation)]
    return [ir.AffineMap.get(dims, 0, [d(0), d(2 + r)] + window),
            ir.AffineMap.get(dims, 0, [d(1), d(2 + r)] + k),
            ir.AffineMap.get(dims, 0, [d(0), d(1)] + p)]


# ------------------------------------------------------------------ kernel pieces

def _c(v):
    return arith.constant(ir.IndexType.get(), v)


def _less(a, bound: int):
    return arith.cmpi(arith.CmpIPredicate.ult, a, _c(bound))


def _clamped(v, bound: int, exact: bool):
    """v, or (past the end of a ragged tile) the last valid index: every load stays in
    bounds, and the tile stores zero there instead of branching."""
    return v if exact else arith.minui(v, _c(bound - 1))


def _converted(v, to: ir.Type):
    """A loaded element in the accumulator's float type (half types widen, once)."""
    if v.type == to:
        return v
    return arith.extf(to, v)


def _zero(t: ir.Type):
    return arith.constant(t, ir.FloatAttr.get(t, 0.0))


@dataclass
class _Kernel:
    """The values one block's code is written with (see build_kernel)."""
    g: ConvGemm
    t: ConvTiles
    tid: ir.Value
    m0: ir.Value      # first row (m) and column (f) of the block's C tile
    f0: ir.Value
    a_tile: ir.Value  # BK x BM, workgroup
    b_tile: ir.Value  # BK x BN, workgroup
    acc: ir.Value     # TM x TN, private

    @property
    def sizes(self):
        return self.g.mfk


def _tile_elements(kn: _Kernel, width):
    """(column, row) of each element of a BK x `width` tile that this thread loads:
    consecutive threads take consecutive columns (coalesced)."""
    t = kn.t
    for r in range(width * t.bk // t.threads):
        e = arith.addi(kn.tid, _c(r * t.threads))
        yield arith.remui(e, _c(width)), arith.divui(e, _c(width))


def _load_a_tile(kn: _Kernel, k0):
    """a_tile[kk, mm] = xp[n, c, p*s + k*d] for m = m0 + mm, k = k0 + kk (zero past M, K).
    Consecutive threads take consecutive mm: coalesced along the output positions."""
    g, t = kn.g, kn.t
    m_total, _, k_total = kn.sizes
    exact_m, exact_k = m_total % t.bm == 0, k_total % t.bk == 0
    for mm, kk in _tile_elements(kn, t.bm):
        m, k = arith.addi(kn.m0, mm), arith.addi(k0, kk)
        n, *p = delinearize(_clamped(m, m_total, exact_m), g.m_sizes)
        c, *ks = delinearize(_clamped(k, k_total, exact_k), g.k_sizes)
        coords = [n, c] + [arith.addi(arith.muli(pi, _c(s)), arith.muli(ki, _c(d)))
                           for pi, ki, s, d in zip(p, ks, g.stride, g.dilation)]
        v = _converted(memref.load(g.xp, coords), g.acc_type)
        v = _zero_outside(v, [(m, m_total, exact_m), (k, k_total, exact_k)])
        memref.store(v, kn.a_tile, [kk, mm])


def _load_b_tile(kn: _Kernel, k0):
    """b_tile[kk, nn] = w[f, c, k...] for f = f0 + nn, k = k0 + kk (zero past F, K)."""
    g, t = kn.g, kn.t
    _, f_total, k_total = kn.sizes
    exact_f, exact_k = f_total % t.bn == 0, k_total % t.bk == 0
    for nn, kk in _tile_elements(kn, t.bn):
        f, k = arith.addi(kn.f0, nn), arith.addi(k0, kk)
        ks = delinearize(_clamped(k, k_total, exact_k), g.k_sizes)
        v = _converted(memref.load(g.w, [_clamped(f, f_total, exact_f)] + ks), g.acc_type)
        v = _zero_outside(v, [(f, f_total, exact_f), (k, k_total, exact_k)])
        memref.store(v, kn.b_tile, [kk, nn])


def _zero_outside(v, bounds):
    """v where every (index, bound) is in range, else 0; exact bounds need no test."""
    tests = [_less(i, b) for i, b, exact in bounds if not exact]
    if not tests:
        return v
    inside = tests[0]
    for more in tests[1:]:
        inside = arith.andi(inside, more)
    return arith.select(inside, v, _zero(v.type))


def _thread_rows_cols(kn: _Kernel):
    """This thread's rows (tx + i*threads_m) and columns (ty + j*threads_n) within the tile:
    strided, so a warp reads consecutive A elements and broadcast B elements."""
    t = kn.t
    tx, ty = arith.remui(kn.tid, _c(t.threads_m)), arith.divui(kn.tid, _c(t.threads_m))
    rows = [arith.addi(tx, _c(i * t.threads_m)) for i in range(t.tm)]
    cols = [arith.addi(ty, _c(j * (t.bn // t.tn))) for j in range(t.tn)]
    return rows, cols


def _multiply_tiles(kn: _Kernel, rows, cols):
    """acc[i, j] += a_tile[kk, row i] * b_tile[kk, col j] over the step's BK."""
    loop = scf.ForOp(_c(0), _c(kn.t.bk), _c(1))
    with ir.InsertionPoint(loop.body):
        kk = loop.induction_variable
        a = [memref.load(kn.a_tile, [kk, r]) for r in rows]
        b = [memref.load(kn.b_tile, [kk, c]) for c in cols]
        for i, ai in enumerate(a):
            for j, bj in enumerate(b):
                at = [_c(i), _c(j)]
                total = arith.addf(memref.load(kn.acc, at), arith.mulf(ai, bj))
                memref.store(total, kn.acc, at)
        scf.YieldOp([])


def _store_results(kn: _Kernel, rows, cols):
    """y[n, f, p...] += acc[i, j] for the thread's rows m and columns f inside C."""
    g, t = kn.g, kn.t
    m_total, f_total, _ = kn.sizes
    exact = m_total % t.bm == 0 and f_total % t.bn == 0
    for i, row in enumerate(rows):
        m = arith.addi(kn.m0, row)
        n, *p = delinearize(m, g.m_sizes)
        for j, col in enumerate(cols):
            f = arith.addi(kn.f0, col)
            if exact:
                _add_into_output(kn, i, j, [n, f] + p)
                continue
            guard = scf.IfOp(arith.andi(_less(m, m_total), _less(f, f_total)))
            with ir.InsertionPoint(guard.then_block):
                _add_into_output(kn, i, j, [n, f] + p)
                scf.YieldOp([])


def _add_into_output(kn: _Kernel, i, j, at):
    total = arith.addf(memref.load(kn.g.y, at), memref.load(kn.acc, [_c(i), _c(j)]))
    memref.store(total, kn.g.y, at)


def _attribution(body, shape, elem, space):
    return body.add_argument(ir.MemRefType.get(shape, elem, memory_space=ir.Attribute.parse(space)),
                             ir.Location.unknown())


def build_kernel(g: ConvGemm, t: ConvTiles):
    """The gpu.launch computing y += the convolution, before g.op (see the module doc)."""
    m_total, f_total, k_total = g.mfk
    grid = t.blocks(m_total, f_total)
    if grid > MAX_GRID_X:
        fail(g.op, f"ms.implicit_gemm: needs {grid} blocks, more than the grid limit")
    launch = gpu.LaunchOp((_c(grid), _c(1), _c(1)), (_c(t.threads), _c(1), _c(1)))
    body = launch.regions[0].blocks[0]
    acc_t = g.acc_type
    a_tile = _attribution(body, [t.bk, t.bm], acc_t, WORKGROUP)
    b_tile = _attribution(body, [t.bk, t.bn], acc_t, WORKGROUP)
    acc = _attribution(body, [t.tm, t.tn], acc_t, PRIVATE)
    launch.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
        ir.IntegerType.get_signless(64), 2)
    with ir.InsertionPoint(body):
        bid, tid = body.arguments[0], body.arguments[3]
        tiles_f = _c(_ceil(f_total, t.bn))
        m0 = arith.muli(arith.divui(bid, tiles_f), _c(t.bm))
        f0 = arith.muli(arith.remui(bid, tiles_f), _c(t.bn))
        kn = _Kernel(g, t, tid, m0, f0, a_tile, b_tile, acc)
        zero = _zero(acc_t)
        for i in range(t.tm):
            for j in range(t.tn):
                memref.store(zero, acc, [_c(i), _c(j)])
        rows, cols = _thread_rows_cols(kn)
        steps = scf.ForOp(_c(0), _c(_ceil(k_total, t.bk) * t.bk), _c(t.bk))
        with ir.InsertionPoint(steps.body):
            _load_a_tile(kn, steps.induction_variable)
            _load_b_tile(kn, steps.induction_variable)
            gpu.BarrierOp()  # the tiles are complete before any thread reads them
            _multiply_tiles(kn, rows, cols)
            gpu.BarrierOp()  # and read by every thread before the next step overwrites them
            scf.YieldOp([])
        _store_results(kn, rows, cols)
        gpu.TerminatorOp()
    return launch


@register
class GpuConvImplicitGemm(ModulePass):
    name = "ms-gpu-conv-implicit-gemm"
    summary = ("each convolution contraction tagged ms.implicit_gemm as an implicit-GEMM "
               "gpu.launch (tiles gathered into shared memory, no im2col buffer)")
    # "auto": conv_tiles; a tiling's name (BMxBNxBK) pins it (tests run every tiling).
    options = {"tiles": "auto"}
    choices = {"tiles": ("auto",) + tuple(t.name for t in CONV_TILES)}

    def tiles_for(self, m, f) -> ConvTiles:
        pinned = [t for t in CONV_TILES if t.name == self.opts["tiles"]]
        return pinned[0] if pinned else conv_tiles(m, f)

    def run(self, module):
        for fn in public_functions(module):
            for op in ops_of_kind(fn, "linalg.generic"):
                if IMPLICIT_GEMM_ATTR not in op.attributes:
                    continue
                g = read_conv_gemm(op)
                m_total, f_total, _ = g.mfk
                with ir.InsertionPoint(op), op.location:
                    build_kernel(g, self.tiles_for(m_total, f_total))
                op.erase()
