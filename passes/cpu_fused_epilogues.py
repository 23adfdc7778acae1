"""A matmul kernel's epilogue computed on its register tiles, before they are stored.

A kernel's epilogue (a bias and activation, the mask of a ReLU's gradient, an SGD update
w - lr * g) was a pass of its own over C after the product: C's rows stored by the register
tiles, then loaded again, the epilogue applied, and stored again. A tile of the product's
last K panel (its loop over k ends at K; the product's K static) holds final rows: it applies
the epilogue to them while they are in registers and stores the epilogue's result only
(passes/cpu_register_tiles.py `_store_through`; an scf.if on the panel's start where that is
a loop's index), the earlier panels' tiles store their partial rows as before. With one
panel C is stored once instead of stored, loaded and stored (an MLP step's 512x784 weight
gradient with its SGD update: 3.2 MB less memory traffic per step).

The epilogue qualifies when it is the kernel's only linalg op besides the product (and the
zero fill of its output): an all-parallel linalg.generic over C's rows and columns, writing
C (identity map) and reading C only through it, whose body is arith and math on scalars, and
whose other operands each read a row segment along the columns (`(i, j) -> (i, j)`, a bias
`(i, j) -> (j)`) or one element per row (`(i, j) -> (i)`). With B packed (passes/cpu.py
pack_b) the product writes C's strips view, another argument the call passes the same
buffer as: a tile's column is then its strip times the strip width plus its offset.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, memref, vector

from ..dialects.ir_helpers import indexing_maps, iterator_kinds
from .cpu_register_tiles import elementwise_body, linalg_ops, product_tile, vector_body
from .cpu_zero_init import is_zero_fill

FUSED_ATTR = "ms.fused_into_tiles"  # an epilogue the product's register tiles compute


def fusable_epilogue(fn, product, calls):
    """The kernel's epilogue that its register tiles can compute (see the module's doc),
    given its one product (before tiling) and its calls; else None."""
    others = [op for op in linalg_ops(fn) if op != product and not is_zero_fill(op)]
    if len(others) != 1 or others[0].name != "linalg.generic":
        return None
    ep = others[0]
    if ep.block != product.block or not product.is_before_in_block(ep):
        return None
    n_in = len(ep.opview.inputs)
    operands = list(ep.operands)
    if len(operands) != n_in + 1 or iterator_kinds(ep) != ["parallel", "parallel"]:
        return None
    out = operands[n_in]
    out_type = out.type
    if not (isinstance(out_type, ir.MemRefType) and ir.MemRefType(out_type).has_static_shape
            and isinstance(out.owner, ir.Block) and elementwise_body(ep)):
        return None
    maps = indexing_maps(ep)
    if maps[n_in] != ir.AffineMap.get_identity(2, context=ep.context):
        return None
    product_c = product.operands[len(product.operands) - 1]
    if product_c != out and not _same_buffer(calls, product_c, out):
        return None
    for value, amap in zip(operands[:n_in], maps[:n_in]):
        if value in (out, product_c):
            return None  # (C read as an input)
        if _plan(amap) is None or not isinstance(value.type, ir.MemRefType):
            return None
    return ep


def _same_buffer(calls, strips, c) -> bool:
    """Whether the kernel's argument `strips` is, at its one call, C's strips view (pack_b):
    an expand_shape of what the call passes as `c`."""
    if len(calls) != 1 or not (isinstance(strips.owner, ir.Block)
                               and isinstance(c.owner, ir.Block)):
        return False
    passed = calls[0].operands[strips.arg_number]
    owner = passed.owner
    return (not isinstance(owner, ir.Block) and owner.name == "memref.expand_shape"
            and owner.operands[0] == calls[0].operands[c.arg_number])


def _plan(amap):
    """("row" or "element", the index of each result: 0 row, 1 column, or an int constant)
    of an input's map over (i, j): "row" reads a segment along j (j its last index only),
    "element" one value per row (no j); else None."""
    dims = []
    for expr in amap.results:
        expr = expr.maybe_downcast()
        if isinstance(expr, ir.AffineDimExpr):
            dims.append(("dim", expr.position))
        elif isinstance(expr, ir.AffineConstantExpr):
            dims.append(("const", expr.value))
        else:
            return None
    columns = [k for k, d in enumerate(dims) if d == ("dim", 1)]
    if not columns:
        return "element", dims
    return ("row", dims) if columns == [len(dims) - 1] else None


def tiles_can_fuse(products) -> bool:
    """Whether every product of the tiled kernel is a register tile the builder takes."""
    return all(product_tile(op) is not None for op in products)


def mark(ep, c):
    """Mark `ep` as computed by the tiles of the product that writes the argument `c` (its
    index kept with the mark)."""
    ep.attributes[FUSED_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                   c.arg_number)


class FusedEpilogue:
    """The epilogue marked FUSED_ATTR of a kernel, applied by _build_product to the rows of
    each register tile of `product_c` (the argument the product writes) and stored into C."""

    def __init__(self, ep, product_c, strip: int | None):
        self.op, self.body = ep, ep.regions[0].blocks[0]
        n_in = len(ep.opview.inputs)
        self.output = ep.operands[n_in]
        self.product_c, self.strip = product_c, strip
        maps = indexing_maps(ep)
        self.plans = [(v, _plan(m)) for v, m in zip(list(ep.operands)[:n_in], maps[:n_in])]

    @staticmethod
    def of(fn):
        """The kernel's fused epilogue (marked by `mark`), or None."""
        for op in linalg_ops(fn):
            if FUSED_ATTR in op.attributes:
                index = ir.IntegerAttr(op.attributes[FUSED_ATTR]).value
                product_c = fn.regions[0].blocks[0].arguments[index]
                shape = ir.MemRefType(product_c.type).shape
                return FusedEpilogue(op, product_c, shape[-1] if len(shape) == 3 else None)
        return None

    def store(self, indexes, c_rows, rows, row):
        """The epilogue of the tile's rows (vectors `row`, a RowVectors, at `c_rows`, C's
        indexes of each row's first element), stored into C. Inputs that do not depend on
        the row (a bias) are loaded once for the tile."""
        first = c_rows[0]
        col = first[1] if self.strip is None else arith.addi(
            arith.muli(first[1], indexes.constant(self.strip)), first[2])
        shared = {arg: self._load(arg, plan, None, col, row, indexes)
                  for arg, plan in zip(self.body.arguments, self.plans)
                  if ("dim", 0) not in plan[1][1] and len(list(arg.uses))}
        for at, acc in zip(c_rows, rows):
            values = dict(shared)
            for arg, plan in zip(self.body.arguments, self.plans):
                if arg not in values and len(list(arg.uses)):
                    values[arg] = self._load(arg, plan, at[0], col, row, indexes)
            values[self.body.arguments[len(self.plans)]] = acc
            (result,) = vector_body(self.body, values, row.type.shape[0])
            row.like(ir.VectorType(result.type).element_type).store(
                result, self.output, [at[0], col])

    @staticmethod
    def _load(arg, plan, at_row, col, row, indexes):
        """The vector (`row`'s, a RowVectors, of the argument's type) an input gives the
        tile's row `at_row` from column `col`: a row segment loaded, or one element
        broadcast."""
        value, (kind, dims) = plan
        index = [at_row if d == ("dim", 0) else col if d == ("dim", 1)
                 else indexes.constant(d[1]) for d in dims]
        row = row.like(arg.type)
        return (row.load(value, index) if kind == "row" else
                vector.broadcast(row.type, memref.load(value, index)))
