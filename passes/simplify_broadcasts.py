"""ms-simplify-broadcasts: explicit broadcasts that numpy broadcasting makes unnecessary.

Gradient rules return values of their operand's exact shape, so a reduction's gradient is an
explicit `ms.broadcast_to` (a mean's loss seed spread over the whole activation), which the
elementwise ops of the backward then combine with full-sized values. Inside a reduction's
loops ms-fuse cannot recompute an op that creates dimensions (nothing would span the reduced
loops), so such a broadcast was stored: a ResNet block step wrote its loss seed as a
32x64x56x56 tensor and read it back in two reductions. For an elementwise op (an OpDef with
a `scalar` rule, numpy broadcasting) with an operand `broadcast_to(a)`:
- when its other operands give the result its shape anyway, it reads `a` instead;
- otherwise it is computed on the operands before broadcasting, then broadcast
  (mul(broadcast_to(a), 2.0) -> broadcast_to(mul(a, 2.0))), so that the next op can drop it.
Static shapes only; unused broadcasts are left to ms-canonicalize.
"""
from __future__ import annotations

from mlir import ir

from ..dialects import ops as _ops  # noqa: F401  (fills the registry)
from ..dialects import shape_rules as rules
from ..dialects.builders import build_op, data_values, op_attrs, operand_groups, spec_of
from ..dialects.ir_helpers import ms_blocks
from ..dialects.registry import OPS
from ..dialects.symdim import has_dynamic
from .base import ModulePass, register


def _broadcast_source(value):
    """The operand of the static ms.broadcast_to producing `value`, or None."""
    owner = value.owner
    if not hasattr(owner, "name") or owner.name != "ms.broadcast_to":
        return None
    source = owner.operands[0]
    if has_dynamic(spec_of(value.type).shape) or has_dynamic(spec_of(source.type).shape):
        return None
    return source


def simplify(op) -> bool:
    """Rewrite one elementwise op whose operands include a broadcast; whether it did."""
    opdef = OPS[op.name]
    groups = operand_groups(opdef, op)
    data = data_values(opdef, groups)
    sources = [_broadcast_source(v) for v in data]
    if all(s is None for s in sources) or has_dynamic(spec_of(op.results[0].type).shape):
        return False
    inputs = [v if s is None else s for v, s in zip(data, sources)]
    shape = spec_of(op.results[0].type).shape
    if rules.broadcast_shapes(*(spec_of(v.type).shape for v in inputs)) == shape:
        for i, operand in enumerate(op.operands):
            if operand in data:
                op.operands[i] = inputs[data.index(operand)]
        return True
    smaller = build_op(op.name, inputs, op_attrs(opdef, op, groups), loc=op.location)
    spread = build_op("ms.broadcast_to", [smaller.result], {"shape": shape}, loc=op.location)
    op.results[0].replace_all_uses_with(spread.result)
    op.erase()
    return True


@register
class SimplifyBroadcasts(ModulePass):
    name = "ms-simplify-broadcasts"
    summary = ("elementwise ops read the operands of their explicit broadcasts (numpy "
               "broadcasting), or compute before broadcasting")

    def run(self, module):
        elementwise = {name for name, d in OPS.items() if d.scalar is not None}
        for block in ms_blocks(module):
            for op in list(block.operations):
                op = op.operation
                if op.name in elementwise and len(op.results) == 1:
                    with ir.InsertionPoint(op):
                        simplify(op)
