"""ms-cpu-store-terms: a term that a reduction sums and a later loop recomputes is stored once.

softmax = exp(x - max) / sum(exp(x - max)): its lowering sums exp(x - max) in one loop and
computes exp(x - max) * (1 / sum) in the next, so every element's exponential is evaluated
twice (the lowering's choice: as tensors, a stored exponential would need a buffer of the
input's size). On buffers, the second loop's output can hold it: the summing loop also writes
each term into that output, and the second loop then reads the term back instead of
recomputing it (out = out * (1 / sum)). Within a tile of rows (ms-cpu-tile-rows) the output
rows are still in cache when they are read again.

The pair: a linalg.generic S whose one output accumulates `acc + T` (T not depending on acc)
and, later in the same block, an all-parallel linalg.generic F over the same loops whose body
computes the same term T from the same buffers through the same indexing maps, and writes
one buffer O of T's element type with the identity map without reading it; no op between
them touches O. Only
terms with a transcendental function (math.*) are worth a store and a load.
"""
from __future__ import annotations

from mlir import ir
from ..dialects.upstream import linalg

from .base import ModulePass, register
from .cpu_loops import loop_ranges
from ..dialects.ir_helpers import (MEMREF_VIEWS, REDUCTION, is_identity_map, iterator_kinds,
                                   view_root)


def _reduces(op) -> bool:
    return REDUCTION in iterator_kinds(op)


def generic_parts(op):
    """A linalg.generic's (indexing maps, inputs, outputs)."""
    return (list(ir.ArrayAttr(op.attributes["indexing_maps"])), *linalg_operands(op))


def linalg_operands(op):
    """A linalg op's (inputs, outputs): a generic's, a fill's."""
    n_in = ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])[0]
    operands = list(op.operands)
    return operands[:n_in], operands[n_in:]


def generic_body(op):
    """A linalg.generic's one block."""
    return op.regions[0].blocks[0]


def clone_body(block, remap: dict):
    """Clone a generic body's ops (not its yield) at the insertion point, their operands
    through `remap` (which gains their results); the value the body yields, as cloned."""
    return clone_body_values(block, remap)[0]


def clone_body_values(block, remap: dict) -> list:
    """clone_body for a body of any number of outputs: every value it yields, as cloned."""
    ops = [o.operation for o in block.operations]
    for op in ops[:-1]:
        copy = op.clone()
        for k, v in enumerate(copy.operands):
            if v in remap:
                copy.operands[k] = remap[v]
        remap.update(zip(op.results, copy.results))
    return [remap.get(v, v) for v in ops[-1].operands]


class _Keys:
    """Structural keys of the values in a generic's body: equal keys compute equal values
    (block arguments stand for the operand and indexing map they read)."""

    def __init__(self, op):
        maps, ins, _ = generic_parts(op)
        body = generic_body(op)
        self.ops = {o.operation for o in body.operations}
        self.memo = {}
        for k, arg in enumerate(body.arguments):
            self.memo[arg] = ("in", ins[k], str(maps[k])) if k < len(ins) else ("out", k)

    def key(self, value):
        if value in self.memo:
            return self.memo[value]
        owner = value.owner
        if isinstance(owner, ir.Block) or owner.operation not in self.ops:
            k = ("outside", value)
        else:
            op = owner.operation
            names = [a if isinstance(a, str) else a.name for a in op.attributes]
            attrs = tuple(sorted((n, str(op.attributes[n])) for n in names))
            k = (op.name, attrs, tuple(self.key(v) for v in op.operands),
                 list(op.results).index(value))
        self.memo[value] = k
        return k


def _depends_on(value, arg, body_ops):
    owner = value.owner
    if isinstance(owner, ir.Block):
        return value == arg
    op = owner.operation
    if op not in body_ops:
        return False
    return any(_depends_on(v, arg, body_ops) for v in op.operands)


def _has_math(value, body_ops):
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation not in body_ops:
        return False
    op = owner.operation
    return op.name.startswith("math.") or any(_has_math(v, body_ops) for v in op.operands)


def _summed_term(s):
    """(T, accumulator index) when S's single output accumulates acc + T, else None."""
    maps, ins, outs = generic_parts(s)
    if len(outs) != 1 or not _reduces(s):
        return None
    body = generic_body(s)
    ops = [o.operation for o in body.operations]
    yielded = ops[-1].operands[0]
    combine = yielded.owner
    if isinstance(combine, ir.Block) or combine.operation.name != "arith.addf":
        return None
    acc = body.arguments[len(ins)]
    a, b = combine.operation.operands
    term = b if a == acc else a if b == acc else None
    body_ops = set(ops)
    if term is None or _depends_on(term, acc, body_ops) or not _has_math(term, body_ops):
        return None
    return term


def _find_pair(block):
    ops = [o.operation for o in block.operations]
    for i, s in enumerate(ops):
        if s.name != "linalg.generic":
            continue
        term = _summed_term(s)
        if term is None:
            continue
        want = _Keys(s).key(term)
        for f in ops[i + 1:]:
            if f.name != "linalg.generic":
                continue
            match = _matching_value(s, f, want, term)
            if match is not None:
                return s, f, term, match
    return None


def _matching_value(s, f, want, term):
    if _reduces(f):
        return None
    if loop_ranges(s) is None or loop_ranges(f) is None:
        return None
    if loop_ranges(s)[0] != loop_ranges(f)[0]:
        return None
    maps, ins, outs = generic_parts(f)
    if len(outs) != 1:
        return None
    out_map = ir.AffineMapAttr(maps[-1]).value
    if not is_identity_map(out_map):
        return None
    if ir.MemRefType(outs[0].type).element_type != term.type:
        return None
    body = generic_body(f)
    if list(body.arguments[len(body.arguments) - 1].uses):
        return None  # F reads its output's old values, which the stored terms would replace
    fkeys = _Keys(f)
    for op in reversed([o.operation for o in generic_body(f).operations]):
        for r in op.results:
            if fkeys.key(r) == want:
                return r
    return None


def _untouched_between(s, f, buffer):
    """S does not read `buffer`, and no op strictly between S and F accesses it or a view of
    it."""
    base = view_root(buffer)
    if any(view_root(v) == base for v in s.operands if isinstance(v.type, ir.MemRefType)):
        return False
    ops = [o.operation for o in s.block.operations]
    for op in ops[ops.index(s) + 1:ops.index(f)]:
        if op.name in MEMREF_VIEWS:
            continue  # no access
        if any(isinstance(v.type, ir.MemRefType) and view_root(v) == base for v in op.operands):
            return False
    return True


def _hoist_definition(value, before):
    """Move the op defining `value` (a view of outside buffers) before `before` if needed."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return True
    op = owner.operation
    if op.block != before.block:
        return True
    ops = [o.operation for o in before.block.operations]
    if ops.index(op) < ops.index(before):
        return True
    if op.name != "memref.subview":
        return False
    for v in op.operands:
        if not _hoist_definition(v, before):
            return False
    op.move_before(before)
    return True


def _store_term(s, f, term, match):
    maps, ins, outs = generic_parts(s)
    _, _, (out,) = generic_parts(f)
    if not _untouched_between(s, f, out) or not _hoist_definition(out, s):
        return False
    n_dims = ir.AffineMapAttr(maps[0]).value.n_dims
    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(n_dims))
    iterators = list(ir.ArrayAttr(s.attributes["iterator_types"]))
    with ir.InsertionPoint(s), s.location:
        new = linalg.GenericOp([], ins, [outs[0], out], ir.ArrayAttr.get(maps + [identity]),
                               ir.ArrayAttr.get(iterators))
        for name in ("ms.region",):
            if name in s.attributes:
                new.attributes[name] = s.attributes[name]
        old_body = generic_body(s)
        body = new.regions[0].blocks.append(*[a.type for a in old_body.arguments],
                                             ir.MemRefType(out.type).element_type)
    remap = dict(zip(old_body.arguments, body.arguments))
    with ir.InsertionPoint(body), s.location:
        linalg.YieldOp([clone_body(old_body, remap), remap[term]])
    s.erase()
    # F reads the stored term from its output instead of computing it.
    fbody = generic_body(f)
    match.replace_all_uses_with(fbody.arguments[len(fbody.arguments) - 1])
    changed = True
    while changed:
        changed = False
        for op in reversed([o.operation for o in fbody.operations][:-1]):
            if all(not list(r.uses) for r in op.results):
                op.erase()
                changed = True
    return True


@register
class StoreTerms(ModulePass):
    name = "ms-cpu-store-terms"
    summary = ("a term a reduction sums and a later loop recomputes (softmax's exponential) is "
               "written by the reduction into the later loop's output and read back (buffers)")

    def run(self, module):
        blocks = []

        def visit(op):
            if op.name == "linalg.generic":
                b = op.block
                if all(b != x for x in blocks):
                    blocks.append(b)
                return ir.WalkResult.SKIP
            return ir.WalkResult.ADVANCE
        module.walk(visit)
        for block in blocks:
            while True:
                pair = _find_pair(block)
                if pair is None or not _store_term(*pair):
                    break
