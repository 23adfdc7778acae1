"""ms-entry-dps: entry functions take their outputs as arguments (destination passing).

Target-neutral: both the CPU and the CUDA pipelines run it just before bufferization
(passes/pipeline.py), so that the caller (the runtime) owns every buffer of a call.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import bufferization, func

from .base import ModulePass, fail, register
from ..dialects.ir_helpers import (function_type, ops_of_kind, public_functions, set_function_type,
                         symbol_name)

# Asks convert-func-to-llvm for a `_mlir_ciface_<name>` wrapper taking memref descriptors by
# pointer: what the runtime calls.
EMIT_C_INTERFACE = "llvm.emit_c_interface"


def unshare_inits(fn):
    """Give every user of a `linalg.fill` or `tensor.empty` result its own copy.

    CSE merges identical init tensors (two reductions of one shape share one fill). Then
    eliminate-empty-tensors lets the first result's output buffer stand for the shared
    init, and one-shot bufferization writes the second result into that same buffer: a
    function returning two same-shaped reductions returned the first one twice."""
    for kind in ("linalg.fill", "tensor.empty"):
        for op in ops_of_kind(fn, kind):
            if not len(op.results):  # a fill of a memref: nothing shared to unshare
                continue
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
