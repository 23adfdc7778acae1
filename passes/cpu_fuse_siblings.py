"""ms-cpu-fuse-sibling-loops: two loops over the same iteration space that read a common
input and do not depend on each other become one loop writing both outputs (buffers).

ms-fuse makes a region of an op and its producers; two reductions of the same data are two
regions: BatchNorm's backward sums dy and dy * x_hat over the batch and image (two loop
nests reading the same four 32x64x56x56 tensors in a ResNet block's step, ~100 MB each),
and each nest is lowered, outlined and compiled by LLVM on its own. As one nest the inputs
are read once and the shared terms computed once (LLVM's CSE merges the two bodies' common
operations), and there is one function less for LLVM.

The pair: linalg.generic G1 and a later G2 in the same block with the same iterator types,
the same loop sizes and the same indexing maps for their outputs, sharing an input (the
same value through the same map), their bodies free of nested regions. G2 reads nothing G1
writes and writes nothing G1 reads or writes (may_alias on the views' root buffers). The
fused loop takes G1's place, so what G2 needs that is made between them (its outputs'
allocations and zero fills, views of its operands) moves before G1; everything else between
them stays, and must be an allocation, a deallocation, a view, a constant, or a linalg fill
or generic that neither writes what G2 reads nor touches what G2 writes. Each output is
computed by its own loop body with the same iteration order: results are bitwise the same.
"""
from __future__ import annotations

import bisect

from mlir import ir

from ..dialects.ir_helpers import (MEMREF_VIEWS, defined_before, defined_functions,
                                   loop_sizes, may_alias, view_root)
from ..dialects.lowering import REGION_ATTR
from ..dialects.upstream import linalg
from .base import ModulePass, register
from .cpu_terms import (clone_body_values, generic_body, generic_parts,
                        linalg_operands)

_GENERIC = "linalg.generic"
# Ops between G1 and G2 looked at before giving up on a partner.
WINDOW = 24
_PURE = frozenset(MEMREF_VIEWS) | {"arith.constant"}
_ALLOCATIONS = frozenset(("memref.alloc", "memref.alloca"))


class _Loop:
    """What pairing needs of a generic, read once: the key of its iteration space (iterator
    types, the outputs' map and shape: loops that may fuse share it), the (input, map) pairs it
    reads, its inputs and outputs; its loop sizes and whether its body is plain (no nested
    region) are read only for a loop that has a sibling."""
    __slots__ = ("op", "space", "reads", "ins", "outs", "maps", "_sizes")

    def __init__(self, op, maps, ins, outs):
        self.op, self.maps, self.ins, self.outs = op, maps, ins, outs
        self.space = (op.attributes["iterator_types"], maps[len(ins)],
                      tuple(ir.ShapedType(outs[0].type).shape))
        self.reads = frozenset(zip(ins, maps))
        self._sizes = None

    def sizes(self) -> tuple:
        if self._sizes is None:
            self._sizes = tuple(loop_sizes([ir.AffineMapAttr(m).value for m in self.maps],
                                           self.ins + self.outs))
        return self._sizes

    def fusable(self) -> bool:
        """Static loop sizes (two dynamic sizes need not be equal), a plain body."""
        return (None not in self.sizes()
                and not any(ir.ShapedType.is_dynamic_size(n) for n in self.sizes())
                and not any(len(o.regions) for o in generic_body(self.op).operations))


def _describe(op) -> _Loop | None:
    """The generic's _Loop, or None if it is not one with all outputs through one map."""
    if op.name != _GENERIC:
        return None
    maps, ins, outs = generic_parts(op)
    if len(set(maps[len(ins):])) != 1:  # (attributes are uniqued: equal ones are one)
        return None
    return _Loop(op, maps, ins, outs)


def _roots(values) -> list:
    return [view_root(v) for v in values if isinstance(v.type, ir.MemRefType)]


def _touches(values, roots) -> bool:
    """Whether a memref among `values` may view one of the buffers `roots`."""
    return any(may_alias(r, s) for r in _roots(values) for s in roots)


def _siblings(a: _Loop, b: _Loop) -> bool:
    """Same iteration space, a common input, and b reads nothing a writes and writes
    nothing a reads or writes."""
    return (a.space == b.space and not a.reads.isdisjoint(b.reads)
            and a.sizes() == b.sizes() and a.fusable() and b.fusable()
            and not _touches(b.ins, _roots(a.outs))
            and not _touches(b.outs, _roots(a.ins + a.outs)))


def _hoisted(g1, g2, between: list, position: dict):
    """The ops between G1 and G2 that must move before G1 (in order), or None where an op
    between them keeps the two apart."""
    _, ins2, outs2 = generic_parts(g2)
    ins_roots, out_roots = _roots(ins2), _roots(outs2)
    span = set(between)

    def made_between(values):
        return {v.owner.operation for v in values
                if not isinstance(v.owner, ir.Block) and v.owner.operation in span}
    needed = made_between(ins2 + outs2)
    for op in reversed(between):  # what the needed ops need, and the fills of G2's outputs
        if op.name == "linalg.fill" and _touches(list(op.operands)[1:], out_roots):
            needed.add(op)
        if op in needed:
            needed.update(made_between(op.operands))
    for op in between:
        if op in needed:
            if not (op.name in _PURE or op.name in _ALLOCATIONS or op.name == "linalg.fill"):
                return None
            continue
        if op.name in _PURE or op.name in _ALLOCATIONS:
            continue
        if op.name == "memref.dealloc":
            if _touches(list(op.operands), ins_roots + out_roots):
                return None
            continue
        if op.name not in (_GENERIC, "linalg.fill"):
            return None
        ins, outs = linalg_operands(op)
        if _touches(outs, ins_roots) or _touches(ins + outs, out_roots):
            return None
    moved = [op for op in between if op in needed]
    inside = set(moved)
    if not all(defined_before(v, g1, position) or v.owner.operation in inside
               for op in moved for v in op.operands if not isinstance(v.owner, ir.Block)):
        return None
    return moved


def _partner(g1, ops: list, position: dict, loops: dict, by_space: dict):
    """(G2, the ops to move before G1) for G1 = ops[position[g1]], or None (`loops`: the
    fusable generics' _Loop by position, `by_space`: their positions by iteration space,
    ascending)."""
    start, first = position[g1] + 1, loops[position[g1]]
    candidates = by_space[first.space]
    for k in candidates[bisect.bisect_left(candidates, start):]:
        if k >= start + WINDOW:
            break
        if not _siblings(first, loops[k]):
            continue
        moved = _hoisted(g1, ops[k], ops[start:k], position)
        if moved is not None:
            return ops[k], moved
    return None


def _fuse(g1, g2):
    """One generic in G1's place: G1's inputs, G2's inputs that G1 does not read through
    the same map, G1's outputs then G2's; both bodies."""
    maps1, ins1, outs1 = generic_parts(g1)
    maps2, ins2, outs2 = generic_parts(g2)
    first_read = {(v, m): k for k, (v, m) in enumerate(zip(ins1, maps1))}
    kept = [k for k, v in enumerate(ins2) if (v, maps2[k]) not in first_read]
    maps = (maps1[:len(ins1)] + [maps2[k] for k in kept] + maps1[len(ins1):]
            + maps2[len(ins2):])
    body1, body2 = generic_body(g1), generic_body(g2)
    args1, args2 = list(body1.arguments), list(body2.arguments)
    with ir.InsertionPoint(g1), g1.location:
        fused = linalg.GenericOp([], ins1 + [ins2[k] for k in kept], outs1 + outs2,
                                 ir.ArrayAttr.get(maps), g1.attributes["iterator_types"])
        if REGION_ATTR in g1.attributes:
            fused.attributes[REGION_ATTR] = g1.attributes[REGION_ATTR]
        body = fused.regions[0].blocks.append(
            *[a.type for a in args1[:len(ins1)]], *[args2[k].type for k in kept],
            *[a.type for a in args1[len(ins1):]], *[a.type for a in args2[len(ins2):]])
    new = list(body.arguments)
    n_in = len(ins1) + len(kept)
    remap = dict(zip(args1[:len(ins1)], new))
    remap.update(zip(args1[len(ins1):], new[n_in:n_in + len(outs1)]))
    remap.update({args2[k]: new[len(ins1) + i] for i, k in enumerate(kept)})
    remap.update({args2[k]: new[first_read[(v, maps2[k])]] for k, v in enumerate(ins2)
                  if k not in kept})
    remap.update(zip(args2[len(ins2):], new[n_in + len(outs1):]))
    with ir.InsertionPoint(body), g1.location:
        yielded = clone_body_values(body1, remap) + clone_body_values(body2, remap)
        linalg.YieldOp(yielded)
    g2.erase()
    g1.erase()
    return fused.operation


@register
class FuseSiblingLoops(ModulePass):
    name = "ms-cpu-fuse-sibling-loops"
    summary = ("two linalg.generics over the same loops that share an input and do not depend "
               "on each other become one writing both outputs (buffers)")

    def run(self, module):
        for fn in defined_functions(module):
            for block in fn.regions[0].blocks:
                _fuse_block(block)


def _fuse_block(block):
    """Rounds over the block, each fusing the pairs it finds whose spans (G1 to G2) do not
    overlap, all chosen on the round's IR (a fusion changes nothing outside its span); a
    fused loop may take a third sibling in the next round. (Rescanning the block after each
    fusion took 1 s of MobileNetV2's step.)"""
    described = {}  # op -> _Loop or None, kept across rounds (ops live on but the pairs)
    while True:
        ops = [o.operation for o in block.operations]
        position = {op: i for i, op in enumerate(ops)}
        loops, by_space = {}, {}
        for k, op in enumerate(ops):
            if op not in described:
                described[op] = _describe(op)
            if described[op] is not None:
                loops[k] = described[op]
                by_space.setdefault(described[op].space, []).append(k)
        pairs, end = [], -1
        for k in sorted(loops):
            if k > end:
                found = _partner(ops[k], ops, position, loops, by_space)
                if found is not None:
                    pairs.append((ops[k], *found))
                    end = position[found[0]]
        if not pairs:
            return
        for g1, g2, moved in pairs:
            for m in moved:
                m.move_before(g1)
            del described[g1], described[g2]
            _fuse(g1, g2)
