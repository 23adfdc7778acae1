"""CPU loop passes: reduction accumulators in registers, and parallel outer loops.

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

from mlir import ir
from mlir.dialects import linalg, memref, scf

from .base import ModulePass, PatternPass, register


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
        loops = []

        def collect(op):  # post-order: inner loops first, so outer ones see the new stores
            if op.name == "scf.for":
                loops.append(op.opview)
            return ir.WalkResult.ADVANCE
        module.walk(collect, ir.WalkOrder.POST_ORDER)
        for loop in loops:
            promote(loop)


# ------------------------------------------------------------------ parallel loops

def identity_layout(t) -> bool:
    """A memref type without a layout (or with the identity map): contiguous from offset 0."""
    mt = ir.MemRefType(t)
    layout = mt.layout
    return (isinstance(layout, ir.AffineMapAttr)
            and layout.value == ir.AffineMap.get_identity(mt.rank, context=mt.context))


def _strided_copy(op, rewriter):
    src, dst = op.operands
    if identity_layout(src.type) and identity_layout(dst.type):
        return True  # did not match: a contiguous copy is one memcpy
    rank = ir.MemRefType(dst.type).rank
    elem = ir.MemRefType(dst.type).element_type
    with rewriter.ip, op.location:
        ident = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
        parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
        copy = linalg.GenericOp([], [src], [dst], ir.ArrayAttr.get([ident, ident]),
                                ir.ArrayAttr.get([parallel] * rank))
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


# Loop nests with fewer iterations than this stay sequential: a fork and join costs a few
# microseconds on an idle machine, much more when the other core is busy.
MIN_PARALLEL_ITERATIONS = 1 << 17
_TILEABLE = ("linalg.generic", "linalg.fill", "linalg.transpose")


def loop_ranges(op, indexing_maps=None):
    """(sizes, iterator kinds) of a linalg op on static memrefs, or None."""
    if op.name == "linalg.generic" or indexing_maps is not None:
        attr = indexing_maps if indexing_maps is not None else op.attributes["indexing_maps"]
        maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(attr)]
        if "iterator_types" in op.attributes:
            kinds = [str(a).split("<")[-1].rstrip(">")
                     for a in ir.ArrayAttr(op.attributes["iterator_types"])]
        else:
            kinds = ["parallel"] * (maps[0].n_dims - 1) + ["reduction"]
        sizes = [None] * len(kinds)
        for value, m in zip(op.operands, maps):
            if not isinstance(value.type, ir.MemRefType):
                continue
            for e, size in zip(m.results, ir.MemRefType(value.type).shape):
                e = e.maybe_downcast()
                if isinstance(e, ir.AffineDimExpr) and sizes[e.position] is None:
                    sizes[e.position] = size
        if None in sizes:
            return None
        return sizes, kinds
    out = op.operands[len(op.operands) - 1]
    if not isinstance(out.type, ir.MemRefType):
        return None
    shape = list(ir.MemRefType(out.type).shape)
    return shape, ["parallel"] * len(shape)


def _forall_script(threads):
    from mlir.dialects.transform import structured

    from .transforms import transform_script
    return transform_script(lambda root: structured.TileUsingForallOp(
        root, num_threads=list(threads)))


@register
class Parallelize(ModulePass):
    name = "ms-cpu-parallelize"
    summary = "split the outer parallel loop of large linalg ops across threads (scf.forall)"
    options = {"threads": 0}  # 0: runtime.openmp.num_threads()

    def run(self, module):
        from mlir.dialects.transform import interpreter

        from ..runtime.openmp import num_threads
        from .cpu import KERNEL_ATTR
        n = self.opts["threads"] or num_threads()
        if n < 2:
            return
        targets = []
        for fn in module.regions[0].blocks[0].operations:
            if fn.operation.name != "func.func" or KERNEL_ATTR in fn.attributes:
                continue
            for block in fn.regions[0].blocks:
                for op in block.operations:
                    if op.operation.name in _TILEABLE:
                        targets.append(op.operation)
        scripts = {}
        for op in targets:
            ranges = loop_ranges(op)
            if ranges is None:
                continue
            sizes, kinds = ranges
            total = 1
            for s in sizes:
                total *= s
            dim = next((i for i, (s, k) in enumerate(zip(sizes, kinds))
                        if k == "parallel" and s >= n), None)
            if dim is None or total < MIN_PARALLEL_ITERATIONS:
                continue
            threads = tuple(n if i == dim else 0 for i in range(dim + 1))
            if threads not in scripts:
                scripts[threads] = _forall_script(threads)
            script, seq = scripts[threads]
            interpreter.apply_named_sequence(op, seq, script)


@register
class LowerForall(ModulePass):
    name = "ms-cpu-lower-forall"
    summary = ("scf.forall to OpenMP worksharing loops when an OpenMP runtime is available "
               "(marks the module ms.openmp), else to sequential loops")

    def run(self, module):
        from mlir import passmanager

        from ..runtime.openmp import num_threads
        found = []

        def visit(op):
            if op.name == "scf.forall":
                found.append(op)
                return ir.WalkResult.SKIP
            return ir.WalkResult.ADVANCE
        module.walk(visit)
        if not found:
            return
        n = num_threads()
        if n > 1:
            text = (f"builtin.module(func.func(scf-forall-to-parallel),"
                    f"convert-scf-to-openmp{{num-threads={n}}})")
            module.attributes[OPENMP_ATTR] = ir.UnitAttr.get()
        else:
            text = "builtin.module(func.func(scf-forall-to-for))"
        passmanager.PassManager.parse(text, context=module.context).run(module)


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


@register
class LoopHints(ModulePass):
    name = "ms-cpu-loop-hints"
    summary = ("LLVM loop metadata on every scf.for (llvm.loop_annotation; convert-scf-to-cf "
               "moves it to the back edge): outer loops are not unrolled, innermost loops are "
               "not unrolled once vectorized")

    def run(self, module):
        outer = ir.Attribute.parse(_NO_UNROLL)
        inner = ir.Attribute.parse(_NO_UNROLL_AFTER_VECTORIZING)
        loops = []

        def visit(op):  # post-order: a loop comes after the loops it contains
            if op.name == "scf.for":
                loops.append(op)
            return ir.WalkResult.ADVANCE
        module.walk(visit, ir.WalkOrder.POST_ORDER)
        has_inner = set()
        for loop in loops:
            parent = loop.parent
            while parent is not None and parent.name != "func.func":
                if parent.name == "scf.for":
                    has_inner.add(parent)
                    break
                parent = parent.parent
            reduces = len(loop.results) > 0  # loop-carried accumulators (iter_args)
            loop.attributes["loop_annotation"] = (inner if reduces and loop not in has_inner
                                                  else outer)
