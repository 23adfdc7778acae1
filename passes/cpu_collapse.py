"""ms-cpu-collapse-dims: adjacent loops of a linalg.generic on buffers that every operand
walks contiguously become one loop.

convert-linalg-to-loops writes one scf.for per loop of a linalg op: a Conv2d's output
gradient (an elementwise op on 32 images of 32 channels of 28x28) is four loops whose
innermost runs 28 iterations, and the mean of its square reduces 4x28x28 positions in three
loops whose innermost sums 28 floats. LLVM vectorizes each innermost loop with a remainder
per row (28 = 16 + 12) and analyzes every loop of the nest. Where two adjacent loops have
the same iterator type and every operand either indexes both, as consecutive dims of
contiguous memory, or neither (a broadcast operand), the operands are collapsed
(memref.collapse_shape) and the two loops become one: those ops become loops of 784 and
3,136 iterations.

It runs on buffers after ms-cpu-parallelize (the threads' loops are made on the ops' shapes
as written) and before convert-linalg-to-loops. The op is changed in place (operands, maps
and iterator types; its body stays). It leaves alone ops whose body reads linalg.index,
whose maps are not plain dims and constants, operands with dynamic sizes or strides, and
matmul kernels (scheduled already).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import memref

from .base import ModulePass, register
from .outline import is_kernel
from ..dialects.ir_helpers import (collapsed_type, defined_functions, has_op_of_kind,
                                   indexing_maps, iterator_kinds, iterator_types_attr,
                                   ops_of_kind)


def _positions(amap):
    """{loop: result position} of a map whose results are dims and constants, or None."""
    found = {}
    for i, expr in enumerate(amap.results):
        expr = expr.maybe_downcast()
        if isinstance(expr, ir.AffineDimExpr):
            found[expr.position] = i
        elif not isinstance(expr, ir.AffineConstantExpr):
            return None
    return found


def _static(t) -> bool:
    if not isinstance(t, ir.MemRefType) or not t.has_static_shape:
        return False
    strides, offset = t.get_strides_and_offset()
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    return dynamic not in strides


def _joins(group, d, kinds, positions, types) -> bool:
    """Whether loop d can join the loops `group` (ending at d - 1): the same kind, and every
    operand indexes them all as consecutive dims of contiguous memory, or none of them."""
    if kinds[d] != kinds[group[0]]:
        return False
    loops = group + [d]
    for found, t in zip(positions, types):
        dims = [found.get(loop) for loop in loops]
        if all(p is None for p in dims):
            continue
        if None in dims or dims != list(range(dims[0], dims[0] + len(dims))):
            return False
        if collapsed_type(t, [dims]) is None:
            return False
    return True


def loop_groups(op) -> list[list[int]] | None:
    """The runs of the generic's loops that become one loop each, or None when no two
    loops join (or the op is not one this pass changes)."""
    if len(ir.ArrayAttr(op.attributes["iterator_types"])) < 2:
        return None  # (the cheap checks first: this runs on every generic of the module)
    types = [v.type for v in op.operands]
    if not all(_static(t) for t in types):
        return None
    positions = [_positions(m) for m in indexing_maps(op)]
    if any(p is None for p in positions) or has_op_of_kind(op, "linalg.index"):
        return None
    kinds = iterator_kinds(op)
    groups = [[0]] if kinds else []
    for d in range(1, len(kinds)):
        if _joins(groups[-1], d, kinds, positions, types):
            groups[-1].append(d)
        else:
            groups.append([d])
    return groups if len(groups) < len(kinds) else None


def _collapse(op, groups):
    """Collapse the operands along `groups` and rewrite the maps over the joined loops."""
    group_of = {d: g for g, group in enumerate(groups) for d in group}
    maps = indexing_maps(op)
    new_maps = []
    with ir.InsertionPoint(op), op.location:
        for index, (value, amap) in enumerate(zip(list(op.operands), maps)):
            reassociation, results = [], []
            for i, expr in enumerate(amap.results):
                expr = expr.maybe_downcast()
                if isinstance(expr, ir.AffineDimExpr):
                    g = group_of[expr.position]
                    if groups[g][0] != expr.position:
                        reassociation[-1].append(i)  # (the rest of the group's dims)
                        continue
                    results.append(ir.AffineDimExpr.get(g))
                else:
                    results.append(expr)
                reassociation.append([i])
            if any(len(r) > 1 for r in reassociation):
                t = collapsed_type(value.type, reassociation)
                op.operands[index] = memref.collapse_shape(t, value, reassociation)
            new_maps.append(ir.AffineMapAttr.get(ir.AffineMap.get(len(groups), 0, results)))
    kinds = iterator_kinds(op)
    op.attributes["indexing_maps"] = ir.ArrayAttr.get(new_maps)
    op.attributes["iterator_types"] = iterator_types_attr([kinds[g[0]] for g in groups])


@register
class CollapseDims(ModulePass):
    name = "ms-cpu-collapse-dims"
    summary = ("join adjacent loops of a linalg.generic on buffers that every operand walks "
               "contiguously (or broadcasts) into one loop")

    def run(self, module):
        for fn in defined_functions(module):
            if is_kernel(fn):
                continue
            for op in ops_of_kind(fn, "linalg.generic"):
                groups = loop_groups(op)
                if groups is not None:
                    _collapse(op, groups)
