"""ms-split-fresh-deallocs (CPU; between ownership-based-buffer-deallocation and
buffer-deallocation-simplification): the buffers a `bufferization.dealloc` frees
unconditionally and that nothing else it frees or keeps can alias leave it as plain
`memref.dealloc` ops.

ownership-based-buffer-deallocation frees what a block owns in one `bufferization.dealloc`
before its terminator: for a training step's entry, every intermediate of the forward and the
backward (MobileNetV2's step: 791 buffers in one op). buffer-deallocation-simplification
then asks, for every pair of its buffers, whether they may alias: 240-500 ms of that compile
(2-5 ms for a ResNet block's step, whose largest dealloc holds ~30). A buffer this block
allocated (`memref.alloc`), freed under a constant true condition, and none of whose views
is another freed buffer or a kept one, is freed the same with or without the op's runtime
alias checks: it moves out, and the simplification sees what is left. Views are followed
through every op that takes one and returns memrefs, and through a region's terminator to
the memref results of the op holding the region (a conditional yielding the buffer); a
buffer the function returns stays.
"""
from __future__ import annotations

import collections

from mlir import ir
from mlir.dialects import bufferization, memref

from .base import ModulePass, register
from .buffer_lifetimes import aliases
from ..dialects.ir_helpers import ops_of_kind


def _always(condition) -> bool:
    """Whether `condition` is the constant true (an i1 attribute reads as a BoolAttr)."""
    owner = condition.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant":
        return False
    value = owner.operation.attributes["value"]
    return isinstance(value, ir.BoolAttr) and value.value


def _fresh(buffer, dealloc) -> bool:
    """Whether `buffer` is a memref.alloc result of the dealloc's own block."""
    owner = buffer.owner
    return (not isinstance(owner, ir.Block) and owner.operation.name == "memref.alloc"
            and owner.operation.block == dealloc.block)


def split_fresh_deallocs(op, terminators: dict):
    """`bufferization.dealloc` op -> `memref.dealloc` of each fresh, unaliased buffer it
    frees unconditionally, and a dealloc of the rest (none when nothing is left and nothing
    is kept). `terminators`: see buffer_lifetimes.aliases."""
    op = op.operation
    dealloc = op.opview
    buffers, conditions = list(dealloc.memrefs), list(dealloc.conditions)
    retained = list(dealloc.retained)
    freed = collections.Counter(buffers)
    kept = set(retained)
    split = []
    for i, (buffer, condition) in enumerate(zip(buffers, conditions)):
        if not _always(condition) or not _fresh(buffer, op) or freed[buffer] > 1:
            continue
        views = aliases(buffer, terminators)
        if views is not None and buffer not in kept and not any(
                v in freed or v in kept for v in views[1:]):
            split.append(i)
    if not split:
        return
    moved = set(split)
    keep = [i for i in range(len(buffers)) if i not in moved]
    with ir.InsertionPoint(op), op.location:
        for i in split:
            memref.dealloc(buffers[i])
        if keep or retained:
            rest = bufferization.DeallocOp([buffers[i] for i in keep],
                                           [conditions[i] for i in keep], retained)
            for old, new in zip(op.results, rest.results):
                old.replace_all_uses_with(new)
    op.erase()


@register
class SplitFreshDeallocs(ModulePass):
    name = "ms-split-fresh-deallocs"
    summary = ("free a bufferization.dealloc's unconditional, unaliased fresh buffers with "
               "memref.dealloc")

    def run(self, module):
        terminators: dict = {}
        for dealloc in ops_of_kind(module, "bufferization.dealloc"):
            split_fresh_deallocs(dealloc, terminators)
