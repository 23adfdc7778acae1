"""ms-expand-composites: a composite op (one whose OpDef has an `expand` rule: training-mode
BatchNorm, dialects/ops/normalization.py) becomes the ms ops it stands for.

A composite op exists for its gradient rule. Once ms-autodiff has built the backward (and
ms-inline has inlined the generated functions), the op is replaced by its composition, built
by the same GradCtx builders as gradient rules, at the op's location: ms-fuse then fuses its
elementwise parts with their neighbours, and ms-canonicalize merges the values it shares with
other code. The rule's result must have the op's type. No op without a lowering is left for
convert-ms-to-linalg.
"""
from __future__ import annotations

from mlir import ir

from ..dialects import ops as _ops  # noqa: F401  (fills the registry)
from ..dialects.grad import GradCtx
from ..dialects.ir_helpers import ops_of_kind
from ..dialects.registry import OPS, DTypeError, ShapeError
from .base import ModulePass, fail, register


def expand(op):
    """Replace the composite `op` by its expansion (a located error if it cannot be)."""
    name = op.name
    opdef = OPS[name]
    ctx, unknown = GradCtx.of(op, opdef)
    if unknown is not None:
        fail(op, f"'{name}' op needs a compile-time constant '{unknown}' to be expanded")
    with ir.InsertionPoint(op):
        try:
            value = opdef.expand(ctx, *ctx.inputs)
        except (ShapeError, DTypeError) as e:
            fail(op, f"expansion of '{name}' failed: {e}")
    if value.type != op.results[0].type:
        fail(op, f"expansion of '{name}' built {value.type}, not the op's {op.results[0].type}")
    op.results[0].replace_all_uses_with(value)
    op.erase()


@register
class ExpandComposites(ModulePass):
    name = "ms-expand-composites"
    summary = ("replace composite ops (an `expand` rule: BatchNorm in training) by the ms ops "
               "they stand for, once their gradients are built")

    def run(self, module):
        names = [name for name, opdef in OPS.items() if opdef.expand is not None]
        for op in ops_of_kind(module, *names):
            expand(op)
