"""ms-cpu-vectorize-transposes: 2-D transposes copied in 16x16 blocks of vector registers.

convert-linalg-to-loops writes a transpose as one scalar loop nest that reads a column of the
input for every output row. When the input's rows are a power of two bytes apart (a 256x512
float32 matrix), the column's elements share a few L1 sets and every read misses: the copy ran
at ~15 GB/s, slower than the matmul that reads it is worth. In blocks of 16x16 elements every
input line is used 16 times while it is in cache, and the block is transposed in registers
(AVX-512 shuffles). ms-cpu-materialize-transposes makes these copies for every transposed
matmul operand, so they are on the training step's path.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import structured, vector

from .base import register
from .cpu_loops import MIN_PARALLEL_ITERATIONS, ThreadedPass
from ..dialects.ir_helpers import defined_functions, ops_of_kind
from .outline import is_kernel
from .transforms import ScriptCache, apply_script, transform_script

BLOCK = 16


def transpose_script(parallel):
    """Rows of blocks are spread over the threads (scf.forall), blocks within a row are a
    loop."""
    def build(root):
        if parallel:
            root = structured.TileUsingForallOp(root, tile_sizes=[BLOCK, 0]).tiled_op
        tiled = structured.TileUsingForOp(root, sizes=[BLOCK, BLOCK])
        structured.VectorizeOp(tiled.tiled_linalg_op)
        outer = tiled.loops[0]
        p = transform.ApplyPatternsOp(outer)
        with ir.InsertionPoint(p.patterns):
            vector.ApplyTransferPermutationPatternsOp()
            vector.ApplyLowerTransposePatternsOp(
                lowering_strategy=vector.VectorTransposeLowering.Shuffle16x16)
        p = transform.ApplyPatternsOp(outer)
        with ir.InsertionPoint(p.patterns):
            vector.ApplyTransferToScfPatternsOp(max_transfer_rank=1, full_unroll=True)
            vector.ApplyLowerTransferPatternsOp(max_transfer_rank=1)
            vector.ApplyLowerShapeCastPatternsOp()
    return transform_script(build)


def _blockable(op) -> bool:
    """A 2-D transpose of 32-bit elements whose sizes are multiples of the block."""
    t = ir.MemRefType(op.operands[0].type)
    if t.rank != 2 or not t.has_static_shape:
        return False
    if getattr(t.element_type, "width", None) != 32:
        return False
    return all(d % BLOCK == 0 for d in t.shape)


@register
class VectorizeTransposes(ThreadedPass):
    name = "ms-cpu-vectorize-transposes"
    summary = ("copy 2-D float32/int32 transposes in 16x16 register blocks, rows of blocks "
               "on all threads (memrefs; before ms-cpu-parallelize)")

    def run(self, module):
        threads = self.threads()
        found = [op for fn in defined_functions(module) if not is_kernel(fn)
                 for op in ops_of_kind(fn, "linalg.transpose") if _blockable(op)]
        scripts = ScriptCache()
        for op in found:
            rows, cols = ir.MemRefType(op.operands[0].type).shape
            parallel = threads > 1 and rows * cols >= MIN_PARALLEL_ITERATIONS
            apply_script(op, scripts.get(parallel, lambda: transpose_script(parallel)),
                         "transpose vectorization")
