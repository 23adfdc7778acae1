"""CPU-specific passes: destination-passing entry points and the matmul schedule."""
from mlir import ir
from mlir.dialects import bufferization, func, transform
from mlir.dialects.transform import interpreter
from mlir.dialects.transform import memref as tmemref
from mlir.dialects.transform import structured, vector

from ..dialects.lowering import REGION_ATTR
from .base import ModulePass, fail, register

C_INTERFACE = "llvm.emit_c_interface"


def public_functions(module):
    return [op for op in module.regions[0].blocks[0].operations
            if op.operation.name == "func.func" and len(op.regions[0].blocks)
            and ("sym_visibility" not in op.attributes
                 or ir.StringAttr(op.attributes["sym_visibility"]).value == "public")]


def make_destination_passing(fn):
    """(tensor...) -> (tensor...)  becomes  (memref... inputs, memref... outputs) -> ().

    The caller owns every buffer: inputs are read through `to_tensor restrict` and results
    are materialized into the output buffers, so bufferization needs no result allocation
    and the runtime can hand in (and re-use) numpy arrays."""
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    block = fn.regions[0].blocks[0]
    n_in = len(ftype.inputs)

    def as_memref(t):
        t = ir.RankedTensorType(t)
        return ir.MemRefType.get(t.shape, t.element_type)
    in_memrefs = [block.add_argument(as_memref(t), fn.location) for t in ftype.inputs]
    out_memrefs = [block.add_argument(as_memref(t), fn.location) for t in ftype.results]
    ret = block.operations[len(block.operations) - 1]
    with ir.InsertionPoint.at_block_begin(block), fn.location:
        for old, buf in zip(list(block.arguments)[:n_in], in_memrefs):
            old.replace_all_uses_with(
                bufferization.to_tensor(old.type, buf, restrict=True))
    with ir.InsertionPoint(ret), fn.location:
        for value, buf in zip(ret.operands, out_memrefs):
            bufferization.materialize_in_destination(None, value, buf, restrict=True,
                                                     writable=True)
        func.ReturnOp([])
    ret.erase()
    for _ in range(n_in):
        block.erase_argument(0)
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
        [a.type for a in block.arguments], []))
    for name in ("arg_attrs", "res_attrs"):
        if name in fn.attributes:
            del fn.attributes[name]
    fn.attributes[C_INTERFACE] = ir.UnitAttr.get()


@register
class EntryDestinationPassing(ModulePass):
    name = "ms-entry-dps"
    summary = "public functions take their outputs as memref arguments (C interface)"

    def run(self, module):
        for fn in public_functions(module):
            make_destination_passing(fn)


KERNEL_ATTR = "ms.kernel"


def outline(ops, name: str, kind: str, module_block):
    """Move `ops` (in block order) into a private function carrying `ms.kernel = kind` and
    call it: values they use from outside become its arguments, values used after them its
    results. A kernel function is scheduled on its own: a transform applied to it cannot
    touch the rest of the program."""
    inside = {op for op in ops}
    args, seen = [], set()
    for op in ops:
        for v in op.operands:
            owner = v.owner
            if (isinstance(owner, ir.Block) or owner.operation not in inside) and v not in seen:
                seen.add(v)
                args.append(v)
    results = [r for op in ops for r in op.results
               if any(u.owner.operation not in inside for u in r.uses)]
    loc = ops[-1].location
    with ir.InsertionPoint(module_block), loc:
        fn = func.FuncOp(name, ([v.type for v in args], [r.type for r in results]),
                         visibility="private")
        fn.attributes[KERNEL_ATTR] = ir.StringAttr.get(kind)
        entry = fn.add_entry_block()
    remap = dict(zip(args, entry.arguments))
    with ir.InsertionPoint(entry), loc:
        for op in ops:
            copy = op.clone()
            for i, v in enumerate(copy.operands):
                if v in remap:
                    copy.operands[i] = remap[v]
            remap.update(zip(op.results, copy.results))
        func.ReturnOp([remap[r] for r in results])
    with ir.InsertionPoint(ops[-1]), loc:
        call = func.CallOp([r.type for r in results], ir.FlatSymbolRefAttr.get(name), args)
    for old, new in zip(results, call.results):
        old.replace_all_uses_with(new)
    for op in reversed(ops):
        op.erase()


# Ops of a fused matmul region that stay with the caller: its output's allocation and
# initialization (so that the kernel's result is the caller's buffer: no copy).
_CALLER_SIDE = {"tensor.empty", "linalg.fill", "arith.constant"}


def kernel_ops(matmul):
    """The matmul and, when it anchors a fused region, the region's other linalg ops (its
    epilogue), in block order."""
    region = matmul.attributes[REGION_ATTR] if REGION_ATTR in matmul.attributes else None
    if region is None:
        return [matmul]
    return [op.operation for op in matmul.operation.block.operations
            if REGION_ATTR in op.attributes and op.attributes[REGION_ATTR] == region
            and op.operation.name not in _CALLER_SIDE]


@register
class OutlineMatmul(ModulePass):
    name = "ms-outline-matmul"
    summary = "move each linalg.matmul, with its fused epilogue, into its own kernel function"

    def run(self, module):
        block = module.regions[0].blocks[0]
        for fn in [op for op in block.operations if op.operation.name == "func.func"
                   and KERNEL_ATTR not in op.attributes]:
            fn_name = ir.StringAttr(fn.attributes["sym_name"]).value
            matmuls = []

            def find(op):
                if op.name == "linalg.matmul":
                    matmuls.append(op)
                return ir.WalkResult.ADVANCE
            fn.operation.walk(find)
            for i, op in enumerate(matmuls):
                outline(kernel_ops(op), f"{fn_name}__matmul{i}", "matmul", block)


def matmul_schedule(tile=(64, 256, 256), register_tile=(8, 32, 1)):
    """Transform script for kernel functions holding one linalg.matmul (measured in the
    notes at ~190 GFLOP/s on one core at 1024^3): two levels of tiling, vectorization of the
    function (full register tiles only), C kept in registers across k, outer-product FMAs."""
    any_op = transform.AnyOpType.get()
    mod = ir.Module.create()
    mod.operation.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
    with ir.InsertionPoint(mod.body):
        seq = transform.NamedSequenceOp("__transform_main", [any_op], [],
                                        arg_attrs=[{"transform.readonly": ir.UnitAttr.get()}])
    with ir.InsertionPoint(seq.body):
        kernel = seq.bodyTarget  # the sequence is applied to one kernel function at a time
        mm = structured.MatchOp.match_op_names(kernel, ["linalg.matmul"]).result
        outer = structured.TileUsingForOp(mm, sizes=list(tile))
        structured.TileUsingForOp(outer.tiled_linalg_op, sizes=list(register_tile))
        fv = structured.VectorizeChildrenAndApplyPatternsOp(kernel).result
        p = transform.ApplyPatternsOp(fv)
        with ir.InsertionPoint(p.patterns):
            tmemref.ApplyFoldMemrefAliasOpsPatternsOp()
            transform.ApplyCanonicalizationPatternsOp()
        licm = transform.ApplyRegisteredPassOp(any_op, fv, "loop-invariant-code-motion")
        transform.ApplyCommonSubexpressionEliminationOp(licm.result)
        hoisted = structured.HoistRedundantVectorTransfersOp(any_op, licm.result)
        p = transform.ApplyPatternsOp(hoisted.transformed)
        with ir.InsertionPoint(p.patterns):
            vector.ApplyLowerContractionPatternsOp(
                lowering_strategy=vector.VectorContractLowering.OuterProduct)
            vector.ApplyTransferPermutationPatternsOp()
            vector.ApplyLowerMultiReductionPatternsOp(
                lowering_strategy=vector.VectorMultiReductionLowering.InnerParallel)
            vector.ApplyLowerOuterProductPatternsOp()
            vector.ApplyLowerBroadcastPatternsOp()
            vector.ApplyLowerTransposePatternsOp(
                lowering_strategy=vector.VectorTransposeLowering.Shuffle1D)
        # Kept apart from canonicalization: together with lower_shape_cast it rewrites forever.
        p = transform.ApplyPatternsOp(hoisted.transformed)
        with ir.InsertionPoint(p.patterns):
            vector.ApplyTransferToScfPatternsOp(max_transfer_rank=1, full_unroll=True)
            vector.ApplyLowerTransferPatternsOp(max_transfer_rank=1)
            vector.ApplyLowerShapeCastPatternsOp()
        transform.YieldOp([])
    return mod, seq


@register
class CpuMatmulSchedule(ModulePass):
    name = "ms-cpu-matmul-schedule"
    summary = "tile and vectorize linalg.matmul on memrefs (transform dialect)"

    def run(self, module):
        block = module.regions[0].blocks[0]
        kernels = [op for op in block.operations if op.operation.name == "func.func"
                   and KERNEL_ATTR in op.attributes
                   and ir.StringAttr(op.attributes[KERNEL_ATTR]).value == "matmul"]
        if not kernels:
            return
        script, seq = matmul_schedule()
        for fn in kernels:
            try:
                interpreter.apply_named_sequence(fn.operation, seq, script)
            except ValueError as e:
                fail(fn, f"matmul schedule failed: {str(e).splitlines()[-1]}")
