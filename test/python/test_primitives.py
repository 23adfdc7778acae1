"""MindSpore's Primitive classes (mscc.ops.MatMul(), P.Concat(axis), ...): one table row per
Primitive, like JAX's lax tests. Each row is checked three ways: its values against numpy
(float64 references) eagerly in PYNATIVE_MODE, the same under ms.jit, and its traced IR
against the functional form's (a Primitive is the functional op, not a second implementation)."""
import re

import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mscc.ops import operations as P
from mscc.pyfront.primitives import _ELEMENTWISE, NO_PRIMITIVE, PRIMITIVES, RANKED_ROWS
from mscc.pyfront.primitives import LAST_ROWS

RNG = np.random.default_rng(7)


def f32(*shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, shape).astype(np.float32)


def i32(*shape, high=4):
    return RNG.integers(0, high, shape).astype(np.int32)


def boolean(*shape):
    return RNG.integers(0, 2, shape).astype(bool)


class Row:
    """`prim(*inputs)` uses the Primitive, `functional(*inputs)` the ops function it must
    trace to, `ref(*float64 inputs)` is numpy's answer."""

    def __init__(self, name, prim, functional, ref, inputs):
        self.name, self.prim, self.functional, self.ref = name, prim, functional, ref
        self.inputs = inputs


def _elementwise_rows():
    refs = {
        "Add": (np.add, 2), "Sub": (np.subtract, 2), "Mul": (np.multiply, 2),
        "RealDiv": (np.divide, 2), "Div": (np.divide, 2), "Pow": (np.power, "pos2"),
        "Maximum": (np.maximum, 2), "Minimum": (np.minimum, 2), "Equal": (np.equal, "int2"),
        "NotEqual": (np.not_equal, "int2"), "Less": (np.less, 2),
        "LessEqual": (np.less_equal, "int2"), "Greater": (np.greater, 2),
        "GreaterEqual": (np.greater_equal, "int2"), "LogicalAnd": (np.logical_and, "bool2"),
        "LogicalOr": (np.logical_or, "bool2"), "LogicalNot": (np.logical_not, "bool1"),
        "Neg": (np.negative, 1), "Abs": (np.abs, 1), "ReLU": (lambda x: np.maximum(x, 0), 1),
        "Exp": (np.exp, 1), "Log": (np.log, "pos1"), "Tanh": (np.tanh, 1),
        "Erf": (np.vectorize(__import__("math").erf), 1), "Sqrt": (np.sqrt, "pos1"),
        "Rsqrt": (lambda x: 1 / np.sqrt(x), "pos1"), "Sin": (np.sin, 1), "Cos": (np.cos, 1),
        "Sigmoid": (lambda x: 1 / (1 + np.exp(-x)), 1), "ZerosLike": (np.zeros_like, 1),
        "OnesLike": (np.ones_like, 1), "StopGradient": (lambda x: x, 1),
        "Select": (np.where, "select"), "Tan": (np.tan, "small1"),
        "Asin": (np.arcsin, "unit1"), "ACos": (np.arccos, "unit1"), "Atan": (np.arctan, 1),
        "Log1p": (np.log1p, "pos1"), "Expm1": (np.expm1, 1), "Floor": (np.floor, 1),
        "Ceil": (np.ceil, 1), "Round": (np.round, 1), "Sign": (np.sign, 1),
        "IsNan": (np.isnan, "special1"), "IsInf": (np.isinf, "special1"),
        "IsFinite": (np.isfinite, "special1"),
    }
    domains = {
        1: lambda: [f32(3, 4)], 2: lambda: [f32(3, 4), f32(4)],
        "pos1": lambda: [f32(3, 4, low=0.1)], "pos2": lambda: [f32(3, 4, low=0.1), f32(3, 4)],
        "int2": lambda: [i32(3, 4), i32(3, 4)], "bool1": lambda: [boolean(3, 4)],
        "bool2": lambda: [boolean(3, 4), boolean(3, 4)],
        "select": lambda: [boolean(3, 4), f32(3, 4), f32(3, 4)],
        "small1": lambda: [f32(3, 4, low=-1.2, high=1.2)],
        "unit1": lambda: [f32(3, 4, low=-0.95, high=0.95)],
        "special1": lambda: [np.array([1.0, np.nan, np.inf, -np.inf, -2.5], np.float32)],
    }
    rows = []
    for name, mnemonic in _ELEMENTWISE.items():
        if name not in PRIMITIVES:  # (an op still being added to the registry)
            continue
        ref, domain = refs[name]
        cls = PRIMITIVES[name]
        rows.append(Row(name, lambda *a, cls=cls: cls()(*a), getattr(ops, mnemonic), ref,
                        domains[domain]()))
    return rows


def _structural_rows():
    x34, x234 = f32(3, 4), f32(2, 3, 4)
    ids = np.array([0, 2, 1, 2], np.int32)
    return [
        Row("MatMul", lambda a, b: P.MatMul(transpose_b=True)(a, b),
            lambda a, b: ops.matmul(a, b, transpose_b=True), lambda a, b: a @ b.T,
            [x34, f32(5, 4)]),
        Row("BatchMatMul", lambda a, b: P.BatchMatMul(transpose_a=True)(a, b),
            lambda a, b: ops.batch_matmul(a, b, transpose_a=True),
            lambda a, b: np.swapaxes(a, -1, -2) @ b, [f32(2, 4, 3), f32(2, 4, 5)]),
        Row("Concat", lambda a, b: P.Concat(1)((a, b)), lambda a, b: ops.concat((a, b), 1),
            lambda a, b: np.concatenate((a, b), 1), [x34, f32(3, 2)]),
        Row("Stack", lambda a, b: P.Stack(axis=-1)([a, b]), lambda a, b: ops.stack([a, b], -1),
            lambda a, b: np.stack([a, b], -1), [x34, f32(3, 4)]),
        Row("Split", lambda a: P.Split(axis=1, output_num=2)(a),
            lambda a: ops.split(a, 2, 1),
            lambda a: tuple(np.split(a, 2, 1)), [x34]),
        Row("Unstack", lambda a: P.Unstack(axis=1)(a),
            lambda a: ops.unstack(a, 1),
            lambda a: tuple(a[:, i] for i in range(3)), [x234]),
        Row("Gather", lambda a, i: P.Gather()(a, i, 1), lambda a, i: ops.gather(a, i, 1),
            lambda a, i: np.take(a, i.astype(np.int64), 1), [x34, ids]),
        Row("Squeeze", lambda a: P.Squeeze(0)(a), lambda a: ops.squeeze(a, 0),
            lambda a: np.squeeze(a, 0), [f32(1, 3, 4)]),
        Row("ExpandDims", lambda a: P.ExpandDims()(a, -1), lambda a: ops.expand_dims(a, -1),
            lambda a: a[..., None], [x34]),
        Row("Reshape", lambda a: P.Reshape()(a, (4, -1)), lambda a: ops.reshape(a, (4, -1)),
            lambda a: a.reshape(4, -1), [x34]),
        Row("Transpose", lambda a: P.Transpose()(a, (2, 0, 1)),
            lambda a: ops.transpose(a, (2, 0, 1)), lambda a: a.transpose(2, 0, 1), [x234]),
        Row("Flatten", lambda a: P.Flatten()(a), ops.flatten,
            lambda a: a.reshape(2, -1), [x234]),
        Row("Tile", lambda a: P.Tile()(a, (2, 1)), lambda a: ops.tile(a, (2, 1)),
            lambda a: np.tile(a, (2, 1)), [x34]),
        Row("BroadcastTo", lambda a: P.BroadcastTo((2, 3, 4))(a),
            lambda a: ops.broadcast_to(a, (2, 3, 4)), lambda a: np.broadcast_to(a, (2, 3, 4)),
            [x34]),
        Row("Slice", lambda a: P.Slice()(a, (1, 1), (2, 2)),
            lambda a: ops.slice(a, (1, 1), (2, 2)), lambda a: a[1:3, 1:3], [x34]),
        Row("StridedSlice", lambda a: P.StridedSlice(end_mask=2)(a, (0, 1), (2, 0), (1, 2)),
            lambda a: ops.strided_slice(a, (0, 1), (2, 4), (1, 2)), lambda a: a[0:2, 1::2],
            [x34]),
        Row("Cast", lambda a: P.Cast()(a, ms.int32), lambda a: ops.cast(a, ms.int32),
            lambda a: a.astype(np.int32), [x34 * 3]),
        Row("ReduceSum", lambda a: P.ReduceSum(keep_dims=True)(a, 1),
            lambda a: ops.reduce_sum(a, 1, True), lambda a: a.sum(1, keepdims=True), [x34]),
        Row("ReduceMean", lambda a: P.ReduceMean()(a, (0, 2)),
            lambda a: ops.reduce_mean(a, (0, 2)), lambda a: a.mean((0, 2)), [x234]),
        Row("ReduceMax", lambda a: P.ReduceMax()(a), lambda a: ops.reduce_max(a),
            lambda a: a.max(), [x34]),
        Row("ReduceMin", lambda a: P.ReduceMin(True)(a, -1),
            lambda a: ops.reduce_min(a, -1, True), lambda a: a.min(-1, keepdims=True), [x34]),
        Row("Argmax", lambda a: P.Argmax()(a), lambda a: ops.argmax(a, -1),
            lambda a: a.argmax(-1).astype(np.int32), [x34]),
        Row("Argmin", lambda a: P.Argmin(axis=0, output_type=ms.int64)(a),
            lambda a: ops.cast(ops.argmin(a, 0), ms.int64), lambda a: a.argmin(0), [x34]),
        Row("Softmax", lambda a: P.Softmax()(a), lambda a: ops.softmax(a, -1),
            lambda a: np.exp(a) / np.exp(a).sum(-1, keepdims=True), [x34]),
        Row("LogSoftmax", lambda a: P.LogSoftmax(axis=0)(a), lambda a: ops.log_softmax(a, 0),
            lambda a: a - np.log(np.exp(a).sum(0, keepdims=True)), [x34]),
        Row("OneHot", lambda i: P.OneHot()(i, 3, 1.0, 0.0), lambda i: ops.one_hot(i, 3, 1.0, 0.0),
            lambda i: np.eye(3)[i.astype(np.int64)], [ids]),
        Row("BiasAdd", lambda a, b: P.BiasAdd()(a, b),
            lambda a, b: ops.add(a, ops.reshape(b, (1, -1, 1))),
            lambda a, b: a + b[None, :, None], [x234, f32(3)]),
        Row("UnsortedSegmentSum", lambda a, i: P.UnsortedSegmentSum()(a, i, 3),
            lambda a, i: ops.unsorted_segment_sum(a, i, 3),
            lambda a, i: np.stack([a[i == s].sum(0) for s in range(3)]), [f32(4, 2), ids]),
        Row("AddN", lambda a, b: P.AddN()((a, b, a)), lambda a, b: ops.add(ops.add(a, b), a),
            lambda a, b: a + b + a, [x34, f32(3, 4)]),
        Row("Square", lambda a: P.Square()(a), ops.square, np.square, [x34]),
        Row("Fill", lambda a: a + P.Fill()(ms.float32, (3, 4), 2.5),
            lambda a: a + ops.full((3, 4), 2.5, dtype=ms.float32), lambda a: a + 2.5, [x34]),
        Row("Zeros", lambda a: a + P.Zeros()((3, 4), ms.float32),
            lambda a: a + ops.zeros((3, 4), ms.float32), lambda a: a, [x34]),
        Row("Ones", lambda a: a * P.Ones()((3, 4), ms.float32),
            lambda a: a * ops.ones((3, 4), ms.float32), lambda a: a, [x34]),
        # (static values: used to build ops, they leave no ops of their own)
        Row("Shape", lambda a: ops.reshape(a, (P.Shape()(a)[0], -1)),
            lambda a: ops.reshape(a, (2, -1)), lambda a: a.reshape(2, -1), [x234]),
        Row("Rank", lambda a: ops.expand_dims(a, P.Rank()(a)), lambda a: ops.expand_dims(a, 3),
            lambda a: a[..., None], [x234]),
        Row("Size", lambda a: ops.reshape(a, (P.Size()(a),)), lambda a: ops.reshape(a, (24,)),
            lambda a: a.reshape(-1), [x234]),
        Row("DType", lambda a: ops.cast(a, P.DType()(a)) * 2, lambda a: ops.cast(a, ms.float32) * 2,
            lambda a: a * 2, [x34]),
        Row("Depend", lambda a, b: P.Depend()(a * 2, b), lambda a, b: a * 2, lambda a, b: a * 2,
            [x34, f32(2)]),
    ]


def _composition_rows():
    """Primitives over pyfront/ops.py's compositions."""
    x34 = f32(3, 4)
    sp = lambda x: np.log1p(np.exp(x))  # noqa: E731
    return [
        Row("CumSum", lambda a: P.CumSum()(a, 1), lambda a: ops.cumsum(a, 1),
            lambda a: np.cumsum(a, 1), [x34]),
        Row("ReduceProd", lambda a: P.ReduceProd(keep_dims=True)(a, 0),
            lambda a: ops.prod(a, 0, True), lambda a: a.prod(0, keepdims=True), [x34]),
        Row("ReduceAll", lambda a: P.ReduceAll()(a, 1), lambda a: ops.all(a, 1),
            lambda a: a.all(1), [boolean(3, 4)]),
        Row("ReduceAny", lambda a: P.ReduceAny()(a), lambda a: ops.any(a, ()),
            lambda a: a.any(), [boolean(3, 4)]),
        Row("Reciprocal", lambda a: P.Reciprocal()(a), ops.reciprocal, lambda a: 1 / a,
            [f32(3, 4, low=0.5)]),
        Row("Softplus", lambda a: P.Softplus()(a), ops.softplus, sp, [x34]),
        Row("GeLU", lambda a: P.GeLU()(a), lambda a: ops.gelu(a, "tanh"),
            lambda a: 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3))),
            [x34]),
        Row("Elu", lambda a: P.Elu(alpha=0.5)(a), lambda a: ops.elu(a, 0.5),
            lambda a: np.where(a > 0, a, 0.5 * np.expm1(a)), [x34]),
        Row("ReLU6", lambda a: P.ReLU6()(a), ops.relu6, lambda a: np.clip(a, 0, 6),
            [x34 * 4]),
        Row("HSwish", lambda a: P.HSwish()(a), ops.hardswish,
            lambda a: a * np.clip(a + 3, 0, 6) / 6, [x34 * 2]),
        Row("Mish", lambda a: P.Mish()(a), ops.mish, lambda a: a * np.tanh(sp(a)), [x34]),
        Row("Softsign", lambda a: P.Softsign()(a), ops.softsign, lambda a: a / (1 + abs(a)),
            [x34]),
        Row("MaskedFill", lambda a, m: P.MaskedFill()(a, m, 9.0),
            lambda a, m: ops.masked_fill(a, m, 9.0), lambda a, m: np.where(m, 9.0, a),
            [x34, boolean(3, 4)]),
        Row("Tril", lambda a: P.Tril(diagonal=1)(a), lambda a: ops.tril(a, 1),
            lambda a: np.tril(a, 1), [x34]),
        Row("Triu", lambda a: P.Triu()(a), ops.triu, np.triu, [x34]),
        Row("TopK", lambda a: P.TopK()(a, 2), lambda a: ops.topk(a, 2),
            lambda a: (-np.sort(-a, 1)[:, :2], np.argsort(-a, 1, kind="stable")[:, :2]),
            [x34]),
        Row("Sort", lambda a: P.Sort(axis=0, descending=True)(a),
            lambda a: ops.sort(a, 0, True),
            lambda a: (-np.sort(-a, 0), np.argsort(-a, 0, kind="stable")), [x34]),
        Row("Eye", lambda a: a + P.Eye()(3, 4, ms.float32),
            lambda a: a + ops.eye(3, 4, ms.float32), lambda a: a + np.eye(3, 4), [x34]),
    ]


def _convolution_rows():
    """Conv2D/Conv3D trace to ops.conv2d/conv3d; Conv2DBackpropInput/Conv2DTranspose (the
    gradient of Conv2D with respect to its input) to ops.conv_transpose2d of the same
    geometry; the references are test_conv.py's direct float64 definitions."""
    from test_conv import conv_ref, conv_transpose_ref

    from mscc.pyfront.ops_conv import transposed_convolution

    def small(*shape):
        return f32(*shape, low=-0.5, high=0.5)
    x, w = small(2, 3, 7, 6), small(4, 3, 3, 3)
    dout, x3, w3 = small(2, 4, 4, 4), small(1, 2, 4, 5, 4), small(3, 2, 2, 3, 2)
    dout3, w3t = small(1, 2, 2, 3, 2), small(2, 3, 2, 2, 2)
    input_grad = dict(stride=2, pad_mode="pad", pad=1)   # of an input (2, 3, 8, 8)
    return [
        Row("Conv2D", lambda a, b: P.Conv2D(4, 3, pad_mode="pad", pad=(1, 0, 2, 1),
                                            stride=(1, 1, 2, 1))(a, b),
            lambda a, b: ops.conv2d(a, b, pad_mode="pad", padding=(1, 0, 2, 1), stride=(2, 1)),
            lambda a, b: conv_ref(a, b, None, (2, 1), (1, 1), (1, 2), (0, 1), 1), [x, w]),
        Row("Conv3D", lambda a, b: P.Conv3D(3, (2, 3, 2), pad_mode="same", dilation=(1, 2, 1))(
                a, b),
            lambda a, b: ops.conv3d(a, b, pad_mode="same", dilation=(1, 2, 1)),
            lambda a, b: conv_ref(a, b, None, (1, 1, 1), (1, 2, 1), (0, 2, 0), (1, 2, 1), 1),
            [x3, w3]),
        *(Row(name, lambda a, b, name=name: getattr(P, name)(4, 3, **input_grad)(
                  a, b, (2, 3, 8, 8)),
              lambda a, b: ops.conv_transpose2d(a, b, stride=2, padding=1, output_padding=1),
              lambda a, b: conv_transpose_ref(a, b, None, (2, 2), (1, 1), (1, 1), (8, 8), 1),
              [dout, w])
          for name in ("Conv2DBackpropInput", "Conv2DTranspose")),
        Row("Conv3DTranspose", lambda a, b: P.Conv3DTranspose(2, 3, 2, stride=(1, 2, 1))(a, b),
            lambda a, b: transposed_convolution(
                a, b, None, (1, 2, 1), "valid", 0, 0, 1, 1, 3, "Conv3DTranspose"),
            lambda a, b: conv_transpose_ref(a, b, None, (1, 2, 1), (1, 1, 1), (0, 0, 0),
                                            (3, 6, 3), 1), [dout3, w3t]),
    ]


def _pooling_rows():
    """MaxPool/AvgPool/MaxPool3D/AvgPool3D trace to ops.max_pool2d/avg_pool2d/max_pool3d/
    avg_pool3d with the same pads ("same" is (1, 1) along H and (0, 1) along W here: an
    average excludes it), AdaptiveAvgPool2D to ops.adaptive_avg_pool2d; the references are
    test_pooling.py's direct float64 definitions."""
    from test_pooling import Geometry as G
    from test_pooling import adaptive_ref, pool_ref
    x, x3 = f32(2, 3, 7, 6), f32(1, 2, 4, 5, 4)
    return [
        Row("MaxPool", lambda a: P.MaxPool(3, 2, "SAME")(a),
            lambda a: ops.max_pool2d(a, 3, 2, (1, 1, 0, 1)),
            lambda a: pool_ref(a, "max", G((3, 3), (2, 2), (1, 0), (1, 1))), [x]),
        Row("AvgPool", lambda a: P.AvgPool(kernel_size=3, strides=2, pad_mode="same")(a),
            lambda a: ops.avg_pool2d(a, 3, 2, (1, 1, 0, 1), count_include_pad=False),
            lambda a: pool_ref(a, "avg", G((3, 3), (2, 2), (1, 0), (1, 1)), False), [x]),
        Row("MaxPool3D", lambda a: P.MaxPool3D(2, (1, 2, 1), "pad", (1, 0, 0, 1, 1, 1))(a),
            lambda a: ops.max_pool3d(a, 2, (1, 2, 1), (1, 0, 0, 1, 1, 1)),
            lambda a: pool_ref(a, "max", G((2, 2, 2), (1, 2, 1), (1, 0, 1), (0, 1, 1))), [x3]),
        Row("AvgPool3D", lambda a: P.AvgPool3D(2, 1, "pad", 1, count_include_pad=False)(a),
            lambda a: ops.avg_pool3d(a, 2, 1, 1, count_include_pad=False),
            lambda a: pool_ref(a, "avg", G((2, 2, 2), (1, 1, 1), (1, 1, 1), (1, 1, 1)), False),
            [x3]),
        Row("AdaptiveAvgPool2D", lambda a: P.AdaptiveAvgPool2D((2, 3))(a),
            lambda a: ops.adaptive_avg_pool2d(a, (2, 3)),
            lambda a: adaptive_ref(a, "avg", (2, 3)), [x]),
    ]


ROWS = {row.name: row for row in
        _elementwise_rows() + _structural_rows() + _composition_rows() + _convolution_rows()
        + _pooling_rows()}
# Rows tested on their own: below (they need a Parameter), and the loops, which take
# functions (test_control_flow.py), and the ranked ops' rows (test_ops_more.py,
# test_ops_last.py).
SEPARATE = ({"Assign", "WhileLoop", "ForiLoop", "Scan"} | {row.name for row in RANKED_ROWS}
            | {row.name for row in LAST_ROWS})


def test_every_primitive_has_a_row():
    assert set(PRIMITIVES) - SEPARATE == set(ROWS)


def test_every_plain_elementwise_op_has_a_primitive_or_is_known_to_have_none():
    from mscc.dialects.registry import plain_elementwise_ops
    covered = set(_ELEMENTWISE.values()) | NO_PRIMITIVE
    missing = [d.mnemonic for d in plain_elementwise_ops() if d.mnemonic not in covered]
    assert not missing, (f"add a row to _ELEMENTWISE in pyfront/primitives.py for {missing} "
                         f"(or NO_PRIMITIVE when MindSpore has no such Primitive)")


def _check(got, row):
    want = row.ref(*[a.astype(np.float64) if a.dtype == np.float32 else a for a in row.inputs])
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = g.asnumpy(), np.asarray(w)
        assert g.shape == w.shape, (row.name, g.shape, w.shape)
        if g.dtype.kind == "f":
            assert g.dtype == np.float32, (row.name, g.dtype)
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6, err_msg=row.name)
        else:
            w = w.astype(np.int32) if w.dtype == np.int64 and g.dtype == np.int32 else w
            assert g.dtype == w.dtype, (row.name, g.dtype, w.dtype)
            np.testing.assert_array_equal(g, w, err_msg=row.name)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_values_pynative(name):
    row = ROWS[name]
    ms.set_context(mode=ms.PYNATIVE_MODE)
    _check(row.prim(*[ms.Tensor(a) for a in row.inputs]), row)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_values_jit(name):
    row = ROWS[name]
    _check(ms.jit(row.prim)(*row.inputs), row)


def _body(text):
    return re.sub(r"func\.func @\w+", "func.func @f", text)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_same_ir_as_the_functional_form(name):
    row = ROWS[name]
    prim_ir = ms.jit(row.prim).lower(*row.inputs).as_text("ms")
    functional_ir = ms.jit(row.functional).lower(*row.inputs).as_text("ms")
    assert _body(prim_ir) == _body(functional_ir)
    assert re.search(r'"ms\.', prim_ir) or name in {"Depend"}, prim_ir


def test_assign_writes_the_parameter_eagerly_and_under_jit():
    w = ms.Parameter(np.zeros(3, np.float32), name="w")
    P.Assign()(w, ms.Tensor(np.array([1, 2, 3], np.float32)))
    np.testing.assert_array_equal(w.asnumpy(), [1, 2, 3])
    step = ms.jit(lambda v: P.Assign()(w, w + v))
    step(np.ones(3, np.float32))
    np.testing.assert_array_equal(w.asnumpy(), [2, 3, 4])
    functional = ms.jit(lambda v: ops.assign(w, w + v))
    x = np.ones(3, np.float32)
    assert _body(step.lower(x).as_text("ms")) == _body(functional.lower(x).as_text("ms"))


# ------------------------------------------------------------------ attributes and errors

def test_add_prim_attr_sets_what_the_call_reads_and_returns_the_primitive():
    a, b = f32(3, 4), f32(5, 4)
    mm = P.MatMul()
    assert mm.add_prim_attr("transpose_b", True) is mm
    assert mm.transpose_b is True and mm.attrs == {"transpose_a": False, "transpose_b": True}
    np.testing.assert_allclose(mm(a, b).asnumpy(), a @ b.T, rtol=1e-5)
    ir = ms.jit(lambda x, y: mm(x, y)).lower(a, b).as_text("ms")
    assert "transpose_b = true" in ir


def test_name_repr_and_recorded_attributes():
    assert P.MatMul().name == "MatMul"
    assert repr(P.MatMul(transpose_a=True)) == "Prim[MatMul]<transpose_a=True, transpose_b=False>"
    assert repr(P.Add()) == "Prim[Add]"
    assert repr(P.Exp()) == "Prim[Exp]<base=-1.0, scale=1.0, shift=0.0>"
    add = P.Add().add_prim_attr("primitive_target", "CPU").add_prim_attr("note", 1)
    assert add.attrs == {"primitive_target": "CPU", "note": 1}  # recorded, no effect
    np.testing.assert_array_equal(add(np.ones(2, np.float32), 1.0).asnumpy(), [2, 2])
    assert add.del_prim_attr("note").attrs == {"primitive_target": "CPU"}
    assert isinstance(add, P.Primitive) and ms.ops.Add is P.Add


def test_attributes_mscc_does_not_implement_are_errors_naming_them():
    with pytest.raises(ValueError, match="batch_dims=1"):
        P.Gather(batch_dims=1)
    with pytest.raises(ValueError, match="base=2.0"):
        P.Exp().add_prim_attr("base", 2.0)
    with pytest.raises(ValueError, match="ellipsis_mask"):
        P.StridedSlice(ellipsis_mask=1)(ms.Tensor(f32(3, 4)), (0,), (1,), (1,))
    with pytest.raises(ValueError, match="data_format"):
        P.BiasAdd(data_format="NWC")(ms.Tensor(f32(2, 3)), ms.Tensor(f32(3)))
    with pytest.raises(TypeError, match="output_type"):
        P.Argmax(output_type=ms.float32)(ms.Tensor(f32(2, 3)))
    with pytest.raises(ValueError, match="exclusive=True"):
        P.CumSum(exclusive=True)
    with pytest.raises(ValueError, match="read by the call"):
        P.MatMul().del_prim_attr("transpose_a")
    with pytest.raises(TypeError):
        P.MatMul(transpose_c=True)
    with pytest.raises(TypeError, match="Primitive classes"):
        P.Primitive("add")


def test_call_mistakes_name_the_primitive_and_the_users_line():
    # (a mistake the ms op finds is named by the op, as its functional form's is)
    with pytest.raises(ValueError, match=r"For 'ms.matmul'.*test_primitives\.py:\d+"):
        P.MatMul()(ms.Tensor(f32(3, 4)), ms.Tensor(f32(3, 4)))
    with pytest.raises(ValueError, match=r"For 'Split'.*output_num 3.*test_primitives\.py:\d+"):
        P.Split(1, 3)(ms.Tensor(f32(3, 4)))
    with pytest.raises(ValueError, match=r"For 'Unstack'.*num 2.*test_primitives\.py:\d+"):
        ms.jit(lambda x: P.Unstack(0, num=2)(x))(f32(3, 4))


def test_strided_slice_masks():
    x = f32(3, 4, 5)
    got = P.StridedSlice(begin_mask=0b1, end_mask=0b100, shrink_axis_mask=0b10)(
        ms.Tensor(x), (2, -1, 1), (3, 0, 0), (1, 1, 2))
    np.testing.assert_array_equal(got.asnumpy(), x[:3, -1, 1::2])


def test_reduce_sum_skip_mode_and_softmax_tuple_axis():
    x = f32(3, 4)
    np.testing.assert_array_equal(P.ReduceSum(skip_mode=True)(ms.Tensor(x)).asnumpy(), x)
    np.testing.assert_allclose(P.ReduceSum()(ms.Tensor(x)).asnumpy(), x.sum(), rtol=1e-5)
    np.testing.assert_allclose(P.Softmax(axis=(0,))(ms.Tensor(x)).asnumpy(),
                               np.exp(x) / np.exp(x).sum(0), rtol=1e-5)


def test_primitives_in_a_cell_in_both_modes_and_their_gradient(mode):
    class Net(ms.nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = ms.Parameter(f32(4, 5), name="w")
            self.matmul = P.MatMul()
            self.sum = P.ReduceSum()
            self.relu = P.ReLU()

        def construct(self, x):
            return self.sum(self.relu(self.matmul(x, self.w)))

    net, x = Net(), f32(3, 4)
    w = net.w.asnumpy().astype(np.float64)
    np.testing.assert_allclose(net(ms.Tensor(x)).asnumpy(), np.maximum(x @ w, 0).sum(),
                               rtol=1e-5)
    grads = ms.grad(net, None, net.trainable_params())(ms.Tensor(x))
    want = x.astype(np.float64).T @ (x @ w > 0).astype(np.float64)
    np.testing.assert_allclose(grads[0].asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_a_graph_mode_cell_recompiles_when_its_primitive_attribute_changes():
    class Net(ms.nn.Cell):
        def __init__(self):
            super().__init__()
            self.matmul = P.MatMul()

        def construct(self, a, b):
            return self.matmul(a, b)
    a = np.arange(9, dtype=np.float32).reshape(3, 3)
    b = np.arange(9, dtype=np.float32).reshape(3, 3) - 4
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = Net()
        np.testing.assert_allclose(net(ms.Tensor(a), ms.Tensor(b)).asnumpy(), a @ b)
        net.matmul.add_prim_attr("transpose_b", True)  # same shapes: only the key can tell
        np.testing.assert_allclose(net(ms.Tensor(a), ms.Tensor(b)).asnumpy(), a @ b.T)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
