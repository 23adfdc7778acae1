"""ms-canonicalize: dead-code elimination and CSE for ms ops.

IRDL ops carry no traits, so upstream canonicalize/cse treat them as having side effects and
keep them. The registry knows which ops are pure (`OpDef.pure`).
"""
from ..dialects import ops as _ops  # noqa: F401  (fills the registry)
from ..dialects.registry import OPS
from .base import ModulePass, register
from ..dialects.ir_helpers import functions


def _is_pure(op) -> bool:
    opdef = OPS.get(op.operation.name)
    return opdef is not None and opdef.pure and not len(op.regions)


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
        if _is_pure(op) and all(not list(r.uses) for r in op.results):
            op.erase()
            removed += 1
    return removed


@register
class MsCanonicalize(ModulePass):
    name = "ms-canonicalize"
    summary = "remove dead and duplicate ms ops"

    def run(self, module):
        for fn in functions(module):
            for block in fn.regions[0].blocks:
                simplify_block(block)
