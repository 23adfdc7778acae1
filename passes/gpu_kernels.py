"""Loop nests on memrefs (a linalg.generic, or a copy) built directly as GPU kernels.

A `LoopNest` is what a kernel needs from a linalg op: the iteration space, operands with their
indexing maps, and a way to emit the body for one point. choose_mapping picks one of the first
three mappings; ms-gpu-map-linalg (passes/gpu.py) uses the fourth for the ops tagged for it:

- parallel: one thread per point of the iteration space, a 1-D grid over the flattened space.
  The last loop dimension varies fastest, so neighbouring threads touch neighbouring elements
  (coalesced loads and stores) whatever the rank. When the last dimension is contiguous in
  every operand that uses it (or broadcast), each thread takes VECTOR consecutive points with
  aligned vector loads and stores (128-bit for float32).
- block reduction: one block per output element when the innermost dimension is reduced (a
  row sum, softmax's max and exp-sum). Each thread folds a strided part of the row with the
  op's own body, then `gpu.all_reduce` combines the partials as a tree (warp shuffles plus
  shared memory), and thread 0 folds the result into the output.
- thread reduction: one thread per output element looping over the reduced dimensions (column
  reductions, contractions, and reductions whose combiner is not recognized): coalesced when
  the innermost dimension is parallel.
- scatter-add (unsorted_segment_sum, tagged by its lowering): one thread per input element,
  adding it atomically to the output row its index names.

Every kernel is a `gpu.launch` with a constant block size, so outlining records
`known_block_size` (PTX `.maxntid`). A loop whose size is dynamic (`?`) has an index value
for its size, read on the host with `memref.dim`: grids are computed on the host from it
(the launch plan evaluates them per call) and the kernel receives it as a parameter.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import affine, arith, gpu, memref, scf, vector

from ..dialects.ir_helpers import (PARALLEL, REDUCTION, identity_layout, indexing_maps, iterator_kinds,
                         loop_sizes, remap_operands, uses_dim)

BLOCK = 256           # threads per block for parallel and thread-reduction kernels
VECTOR = 4            # points per thread of a vectorizable parallel kernel
MAX_ALIGN = 16        # bytes a vector access may assume (device buffers are 256-aligned)
MAX_GRID_X = 2**31 - 1

# Combiners gpu.all_reduce can do as a tree: arith op -> (all_reduce kind, neutral element).
_NEG_INF, _POS_INF = float("-inf"), float("inf")
COMBINERS = {
    "arith.addf": ("add", 0.0), "arith.addi": ("add", 0),
    "arith.mulf": ("mul", 1.0), "arith.muli": ("mul", 1),
    "arith.maximumf": ("maximumf", _NEG_INF), "arith.minimumf": ("minimumf", _POS_INF),
    "arith.maxnumf": ("maxnumf", _NEG_INF), "arith.minnumf": ("minnumf", _POS_INF),
    "arith.maxsi": ("maxsi", "smin"), "arith.minsi": ("minsi", "smax"),
    "arith.maxui": ("maxui", 0), "arith.minui": ("minui", -1),
    "arith.andi": ("and", -1), "arith.ori": ("or", 0), "arith.xori": ("xor", 0),
}
# Element types whose shuffles the NVVM lowering supports.
_TREE_TYPES = ("f32", "f64", "i32", "i64")


def _index(value: int):
    return arith.constant(ir.IndexType.get(), value)


def _size(size):
    """An index value for a loop size: a constant for a static one, else the value itself."""
    return _index(size) if isinstance(size, int) else size


def _product(sizes):
    """The product of sizes (ints or index values): an int when every size is static."""
    static, dynamic = 1, None
    for s in sizes:
        if isinstance(s, int):
            static *= s
        else:
            dynamic = s if dynamic is None else arith.muli(dynamic, s)
    if dynamic is None:
        return static
    return dynamic if static == 1 else arith.muli(dynamic, _index(static))


def _divide(size, divisor: int):
    """size / divisor for a size the divisor divides (a static factor of it)."""
    if divisor == 1:
        return size
    return size // divisor if isinstance(size, int) else arith.divui(size, _index(divisor))


@dataclass
class Combiner:
    """The fold of a reduction body `yield combine(out, f(inputs))` (either operand order:
    every combiner is commutative)."""
    op: ir.Operation      # the combining arith op in the body
    kind: str             # gpu.all_reduce operation
    neutral: object
    term: ir.Value        # f(inputs): the operand that is not the output's old value


@dataclass
class LoopNest:
    op: ir.Operation                  # the op the kernel replaces (location; erased)
    sizes: list                       # per loop dimension: an int, or an index value (`?`)
    iterators: list                   # "parallel" | "reduction" per dimension
    inputs: list                      # memrefs (or scalars, for linalg.fill)
    input_maps: list                  # AffineMap per input (None for a scalar)
    outputs: list
    output_maps: list
    body: ir.Block | None = None      # the linalg region; None: yield the first input
    combiner: Combiner | None = field(default=None)

    @property
    def parallel_dims(self):
        return [d for d, it in enumerate(self.iterators) if it == PARALLEL]

    @property
    def reduction_dims(self):
        return [d for d, it in enumerate(self.iterators) if it == REDUCTION]

    def extent(self, dims):
        """The number of points of `dims`: an int, or (a dynamic size among them) an index
        value computed at the insertion point, which must be on the host."""
        return _product([self.sizes[d] for d in dims])

    def static_extent(self, dims):
        """The number of points of `dims`, None when one of them is dynamic (builds no IR)."""
        sizes = [self.sizes[d] for d in dims]
        return _product(sizes) if all(isinstance(s, int) for s in sizes) else None

    # -------------------------------------------------------------- emission helpers

    def _index_of(self, expr, idx):
        if isinstance(expr, ir.AffineDimExpr):
            return idx[expr.position]
        if isinstance(expr, ir.AffineConstantExpr):
            return _index(expr.value)
        amap = ir.AffineMap.get(len(self.sizes), 0, [expr])
        return affine.AffineApplyOp(amap, list(idx)).result

    def indices(self, amap, idx):
        return [self._index_of(e, idx) for e in amap.results]

    def load_inputs(self, idx):
        vals = []
        for v, m in zip(self.inputs, self.input_maps):
            vals.append(memref.load(v, self.indices(m, idx)) if m is not None else v)
        return vals

    def outputs_read(self):
        """Per output: whether the body reads its current value."""
        args = list(self.body.arguments)[len(self.inputs):] if self.body is not None else []
        return [i < len(args) and any(True for _ in args[i].uses)
                for i in range(len(self.outputs))]

    def load_outputs(self, idx, only_used=True):
        read = self.outputs_read()
        return [memref.load(v, self.indices(m, idx)) if read[i] or not only_used else None
                for i, (v, m) in enumerate(zip(self.outputs, self.output_maps))]

    def store_outputs(self, values, idx):
        for val, v, m in zip(values, self.outputs, self.output_maps):
            memref.store(val, v, self.indices(m, idx))

    def emit_body(self, ins, outs, idx):
        """The body at one point: clones the region's ops with block arguments bound to
        `ins` + `outs` and linalg.index to `idx`; returns the yielded values."""
        if self.body is None:
            return [ins[0]]
        mapping = {}
        for arg, val in zip(self.body.arguments, list(ins) + list(outs)):
            mapping[arg] = val
        yielded = None
        for op in self.body.operations:
            name = op.operation.name
            if name == "linalg.yield":
                yielded = [mapping.get(v, v) for v in op.operands]
                break
            if name == "linalg.index":
                mapping[op.result] = idx[ir.IntegerAttr(op.attributes["dim"]).value]
                continue
            new = op.operation.clone()
            remap_operands(new, mapping)
            for old, res in zip(op.results, new.results):
                mapping[old] = res
        return yielded


def delinearize(linear, sizes):
    """Indices of `linear` in a row-major space of `sizes` (last fastest)."""
    out, rest = [None] * len(sizes), linear
    for k in reversed(range(len(sizes))):
        s = sizes[k]
        if s == 1:
            out[k] = _index(0)
            continue
        if k == 0:
            out[k] = rest
            break
        out[k] = arith.remui(rest, _size(s))
        rest = arith.divui(rest, _size(s))
    return out


def merge(dims_a, vals_a, dims_b, vals_b, rank):
    idx = [None] * rank
    for d, v in zip(dims_a, vals_a):
        idx[d] = v
    for d, v in zip(dims_b, vals_b):
        idx[d] = v
    return idx


# ------------------------------------------------------------------ launches

def _launch(grid, block: int, loc):
    """A gpu.launch of grid x block threads (1-D; the grid an int or an index value computed
    on the host); returns (op, block_id_x, thread_id_x). Its body ends in gpu.terminator;
    the caller inserts before it."""
    if isinstance(grid, int) and grid > MAX_GRID_X:
        raise KernelError(f"needs {grid} blocks, more than the grid limit {MAX_GRID_X}")
    one = _index(1)
    launch = gpu.LaunchOp((_size(grid), one, one), (_index(block), one, one), loc=loc)
    body = launch.regions[0].blocks[0]  # the builder adds it, with the 12 id/size arguments
    with ir.InsertionPoint(body):
        gpu.TerminatorOp()
    return launch, body.arguments[0], body.arguments[3]


class KernelError(Exception):
    pass


def _round_threads(n: int, cap: int = BLOCK) -> int:
    """Threads per block for n work items: a multiple of the warp size up to `cap`."""
    return min(cap, max(32, (n + 31) // 32 * 32))


@contextmanager
def _thread_per_item(total, loc):
    """A 1-D gpu.launch of warp-multiple blocks with a thread per item; inside the `with`,
    code is inserted where thread `gid` (guarded to gid < total) does its item. Yields
    (launch, gid). A dynamic total (an index value) gets full blocks and a grid computed on
    the host (0 blocks for 0 items: the launch plan skips such a launch)."""
    if isinstance(total, int):
        block = _round_threads(total)
        grid = max(1, (total + block - 1) // block)
    else:
        block = BLOCK
        grid = arith.ceildivui(total, _index(block))
    launch, bid, tid = _launch(grid, block, loc)
    with ir.InsertionPoint.at_block_terminator(launch.regions[0].blocks[0]):
        gid = arith.addi(arith.muli(bid, _index(block)), tid)
        if isinstance(total, int) and grid * block == total:
            yield launch, gid
            return
        guard = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, gid, _size(total)))
        with ir.InsertionPoint(guard.then_block):
            yield launch, gid
            scf.YieldOp([])


def map_parallel(nest: LoopNest):
    width = vector_width(nest)
    total = _divide(nest.extent(range(len(nest.sizes))), width)
    with _thread_per_item(total, nest.op.location) as (launch, gid):
        if width == 1:
            idx = delinearize(gid, nest.sizes)
            ins = nest.load_inputs(idx)
            outs = nest.load_outputs(idx)
            nest.store_outputs(nest.emit_body(ins, outs, idx), idx)
        else:
            _vector_points(nest, delinearize(arith.muli(gid, _index(width)), nest.sizes), width)
    return launch


def vector_width(nest: LoopNest) -> int:
    """VECTOR if every memref operand either reads the last loop dimension as its own last,
    contiguous dimension, or does not depend on it; else 1."""
    last = len(nest.sizes) - 1
    if last < 0 or not isinstance(nest.sizes[last], int) or nest.sizes[last] % VECTOR \
            or nest.reduction_dims:
        return 1
    operands = list(zip(nest.inputs, nest.input_maps)) + list(zip(nest.outputs,
                                                                   nest.output_maps))
    for k, (v, m) in enumerate(operands):
        if m is None:
            continue
        uses = [i for i, e in enumerate(m.results) if uses_dim(e, last)]
        is_output = k >= len(nest.inputs)
        if not uses and not is_output:
            continue  # broadcast along the vector: one scalar for every lane
        results = list(m.results)
        if (uses != [len(results) - 1] or not isinstance(results[-1], ir.AffineDimExpr)
                or not identity_layout(v.type)):
            return 1
    return VECTOR


def _vector_points(nest: LoopNest, idx, width):
    """The body at `width` consecutive points along the last dimension, starting at idx."""
    last = len(nest.sizes) - 1
    lane_idx = [idx[:-1] + [idx[-1] if lane == 0 else arith.addi(idx[-1], _index(lane))]
                for lane in range(width)]

    def lanes(v, m):
        if m is None:
            return [v] * width
        if not any(uses_dim(e, last) for e in m.results):
            s = memref.load(v, nest.indices(m, idx))
            return [s] * width
        elem = ir.MemRefType(v.type).element_type
        vec = vector.load(ir.VectorType.get([width], elem), v, nest.indices(m, idx),
                          alignment=_alignment(elem, width))
        return [vector.extract(vec, [], [lane]) for lane in range(width)]

    ins = [lanes(v, m) for v, m in zip(nest.inputs, nest.input_maps)]
    outs = [lanes(v, m) if read else [None] * width
            for v, m, read in zip(nest.outputs, nest.output_maps, nest.outputs_read())]
    results = [nest.emit_body([x[lane] for x in ins], [o[lane] for o in outs], lane_idx[lane])
               for lane in range(width)]
    for j, (v, m) in enumerate(zip(nest.outputs, nest.output_maps)):
        elem = ir.MemRefType(v.type).element_type
        vec = vector.from_elements(ir.VectorType.get([width], elem),
                                   [results[lane][j] for lane in range(width)])
        vector.store(vec, v, nest.indices(m, idx), alignment=_alignment(elem, width))


def _alignment(elem: ir.Type, width: int) -> int:
    return min(MAX_ALIGN, width * max(1, elem.width // 8))


def map_thread_reduction(nest: LoopNest):
    """One thread per output element; the reduced dimensions are sequential loops."""
    pdims, rdims = nest.parallel_dims, nest.reduction_dims
    with _thread_per_item(nest.extent(pdims), nest.op.location) as (launch, gid):
        pidx = delinearize(gid, [nest.sizes[d] for d in pdims])
        # Output maps use only parallel dims: any index works for the reduced ones.
        zeros = [_index(0)] * len(rdims)
        out_idx = merge(pdims, pidx, rdims, zeros, len(nest.sizes))
        accs = nest.load_outputs(out_idx, only_used=False)
        accs = _reduction_loops(nest, pdims, pidx, rdims, 0, [], accs)
        nest.store_outputs(accs, out_idx)
    return launch


def map_scatter_add(nest: LoopNest):
    """The tagged scatter-add reduction (dialects/ops/indexing.py), loops (segment, p, k):
    out[ids[k], p] += rows[k, p]. Instead of every output scanning all k, one thread per
    (k, p) adds its element with an atomic read-modify-write; out was zero-filled before."""
    segments, width, n = nest.sizes
    rows, ids = nest.inputs
    out = nest.outputs[0]
    elem = ir.MemRefType(out.type).element_type
    kind = (arith.AtomicRMWKind.addf if isinstance(elem, ir.FloatType)
            else arith.AtomicRMWKind.addi)
    with _thread_per_item(_product([n, width]), nest.op.location) as (launch, gid):
        k, p = delinearize(gid, [n, width])
        i = memref.load(ids, [k])
        zero = arith.constant(i.type, 0)
        limit = (arith.constant(i.type, segments) if isinstance(segments, int)
                 else arith.index_cast(i.type, segments))
        ok = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, i, zero),
                        arith.cmpi(arith.CmpIPredicate.slt, i, limit))
        guard = scf.IfOp(ok)
        with ir.InsertionPoint(guard.then_block):
            at = arith.index_cast(ir.IndexType.get(), i)
            memref.atomic_rmw(kind, memref.load(rows, [k, p]), out, [at, p])
            scf.YieldOp([])
    return launch


def map_store(op):
    """A memref.store of the host as one thread storing the value (a kernel parameter)."""
    launch, _, _ = _launch(1, 1, op.location)
    with ir.InsertionPoint.at_block_terminator(launch.regions[0].blocks[0]):
        value, buffer, *indices = op.operands
        memref.store(value, buffer, indices)
    return launch


def _reduction_loops(nest, pdims, pidx, rdims, k, ridx, accs):
    if k == len(rdims):
        idx = merge(pdims, pidx, rdims, ridx, len(nest.sizes))
        return nest.emit_body(nest.load_inputs(idx), accs, idx)
    loop = scf.ForOp(_index(0), _size(nest.sizes[rdims[k]]), _index(1), accs)
    with ir.InsertionPoint(loop.body):
        new = _reduction_loops(nest, pdims, pidx, rdims, k + 1, ridx + [loop.induction_variable],
                               list(loop.inner_iter_args))
        scf.YieldOp(new)
    return list(loop.results)


def map_block_reduction(nest: LoopNest):
    """One block per output element; threads fold strided parts of the reduced space, then a
    gpu.all_reduce tree combines them."""
    pdims, rdims = nest.parallel_dims, nest.reduction_dims
    comb = nest.combiner
    n_out, n_red = nest.extent(pdims), nest.extent(rdims)
    block = _round_threads(n_red) if isinstance(n_red, int) else BLOCK
    launch, bid, tid = _launch(n_out, block, nest.op.location)
    acc_type = nest.outputs[0].type.element_type
    with ir.InsertionPoint.at_block_terminator(launch.regions[0].blocks[0]):
        pidx = delinearize(bid, [nest.sizes[d] for d in pdims])
        loop = scf.ForOp(tid, _size(n_red), _index(block), [_neutral(acc_type, comb.neutral)])
        with ir.InsertionPoint(loop.body):
            ridx = delinearize(loop.induction_variable, [nest.sizes[d] for d in rdims])
            idx = merge(pdims, pidx, rdims, ridx, len(nest.sizes))
            partial, = nest.emit_body(nest.load_inputs(idx), list(loop.inner_iter_args), idx)
            scf.YieldOp([partial])
        total = gpu.AllReduceOp(loop.results[0], op=_all_reduce_attr(comb.kind), uniform=True)
        first = scf.IfOp(arith.cmpi(arith.CmpIPredicate.eq, tid, _index(0)))
        with ir.InsertionPoint(first.then_block):
            out_idx = merge(pdims, pidx, rdims, [_index(0)] * len(rdims), len(nest.sizes))
            init, = nest.load_outputs(out_idx, only_used=False)
            fold = comb.op.clone()
            fold.operands[0], fold.operands[1] = init, total.result
            nest.store_outputs([fold.results[0]], out_idx)
            scf.YieldOp([])
    return launch


def _all_reduce_attr(kind: str):
    return ir.Attribute.parse(f"#gpu<all_reduce_op {kind}>")


def _neutral(t: ir.Type, value):
    if isinstance(t, ir.FloatType):
        return arith.constant(t, float(value))
    width = ir.IntegerType(t).width
    if value == "smin":
        value = -(1 << (width - 1))
    elif value == "smax":
        value = (1 << (width - 1)) - 1
    return arith.constant(t, ir.IntegerAttr.get(t, value))


# ------------------------------------------------------------------ recognition

def find_combiner(nest: LoopNest) -> Combiner | None:
    """`yield combine(out, f(inputs))` with a combiner gpu.all_reduce can tree-reduce and an
    output read nowhere else; else None. Only reads the body."""
    if nest.body is None or len(nest.outputs) != 1:
        return None
    out_arg = list(nest.body.arguments)[len(nest.inputs)]
    yield_op = list(nest.body.operations)[-1]
    value = yield_op.operands[0]
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name not in COMBINERS:
        return None
    if str(value.type) not in _TREE_TYPES or len(owner.operands) != 2:
        return None
    lhs, rhs = owner.operands[0], owner.operands[1]
    if out_arg not in (lhs, rhs) or sum(1 for _ in out_arg.uses) != 1:
        return None
    kind, neutral = COMBINERS[owner.operation.name]
    return Combiner(owner.operation, kind, neutral, rhs if lhs == out_arg else lhs)


def is_contraction(nest: LoopNest) -> bool:
    """A sum of products (matmul-like): each output element is reused little enough that a
    thread per output wins over a block per output."""
    comb = nest.combiner
    if comb is None or comb.kind != "add" or len(nest.inputs) < 2:
        return False
    other = comb.term.owner
    return not isinstance(other, ir.Block) and other.operation.name in ("arith.mulf",
                                                                         "arith.muli")


def choose_mapping(nest: LoopNest):
    """The mapping function for a nest (see the module docstring)."""
    if not nest.reduction_dims:
        return map_parallel
    innermost_reduced = nest.iterators[-1] == REDUCTION
    reduced = nest.static_extent(nest.reduction_dims)  # (None: dynamic, taken as long)
    if (innermost_reduced and nest.combiner is not None and not is_contraction(nest)
            and (reduced is None or reduced >= 32)):
        return map_block_reduction
    return map_thread_reduction


def nest_of_generic(op) -> LoopNest:
    """A LoopNest for a linalg.generic on memrefs; dynamic loop sizes are read (memref.dim)
    at the insertion point, which must be the host's, before the op."""
    n_in = len(op.inputs)
    maps = indexing_maps(op)
    sizes = _sizes_of(maps, list(op.inputs) + list(op.outputs))
    input_maps = [m if isinstance(v.type, ir.MemRefType) else None
                  for v, m in zip(op.inputs, maps[:n_in])]
    nest = LoopNest(op.operation, sizes, iterator_kinds(op), list(op.inputs), input_maps,
                    list(op.outputs), maps[n_in:], op.regions[0].blocks[0])
    if nest.reduction_dims:
        nest.combiner = find_combiner(nest)
    return nest


def _sizes_of(maps, operands):
    """Each loop's size: static where a memref operand's type gives it, else a memref.dim of
    an operand dimension the loop indexes directly."""
    sizes = loop_sizes(maps, operands)
    for d, s in enumerate(sizes):
        if s is not None and not ir.ShapedType.is_dynamic_size(s):
            continue
        sizes[d] = _dim_indexed_by(d, maps, operands)
    return sizes


def _dim_indexed_by(d, maps, operands):
    for value, amap in zip(operands, maps):
        if not isinstance(value.type, ir.MemRefType):
            continue
        for k, expr in enumerate(amap.results):
            expr = expr.maybe_downcast()
            if isinstance(expr, ir.AffineDimExpr) and expr.position == d:
                return memref.dim(value, _index(k))
    raise KernelError(f"no operand gives the size of loop {d}")


def _shape_of(value):
    """A memref's sizes: ints, memref.dim values for its dynamic ones."""
    shape = list(ir.MemRefType(value.type).shape)
    return [memref.dim(value, _index(k)) if ir.ShapedType.is_dynamic_size(s) else s
            for k, s in enumerate(shape)]


def nest_of_copy(op) -> LoopNest:
    """memref.copy between views: a parallel identity nest."""
    src, dst = op.operands
    shape = _shape_of(dst)
    ident = ir.AffineMap.get_identity(len(shape))
    return LoopNest(op.operation, shape, [PARALLEL] * len(shape), [src], [ident], [dst],
                    [ident])
