"""Transform-dialect building blocks shared by the CPU and GPU schedules."""
from __future__ import annotations

from mlir import ir
from ..dialects.lazy import LazyModule

# The transform dialect's modules (~15 ms to import) load when a schedule first builds or
# applies a script: a compile without matmuls, transposes or row tiles never does.
transform = LazyModule("mlir.dialects.transform")
interpreter = LazyModule("mlir.dialects.transform.interpreter")
structured = LazyModule("mlir.dialects.transform.structured")
vector = LazyModule("mlir.dialects.transform.vector")
transform_memref = LazyModule("mlir.dialects.transform.memref")

from .base import fail


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


def apply_script(target, script, what: str):
    """Apply a transform_script to one payload op; a failure is an error located at it."""
    mod, seq = script
    try:
        interpreter.apply_named_sequence(target, seq, mod)
    except ValueError as e:
        fail(target, f"{what} failed: {str(e).splitlines()[-1]}")


class ScriptCache:
    """Transform scripts built once per pass run and reused for every op with the same
    parameters (building one costs more than applying it)."""

    def __init__(self):
        self._scripts = {}

    def get(self, key, make):
        if key not in self._scripts:
            self._scripts[key] = make()
        return self._scripts[key]


def vectorize_register_tiles(kernel):
    """Vectorize the tiled kernel (full register tiles become vector.contract), keep C in
    registers across k, and lower contractions to outer-product FMAs (a 1024^3 float32 matmul
    tiled 64x256x256 with 8x32 register tiles ran at ~190-230 GFLOP/s on one core, against
    0.5 GFLOP/s for plain loops). The order matters: unless the subviews are folded and LICM
    and CSE have run, hoist_redundant_vector_transfers finds nothing to hoist and the C tile
    is loaded and stored at every k, without any error."""
    any_op = transform.AnyOpType.get()
    fv = structured.VectorizeChildrenAndApplyPatternsOp(kernel).result
    p = transform.ApplyPatternsOp(fv)
    with ir.InsertionPoint(p.patterns):
        transform_memref.ApplyFoldMemrefAliasOpsPatternsOp()
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
