"""Every ms op, for each dtype class it supports, built as ms IR, compiled through the CPU
pipeline and run, against numpy (float64 reference where it matters).

One table of ops with input domains and numpy references, expanded into test cases, in the
manner of JAX's lax tests.
"""
import math
import os
import sys
from dataclasses import dataclass, field

import numpy as np
import pytest

from mscc.dialects import dtypes as dt
from mscc.dialects.registry import OPS
from mstest import assert_matches, compile_fn, op, spec

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "bench"))
import gpu_cases  # noqa: E402  (the numpy model of ms.random_uniform's generator)

ALL = [dt.float32, dt.float64, dt.float16, dt.bfloat16, dt.int32, dt.int64, dt.int8, dt.int16,
       dt.uint8, dt.uint16, dt.uint32, dt.uint64, dt.bool_]


def values(shape, dtype: dt.DType, domain="any", seed=0):
    """Random inputs in a domain where the op is defined and exact for integers."""
    rng = np.random.default_rng(seed)
    if dtype.is_bool:
        return rng.random(shape) < 0.5 if domain != "positive" else np.ones(shape, bool)
    lo, hi = {"any": (-3, 3), "positive": (0.5, 3), "small": (0, 3), "unit": (-0.9, 0.9)}[domain]
    if dtype.kind == "uint":
        lo = max(lo, 0)
    if dtype.is_float:
        return rng.uniform(lo, hi, shape).astype(dtype.np)
    lo, hi = int(np.floor(lo)), int(np.ceil(hi))
    if domain == "positive":
        lo = max(lo, 1)
    return rng.integers(lo, hi + 1, shape).astype(dtype.np)


def f64(x):
    return np.asarray(x, dtype=np.float64)


def float_result(d):
    return d if d.is_float else dt.float32


@dataclass
class Elementwise:
    name: str
    ref: object                       # numpy reference on the (cast) inputs
    arity: int = 2
    domains: tuple = ("any", "any")
    result: object = None             # dtype -> result dtype (default: same)
    in_float64: bool = False          # reference computed in float64
    shapes: tuple = field(default_factory=lambda: ((3, 4), (4,)))

    def result_dtype(self, d):
        return self.result(d) if self.result else d


BROADCAST_SHAPES = (((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((3, 4), ()))

ELEMENTWISE = [
    Elementwise("ms.add", np.add),
    Elementwise("ms.sub", np.subtract),
    Elementwise("ms.mul", np.multiply),
    Elementwise("ms.div", lambda x, y: f64(x) / f64(y), domains=("any", "positive"),
                result=float_result, in_float64=True),
    Elementwise("ms.pow", lambda x, y: np.power(x, y), domains=("positive", "small")),
    Elementwise("ms.maximum", np.maximum),
    Elementwise("ms.minimum", np.minimum),
    Elementwise("ms.equal", np.equal, result=lambda d: dt.bool_),
    Elementwise("ms.not_equal", np.not_equal, result=lambda d: dt.bool_),
    Elementwise("ms.less", np.less, result=lambda d: dt.bool_),
    Elementwise("ms.less_equal", np.less_equal, result=lambda d: dt.bool_),
    Elementwise("ms.greater", np.greater, result=lambda d: dt.bool_),
    Elementwise("ms.greater_equal", np.greater_equal, result=lambda d: dt.bool_),
    Elementwise("ms.logical_and", np.logical_and),
    Elementwise("ms.logical_or", np.logical_or),
    Elementwise("ms.logical_not", np.logical_not, arity=1, shapes=((3, 4),)),
    Elementwise("ms.neg", np.negative, arity=1, shapes=((3, 4),)),
    Elementwise("ms.abs", np.abs, arity=1, shapes=((3, 4),)),
    Elementwise("ms.relu", lambda x: np.maximum(x, 0).astype(x.dtype), arity=1, shapes=((3, 4),)),
    Elementwise("ms.exp", lambda x: np.exp(f64(x)), arity=1, result=float_result,
                in_float64=True, shapes=((3, 4),)),
    Elementwise("ms.log", lambda x: np.log(f64(x)), arity=1, domains=("positive",),
                result=float_result, in_float64=True, shapes=((3, 4),)),
    Elementwise("ms.tanh", lambda x: np.tanh(f64(x)), arity=1, result=float_result,
                in_float64=True, shapes=((3, 4),)),
    Elementwise("ms.erf", lambda x: np.vectorize(math.erf)(f64(x)), arity=1,
                result=float_result, in_float64=True, shapes=((3, 4),)),
    Elementwise("ms.sqrt", lambda x: np.sqrt(f64(x)), arity=1, domains=("positive",),
                result=float_result, in_float64=True, shapes=((3, 4),)),
    Elementwise("ms.rsqrt", lambda x: 1 / np.sqrt(f64(x)), arity=1, domains=("positive",),
                result=float_result, in_float64=True, shapes=((3, 4),)),
    Elementwise("ms.sin", lambda x: np.sin(f64(x)), arity=1, result=float_result,
                in_float64=True, shapes=((3, 4),)),
    Elementwise("ms.cos", lambda x: np.cos(f64(x)), arity=1, result=float_result,
                in_float64=True, shapes=((3, 4),)),
    Elementwise("ms.sigmoid", lambda x: 1 / (1 + np.exp(-f64(x))), arity=1,
                result=float_result, in_float64=True, shapes=((3, 4),)),
    *(Elementwise(f"ms.{n}", lambda x, f=f: f(f64(x)), arity=1, domains=(dom,),
                  result=float_result, in_float64=True, shapes=((3, 4),))
      for n, f, dom in [("tan", np.tan, "unit"), ("asin", np.arcsin, "unit"),
                        ("acos", np.arccos, "unit"), ("atan", np.arctan, "any"),
                        ("exp2", np.exp2, "any"), ("log2", np.log2, "positive"),
                        ("log1p", np.log1p, "small"), ("expm1", np.expm1, "any")]),
    *(Elementwise(f"ms.{n}", f, arity=1, shapes=((3, 4),))
      for n, f in [("floor", np.floor), ("ceil", np.ceil), ("round", np.round),
                   ("sign", np.sign)]),
    *(Elementwise(f"ms.{n}", f, arity=1, result=lambda d: dt.bool_, shapes=((3, 4),))
      for n, f in [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)]),
    Elementwise("ms.zeros_like", np.zeros_like, arity=1, shapes=((3, 4),)),
    Elementwise("ms.ones_like", np.ones_like, arity=1, shapes=((3, 4),)),
    Elementwise("ms.stop_gradient", lambda x: x, arity=1, shapes=((3, 4),)),
]


def _elementwise_cases():
    for case in ELEMENTWISE:
        shapes_list = BROADCAST_SHAPES if case.name in ("ms.add", "ms.mul", "ms.less") else (case.shapes,)
        for d in ALL:
            if d not in OPS[case.name].dtypes:
                continue
            for shapes in shapes_list:
                yield pytest.param(case, d, shapes, id=f"{case.name[3:]}-{d.name}-{shapes}")


@pytest.mark.parametrize("case,dtype,shapes", list(_elementwise_cases()))
def test_elementwise(case, dtype, shapes):
    inputs = [values(s, dtype, dom, seed=i) for i, (s, dom) in enumerate(zip(shapes, case.domains))]
    exe = compile_fn([spec(s, dtype) for s in shapes], lambda *a: op(case.name, *a))
    got, = exe(*inputs)
    want = case.ref(*inputs)
    assert_matches(got, want, case.result_dtype(dtype))


def test_every_op_with_a_lowering_is_tested_here():
    tested = ({c.name for c in ELEMENTWISE} | set(REDUCTIONS) | {c[0] for c in SHAPE_CASES}
              | {"ms.select", "ms.cast", "ms.constant", "ms.softmax", "ms.log_softmax",
                 "ms.matmul", "ms.batch_matmul", "ms.gather", "ms.one_hot", "ms.assign",
                 "ms.unsorted_segment_sum", "ms.argmax", "ms.argmin", "ms.random_uniform",
                 "ms.cumsum", "ms.fused", "ms.dynamic_index",
                 "ms.dynamic_update_index"}  # ms.fused: test_fusion.py
              | {"ms.max_pool", "ms.avg_pool", "ms.max_pool_grad", "ms.avg_pool_grad",
                 "ms.max_pool_gather"}  # test_pooling.py
              | {"ms.conv", "ms.conv_input_grad", "ms.conv_filter_grad"}  # test_conv*.py
              | {"ms.barrier"}  # test_custom_grad.py
              | {"ms.all_reduce", "ms.all_gather", "ms.reduce_scatter", "ms.broadcast",
                 "ms.comm_rank"}  # test_distributed.py (on 1, 2 and 3 processes)
              | {"ms.print"}  # test_ops_last.py (the printed text, in both modes)
              | {"ms.dim_size", "ms.broadcast_like", "ms.random_uniform_like"})  # below
    lowered = {n for n, d in OPS.items() if d.lower is not None}
    assert lowered <= tested, lowered - tested


@pytest.mark.parametrize("dtype", [dt.float32, dt.float16, dt.bfloat16, dt.int32, dt.uint8,
                                   dt.uint16, dt.uint64, dt.bool_])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4), (3, 4)), ((3, 1), (4,), ())])
def test_select(dtype, shapes):
    cond = values(shapes[0], dt.bool_, seed=1)
    x, y = values(shapes[1], dtype, seed=2), values(shapes[2], dtype, seed=3)
    exe = compile_fn([spec(shapes[0], dt.bool_), spec(shapes[1], dtype), spec(shapes[2], dtype)],
                     lambda c, a, b: op("ms.select", c, a, b))
    got, = exe(cond, x, y)
    assert_matches(got, np.where(cond, x, y), dtype)


def _in_range(x, src, dst):
    """Inputs whose conversion numpy defines (no float -> int overflow, no negative -> uint)."""
    if dst.kind == "uint" and not src.is_bool:
        x = np.abs(x)
    return x


@pytest.mark.parametrize("src", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("dst", ALL, ids=lambda d: d.name)
def test_cast(src, dst):
    x = _in_range(values((3, 5), src, seed=4), src, dst)
    if src.is_float:
        x[0, :3] = [0.0, -0.0, 2.75]
    exe = compile_fn([spec(x.shape, src)], lambda a: op("ms.cast", a, dtype=dst))
    got, = exe(x)
    assert_matches(got, x.astype(dst.np) if not dst.is_bool else x != 0, dst)


@pytest.mark.parametrize("dtype", [dt.float32, dt.float64, dt.bfloat16, dt.int64, dt.uint8,
                                   dt.uint16, dt.uint32, dt.uint64, dt.bool_])
def test_constant(dtype):
    value = values((2, 3), dtype, seed=5)
    from mscc.dialects.builders import constant
    exe = compile_fn([], lambda: constant(value, dtype))
    got, = exe()
    assert_matches(got, value, dtype)


# ------------------------------------------------------------------ reductions

def f64_if_float(x):
    """Float inputs (bfloat16 too: a numpy void kind) as float64, others unchanged."""
    return f64(x) if dt.from_numpy(x.dtype).is_float else x


REDUCTIONS = {
    "ms.reduce_sum": lambda x, axis, keep: np.sum(f64_if_float(x), axis=axis, keepdims=keep),
    "ms.reduce_mean": lambda x, axis, keep: np.mean(f64(x), axis=axis, keepdims=keep),
    "ms.reduce_max": lambda x, axis, keep: np.max(x, axis=axis, keepdims=keep),
    "ms.reduce_min": lambda x, axis, keep: np.min(x, axis=axis, keepdims=keep),
    "ms.reduce_prod": lambda x, axis, keep: np.prod(f64_if_float(x),
                                                    axis=axis, keepdims=keep),
}


def _reduce_result(name, d):
    if name == "ms.reduce_mean":
        return float_result(d)
    if name == "ms.reduce_sum" and d.is_bool:
        return dt.int64
    return d


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("dtype", [dt.float32, dt.float64, dt.float16, dt.bfloat16, dt.int32,
                                   dt.int8, dt.uint8, dt.uint16, dt.uint32, dt.uint64, dt.bool_],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("axis,keep", [((1,), False), ((0, 2), True), ((), False), ((-1,), True)])
def test_reduction(name, dtype, axis, keep):
    if dtype not in OPS[name].dtypes:
        pytest.skip(f"{name} takes no {dtype.name}")
    if dtype.is_bool and name == "ms.reduce_mean":
        pytest.skip("reduce_mean of bool is not defined (numpy gives float64)")
    # products of 24 floats stay within float16 in (-0.9, 0.9); integers wrap as numpy's
    x = values((2, 3, 4), dtype, "unit" if name == "ms.reduce_prod" and dtype.is_float
               else "any", seed=6)
    exe = compile_fn([spec(x.shape, dtype)],
                     lambda a: op(name, a, axis=axis, keep_dims=keep))
    got, = exe(x)
    want = REDUCTIONS[name](x, axis or None, keep)
    assert_matches(got, np.asarray(want), _reduce_result(name, dtype))


def _softmax64(x, axis):
    x = f64(x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", [dt.float32, dt.float64, dt.float16, dt.bfloat16],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("log", [False, True])
def test_softmax(dtype, axis, log):
    x = values((3, 5, 4), dtype, seed=7) * 4
    name = "ms.log_softmax" if log else "ms.softmax"
    exe = compile_fn([spec(x.shape, dtype)], lambda a: op(name, a, axis=axis))
    got, = exe(x)
    want = _softmax64(x, axis)
    assert_matches(got, np.log(want) if log else want, dtype)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax_special_values(log):
    """Rows with NaN, +inf or only -inf give numpy's results (all-NaN rows), the other rows
    are unaffected; wide enough to take the CPU's row-tiled path."""
    x = values((32, 1024), dt.float32, seed=20)  # 4-row tiles (passes/cpu_rows.py)
    x[1, 5] = np.nan
    x[6, 7] = np.inf
    x[17, :] = -np.inf
    name = "ms.log_softmax" if log else "ms.softmax"
    exe = compile_fn([spec(x.shape, dt.float32)], lambda a: op(name, a, axis=-1))
    got, = exe(x)
    with np.errstate(invalid="ignore"):
        want = _softmax64(x, -1)
        want = np.log(want) if log else want
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=2e-5, atol=1e-6)


# ------------------------------------------------------------------ contractions

@pytest.mark.parametrize("dtype", [dt.float32, dt.float64, dt.float16, dt.bfloat16, dt.int32,
                                   dt.int8, dt.uint16, dt.uint32, dt.uint64],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul(dtype, ta, tb):
    a = values((5, 7) if not ta else (7, 5), dtype, seed=8)
    b = values((7, 3) if not tb else (3, 7), dtype, seed=9)
    exe = compile_fn([spec(a.shape, dtype), spec(b.shape, dtype)],
                     lambda x, y: op("ms.matmul", x, y, transpose_a=ta, transpose_b=tb))
    got, = exe(a, b)
    am, bm = (a.T if ta else a), (b.T if tb else b)
    want = f64(am) @ f64(bm) if dtype.is_float else am @ bm
    assert_matches(got, want, dtype)


@pytest.mark.parametrize("shape", [(64, 256, 256), (130, 70, 300), (8, 32, 1)])
def test_matmul_tiled_shapes(shape):
    """Shapes at, above and off the CPU schedule's tile sizes (64x256x256, 8x32x1)."""
    m, n, k = shape
    a, b = values((m, k), dt.float32, seed=10), values((k, n), dt.float32, seed=11)
    exe = compile_fn([spec(a.shape, dt.float32), spec(b.shape, dt.float32)],
                     lambda x, y: op("ms.matmul", x, y, transpose_a=False, transpose_b=False))
    got, = exe(a, b)
    np.testing.assert_allclose(got, f64(a) @ f64(b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,n,k,dtype,tb,bias,packed", [
    (128, 1024, 128, dt.float32, False, False, True),    # B's rows 4 KiB apart: packed
    (130, 1024, 256, dt.float32, False, False, True),    # ... with a ragged row edge
    (128, 1024, 256, dt.float32, True, False, True),     # ... B transposed (packed from it)
    (128, 512, 128, dt.float64, False, False, True),     # 512 float64 = 4 KiB
    (128, 1024, 128, dt.float32, False, True, True),     # an epilogue reads C: C passed twice
    (130, 1024, 256, dt.float32, True, True, True),      # ... B = W^T, ragged rows
    (128, 512, 128, dt.float32, False, False, True),     # 2 KiB apart: 2 of the 64 L1 sets
    (128, 800, 128, dt.float32, False, False, False),    # 3200 bytes apart: 32 sets, enough
], ids=lambda v: str(v) if not isinstance(v, dt.DType) else v.name)
def test_matmul_packed_b(m, n, k, dtype, tb, bias, packed):
    """CPU matmuls whose B rows fall into few sets of the L1 data cache (a 48 KiB, 12-way
    one, pinned by the pass options) read B from a packed copy."""
    from mlir import ir
    from mscc.passes import pipeline
    from mstest import module_of
    a = values((m, k), dtype, seed=14)
    b = values((n, k) if tb else (k, n), dtype, seed=15)
    c = values((n,), dtype, seed=16)
    specs = [spec(a.shape, dtype), spec(b.shape, dtype), spec(c.shape, dtype)]

    def body(x, y, z):
        r = op("ms.matmul", x, y, transpose_a=False, transpose_b=tb)
        return op("ms.add", r, z) if bias else r
    module = module_of(specs, body)
    with module.context, ir.Location.unknown():
        pipeline.run_pipeline(module, "cpu", stop_after="bufferized")
        pipeline.run_steps(module, pipeline.parse_pipeline(
            "ms-cpu-matmul-schedule{vector-bits=512 l1d-bytes=49152 l1d-ways=12}"))
    # packed: the kernel reads B as strips Bp[N/nr][K][nr] (from B, or from W where B = W^T)
    kernel_ranks = {ir.MemRefType(t).rank for f in module.body.operations
                    if "ms.kernel" in f.attributes
                    for t in ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value).inputs}
    assert (3 in kernel_ranks) == packed
    exe = compile_fn(specs, body)
    got, = exe(a, b, c)
    want = f64(a) @ f64(b.T if tb else b) + (f64(c) if bias else 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [dt.float32, dt.float64, dt.int64], ids=lambda d: d.name)
@pytest.mark.parametrize("shapes,ta,tb", [(((2, 3, 4), (2, 4, 5)), False, False),
                                          (((2, 1, 3, 4), (3, 5, 4)), False, True),
                                          (((4, 4, 2), (1, 4, 5)), True, False)])
def test_batch_matmul(dtype, shapes, ta, tb):
    a, b = values(shapes[0], dtype, seed=12), values(shapes[1], dtype, seed=13)
    exe = compile_fn([spec(a.shape, dtype), spec(b.shape, dtype)],
                     lambda x, y: op("ms.batch_matmul", x, y, transpose_a=ta, transpose_b=tb))
    got, = exe(a, b)
    am = np.swapaxes(a, -1, -2) if ta else a
    bm = np.swapaxes(b, -1, -2) if tb else b
    want = np.matmul(f64(am), f64(bm)) if dtype.is_float else np.matmul(am, bm)
    assert_matches(got, want, dtype)


# ------------------------------------------------------------------ data movement

SHAPE_CASES = [
    # name, input shapes, attrs, numpy reference
    ("ms.reshape", [(2, 3, 4)], dict(shape=(4, -1)), lambda x: x.reshape(4, -1)),
    ("ms.reshape", [(6,)], dict(shape=(1, 6, 1)), lambda x: x.reshape(1, 6, 1)),
    ("ms.reshape", [(1, 1)], dict(shape=()), lambda x: x.reshape(())),
    ("ms.reshape", [()], dict(shape=(1, 1)), lambda x: x.reshape(1, 1)),
    ("ms.transpose", [(2, 3, 4)], dict(perm=(2, 0, 1)), lambda x: x.transpose(2, 0, 1)),
    ("ms.transpose", [(2, 3)], dict(perm=(-1, 0)), lambda x: x.T),
    ("ms.broadcast_to", [(3, 1)], dict(shape=(2, 3, 4)), lambda x: np.broadcast_to(x, (2, 3, 4))),
    ("ms.broadcast_to", [(3,)], dict(shape=(2, -1)), lambda x: np.broadcast_to(x, (2, 3))),
    ("ms.expand_dims", [(2, 3)], dict(axis=1), lambda x: x[:, None]),
    ("ms.expand_dims", [(2, 3)], dict(axis=-1), lambda x: x[..., None]),
    ("ms.squeeze", [(1, 3, 1)], dict(axis=()), lambda x: x.reshape(3)),
    ("ms.squeeze", [(1, 3, 1)], dict(axis=(-1,)), lambda x: x.reshape(1, 3)),
    ("ms.concat", [(2, 3), (2, 5)], dict(axis=1), lambda x, y: np.concatenate([x, y], 1)),
    ("ms.concat", [(2, 3), (4, 3)], dict(axis=-2), lambda x, y: np.concatenate([x, y], 0)),
    ("ms.tile", [(2, 3)], dict(multiples=(2, 3)), lambda x: np.tile(x, (2, 3))),
    ("ms.tile", [(3,)], dict(multiples=(2, 1)), lambda x: np.tile(x, (2, 1))),
    ("ms.slice", [(4, 5)], dict(begin=(1, 2), size=(2, -1)), lambda x: x[1:3, 2:]),
    ("ms.strided_slice", [(6, 5)], dict(begin=(1, -4), end=(6, 5), strides=(2, 3)),
     lambda x: x[1:6:2, -4:5:3]),
    ("ms.strided_slice", [(6, 5)], dict(begin=(-2,), end=(100,), strides=(1,)), lambda x: x[-2:]),
    ("ms.strided_slice_grad", [(3, 2)], dict(shape=(6, 5), begin=(1, -4), end=(6, 5),
                                             strides=(2, 3)),
     lambda d: _scatter(d, (6, 5), np.s_[1:6:2, -4:5:3])),
    ("ms.strided_slice_grad", [(2, 4)], dict(shape=(4, 4), begin=(-2,), end=(100,), strides=(1,)),
     lambda d: _scatter(d, (4, 4), np.s_[-2:])),
    # negative strides; `like` lending the sizes that `shape` leaves open (-1)
    ("ms.strided_slice", [(6, 5)], dict(begin=(-2, 4), end=(-7, 0), strides=(-2, -3)),
     lambda x: x[-2::-2, 4:0:-3]),
    ("ms.strided_slice_grad", [(3, 2), (6, 5)], dict(shape=(-1, 5), begin=(-2, 4),
                                                     end=(-7, 0), strides=(-2, -3)),
     lambda d, like: _scatter(d, (6, 5), np.s_[-2::-2, 4:0:-3])),
]


def _scatter(d, shape, where):
    out = np.zeros(shape, d.dtype)
    out[where] = d
    return out


@pytest.mark.parametrize("dtype", [dt.float32, dt.int64, dt.uint8, dt.bool_, dt.float16,
                                   dt.bfloat16, dt.uint16, dt.uint32, dt.uint64],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("name,shapes,attrs,ref", SHAPE_CASES,
                         ids=[f"{c[0][3:]}-{i}" for i, c in enumerate(SHAPE_CASES)])
def test_data_movement(dtype, name, shapes, attrs, ref):
    inputs = [values(s, dtype, seed=14 + i) for i, s in enumerate(shapes)]
    exe = compile_fn([spec(s, dtype) for s in shapes], lambda *a: op(name, *a, **attrs))
    got, = exe(*inputs)
    assert_matches(got, ref(*inputs), dtype)


@pytest.mark.parametrize("shape,axes,dtype", [((3, 4), (0, 1), dt.float32), ((5, 2), (0,), dt.int64),
                                               ((None, 4), (0,), dt.float64),
                                               ((None, 4, 2), (0, 2), dt.float32)])
def test_dim_size(shape, axes, dtype):
    """The element count along `axes`, static or read at run time (a dynamic size: None)."""
    from mscc.dialects.symdim import ANY
    ms_shape = tuple(ANY if d is None else d for d in shape)
    exe = compile_fn([spec(ms_shape, dt.float32)],
                     lambda x: op("ms.dim_size", x, axis=axes, dtype=dtype))
    for n in ((3, 7, 0) if None in shape else (None,)):
        x = np.zeros(tuple(n if d is None else d for d in shape), np.float32)
        got, = exe(x)
        assert got.shape == () and got.dtype == dtype.np
        assert got == math.prod(x.shape[a] for a in axes)


@pytest.mark.parametrize("dtype", [dt.float32, dt.int32, dt.bool_], ids=lambda d: d.name)
@pytest.mark.parametrize("x_shape,shape,axes", [((), (-1, 3), (1, -1)), ((3,), (-1, 3), (0, -1)),
                                                ((2, 1), (2, -1), (-1, 0))])
def test_broadcast_like(dtype, x_shape, shape, axes):
    """x broadcast to `shape`, the -1 sizes taken from axes of `like` (a dynamic one too)."""
    from mscc.dialects.symdim import ANY
    x = values(x_shape, dtype, seed=3)
    for like_shape in ((5, 4), (ANY, 4)):
        exe = compile_fn([spec(x_shape, dtype), spec(like_shape, dt.float32)],
                         lambda a, b: op("ms.broadcast_like", a, b, shape=shape, axes=axes))
        like = np.zeros((5, 4), np.float32)
        got, = exe(x, like)
        want_shape = tuple(like.shape[a] if a >= 0 else d for d, a in zip(shape, axes))
        assert_matches(got, np.broadcast_to(x, want_shape), dtype)


def test_random_uniform_like_draws_what_random_uniform_draws():
    """The same numbers for the same shape, whether it is an attribute or like's (dynamic)."""
    from mscc.dialects.symdim import ANY
    counter = np.array(7, np.int64)
    fixed = compile_fn([spec((), dt.int64)],
                       lambda c: op("ms.random_uniform", c, shape=(6, 5), seed=3))
    like = compile_fn([spec((), dt.int64), spec((ANY, 5), dt.float32)],
                      lambda c, v: op("ms.random_uniform_like", c, v, seed=3))
    want, = fixed(counter)
    got, = like(counter, np.zeros((6, 5), np.float32))
    np.testing.assert_array_equal(got, want)
    assert like(counter, np.zeros((2, 5), np.float32))[0].shape == (2, 5)


@pytest.mark.parametrize("scatter", ["loops", "reduction"])
@pytest.mark.parametrize("dtype", [dt.float32, dt.float64, dt.float16, dt.bfloat16, dt.int32,
                                   dt.int8, dt.uint8, dt.uint16, dt.uint32, dt.uint64],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("axis,exclusive,reverse", [(1, False, False), (-1, True, False),
                                                    (0, False, True), (1, True, True)])
def test_cumsum(dtype, axis, exclusive, reverse, scatter):
    """Both lowerings (the CPU's loop over the axis, CUDA's masked reduction) on the CPU;
    integers wrap as numpy's."""
    x = values((3, 4, 5), dtype, seed=22)
    exe = compile_fn([spec(x.shape, dtype)], lambda a: op(
        "ms.cumsum", a, axis=axis, exclusive=exclusive, reverse=reverse),
        linalg_options="scatter=reduction" if scatter == "reduction" else "")
    got, = exe(x)
    if scatter == "reduction":  # (compiled from the linalg stage, whose uint8 is i8)
        got = got.view(dtype.np)
    y = np.flip(x, axis) if reverse else x
    want = np.cumsum(f64(y) if dtype.is_float else y, axis=axis)
    want = want - y if exclusive else want
    assert_matches(got, np.flip(want, axis) if reverse else want, dtype)


@pytest.mark.parametrize("index_dtype", [dt.int32, dt.int64], ids=lambda d: d.name)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather(index_dtype, axis):
    params = values((4, 5, 3), dt.float32, seed=15)
    size = params.shape[axis]
    indices = np.array([[0, size - 1], [1, 2]], dtype=index_dtype.np)
    exe = compile_fn([spec(params.shape, dt.float32), spec(indices.shape, index_dtype)],
                     lambda p, i: op("ms.gather", p, i, axis=axis))
    got, = exe(params, indices)
    assert_matches(got, np.take(params, indices, axis=axis), dt.float32)


def test_gather_out_of_range_gives_zeros():
    params = values((4, 2), dt.float32, seed=16)
    indices = np.array([1, 4, -1], dtype=np.int32)
    exe = compile_fn([spec(params.shape, dt.float32), spec(indices.shape, dt.int32)],
                     lambda p, i: op("ms.gather", p, i, axis=0))
    got, = exe(params, indices)
    assert_matches(got, np.stack([params[1], np.zeros(2), np.zeros(2)]).astype(np.float32))


@pytest.mark.parametrize("name,ref", [("ms.argmax", np.argmax), ("ms.argmin", np.argmin)],
                         ids=["argmax", "argmin"])
@pytest.mark.parametrize("dtype", [dt.float32, dt.float64, dt.float16, dt.bfloat16, dt.int32,
                                   dt.int8, dt.uint8, dt.uint16, dt.uint32, dt.uint64],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("axis,keep", [(0, False), (1, True), (-1, False)])
def test_argmax_argmin(name, ref, dtype, axis, keep):
    """The first extreme index, as numpy: ties (few distinct values) and, for floats, NaN
    (a first NaN wins) and -inf/inf rows."""
    x = np.random.default_rng(21).integers(0, 4, (5, 6, 7)).astype(dtype.np)
    if dtype.is_float:
        x[1, 2, 3] = x[2, 4, 0] = np.nan
        x[3] = -np.inf if name == "ms.argmax" else np.inf
    exe = compile_fn([spec(x.shape, dtype)], lambda t: op(name, t, axis=axis, keep_dims=keep))
    got, = exe(x)
    want = ref(x, axis=axis)
    assert_matches(got, np.expand_dims(want, axis) if keep else want, dt.int32)


@pytest.mark.parametrize("shape,counter,seed", [((1000, 37), 0, 0), ((3, 4, 5), 12345, 7),
                                                ((64,), 2**40 + 3, 2**33 + 1)])
def test_random_uniform_is_the_counter_hash(shape, counter, seed):
    """Bit-exact against numpy's model of the generator, and uniform: mean 1/2, variance
    1/12 (for the large case)."""
    exe = compile_fn([spec((), dt.int64)],
                     lambda k: op("ms.random_uniform", k, shape=shape, seed=seed))
    got, = exe(np.array(counter, np.int64))
    want = gpu_cases.random_uniform_ref(shape, counter, seed)
    np.testing.assert_array_equal(got, want)
    assert got.min() >= 0 and got.max() < 1
    if got.size >= 10000:
        assert abs(got.mean() - 0.5) < 0.01 and abs(got.var() - 1 / 12) < 0.005


@pytest.mark.parametrize("scatter", ["loops", "reduction"])
@pytest.mark.parametrize("dtype,index_dtype,shapes", [
    (dt.float32, dt.int32, ((6, 4), (6,))),
    (dt.float64, dt.int64, ((2, 3, 5), (2, 3))),
    (dt.int32, dt.int32, ((5,), (5,))),
    (dt.float16, dt.int64, ((7, 2, 2), (7,))),
], ids=lambda v: getattr(v, "name", None))
def test_unsorted_segment_sum(dtype, index_dtype, shapes, scatter):
    """Both lowerings (the CPU's loop, the GPU's reduction) on the CPU; ids outside
    [0, num_segments) -- negative ones and 4, 5 -- are dropped."""
    data = values(shapes[0], dtype, seed=19)
    ids = np.random.default_rng(20).integers(-2, 6, shapes[1]).astype(index_dtype.np)
    exe = compile_fn([spec(shapes[0], dtype), spec(shapes[1], index_dtype)],
                     lambda d, i: op("ms.unsorted_segment_sum", d, i, num_segments=4),
                     linalg_options=f"scatter={scatter}")
    got, = exe(data, ids)
    assert_matches(got, gpu_cases.segment_sum_ref(f64(data), ids, 4), dtype)


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("dtype", [dt.float32, dt.int32], ids=lambda d: d.name)
def test_one_hot(axis, dtype):
    from mscc.dialects.builders import constant
    indices = np.array([[0, 3], [2, 5]], dtype=np.int64)  # 5 is out of range: all off
    depth = 4
    exe = compile_fn([spec(indices.shape, dt.int64)], lambda i: op(
        "ms.one_hot", i, constant(np.array(7, dtype.np)), constant(np.array(-1, dtype.np)),
        depth=depth, axis=axis))
    got, = exe(indices)
    eye = (indices[..., None] == np.arange(depth))
    want = np.moveaxis(eye, -1, axis if axis != -1 else -1)
    assert_matches(got, np.where(want, 7, -1), dtype)


def test_assign_returns_the_value():
    w, v = values((3,), dt.float32, seed=17), values((3,), dt.float32, seed=18)
    exe = compile_fn([spec((3,), dt.float32)] * 2, lambda a, b: op("ms.assign", a, b))
    got, = exe(w, v)
    assert_matches(got, v)


def test_results_sharing_an_init_tensor():
    """Two same-shaped reductions share one (CSE'd) init; each result keeps its own buffer."""
    a, b, c = (values((3, 4), dt.float64, seed=s) for s in (19, 20, 21))
    reduce = lambda v: op("ms.reduce_sum", v, axis=(0,), keep_dims=False)  # noqa: E731
    exe = compile_fn([spec((3, 4), dt.float64)] * 3, lambda x, y, z: [
        reduce(op("ms.mul", x, y)), reduce(op("ms.mul", z, y))])
    first, second = exe(a, b, c)
    assert_matches(first, (a * b).sum(0))
    assert_matches(second, (c * b).sum(0))


@pytest.mark.parametrize("dtype", [dt.float32, dt.int32, dt.uint8, dt.bool_, dt.bfloat16])
@pytest.mark.parametrize("index_dtype", [dt.int32, dt.int64])
def test_dynamic_index_and_update(dtype, index_dtype):
    """x[i] and x with row i replaced, i known at run time and clamped into range (the loops'
    row access, dialects/ops/control.py)."""
    x, u = values((5, 2, 3), dtype, seed=1), values((2, 3), dtype, seed=2)
    exe = compile_fn([spec((5, 2, 3), dtype), spec((2, 3), dtype), spec((), index_dtype)],
                     lambda a, b, i: [op("ms.dynamic_index", a, i),
                                      op("ms.dynamic_update_index", a, b, i)])
    for i in (0, 3, 4, 9, -2):
        row, updated = exe(x, u, np.array(i, index_dtype.np))
        k = min(max(i, 0), 4)
        want = x.copy()
        want[k] = u
        np.testing.assert_array_equal(row, x[k])
        np.testing.assert_array_equal(updated, want)

