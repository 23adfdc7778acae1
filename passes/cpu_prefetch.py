"""ms-cpu-prefetch-b: the matmul register kernels prefetch the rows of an unpacked B ahead.

A register tile's loop over k reads one row segment of B per iteration (two vectors: 128
bytes with AVX-512). Packed, those segments are contiguous and the hardware prefetchers
stream them; unpacked (a convolution's im2col matrix, 64 rows of A too few to pay for a
packed copy: passes/cpu.py), consecutive segments are a row apart, thousands of bytes, and
the matrix (7 MB per image for a ResNet block's 64x56x56 layer) comes from L3 or memory:
the loads of B stalled the loop. Each B load gets a `memref.prefetch` of the segment
PREFETCH rows ahead, one per cache line, its row clamped to B's last.

The distance comes from the L1 data cache: the segments prefetched and not yet read take
at most 1/8 of it (32 rows of 128-byte segments in 32 KiB), so they are not evicted before
their turn. Measured on an AMD EPYC (32 KiB L1d), both forms compiled in one process and
their calls alternated: a ResNet block's forward (32x64x56x56) 85-88 -> 77-80 ms with 16 to
32 rows ahead (4 and 8: no gain; 64: 78-84 ms), its training step 255 -> 240 ms; square
matmuls (B packed: untouched), the MLP step, LeNet5 and a 3x3 conv whose im2col matrix fits
in L2 unchanged.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, memref

from . import cpu_target
from .base import ModulePass, register
from ..dialects.ir_helpers import element_bytes, ops_of_kind
from .outline import kernel_functions

LINE_BYTES = 64
L1_SHARE = 8  # the prefetched segments take at most 1/L1_SHARE of the L1 data cache


def prefetch_rows(target, segment_bytes: int) -> int:
    """How many rows ahead to prefetch segments of `segment_bytes`."""
    return max(1, target.l1d_bytes // (L1_SHARE * segment_bytes))


def _register_loops(fn):
    """The loops over k of the register tiles: their accumulators are loop-carried vectors."""
    return [loop for loop in ops_of_kind(fn, "scf.for")
            if any(isinstance(r.type, ir.VectorType) for r in loop.results)]


def _row_loads(loop, b):
    """The loop's vector loads of a row segment of the 2-D memref `b`."""
    return [op for op in ops_of_kind(loop, "vector.load")
            if op.operands[0] == b and ir.VectorType(op.result.type).rank == 1
            and ir.VectorType(op.result.type).shape[0] > 1]


def _unpacked_b(fn):
    """The kernel's B argument when it is a static 2-D memref (pack_b makes packed ones
    3-D), else None."""
    args = list(fn.regions[0].blocks[0].arguments)
    if len(args) < 2 or not isinstance(args[1].type, ir.MemRefType):
        return None
    b = ir.MemRefType(args[1].type)
    return args[1] if b.rank == 2 and b.has_static_shape else None


def _prefetch_ahead(load, b, rows_ahead: int):
    """Before `load` (B[row, col...]), prefetch B[min(row + rows_ahead, last), col + i*line]
    for each cache line of the segment."""
    row, col = load.operands[1], load.operands[2]
    last = ir.MemRefType(b.type).shape[0] - 1
    segment = ir.VectorType(load.result.type).shape[0]
    per_line = max(1, LINE_BYTES // element_bytes(b.type))
    with ir.InsertionPoint(load), load.location:
        index = ir.IndexType.get()
        ahead = arith.minui(arith.addi(row, arith.constant(index, rows_ahead)),
                            arith.constant(index, last))
        for offset in range(0, segment, per_line):
            at = col if offset == 0 else arith.addi(col, arith.constant(index, offset))
            memref.prefetch(b, [ahead, at], False, 3, True)


@register
class PrefetchB(ModulePass):
    name = "ms-cpu-prefetch-b"
    summary = ("matmul register loops prefetch the rows of an unpacked B ahead (the distance "
               "from the L1 data cache's size)")
    options = dict(cpu_target.TARGET_OPTIONS)
    choices = dict(cpu_target.TARGET_CHOICES)

    def run(self, module):
        target = cpu_target.from_options(self.opts)
        for fn in kernel_functions(module, "matmul"):
            b = _unpacked_b(fn)
            if b is None:
                continue
            for loop in _register_loops(fn):
                for load in _row_loads(loop, b):
                    segment_bytes = (ir.VectorType(load.result.type).shape[0]
                                     * element_bytes(b.type))
                    _prefetch_ahead(load, b, prefetch_rows(target, segment_bytes))
