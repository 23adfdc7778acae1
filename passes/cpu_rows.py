"""ms-cpu-tile-rows: a run of row-local loops computed one tile of rows at a time.

A softmax or a layernorm lowers to several loops over the same rows: reductions (max, sum,
mean, variance) whose per-row results the following loops read. Loop by loop, every loop
streams the whole input from memory (16 MiB for 4096x1024 float32, three or four times).
Computed tile by tile, each tile's rows are read from memory once and from cache afterwards.

The pass works on buffers (after bufferization), on the top-level ops of entry functions. A
"row op" is a linalg.generic or linalg.fill whose first loop is parallel over R rows and each
of whose buffers is either indexed by that loop in its first dimension ("row-local": the
tile takes rows [t, t+rows) of it) or not indexed by it at all ("broadcast": read whole, e.g.
a layernorm's gamma). Consecutive row ops with the same R form a run; buffer views,
allocations and constants between them do not interrupt it, anything else does. Per row,
every op of a run reads and writes only that row, so running the ops tile by tile gives the
results of running them one after the other, except where an op reads whole (broadcast) a
buffer that an op of the run writes: such an op starts a new run. Buffers are reached
through their root (an allocation, a function argument, a global) or an expand/collapse_shape
of it that keeps the rows as its first dimension; a run touches nothing else.

Unlike tiling the last loop and fusing its producers into the tile (tensor tile-and-fuse,
which fused softmax's row maximum once per consumer and computed it twice per tile), every op
is cloned into the tile exactly once.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, memref, scf

from .base import register
from .cpu_loops import (DYNAMIC_ESTIMATE, MIN_PARALLEL_ITERATIONS, ThreadedPass, block_loop,
                        loop_ranges)
from ..dialects.ir_helpers import (PARALLEL, defined_functions, element_bytes, indexing_maps,
                         uses_dim)
from .outline import is_kernel

# Bytes of the widest buffer's rows in a tile: with the output's rows as well they stay in L1
# (48 KB) between the loops that read them. (softmax 4096x1024: 4 rows 0.74-0.87 ms, 8 rows
# 0.85-0.87, 2 rows 0.75-0.77; layernorm: 4 rows 0.45-0.48, 8 rows 0.45-0.46, 2 rows 0.55-0.61.)
ROW_TILE_BYTES = 16 * 1024

_ROW_OPS = ("linalg.generic", "linalg.fill")
# Ops that may sit between the ops of a run (they neither read nor write buffer contents).
_TRANSPARENT = ("memref.alloc", "memref.alloca", "memref.expand_shape", "memref.collapse_shape",
                "memref.get_global", "memref.dealloc", "memref.dim", "arith.constant")
_VIEWS = ("memref.expand_shape", "memref.collapse_shape")


def _root(value):
    """The buffer a value is (a root) or views row-aligned, else None."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return value
    name = owner.operation.name
    if name in ("memref.alloc", "memref.alloca", "memref.get_global"):
        return value
    if name in _VIEWS:
        src = owner.operation.operands[0]
        groups = [[ir.IntegerAttr(i).value for i in ir.ArrayAttr(g)]
                  for g in ir.ArrayAttr(owner.operation.attributes["reassociation"])]
        expanded, collapsed = ((ir.MemRefType(value.type), ir.MemRefType(src.type))
                               if name == "memref.expand_shape"
                               else (ir.MemRefType(src.type), ir.MemRefType(value.type)))
        # Dimension 0 stays dimension 0: the first group is it and unit dims.
        if not groups or groups[0][0] != 0 or any(expanded.shape[i] != 1 for i in groups[0][1:]):
            return None
        if expanded.shape[0] != collapsed.shape[0]:
            return None
        return _root(src)
    return None


def _row_count_source(root):
    """What a dynamic row count of a root buffer is read from: the argument whose dimension
    0 it is, following allocations sized by a memref.dim of dimension 0 (`alloc(dim(x, 0))`
    has x's rows); the root itself when nothing says more."""
    owner = root.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "memref.alloc":
        return root
    sizes = list(owner.operation.operands)
    if not sizes:
        return root
    size = sizes[0].owner
    if isinstance(size, ir.Block) or size.operation.name != "memref.dim":
        return sizes[0]
    index = size.operation.operands[1].owner
    if (isinstance(index, ir.Block) or index.operation.name != "arith.constant"
            or ir.IntegerAttr(index.operation.attributes["value"]).value != 0):
        return sizes[0]
    source = _root(size.operation.operands[0])
    return root if source is None else _row_count_source(source)


def _reads_by_position(op) -> bool:
    """Whether the body of a linalg op reads the row loop's index (linalg.index 0) or loads
    from a buffer (a gather: pooling gradients, gather, one_hot, random_uniform's counters).
    A tile's copy of the op would see row indices relative to the tile, and the run's
    analysis does not see a buffer the body loads from: such an op is not a row op."""
    found = []

    def visit(inner):
        name = inner.operation.name
        if name == "memref.load" or (name == "linalg.index"
                                     and ir.IntegerAttr(inner.attributes["dim"]).value == 0):
            found.append(inner)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                inner.operation.walk(visit)
                if found:
                    return True
    return False


def _row_access(op):
    """For a row op: (R, [(operand index, value, row_local)]) or None."""
    ranges = loop_ranges(op)
    if ranges is None or _reads_by_position(op):
        return None
    sizes, kinds = ranges
    if not sizes or kinds[0] != PARALLEL or (not _dynamic(sizes[0]) and sizes[0] < 2):
        return None
    rows = sizes[0]
    access = []
    if op.name == "linalg.fill":
        out = op.operands[1]
        t = ir.MemRefType(out.type)
        if t.rank == 0 or t.shape[0] != rows:
            return None
        return rows, [(1, out, True)]
    for i, (v, m) in enumerate(zip(op.operands, indexing_maps(op))):
        if not isinstance(v.type, ir.MemRefType):
            continue  # a scalar operand
        uses = [k for k, e in enumerate(m.results) if uses_dim(e, 0)]
        if not uses:
            access.append((i, v, False))
            continue
        first = m.results[0].maybe_downcast() if m.results else None
        if uses != [0] or not isinstance(first, ir.AffineDimExpr) or first.position != 0:
            return None
        shape = ir.MemRefType(v.type).shape
        if shape[0] != rows or any(_dynamic(d) for d in shape[1:]):
            return None
        access.append((i, v, True))
    return rows, access


def _writes(op):
    """Operand indexes the op writes (its outs)."""
    if op.name == "linalg.fill":
        return {1}
    n_out = len(ir.ArrayAttr(op.attributes["indexing_maps"])) - _n_inputs(op)
    return set(range(len(op.operands) - n_out, len(op.operands)))


def _n_inputs(op):
    sizes = ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])
    return sizes[0]


def _dynamic(size) -> bool:
    return ir.ShapedType.is_dynamic_size(size)


class _Run:
    def __init__(self, rows):
        self.rows = rows       # static, or the dynamic size: known only at run time
        self.ops = []          # (op, access)
        self.written = set()   # roots written by ops of the run
        self.whole = set()     # roots read whole (broadcast) by ops of the run
        self.row_roots = set()  # roots the run's ops access by rows
        self.row_sources = set()  # what their dynamic row counts are read from
    def admits(self, rows, op, access):
        if rows != self.rows:
            return False
        if _dynamic(rows) and not any(row_local and _row_count_source(_root(v)) in
                                      self.row_sources for _, v, row_local in access):
            return False  # two dynamic row counts are the same only when read alike
        writes = _writes(op)
        for i, v, row_local in access:
            root = _root(v)
            if not row_local and root in self.written:
                return False  # needs every row of a buffer the run writes
            if i in writes and (root in self.whole or not row_local):
                return False
        return True

    def add(self, op, access):
        writes = _writes(op)
        for i, v, row_local in access:
            root = _root(v)
            if i in writes:
                self.written.add(root)
            if not row_local:
                self.whole.add(root)
            else:
                self.row_roots.add(root)
                self.row_sources.add(_row_count_source(root))
        self.ops.append((op, access))

    def worth_tiling(self) -> bool:
        """Some op reads a buffer an earlier op of the run wrote, or two ops read one input."""
        if len(self.ops) < 2:
            return False
        seen_written, seen_read = set(), set()
        for op, access in self.ops:
            writes = _writes(op)
            for i, v, row_local in access:
                root = _root(v)
                if i not in writes and row_local and (root in seen_written or root in seen_read):
                    return True
            for i, v, row_local in access:
                root = _root(v)
                (seen_written if i in writes else seen_read).add(root)
        return False

    def tile_rows(self) -> int:
        widest = 1
        for _, access in self.ops:
            for _, v, row_local in access:
                if row_local:
                    t = ir.MemRefType(v.type)
                    n = 1
                    for d in t.shape[1:]:
                        n *= d
                    widest = max(widest, n * element_bytes(t))
        rows = max(1, ROW_TILE_BYTES // widest)
        if _dynamic(self.rows):  # full tiles, then single rows (_tile)
            return rows
        rows = min(self.rows, rows)
        while self.rows % rows:
            rows -= 1
        return rows

    def work(self) -> int:
        total = 0
        for op, _ in self.ops:
            ranges = loop_ranges(op)
            n = 1
            for s in ranges[0]:
                n *= DYNAMIC_ESTIMATE if _dynamic(s) else s
            total += n
        return total

    def row_count(self, idx):
        """The run's row count as an index value (a tensor's dim 0 for a dynamic one)."""
        if not _dynamic(self.rows):
            return arith.constant(idx, self.rows)
        _, v, _ = next(a for a in self.ops[0][1] if a[2])
        return memref.dim(v, arith.constant(idx, 0))


def _runs(block):
    """Runs of row ops in a block, in order."""
    runs, current = [], None
    for op in block.operations:
        op = op.operation
        if op.name in _TRANSPARENT:
            continue
        found = _row_access(op) if op.name in _ROW_OPS else None
        if found is not None and all(_root(v) is not None for _, v, _ in found[1]):
            rows, access = found
            if current is not None and current.admits(rows, op, access):
                current.add(op, access)
                continue
            current = _Run(rows)
            current.add(op, access)
            runs.append(current)
            continue
        current = None
    return runs


def _tile(run, threads):
    rows = run.tile_rows()
    if rows == run.rows:
        return False
    last = run.ops[-1][0]
    loc = last.location
    parallel = threads > 1 and run.work() >= MIN_PARALLEL_ITERATIONS
    index = ir.IndexType.get()
    with ir.InsertionPoint(last), loc:
        if not _dynamic(run.rows):
            loops = [_tile_loop(run, rows, arith.constant(index, 0), run.rows // rows,
                                parallel)]
        else:  # full tiles, then the remaining rows one at a time
            total = run.row_count(index)
            full = arith.divui(total, arith.constant(index, rows))
            loops = [_tile_loop(run, rows, arith.constant(index, 0), full, parallel),
                     _tile_loop(run, 1, arith.muli(full, arith.constant(index, rows)),
                                arith.remui(total, arith.constant(index, rows)), False)]
    # Buffers of the run freed before the loops are freed after them.
    roots = {_root(v) for _, access in run.ops for _, v, _ in access}
    block = loops[0].operation.block
    for op in list(block.operations):
        op = op.operation
        if op == loops[0].operation:
            break
        if op.name == "memref.dealloc" and _root(op.operands[0]) in roots:
            op.move_after(loops[-1].operation)
    for op, _ in run.ops:
        op.erase()
    return True


def _tile_loop(run, rows, first, count, parallel):
    """At the insertion point: a loop over `count` tiles of `rows` rows starting at row
    `first` (an index value; count an int or an index value), each computing the run's ops
    on the tile's rows."""
    index = ir.IndexType.get()
    if isinstance(count, int):  # static: rows [0, count * rows) in steps of `rows`
        if parallel:
            loop = scf.ForallOp([0], [count * rows], [rows])
            body = loop.regions[0].blocks[0]
            start = body.arguments[0]
        else:
            lb, ub, step = (arith.constant(index, v) for v in (0, count * rows, rows))
            loop = scf.ForOp(lb, ub, step)
            body = loop.body
            start = loop.induction_variable
    else:
        loop, body, start = block_loop(first, count, rows, parallel)
    tiles = {}  # buffer -> its rows in this tile
    with ir.InsertionPoint(body):
        for op, access in run.ops:
            operands = list(op.operands)
            for i, v, row_local in access:
                if row_local:
                    if v not in tiles:
                        t = ir.MemRefType(v.type)
                        tiles[v] = memref.subview(
                            v, [start] + [0] * (t.rank - 1), [rows] + list(t.shape[1:]),
                            [1] * t.rank)
                    operands[i] = tiles[v]
            copy = op.clone()
            for i, v in enumerate(operands):
                copy.operands[i] = v
        if parallel:
            scf.InParallelOp()
        else:
            scf.YieldOp([])
    return loop


@register
class TileRows(ThreadedPass):
    name = "ms-cpu-tile-rows"
    summary = ("compute runs of row-local loops (softmax, layernorm) one tile of rows at a "
               "time, each loop once per tile, rows on all threads (buffers)")

    def run(self, module):
        threads = self.threads()
        for fn in defined_functions(module):
            if is_kernel(fn):
                continue
            for run in _runs(fn.regions[0].blocks[0]):
                if run.worth_tiling():
                    _tile(run, threads)
