"""The part of `mlir.dialects.linalg` mscc builds with: the generated op classes (which
register themselves with the bindings), the region filler of named ops, and the
`matmul`/`transpose` builders.

Importing `mlir.dialects.linalg` itself also runs its OpDSL library
(`opdsl/ops/core_named_ops.py`, Python definitions of dozens of named ops mscc never builds),
~35 ms of every process's first compile. The bindings load this module in its place when
they first meet a linalg op or attribute (dialects/upstream/__init__.py). It registers no
attribute builders, so importing the upstream module as well stays possible.
"""
from __future__ import annotations

from mlir import ir
from mlir._mlir_libs._mlirDialectsLinalg import fill_builtin_region  # noqa: F401
from mlir.dialects._linalg_ops_gen import *  # noqa: F401,F403
from mlir.dialects._linalg_ops_gen import MatmulOp, TransposeOp


def _value(v):
    return v.result if isinstance(v, ir.OpView) else v


def matmul(a, b, *, outs, indexing_maps=None):
    """linalg.matmul of a and b into outs[0] (a tensor result when outs[0] is a tensor)."""
    init = _value(outs[0])
    result_types = [init.type] if isinstance(init.type, ir.RankedTensorType) else []
    op = MatmulOp(result_tensors=result_types, inputs=[_value(a), _value(b)], outputs=[init],
                  indexing_maps=indexing_maps)
    fill_builtin_region(op.operation)
    return op.result if result_types else op


def transpose(value, *, outs, permutation):
    """linalg.transpose of value into outs[0] by `permutation`."""
    init = _value(outs[0])
    result_types = [init.type] if isinstance(init.type, ir.RankedTensorType) else []
    op = TransposeOp(result=result_types, input=_value(value), init=init,
                     permutation=permutation)
    fill_builtin_region(op.operation)
    return op
