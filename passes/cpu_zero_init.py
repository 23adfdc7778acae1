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

It applies to a static kernel's argument that a linalg.matmul of it writes, when every call
of the kernel fills that operand with zeros shortly before it in the same block
(MAX_DISTANCE) and nothing between the fill and the call touches the operand's buffer (views
aside). It runs on buffers right after ms-cpu-kernel-dest (which gives kernels their callers'
views and expects the fills there), while ms-late-alloc's fills are still next to their calls:
ms-cpu-tile-rows would take a fill into a loop over row tiles with the loops around it (the
MLP step's 256x512 gradient product, filled in 32 tiles of 8 rows). Kernels with a dynamic
size keep their callers' fills: ms-cpu-dynamic-matmul calls one with a dynamic depth once
per block of K, each call adding to C. (ms-cpu-merge-kernels, later, merges kernels that
moved their fills alike.)
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from .base import ModulePass, register
from .outline import kernel_functions, static_kernel
from ..dialects.ir_helpers import (MEMREF_VIEWS, calls_by_callee, may_alias, ops_of_kind,
                                   symbol_name, view_root)
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
        if inner.name not in MEMREF_VIEWS and any(
                isinstance(v.type, ir.MemRefType) and may_alias(view_root(v), root)
                for v in inner.operands):
            touched[0] = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE
    op.walk(visit)
    return touched[0]


# How far before a call its fill may be: ms-late-alloc puts an output's allocation and zero
# fill right before the op that first uses it, so the fill is the call's neighbour or a few
# ops away (a transpose of another operand between them); a bound keeps the search short in
# entries of thousands of ops.
MAX_DISTANCE = 16


class _Positions:
    """Each op's place in its block, the block listed once (a network's entry holds thousands
    of ops and hundreds of calls)."""

    def __init__(self):
        self.blocks: dict = {}

    def before(self, op, count: int) -> list:
        """Up to `count` ops before `op` in its block, nearest first."""
        block = op.block
        if block not in self.blocks:
            ops = [o.operation for o in block.operations]
            self.blocks[block] = (ops, {o: i for i, o in enumerate(ops)})
        ops, places = self.blocks[block]
        at = places[op]
        return ops[max(0, at - count):at][::-1]


def zero_fill_before(call, index, positions: _Positions):
    """The linalg.fill of zeros of the call's operand #index at most MAX_DISTANCE ops before it
    in its block, nothing between them touching the operand's buffer; else None."""
    c = call.operands[index]
    root = view_root(c)
    for op in positions.before(call.operation, MAX_DISTANCE):
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
        calls, positions = calls_by_callee(module.operation), _Positions()
        moves = []  # (kernel, argument, the callers' fills): found first, erased after
        for fn in kernel_functions(module, "matmul"):
            if not static_kernel(fn):
                continue
            sites = calls.get(symbol_name(fn), [])
            for index in _product_outputs(fn):
                fills = [zero_fill_before(call, index, positions) for call in sites]
                if sites and all(fill is not None for fill in fills):
                    moves.append((fn, index, fills))
        for fn, index, fills in moves:
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
