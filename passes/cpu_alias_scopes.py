"""ms-cpu-distinct-buffers and ms-cpu-alias-scopes: tell LLVM which buffers of a loop
function or kernel never overlap, so that it vectorizes their loops without runtime checks.

LLVM sees an outlined loop nest's buffers as pointers that may overlap: each loop it
vectorizes starts with a check of every pair of pointers it writes and reads (a BatchNorm
backward's elementwise loop: 10 pairs) and keeps the scalar loop beside the vector one for
when they do. The parallel loops are worse off: their bodies run in the function that
OpenMP's translation outlines, which loads the pointers from a struct, so even `noalias`
arguments would not reach them. Alias scopes do: metadata on each load and store, which
stays with the instruction wherever it goes. A ResNet block's step: ~10% less of LLVM's time
(no checks, no scalar copies of the vector loops).

ms-cpu-distinct-buffers (buffers, after the loops are outlined and merged): for a private
function and every call of it, the memref arguments whose buffers (their views' roots,
may_alias) differ from each other's at every call site, greedily in argument order; their
aligned pointers' positions in the LLVM signature (a memref of rank r is 3 + 2r values: its
allocated and aligned pointers, offset, sizes, strides) go into the function's
`ms.distinct_pointers`, which the LLVM conversion keeps on the llvm.func.

ms-cpu-alias-scopes (LLVM dialect, after the functions are merged): one alias scope per such
pointer, in one domain per function; a load or store whose address is that pointer (through
getelementptrs) is in its scope and noalias with the others' scopes. Accesses through any
other pointer get no metadata, which LLVM reads as "may alias anything".
"""
from __future__ import annotations

from mlir import ir

from ..dialects.ir_helpers import (calls_by_callee, defined_functions, is_private, may_alias,
                                   ops_of_kind, symbol_name, view_root)
from .base import ModulePass, fail, register

DISTINCT_ATTR = "ms.distinct_pointers"
_ACCESSES = {"llvm.load": 0, "llvm.store": 1}  # op -> its address operand


def _aligned_pointers(fn) -> list | None:
    """For each argument of a func.func, the position of its aligned pointer among the
    llvm.func's arguments (None for a scalar), or None where an argument is neither a
    ranked memref nor a scalar."""
    positions, at = [], 0
    for t in ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).inputs:
        if isinstance(t, ir.MemRefType):
            positions.append(at + 1)
            at += 3 + 2 * ir.MemRefType(t).rank
        elif isinstance(t, (ir.IndexType, ir.IntegerType, ir.F16Type, ir.BF16Type,
                            ir.F32Type, ir.F64Type)):
            positions.append(None)
            at += 1
        else:
            return None
    return positions


def _distinct_arguments(calls, memref_args: list) -> list:
    """The memref arguments, in order, whose buffers differ from those of every argument
    chosen before at every call."""
    roots = [dict((k, view_root(call.operands[k])) for k in memref_args) for call in calls]
    chosen = []
    for k in memref_args:
        if all(not may_alias(r[k], r[j]) for r in roots for j in chosen):
            chosen.append(k)
    return chosen


@register
class DistinctBuffers(ModulePass):
    name = "ms-cpu-distinct-buffers"
    summary = ("records which memref arguments of a private function are different buffers "
               "at every call (ms.distinct_pointers, for ms-cpu-alias-scopes)")

    def run(self, module):
        calls = calls_by_callee(module)
        for fn in defined_functions(module):
            sites = calls.get(symbol_name(fn), [])
            positions = _aligned_pointers(fn) if is_private(fn) and sites else None
            if positions is None:
                continue
            memref_args = [k for k, p in enumerate(positions) if p is not None]
            chosen = _distinct_arguments(sites, memref_args)
            if len(chosen) > 1:
                fn.attributes[DISTINCT_ATTR] = ir.DenseI64ArrayAttr.get(
                    [positions[k] for k in chosen])


def _address_root(value):
    """The block argument an address is computed from through getelementptrs, or None."""
    while not isinstance(value.owner, ir.Block):
        op = value.owner.operation
        if op.name != "llvm.getelementptr":
            return None
        value = op.operands[0]
    return value


def _scopes(count: int) -> list:
    """`count` alias scopes of one new domain. (The bindings build neither; one parse makes
    the domain once, `distinct[0]` naming the same one in every scope.)"""
    domain = "#llvm.alias_scope_domain<id = distinct[0]<>>"
    text = ", ".join(f"#llvm.alias_scope<id = distinct[{k + 1}]<>, domain = {domain}>"
                     for k in range(count))
    return list(ir.ArrayAttr(ir.Attribute.parse(f"[{text}]")))


@register
class AliasScopes(ModulePass):
    name = "ms-cpu-alias-scopes"
    summary = ("loads and stores through the distinct pointers of ms.distinct_pointers get "
               "alias scopes: one per pointer, noalias with the others'")

    def run(self, module):
        for fn in module.regions[0].blocks[0].operations:
            if fn.operation.name != "llvm.func" or DISTINCT_ATTR not in fn.attributes:
                continue
            if len(fn.regions[0].blocks):  # (a declaration has nothing to annotate)
                _annotate(fn.operation, _distinct_positions(fn.operation))
            del fn.attributes[DISTINCT_ATTR]


def _distinct_positions(fn) -> list:
    """The argument positions DISTINCT_ATTR names on a defined llvm.func: a located error
    unless it is an array of distinct positions of pointer arguments (IR read from a file
    may say anything there: a position past the arguments was an IndexError)."""
    attr = fn.attributes[DISTINCT_ATTR]
    if not isinstance(attr, ir.DenseI64ArrayAttr):
        fail(fn, f"'{DISTINCT_ATTR}' must be an array<i64> of argument positions")
    positions = list(attr)
    arguments = fn.regions[0].blocks[0].arguments
    pointer = ir.Type.parse("!llvm.ptr", fn.context)
    for p in positions:
        if not 0 <= p < len(arguments) or arguments[p].type != pointer:
            fail(fn, f"'{DISTINCT_ATTR}' names argument {p}, which is not one of the "
                     f"function's {len(arguments)} arguments of type !llvm.ptr")
    if len(set(positions)) != len(positions):
        fail(fn, f"'{DISTINCT_ATTR}' names an argument twice")
    return positions


def _annotate(fn, positions: list):
    arguments = fn.regions[0].blocks[0].arguments
    scope_of = dict(zip((arguments[p] for p in positions), _scopes(len(positions))))
    others = {pointer: ir.ArrayAttr.get([s for p, s in scope_of.items() if p != pointer])
              for pointer in scope_of}
    for op in ops_of_kind(fn, *_ACCESSES):
        root = _address_root(op.operands[_ACCESSES[op.name]])
        if root is not None and root in scope_of:
            op.attributes["alias_scopes"] = ir.ArrayAttr.get([scope_of[root]])
            op.attributes["noalias_scopes"] = others[root]
