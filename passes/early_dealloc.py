"""ms-early-dealloc: free each buffer right after its last use, not at the end of its block.

buffer-deallocation-pipeline (ownership-based) frees the buffers a block owns just before
the block's terminator. For a training step that means every intermediate of the forward and
the backward is live until the function returns: the peak memory is the sum of all of them,
and recomputing a forward (Cell.recompute) could save nothing. This pass moves each
unconditional `memref.dealloc %a`, where %a is a `memref.alloc` of the same block, to just
after the last op of the block that uses %a or a view of it (a use inside a nested region
counts as a use by the op of this block that holds it).

Views are followed through every op that takes the buffer and returns a memref (subview,
expand_shape, cast, ...: any such op is assumed to alias, which can only keep a buffer
longer). Conditional frees and buffers the block did not allocate are left where they are.
CPU only: the CUDA launch plan runs kernels asynchronously, so a free there must wait for
the stream (passes/launch_plan.py keeps its own order).
"""
from __future__ import annotations

from mlir import ir

from .base import ModulePass, register
from ..dialects.ir_helpers import ops_of_kind


def _aliases(buffer) -> list:
    """`buffer` and the memrefs derived from it (views), transitively."""
    found, todo = [buffer], [buffer]
    while todo:
        v = todo.pop()
        for use in v.uses:
            for r in use.owner.results:
                if isinstance(r.type, ir.MemRefType) and r not in found:
                    found.append(r)
                    todo.append(r)
    return found


def _holder_in(block, op):
    """The ancestor of `op` (or op) whose block is `block`, or None."""
    op = op.operation
    while True:
        if op.block == block:
            return op
        parent = op.parent
        if parent is None or parent.name == "func.func":
            return None
        op = parent.operation


def _last_user(dealloc):
    """The last op of the dealloc's block that uses its buffer or a view of it; None when
    the buffer does not come from a memref.alloc of that block or the last use is the
    block's terminator."""
    buffer = dealloc.operands[0]
    owner = buffer.owner
    block = dealloc.block
    if isinstance(owner, ir.Block) or owner.name != "memref.alloc" or owner.operation.block != block:
        return None
    order = {op.operation: i for i, op in enumerate(block.operations)}
    last = owner.operation
    for alias in _aliases(buffer):
        for use in alias.uses:
            user = use.owner.operation
            if user == dealloc:
                continue
            holder = _holder_in(block, user)
            if holder is None:
                return None  # (a use this pass cannot place: leave the free where it is)
            if order[holder] > order[last]:
                last = holder
    return None if order[last] == len(order) - 1 else last  # (never after a terminator)


@register
class EarlyDealloc(ModulePass):
    name = "ms-early-dealloc"
    summary = "move each buffer's memref.dealloc to just after its last use in its block"

    def run(self, module):
        for dealloc in ops_of_kind(module, "memref.dealloc"):
            dealloc = dealloc.operation
            last = _last_user(dealloc)
            if last is not None:
                dealloc.move_after(last)
