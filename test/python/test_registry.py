"""The op registry is the one source of an op: it imports without MLIR, the frontend's plain
wrappers come from it, and it refuses incomplete definitions."""
import subprocess
import sys
import textwrap

import pytest

import mscc as ms
from mscc.dialects import dtypes as dt
from mscc.dialects.lowering import ScalarCost, by_kind, scalar_cost
from mscc.dialects.registry import OPS, define, lookup, plain_elementwise_ops

from nomlir import BLOCK_MLIR as _BLOCK_MLIR


def test_the_registry_and_mscc_import_without_mlir():
    program = _BLOCK_MLIR + textwrap.dedent("""
        import mscc
        import mscc.dialects.ops
        from mscc.dialects.registry import OPS
        assert len(OPS) > 50 and callable(mscc.ops.sin)
        assert not [m for m in sys.modules if m.split(".")[0] == "mlir"]
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_every_plain_elementwise_op_has_a_wrapper_with_its_operand_names():
    import inspect
    for d in plain_elementwise_ops():
        wrapper = getattr(ms.ops, d.mnemonic)
        assert list(inspect.signature(wrapper).parameters) == [o.name for o in d.data_operands]
        assert wrapper.__doc__ == d.doc, d.name  # the doc is written once, in the definition


def test_a_wrapper_binds_keywords_and_reports_a_wrong_count():
    import numpy as np
    x = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(ms.ops.sub(y=x, x=x * 3).asnumpy(), x * 2)
    with pytest.raises(TypeError, match="missing a required argument: 'y'"):
        ms.ops.sub(x)


def test_a_primitive_scalar_rule_must_declare_its_cost():
    primitive = by_kind(float=lambda s, x: x)
    with pytest.raises(ValueError, match="declares its cost"):
        define("ms.test_costless", ["x"], None, scalar=primitive)
    with pytest.raises(ValueError, match="sum of its parts"):
        define("ms.test_composed_with_cost", ["x"], None, scalar=lambda s, x: s.exp(x), cost=3)
    assert "ms.test_costless" not in OPS and "ms.test_composed_with_cost" not in OPS


def test_costs_come_from_the_definitions():
    f32 = dt.TensorSpec((2,), dt.float32)
    assert scalar_cost(lookup("ms.exp"), [f32], f32) == 10
    assert scalar_cost(lookup("ms.add"), [f32, f32], f32) == 1
    # sigmoid is composed: div 4 + add 1 + exp 10 + neg 1 (constants are free)
    assert scalar_cost(lookup("ms.sigmoid"), [f32], f32) == 16


def test_a_scalar_rule_calling_an_unknown_op_names_it():
    with pytest.raises(Exception, match="ms.sine"):
        ScalarCost(dt.float32).sine(0)


def test_every_plain_elementwise_op_is_a_tensor_method():
    import numpy as np
    from mscc.pyfront.tensor import _NOT_METHODS
    x = ms.Tensor(np.array([0.5, 2.0, 3.0], np.float32))
    b = ms.Tensor(np.array([True, False, True]))
    for d in plain_elementwise_ops():
        if d.mnemonic in _NOT_METHODS:
            continue
        args = [b] * len(d.data_operands) if d.dtypes == (dt.bool_,) else [x] * len(d.data_operands)
        got = getattr(args[0], d.mnemonic)(*args[1:])
        want = getattr(ms.ops, d.mnemonic)(*args)
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy(), err_msg=d.name)
    np.testing.assert_allclose(x.reshape(1, 3).matmul(x.reshape(3, 1)).asnumpy(), [[13.25]])
