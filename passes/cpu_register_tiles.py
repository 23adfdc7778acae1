"""The matmul schedule's register tiles built as vector code directly.

After tiling (passes/cpu.py), a matmul kernel holds two kinds of small static linalg ops:
- products of an MR x 1 column of A by a 1 x NR row of B into an MR x NR tile of C (a
  packed product: by a 1 x 1 x NR strip into MR x 1 x NR), in a loop over k of step 1;
- epilogue tiles: elementwise linalg.generic ops over a 1 x COLS piece of rows.
Both have one vector form: C's MR rows loaded into vector registers before the loop over k,
one FMA per row of A's broadcast element with B's row in it, the rows stored after it; an
epilogue's body applied to vectors of COLS elements. The generic vectorizer reached the same
code through vector.contract, canonicalization, hoisting, contraction and transfer lowering
(transform dialect): ~23 ms of an MLP step's compile, ~50 of LeNet5's (AMD EPYC). Anything
else (mixed element types, other maps or bodies) is left to it: build_register_tiles says
whether a kernel still needs it.
"""
from __future__ import annotations

from typing import NamedTuple

from mlir import ir
from mlir.dialects import arith, memref, scf, vector

from .cpu_zero_init import is_zero_fill
from ..dialects.ir_helpers import (constant_int, indexing_maps, iterator_kinds, ops_of_kind,
                                   projection, static_trip_count)

# The maps of a packed product (passes/cpu.py pack_b): C[i][s][j] += A[i][k] * Bp[s][k][j]
# over the loops (i, s, j, k).
_PACKED_DIMS = ((0, 3), (1, 3, 2), (0, 1, 2))
_MATMUL_DIMS = ((0, 2), (2, 1), (0, 1))


def build_register_tiles(fn, static: bool = True, fused=None, vector_bytes: int = 0) -> bool:
    """Replace the register tiles and epilogue tiles of the tiled kernel `fn` by vector code;
    True when no linalg op but a fill of C is left in it (else the generic vectorizer must
    run on it). A fill of zeros of C at the kernel's entry (ms-cpu-kernel-zero-init) is
    dropped when every product was built, its first tiles starting from zero registers,
    unless the kernel is not `static` (K may be 0 at run time: no tile would write C).
    `fused`: the kernel's epilogue that the product's tiles compute (cpu_fused_epilogues).
    `vector_bytes`: the target's vector registers (RowVectors; 0: rows as they are)."""
    indexes = _Indexes(fn)
    fills = zero_filled_outputs(fn)
    left = False
    for op in linalg_ops(fn):
        if op in fills.values() or (fused is not None and op == fused.op):
            continue
        tile = product_tile(op) if op.name in ("linalg.matmul", "linalg.generic") else None
        reads = _row_reads(op) if tile is None and op.name == "linalg.generic" else None
        if tile is not None:
            _build_product(op, indexes, *tile, zeroed=fills, fused=fused,
                           vector_bytes=vector_bytes)
        elif reads is not None:
            _build_epilogue(op, indexes, reads)
        else:
            left = True
    if static and not left:
        for fill in fills.values():
            fill.erase()
    if fused is not None:
        fused.op.erase()
    _erase_unused_views(fn)
    if not left:
        _inline_single_iterations(fn)
    return not left


def zero_filled_outputs(fn) -> dict:
    """{argument: its fill}: the arguments of the kernel that a linalg.fill of zeros at its
    entry writes before any other op (constants aside) runs."""
    fills = {}
    for op in fn.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "arith.constant":
            continue
        if not is_zero_fill(op) or not isinstance(op.operands[1].owner, ir.Block):
            break
        fills[op.operands[1]] = op
    return fills


def linalg_ops(fn):
    found = []

    def visit(op):
        if op.name.startswith("linalg."):
            found.append(op)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE
    fn.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def _erase_unused_views(fn):
    """The tiles' subviews that nothing reads any more (innermost first)."""
    for view in reversed(ops_of_kind(fn, "memref.subview")):
        if not len(list(view.result.uses)):
            view.erase()


def _inline_single_iterations(fn):
    """Loops of one iteration replaced by their bodies, as the generic vectorizer's
    canonicalization did: tiles as large as their operand make them, and an scf.forall of
    one iteration would still fork the threads (ms-cpu-lower-forall)."""
    for loop in ops_of_kind(fn, "scf.for", "scf.forall"):
        starts = _single_iteration(loop)
        if starts is None:
            continue
        body = loop.regions[0].blocks[0]
        with ir.InsertionPoint(loop), loop.location:
            for iv, start in zip(body.arguments, starts):
                iv.replace_all_uses_with(
                    arith.constant(ir.IndexType.get(), start) if isinstance(start, int)
                    else start)
        for op in list(body.operations)[:-1]:  # (not the terminator)
            op.move_before(loop)
        loop.erase()


def _single_iteration(loop):
    """The start of each dimension of a loop without results that runs once, else None."""
    if len(loop.results):
        return None
    if loop.name == "scf.for":
        return [loop.operands[0]] if static_trip_count(loop) == 1 else None
    if len(loop.operands):
        return None  # (dynamic bounds or shared outputs)
    starts, stops, steps = (list(ir.DenseI64ArrayAttr(loop.attributes[name])) for name in (
        "staticLowerBound", "staticUpperBound", "staticStep"))
    once = all(a < b <= a + c for a, b, c in zip(starts, stops, steps))
    return starts if once else None


class _Indexes:
    """Index arithmetic of one kernel: constants made once, at its entry."""

    def __init__(self, fn):
        self.entry, self.made = fn.regions[0].blocks[0], {}

    def constant(self, n: int):
        if n not in self.made:
            with ir.InsertionPoint.at_block_begin(self.entry):
                self.made[n] = arith.constant(ir.IndexType.get(), n)
        return self.made[n]

    def sum(self, n: int, values):
        """n + sum(values), made at the insertion point."""
        return self.rows(n, values, 1)[0]

    def rows(self, n: int, values, count: int):
        """n + i + sum(values) for i < count (the values added once)."""
        if not values:
            return [self.constant(n + i) for i in range(count)]
        total = values[0]
        for v in values[1:]:
            total = arith.addi(total, v)
        return [arith.addi(total, self.constant(n + i)) if n + i else total
                for i in range(count)]


# ------------------------------------------------------------------ views

_DYNAMIC = -(1 << 63)  # ShapedType's dynamic offset


def _chain(view):
    """(root, offsets): `view` is element `offsets` of `root` under a chain of unit-stride
    subviews of one rank; each offset a pair (int, [index values]) of the parts to add up.
    None for any other view."""
    rank = ir.MemRefType(view.type).rank
    offsets = [(0, []) for _ in range(rank)]
    owner = view.owner
    while not isinstance(owner, ir.Block) and owner.name == "memref.subview":
        attrs = owner.attributes
        if any(s != 1 for s in ir.DenseI64ArrayAttr(attrs["static_strides"])):
            return None
        static = list(ir.DenseI64ArrayAttr(attrs["static_offsets"]))
        if len(static) != rank:
            return None  # (rank-reducing)
        operands = owner.operands
        dynamic = iter(list(operands)[1:])
        for d, offset in enumerate(static):
            n, values = offsets[d]
            if offset == _DYNAMIC:
                offsets[d] = (n, values + [next(dynamic)])
            else:
                offsets[d] = (n + offset, values)
        view = operands[0]
        owner = view.owner
    return view, offsets


def _element(indexes, chain):
    """(root, index values) of element 0 of a chained view."""
    root, offsets = chain
    return root, [indexes.sum(n, values) for n, values in offsets]


# ------------------------------------------------------------------ products

def _float_type(values):
    """The one float element type of static memrefs `values`, else None."""
    types = [ir.MemRefType(v.type) for v in values if isinstance(v.type, ir.MemRefType)]
    if len(types) != len(values) or not all(t.has_static_shape for t in types):
        return None
    elem = types[0].element_type
    if not isinstance(elem, (ir.F32Type, ir.F64Type)):
        return None
    return elem if all(t.element_type == elem for t in types) else None


def _maps_are(op, dims) -> bool:
    n = len(iterator_kinds(op)) if "iterator_types" in op.attributes else 3
    return indexing_maps(op) == [projection(n, d, op.context) for d in dims]


def _multiply_add_body(op) -> bool:
    """A generic whose body is `acc + x * y` (x, y, acc its block arguments)."""
    ops = list(op.regions[0].blocks[0].operations)
    if [o.name for o in ops] != ["arith.mulf", "arith.addf", "linalg.yield"]:
        return False
    x, y, acc = op.regions[0].blocks[0].arguments
    mul, add, yld = ops
    return (list(mul.operands) in ([x, y], [y, x]) and list(add.operands) in (
        [acc, mul.result], [mul.result, acc]) and list(yld.operands) == [add.result])


def product_tile(op):
    """(the _chain of A, B and C, the dimension of B that k offsets, MR, NR) of a register
    tile: a product of one float type whose shapes are MR x 1, 1 x NR, MR x NR (packed:
    MR x 1, 1 x 1 x NR, MR x 1 x NR), alone in a loop over k of step 1 with the subviews it
    reads, which k offsets in A's columns and in one dimension of B only; else None."""
    if op.name == "linalg.matmul":
        plain = "indexing_maps" not in op.attributes or _maps_are(op, _MATMUL_DIMS)
        if not plain or len(op.operands) != 3:
            return None
    elif not (len(op.operands) == 3 and iterator_kinds(op) == ["parallel"] * 3 + ["reduction"]
              and _maps_are(op, _PACKED_DIMS) and _multiply_add_body(op)):
        return None
    a, b, c = op.operands
    if _float_type([a, b, c]) is None:
        return None
    (mr, one), b_shape, c_shape = (ir.MemRefType(v.type).shape for v in (a, b, c))
    nr = b_shape[-1]
    wanted = ([1, nr], [mr, nr]) if len(b_shape) == 2 else ([1, 1, nr], [mr, 1, nr])
    if one != 1 or (list(b_shape), list(c_shape)) != wanted or not _alone_in_k_loop(op):
        return None
    loop = op.operation.parent
    k = loop.regions[0].blocks[0].arguments[0]
    chains = [_chain(v) for v in (a, b, c)]
    if None in chains or any(_inside(root, loop) for root, _ in chains):
        return None
    moving = [_moving(offsets, k, loop) for _, offsets in chains]
    if moving[0] != [1] or moving[2] != [] or len(moving[1] or ()) != 1:
        return None
    return chains, moving[1][0], mr, nr


def _alone_in_k_loop(op) -> bool:
    loop = op.operation.parent
    if loop.name != "scf.for" or len(loop.results) or constant_int(loop.operands[2]) != 1:
        return False
    body = loop.regions[0].blocks[0].operations
    return all(o.name in ("memref.subview", "scf.yield") or o == op for o in body)


def _moving(offsets, k, loop):
    """The dimensions whose offset adds k (once, as a value of its own), when no other part
    of an offset is defined in k's loop; else None."""
    moving = []
    for d, (_, values) in enumerate(offsets):
        if any(v == k for v in values):
            moving.append(d)
        if sum(v == k for v in values) > 1 or any(
                v != k and _inside(v, loop) for v in values):
            return None
    return moving


def _inside(value, loop) -> bool:
    """Whether `value` is defined in the body of `loop` (its induction variable included)."""
    owner = value.owner
    block = owner if isinstance(owner, ir.Block) else owner.operation.block
    return block == loop.regions[0].blocks[0]


def _build_product(op, indexes, chains, b_moves, mr, nr, zeroed=None, fused=None,
                   vector_bytes=0):
    """C's rows in registers across the loop over k: a loop carrying MR vectors of NR, each
    step one row of B and MR broadcast elements of A, then the rows stored. The loads and
    stores index the memrefs under the tiles' subviews (as the vectorizer's alias folding
    did), their offsets added up before the loop, only k inside it. Where C is an argument
    in `zeroed` (zero_filled_outputs), the tile of the first K panel (its loop from k = 0)
    starts from zeros instead of loading C's rows; where `fused` (a FusedEpilogue) is of C,
    the rows go through it into its output instead of being stored. The rows are vectors
    of RowVectors.of(nr, vector_bytes, ...) (masked where nr is not a whole number of registers)."""
    loop = op.operation.parent
    k = loop.regions[0].blocks[0].arguments[0]
    (a_root, a_at), (b_root, b_at), (c_root, c_at) = (
        (root, [(n, [v for v in values if v != k]) for n, values in offsets])
        for root, offsets in chains)
    with ir.InsertionPoint(loop), op.location:
        row = RowVectors.of(nr, vector_bytes, ir.MemRefType(c_root.type).element_type)
        c_rest = [indexes.sum(n, values) for n, values in c_at[1:]]
        c_rows = [[row] + c_rest for row in indexes.rows(*c_at[0], mr)]
        a_rows = indexes.rows(*a_at[0], mr)
        a_col = _base(indexes, a_at[1])
        b_fixed = [_base(indexes, at) if d == b_moves else indexes.sum(*at)
                   for d, at in enumerate(b_at)]
        accumulators = _first_rows(row, c_root, c_rows, (loop.operands[0], a_at[1]),
                                   c_root in (zeroed or {}), indexes)
        new = scf.ForOp(loop.operands[0], loop.operands[1], loop.operands[2], accumulators)
    with ir.InsertionPoint(new.body), op.location:
        kk = new.induction_variable
        b_fixed[b_moves] = _plus(b_fixed[b_moves], kk)
        b_row = row.load(b_root, b_fixed)
        a_k = _plus(a_col, kk)
        sums = [vector.fma(b_row, vector.broadcast(row.type, memref.load(a_root, [a_row, a_k])),
                           acc) for a_row, acc in zip(a_rows, new.inner_iter_args)]
        scf.YieldOp(sums)
    with ir.InsertionPoint.after(new), op.location:
        rows = list(new.results)
        if fused is not None and c_root == fused.product_c:
            depth = ir.MemRefType(a_root.type).shape[1]
            _store_through(fused, rows, c_root, c_rows, (loop.operands[1], a_at[1]), depth,
                           indexes, row)
        else:
            _store(row, rows, c_root, c_rows)
    loop.erase()


def _store(row: "RowVectors", rows, c_root, c_rows):
    for value, at in zip(rows, c_rows):
        row.store(value, c_root, at)


def _store_through(fused, rows, c_root, c_rows, k_end, depth, indexes, row):
    """A tile's rows through the fused epilogue into its output where the tile's k ends at
    A's `depth` (its last K panel: the rows are final), else stored into C to be loaded by
    the next panel's tile. `k_end`: (the loop's upper bound, A's column offset under the
    tiles' subviews)."""
    upper, (n, values) = k_end
    _where_sum_is([upper] + values, n, depth, indexes,
                  lambda: fused.store(indexes, c_rows, rows, row),
                  lambda: _store(row, rows, c_root, c_rows))


def _first_rows(row, c_root, c_rows, k_start, zeroed: bool, indexes):
    """A tile's accumulators before its loop over k: C's rows, or zeros where C was `zeroed`
    and the tile's first k is A's column 0. `k_start`: (the loop's lower bound, A's column
    offset under the tiles' subviews: (int, [index values]), the K panel's start among them)."""
    def loads():
        return [row.load(c_root, at) for at in c_rows]

    def zeros():
        return [zeros_of(row.type)] * len(c_rows)
    if not zeroed:
        return loads()
    lower, (n, values) = k_start
    return _where_sum_is([lower] + values, n, 0, indexes, zeros, loads, [row.type] * len(c_rows))


def _where_sum_is(parts, n: int, target: int, indexes, then, otherwise, types=()):
    """What `then()` builds where n + the sum of the index values `parts` is `target`, else
    what `otherwise()` builds: decided here where every part is known (_known_index), by an
    scf.if at run time otherwise (yielding the builders' values, of `types`). Indexes are not
    negative: a known part past `target` decides it too."""
    known = [_known_index(v) for v in parts]
    n += sum(k for k in known if k is not None)
    unknown = [v for v, k in zip(parts, known) if k is None]
    if not unknown or n > target:
        return then() if n == target and not unknown else otherwise()
    equal = arith.cmpi(arith.CmpIPredicate.eq, indexes.sum(n, unknown),
                       indexes.constant(target))
    choice = scf.IfOp(equal, list(types), has_else=True)
    for block, build in ((choice.then_block, then), (choice.else_block, otherwise)):
        with ir.InsertionPoint(block):
            scf.YieldOp(build() or [])
    return list(choice.results)


def _known_index(value):
    """The index a value has: a constant's, or the start of an scf.for of one iteration whose
    induction variable it is (a tile as large as its operand; such loops are inlined last,
    _inline_single_iterations); else None."""
    owner = value.owner
    if not isinstance(owner, ir.Block):
        return constant_int(value)
    loop = owner.owner
    if loop is None or loop.name != "scf.for" or value != owner.arguments[0]:
        return None
    return constant_int(loop.operands[0]) if static_trip_count(loop) == 1 else None


class RowVectors(NamedTuple):
    """A register tile's rows of `columns` elements as vectors of `type`. Rows longer than
    one register and not a whole number of them (LeNet5's 120 and 84 features against tiles
    of 32) are rounded up to whole registers, their loads and stores masked to the columns:
    the edge of such a product is one piece of tiles instead of one per register and one
    shorter (each piece is a copy of the tile loops through every later pass), and no
    vector is of a length LLVM can only legalize by widening and splitting (41-70 ms of code
    generation per kernel with such tiles, LeNet5's step on Emerald Rapids). `mask`: the
    i1 vector of the columns' lanes and `zeros` the masked loads' lanes beyond them, None
    where every lane is a column."""
    type: ir.VectorType
    mask: object = None
    zeros: object = None

    @staticmethod
    def of(columns: int, vector_bytes: int, elem) -> "RowVectors":
        """Rows of `columns` elements of type `elem` on a target with vectors of
        `vector_bytes` (0: rows as they are). Makes the mask, if any, at the insertion
        point."""
        lanes = vector_bytes * 8 // ir.FloatType(elem).width
        width = columns
        if lanes and columns > lanes and columns % lanes:
            width = -(-columns // lanes) * lanes
        t = ir.VectorType.get([width], elem)
        if width == columns:
            return RowVectors(t)
        mask = vector.constant_mask(ir.VectorType.get([width], ir.IntegerType.get_signless(1)),
                                    [columns])
        return RowVectors(t, mask, zeros_of(t))

    def like(self, elem) -> "RowVectors":
        """Rows of the same columns with elements of type `elem` (made at the insertion
        point)."""
        if elem == self.type.element_type:
            return self
        t = ir.VectorType.get(self.type.shape, elem)
        return RowVectors(t, self.mask, None if self.mask is None else zeros_of(t))

    def load(self, base, at):
        if self.mask is None:
            return vector.load(self.type, base, at)
        return vector.maskedload(self.type, base, at, self.mask, self.zeros)

    def store(self, value, base, at):
        if self.mask is None:
            vector.store(value, base, at)
        else:
            vector.maskedstore(base, at, self.mask, value)


def zeros_of(t: ir.VectorType):
    """A vector constant of zeros."""
    elem = t.element_type
    zero = (ir.FloatAttr.get(elem, 0.0) if isinstance(elem, ir.FloatType)
            else ir.IntegerAttr.get(elem, 0))
    return arith.constant(t, ir.DenseElementsAttr.get_splat(t, zero))


def _base(indexes, offset):
    """An offset that k is added to: None for 0."""
    return None if offset == (0, []) else indexes.sum(*offset)


def _plus(base, k):
    return k if base is None else arith.addi(base, k)


# ------------------------------------------------------------------ epilogues

_ELEMENTWISE_DIALECTS = ("arith.", "math.")


def _row_reads(op):
    """How an epilogue tile reads each of its operands, [("row" or "element", its _chain)],
    where the linalg.generic runs over 1 x ... x 1 x COLS (parallel) on static memrefs, its
    inputs each read a row segment along the last loop or one element, and its body is arith
    and math ops on scalars; else None."""
    kinds = iterator_kinds(op)
    if not kinds or any(k != "parallel" for k in kinds):
        return None
    n_in = len(op.opview.inputs)
    outs = list(op.operands)[n_in:]
    maps = indexing_maps(op)
    if any(not isinstance(v.type, ir.MemRefType) or not ir.MemRefType(v.type).has_static_shape
           for v in op.operands):
        return None
    shape = list(ir.MemRefType(outs[0].type).shape)
    if any(d != 1 for d in shape[:-1]) or len(shape) != len(kinds):
        return None
    ident = ir.AffineMap.get_identity(len(kinds), context=op.context)
    if any(m != ident or list(ir.MemRefType(v.type).shape) != shape
           for m, v in zip(maps[n_in:], outs)):
        return None
    if not elementwise_body(op):
        return None
    reads = [(_read_kind(m, len(kinds)), _chain(v)) for m, v in zip(maps, op.operands)]
    return None if any(kind is None or chain is None for kind, chain in reads) else reads


def elementwise_body(op) -> bool:
    """Whether a generic's body is arith and math ops on scalars (no regions)."""
    for body_op in op.regions[0].blocks[0].operations:
        name = body_op.name
        if name == "linalg.yield":
            continue
        if not name.startswith(_ELEMENTWISE_DIALECTS) or len(body_op.regions):
            return False
        if any(not _scalar(r.type) for r in body_op.results):
            return False
    return True


def _scalar(t) -> bool:
    return isinstance(t, (ir.FloatType, ir.IntegerType, ir.IndexType))


def _read_kind(amap, n_loops):
    """"row" when the operand's last index is the last loop (its other indexes loops of size
    1), "element" when no index uses the last loop; None otherwise."""
    dims = []
    for expr in amap.results:
        expr = expr.maybe_downcast()
        if not isinstance(expr, ir.AffineDimExpr):
            return None
        dims.append(expr.position)
    last = n_loops - 1
    if last not in dims:
        return "element"
    return "row" if dims.index(last) == len(dims) - 1 else None


def _build_epilogue(op, indexes, reads):
    """The generic's body on vectors of the row's COLS elements: inputs loaded as rows (or
    one element broadcast), every body op made again with vector results, each yielded value
    stored as the output's row (`reads`: _row_reads)."""
    body = op.regions[0].blocks[0]
    n_in = len(op.opview.inputs)
    cols = ir.MemRefType(op.operands[n_in].type).shape[-1]
    with ir.InsertionPoint(op), op.location:
        values = {}
        for arg, (kind, chain) in zip(body.arguments, reads):
            if not len(list(arg.uses)):
                continue
            root, at = _element(indexes, chain)
            t = ir.VectorType.get([cols], arg.type)
            if kind == "row":
                values[arg] = vector.load(t, root, at)
            else:
                values[arg] = vector.broadcast(t, memref.load(root, at))
        for value, (_, chain) in zip(vector_body(body, values, cols), reads[n_in:]):
            vector.store(value, *_element(indexes, chain))
    op.erase()


def vector_body(body, values: dict, cols: int) -> list:
    """Every op of a generic's elementwise `body` made again at the insertion point with
    vectors of `cols` elements (`values`: the vectors of the block arguments it uses; scalars
    from outside the generic broadcast); returns the vectors it yields."""
    def vec(t):
        return ir.VectorType.get([cols], t)

    def vector_of(v):
        if v not in values:  # a scalar from outside the generic
            values[v] = vector.broadcast(vec(v.type), v)
        return values[v]

    for body_op in body.operations:
        if body_op.name == "linalg.yield":
            return [vector_of(value) for value in body_op.operands]
        if body_op.name == "arith.constant":
            values[body_op.result] = vector.broadcast(
                vec(body_op.result.type), body_op.clone().result)
            continue
        made = ir.Operation.create(
            body_op.name, results=[vec(r.type) for r in body_op.results],
            operands=[vector_of(v) for v in body_op.operands],
            attributes={name: body_op.attributes[name] for name in body_op.attributes})
        for old, new in zip(body_op.results, made.results):
            values[old] = new
    return []
