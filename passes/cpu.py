"""CPU matmul passes, on the kernel functions ms-outline-matmul made (passes/outline.py).

- ms-cpu-materialize-transposes (tensors): a matmul reading a transposed operand reads a
  transposed copy instead, so the schedule's register tiles read rows of B.
- ms-cpu-matmul-schedule (memrefs): each matmul kernel tiled for threads, caches and
  registers (transform dialect), its register tiles and epilogue tiles then built as vector
  code (passes/cpu_register_tiles.py; what that does not take, the generic vectorizer's);
  B packed into column strips where its rows would conflict in the cache; ragged edges split
  off as static pieces.
"""
from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, func, memref, scf, tensor

from ..dialects.upstream import linalg
from ..dialects.lowering import REGION_ATTR
from .base import ModulePass, PatternPass, register
from . import cpu_target
from .cpu_loops import DYNAMIC_ESTIMATE, MIN_PARALLEL_ITERATIONS, loop_ranges
from ..dialects.ir_helpers import (callee_name, called_in_parallel, calls_by_callee, element_bytes,
                         function_type, identity_layout, in_parallel_loop, indexing_maps,
                         iterator_types_attr,
                         ops_of_kind, projection, set_function_type, symbol_name)
from .outline import kernel_functions, static_kernel
from .cpu_register_tiles import build_register_tiles
from .cpu_transpose import BLOCKS as TRANSPOSE_BLOCKS
from .cpu_zero_init import is_zero_fill
from .cpu_fused_epilogues import FusedEpilogue, fusable_epilogue, mark, tiles_can_fuse
from .transforms import (ScriptCache, apply_script, structured, transform, transform_script,
                         vectorize_register_tiles)

# The maps of linalg.matmul over loops (m, n, k): A[m, k], B[k, n], C[m, n]; transpose_a
# reads A[k, m], transpose_b B[n, k].
_PLAIN_MAPS = ((0, 2), (2, 1), (0, 1))
_TRANSPOSED_A, _TRANSPOSED_B = (2, 0), (1, 2)


def _reads(op, operand: int, dims) -> bool:
    """Whether matmul operand #operand is indexed by the loops `dims` (of m, n, k)."""
    return indexing_maps(op)[operand] == projection(3, dims, op.context)


def _transposed(value):
    t = ir.RankedTensorType(value.type)
    sizes = [tensor.dim(value, arith.constant(ir.IndexType.get(), i))
             if ir.ShapedType.is_dynamic_size(d) else d for i, d in enumerate(t.shape)]
    out = tensor.empty(list(reversed(sizes)), t.element_type)
    return linalg.transpose(value, outs=[out], permutation=[1, 0]).results[0]


def materialize_transposes(op, rewriter):
    """linalg.matmul reading A or B transposed (ms.matmul's transpose_a/b folded into its
    indexing maps) -> one transpose copy and a plain matmul: the CPU schedule vectorizes along
    contiguous rows of B, and a strided B ran 2.4x slower (x @ W^T of a Dense layer)."""
    if "indexing_maps" not in op.attributes:
        return True  # did not match: already the plain form
    if not all(isinstance(v.type, ir.RankedTensorType) for v in op.operands):
        return True  # did not match: on buffers (IR read at a later stage) it stays as it is
    a_t, b_t = _reads(op, 0, _TRANSPOSED_A), _reads(op, 1, _TRANSPOSED_B)
    if not (a_t or b_t):
        return True  # did not match: no transposed operand
    keep = {n: op.attributes[n] for n in op.attributes
            if n not in ("indexing_maps", "operandSegmentSizes")}
    with rewriter.ip, op.location:
        a, b, c = op.operands
        new = linalg.matmul(_transposed(a) if a_t else a, _transposed(b) if b_t else b, outs=[c])
        new_op = new.owner
        for name, attr in keep.items():
            new_op.attributes[name] = attr
    rewriter.replace_op(op, [new])


@register
class MaterializeTransposes(PatternPass):
    name = "ms-cpu-materialize-transposes"
    summary = "matmuls with transposed operands read a transposed copy instead (CPU)"
    patterns = {"linalg.matmul": materialize_transposes}




def register_tile(target) -> tuple[int, int]:
    """(MR, NR bytes): the MR x NR accumulators of a register tile stay in registers across
    k. NR is two of the target's vectors, and MR rows of them leave four registers for A's
    broadcasts and B's loads (at most 8 rows: 16 zmm with AVX-512, 6 x 2 ymm with AVX2)."""
    return min(8, (target.vector_registers - 4) // 2), 2 * target.vector_bytes


def tile_rows(m, mr: int) -> int:
    """Rows of the register tiles of a product with `m` rows: the largest count from MR down
    to 3/4 of MR that divides m, so that no ragged piece of rows is split off (each piece is
    a copy of the tile loops through every later pass: LeNet5's 84-row products as 12 tiles
    of 7 rows instead of 10 of 8 and a piece of 4, as fast); MR where none does (or m itself,
    smaller than MR). (Lower: AVX2's 32 rows as tiles of 4 instead of 5 of 6 and a piece of
    2 ran 3-8% slower.)"""
    if ir.ShapedType.is_dynamic_size(m):
        return mr
    if m <= mr:
        return m
    for rows in range(mr, -(-3 * mr // 4) - 1, -1):
        if m % rows == 0:
            return rows
    return mr


# Cache tiles: an MC x NC block of C per thread, K in KC-deep panels.
MC, NC, KC = 64, 256, 256


def _largest_tile(size, unit, limit):
    """The largest multiple of `unit` that divides `size` and is at most `limit` (the whole
    size when it is smaller than one unit)."""
    if size <= unit:
        return size
    best = unit
    for t in range(unit, min(size, limit) + 1, unit):
        if size % t == 0:
            best = t
    return best


def _elem_bytes(op):
    """Bytes of an element of a linalg op's output (its last operand)."""
    return element_bytes(op.operands[len(op.operands) - 1].type)


def split_script(dimension, chunk):
    return transform_script(lambda root: structured.SplitOp(root, dimension, chunk))


# Matmuls with fewer flops than this run on one thread: a fork and join costs a few
# microseconds. (The training step's 2.6 MFLOP products, ~20 us on one thread, saved ~40 us per
# step on two threads, even on a loaded machine.)
MIN_PARALLEL_FLOPS = 1 << 21


def tile_matmul_script(tm, tn, tk, mr, nr, parallel):
    def build(root):
        if parallel:  # threads share the C tiles (scf.forall -> OpenMP)
            tiled = structured.TileUsingForallOp(root, tile_sizes=[tm, tn]).tiled_op
        else:
            tiled = structured.TileUsingForOp(root, sizes=[tm, tn]).tiled_linalg_op
        panel = structured.TileUsingForOp(tiled, sizes=[0, 0, tk])
        structured.TileUsingForOp(panel.tiled_linalg_op, sizes=[mr, nr, 1])
    return transform_script(build)


def tile_epilogue_script(rows, cols, parallel):
    def build(root):
        if parallel:
            tiled = structured.TileUsingForallOp(root, tile_sizes=[rows, 0]).tiled_op
        else:
            tiled = root
        structured.TileUsingForOp(tiled, sizes=[1, cols])
    return transform_script(build)


# Marks the kernel functions the schedule tiled, for the one vectorization of them all.
_TILED = "ms.tiled_kernel"


def vectorize_script():
    """Vectorize every function of the payload marked _TILED, in one application: each
    application builds its pattern sets and pass pipelines again (~2 ms of the 3-5 ms one
    kernel took; LeNet5's step has 13 kernels)."""
    def build(root):
        kernels = structured.MatchOp(transform.AnyOpType.get(), root, ops=["func.func"],
                                     op_attrs={_TILED: ir.UnitAttr.get()}).results_
        vectorize_register_tiles(kernels)
    return transform_script(build)


def matmul_ranges(op):
    """(m, n, k) of a linalg.matmul on static memrefs, whatever its indexing maps."""
    if "indexing_maps" in op.attributes:
        return loop_ranges(op, op.attributes["indexing_maps"])[0]
    (m, k), (_, n) = (ir.MemRefType(v.type).shape for v in list(op.operands)[:2])
    return [m, n, k]


# B is packed when its rows fall into few sets of the L1 data cache (their distance a
# multiple of a large power of two, cpu_target.rows_conflict): a K-panel's rows then evict
# each other (AMD EPYC, 1024^3: ~365 GFLOP/s unpacked, ~480 packed, the copy included;
# 256x1024x256 with B^T: 335-835 us -> 315 us; Intel Xeon, 512^3: 1.60 -> 1.29 ms)...
PACK_MIN_ROWS = 128
PACK_MIN_DEPTH = 128


def _plain_matmul(op) -> bool:
    if "indexing_maps" not in op.attributes:
        return True
    return indexing_maps(op) == [projection(3, dims, op.context) for dims in _PLAIN_MAPS]


def _should_pack(mm, nr, target, rows=None, free=False) -> bool:
    """Whether pack_b pays for `mm`; `rows` stands for A's row count where it is dynamic
    (a batch: the caller's estimate); `free`: B is a transpose the caller makes anyway
    (transposed_source), so packing costs nothing however few rows read it."""
    a, b, c = (ir.MemRefType(v.type) for v in mm.operands)
    if not (_plain_matmul(mm) and b.has_static_shape and a.shape[1] == b.shape[0]):
        return False
    m = a.shape[0]
    if ir.ShapedType.is_dynamic_size(m):
        if rows is None:
            return False
        m = rows
    if not (identity_layout(b) and identity_layout(c)):
        return False  # views (a dynamic batch's blocks of rows) stay as they are
    k, n = b.shape
    return (n % nr == 0 and n > nr and (free or m >= PACK_MIN_ROWS) and k >= PACK_MIN_DEPTH
            and target.rows_conflict(n * _elem_bytes(mm), min(k, KC)))


def strip_width(mm, target) -> int:
    """Elements in a packed strip of B (a register tile's columns) for the product `mm`."""
    return max(8, register_tile(target)[1] // _elem_bytes(mm))


def packs_b(sites: CallSites, fn, mm, nr, target) -> bool:
    """Whether the static schedule packs B of the kernel's product `mm` (pack_b)."""
    return _should_pack(mm, nr, target, free=_packing_is_free(sites, fn, mm))


def _packing_is_free(sites: CallSites, fn, mm) -> bool:
    """Whether B of the kernel's product is W^T made by the kernel's one caller."""
    b = mm.operands[1]
    calls = sites.of(fn)
    return (isinstance(b.owner, ir.Block) and len(calls) == 1
            and transposed_source(calls[0], b.arg_number) is not None)


def _dynamic_dims(t) -> list:
    if not isinstance(t, ir.MemRefType):
        return []
    return [i for i, d in enumerate(t.shape) if ir.ShapedType.is_dynamic_size(d)]


def _one_matmul(fn):
    """The kernel's only linalg.matmul, in the plain form, reading and writing arguments."""
    mms = ops_of_kind(fn, "linalg.matmul")
    if len(mms) != 1 or not _plain_matmul(mms[0]):
        return None
    args = list(fn.regions[0].blocks[0].arguments)
    if not all(v in args for v in mms[0].operands):
        return None
    return mms[0]


def depth_arguments(fn):
    """(A, B) argument indexes of a kernel whose product has a dynamic depth K (A: m x ?,
    B: ? x n, read by the product only; everything else static); else None. The schedule
    tiles such a kernel as a static one: only the loop over K's panels has a run-time bound
    (the register tiles, m x n, stay static), so C stays in registers across any K."""
    mm = _one_matmul(fn)
    body = fn.regions[0].blocks[0]
    if mm is None:
        return None
    args = list(body.arguments)
    a, b, c = (args.index(v) for v in mm.operands)
    if any(len(list(args[k].uses)) != 1 for k in (a, b)):
        return None
    types = list(function_type(fn).inputs)
    if (_dynamic_dims(types[a]) != [1] or _dynamic_dims(types[b]) != [0]
            or _dynamic_dims(types[c])):
        return None
    if any(_dynamic_dims(t) for k, t in enumerate(types) if k not in (a, b)):
        return None
    return a, b


class CallSites:
    """The func.call ops of a module's functions by callee, from one walk, walked again after
    `changed()` (a rewrite of calls: pack_b, the dynamic row blocks). Finding one kernel's
    calls by walking every function, once per question about each kernel, took 0.1 s of a
    LeNet5 training step's compile."""

    def __init__(self, module, calls=None):
        self.module, self._calls = module, calls

    def of(self, fn) -> list:
        if self._calls is None:
            self._calls = calls_by_callee(self.module.operation)
        return list(self._calls.get(symbol_name(fn), []))

    def changed(self):
        self._calls = None


def transposed_source(call, bi):
    """(transpose, W) where the call's argument #bi is a buffer that only a linalg.transpose of
    W (static, 2-D, 32-bit, its sizes multiples of TRANSPOSE_BLOCK) fills before the
    call in the same block, and that nothing else uses but its dealloc: B = W^T, as
    ms-cpu-materialize-transposes makes it for x @ W.T (Dense's layout). Else None."""
    b = call.operands[bi]
    if isinstance(b.owner, ir.Block) or b.owner.name != "memref.alloc":
        return None  # an argument, or not a fresh buffer
    users = [use.owner for use in b.uses]
    transposes = [op for op in users if op.name == "linalg.transpose"]
    if len(transposes) != 1 or sorted(op.name for op in users) != sorted(
            ["linalg.transpose", "func.call", "memref.dealloc"]):
        return None
    transpose = transposes[0]
    w = transpose.operands[0]
    wt = ir.MemRefType(w.type)
    if (transpose.operands[1] != b or transpose.operation.block != call.operation.block
            or not (wt.has_static_shape and identity_layout(wt) and wt.rank == 2)
            or getattr(wt.element_type, "width", None) != 32
            or any(d % TRANSPOSE_BLOCK for d in wt.shape) or in_parallel_loop(call)):
        return None  # (in a parallel loop the strips' scf.forall would nest in it)
    return transpose, w


# A multiple of ms-cpu-vectorize-transposes' register blocks of every kind (8x8, 16x16):
# W's strips of rows are blocked whichever the host gets.
TRANSPOSE_BLOCK = math.lcm(*(blocks.size for blocks in TRANSPOSE_BLOCKS.values()))


def _pack_from_transpose(transpose, w, packed):
    """Bp[s][k][j] = W[s*nr + j][k] at the transpose's place: one 2-D transpose of each strip
    of nr rows of W (over the threads; ms-cpu-vectorize-transposes copies each in register
    blocks), so that B = W^T is never written: the copy pack_b needs costs what the
    transpose it replaces did. Returns Bp."""
    n_strips, k, nr = packed.shape
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    elem = packed.element_type
    with ir.InsertionPoint(transpose), transpose.location:
        bp = memref.alloc(packed, [], [], alignment=64)
        loop = scf.ForallOp([0], [n_strips], [1])
        with ir.InsertionPoint(loop.regions[0].blocks[0]):
            s = loop.regions[0].blocks[0].arguments[0]
            row = arith.muli(s, arith.constant(ir.IndexType.get(), nr))
            rows = memref.subview(w, [row, 0], [nr, k], [1, 1], result_type=ir.MemRefType.get(
                [nr, k], elem, ir.StridedLayoutAttr.get(dyn, [k, 1])))
            strip = memref.subview(bp, [s, 0, 0], [1, k, nr], [1, 1, 1],
                                   result_type=ir.MemRefType.get(
                                       [k, nr], elem, ir.StridedLayoutAttr.get(dyn, [nr, 1])))
            linalg.transpose(rows, outs=[strip], permutation=[1, 0])
            scf.InParallelOp()
    return bp


def _pack_at_call(call, bi, ci, packed, strips):
    """At the call: B (argument #bi) copied into strips `packed`, freed after the call (read
    from W where B = W^T: transposed_source); C (argument #ci) passed as a view with the
    `strips` shape."""
    m, n_strips, nr = strips.shape
    k = packed.shape[1]
    elem = packed.element_type
    source = transposed_source(call, bi)
    if source is not None:
        old = call.operands[bi]
        bp = _pack_from_transpose(*source, packed)
        call.operands[bi] = bp
        source[0].erase()
        for use in list(old.uses):  # its dealloc
            use.owner.erase()
        old.owner.erase()
    with ir.InsertionPoint(call), call.location:
        if source is None:
            bp = memref.alloc(packed, [], [], alignment=64)
            bv = memref.expand_shape(ir.MemRefType.get([k, n_strips, nr], elem),
                                     call.operands[bi], [[0], [1, 2]], [], [k, n_strips, nr])
            linalg.transpose(bv, outs=[bp], permutation=[1, 0, 2])
        c = call.operands[ci]
        rows = ([memref.dim(c, arith.constant(ir.IndexType.get(), 0))]
                if ir.ShapedType.is_dynamic_size(m) else [])  # a dynamic batch
        cv = memref.expand_shape(strips, c, [[0], [1, 2]], rows, [m, n_strips, nr])
    call.operands[bi] = bp
    call.operands[ci] = cv
    with ir.InsertionPoint.after(call), call.location:
        memref.dealloc(bp)


def _packed_product(mm, a, b, c):
    """The linalg.generic over (i, strip, column, k) replacing `mm`: C[i][s][j] += A[i][k] *
    Bp[s][k][j]."""
    elem = ir.MemRefType(b.type).element_type
    loc = mm.location
    with ir.InsertionPoint(mm), loc:
        maps = [ir.Attribute.parse(f"affine_map<(i, s, j, k) -> ({e})>")
                for e in ("i, k", "s, k, j", "i, s, j")]
        kinds = iterator_types_attr(["parallel", "parallel", "parallel", "reduction"])
        gen = linalg.GenericOp([], [a, b], [c], ir.ArrayAttr.get(maps), kinds)
        if REGION_ATTR in mm.attributes:
            gen.attributes[REGION_ATTR] = mm.attributes[REGION_ATTR]
        gen.attributes[PACKED_ATTR] = ir.UnitAttr.get()
        body = gen.regions[0].blocks.append(elem, elem, elem)
    with ir.InsertionPoint(body), loc:
        x, y, acc = body.arguments
        linalg.YieldOp([arith.addf(acc, arith.mulf(x, y))])
    mm.erase()


def pack_b(sites: CallSites, fn, mm, nr, epilogue=False) -> bool:
    """C += A B with B (K x N) read from a copy packed into strips of nr columns,
    Bp[N/nr][K][nr], so that register tiles read B contiguously. The caller packs (a
    linalg.transpose of B's expand_shape into a buffer freed after the call; parallel loops
    make it a parallel copy; where B = W^T is the caller's transpose, strips of W transposed
    in its place) and passes Bp for B and C as C[M][N/nr][nr] (M may be dynamic:
    ms-cpu-dynamic-matmul packs before it splits the rows into blocks); the product becomes
    a linalg.generic over (i, strip, column, k). Only where B and C are kernel arguments that
    only the matmul uses, with one call; with `epilogue`, C may also be read and written by
    the kernel's epilogue (bias, activation): the call then passes C twice, as it is for the
    epilogue and as the strips view for the product (an extra argument). (A view of C made
    inside the kernel sent the vectorization's alias folding into an endless loop, or, as a
    reinterpret_cast, kept C's register tile from staying in registers.)"""
    a, b, c = mm.operands
    calls = sites.of(fn)
    fills = [use.owner for use in c.uses if is_zero_fill(use.owner)]  # (ms-cpu-kernel-zero-init)
    shared_c = len(list(c.uses)) != 1 + len(fills)
    if (len(calls) != 1 or any(not isinstance(v.owner, ir.Block) for v in (b, c))
            or len(list(b.uses)) != 1 or (shared_c and not epilogue)):
        return False
    (m, k), n = ir.MemRefType(a.type).shape, ir.MemRefType(b.type).shape[1]
    elem = ir.MemRefType(b.type).element_type
    packed = ir.MemRefType.get([n // nr, k, nr], elem)
    strips = ir.MemRefType.get([m, n // nr, nr], elem)
    bi, ci = b.arg_number, c.arg_number
    ftype = function_type(fn)
    inputs = list(ftype.inputs)
    call = calls[0]
    if shared_c:  # the product writes a second argument: C's strips view
        call = _with_operand(call, call.operands[ci])
        ci = len(inputs)
        inputs.append(strips)
        c = fn.regions[0].blocks[0].add_argument(strips, fn.location)
    _pack_at_call(call, bi, ci, packed, strips)
    sites.changed()
    b.set_type(packed)
    c.set_type(strips)
    for fill in fills:  # (zeroing the strips view zeroes C: the product's tiles see it)
        fill.operands[1] = c
    inputs[bi], inputs[ci] = packed, strips
    set_function_type(fn, inputs, ftype.results)
    _packed_product(mm, a, b, c)
    return True


def _with_operand(call, value):
    """`call` replaced by a call of the same function with `value` as an extra last
    operand."""
    with ir.InsertionPoint(call), call.location:
        new = func.CallOp([r.type for r in call.results], ir.FlatSymbolRefAttr.get(
            callee_name(call)), list(call.operands) + [value])
    for old, result in zip(call.results, new.results):
        old.replace_all_uses_with(result)
    call.erase()
    return new


PACKED_ATTR = "ms.packed_b"  # a product made by pack_b (kept by its tiles and split pieces)


def _is_packed(op) -> bool:
    """A product made by pack_b, not yet tiled (at the kernel's top level)."""
    return PACKED_ATTR in op.attributes and op.parent.name == "func.func"


def tile_packed_script(tm, strips, tk, mr, nr, parallel):
    """tile_matmul_script for pack_b's generic: loops (i, strip, column, k)."""
    def build(root):
        if parallel:
            tiled = structured.TileUsingForallOp(root, tile_sizes=[tm, strips]).tiled_op
        else:
            tiled = structured.TileUsingForOp(root, sizes=[tm, strips]).tiled_linalg_op
        panel = structured.TileUsingForOp(tiled, sizes=[0, 0, 0, tk])
        structured.TileUsingForOp(panel.tiled_linalg_op, sizes=[mr, 1, nr, 1])
    return transform_script(build)


def _packed_products(fn):
    return [op for op in ops_of_kind(fn, "linalg.generic") if _is_packed(op)]


def _split_ragged_edges(fn, mr, nr, scripts):
    """Split off the rows and columns beyond the last full register tile (tile_rows: rows
    where no tile height near MR divides them), so that every piece has static tile shapes
    (dynamic tiles would not vectorize). The columns of a piece need not be a whole number
    of vectors: cpu_register_tiles.RowVectors masks them. (Packed products have whole strips
    of columns.)"""
    for dim, unit in ((0, mr), (1, nr)):
        products = ops_of_kind(fn, "linalg.matmul")
        if dim == 0:
            products += _packed_products(fn)
        for mm in products:
            size = (loop_ranges(mm)[0][0] if mm.name == "linalg.generic"
                    else matmul_ranges(mm)[dim])
            step = tile_rows(size, mr) if dim == 0 else unit
            if size > step and size % step:
                chunk = size // step * step
                apply_script(mm, scripts.get(("split", dim, chunk),
                                             lambda: split_script(dim, chunk)), "matmul split")


def _tile_products(fn, mr, nr, scripts, threaded=True):
    """Thread (when `threaded`), cache and register tiles for every matmul and packed
    product."""
    for mm in ops_of_kind(fn, "linalg.matmul"):
        m, n, k = matmul_ranges(mm)
        if ir.ShapedType.is_dynamic_size(k):  # whole K panels, the loop's bound at run time
            panel, k = KC, DYNAMIC_ESTIMATE  # (k: the usual batch, for the flops test)
        else:
            panel = min(k, KC)
        rows = tile_rows(m, mr)
        tiles = (_largest_tile(m, rows, MC), _largest_tile(n, nr, NC), panel,
                 min(m, rows), min(n, nr), threaded and 2 * m * n * k >= MIN_PARALLEL_FLOPS)
        apply_script(mm, scripts.get(("tile",) + tiles, lambda: tile_matmul_script(*tiles)),
                     "matmul tiling")
    for gen in _packed_products(fn):
        m, strips, strip_width, k = loop_ranges(gen)[0]
        rows = tile_rows(m, mr)
        tiles = (_largest_tile(m, rows, MC),
                 _largest_tile(strips * strip_width, strip_width, NC) // strip_width,
                 min(k, KC), min(m, rows), strip_width,
                 threaded and 2 * m * strips * strip_width * k >= MIN_PARALLEL_FLOPS)
        apply_script(gen, scripts.get(("packed",) + tiles, lambda: tile_packed_script(*tiles)),
                     "matmul tiling")


def _tile_epilogues(fn, scripts, fused=None):
    """Rows of a 2-D epilogue over the threads, columns in vector-sized pieces (not the one
    the product's tiles compute, `fused`)."""
    for ep in ops_of_kind(fn, "linalg.generic"):
        if fused is not None and ep == fused:
            continue
        ranges = loop_ranges(ep)
        if ranges is None or len(ranges[0]) != 2:
            continue
        rows, cols = ranges[0]
        tiles = (max(1, -(-rows // 8)), _largest_tile(cols, 1, 64),
                 rows * cols >= MIN_PARALLEL_ITERATIONS)
        apply_script(ep, scripts.get(("epilogue",) + tiles,
                                     lambda: tile_epilogue_script(*tiles)), "epilogue tiling")


def _epilogue_to_fuse(fn, sites: CallSites):
    """(the epilogue the register tiles of the kernel's one product will compute, the
    argument the product writes) where the product's K is static (the tiles of its last
    panel compute it: cpu_fused_epilogues); else (None, None)."""
    products = ops_of_kind(fn, "linalg.matmul") + _packed_products(fn)
    if len(products) != 1:
        return None, None
    product = products[0]
    k = (matmul_ranges(product)[2] if product.name == "linalg.matmul"
         else loop_ranges(product)[0][3])
    if ir.ShapedType.is_dynamic_size(k):
        return None, None
    fused = fusable_epilogue(fn, product, sites.of(fn))
    return fused, product.operands[len(product.operands) - 1]


@register
class CpuMatmulSchedule(ModulePass):
    name = "ms-cpu-matmul-schedule"
    summary = ("tile (threads, cache, registers) and vectorize matmul kernels and their "
               "epilogues; ragged edges are split off as static pieces")

    options = dict(cpu_target.TARGET_OPTIONS)
    choices = dict(cpu_target.TARGET_CHOICES)

    def run(self, module):
        scripts, sites = ScriptCache(), CallSites(module)
        target = cpu_target.from_options(self.opts)
        tiled = []
        for fn in kernel_functions(module, "matmul"):
            matmuls = ops_of_kind(fn, "linalg.matmul") + _packed_products(fn)
            if not matmuls:
                continue  # folded away (an epilogue that ignores the product): plain loops
            if not (static_kernel(fn) or depth_arguments(fn) is not None):
                continue  # other dynamic sizes: ms-cpu-dynamic-matmul made static blocks of it
            mr, nr = register_tile(target)[0], strip_width(matmuls[0], target)
            for mm in matmuls:
                if packs_b(sites, fn, mm, nr, target):
                    pack_b(sites, fn, mm, nr, epilogue=True)
            fused, c = _epilogue_to_fuse(fn, sites)
            _split_ragged_edges(fn, mr, nr, scripts)
            _tile_products(fn, mr, nr, scripts, threaded=not called_in_parallel(sites.of(fn)))
            if fused is not None and not tiles_can_fuse(
                    ops_of_kind(fn, "linalg.matmul") + _packed_products(fn)):
                fused = None
            _tile_epilogues(fn, scripts, fused)
            if fused is not None:
                mark(fused, c)
            fn.attributes[_TILED] = ir.UnitAttr.get()
            tiled.append(fn)
        # Register tiles and epilogues as vector code (passes/cpu_register_tiles.py); what
        # that leaves, the generic vectorizer's (mixed element types, other bodies).
        generic = [fn for fn in tiled if not build_register_tiles(
            fn, static_kernel(fn), FusedEpilogue.of(fn), target.vector_bytes)]
        for fn in tiled:
            if fn not in generic:
                del fn.attributes[_TILED]
        if generic:
            apply_script(module, vectorize_script(), "matmul vectorization")
            for fn in generic:
                del fn.attributes[_TILED]
