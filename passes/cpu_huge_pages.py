"""ms-cpu-huge-pages: a large heap buffer is advised to the kernel as transparent huge pages.

A training step's first call writes every activation and gradient buffer for the first time,
and Linux maps each 4 KiB page of them at its first touch: a ResNet basic block's step at
batch 32 (its buffers 25 MiB each) took 27,400 page faults in its first call, which ran
~73 ms longer than a later one on the Intel Xeon of these machines (the compile time of
bench/conv.py, first call minus a later one, counts it). Later calls reuse the same memory
(runtime/malloc.py keeps freed memory in the process) and fault no more. This machine's
kernel makes huge pages only where asked (/sys/kernel/mm/transparent_hugepage/enabled:
"madvise", a common default): madvise(MADV_HUGEPAGE) on a buffer's whole 2 MiB pages
before its first touch makes each fault map 2 MiB at once: the step's first call 5,400 faults (its smaller buffers' pages),
~45 ms longer than a later one (4 alternated process pairs); later calls as fast as before.
Under "always" the advice changes nothing; under "never" it is ignored.

A memref.alloc of a static shape of at least `min-bytes` (4 MiB: at least one whole 2 MiB
page lies inside) is followed by the advice on the 2 MiB-aligned part of it. The advice is
a system call (~1 us) per such allocation per call, against the milliseconds it takes to
write 4 MiB. Dynamic shapes are left alone (their size is known only at run time). Linux
hosts only (madvise's advice number is Linux's).
"""
from __future__ import annotations

import math
import sys

from mlir import ir
from mlir.dialects import arith, func, memref

from .base import ModulePass, register
from .symbols import declare_external
from ..dialects.ir_helpers import element_bytes, ops_of_kind
from ..dialects.upstream import llvm

MADV_HUGEPAGE = 14          # <linux/mman.h>
HUGE_PAGE = 2 << 20         # x86-64's and AArch64's (4 KiB granule) transparent huge page
MADVISE = "madvise"


def _static_bytes(alloc) -> int | None:
    t = ir.MemRefType(alloc.result.type)
    return math.prod(t.shape) * element_bytes(t) if t.has_static_shape else None


def _declare_madvise(module):
    """`madvise(void *, size_t, int) -> int`, declared once at the module's top."""
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    declare_external(module, MADVISE, [llvm.pointer_type(), i64, i32], [i32], at_start=True)


def advise_huge_pages(alloc, size: int):
    """After `alloc` (of `size` bytes, at least 2 huge pages' worth): madvise(MADV_HUGEPAGE)
    on the huge pages that lie wholly inside the buffer."""
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    with ir.InsertionPoint.after(alloc), alloc.location:
        start = arith.index_cast(i64, memref.extract_aligned_pointer_as_index(alloc.result))
        mask = arith.constant(i64, -HUGE_PAGE)
        first = arith.andi(arith.addi(start, arith.constant(i64, HUGE_PAGE - 1)), mask)
        end = arith.andi(arith.addi(start, arith.constant(i64, size)), mask)
        func.CallOp([i32], ir.FlatSymbolRefAttr.get(MADVISE),
                    [llvm.int_to_ptr(first), arith.subi(end, first),
                     arith.constant(i32, MADV_HUGEPAGE)])


@register
class HugePages(ModulePass):
    name = "ms-cpu-huge-pages"
    summary = ("advise heap buffers of at least `min-bytes` as transparent huge pages (their "
               "first touch: a fault per 2 MiB, not per 4 KiB)")
    options = {"min-bytes": 2 * HUGE_PAGE}
    bounds = {"min-bytes": (2 * HUGE_PAGE, 2**62)}  # (at least two huge pages)

    def run(self, module):
        if not sys.platform.startswith("linux"):
            return
        least = self.opts["min-bytes"]
        found = [(op.opview, size) for op in ops_of_kind(module, "memref.alloc")
                 if (size := _static_bytes(op.opview)) is not None and size >= least]
        if found:
            _declare_madvise(module)
        for alloc, size in found:
            advise_huge_pages(alloc, size)
