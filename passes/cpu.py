"""CPU-specific passes: destination-passing entry points and the matmul schedule."""
from mlir import ir
from mlir.dialects import bufferization, func, transform
from mlir.dialects.transform import interpreter
from mlir.dialects.transform import memref as tmemref
from mlir.dialects.transform import structured, vector

from .base import ModulePass, fail, register

C_INTERFACE = "llvm.emit_c_interface"


def public_functions(module):
    return [op for op in module.regions[0].blocks[0].operations
            if op.operation.name == "func.func" and len(op.regions[0].blocks)
            and ("sym_visibility" not in op.attributes
                 or ir.StringAttr(op.attributes["sym_visibility"]).value == "public")]


def unshare_inits(fn):
    """Give every user of a `linalg.fill` or `tensor.empty` result its own copy.

    CSE merges identical init tensors (two reductions of one shape share one fill). Then
    eliminate-empty-tensors lets the first result's output buffer stand for the shared
    init, and one-shot bufferization writes the second result into that same buffer: a
    function returning two same-shaped reductions returned the first one twice."""
    for kind in ("linalg.fill", "tensor.empty"):
        found = []

        def visit(op):
            if op.name == kind:
                found.append(op)
            return ir.WalkResult.ADVANCE
        fn.operation.walk(visit)
        for op in found:
            users = []
            for use in op.results[0].uses:
                if use.owner not in users:
                    users.append(use.owner)
            for user in users[1:]:
                copy = op.clone(ip=ir.InsertionPoint(user))
                user.operation.replace_uses_of_with(op.results[0], copy.results[0])


def make_destination_passing(fn):
    """(tensor...) -> (tensor...)  becomes  (memref... inputs, memref... outputs) -> ().

    The caller owns every buffer: inputs are read through `to_tensor restrict` and results
    are materialized into the output buffers, so bufferization needs no result allocation
    and the runtime can hand in (and re-use) numpy arrays."""
    unshare_inits(fn)
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


def outline(op, name: str, kind: str, module_block):
    """Move `op` (all operands as arguments) into a private function carrying
    `ms.kernel = kind`, and call it. A kernel function is scheduled on its own: a transform
    applied to it cannot touch the rest of the program."""
    arg_types = [v.type for v in op.operands]
    result_types = [r.type for r in op.results]
    with ir.InsertionPoint(module_block), op.location:
        fn = func.FuncOp(name, (arg_types, result_types), visibility="private")
        fn.attributes[KERNEL_ATTR] = ir.StringAttr.get(kind)
        entry = fn.add_entry_block()
    with ir.InsertionPoint(entry), op.location:
        body = op.clone()
        for i, arg in enumerate(entry.arguments):
            body.operands[i] = arg
        func.ReturnOp(list(body.results))
    with ir.InsertionPoint(op), op.location:
        call = func.CallOp(result_types, ir.FlatSymbolRefAttr.get(name), list(op.operands))
    for old, new in zip(op.results, call.results):
        old.replace_all_uses_with(new)
    op.erase()


@register
class OutlineMatmul(ModulePass):
    name = "ms-outline-matmul"
    summary = "move each linalg.matmul into its own kernel function"

    def run(self, module):
        block = module.regions[0].blocks[0]
        for fn in public_functions(module) + [
                op for op in block.operations if op.operation.name == "func.func"
                and KERNEL_ATTR not in op.attributes and op not in public_functions(module)]:
            fn_name = ir.StringAttr(fn.attributes["sym_name"]).value
            matmuls = []

            def find(op):
                if op.name == "linalg.matmul":
                    matmuls.append(op)
                return ir.WalkResult.ADVANCE
            fn.operation.walk(find)
            for i, op in enumerate(matmuls):
                outline(op, f"{fn_name}__matmul{i}", "matmul", block)


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
