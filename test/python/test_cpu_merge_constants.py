"""ms-cpu-merge-constant-variants (passes/cpu_merge_constants.py) and the structure signature
it groups functions by (dialects/_structure.c): which functions compare equal with their
index constants left out, and a program whose merged loop functions compute what numpy and
the unmerged program compute."""
import numpy as np
import pytest
from mlir import ir

import mscc as ms
from mscc.dialects import capi
from mscc.dialects.builders import mlir_context
from mscc.passes.cpu_merge_constants import MergeConstantVariants

needs_c = pytest.mark.skipif(capi.native_signature() is None,
                             reason="dialects/_structure.c is not built")

# One function; each case swaps a piece of its text.
TEMPLATE = """
llvm.func internal @f(%dst: !llvm.ptr, %i: i64) attributes {{sym_visibility = "private"}} {{
  %n = llvm.mlir.constant({index} : index) : i64
  %m = llvm.mlir.constant({i32} : i32) : i32
  %b = llvm.mlir.constant({byte} : i8) : i8
  %s = llvm.mlir.constant({scale} : f32) : f32
  %k = {op} %i, %n : i64
  %p = llvm.getelementptr %dst[%k] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x = llvm.sitofp %m : i32 to f32
  %y = llvm.fmul %x, %s : f32
  llvm.store %y, %p : f32, !llvm.ptr
  llvm.store %b, %dst : i8, !llvm.ptr
  llvm.return
}}
"""
BASE = dict(index=4, i32=7, byte=1, scale="2.0", op="llvm.add")

# (what differs from BASE, whether the structure is the same, the values listed)
SIGNATURE_CASES = [
    ({}, True, [4, 7]),
    ({"index": 9}, True, [9, 7]),  # index constants: left out, listed
    ({"i32": -3}, True, [4, -3]),  # i32 too
    ({"index": 9, "i32": 8}, True, [9, 8]),
    ({"byte": 2}, False, [4, 7]),  # i8: compared
    ({"scale": "3.0"}, False, [4, 7]),  # floats: compared
    ({"op": "llvm.mul"}, False, [4, 7]),  # another op
]


def _module(**changes):
    return ir.Module.parse(TEMPLATE.format(**{**BASE, **changes}))


def _signature(module):
    return capi.native_signature()(module.body.operations[0].operation._CAPIPtr)


@needs_c
@pytest.mark.parametrize("changes,same,values", SIGNATURE_CASES)
def test_signature_leaves_out_index_constants_only(changes, same, values):
    with mlir_context():
        base, changed = _module(), _module(**changes)  # (alive while their ops are read)
        base_words, base_values, _ = _signature(base)
        words, found, constants = _signature(changed)
        assert (words == base_words) == same
        assert base_values == [4, 7]
        assert found == values
        assert [ir.Operation._CAPICreate(c).name for c in constants] == \
            ["llvm.mlir.constant"] * 2


def _norm(t):
    """BatchNorm's training-mode normalization over (N, H, W)."""
    mean = t.mean(axis=(0, 2, 3), keep_dims=True)
    var = ((t - mean) ** 2).mean(axis=(0, 2, 3), keep_dims=True)
    return (t - mean) / ms.ops.sqrt(var + 1e-5)


def _two_norms(x, y):
    return _norm(x), _norm(y)


def _numpy_norm(t):
    t = t.astype(np.float64)
    mean = t.mean(axis=(0, 2, 3), keepdims=True)
    return (t - mean) / np.sqrt(((t - mean) ** 2).mean(axis=(0, 2, 3), keepdims=True) + 1e-5)


def _defined_functions(text: str) -> int:
    with mlir_context():
        module = ir.Module.parse(text)
        return sum(1 for op in module.body.operations
                   if op.operation.name == "llvm.func" and len(op.regions[0].blocks))


@needs_c
def test_norms_at_two_channel_counts_share_their_loop_functions(monkeypatch):
    """The same normalization of 8 and of 24 channels: its loop nests differ only in the
    channel count and strides, and become one function each (fewer functions than with the
    pass skipped); the results are numpy's, and the same to the bit as without merging."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 8, 10, 10)).astype(np.float32)
    y = rng.standard_normal((4, 24, 10, 10)).astype(np.float32)
    args = (ms.Tensor(x), ms.Tensor(y))
    merged = ms.jit(_two_norms)
    merged_count = _defined_functions(merged.lower(*args).as_text("llvm"))
    outputs = [o.asnumpy() for o in merged(*args)]
    for out, t in zip(outputs, (x, y)):
        np.testing.assert_allclose(out, _numpy_norm(t), rtol=1e-4, atol=1e-5)
    with monkeypatch.context() as patch:
        patch.setattr(MergeConstantVariants, "run", lambda self, module: None)
        unmerged = ms.jit(_two_norms)
        unmerged_count = _defined_functions(unmerged.lower(*args).as_text("llvm"))
        reference = [o.asnumpy() for o in unmerged(*args)]
    assert merged_count < unmerged_count
    for out, ref in zip(outputs, reference):
        np.testing.assert_array_equal(out, ref)
