"""ms-late-alloc and ms-early-dealloc: each buffer lives from just before its first use to
just after its last one (CPU).

After bufferization a buffer's lifetime is wherever its `memref.alloc` and `memref.dealloc`
happen to stand: the allocation where the tensor it stands for was created (CSE hoists the
`tensor.empty` and the zero `linalg.fill` of matmul and reduction outputs to their first
occurrence) and the free at the end of the block (buffer-deallocation-pipeline frees the
buffers a block owns just before its terminator). For a training step that kept every
intermediate of the forward and the backward live at once: the peak memory was the sum of
all of them, and recomputing a forward (Cell.recompute) could only add buffers.

- ms-late-alloc moves each `memref.alloc` (static shape) down to just before the first op of
  its block that uses it or a view of it; when that op is a `linalg.fill` of the buffer, the
  fill moves down too, to just before the next use.
- ms-early-dealloc moves each unconditional `memref.dealloc` of a `memref.alloc` of the same
  block up to just after the last op of the block that uses the buffer or a view of it.

A use inside a nested region counts as a use by the op of the block that holds it. Views
are followed through every op that takes the buffer and returns a memref (subview,
expand_shape, cast, ...: any such op is assumed to alias, which can only keep a buffer
longer). Conditional frees, allocations with dynamic sizes and buffers the block did not
allocate stay where they are. CPU only: the CUDA launch plan runs kernels asynchronously, so
a free there must wait for the stream (passes/launch_plan.py keeps its own order).
"""
from __future__ import annotations

from mlir import ir

from .base import ModulePass, register
from ..dialects.ir_helpers import ops_of_kind


def aliases(buffer, terminators: dict | None = None) -> list | None:
    """`buffer` and the memrefs derived from it (views), transitively: the results of every
    op that takes one of them and returns memrefs. With `terminators` (a cache of each
    block's last op), also where a region's terminator yields one, the memref results of the
    op holding the region; None when one reaches the function's own terminator."""
    found, todo = [buffer], [buffer]
    while todo:
        for use in todo.pop().uses:
            user = use.owner.operation
            if terminators is not None:
                block = user.block
                if block not in terminators:
                    terminators[block] = block.operations[len(block.operations) - 1].operation
                if user == terminators[block]:
                    user = user.parent  # (what a region yields, its holder returns)
                    if user.name == "func.func":
                        return None
            for r in user.results:
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


def _users(buffer, block, order, skip=None):
    """The ops of `block` that use `buffer` or a view of it, in block order; None when a
    use cannot be placed in the block."""
    found = set()
    for alias in aliases(buffer):
        for use in alias.uses:
            user = use.owner.operation
            if skip is not None and user == skip:
                continue
            holder = _holder_in(block, user)
            if holder is None:
                return None
            found.add(holder)
    return sorted(found, key=order.__getitem__)


def _blocks_of(ops) -> dict:
    """The ops grouped by their block, with each block's op order (computed once)."""
    groups: dict = {}
    for op in ops:
        op = op.operation
        block = op.block
        if block not in groups:
            groups[block] = ({o.operation: i for i, o in enumerate(block.operations)}, [])
        groups[block][1].append(op)
    return groups


def _is_fill_of(op, buffer) -> bool:
    return op.name == "linalg.fill" and op.operands[len(op.operands) - 1] == buffer


def _sink_alloc(alloc, order):
    """Move `alloc` (and a zero fill that initializes it) down to its first real use."""
    users = _users(alloc.results[0], alloc.block, order)
    if not users:
        return
    first = users[0]
    if _is_fill_of(first, alloc.results[0]) and len(users) > 1 and all(
            isinstance(v.owner, ir.Block) or order.get(v.owner.operation, -1) < order[users[1]]
            for v in first.operands[:-1]):
        first.move_before(users[1])  # (its scalar is defined before: a constant, an argument)
    alloc.move_before(first)


@register
class LateAlloc(ModulePass):
    name = "ms-late-alloc"
    summary = "move each buffer's memref.alloc (and its zero fill) to just before its first use"

    def run(self, module):
        for order, allocs in _blocks_of(ops_of_kind(module, "memref.alloc")).values():
            for alloc in allocs:
                if not len(alloc.operands):  # (dynamic sizes: their operands must dominate)
                    _sink_alloc(alloc, order)


@register
class EarlyDealloc(ModulePass):
    name = "ms-early-dealloc"
    summary = "move each buffer's memref.dealloc to just after its last use in its block"

    def run(self, module):
        for order, deallocs in _blocks_of(ops_of_kind(module, "memref.dealloc")).values():
            last_index = len(order) - 1
            for dealloc in deallocs:
                buffer = dealloc.operands[0]
                owner = buffer.owner
                if isinstance(owner, ir.Block) or owner.name != "memref.alloc" \
                        or owner.operation.block != dealloc.block:
                    continue
                users = _users(buffer, dealloc.block, order, skip=dealloc)
                if users and order[users[-1]] < last_index:  # (never after a terminator)
                    dealloc.move_after(users[-1])
