"""ms-entry-dps: entry functions take their outputs as arguments (destination passing).

Target-neutral: both the CPU and the CUDA pipelines run it just before bufferization
(passes/pipeline.py), so that the caller (the runtime) owns every buffer of a call.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, bufferization, func, memref

from .base import ModulePass, fail, register
from ..dialects.ir_helpers import (function_type, ops_of_kind, public_functions, set_function_type,
                         symbol_name)

# Asks convert-func-to-llvm for a `_mlir_ciface_<name>` wrapper taking memref descriptors by
# pointer: what the runtime calls.
EMIT_C_INTERFACE = "llvm.emit_c_interface"


def _is_fill(op) -> bool:
    """A linalg.fill, or a linalg.generic computing a tensor from constants alone into
    tensor.empty (ms.broadcast_to/broadcast_like of a constant: zeros to write rows into)."""
    if op.name == "linalg.fill":
        return True
    owners = [None if isinstance(v.owner, ir.Block) else v.owner.name for v in op.operands]
    return "tensor.empty" in owners and all(o in ("arith.constant", "tensor.empty")
                                            for o in owners)


def unshare_inits(fn):
    """Give every user of a fill (`linalg.fill`, or a generic of constants: _is_fill) or
    `tensor.empty` result its own copy.

    CSE merges identical init tensors (two reductions of one shape share one fill; two
    stacks of rows written into zeros share the zeros). Then eliminate-empty-tensors lets
    the first result's output buffer stand for the shared init, and one-shot bufferization
    writes the second result into that same buffer: a function returning two same-shaped
    reductions returned the first one twice."""
    for kinds in (("linalg.fill", "linalg.generic"), ("tensor.empty",)):
        for op in ops_of_kind(fn, *kinds):
            if not len(op.results) or not (kinds[0] == "tensor.empty" or _is_fill(op)):
                continue  # (a fill of a memref: nothing shared to unshare)
            users = []
            for use in op.results[0].uses:
                if use.owner not in users:
                    users.append(use.owner)
            for user in users[1:]:
                copy = op.clone(ip=ir.InsertionPoint(user))
                user.operation.replace_uses_of_with(op.results[0], copy.results[0])


def _as_memref(t):
    t = ir.RankedTensorType(t)
    return ir.MemRefType.get(t.shape, t.element_type)


def make_destination_passing(fn):
    """(tensor...) -> (tensor...)  becomes  (memref... inputs, memref... outputs) -> ().

    The caller owns every buffer: inputs are read through `to_tensor restrict` and results
    are materialized into the output buffers, so bufferization needs no result allocation
    and the runtime can hand in (and re-use) numpy arrays."""
    unshare_inits(fn)
    ftype = function_type(fn)
    block = fn.regions[0].blocks[0]
    n_in = len(ftype.inputs)
    in_memrefs = [block.add_argument(_as_memref(t), fn.location) for t in ftype.inputs]
    out_memrefs = [block.add_argument(_as_memref(t), fn.location) for t in ftype.results]
    ret = block.operations[len(block.operations) - 1]
    with ir.InsertionPoint.at_block_begin(block), fn.location:
        for old, buf in zip(list(block.arguments)[:n_in], in_memrefs):
            old.replace_all_uses_with(
                bufferization.to_tensor(old.type, buf, restrict=True))
    with ir.InsertionPoint(ret), fn.location:
        for value, buf in zip(ret.operands, out_memrefs):
            bufferization.materialize_in_destination(None, value, buf, restrict=True,
                                                     writable=True)
        func.ReturnOp([])
    ret.erase()
    for _ in range(n_in):
        block.erase_argument(0)
    set_function_type(fn, [a.type for a in block.arguments], [])
    for name in ("arg_attrs", "res_attrs"):
        if name in fn.attributes:
            del fn.attributes[name]
    fn.attributes[EMIT_C_INTERFACE] = ir.UnitAttr.get()


def check_entry_types(fn):
    """A public function is an entry the runtime calls with arrays: it must take and return
    ranked tensors (scalars, memrefs or vectors at the boundary have no buffer to pass)."""
    ftype = function_type(fn)
    name = symbol_name(fn)
    for kind, types in (("argument", ftype.inputs), ("result", ftype.results)):
        for i, t in enumerate(types):
            if not isinstance(t, ir.RankedTensorType):
                fail(fn, f"entry function '{name}' {kind} #{i} has type {t}; entry functions "
                         "take and return ranked tensors")


@register
class EntryDestinationPassing(ModulePass):
    name = "ms-entry-dps"
    summary = "public functions take their outputs as memref arguments (C interface)"

    def run(self, module):
        entries = public_functions(module)
        for fn in entries:  # all checked before any is changed
            check_entry_types(fn)
        for fn in entries:
            make_destination_passing(fn)


def _widened(t):
    """memref<...xi1> as memref<...xi8> (same shape and layout), else None."""
    if not isinstance(t, ir.MemRefType):
        return None
    mt = ir.MemRefType(t)
    elem = mt.element_type
    if not (isinstance(elem, ir.IntegerType) and ir.IntegerType(elem).width == 1):
        return None
    return ir.MemRefType.get(mt.shape, ir.IntegerType.get_signless(8), mt.layout,
                             mt.memory_space)


def _widen_values(op):
    """Every result and block argument of memref<...xi1> type in `op` becomes i8; returns
    the loads and stores of such buffers, to be fixed up."""
    accesses = []

    def widen(values):
        for value in values:
            wide = _widened(value.type)
            if wide is not None:
                value.set_type(wide)

    def visit(inner):
        widen(inner.results)
        if len(inner.regions):  # (most ops have none: listing them was half the walk)
            for region in inner.regions:
                for block in region.blocks:
                    widen(block.arguments)
        if inner.name in ("memref.load", "memref.store"):
            accesses.append(inner)
        return ir.WalkResult.ADVANCE
    op.operation.walk(visit)
    return accesses


def _fix_access(op):
    """A load of an i8 buffer that still yields i1 reads the byte and tests it; a store of
    an i1 into one stores the byte."""
    i1, i8 = ir.IntegerType.get_signless(1), ir.IntegerType.get_signless(8)
    if op.name == "memref.load":
        buf = op.operands[0]
        if ir.MemRefType(buf.type).element_type != i8 or op.results[0].type != i1:
            return
        with ir.InsertionPoint(op), op.location:
            byte = memref.load(buf, list(op.operands)[1:])
            bit = arith.trunci(i1, byte)
        op.results[0].replace_all_uses_with(bit)
        op.erase()
    elif op.operands[0].type == i1 and ir.MemRefType(op.operands[1].type).element_type == i8:
        with ir.InsertionPoint(op), op.location:
            op.operands[0] = arith.extui(i8, op.operands[0])


@register
class BoolBuffersAsBytes(ModulePass):
    name = "ms-bool-buffers-as-bytes"
    summary = ("buffers of i1 (the ownership flags buffer-deallocation-pipeline keeps for "
               "loops and conditionals) become buffers of i8: LLVM lowering stores no i1")

    def run(self, module):
        for op in _widen_values(module):
            _fix_access(op)
        for fn in ops_of_kind(module, "func.func"):
            if len(fn.regions[0].blocks):
                ftype = function_type(fn)
                ins = [a.type for a in fn.regions[0].blocks[0].arguments]
                set_function_type(fn, ins, [_widened(t) or t for t in ftype.results])
            else:
                ftype = function_type(fn)
                set_function_type(fn, [_widened(t) or t for t in ftype.inputs],
                                  [_widened(t) or t for t in ftype.results])


def _freed_through_base(alloca) -> bool:
    """Whether the deallocation pipeline frees this buffer through its base pointer (a
    buffer owned only on some paths, such as one a branch of a conditional yields)."""
    return any(use.owner.operation.name in ("memref.extract_strided_metadata",
                                            "memref.extract_aligned_pointer_as_index")
               for use in alloca.results[0].uses)


@register
class KeepHeapBuffers(ModulePass):
    name = "ms-keep-heap-buffers"
    summary = ("undo promote-buffers-to-stack where the stack is wrong: inside a loop or a "
               "conditional (a loop's stack would grow every iteration), or where the buffer "
               "is freed through its base pointer (the deallocation pipeline's conditional "
               "frees)")

    def run(self, module):
        for alloca in ops_of_kind(module, "memref.alloca"):
            if alloca.parent.name == "func.func" and not _freed_through_base(alloca):
                continue
            with ir.InsertionPoint(alloca), alloca.location:
                heap = memref.AllocOp(ir.MemRefType(alloca.results[0].type),
                                      list(alloca.operands), [],
                                      alignment=alloca.attributes["alignment"]
                                      if "alignment" in alloca.attributes else None)
            alloca.results[0].replace_all_uses_with(heap.result)
            alloca.erase()
