"""The LLVM dialect's Python module as the bindings load it for mscc: no op classes.

The pipeline reads the LLVM dialect ops the conversions make generically (symbol names,
attributes), so a compile needs none of `mlir.dialects.llvm`'s generated classes, whose import
(~14-17 ms: some 300 op classes and their enums) the first compile of every process paid when
ms-cpu-loop-hints parsed its first LLVM attribute. The few LLVM ops mscc's CPU passes make
(ms-cpu-fills-as-memset's memsets, ms-cpu-merge-constant-variants' calls) are built here, as
generic operations with the attributes the upstream builders give them. The collectives
(dialects/ops/collective.py) build their MPI calls with the upstream module's builders and
import it when a collective is lowered; its classes then register as usual. (The print
declarations of dialects/ops/debug.py are still parsed text.)
"""
from __future__ import annotations

from mlir import ir
from mlir._mlir_libs._mlirDialectsLLVM import PointerType


def pointer_type() -> ir.Type:
    """!llvm.ptr (address space 0)."""
    return PointerType.get()


def constant(result_type: ir.Type, value: ir.Attribute) -> ir.Value:
    """llvm.mlir.constant of `value`."""
    return ir.Operation.create("llvm.mlir.constant", results=[result_type],
                               attributes={"value": value}).result


def int_to_ptr(value: ir.Value) -> ir.Value:
    """llvm.inttoptr of an integer to !llvm.ptr."""
    return ir.Operation.create("llvm.inttoptr", results=[pointer_type()],
                               operands=[value]).result


def memset(dst: ir.Value, byte: ir.Value, length: ir.Value, volatile: bool = False):
    """llvm.intr.memset(dst, byte, length)."""
    return ir.Operation.create("llvm.intr.memset", operands=[dst, byte, length],
                               attributes={"isVolatile": ir.BoolAttr.get(volatile)})


def call(result_type: ir.Type | None, callee: str, operands: list) -> ir.Operation:
    """A direct llvm.call of `callee` (no operand bundles)."""
    return ir.Operation.create(
        "llvm.call", results=[] if result_type is None else [result_type],
        operands=list(operands), attributes={
            "callee": ir.FlatSymbolRefAttr.get(callee),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(operands), 0]),
            "op_bundle_sizes": ir.DenseI32ArrayAttr.get([])})
