"""Transform-dialect building blocks shared by the CPU and GPU schedules."""
from __future__ import annotations

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import memref as tmemref
from mlir.dialects.transform import structured, vector


def transform_script(build):
    """A transform module whose entry sequence applies `build(root_handle)` to the payload
    it is applied to (one op at a time: interpreter.apply_named_sequence(op, seq, mod))."""
    any_op = transform.AnyOpType.get()
    mod = ir.Module.create()
    mod.operation.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
    with ir.InsertionPoint(mod.body):
        seq = transform.NamedSequenceOp("__transform_main", [any_op], [],
                                        arg_attrs=[{"transform.readonly": ir.UnitAttr.get()}])
    with ir.InsertionPoint(seq.body):
        build(seq.bodyTarget)
        transform.YieldOp([])
    return mod, seq


def vectorize_register_tiles(kernel):
    """Vectorize the tiled kernel (full register tiles become vector.contract), keep C in
    registers across k, and lower contractions to outer-product FMAs (measured in the notes at
    ~190-230 GFLOP/s on one core at 1024^3). The order matters: without folding the subviews,
    LICM and CSE, hoisting silently does nothing (notes, section 7)."""
    any_op = transform.AnyOpType.get()
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
