"""User-level programs under ms.jit (and eagerly) against numpy: one table, expanded.

Each program is plain Python over mscc Tensors; the reference is the same program over numpy
arrays in float64 (or the program's integer/bool dtype). Both the value and the result dtype
are checked.
"""
import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mstest import assert_matches

rng = np.random.default_rng(42)


def f32(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def i32(*shape, lo=-5, hi=6):
    return rng.integers(lo, hi, shape).astype(np.int32)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _layernorm(x, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps)


# name, program (mscc), reference (numpy, float64), inputs, expected result dtype
PROGRAMS = [
    ("add_scalar", lambda x: x + 1, lambda x: x + 1, [f32(3, 4)], "float32"),
    ("rsub_scalar", lambda x: 2.5 - x, lambda x: 2.5 - x, [f32(3, 4)], "float32"),
    ("chain", lambda x, a, b: ops.tanh(x * a + b) * ops.sigmoid(x) + 0.5 * x,
     lambda x, a, b: np.tanh(x * a + b) / (1 + np.exp(-x)) + 0.5 * x,
     [f32(64), f32(64), f32(64)], "float32"),
    ("broadcast_row", lambda x, b: x + b, lambda x, b: x + b, [f32(5, 3), f32(3)], "float32"),
    ("broadcast_col", lambda x, b: x * b, lambda x, b: x * b, [f32(5, 3), f32(5, 1)], "float32"),
    ("broadcast_3d", lambda x, y: x - y, lambda x, y: x - y, [f32(2, 1, 4), f32(3, 1)], "float32"),
    ("div_pow", lambda x, y: x / (y ** 2 + 1), lambda x, y: x / (y ** 2 + 1),
     [f32(4, 4), f32(4, 4)], "float32"),
    ("neg_abs", lambda x: -abs(x) + ops.relu(x), lambda x: -abs(x) + np.maximum(x, 0),
     [f32(7)], "float32"),
    ("exp_log", lambda x: ops.log(ops.exp(x) + 1.0), lambda x: np.log(np.exp(x) + 1.0),
     [f32(10)], "float32"),
    ("sqrt_rsqrt", lambda x: ops.sqrt(x) * ops.rsqrt(x + 1), lambda x: np.sqrt(x) / np.sqrt(x + 1),
     [f32(9, lo=0.1, hi=4.0)], "float32"),
    ("max_min", lambda x, y: ops.maximum(x, y) - ops.minimum(x, 0.5),
     lambda x, y: np.maximum(x, y) - np.minimum(x, 0.5), [f32(6), f32(6)], "float32"),
    ("compare_select", lambda x, y: ops.select(x > y, x, y * 2),
     lambda x, y: np.where(x > y, x, y * 2), [f32(3, 3), f32(3, 3)], "float32"),
    ("compare_bool", lambda x: (x >= 0) & (x < 1), lambda x: (x >= 0) & (x < 1), [f32(8)], "bool"),
    ("matmul", lambda a, b: a @ b, lambda a, b: a @ b, [f32(4, 5), f32(5, 3)], "float32"),
    ("matmul_chain", lambda a, b, c: (a @ b) @ c, lambda a, b, c: a @ b @ c,
     [f32(3, 8), f32(8, 6), f32(6, 2)], "float32"),
    ("matmul_transpose", lambda a, b: ops.matmul(a, b, transpose_b=True),
     lambda a, b: a @ b.T, [f32(4, 5), f32(3, 5)], "float32"),
    ("batch_matmul", lambda a, b: a @ b, lambda a, b: a @ b, [f32(2, 3, 4), f32(2, 4, 5)], "float32"),
    ("linear_relu", lambda x, w, b: ops.relu(x @ w + b), lambda x, w, b: np.maximum(x @ w + b, 0),
     [f32(8, 16), f32(16, 4), f32(4)], "float32"),
    ("reduce_sum_all", lambda x: x.sum(), lambda x: x.sum(), [f32(3, 4)], "float32"),
    ("reduce_mean_axis", lambda x: ops.reduce_mean(x, 1), lambda x: x.mean(1), [f32(3, 4)], "float32"),
    ("reduce_max_keep", lambda x: x - ops.reduce_max(x, -1, keep_dims=True),
     lambda x: x - x.max(-1, keepdims=True), [f32(3, 4)], "float32"),
    ("reduce_min_multi", lambda x: ops.reduce_min(x, (0, 2)), lambda x: x.min((0, 2)),
     [f32(2, 3, 4)], "float32"),
    ("softmax", lambda x: ops.softmax(x), _softmax, [f32(4, 10)], "float32"),
    ("softmax_axis0", lambda x: ops.softmax(x, 0), lambda x: _softmax(x, 0), [f32(4, 10)], "float32"),
    ("log_softmax", lambda x: ops.log_softmax(x), lambda x: np.log(_softmax(x)), [f32(4, 10)], "float32"),
    ("layernorm", lambda x: (x - x.mean(-1, True)) * ops.rsqrt(((x - x.mean(-1, True)) ** 2).mean(-1, True) + 1e-5),
     _layernorm, [f32(6, 32)], "float32"),
    ("reshape_transpose", lambda x: x.reshape(4, 6).T, lambda x: x.reshape(4, 6).T, [f32(2, 3, 4)], "float32"),
    ("transpose_perm", lambda x: ops.transpose(x, (1, 2, 0)), lambda x: x.transpose(1, 2, 0),
     [f32(2, 3, 4)], "float32"),
    ("slicing", lambda x: x[1:3, ::2] + x[0, :3:1], lambda x: x[1:3, ::2] + x[0, :3:1], [f32(4, 6)], "float32"),
    ("index_newaxis", lambda x: x[:, None, -1] * x[None, 0, :2].sum(),
     lambda x: x[:, None, -1] * x[None, 0, :2].sum(), [f32(3, 5)], "float32"),
    ("ellipsis", lambda x: x[..., 1], lambda x: x[..., 1], [f32(2, 3, 4)], "float32"),
    ("expand_squeeze", lambda x: ops.squeeze(ops.expand_dims(x, 1) * 2, 1),
     lambda x: x * 2, [f32(3, 4)], "float32"),
    ("concat_tile", lambda x, y: ops.tile(ops.concat((x, y, x), 1), (2, 1)),
     lambda x, y: np.tile(np.concatenate((x, y, x), 1), (2, 1)), [f32(2, 3), f32(2, 1)], "float32"),
    ("broadcast_to", lambda x: ops.broadcast_to(x, (4, 3)) * 3, lambda x: np.broadcast_to(x, (4, 3)) * 3,
     [f32(3)], "float32"),
    ("gather_rows", lambda p, i: p[i] * 2, lambda p, i: p[i] * 2,
     [f32(5, 3), np.array([4, 0, 2], np.int32)], "float32"),
    ("one_hot", lambda i: ops.one_hot(i, 4), lambda i: np.eye(4)[i], [np.array([0, 3, 1], np.int64)], "float32"),
    ("int_arith", lambda a, b: a * b - a, lambda a, b: a * b - a,
     [i32(5), i32(5)], "int32"),
    ("int_plus_float_scalar", lambda a: a + 0.5, lambda a: a + 0.5, [i32(4)], "float32"),
    ("int_true_div", lambda a, b: a / b, lambda a, b: a / b, [i32(4), i32(4, lo=1, hi=5)], "float32"),
    ("int32_plus_python_int", lambda a: a * 3 + 1, lambda a: a * 3 + 1, [i32(4)], "int32"),
    ("mixed_tensor_dtypes", lambda a, x: a + x, lambda a, x: a + x, [i32(3), f32(3)], "float32"),
    ("float16_scalar", lambda h: h * 0.5 + 1, lambda h: h * 0.5 + 1,
     [f32(5).astype(np.float16)], "float16"),
    ("bool_plus_int", lambda b: b + 1, lambda b: b.astype(np.int64) + 1,
     [np.array([True, False, True])], "int64"),
    ("cast", lambda x: ops.cast(x * 10, ms.int32), lambda x: (x * 10).astype(np.int32), [f32(6)], "int32"),
    ("multiple_outputs", lambda x: (x + 1, x.sum()), lambda x: (x + 1, x.sum()), [f32(4)], "float32"),
    ("dict_output", lambda x: {"double": x * 2, "neg": -x}, lambda x: {"double": x * 2, "neg": -x},
     [f32(3)], "float32"),
]


def _flatten(result):
    if isinstance(result, dict):
        return [result[k] for k in sorted(result)]
    if isinstance(result, (tuple, list)):
        return list(result)
    return [result]


def _check(got, want, dtype):
    got, want = _flatten(got), _flatten(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, ms.Tensor)
        assert_matches(g.asnumpy(), np.asarray(w), dtype)


def _reference(ref, inputs):
    return ref(*[x.astype(np.float64) if x.dtype.kind == "f" else x for x in inputs])


@pytest.mark.parametrize("name,program,ref,inputs,dtype", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_program_under_jit(name, program, ref, inputs, dtype):
    fn = ms.jit(program)
    got = fn(*[ms.Tensor(x) for x in inputs])
    _check(got, _reference(ref, inputs), dtype)
    assert fn.cache_info()["compiles"] == 1


@pytest.mark.parametrize("name,program,ref,inputs,dtype", PROGRAMS[:20], ids=[p[0] for p in PROGRAMS[:20]])
def test_program_eagerly(name, program, ref, inputs, dtype):
    got = program(*[ms.Tensor(x) for x in inputs])
    _check(got, _reference(ref, inputs), dtype)


def test_enough_programs():
    assert len(PROGRAMS) >= 30
