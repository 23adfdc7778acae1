"""ms-cpu-dynamic-matmul: matmul kernels with a dynamic size become calls of static ones.

ms-cpu-matmul-schedule tiles and vectorizes kernels of static shapes only (a partial tile
would not vectorize). A kernel whose row count is dynamic (M: a batch) is called on blocks of
rows instead, each block size a static clone of the kernel: MC rows at a time over the threads
(scf.forall), then MR rows, then single rows, so that a batch of any size runs full register
tiles plus a remainder of at most MR - 1 one-row products. The schedule then treats each
clone as any static kernel. Where B's rows would conflict in the cache, a batch of
PACK_MIN_ROWS or more runs a copy of the kernel for which B is packed once at the call
(cpu.pack_b), before the rows are split; a smaller one the unpacked kernel (unless B is a
transpose the caller makes, W^T: packing it from W costs what the transpose did, so every
batch reads it packed). A kernel whose only dynamic size is its depth
(K: the batch a weight gradient sums over) is left to the schedule (cpu.depth_arguments);
kernels with other dynamic sizes (or an epilogue that is not row by row) stay plain loops.

Whether the blocks of rows run over the threads is decided at run time from the batch's
flops (MIN_PARALLEL_FLOPS, the static schedule's rule): a small batch runs its blocks in one
loop of the clone the static schedule threads on its own (or not, if a block is small too).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, memref, scf

from .base import register
from . import cpu_target
from .cpu import (MC, MIN_PARALLEL_FLOPS, PACK_MIN_ROWS, CallSites, _dynamic_dims,
                  _one_matmul, _packing_is_free, _should_pack, pack_b, register_tile,
                  strip_width)
from .cpu_loops import DYNAMIC_ESTIMATE, ThreadedPass, block_loop, block_type
from ..dialects.ir_helpers import (fresh_symbol, function_type, indexing_maps, set_function_type,
                                   set_symbol_name, symbol_name)
from .outline import kernel_functions

_LINALG = ("linalg.matmul", "linalg.generic", "linalg.fill", "linalg.copy")


def _users_read_rows(fn, rows) -> bool:
    """Whether every use of the row arguments is a linalg op indexing their dim 0 by its
    first loop, a parallel one (row r of the result needs row r of the inputs only), or a
    memref.dim."""
    row_args = {fn.regions[0].blocks[0].arguments[k] for k in rows}
    ok = [True]

    def visit(op):
        operands = list(op.operands)
        if not any(v in row_args for v in operands):
            return ir.WalkResult.ADVANCE
        if op.name == "memref.dim" or op.name == "func.return":
            return ir.WalkResult.ADVANCE
        if op.name not in _LINALG:
            ok[0] = False
            return ir.WalkResult.INTERRUPT
        if op.name == "linalg.matmul":  # A[m, k], B[k, n], C[m, n]: rows are loop m
            if operands[1] in row_args:
                ok[0] = False
            return ir.WalkResult.ADVANCE
        maps = indexing_maps(op) if "indexing_maps" in op.attributes else None
        kinds = [str(k) for k in ir.ArrayAttr(op.attributes["iterator_types"])] \
            if "iterator_types" in op.attributes else None
        for v, m in zip(operands, maps or [None] * len(operands)):
            if v not in row_args:
                continue
            first = m.results[0] if m is not None and len(m.results) else None
            if (first is None or str(first) != "d0" or kinds is None
                    or "parallel" not in kinds[0]):
                ok[0] = False
                return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE
    fn.operation.walk(visit)
    return ok[0]


def row_arguments(fn):
    """The arguments of a kernel whose dynamic sizes are all its row count (dim 0), when its
    rows are computed independently; else None."""
    mm = _one_matmul(fn)
    if mm is None:
        return None
    rows = []
    for k, t in enumerate(function_type(fn).inputs):
        dyn = _dynamic_dims(t)
        if dyn and dyn != [0]:
            return None
        if dyn:
            rows.append(k)
    args = list(fn.regions[0].blocks[0].arguments)
    a, b, c = (args.index(v) for v in mm.operands)
    if a not in rows or c not in rows or b in rows or not _users_read_rows(fn, rows):
        return None
    return rows


def _static_clone(fn, name, arg_types):
    """A copy of kernel `fn` named `name` (made unique in the module) taking `arg_types`
    (static shapes)."""
    module = fn.operation.parent
    name = fresh_symbol(module, name)
    clone = fn.operation.clone(ip=ir.InsertionPoint(module.regions[0].blocks[0]))
    set_symbol_name(clone, name)
    for arg, t in zip(clone.regions[0].blocks[0].arguments, arg_types):
        arg.set_type(t)
    set_function_type(clone, arg_types, [])
    return clone


class _Blocks:
    """Calls of a kernel on blocks along one dynamic dimension, one static clone per block
    size (made on first use)."""

    def __init__(self, fn, sliced, axis):
        self.fn, self.sliced, self.axis = fn, sliced, axis  # argument indexes, their dim
        self.clones = {}

    def call_block(self, operands, start, size, idx, variant=""):
        """At the insertion point: the kernel's clone for `size` (and `variant`: clones
        called from different loops are scheduled apart) on the block at `start`."""
        ops = list(operands)
        for k in self.sliced:
            t = ir.MemRefType(ops[k].type)
            offsets = [0] * t.rank
            offsets[self.axis[k]] = start
            sizes = list(t.shape)  # (the only dynamic size is the one sliced)
            sizes[self.axis[k]] = size
            ops[k] = memref.subview(ops[k], offsets, sizes, [1] * t.rank,
                                    result_type=block_type(t, sizes))
        name = self.clones.get((size, variant))
        if name is None:
            name = symbol_name(_static_clone(self.fn, f"{symbol_name(self.fn)}__{size}{variant}",
                                             [v.type for v in ops]))
            self.clones[(size, variant)] = name
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), ops)


def _blocked_call(call, blocks: _Blocks, total, tiers, threads=1, flops_per_row=0):
    """Before `call`: loops over blocks of each tier's size, (size, parallel), in order,
    each starting where the previous stopped: together they cover [0, total) (the caller
    erases `call`). A parallel tier whose blocks are fewer than `threads` at run time, or
    whose rows (`flops_per_row` each) are too few to share, calls in one loop the clone the
    schedule threads itself (variant "t": each block split over the threads when it is
    large enough, else sequential)."""
    idx = ir.IndexType.get()
    with ir.InsertionPoint(call), call.location:
        const = lambda v: arith.constant(idx, v)  # noqa: E731
        start = const(0)
        for size, parallel in tiers:
            count = arith.divui(arith.subi(total, start), const(size))
            end = arith.addi(start, arith.muli(count, const(size)))
            if parallel and threads > 1:
                few = _too_few_blocks(count, size, threads, flops_per_row)
                branch = scf.IfOp(few, has_else=True)
                with ir.InsertionPoint(branch.then_block):
                    _blocks(blocks, call, start, count, size, False, "t")
                    scf.YieldOp([])
                with ir.InsertionPoint(branch.else_block):
                    _blocks(blocks, call, start, count, size, True)
                    scf.YieldOp([])
            else:
                _blocks(blocks, call, start, count, size, False)
            start = end


def _too_few_blocks(count, size, threads, flops_per_row):
    """i1: whether `count` blocks of `size` rows are fewer than the threads or, together,
    fewer flops than a fork pays for."""
    idx = ir.IndexType.get()
    ult = arith.CmpIPredicate.ult
    few = arith.cmpi(ult, count, arith.constant(idx, threads))
    blocks_needed = -(-MIN_PARALLEL_FLOPS // max(1, size * flops_per_row))
    if blocks_needed > threads:
        small = arith.cmpi(ult, count, arith.constant(idx, blocks_needed))
        few = arith.ori(few, small)
    return few


def _blocks(blocks, call, start, count, size, parallel, variant=""):
    """A loop calling the clone for `size` on `count` blocks from `start`."""
    loop = block_loop(start, count, size, parallel)
    with ir.InsertionPoint(loop.body):
        blocks.call_block(call.operands, loop.start, size, ir.IndexType.get(), variant)
        loop.close()


def _flops_per_row(fn) -> int:
    mm = _one_matmul(fn)
    a, b = (ir.MemRefType(v.type) for v in list(mm.operands)[:2])
    return 2 * a.shape[1] * b.shape[1] if not _dynamic_dims(a) or _dynamic_dims(a) == [0] else 0


def _packable(fn, calls, target):
    """The register tile width in elements where B should be packed for a batch of the
    usual size (and the kernel has the one call pack_b handles), else None."""
    mm = _one_matmul(fn)
    nr = strip_width(mm, target)
    if len(calls) == 1 and _should_pack(mm, nr, target, rows=DYNAMIC_ESTIMATE):
        return nr
    return None


def _split_by_batch(fn, call, total):
    """Replace `call` by `scf.if total >= PACK_MIN_ROWS` calling `fn` (to be packed) or an
    unpacked copy of it: packing B costs a copy of B that only a large batch pays back. The
    pairs (kernel, call) of both branches."""
    small = _static_clone(fn, symbol_name(fn) + "__small", list(function_type(fn).inputs))
    idx = ir.IndexType.get()
    with ir.InsertionPoint(call), call.location:
        large = arith.cmpi(arith.CmpIPredicate.uge, total, arith.constant(idx, PACK_MIN_ROWS))
        branch = scf.IfOp(large, has_else=True)
        pairs = []
        for kernel, block in ((fn, branch.then_block), (small, branch.else_block)):
            with ir.InsertionPoint(block):
                pairs.append((kernel, func.CallOp([], ir.FlatSymbolRefAttr.get(
                    symbol_name(kernel)), list(call.operands))))
                scf.YieldOp([])
    call.erase()
    return pairs


def _block_calls(sites: CallSites, fn, threads, target) -> bool:
    """Rewrite the calls of one kernel with a dynamic row count; whether it was one. Where B
    pays for packing, batches of PACK_MIN_ROWS or more run a packed copy of the kernel (B
    packed once, before the rows are split), smaller ones the kernel as it is."""
    rows = row_arguments(fn)
    if rows is None:
        return False
    calls = sites.of(fn)
    flops_per_row = _flops_per_row(fn)
    mr = register_tile(target)[0]
    nr = _packable(fn, calls, target)
    for call in calls:
        with ir.InsertionPoint(call), call.location:
            total = memref.dim(call.operands[rows[0]], arith.constant(ir.IndexType.get(), 0))
        free = nr is not None and _packing_is_free(sites, fn, _one_matmul(fn))
        # (packing B = W^T from W costs what the transpose did: every batch reads it packed)
        pairs = [(fn, call)] if nr is None or free else _split_by_batch(fn, call, total)
        sites.changed()  # (the split rewrote the call)
        if nr is not None:
            pack_b(sites, fn, _one_matmul(fn), nr)
        for kernel, kernel_call in pairs:
            blocks = _Blocks(kernel, rows, {k: 0 for k in rows})
            small = kernel is not fn  # fewer than PACK_MIN_ROWS rows: no 64-row block over threads
            tiers = [(MC, not small), (mr, False), (1, False)]
            _blocked_call(kernel_call, blocks, total, tiers, threads, flops_per_row)
            kernel_call.erase()
            if kernel is not fn:
                kernel.operation.erase()
        sites.changed()
    return True


@register
class CpuDynamicMatmul(ThreadedPass):
    name = "ms-cpu-dynamic-matmul"
    summary = ("matmul kernels with a dynamic row count become loops over static blocks of "
               "rows, each a static clone of the kernel (CPU, memrefs)")

    options = {**ThreadedPass.options, **cpu_target.TARGET_OPTIONS}
    choices = dict(cpu_target.TARGET_CHOICES)

    def run(self, module):
        target, sites = cpu_target.from_options(self.opts), CallSites(module)
        for fn in kernel_functions(module, "matmul"):
            if not any(_dynamic_dims(t) for t in function_type(fn).inputs):
                continue
            if _block_calls(sites, fn, self.threads(), target):
                fn.operation.erase()
            sites.changed()  # (the kernel's calls were rewritten)
