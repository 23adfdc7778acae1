"""ms-cpu-kernel-zero-init: a matmul kernel zeroes its own output, where its callers did.

A product starts from zeros: the caller fills C, then calls the kernel, whose register tiles
load C's rows, add their products and store them. The fill is a pass over C's bytes of its
own (1.6 MB for an MLP's 512x784 weight gradient, every step) and the tiles of the first K
panel then read those zeros back. This pass moves the fill into the kernel, at its entry:

    linalg.fill ins(%zero : f32) outs(%c : memref<512x784xf32>)
    call @kernel(%a, %b, %c)

becomes a call of a kernel that begins with `linalg.fill ins(%zero) outs(%arg2)`. The result
is the same; what changes is that the matmul schedule sees the fill: its register tiles of the
first K panel start from zero registers instead of loading C, and when every product was
built so, the fill goes (passes/cpu_register_tiles.py, `zero_filled_outputs`).

It applies to an argument that a linalg.matmul of the kernel writes, when every call of the
kernel fills that operand with zeros before it in the same block and nothing between the fill
and the call touches the operand's buffer (views aside). It runs on buffers after
ms-cpu-kernel-dest (which gives kernels their callers' views and expects the fills there) and
ms-cpu-merge-kernels (a merged kernel moves its fill only when all its calls had one), before
ms-cpu-matmul-schedule.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from .base import ModulePass, register
from .cpu_kernel_dest import _VIEWS, _may_alias, _root
from .outline import kernel_functions
from ..dialects.ir_helpers import calls_by_callee, ops_of_kind, symbol_name
from ..dialects.upstream import linalg


def is_zero_fill(op) -> bool:
    """A linalg.fill on a buffer whose value is the float constant 0."""
    if op.name != "linalg.fill" or len(op.results):
        return False
    value = op.operands[0].owner
    if isinstance(value, ir.Block) or value.operation.name != "arith.constant":
        return False
    attr = value.operation.attributes["value"]
    return isinstance(attr, ir.FloatAttr) and ir.FloatAttr(attr).value == 0.0


def _product_outputs(fn) -> list[int]:
    """The arguments of the kernel that one linalg.matmul of it writes (directly) and no op
    before it uses."""
    args = list(fn.regions[0].blocks[0].arguments)
    writes: dict[int, list] = {}
    for mm in ops_of_kind(fn, "linalg.matmul"):
        c = mm.operands[len(mm.operands) - 1]
        if c in args:
            writes.setdefault(c.arg_number, []).append(mm)
    return [index for index, mms in writes.items()
            if len(mms) == 1 and mms[0].operation == _first_use(args[index])]


def _first_use(value):
    """The op of the value's block that uses it first (itself or in an op nested in it)."""
    users = []
    for use in value.uses:
        op = use.owner.operation
        while op.block != value.owner:
            op = op.parent
        users.append(op)
    for op in value.owner.operations:
        if op.operation in users:
            return op.operation
    return None  # (unused)


def _touches(op, root) -> bool:
    """Whether `op` or an op nested in it uses a buffer that may be `root`'s other than to
    make a view of it."""
    touched = [False]

    def visit(inner):
        if inner.name not in _VIEWS and any(
                isinstance(v.type, ir.MemRefType) and _may_alias(_root(v), root)
                for v in inner.operands):
            touched[0] = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE
    op.walk(visit)
    return touched[0]


def zero_fill_before(call, index):
    """The linalg.fill of zeros of the call's operand #index before it in its block, with
    nothing between them touching the operand's buffer; else None."""
    c = call.operands[index]
    root = _root(c)
    ops = list(call.operation.block.operations)
    position = [o.operation for o in ops].index(call.operation)
    for op in reversed([o.operation for o in ops[:position]]):
        if op.name == "linalg.fill" and op.operands[1] == c:
            return op if is_zero_fill(op) else None
        if _touches(op, root):
            return None
    return None


@register
class KernelZeroInit(ModulePass):
    name = "ms-cpu-kernel-zero-init"
    summary = ("move the callers' zero fills of a matmul kernel's output into the kernel, "
               "where the matmul schedule's first register tiles start from zeros instead")

    def run(self, module):
        calls = calls_by_callee(module.operation)
        for fn in kernel_functions(module, "matmul"):
            sites = calls.get(symbol_name(fn), [])
            for index in _product_outputs(fn):
                fills = [zero_fill_before(call, index) for call in sites]
                if not sites or any(fill is None for fill in fills):
                    continue
                for fill in fills:
                    fill.erase()
                _fill_at_entry(fn, index)


def _fill_at_entry(fn, index):
    entry = fn.regions[0].blocks[0]
    c = entry.arguments[index]
    element = ir.MemRefType(c.type).element_type
    with ir.InsertionPoint.at_block_begin(entry), fn.location:
        zero = arith.constant(element, 0.0)
        fill = linalg.FillOp(result_tensors=[], inputs=[zero], outputs=[c])
        linalg.fill_builtin_region(fill.operation)
