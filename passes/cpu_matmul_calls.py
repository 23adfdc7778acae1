"""ms-cpu-matmul-calls: a float32/float64 linalg.matmul on buffers becomes a call of a compiled
matrix product (runtime/_quick_kernels.c: C += A @ B).

The pass of the quick tier (passes/tiering.py, pipeline.QUICK_STAGES), in the place of the
matmul schedule: unscheduled, a matmul kernel's loops compiled at -O0 ran at ~0.2-0.5 G
multiply-adds per second, most of LeNet5's quick first call; scheduled, its register tiles
were most of the quick tier's lowering and -O0 code generation (passes/pipeline.py).

Each operand passes as the address of its first element (the aligned pointer plus the
offset) and the element stride between its rows, which the buffer's strided layout gives
(extract_strided_metadata: dynamic sizes and strides too). It applies to matmuls whose
operands are buffers of one element type the library has, with contiguous rows (innermost
stride 1) and the plain indexing maps (ms-cpu-materialize-transposes made the transposed
ones plain); the others stay loops.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, memref

from ..runtime.quick_kernels import MATMUL
from .base import ModulePass, register
from .symbols import declare_external
from ..dialects.ir_helpers import element_bytes, indexing_maps, ops_of_kind, projection


def _element(value) -> str | None:
    """The name of the element type of a buffer whose rows are contiguous, else None."""
    if not isinstance(value.type, ir.MemRefType):
        return None
    t = ir.MemRefType(value.type)
    strides, _ = t.get_strides_and_offset()
    if t.rank != 2 or strides[-1] != 1:
        return None
    return str(t.element_type)


# linalg.matmul's own maps over loops (m, n, k): A[m, k], B[k, n], C[m, n].
_PLAIN_MAPS = ((0, 2), (2, 1), (0, 1))


def _plain(op) -> bool:
    """Whether a matmul reads its operands untransposed (its maps, where it has any, the
    default ones)."""
    if "indexing_maps" not in op.attributes:
        return True
    return indexing_maps(op) == [projection(3, dims, op.context) for dims in _PLAIN_MAPS]


def _callee(op) -> str | None:
    """The library function for a matmul, or None where it stays loops."""
    if len(op.operands) != 3 or len(op.results) or not _plain(op):
        return None
    kinds = {_element(v) for v in op.operands}
    return MATMUL.get(kinds.pop()) if len(kinds) == 1 else None


def _address_and_rows(buffer):
    """(address of the first element as an index, (rows, columns), row stride) of a 2-D
    buffer."""
    meta = memref.ExtractStridedMetadataOp(buffer)
    base = memref.extract_aligned_pointer_as_index(buffer)
    width = arith.constant(ir.IndexType.get(), element_bytes(buffer.type))
    address = arith.addi(base, arith.muli(meta.offset, width))
    return address, list(meta.sizes), list(meta.strides)[0]


def _as_call(op, callee: str):
    with ir.InsertionPoint(op), op.location:
        (a, (m, k), lda), (b, (_, n), ldb), (c, _, ldc) = (
            _address_and_rows(v) for v in op.operands)
        func.CallOp([], ir.FlatSymbolRefAttr.get(callee), [m, n, k, a, lda, b, ldb, c, ldc])
    op.erase()


@register
class CpuMatmulCalls(ModulePass):
    name = "ms-cpu-matmul-calls"
    summary = ("a float32/float64 linalg.matmul on buffers with contiguous rows becomes a "
               "call of the quick tier's compiled matrix product (C += A @ B)")

    def run(self, module):
        declared = set()
        for op in ops_of_kind(module, "linalg.matmul"):
            callee = _callee(op)
            if callee is None:
                continue
            if callee not in declared:
                declare_external(module, callee, [ir.IndexType.get()] * 9, [])
                declared.add(callee)
            _as_call(op, callee)
