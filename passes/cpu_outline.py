"""ms-cpu-outline-loops: each top-level loop nest of a large function in a function of its own.

LLVM's loop passes recompute function-wide analyses (dominator trees, scalar evolution) for
every loop they change, so their cost grows with the number of loops times the size of the
function. A training step's entry holds every elementwise, reduction and transpose loop of
the program: in a ViT encoder layer's step, 111 top-level loop nests in a 9,600-line LLVM
function, which took 0.91 s in `opt -O3` and 0.65 s in `llc`. With each nest in a function
of its own, the same code took 0.34 s and 0.55 s. The outlined functions are `no_inline` (an
internal function with one call would be inlined straight back: ms-cpu-local-functions) and
take what the nest reads from the caller as arguments; constants are copied in, so that LLVM
still sees them.

The pass runs on buffers, after the loops exist (convert-linalg-to-loops) and before
ms-cpu-lower-forall, so that a parallel loop becomes an OpenMP region of the outlined
function. Functions with fewer than `min-loops` nests are left alone: there the call is all
the change would add.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import func

from ..dialects.capi import native_captured_uses
from ..dialects.ir_helpers import (add_passthrough, defined_functions, ops_of_kind, symbol_name,
                                  symbol_names, unique_symbol)
from ..dialects.ops.conv import WINDOWS_ATTR
from .base import ModulePass, register
from .outline import is_kernel
from .symbols import INTERNAL_LINKAGE

OUTLINED_ATTR = "ms.outlined_loop"  # marks the functions this pass made
# Ops without operands whose copies cost nothing: copied into an outlined function rather
# than passed to it, so that LLVM folds them there as it did in the caller.
_COPIED = ("arith.constant", "llvm.mlir.constant")


class _TopLevelChildren:
    """The ancestor of an op (itself included) that sits directly in a function's body,
    remembered per parent: the uses in one loop body share their climb (MobileNetV2's
    training step: 22,800 uses, ~90 ms climbing each from its op)."""

    def __init__(self, body_op):
        self.body_op, self.of_parent = body_op, {}

    def __call__(self, op):
        op = op.operation
        parent = op.parent
        if parent is None or parent == self.body_op:
            return op
        found = self.of_parent.get(parent)
        if found is None:
            found = self.of_parent[parent] = self(parent)
        return found


def _nests(fn) -> list:
    """The function's top-level ops that hold regions (loops, conditionals), in order."""
    return [op.operation for op in fn.regions[0].blocks[0].operations
            if len(op.operation.regions) > 0]


def _captured_uses(fn, nests) -> dict:
    """{nest: [(value, [uses inside the nest])]} for the values defined at the function's top
    level (its arguments, the results of its top-level ops) that the nests (_nests(fn)) read,
    in the order the values are defined: found in C (dialects/_structure.c; MobileNetV2's
    step: 983 nests, 0.25 s in Python), else walked here."""
    native = native_captured_uses()
    if native is None:
        return _captured_uses_walked(fn, nests)
    arguments = fn.regions[0].blocks[0].arguments
    operation = ir.Operation._CAPICreate

    def value(definer, index):
        return arguments[index] if definer is None else operation(definer).results[index]
    return {nest: [(value(definer, index), [(operation(user), number) for user, number in uses])
                   for definer, index, uses in found]
            for nest, found in zip(nests, native(fn.operation._CAPIPtr))}


def _captured_uses_walked(fn, nests) -> dict:
    found = {n: {} for n in nests}
    body = fn.regions[0].blocks[0]
    values = list(body.arguments) + [r for op in body.operations for r in op.results]
    top_level_child = _TopLevelChildren(fn.operation)
    for v in values:
        owner = _defining_op(v)
        for use in list(v.uses):
            nest = top_level_child(use.owner)
            if nest in found and (owner is None or nest != owner):
                found[nest].setdefault(v, []).append((use.owner, use.operand_number))
    return {n: list(uses.items()) for n, uses in found.items()}


def _defining_op(v):
    return v.owner.operation if isinstance(v, ir.OpResult) else None


# Views that only regroup a buffer's dimensions: hoisted out of a nest when their source is
# the caller's, so the outlined function takes the view the nest reads.
_RESHAPES = ("memref.expand_shape", "memref.collapse_shape")


def _hoist_reshapes(fn, nest):
    """Move the reshapes inside `nest` of values the function defines at its top level to
    just before `nest`. A depthwise convolution's forward reshaped the weight argument inside
    its per-image loop, its input gradient read a flipped weight already of that shape: the
    same nest but for a 4-D or a 5-D argument (and so the argument order), which
    ms-cpu-merge-loops could not merge (MobileNetV2's step: 6 such pairs, ~25 ms of LLVM
    each)."""
    body = fn.regions[0].blocks[0]
    for op in ops_of_kind(nest, *_RESHAPES):
        source = op.operands[0]
        defined_above = (source.owner == body if isinstance(source.owner, ir.Block)
                         else source.owner.operation.parent == fn.operation)
        if defined_above and len(op.operands) == 1:
            op.operation.move_before(nest)


def _outline_nest(nest, captured, name: str, module_block, replaced: dict):
    """Move `nest` into a private function `name` and call it in its place. `replaced` maps
    the results of nests outlined before to the results of their calls (and gains
    `nest`'s)."""
    copied, passed = [], []
    for v, uses in captured:
        owner = _defining_op(v)
        (copied if owner is not None and owner.name in _COPIED else passed).append((v, uses))
    passed = _argument_order(nest, passed)
    results = list(nest.results)
    loc = nest.location
    with ir.InsertionPoint(module_block), loc:
        fn = func.FuncOp(name, ([v.type for v, _ in passed], [r.type for r in results]),
                         visibility="private")
        fn.attributes[OUTLINED_ATTR] = ir.UnitAttr.get()
        entry = fn.add_entry_block()
    with ir.InsertionPoint(nest), loc:
        call = func.CallOp([r.type for r in results], ir.FlatSymbolRefAttr.get(name),
                           [replaced.get(v, v) for v, _ in passed])
    for old, new in zip(results, call.results):
        old.replace_all_uses_with(new)
        replaced[old] = new
    with ir.InsertionPoint(entry), loc:
        for (_, uses), arg in zip(passed, entry.arguments):
            _rewire(uses, arg)
        for v, uses in copied:
            _rewire(uses, _defining_op(v).clone().results[0])
        ret = func.ReturnOp(results)
    nest.move_before(ret)


def _argument_order(nest, passed) -> list:
    """The values the nest reads, `passed` ([(value, uses)]), in the order of the outlined
    function's arguments: by where the nest first uses each (walk order, then operand
    number), so that two copies of one nest take their arguments in one order whatever the
    caller defined first, and ms-cpu-merge-loops finds them the same. (A ResNet block's two
    forward convolutions read the step's input and a computed value: in the order of
    definition, the first was the first argument of one nest's function and the third of
    the other's; a convolution's forward nest and its input gradient's, both subviews of an
    input and an output, took them in opposite orders. LLVM compiled the same nest twice.)"""
    names = {owner.name for _, uses in passed for owner, _ in uses}
    position = {op: i for i, op in enumerate(ops_of_kind(nest, *names))}
    return sorted(passed, key=lambda item: min(
        (position.get(owner.operation, len(position)), number) for owner, number in item[1]))


def _rewire(uses, value):
    for owner, operand_number in uses:
        owner.operands[operand_number] = value


@register
class OutlineLoops(ModulePass):
    name = "ms-cpu-outline-loops"
    summary = ("move each top-level loop nest (an op with regions) of a function holding at "
               "least min-loops of them into a private no_inline function of its own")
    options = {"min-loops": 8}

    def run(self, module):
        block = module.regions[0].blocks[0]
        taken = symbol_names(module)
        for fn in defined_functions(module):
            if is_kernel(fn) or OUTLINED_ATTR in fn.attributes:
                continue
            nests = _nests(fn)
            if len(nests) < self.opts["min-loops"] or len(fn.regions[0].blocks) != 1:
                continue
            for nest in nests:
                _hoist_reshapes(fn, nest)
            captured, replaced = _captured_uses(fn, nests), {}
            base = symbol_name(fn)
            for i, nest in enumerate(nests):
                _outline_nest(nest, captured[nest], unique_symbol(taken, f"{base}__loop{i}"),
                              block, replaced)


@register
class LocalFunctions(ModulePass):
    name = "ms-cpu-local-functions"
    summary = ("kernel functions, outlined loop nests and a convolution's shared image windows "
               "get internal linkage and noinline: nothing outside the module calls them")
    # The ExecutionEngine (now the fallback where LLVM's C API is missing) gives every
    # external function a packed-argument wrapper: for the 135 kernels and loop nests of a
    # ViT step these wrappers took 0.9 s of code generation. Internal, a function called
    # once would be inlined back into its caller (noinline).

    def run(self, module):
        internal = ir.Attribute.parse(INTERNAL_LINKAGE)
        for fn in defined_functions(module):
            if not (is_kernel(fn) or OUTLINED_ATTR in fn.attributes
                    or WINDOWS_ATTR in fn.attributes):
                continue
            fn.attributes["llvm.linkage"] = internal
            add_passthrough(fn, "noinline")
