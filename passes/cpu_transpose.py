"""ms-cpu-vectorize-transposes: 2-D transposes copied in square blocks of vector registers.

convert-linalg-to-loops writes a transpose as one scalar loop nest that reads a column of the
input for every output row. When the input's rows are a power of two bytes apart (a 256x512
float32 matrix), the column's elements share a few L1 sets and every read misses: the copy ran
at ~15 GB/s, slower than the matmul that reads it is worth. In blocks of 16x16 elements every
input line is used 16 times while it is in cache, and the block is transposed in registers
(AVX-512 shuffles). ms-cpu-materialize-transposes makes these copies for every transposed
matmul operand, so they are on the training step's path.

Where the host has AVX2 the blocks are 8x8, transposed by MLIR's AVX2 lowering (three rounds
of 256-bit unpacks, shuffles and blends; the blends as inline assembly), else 16x16 by
vector.shuffle. LLVM's instruction selection takes the 16x16 shuffles (64 of them, 512-bit)
slowly: a transpose of 32x784 floats took 36-43 ms of LLVM's time, in 8x8 blocks 20 ms (64x3136:
65-75 -> 50 ms), and the copies ran as fast or faster (Intel Xeon, AVX-512; in 8x8 blocks
144x784 and 128x1000 are whole blocks, 35 -> 19 and 41 -> 24 us). The `blocks` option pins
the choice (lit tests).
"""
from __future__ import annotations

from typing import NamedTuple

from mlir import ir
from mlir.dialects import arith, memref

from . import cpu_target
from .base import register
from ..dialects.upstream import linalg
from .cpu_loops import MIN_PARALLEL_ITERATIONS, ThreadedPass, block_loop, block_type
from ..dialects.ir_helpers import (defined_functions, element_bytes, identity_layout,
                                   in_parallel_loop, ops_of_kind)
from .outline import is_kernel
from .transforms import (ScriptCache, apply_script, structured, transform, transform_script,
                         vector)


class Blocks(NamedTuple):
    size: int   # elements per side
    lowering: str  # vector.VectorTransposeLowering's member
    avx2: bool  # MLIR's AVX2 lowering of 8x8 float32 transposes (inline assembly)


BLOCKS = {"shuffle-16x16": Blocks(16, "Shuffle16x16", False),
          "avx2-8x8": Blocks(8, "Shuffle1D", True)}


def host_blocks() -> str:
    """The blocks for the current target: 8x8 by AVX2 where its instructions may be used and
    LLVM's C API makes the machine code (it assembles inline assembly; the ExecutionEngine,
    where that API is missing, does not)."""
    from . import llvm_capi
    avx2 = "avx2" in cpu_target.current().features and llvm_capi.library() is not None
    return "avx2-8x8" if avx2 else "shuffle-16x16"


def transpose_script(parallel, blocks: Blocks):
    """Rows of blocks are spread over the threads (scf.forall), blocks within a row are a
    loop."""
    block = blocks.size

    def build(root):
        if parallel:
            root = structured.TileUsingForallOp(root, tile_sizes=[block, 0]).tiled_op
        tiled = structured.TileUsingForOp(root, sizes=[block, block])
        structured.VectorizeOp(tiled.tiled_linalg_op)
        outer = tiled.loops[0]
        p = transform.ApplyPatternsOp(outer)
        with ir.InsertionPoint(p.patterns):
            vector.ApplyTransferPermutationPatternsOp()
            vector.ApplyLowerTransposePatternsOp(
                lowering_strategy=getattr(vector.VectorTransposeLowering, blocks.lowering),
                avx2_lowering_strategy=blocks.avx2)
        p = transform.ApplyPatternsOp(outer)
        with ir.InsertionPoint(p.patterns):
            vector.ApplyTransferToScfPatternsOp(max_transfer_rank=1, full_unroll=True)
            vector.ApplyLowerTransferPatternsOp(max_transfer_rank=1)
            vector.ApplyLowerShapeCastPatternsOp()
    return transform_script(build)


def _blockable(op, block: int) -> bool:
    """A 2-D transpose of 32-bit elements whose sizes are multiples of the block."""
    t = ir.MemRefType(op.operands[0].type)
    if t.rank != 2 or not t.has_static_shape:
        return False
    if getattr(t.element_type, "width", None) != 32:
        return False
    return all(d % block == 0 for d in t.shape)


def _in_l1(op, l1d_bytes: int) -> bool:
    """Whether the lines a static transpose's input spans (its rows times the stride between
    them) fit in the L1 data cache: then its scalar loops read every column from L1, and
    16x16 register blocks cost LLVM more than they save. A Conv2d's 144x32 weight gradient
    (18 KiB): its blocks were ~8% of LLVM's time for the convolution's forward and backward,
    the scalar copy ~5 us of a 9 ms training step."""
    t = ir.MemRefType(op.operands[0].type)
    strides, _ = t.get_strides_and_offset()
    return t.shape[0] * strides[0] * element_bytes(t) <= l1d_bytes


_STRIP = "ms.transpose_strip"  # a strip of a dynamic transpose (vectorized already)


def _ragged(op, l1d_bytes: int, block: int) -> bool:
    """A static 2-D transpose of 32-bit elements between buffers of the identity layout, at
    least a block in each size, a size not a multiple of it, whose input does not fit in the
    L1 data cache (LeNet5's 120x400 and 84x120 with 32 KiB): a smaller one's scalar loops
    read their columns from L1, and blocking it grows the code more than it saves (LeNet5's
    five ragged transposes blocked: +14% LLVM operations, 150x16's 1.8 -> 1.2 us a call)."""
    src, dst = (ir.MemRefType(v.type) for v in op.operands[:2])
    if src.rank != 2 or not src.has_static_shape or not (
            identity_layout(src) and identity_layout(dst)):
        return False
    if getattr(src.element_type, "width", None) != 32:
        return False
    rows, cols = src.shape
    return (rows >= block and cols >= block and bool(rows % block or cols % block)
            and rows * cols * 4 > l1d_bytes)


def _piece(value, offsets, sizes):
    """The static view `sizes` at `offsets` of an identity-layout 2-D buffer."""
    t = ir.MemRefType(value.type)
    layout = ir.StridedLayoutAttr.get(offsets[0] * t.shape[1] + offsets[1], [t.shape[1], 1])
    return memref.subview(value, offsets, sizes, [1, 1],
                          result_type=ir.MemRefType.get(sizes, t.element_type, layout))


def _split_ragged(op, block: int):
    """A ragged transpose as three of views: the block-aligned rows and columns (blocked with
    the others), the rows beyond them and the columns beyond them (plain loops, under a block
    wide). Left whole, the transpose was one scalar loop nest reading a column of the input
    per output row."""
    src, dst = op.operands[0], op.operands[1]
    rows, cols = ir.MemRefType(src.type).shape
    r, c = rows // block * block, cols // block * block
    pieces = [((0, 0), (r, c)), ((r, 0), (rows - r, cols)), ((0, c), (r, cols - c))]
    with ir.InsertionPoint(op), op.location:
        for (r0, c0), (nr, nc) in pieces:
            if nr and nc:
                linalg.transpose(_piece(src, [r0, c0], [nr, nc]),
                                 outs=[_piece(dst, [c0, r0], [nc, nr])], permutation=[1, 0])
    op.erase()


def _strippable(op, block: int):
    """For a 2-D transpose of 32-bit elements with one dynamic size and the other a multiple
    of the block: the input's dynamic dimension, else None."""
    t = ir.MemRefType(op.operands[0].type)
    if t.rank != 2 or getattr(t.element_type, "width", None) != 32:
        return None
    dynamic = [i for i, d in enumerate(t.shape) if ir.ShapedType.is_dynamic_size(d)]
    if len(dynamic) != 1 or t.shape[1 - dynamic[0]] % block:
        return None
    return dynamic[0]


def _in_strips(op, axis, parallel, block: int):
    """A transpose with a dynamic size as transposes of static pieces: strips of `block` rows
    of the output, over the threads, each copied in blocks of the dynamic size and then single
    elements of it (block x block and 1 x block pieces). Rows of the output are
    written whole, as in the static schedule: writing columns of 16 elements instead (one
    64-byte piece per output row) ran ~2.5x slower. Returns the full pieces' transposes."""
    src, dst = op.operands[0], op.operands[1]
    idx = ir.IndexType.get()
    made = []
    with ir.InsertionPoint(op), op.location:
        total = memref.dim(src, arith.constant(idx, axis))
        full = arith.divui(total, arith.constant(idx, block))
        rest = arith.remui(total, arith.constant(idx, block))
        firsts = (arith.constant(idx, 0), arith.muli(full, arith.constant(idx, block)))
        if axis == 1:  # the output's rows are the dynamic size: strips of it, as before
            made = _dynamic_pieces(src, dst, axis, full, rest, firsts, None, parallel, block)
        else:  # the output's rows are the static size: strips of it over the threads
            rows = ir.MemRefType(src.type).shape[1] // block
            strips = block_loop(arith.constant(idx, 0), rows, block, parallel)
            with ir.InsertionPoint(strips.body):
                made = _dynamic_pieces(src, dst, axis, full, rest, firsts, strips.start,
                                       False, block)
                strips.close()
    op.erase()
    return made


def _dynamic_pieces(src, dst, axis, full, rest, firsts, strip, parallel, block):
    """Loops over the dynamic `axis` of src in blocks of `block` (over the threads when
    `parallel`), then of 1, each transposing a static piece: the whole static size, or the
    `block` of it from `strip`. Returns the block-sized pieces' transposes (single elements are
    copied as they are)."""
    made = []
    for size, count, first, threaded in ((block, full, firsts[0], parallel),
                                         (1, rest, firsts[1], False)):
        loop = block_loop(first, count, size, threaded)
        with ir.InsertionPoint(loop.body):
            views = []
            for value, dim in ((src, axis), (dst, 1 - axis)):
                t = ir.MemRefType(value.type)
                offsets, sizes = [0, 0], list(t.shape)
                offsets[dim], sizes[dim] = loop.start, size
                if strip is not None:
                    offsets[1 - dim], sizes[1 - dim] = strip, block
                views.append(memref.subview(value, offsets, sizes, [1, 1],
                                            result_type=block_type(t, sizes)))
            piece = linalg.transpose(views[0], outs=[views[1]], permutation=[1, 0])
            piece = getattr(piece, "operation", piece)
            piece.attributes[_STRIP] = ir.UnitAttr.get()
            made.append(piece)
            loop.close()
    return made[:1]


@register
class VectorizeTransposes(ThreadedPass):
    name = "ms-cpu-vectorize-transposes"
    summary = ("copy 2-D float32/int32 transposes in square register blocks (8x8 by AVX2, else "
               "16x16 shuffles), rows of blocks on all threads (memrefs; before "
               "ms-cpu-parallelize)")

    # (0 and "host": the target's; lit tests pin them)
    options = {**ThreadedPass.options, "l1d-bytes": 0, "blocks": "host"}
    choices = {**ThreadedPass.choices, "blocks": ("host", *BLOCKS)}

    def run(self, module):
        threads = self.threads()
        l1d_bytes = cpu_target.from_options(self.opts).l1d_bytes
        blocks = BLOCKS[host_blocks() if self.opts["blocks"] == "host" else self.opts["blocks"]]
        block = blocks.size
        scripts = ScriptCache()

        def script(parallel):
            return scripts.get(parallel, lambda: transpose_script(parallel, blocks))
        for fn in defined_functions(module):  # dynamic sizes: static strips, blocked below
            if is_kernel(fn):
                continue
            for op in ops_of_kind(fn, "linalg.transpose"):
                axis = _strippable(op, block)
                if axis is not None:
                    for strip in _in_strips(op, axis, threads > 1, block):
                        apply_script(strip, script(False), "transpose vectorization")
        for fn in defined_functions(module):  # ragged static sizes: an aligned part
            if not is_kernel(fn):
                for op in ops_of_kind(fn, "linalg.transpose"):
                    if _ragged(op, l1d_bytes, block):
                        _split_ragged(op, block)
        found = [op for fn in defined_functions(module) if not is_kernel(fn)
                 for op in ops_of_kind(fn, "linalg.transpose") if _blockable(op, block)
                 and _STRIP not in op.attributes and not _in_l1(op, l1d_bytes)]
        for op in found:
            rows, cols = ir.MemRefType(op.operands[0].type).shape
            # (one inside a parallel loop, a strip of pack_b's, is on the threads already)
            parallel = (threads > 1 and rows * cols >= MIN_PARALLEL_ITERATIONS
                        and not in_parallel_loop(op))
            apply_script(op, script(parallel), "transpose vectorization")
