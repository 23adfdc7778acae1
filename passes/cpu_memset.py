"""ms-cpu-fills-as-memset: a function's zero fill of a whole buffer is one memset.

A linalg.fill left at the top level of a function after the loop passes becomes a loop nest
of its own, and ms-cpu-outline-loops makes that nest a function (the entry stays straight
line, compiled at O0). LLVM then recognizes the nest as a memset and compiles a function that
only calls memset, at ~4 ms of LLVM's time each on the Intel Xeon of these machines: four of
the nineteen functions of a Conv2d's forward and backward (the gradient accumulators and the
bias gradient), three of a ResNet block's training step. Written as llvm.intr.memset where
the fill was, the fill needs no loop and no function, and memset is what LLVM made of it.

It applies to a fill of a zero (float +0.0 or integer 0) into a buffer of a static shape and
the identity layout (contiguous from its start) whose element is a whole number of bytes, in
a function that is not a matmul kernel (a kernel's fill is its schedule's:
ms-cpu-matmul-schedule starts register tiles from zeros instead). Inside loops too: a
convolution's loop over images zeroes each image's padded copy, a loop nest that LLVM's -O3
turned into the same memset after its loop passes had worked on it (single-thread -O3 of the
ResNet block's step 364 -> 349 ms, LeNet5's 809 -> 759; at -O0 the nest stayed a loop).
Fills of strided views stay: their memset would be several.
"""
from __future__ import annotations

import math

from mlir import ir

from .base import PatternPass, register
from .outline import is_kernel
from ..dialects.ir_helpers import aligned_pointer, identity_layout
from ..dialects.upstream import llvm


def _zero_bytes(value) -> bool:
    """Whether `value` is an arith.constant whose bytes are all zero (not -0.0)."""
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant":
        return False
    attr = owner.operation.attributes["value"]
    if isinstance(attr, ir.FloatAttr):
        number = ir.FloatAttr(attr).value
        return number == 0.0 and math.copysign(1.0, number) > 0
    return isinstance(attr, ir.IntegerAttr) and ir.IntegerAttr(attr).value == 0


def _whole_buffer_bytes(buffer) -> int | None:
    """The bytes of a static, contiguous buffer of whole-byte elements, else None."""
    if not isinstance(buffer.type, ir.MemRefType):
        return None
    t = ir.MemRefType(buffer.type)
    width = getattr(t.element_type, "width", None)
    if not t.has_static_shape or not identity_layout(t) or not width or width % 8:
        return None
    return math.prod(t.shape) * width // 8


def _in_plain_function(op) -> bool:
    """Whether op sits in a func.func that is not a matmul kernel (at any depth)."""
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    return parent is not None and not is_kernel(parent)


def fill_as_memset(op, rewriter):
    value, buffer = op.operands[0], op.operands[1]
    size = _whole_buffer_bytes(buffer)
    if len(op.results) or size is None or not _zero_bytes(value) or not _in_plain_function(op):
        return True  # did not match
    with rewriter.ip, op.location:
        i8, i64 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(64)
        start = aligned_pointer(buffer, op.location)
        zero = llvm.constant(i8, ir.IntegerAttr.get(i8, 0))
        length = llvm.constant(i64, ir.IntegerAttr.get(i64, size))
        llvm.memset(start, zero, length)
    rewriter.erase_op(op.operation)


@register
class FillsAsMemset(PatternPass):
    name = "ms-cpu-fills-as-memset"
    summary = ("a zero fill of a whole contiguous buffer becomes llvm.intr.memset (no loop "
               "nest, no outlined function)")
    patterns = {"linalg.fill": fill_as_memset}
