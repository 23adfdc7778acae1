"""CPU loop passes, on buffers: parallel loops, strided copies, accumulators, loop hints.

- ms-cpu-strided-copies: memref.copy between strided views as a linalg loop nest.
- ms-cpu-parallelize: the outer parallel loop of a large linalg op split over the threads
  (scf.forall); ms-cpu-lower-forall makes OpenMP worksharing loops (or plain loops) of it.
- ms-cpu-promote-accumulators, below.
- ms-cpu-loop-hints: LLVM loop metadata that keeps LLVM from unrolling what MLIR already did.

loop_ranges gives the loop sizes and kinds of a linalg op; ms-cpu-tile-rows, ms-cpu-store-terms
and the matmul schedule use it too.

ms-cpu-promote-accumulators: convert-linalg-to-loops writes a reduction as
    scf.for %j { %a = memref.load %out[%i]; ...; memref.store %n, %out[%i] }
LLVM cannot keep %out[%i] in a register (it cannot prove that %out does not alias the
inputs), so it neither vectorizes the loop nor overlaps iterations. Bufferized linalg never
reduces into a buffer it reads through another operand, so the pass carries the value as a
loop-carried scalar (iter_args) instead: one load before the loop, one store after it. With
the `reassoc` flag on the combining op (dialects/lowering.ScalarBuilder) LLVM then vectorizes
the reduction.
"""
from __future__ import annotations

import os
from typing import NamedTuple

from mlir import ir
from mlir.dialects import arith, memref, scf

from ..dialects.upstream import linalg

from . import cpu_target
from .base import ModulePass, PatternPass, register, run_upstream
from ..dialects.ir_helpers import (PARALLEL, REDUCTION, called_in_parallel, calls_by_callee,
                         constant_int, defined_functions, has_op_of_kind, identity_layout, indexing_maps, iterator_kinds, iterator_types_attr,
                         loop_sizes, ops_of_kind, static_trip_count, symbol_name)
from .outline import is_kernel
from .transforms import ScriptCache, apply_script, transform_script


def _defined_outside(value, loop) -> bool:
    owner = value.owner
    if isinstance(owner, ir.Block):
        op = owner.owner
    else:
        op = owner.operation
    while op is not None:
        if op == loop.operation:
            return False
        op = op.parent
    return True


def _uses_inside(value, loop):
    """Ops inside `loop` (at any depth) that use `value`."""
    out = []
    for use in value.uses:
        op = use.owner.operation
        p = op
        while p is not None and p != loop.operation:
            p = p.parent
        if p is not None:
            out.append(op)
    return out


def _accumulators(loop):
    """(load, store) pairs of the loop body that read and write one loop-invariant element
    of a buffer the loop touches nowhere else."""
    body = loop.regions[0].blocks[0]
    ops = [op.operation for op in body.operations]
    pairs = []
    for i, store in enumerate(ops):
        if store.name != "memref.store":
            continue
        buf, indices = store.operands[1], list(store.operands)[2:]
        if not all(_defined_outside(v, loop) for v in list(indices) + [buf]):
            continue
        users = _uses_inside(buf, loop)
        loads = [u for u in users if u.name == "memref.load"]
        if len(users) != 2 or len(loads) != 1 or loads[0] not in ops[:i]:
            continue
        if list(loads[0].operands)[1:] != indices:
            continue
        pairs.append((loads[0], store))
    return pairs


def promote(loop) -> bool:
    if len(loop.results) or len(loop.regions[0].blocks[0].arguments) != 1:
        return False
    pairs = _accumulators(loop)
    if not pairs:
        return False
    body = loop.regions[0].blocks[0]
    with ir.InsertionPoint(loop), loop.location:
        inits = [memref.load(load.operands[0], list(load.operands)[1:]) for load, _ in pairs]
        new = scf.ForOp(loop.lowerBound, loop.upperBound, loop.step, inits)
    new_body = new.regions[0].blocks[0]
    body.arguments[0].replace_all_uses_with(new_body.arguments[0])
    for (load, store), carried in zip(pairs, list(new_body.arguments)[1:]):
        load.results[0].replace_all_uses_with(carried)
    yielded = [store.operands[0] for _, store in pairs]
    terminator = None
    for op in list(body.operations):
        op = op.operation
        if op.name == "scf.yield":
            terminator = op
            continue
        if any(op == load or op == store for load, store in pairs):
            continue
        new_body.append(op)
    with ir.InsertionPoint(new_body), loop.location:
        scf.YieldOp(yielded)
    with ir.InsertionPoint(loop), loop.location:
        for (load, store), result in zip(pairs, new.results):
            memref.store(result, store.operands[1], list(store.operands)[2:])
    for load, store in pairs:
        store.erase()
        load.erase()
    if terminator is not None:
        terminator.erase()
    loop.operation.erase()
    return True


@register
class PromoteAccumulators(ModulePass):
    name = "ms-cpu-promote-accumulators"
    summary = "carry reduction accumulators of scf.for loops in registers (iter_args)"

    def run(self, module):
        # post-order: inner loops first, so outer ones see the new stores
        for loop in ops_of_kind(module, "scf.for", post_order=True):
            promote(loop.opview)


# ------------------------------------------------------------------ parallel loops

def _strided_copy(op, rewriter):
    src, dst = op.operands
    if identity_layout(src.type) and identity_layout(dst.type):
        return True  # did not match: a contiguous copy is one memcpy
    rank = ir.MemRefType(dst.type).rank
    elem = ir.MemRefType(dst.type).element_type
    with rewriter.ip, op.location:
        ident = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
        copy = linalg.GenericOp([], [src], [dst], ir.ArrayAttr.get([ident, ident]),
                                iterator_types_attr([PARALLEL] * rank))
        block = copy.regions[0].blocks.append(elem, elem)
        with ir.InsertionPoint(block):
            linalg.YieldOp([block.arguments[0]])
    rewriter.erase_op(op.operation)


@register
class StridedCopies(PatternPass):
    name = "ms-cpu-strided-copies"
    summary = ("memref.copy between strided views (slices, transposes) as a linalg loop nest: "
               "vectorized and split across threads like any other, not the generic runtime "
               "copy element by element")
    patterns = {"memref.copy": _strided_copy}


class ThreadedPass(ModulePass):
    """A CPU pass that splits work over threads: option `threads`, 0 for as many as the
    OpenMP runtime will run (runtime.openmp.num_threads; 1 without an OpenMP runtime)."""
    options = {"threads": 0}
    bounds = {"threads": (0, 1024)}

    def threads(self) -> int:
        from ..runtime.openmp import num_threads
        return self.opts["threads"] or num_threads()


# Loop nests with fewer iterations than this stay sequential: a fork and join costs a few
# microseconds on an idle machine, much more when the other core is busy.
MIN_PARALLEL_ITERATIONS = 1 << 17
_TILEABLE = ("linalg.generic", "linalg.fill", "linalg.transpose")


def loop_ranges(op, maps_attr=None):
    """(sizes, iterator kinds) of a linalg op on static memrefs, or None. A named op without
    iterator types (linalg.matmul, given its `maps_attr`) reduces over its last loop; one
    without indexing maps (linalg.fill, linalg.transpose) is parallel over its output."""
    if op.name == "linalg.generic" or maps_attr is not None:
        maps = indexing_maps(op, maps_attr)
        if "iterator_types" in op.attributes:
            kinds = iterator_kinds(op)
        else:
            kinds = [PARALLEL] * (maps[0].n_dims - 1) + [REDUCTION]
        sizes = loop_sizes(maps, op.operands)
        if None in sizes:
            return None
        return sizes, kinds
    out = op.operands[len(op.operands) - 1]
    if not isinstance(out.type, ir.MemRefType):
        return None
    shape = list(ir.MemRefType(out.type).shape)
    return shape, [PARALLEL] * len(shape)


# What heuristics take a dynamic loop size for (a batch known only at run time).
DYNAMIC_ESTIMATE = 256


class BlockLoop(NamedTuple):
    loop: object   # the scf.forall or scf.for
    body: object   # its block, without a terminator yet (close())
    start: object  # the index where the current block starts

    def close(self):
        """The body's terminator (at the end of the body's insertion point)."""
        scf.InParallelOp() if isinstance(self.loop, scf.ForallOp) else scf.YieldOp([])


def block_loop(first, count, size: int, parallel: bool) -> BlockLoop:
    """At the insertion point: a loop over `count` blocks of `size` (index values, or ints)
    from index `first`, over the threads (scf.forall) when `parallel`, else an scf.for. The
    shared form of the dynamic-size passes' full blocks and remainders."""
    idx = ir.IndexType.get()
    step = arith.constant(idx, size)
    if parallel:
        loop = scf.ForallOp([0], [count], [1])
        body = loop.regions[0].blocks[0]
        with ir.InsertionPoint(body):
            start = arith.addi(first, arith.muli(body.arguments[0], step))
        return BlockLoop(loop, body, start)
    if isinstance(count, int):
        count = arith.constant(idx, count)
    loop = scf.ForOp(first, arith.addi(first, arith.muli(count, step)), step)
    return BlockLoop(loop, loop.body, loop.induction_variable)


def block_type(t: ir.MemRefType, sizes) -> ir.MemRefType:
    """The type of a block of `sizes` of an identity-layout memref: its strides (dynamic
    after a dynamic size), a dynamic offset."""
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    strides, acc = [], 1
    for d in reversed(t.shape):
        strides.append(acc)
        acc = dyn if acc == dyn or ir.ShapedType.is_dynamic_size(d) else acc * d
    layout = ir.StridedLayoutAttr.get(dyn, list(reversed(strides)))
    return ir.MemRefType.get(sizes, t.element_type, layout)


def _forall_script(threads):
    from mlir.dialects.transform import structured
    return transform_script(lambda root: structured.TileUsingForallOp(
        root, num_threads=list(threads)))


def _thread_split(op, n):
    """The scf.forall thread counts splitting `op` over n threads (0 for the loops not
    split), or None when it stays sequential: too small, or no parallel loop of n or more."""
    ranges = loop_ranges(op)
    if ranges is None:
        return None
    sizes, kinds = ranges
    # a dynamic size (a batch) is taken as large: splitting a small one costs a fork
    sizes = [DYNAMIC_ESTIMATE if ir.ShapedType.is_dynamic_size(s) else s for s in sizes]
    total = 1
    for s in sizes:
        total *= s
    dim = next((i for i, (s, k) in enumerate(zip(sizes, kinds))
                if k == PARALLEL and s >= n), None)
    if dim is None or total < MIN_PARALLEL_ITERATIONS:
        return None
    return tuple(n if i == dim else 0 for i in range(dim + 1))


def _run_once(block):
    """The ops of `block` and of the scf.if branches in it (at any depth): each runs at most
    once per call, so splitting it over the threads forks once (ms-cpu-dynamic-matmul packs
    B for a large batch inside such a branch). Loop bodies are left out."""
    for op in block.operations:
        op = op.operation
        yield op
        if op.name == "scf.if":
            for region in op.regions:
                for inner in region.blocks:
                    yield from _run_once(inner)


@register
class Parallelize(ThreadedPass):
    name = "ms-cpu-parallelize"
    summary = "split the outer parallel loop of large linalg ops across threads (scf.forall)"

    def run(self, module):
        n = self.threads()
        if n < 2:
            return
        calls = calls_by_callee(module.operation)
        targets = [op for fn in defined_functions(module)
                   if not is_kernel(fn) and not called_in_parallel(calls.get(symbol_name(fn), []))
                   for block in fn.regions[0].blocks for op in _run_once(block)
                   if op.name in _TILEABLE]
        scripts = ScriptCache()
        for op in targets:
            threads = _thread_split(op, n)
            if threads is not None:
                apply_script(op, scripts.get(threads, lambda: _forall_script(threads)),
                             "thread split")


@register
class LowerForall(ThreadedPass):
    name = "ms-cpu-lower-forall"
    summary = ("scf.forall to OpenMP worksharing loops when an OpenMP runtime is available "
               "(marks the module ms.openmp), else to sequential loops")

    def run(self, module):
        parallel = {symbol_name(fn) for fn in defined_functions(module)
                    if has_op_of_kind(fn, "scf.forall")}
        if not parallel:
            return
        n = self.threads()
        if n > 1:
            module.attributes[OPENMP_ATTR] = ir.UnitAttr.get()
            run_upstream(module, "func.func(scf-forall-to-parallel)",
                         f"convert-scf-to-openmp{{num-threads={n}}}")
        else:
            run_upstream(module, "func.func(scf-forall-to-for)")
        if n > 1:  # (the functions looked up again after the upstream passes)
            for fn in defined_functions(module):
                if symbol_name(fn) in parallel:
                    _schedule_dynamically(fn, n)


def _schedule_dynamically(fn, threads: int):
    """Worksharing loops whose iterations call a function (a convolution's images, each a
    matmul kernel's call) and that have more iterations than threads hand them out one at a
    time (schedule(dynamic)) instead of in one static block per thread: on a shared machine a
    thread that loses its core for a while then holds up one image, not half the batch (a
    Conv2d step with another process taking a core part of the time: median 20.4 -> 17.9
    ms). Loops of many short iterations (a layernorm's row tiles) stay static: handed out
    one by one they ran up to 25% slower (each thread's rows no longer contiguous)."""
    dynamic = ir.Attribute.parse("#omp<schedulekind dynamic>")
    for loop in ops_of_kind(fn, "omp.wsloop"):
        nest = loop.regions[0].blocks[0].operations[0]
        if nest.name != "omp.loop_nest" or len(nest.operands) != 3:
            continue
        count = static_trip_count(nest)  # (omp.loop_nest: bounds and step, as scf.for)
        if (count is None or count > threads) and has_op_of_kind(nest, "func.call"):
            loop.attributes["schedule_kind"] = dynamic


OPENMP_ATTR = "ms.openmp"  # the module calls the OpenMP runtime (runtime.openmp)


# ------------------------------------------------------------------ LLVM loop hints

# LLVM unrolls every loop with a small constant trip count completely, after vectorizing it
# (4 vectors per iteration): a softmax's 8-row tiles of 1024-wide rows became 8 x 16 copies of
# the vectorized exp, 55 KB of code for one op and 60% of its compile time. The loops that
# profit from unrolling (matmul register tiles, vector transfers) are unrolled in MLIR already.
# An innermost loop may still be vectorized and interleaved (its reductions need several
# accumulators): only the loops LLVM makes of it are not unrolled. ('unroll disable' on the
# loop itself would also turn interleaving off: softmax ran 45% slower.)
_NO_UNROLL = "#llvm.loop_annotation<unroll = <disable = true>>"
_NO_UNROLL_AFTER_VECTORIZING = (
    f"#llvm.loop_annotation<vectorize = <followupVectorized = {_NO_UNROLL}, "
    f"followupEpilogue = {_NO_UNROLL}>>")


# MLIR translates a followup annotation as a loop ID of its own (distinct !{self, attrs}) in the
# followup attribute, and LLVM copies the followup's operands into the new loop's ID as they
# are (makeFollowupLoopID): the vectorized loop's ID then holds that node as one attribute,
# which no pass reads. So `followupVectorized = unroll disable` did not keep a vectorized
# reduction from being unrolled: a Conv2d bias gradient's sum over 784 positions (vectors of
# 16, interleaved by 4) became 12 unrolled copies. A scalar reduction's loop says `unroll
# disable` itself, with the interleave count given, since that hint alone would also make it
# 1 (LoopVectorizeHints). Conv2d 64x16x28x28 -> 32 forward and backward: 8% less LLVM time.
REDUCTION_INTERLEAVE = 4
_REDUCTION = (f"#llvm.loop_annotation<interleave = <count = {REDUCTION_INTERLEAVE} : i32>, "
              f"unroll = <disable = true>>")


def _long_scalar_reduction(loop, vector_bits: int) -> bool:
    """Whether the innermost scf.for carries only scalars and runs at least a vectorized,
    interleaved iteration's elements (or an unknown number): the loops LLVM's vectorizer
    makes a vector loop of that it would then unroll."""
    types = [result.type for result in loop.results]
    if not all(isinstance(t, (ir.FloatType, ir.IntegerType)) for t in types):
        return False  # (vectors: a register tile's accumulators, which LLVM may unroll)
    count = static_trip_count(loop)
    lanes = vector_bits // max(t.width for t in types)
    return count is None or count >= REDUCTION_INTERLEAVE * lanes


# An innermost loop of a few iterations (an im2col row of 14 output positions) stayed scalar:
# LLVM's cost model finds no vector length that divides its count and leaves it unrolled
# instead. Asked to fold the tail into masked vectors (predicateEnable, a preference: the
# cost model still decides, and a loop it cannot vectorize stays as it was, silently), it
# copies such a row in one masked vector: a LeNet5 training step's im2col loops of its
# second convolution's input gradient were a quarter of the step (2.9 -> 2.0 ms). The vector
# loop LLVM makes of it (one or two iterations of 16 floats for a 28-wide row) is unrolled
# completely: left a loop, each iteration computed its mask from a 64-bit index vector
# (broadcast, two ors, two compares, a mask merge: more work than the row's load and store);
# unrolled, the masks are constants. AMD EPYC, both forms compiled in one process, calls
# alternated: a 64x16x28x28 3x3 conv 4-5% faster, a ResNet block's forward 4-9%.
_MASKED_VECTORS = ("#llvm.loop_annotation<vectorize = <predicateEnable = true, "
                   "followupVectorized = #llvm.loop_annotation<unroll = <full = true>>>, "
                   "unroll = <disable = true>>")
SHORT_TRIP_COUNT = 32  # iterations: below this an innermost loop asks for masked vectors


def _short_trip_count(loop) -> bool:
    """Whether the scf.for runs a constant number of iterations below SHORT_TRIP_COUNT."""
    bounds = [constant_int(v) for v in list(loop.operands)[:3]]
    if None in bounds:
        return False
    lo, hi, step = bounds
    return step > 0 and 1 < (hi - lo) // step < SHORT_TRIP_COUNT


@register
class LoopHints(ModulePass):
    name = "ms-cpu-loop-hints"
    summary = ("LLVM loop metadata on every scf.for (llvm.loop_annotation; convert-scf-to-cf "
               "moves it to the back edge): outer loops are not unrolled, long innermost "
               "scalar reductions are interleaved and not unrolled, short innermost loops ask "
               "for masked vectors")

    options = {"vector-bits": 0}  # (0: the target's)
    choices = {"vector-bits": cpu_target.TARGET_CHOICES["vector-bits"]}

    def run(self, module):
        outer = ir.Attribute.parse(_NO_UNROLL)
        inner = ir.Attribute.parse(_NO_UNROLL_AFTER_VECTORIZING)
        masked = ir.Attribute.parse(_MASKED_VECTORS)
        reduction = ir.Attribute.parse(_REDUCTION)
        bits = cpu_target.from_options(self.opts).vector_bits
        # post-order: a loop comes after the loops it contains
        loops = ops_of_kind(module, "scf.for", post_order=True)
        has_inner = set()
        for loop in loops:
            parent = loop.parent
            while parent is not None and parent.name != "func.func":
                if parent.name == "scf.for":
                    has_inner.add(parent)
                    break
                parent = parent.parent
            reduces = len(loop.results) > 0  # loop-carried accumulators (iter_args)
            short = loop not in has_inner and not reduces and _short_trip_count(loop)
            innermost_reduction = reduces and loop not in has_inner
            loop.attributes["loop_annotation"] = (
                masked if short
                else reduction if innermost_reduction and _long_scalar_reduction(loop, bits)
                else inner if innermost_reduction else outer)
