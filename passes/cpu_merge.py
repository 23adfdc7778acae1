"""ms-cpu-merge-kernels and ms-cpu-merge-loops: matmul kernels, and loop nests outlined into
functions, that are the same but for their names become one.

A model repeats its layers: a ViT layer's q, k, v and output projections are four matmul
kernels of the same shapes and epilogue, so are their input and weight gradients (9 distinct
kernels of the 18 in a ViT layer's training step); a ResNet block's two 3x3 convolutions
make the same kernels twice. Each copy was scheduled (the transform interpreter) and
compiled by LLVM again. This pass compares the static kernel functions structurally
(operations, types, attributes and how values flow; locations and the fusion regions' ids
aside), sends the calls of each copy to the first and erases the copies.

It runs on buffers before the matmul schedule, which decides per kernel from its calls:
kernels merge only where those decisions come out the same for both (called from inside a
parallel loop or not), and a kernel whose B would be packed keeps its own single call
(pack_b rewrites its one call site; packed kernels are the large ones, where compiling a
copy costs little next to running it).

Outlined loop nests (ms-cpu-outline-loops) repeat the same way: a layer's forward nests and
their gradients once per layer or head, the same elementwise loop on buffers of one type.
A loop function takes what its nest reads as arguments, so nests on different buffers of one
type are one function. ms-cpu-merge-loops runs right after the outlining, before the parallel
loops become OpenMP regions. It and ms-cpu-merge-scheduled-kernels, which have no calling
context to weigh, leave the comparing to upstream's duplicate-function-elimination
(merge_duplicates).
"""
from __future__ import annotations

from mlir import ir

from ..dialects.ir_helpers import (calls_by_callee, defined_functions, function_type,
                                   in_parallel_loop, ops_of_kind, symbol_name)
from ..dialects.lowering import REGION_ATTR, region_kind
from . import cpu_target
from .base import ModulePass, register, run_upstream
from .cpu import CallSites, packs_b, strip_width
from .cpu_outline import OUTLINED_ATTR
from .outline import kernel_functions, static_kernel

# Function attributes that differ between copies of one kernel.
_NAMING = ("sym_name",)


def _attributes(op) -> dict:
    """An op's attributes for comparison: a fusion region by its kind, not its id."""
    found = {}
    attributes = op.attributes
    for name in attributes:
        attr = attributes[name]
        found[name] = _region_key(attr) if name == REGION_ATTR else attr
    return found


def _region_key(attr):
    """A fusion region compared by its kind (the whole attribute where it has none)."""
    kind = region_kind(attr)
    return attr if kind is None else kind


def _same_attributes(x, y) -> bool:
    """_attributes(a) == _attributes(b) for attribute maps x, y, without building the dicts
    (attributes are uniqued: == is a pointer comparison; this runs for every op compared)."""
    if len(x) != len(y):
        return False
    for name in x:
        if name not in y:
            return False
        if name == REGION_ATTR:
            if _region_key(x[name]) != _region_key(y[name]):
                return False
        elif x[name] != y[name]:
            return False
    return True


def _same_op(a, b, values: dict) -> bool:
    """Whether ops `a` and `b` are the same, their operands corresponding by `values` (a map
    from `a`'s side to `b`'s, which gains their results and block arguments)."""
    if (a.name != b.name or len(a.operands) != len(b.operands)
            or len(a.results) != len(b.results) or len(a.regions) != len(b.regions)
            or len(getattr(a, "successors", ())) or len(getattr(b, "successors", ()))):
        return False
    if any(values.get(u) != v for u, v in zip(a.operands, b.operands)):
        return False
    if [r.type for r in a.results] != [r.type for r in b.results]:
        return False
    if not _same_attributes(a.attributes, b.attributes):
        return False
    values.update(zip(a.results, b.results))
    return all(_same_region(r, s, values) for r, s in zip(a.regions, b.regions))


def _same_region(r, s, values: dict) -> bool:
    blocks_r, blocks_s = list(r.blocks), list(s.blocks)
    if len(blocks_r) != len(blocks_s):
        return False
    for x, y in zip(blocks_r, blocks_s):
        if [v.type for v in x.arguments] != [v.type for v in y.arguments]:
            return False
        values.update(zip(x.arguments, y.arguments))
    for x, y in zip(blocks_r, blocks_s):
        ops_x, ops_y = list(x.operations), list(y.operations)
        if len(ops_x) != len(ops_y) or not all(
                _same_op(p.operation, q.operation, values) for p, q in zip(ops_x, ops_y)):
            return False
    return True


def same_function(f, g) -> bool:
    """Whether functions `f` and `g` differ only in their names (and locations)."""
    attrs_f, attrs_g = (_attributes(fn) for fn in (f, g))
    for name in _NAMING:
        attrs_f.pop(name, None)
        attrs_g.pop(name, None)
    return attrs_f == attrs_g and _same_region(f.regions[0], g.regions[0], {})


def _shape_key(fn) -> tuple:
    """A cheap key that equal functions share: their type and the names of their ops."""
    names = []

    def visit(op):
        names.append(op.name)
        return ir.WalkResult.ADVANCE
    fn.operation.walk(visit)
    return function_type(fn), tuple(names)


def _packs(sites: CallSites, fn, target) -> bool:
    """Whether the matmul schedule would pack B for one of the kernel's products."""
    matmuls = ops_of_kind(fn, "linalg.matmul")
    return any(packs_b(sites, fn, mm, strip_width(matmuls[0], target), target)
               for mm in matmuls)


@register
class MergeKernels(ModulePass):
    name = "ms-cpu-merge-kernels"
    summary = ("send the calls of static matmul kernels that are the same but for their names "
               "to one of them and erase the copies")
    options = dict(cpu_target.TARGET_OPTIONS)
    choices = dict(cpu_target.TARGET_CHOICES)

    def run(self, module):
        target = cpu_target.from_options(self.opts)
        calls = calls_by_callee(module.operation)
        sites = CallSites(module, calls)  # (a kernel's own calls stay its own until merged)
        kept: dict = {}  # (shape key, called in a parallel loop) -> kernels kept
        for fn in kernel_functions(module, "matmul"):
            own = calls.get(symbol_name(fn), [])
            if not own or not static_kernel(fn) or _packs(sites, fn, target):
                continue
            # (by whether it is called inside a parallel loop: the schedule threads a
            # kernel only where it is not)
            key = (_shape_key(fn), any(in_parallel_loop(c) for c in own))
            merge_into_copy(fn, own, kept.setdefault(key, []))


def merge_into_copy(fn, calls, candidates: list):
    """Send `calls` (all of fn's) to the first of `candidates` that is the same as `fn` and
    erase `fn`; else add `fn` to the candidates."""
    first = next((k for k in candidates if same_function(k, fn)), None)
    if first is None:
        candidates.append(fn)
        return
    callee = ir.FlatSymbolRefAttr.get(symbol_name(first))
    for call in calls:
        call.attributes["callee"] = callee
    fn.erase()


@register
class MergeScheduledKernels(ModulePass):
    """Kernels whose B the schedule packs are left alone by ms-cpu-merge-kernels (pack_b
    rewrites a kernel's one call site), yet come out of the schedule the same when their
    products are: a ResNet block's two 3x3 weight gradients, 64x3136 @ 3136x576 each, were
    two kernels, and the per-image loops calling them two loop functions (~55 ms of LLVM's
    ~490, single-thread). After the schedule a kernel's body is all it does (threaded or
    not, whatever its calls' context), so any two that are the same but for their names
    become one."""
    name = "ms-cpu-merge-scheduled-kernels"
    summary = ("after the matmul schedule, send the calls of kernels that are the same but "
               "for their names (packed ones included) to one of them and erase the copies")

    def run(self, module):
        kernels = {symbol_name(fn) for fn in kernel_functions(module, "matmul")}
        merge_duplicates(module, lambda fn: symbol_name(fn) in kernels)


@register
class MergeLoops(ModulePass):
    name = "ms-cpu-merge-loops"
    summary = ("send the calls of outlined loop nests that are the same but for their names to "
               "one of them and erase the copies")

    def run(self, module):
        merge_duplicates(module, lambda fn: OUTLINED_ATTR in fn.attributes)


# A unique value per function that merge_duplicates must leave alone, for the upstream pass's
# run: it compares every attribute but the name.
_DISTINCT_ATTR = "ms.distinct"


def merge_duplicates(module, mergeable):
    """Upstream's duplicate-function-elimination (OperationEquivalence in C++: each function
    hashed once, locations ignored, every symbol use of a copy sent to the first) over the
    functions `mergeable(fn)` picks; the others (entries, helpers) are made distinct for
    the run. Comparing in Python took MobileNetV2's training step ~450 ms for its 1,285 loop
    nests (904 copies), the upstream pass ~60 ms, with the same functions merged."""
    others = [fn for fn in defined_functions(module) if not mergeable(fn)]
    i64 = ir.IntegerType.get_signless(64)
    for i, fn in enumerate(others):
        fn.attributes[_DISTINCT_ATTR] = ir.IntegerAttr.get(i64, i)
    run_upstream(module, "duplicate-function-elimination")
    for fn in defined_functions(module):
        if _DISTINCT_ATTR in fn.attributes:
            del fn.attributes[_DISTINCT_ATTR]
