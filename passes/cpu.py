"""CPU-specific passes: destination-passing entry points and the matmul schedule."""
from mlir import ir
from mlir.dialects import bufferization, func, transform
from mlir.dialects.transform import interpreter
from mlir.dialects.transform import memref as tmemref
from mlir.dialects.transform import structured, vector

from .base import ModulePass, register

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


def matmul_schedule(tile=(64, 256, 256), register_tile=(8, 32, 1)):
    """Transform script (measured in the notes, ~190 GFLOP/s on one core at 1024^3): two
    levels of tiling, masked vectorization of the register tile, then the contraction is kept
    in registers across k and lowered to outer-product FMAs."""
    any_op = transform.AnyOpType.get()
    mod = ir.Module.create()
    mod.operation.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
    with ir.InsertionPoint(mod.body):
        seq = transform.NamedSequenceOp("__transform_main", [any_op], [],
                                        arg_attrs=[{"transform.readonly": ir.UnitAttr.get()}])
    with ir.InsertionPoint(seq.body):
        root = seq.bodyTarget
        mm = structured.MatchOp.match_op_names(root, ["linalg.matmul"])
        outer = structured.TileUsingForOp([any_op] * 3, mm, sizes=list(tile))
        inner = structured.TileUsingForOp([any_op] * 3, outer.tiled_linalg_op,
                                          sizes=list(register_tile))
        structured.VectorizeOp(inner.tiled_linalg_op, vector_sizes=list(register_tile))
        fns = structured.MatchOp.match_op_names(root, ["func.func"])
        p = transform.ApplyPatternsOp(fns)
        with ir.InsertionPoint(p.patterns):
            vector.ApplyVectorReductionToContractPatternsOp()
            tmemref.ApplyFoldMemrefAliasOpsPatternsOp()
            transform.ApplyCanonicalizationPatternsOp()
        licm = transform.ApplyRegisteredPassOp(any_op, fns, "loop-invariant-code-motion")
        transform.ApplyCommonSubexpressionEliminationOp(licm.result)
        hoisted = structured.HoistRedundantVectorTransfersOp(any_op, licm.result)
        p = transform.ApplyPatternsOp(hoisted.transformed)
        with ir.InsertionPoint(p.patterns):
            vector.ApplyLowerContractionPatternsOp(lowering_strategy="outerproduct")
            vector.ApplyTransferPermutationPatternsOp()
            vector.ApplyLowerMultiReductionPatternsOp(lowering_strategy="innerparallel")
            vector.ApplyLowerOuterProductPatternsOp()
            vector.ApplyLowerBroadcastPatternsOp()
            vector.ApplyLowerTransposePatternsOp(lowering_strategy="shuffle_1d")
            vector.ApplyLowerMasksPatternsOp()
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
        has_matmul = []

        def find(op):
            if op.operation.name == "linalg.matmul":
                has_matmul.append(op)
                return ir.WalkResult.INTERRUPT
            return ir.WalkResult.ADVANCE
        module.walk(find)
        if not has_matmul:
            return
        with module.context, ir.Location.unknown():
            script, seq = matmul_schedule()
            interpreter.apply_named_sequence(module, seq, script)
