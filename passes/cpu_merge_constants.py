"""ms-cpu-merge-constant-variants: functions that differ only in integer constants become one
function that takes those constants as arguments.

A network repeats its layers at different sizes: MobileNetV2's inverted residual blocks run
the same loop nests on 16, 24, 32, ... channels and 32x32, 16x16, 8x8 images. Once the loops
are LLVM dialect, memrefs are pointers and sizes, and a static shape survives only in the
index constants of the loops' bounds and strides: the nests of two blocks are the same
function but for those constants. ms-cpu-merge-loops (upstream's duplicate-function-
elimination) merges only exact copies. MobileNetV2's training step compiled 477 functions,
435 of them the same as another but for constants (249 distinct); LLVM spends ~4 ms on even
the smallest function.

The pass groups the private llvm.funcs whose bodies are the same with their index, i32 and
i64 constants' values left out (dialects/_structure.c: one walk in C per function), keeps the
first of each group, makes its constants whose values differ in the group new arguments (its
other constants stay), passes each copy's values at the copy's calls and erases the copies.

A constant stays a constant (its values split the group instead) where LLVM needs it to be
one: a divisor or a remainder's modulus (LLVM turns division by a constant into a multiply
and shifts, by a variable into a ~25-cycle divide), an alloca's size (a variable size is a
dynamic stack allocation), an intrinsic's operand (some must be immediates), a constant
inside a region other than the function's and OpenMP's loops and parallel regions, and the
bound, step or stride of an innermost loop: LLVM's loop vectorizer needs those to see
consecutive or interleaved accesses, and picks its vector width and interleaving (the order
of a reduction's sums) by the trip count. MobileNetV2's training step with every differing
constant an argument: 74-81 -> 85-89 ms per step (2 threads, alternated runs) and different
rounding from the third step on; with the innermost loops' constants kept its losses are the
same to the bit. "Innermost" counts the loops LLVM will delete: a loop of one iteration (a
dimension of size 1) does not hide the loop around it.

Runs after the LLVM dialect is canonicalized (llvm.func(canonicalize,cse): equal constants
are one op per function), before the entries get their C interface names.
"""
from __future__ import annotations

from typing import NamedTuple

from mlir import ir

from ..dialects import capi
from ..dialects.ir_helpers import (callee_name, calls_by_callee, defined_functions, ops_of_kind,
                                   symbol_name)
from ..dialects.ops.conv import WINDOWS_ATTR
from ..dialects.upstream import llvm
from .base import ModulePass, register

# Function attributes that may differ within a group: the name, and descriptions of shapes
# (dropped from the kept function where its copies' differ): the windows functions' key
# (dialects/ops/conv.py reuses a windows function by it while lowering to linalg; here the
# shapes are the constants).
_DESCRIPTIONS = (WINDOWS_ATTR,)
_IGNORED_ATTRS = ("sym_name",) + _DESCRIPTIONS
# Users that need a constant operand at `position` (None: any operand) to stay constant.
_NEEDS_CONSTANT = {"llvm.udiv": 1, "llvm.sdiv": 1, "llvm.urem": 1, "llvm.srem": 1,
                   "llvm.alloca": None}
_NON_IMMEDIATE_INTRINSICS = ("llvm.intr.memset", "llvm.intr.memcpy", "llvm.intr.memmove",
                             "llvm.intr.umin", "llvm.intr.umax", "llvm.intr.smin",
                             "llvm.intr.smax")
# Ops whose regions a constant may sit in and still become an argument (not isolated from
# above: the function's arguments are visible inside).
_OPEN_REGIONS = ("llvm.func", "omp.parallel", "omp.wsloop", "omp.loop_nest")
# How index values are computed from an induction variable (what an index derived from it
# goes through), and the users through which a constant bounds or scales one.
_INDEX_ARITHMETIC = ("llvm.add", "llvm.sub", "llvm.mul", "llvm.shl", "llvm.or", "llvm.sext",
                     "llvm.zext", "llvm.trunc")
_BOUNDING = ("llvm.mul", "llvm.shl", "llvm.icmp")


def _trip_count_at_most_one(header) -> bool:
    """Whether a cf loop header compares its induction variable with a constant <= 1
    (convert-scf-to-cf's `icmp slt %iv, %bound` first; loops start at 0)."""
    ops = list(header.operations)
    if not ops or ops[0].name != "llvm.icmp" or not header.arguments:
        return False
    iv, bound = ops[0].operands[0], ops[0].operands[1]
    owner = bound.owner
    return (iv == header.arguments[0] and not isinstance(owner, ir.Block)
            and owner.name == "llvm.mlir.constant"
            and isinstance(owner.attributes["value"], ir.IntegerAttr)
            and ir.IntegerAttr(owner.attributes["value"]).value <= 1)


def _loops(region) -> list[tuple[int, int]]:
    """(header index, latch index) of the region's cf loops (back edges) of more than one
    iteration, by block order (convert-scf-to-cf places a loop's blocks after its header)."""
    blocks = list(region.blocks)
    index = {b: i for i, b in enumerate(blocks)}
    loops = []
    for i, block in enumerate(blocks):
        terminator = list(block.operations)[-1]
        for successor in terminator.successors:
            h = index.get(successor)
            if h is not None and h <= i and not _trip_count_at_most_one(blocks[h]):
                loops.append((h, i))
    return loops


def _innermost_induction_values(fn) -> set:
    """Induction variables (with the step's add) of innermost loops, and the index values
    computed from them."""
    seeds = []
    regions = [fn.regions[0]] + [op.regions[0] for op in ops_of_kind(fn, "omp.loop_nest")]
    for region in regions:
        loops = _loops(region)
        blocks = list(region.blocks)
        if not loops and region.owner.name == "omp.loop_nest":
            seeds.extend(blocks[0].arguments)
        for h, latch in loops:
            if not any(h < other <= latch for other, _ in loops):
                seeds.extend(blocks[h].arguments)
    derived, work = set(), list(seeds)
    while work:
        value = work.pop()
        if value in derived:
            continue
        derived.add(value)
        for use in value.uses:
            if use.owner.name in _INDEX_ARITHMETIC:
                work.append(use.owner.results[0])
    return derived


def _shapes_innermost_loop(constant, induction: set) -> bool:
    """Whether the constant is an innermost loop's bound, step or stride: compared with,
    added to or scaling its induction variable (or an index computed from it)."""
    for use in constant.results[0].uses:
        user = use.owner
        others = [v for i, v in enumerate(user.operands) if i != use.operand_number]
        if user.name in _BOUNDING and any(v in induction for v in others):
            return True
        if user.name == "llvm.add" and any(
                isinstance(v.owner, ir.Block) and v in induction for v in others):
            return True  # (the step, or an offset of the induction variable itself)
    return False


# A call's attributes that describe its callee and operands: the new call has its own.
_CALL_OPERAND_ATTRS = ("callee", "operandSegmentSizes")


class _Variant(NamedTuple):
    """One function of a group: its op, its constants' values and ops (signature order)."""
    fn: object
    values: list
    constants: list


def _function_key(fn) -> tuple:
    """The function's own attributes that must match for a merge (uniqued: compared by ==)."""
    attrs = fn.attributes
    return tuple(sorted((name, attrs[name]) for name in attrs if name not in _IGNORED_ATTRS))


def _may_vary(constant) -> bool:
    """Whether the llvm.mlir.constant op can be replaced by a function argument."""
    parent = constant.parent
    while parent.name != "llvm.func":
        if parent.name not in _OPEN_REGIONS:
            return False
        parent = parent.parent
    for use in constant.results[0].uses:
        user = use.owner
        name = user.name
        position = _NEEDS_CONSTANT.get(name, -1)
        if position is None or position == use.operand_number:
            return False
        if name.startswith("llvm.intr.") and name not in _NON_IMMEDIATE_INTRINSICS:
            return False
    return True


def _varying(group: list) -> list[int]:
    """The constant positions whose values differ within the group."""
    first = group[0].values
    return [i for i in range(len(first)) if any(v.values[i] != first[i] for v in group[1:])]


def _split(group: list) -> list[list]:
    """The group split by the values of its differing constants that must stay constants."""
    varying = _varying(group)
    induction = _innermost_induction_values(group[0].fn) if varying else set()
    pinned = [i for i in varying if not _may_vary(group[0].constants[i])
              or _shapes_innermost_loop(group[0].constants[i], induction)]
    if not pinned:
        return [group]
    parts: dict = {}
    for variant in group:
        parts.setdefault(tuple(variant.values[i] for i in pinned), []).append(variant)
    return list(parts.values())


def _groups(module, signature) -> list[list]:
    """Groups of two or more private functions the same but for constants."""
    by_structure: dict = {}
    for fn in defined_functions(module, "llvm.func"):
        if "sym_visibility" not in fn.attributes:  # (public: entries and C interfaces)
            continue
        words, values, capsules = signature(fn.operation._CAPIPtr)
        constants = [ir.Operation._CAPICreate(c) for c in capsules]
        key = (_function_key(fn), words)
        by_structure.setdefault(key, []).append(_Variant(fn, values, constants))
    return [part for group in by_structure.values() if len(group) > 1
            for part in _split(group) if len(part) > 1]


def _address_taken(module) -> set[str]:
    """Functions referred to other than as a direct call's callee."""
    return {ir.FlatSymbolRefAttr(op.attributes["global_name"]).value
            for op in ops_of_kind(module, "llvm.mlir.addressof")}


def _add_arguments(fn, constants: list):
    """Make `constants` (ops in fn) new trailing arguments of fn."""
    entry = fn.regions[0].blocks[0]
    ftype = ir.TypeAttr(fn.attributes["function_type"]).value
    for constant in constants:
        argument = entry.add_argument(constant.results[0].type, constant.location)
        constant.results[0].replace_all_uses_with(argument)
        constant.erase()
    inputs = [a.type for a in entry.arguments]
    fn.attributes["function_type"] = ir.TypeAttr.get(
        capi.llvm_function_type(capi.llvm_function_result(ftype), inputs))
    _extend_arg_attrs(fn, len(constants))


def _extend_arg_attrs(op, count: int):
    """Give a function's or a call's `count` new trailing arguments no attributes (the
    per-argument list must match the arguments)."""
    if "arg_attrs" in op.attributes:
        attrs = list(ir.ArrayAttr(op.attributes["arg_attrs"]))
        op.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs + [ir.DictAttr.get({})] * count)


def _call_with_values(call, callee: str, values: list, constants: list):
    """Replace `call` by a call of `callee` that passes `values` after its arguments, as
    constants of the types of `constants`."""
    loc = call.location
    with ir.InsertionPoint(call), loc:
        # (an llvm.mlir.constant of an index attribute is an i64: the attribute's type is
        # the result's here)
        extra = [llvm.constant(c.results[0].type, ir.IntegerAttr.get(c.results[0].type, v))
                 for c, v in zip(constants, values)]
        result = call.results[0].type if len(call.results) else None
        new = llvm.call(result, callee, list(call.operands) + extra)
    for name in call.attributes:  # (calling convention, tail call kind, memory effects, ...)
        if name not in _CALL_OPERAND_ATTRS:
            new.attributes[name] = call.attributes[name]
    _extend_arg_attrs(new, len(extra))
    for old, replacement in zip(call.results, new.results):
        old.replace_all_uses_with(replacement)
    call.erase()


def merge_group(group: list, calls: dict):
    """Keep the group's first function, with its differing constants as arguments; send every
    call of the group to it with the caller's values; erase the others."""
    kept = group[0]
    varying = _varying(group)
    name, constants = symbol_name(kept.fn), [kept.constants[i] for i in varying]
    for variant in group:
        values = [variant.values[i] for i in varying]
        for call in calls.get(symbol_name(variant.fn), []):
            _call_with_values(call, name, values, constants)
    _add_arguments(kept.fn, constants)
    for attr in _DESCRIPTIONS:
        if attr in kept.fn.attributes and any(
                attr not in v.fn.attributes or v.fn.attributes[attr] != kept.fn.attributes[attr]
                for v in group[1:]):
            del kept.fn.attributes[attr]
    for variant in group[1:]:
        _forget_calls(variant.fn, calls)
        variant.fn.erase()


def _forget_calls(fn, calls: dict):
    """Drop the calls inside `fn`, about to be erased, from `calls`."""
    for call in ops_of_kind(fn, "llvm.call"):
        if "callee" in call.attributes:
            sites = calls.get(callee_name(call), [])
            sites[:] = [c for c in sites if c != call]


@register
class MergeConstantVariants(ModulePass):
    name = "ms-cpu-merge-constant-variants"
    summary = ("private llvm.funcs that are the same but for index/i32/i64 constants become "
               "one that takes the differing constants as arguments")

    def run(self, module):
        signature = capi.native_signature()
        if signature is None:  # (the C extension was not built: no merging)
            return
        taken = _address_taken(module)
        calls = calls_by_callee(module, "llvm.call")
        for group in _groups(module, signature):
            group = [v for v in group if symbol_name(v.fn) not in taken]
            if len(group) > 1:
                merge_group(group, calls)
