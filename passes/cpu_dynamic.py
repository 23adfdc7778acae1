"""ms-cpu-dynamic-matmul: matmul kernels with a dynamic size become calls of static ones.

ms-cpu-matmul-schedule tiles and vectorizes kernels of static shapes only (a partial tile
would not vectorize). A kernel whose row count is dynamic (M: a batch) is called on blocks of
rows instead, each block size a static clone of the kernel: MC rows at a time over the threads
(scf.forall), then MR rows, then single rows, so that a batch of any size runs full register
tiles plus a remainder of at most MR - 1 one-row products. A kernel whose depth is dynamic
(K: the batch a weight gradient sums over) accumulates into its static result over blocks of
KC, then 8, then 1 rows of K. The schedule then treats each clone as any static kernel. Kernels
with other dynamic sizes (or an epilogue that is not row by row) stay plain loops.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, memref, scf

from .base import register
from . import cpu_target
from .cpu import KC, MC, MIN_PARALLEL_FLOPS, _plain_matmul, register_tile
from .cpu_loops import ThreadedPass, block_loop, block_type
from ..dialects.ir_helpers import (callee_name, defined_functions, function_type, indexing_maps,
                                   ops_of_kind, set_function_type, set_symbol_name,
                                   symbol_name)
from .outline import kernel_functions

_LINALG = ("linalg.matmul", "linalg.generic", "linalg.fill", "linalg.copy")


def _dynamic_dims(t) -> list:
    if not isinstance(t, ir.MemRefType):
        return []
    return [i for i, d in enumerate(t.shape) if ir.ShapedType.is_dynamic_size(d)]


def _one_matmul(fn):
    """The kernel's only linalg.matmul, in the plain form, reading and writing arguments."""
    mms = ops_of_kind(fn, "linalg.matmul")
    if len(mms) != 1 or not _plain_matmul(mms[0]):
        return None
    args = list(fn.regions[0].blocks[0].arguments)
    if not all(v in args for v in mms[0].operands):
        return None
    return mms[0]


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


def depth_arguments(fn):
    """(A, B) argument indexes of a kernel whose product has a dynamic depth K (A: m x ?,
    B: ? x n, read by the product only; everything else static); else None."""
    mm = _one_matmul(fn)
    body = fn.regions[0].blocks[0]
    if mm is None:
        return None
    args = list(body.arguments)
    a, b, c = (args.index(v) for v in mm.operands)
    if any(len(list(args[k].uses)) != 1 for k in (a, b)):
        return None
    types = list(function_type(fn).inputs)
    if (_dynamic_dims(types[a]) != [1] or _dynamic_dims(types[b]) != [0]
            or _dynamic_dims(types[c])):
        return None
    if any(_dynamic_dims(t) for k, t in enumerate(types) if k not in (a, b)):
        return None
    return a, b


def _static_clone(fn, name, arg_types):
    """A copy of kernel `fn` named `name` taking `arg_types` (static shapes)."""
    clone = fn.operation.clone(ip=ir.InsertionPoint(fn.operation.parent.regions[0].blocks[0]))
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
            name = f"{symbol_name(self.fn)}__{size}{variant}"
            _static_clone(self.fn, name, [v.type for v in ops])
            self.clones[(size, variant)] = name
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), ops)


def _blocked_call(call, blocks: _Blocks, total, tiers, threads=1):
    """Before `call`: loops over blocks of each tier's size, (size, parallel), in order,
    each starting where the previous stopped: together they cover [0, total) (the caller
    erases `call`). A parallel tier with fewer blocks than `threads` at run time calls a
    clone that splits each block over the threads instead (a batch of one block)."""
    idx = ir.IndexType.get()
    with ir.InsertionPoint(call), call.location:
        const = lambda v: arith.constant(idx, v)  # noqa: E731
        start = const(0)
        for size, parallel in tiers:
            count = arith.divui(arith.subi(total, start), const(size))
            end = arith.addi(start, arith.muli(count, const(size)))
            if parallel and threads > 1:
                few = arith.cmpi(arith.CmpIPredicate.ult, count, const(threads))
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


def _block_calls(module, fn, threads, tile_rows):
    """Rewrite the calls of one dynamic kernel; whether it was one this pass handles."""
    calls = [c for other in defined_functions(module) if other != fn
             for c in ops_of_kind(other, "func.call") if callee_name(c) == symbol_name(fn)]
    rows = row_arguments(fn)
    if rows is not None:
        parallel = MC * _flops_per_row(fn) * 2 >= MIN_PARALLEL_FLOPS
        blocks = _Blocks(fn, rows, {k: 0 for k in rows})
        for call in calls:
            with ir.InsertionPoint(call), call.location:
                total = memref.dim(call.operands[rows[0]], arith.constant(ir.IndexType.get(), 0))
            _blocked_call(call, blocks, total, [(MC, parallel), (tile_rows, False), (1, False)],
                          threads)
            call.erase()
        return True
    depth = depth_arguments(fn)
    if depth is not None:
        a, b = depth
        product, epilogue = _split_epilogue(fn)
        blocks = _Blocks(product, [a, b], {a: 1, b: 0})
        for call in calls:
            with ir.InsertionPoint(call), call.location:
                total = memref.dim(call.operands[b], arith.constant(ir.IndexType.get(), 0))
            _blocked_call(call, blocks, total, [(KC, False), (8, False), (1, False)])
            if epilogue is not None:  # after the whole product
                with ir.InsertionPoint(call), call.location:
                    func.CallOp([], ir.FlatSymbolRefAttr.get(symbol_name(epilogue)),
                                list(call.operands))
            call.erase()
        product.operation.erase()
        return True
    return False


def _split_epilogue(fn):
    """(product, epilogue): clones of a kernel with only its matmul, and with only what
    follows it (None when nothing does), so that a product accumulated over blocks of its
    depth gets its epilogue once, at the end."""
    body = fn.regions[0].blocks[0]
    ops = [op.operation for op in body.operations]
    at = next(i for i, op in enumerate(ops) if op.name == "linalg.matmul")
    after = [op for op in ops[at + 1:-1] if op.name != "arith.constant"]
    types = list(function_type(fn).inputs)
    product = _static_clone(fn, symbol_name(fn) + "__product", types)
    _erase_ops(product, lambda i, op: i > at and op.name != "func.return"
               and op.name != "arith.constant")
    if not after:
        return product, None
    epilogue = _static_clone(fn, symbol_name(fn) + "__epilogue", types)
    _erase_ops(epilogue, lambda i, op: op.name == "linalg.matmul")
    return product, epilogue


def _erase_ops(fn, which):
    ops = [op.operation for op in fn.regions[0].blocks[0].operations]
    for i, op in reversed(list(enumerate(ops))):
        if which(i, op):
            op.erase()


@register
class CpuDynamicMatmul(ThreadedPass):
    name = "ms-cpu-dynamic-matmul"
    summary = ("matmul kernels with a dynamic row count or depth become loops over static "
               "blocks, each a static clone of the kernel (CPU, memrefs)")

    options = {**ThreadedPass.options, "vector-bits": 0}
    choices = {"vector-bits": cpu_target.TARGET_CHOICES["vector-bits"]}

    def run(self, module):
        rows = register_tile(cpu_target.from_options(self.opts))[0]
        for fn in kernel_functions(module, "matmul"):
            if not any(_dynamic_dims(t) for t in function_type(fn).inputs):
                continue
            if _block_calls(module, fn, self.threads(), rows):
                fn.operation.erase()
