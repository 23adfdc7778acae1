"""ms-canonicalize: dead-code elimination and CSE for ms ops.

IRDL ops carry no traits, so upstream canonicalize/cse treat them as having side effects and
keep them. The registry knows which ops are pure (`OpDef.pure`).

Blocks are simplified one by one, innermost first (the regions of loops and conditionals
before the block that holds them): an op is merged only with a twin in its own block, never
with one outside its region (which would move a computation across the region's boundary),
and a loop or conditional none of whose results is used, and whose regions hold only pure
ops, is removed as a whole.
"""
from mlir import ir

from ..dialects import ops as _ops  # noqa: F401  (fills the registry)
from ..dialects.registry import OPS, UPSTREAM
from .base import ModulePass, register
from ..dialects.ir_helpers import ms_blocks

# Upstream ops the frontend puts beside ms ops (loop bounds, indices, predicates), none with
# side effects, and the terminators of control-flow regions.
_GLUE = ("arith.", "tensor.extract", "tensor.from_elements", "scf.yield", "scf.condition")


def _is_pure(op) -> bool:
    opdef = OPS.get(op.operation.name)
    return opdef is not None and opdef.pure and not len(op.regions)


def _side_effect_free(op) -> bool:
    """A control-flow op whose regions hold only pure ms ops, glue and such ops again."""
    def clean(inner):
        name = inner.operation.name
        if name in OPS:
            return OPS[name].pure
        if name in UPSTREAM and UPSTREAM[name].holds_ms:
            return all(clean(o) for region in inner.regions for block in region.blocks
                       for o in block.operations)
        return name.startswith(_GLUE)
    return op.operation.name in UPSTREAM and UPSTREAM[op.operation.name].holds_ms and clean(op)


def _is_dead_glue(op) -> bool:
    """An index computation or scalar read the frontend or a loop's gradient made and
    nothing uses (not a terminator: those have no results)."""
    return len(op.results) > 0 and op.operation.name.startswith(_GLUE)


def _cse_key(op):
    return (op.operation.name, tuple(op.operands), tuple((n, op.attributes[n]) for n in op.attributes),
            tuple(r.type for r in op.results))


def simplify_block(block) -> int:
    """CSE then DCE within one block; returns the number of ops removed."""
    removed = 0
    seen = {}
    for op in list(block.operations):
        if not _is_pure(op):
            continue
        key = _cse_key(op)
        twin = seen.get(key)
        if twin is None:
            seen[key] = op
            continue
        for old, new in zip(op.results, twin.results):
            old.replace_all_uses_with(new)
        op.erase()
        removed += 1
    for op in reversed(list(block.operations)):
        if ((_is_pure(op) or _side_effect_free(op) or _is_dead_glue(op))
                and all(not list(r.uses) for r in op.results)):
            op.erase()
            removed += 1
    return removed


@register
class MsCanonicalize(ModulePass):
    name = "ms-canonicalize"
    summary = "remove dead and duplicate ms ops (and dead loops and conditionals)"

    def run(self, module):
        for block in ms_blocks(module, inner_first=True):
            simplify_block(block)
