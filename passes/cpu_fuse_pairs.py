"""ms-cpu-fuse-elementwise-pairs: two elementwise loops over the same elements, the second
reading what the first writes, become one loop writing both outputs (buffers).

ms-fuse fuses a chain of elementwise ops into one loop nest, but a value that is also
returned or stored (an optimizer's new momentum, which the parameter update then reads)
ends a region: Momentum's update is two loops per parameter, v' = v * m + g, then
p' = p - lr * v', each loop compiled by LLVM with its own vectorized body, remainder and
alias checks, and v' written by the first and read back by the second. A ResNet block's
step updates 12 parameters: 24 loops in one OpenMP function, ~44 ms of LLVM (single
thread) for a few microseconds of work.

The pair: a linalg.generic G1, all loops parallel, one output written through the identity
map; later in the same block an all-parallel linalg.generic G2 over the same loops that
reads G1's output through the identity map and writes one output through it. Between them
only deallocations of buffers G2 does not use. G2's operands exist before G1 (the fused
loop takes G1's place), none of G2's other inputs views G1's output, and G2's output views
none of G1's inputs: then iteration i of the fused loop reads and writes exactly what the
i-th iterations of G1 and G2 did, in the same order.
"""
from __future__ import annotations

from mlir import ir

from ..dialects.ir_helpers import (PARALLEL, defined_before, defined_functions,
                                   is_identity_map, iterator_kinds, may_alias, view_root)
from ..dialects.lowering import REGION_ATTR
from ..dialects.upstream import linalg
from .base import ModulePass, register
from .cpu_terms import clone_body, generic_body, generic_parts

_GENERIC = "linalg.generic"


def _elementwise(op) -> bool:
    """An all-parallel linalg.generic of one output written through the identity map, its
    body free of nested regions."""
    if op.name != _GENERIC or any(k != PARALLEL for k in iterator_kinds(op)):
        return False
    maps, _, outs = generic_parts(op)
    return (len(outs) == 1 and is_identity_map(ir.AffineMapAttr(maps[-1]).value)
            and not any(len(o.regions) for o in generic_body(op).operations))


def _may_view(values, buffer) -> bool:
    """Whether a memref among `values` may be a view of `buffer`'s buffer (may_alias)."""
    root = view_root(buffer)
    return any(may_alias(view_root(v), root) for v in values
               if isinstance(v.type, ir.MemRefType))


def _partner(g1, ops: list, position: dict):
    """The op G2 that G1 (ops[position[g1]]) fuses with, or None."""
    _, ins1, (out1,) = generic_parts(g1)
    for op in ops[position[g1] + 1:]:
        if op.name == "memref.dealloc":
            continue
        if not _elementwise(op) or list(op.attributes["iterator_types"]) != list(
                g1.attributes["iterator_types"]):
            return None
        maps2, ins2, (out2,) = generic_parts(op)
        if out2.type != out1.type or out1 not in ins2:
            return None
        reading = [ir.AffineMapAttr(maps2[k]).value for k, v in enumerate(ins2) if v == out1]
        others = [v for v in ins2 if v != out1]
        freed = [d.operands[0] for d in ops[position[g1] + 1:position[op]]]
        if (not all(is_identity_map(m) for m in reading)
                or _may_view(others, out1) or _may_view(ins1 + [out1], out2)
                or any(_may_view(others + [out2, out1], f) for f in freed)
                or not all(defined_before(v, g1, position) for v in others + [out2])):
            return None
        return op
    return None


def _fuse(g1, g2):
    """One generic in G1's place computing both bodies, writing both outputs."""
    maps1, ins1, (out1,) = generic_parts(g1)
    maps2, ins2, (out2,) = generic_parts(g2)
    kept = [k for k, v in enumerate(ins2) if v != out1]
    maps = maps1[:-1] + [maps2[k] for k in kept] + [maps1[-1], maps2[-1]]
    body1, body2 = generic_body(g1), generic_body(g2)
    with ir.InsertionPoint(g1), g1.location:
        fused = linalg.GenericOp([], ins1 + [ins2[k] for k in kept], [out1, out2],
                                 ir.ArrayAttr.get(maps), g1.attributes["iterator_types"])
        if REGION_ATTR in g1.attributes:
            fused.attributes[REGION_ATTR] = g1.attributes[REGION_ATTR]
        args1, args2 = list(body1.arguments), list(body2.arguments)
        body = fused.regions[0].blocks.append(
            *[a.type for a in args1[:-1]], *[args2[k].type for k in kept],
            args1[-1].type, args2[-1].type)
    new = list(body.arguments)
    n1 = len(ins1)
    remap = dict(zip(args1[:-1], new[:n1]))
    remap[args1[-1]] = new[-2]
    with ir.InsertionPoint(body), g1.location:
        first = clone_body(body1, remap)
        remap.update({args2[k]: new[n1 + i] for i, k in enumerate(kept)})
        remap.update({args2[k]: first for k, v in enumerate(ins2) if v == out1})
        remap[args2[-1]] = new[-1]
        second = clone_body(body2, remap)
        linalg.YieldOp([first, second])
    g2.erase()
    g1.erase()


@register
class FuseElementwisePairs(ModulePass):
    name = "ms-cpu-fuse-elementwise-pairs"
    summary = ("an all-parallel linalg.generic and a later one over the same loops reading its "
               "output become one writing both outputs (buffers)")

    def run(self, module):
        for fn in defined_functions(module):
            for block in fn.regions[0].blocks:
                _fuse_block(block)


def _fuse_block(block):
    """One pass over the block (a fused loop has two outputs: it pairs no further; an
    erased G2 is skipped by its position, never touched)."""
    ops = [o.operation for o in block.operations]
    position = {op: k for k, op in enumerate(ops)}
    erased = set()
    for k, op in enumerate(ops):
        if k not in erased and _elementwise(op):
            partner = _partner(op, ops, position)
            if partner is not None:
                erased.add(position[partner])
                _fuse(op, partner)
