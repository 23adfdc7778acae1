"""ms-inline: inline func.call of functions defined in the module, then drop private functions
nothing refers to any more.

Upstream's `inline` pass leaves these calls alone: it inlines an op only when its dialect
provides an inliner interface, and an IRDL dialect cannot (checked with
`mlir-opt --irdl-file=dialects/ms.irdl.mlir --inline`). ms functions are single-block and
side-effect free apart from ms.assign, so moving a callee's body to the call site is exact.
Inlined ops keep their own locations (the user's source lines).
"""
from __future__ import annotations

from mlir import ir

from .base import ModulePass, fail, register
from ..dialects.ir_helpers import (callee_name, functions_by_name, is_private, ops_of_kind,
                                   symbol_name)


def body_block(fn, user=None):
    """The single block of a defined function; a located error otherwise (at `user`, the op
    that needs the body, when given)."""
    name = symbol_name(fn)
    blocks = list(fn.regions[0].blocks)
    if len(blocks) != 1:
        what = "has no body" if not blocks else f"has {len(blocks)} blocks"
        fail(user or fn, f"function @{name} {what}; ms functions are a single block")
    return blocks[0]


def inline_call(call, callee):
    """Replace `call` by a copy of `callee`'s body."""
    copy = callee.operation.clone(ip=False)
    block = copy.regions[0].blocks[0]
    for arg, value in zip(block.arguments, call.operands):
        arg.replace_all_uses_with(value)
    ops = list(block.operations)
    for op in ops[:-1]:
        op.move_before(call)
    for old, new in zip(call.results, ops[-1].operands):
        old.replace_all_uses_with(new)
    call.erase()
    copy.erase()


class Inliner:
    """Inlines calls function by function, callees first; reports recursion. `prepare(fn,
    call)` runs on each callee before its body is inlined (ms-autodiff resolves its ms.grad
    ops there). Calls for which `keep(call)` is true are left in place, their callees
    prepared and inlined into all the same (ms-autodiff keeps the calls that carry a custom
    gradient: dialects/ops/custom.py)."""

    def __init__(self, module, prepare=None, keep=None):
        self.funcs = functions_by_name(module)
        self.prepare = prepare
        self.keep = keep
        self.state: dict = {}  # name -> "inlining" | "done"

    def inline_into(self, fn):
        name = symbol_name(fn)
        if self.state.get(name) == "done" or not len(fn.regions[0].blocks):
            return
        self.state[name] = "inlining"
        body_block(fn)
        # (at any depth: a gradient taken inside the body of a loop is a call there)
        for op in ops_of_kind(fn, "func.call"):
            target = callee_name(op)
            callee = self.funcs.get(target)
            if callee is None:
                fail(op, f"call to @{target}, which is not a function of this module")
            if self.state.get(target) == "inlining":
                fail(op, f"recursive call to @{target} cannot be inlined")
            body_block(callee, op)
            if self.prepare is not None:
                self.prepare(callee, op)
            self.inline_into(callee)
            if self.keep is None or not self.keep(op):
                inline_call(op, callee)
        self.state[name] = "done"


def referenced_symbols(module) -> set:
    names = set()

    def visit(op):
        for name in op.attributes:
            a = op.attributes[name]
            if isinstance(a, ir.FlatSymbolRefAttr):
                names.add(a.value)
        return ir.WalkResult.ADVANCE
    module.walk(visit)
    return names


def erase_unreferenced_private(module):
    """Erase private functions no symbol reference names (repeatedly: one may hold the last
    reference to another)."""
    while True:
        used = referenced_symbols(module)
        dead = [fn for name, fn in functions_by_name(module).items()
                if name not in used and is_private(fn)]
        if not dead:
            return
        for fn in dead:
            fn.operation.erase()


@register
class Inline(ModulePass):
    name = "ms-inline"
    summary = "inline calls of module functions; drop private functions left unreferenced"

    def run(self, module):
        inliner = Inliner(module)
        for fn in list(inliner.funcs.values()):
            inliner.inline_into(fn)
        erase_unreferenced_private(module)
