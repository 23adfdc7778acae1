"""Fused programs (ms-fuse + ms.fused lowering) against numpy: each case is built as ms IR,
compiled through the one pipeline and run; the table also says which fused regions
ms-fuse must form, so a case that stops fusing fails too."""
from dataclasses import dataclass

import numpy as np
import pytest
from mlir import ir

from mscc.dialects import dtypes as dt
from mscc.dialects.builders import build_function, constant, mlir_context
from mscc.passes import pipeline
from mscc.passes.compiler import compile_module
from mstest import assert_matches, op, spec

F32 = dt.float32


def scalar(v, dtype=None):
    """A Python scalar as the frontend emits it (implicit cast gives it the tensor's dtype),
    or a 0-d tensor of `dtype`."""
    if dtype is None:
        return constant(np.array(v, np.float64 if isinstance(v, float) else np.int64), scalar=True)
    return constant(np.array(v, dtype.np), dtype)


def f64(x):
    return np.asarray(x, np.float64)


# ------------------------------------------------------------------ programs

def chain(x, a, b):  # the benchmark's elementwise chain: tanh(x*a+b)*sigmoid(x)+0.5*x
    t = op("ms.tanh", op("ms.add", op("ms.mul", x, a), b))
    return op("ms.add", op("ms.mul", t, op("ms.sigmoid", x)), op("ms.mul", x, scalar(0.5)))


def chain_ref(x, a, b):
    x, a, b = f64(x), f64(a), f64(b)
    return np.tanh(x * a + b) / (1 + np.exp(-x)) + 0.5 * x


def gelu(x):  # tanh approximation
    inner = op("ms.mul", op("ms.add", x, op("ms.mul", scalar(0.044715), op("ms.mul", x, op("ms.mul", x, x)))),
               scalar(np.sqrt(2 / np.pi)))
    return op("ms.mul", op("ms.mul", scalar(0.5), x), op("ms.add", scalar(1.0), op("ms.tanh", inner)))


def gelu_ref(x):
    x = f64(x)
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def softmax_primitives(x):
    m = op("ms.reduce_max", x, axis=(1,), keep_dims=True)
    e = op("ms.exp", op("ms.sub", x, m))
    return op("ms.div", e, op("ms.reduce_sum", e, axis=(1,), keep_dims=True))


def softmax_ref(x, axis=-1):
    x = f64(x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layernorm(x, g, b):
    mean = op("ms.reduce_mean", x, axis=(1,), keep_dims=True)
    d = op("ms.sub", x, mean)
    var = op("ms.reduce_mean", op("ms.mul", d, d), axis=(1,), keep_dims=True)
    rstd = op("ms.rsqrt", op("ms.add", var, scalar(1e-5)))
    return op("ms.add", op("ms.mul", op("ms.mul", d, rstd), g), b)


def layernorm_ref(x, g, b):
    x = f64(x)
    mean = x.mean(1, keepdims=True)
    var = ((x - mean) ** 2).mean(1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * g + b


def dense(x, w, b):
    return op("ms.mul", op("ms.relu", op("ms.add", op("ms.matmul", x, w, transpose_a=False,
                                                      transpose_b=False), b)), scalar(0.5))


def dense_ref(x, w, b):
    return np.maximum(f64(x) @ f64(w) + b, 0) * 0.5


def where_positive(x):  # int32 in, float32 out: compare, cast and select in one body
    pos = op("ms.greater", x, scalar(0, dt.int32))
    return op("ms.select", pos, op("ms.cast", x, dtype=F32), scalar(-1.0))


@dataclass
class Case:
    name: str
    shapes: tuple
    body: object
    ref: object
    regions: tuple                 # kinds of the ms.fused regions ms-fuse must form
    dtype: object = F32
    domain: tuple = (-2.0, 2.0)
    tol: dict | None = None        # float32 sums of many products: scale-aware tolerance


CASES = [
    Case("chain", ((64, 48), (48,), ()), chain, chain_ref, ("elementwise",)),
    Case("gelu", ((1000,),), gelu, gelu_ref, ("elementwise",)),
    Case("gelu_f64", ((7, 9),), gelu, gelu_ref, ("elementwise",), dtype=dt.float64),
    Case("softmax_op_scaled", ((9, 33),),
         lambda x: op("ms.softmax", op("ms.mul", x, scalar(3.0)), axis=-1),
         lambda x: softmax_ref(3 * f64(x)), ("reduction",)),
    Case("log_softmax_shifted", ((5, 6, 7),),
         lambda x: op("ms.log_softmax", op("ms.sub", x, scalar(1.0)), axis=1),
         lambda x: np.log(softmax_ref(f64(x) - 1, axis=1)), ("reduction",)),
    Case("softmax_primitives", ((9, 33),), softmax_primitives, softmax_ref, ("elementwise",)),
    Case("layernorm", ((16, 40), (40,), (40,)), layernorm, layernorm_ref,
         ("reduction", "elementwise")),
    Case("logsumexp", ((6, 50),),
         lambda x: op("ms.log", op("ms.reduce_sum", op("ms.exp", x), axis=(1,), keep_dims=False)),
         lambda x: np.log(np.exp(f64(x)).sum(1)), ("reduction",)),
    Case("mean_square_all", ((3, 4, 5),),
         lambda x: op("ms.reduce_mean", op("ms.mul", x, x), axis=(), keep_dims=False),
         lambda x: (f64(x) ** 2).mean(), ("reduction",)),
    Case("dense", ((8, 16), (16, 32), (32,)), dense, dense_ref, ("matmul",)),
    Case("dense_odd_shape", ((13, 70), (70, 37), (37,)), dense, dense_ref, ("matmul",),
         tol=dict(rtol=1e-4, atol=1e-4)),
    Case("dense_f64", ((5, 7), (7, 3), (3,)), dense, dense_ref, ("matmul",), dtype=dt.float64),
    Case("batched_tanh", ((2, 5, 8), (2, 8, 3)),
         lambda x, w: op("ms.tanh", op("ms.batch_matmul", x, w, transpose_a=False, transpose_b=False)),
         lambda x, w: np.tanh(np.matmul(f64(x), f64(w))), ("matmul",)),
    Case("where_int", ((4, 6),), where_positive,
         lambda x: np.where(x > 0, x.astype(np.float32), np.float32(-1)), ("elementwise",),
         dtype=dt.int32, domain=(-5, 5)),
    Case("chain_f16", ((4, 8), (8,), ()), chain, chain_ref, ("elementwise",), dtype=dt.float16),
    # broadcast_to joins an elementwise chain, and stays out of a reduction it would expand
    Case("broadcast_to_chain", ((3, 1), (2, 3, 5)),
         lambda s, x: op("ms.mul", op("ms.broadcast_to", s, shape=(2, 3, 5)), op("ms.tanh", x)),
         lambda s, x: f64(s) * np.tanh(f64(x)), ("elementwise",)),
    # (ms-simplify-broadcasts computes the exp before broadcasting: the broadcast alone
    # feeds the reduction, which it would expand, so there is no region)
    Case("broadcast_to_reduced", ((6, 1),),
         lambda s: op("ms.reduce_sum", op("ms.exp", op("ms.broadcast_to", s, shape=(6, 9))),
                      axis=(1,), keep_dims=False),
         lambda s: 9 * np.exp(f64(s))[:, 0], ()),
    Case("broadcast_to_reduced_with_input", ((6, 1), (6, 9)),
         lambda s, x: op("ms.reduce_sum", op("ms.mul", op("ms.exp", op(
             "ms.broadcast_to", s, shape=(6, 9))), x), axis=(1,), keep_dims=False),
         lambda s, x: (np.exp(f64(s)) * f64(x)).sum(1), ("reduction",)),
    Case("uint8_chain", ((3, 7),),
         lambda x: op("ms.maximum", op("ms.sub", op("ms.mul", x, x), x), scalar(3, dt.uint8)),
         lambda x: np.maximum(x * x - x, np.uint8(3)), ("elementwise",), dtype=dt.uint8,
         domain=(1, 9)),
]


def inputs_for(case):
    rng = np.random.default_rng(0)
    lo, hi = case.domain
    out = []
    for s in case.shapes:
        if case.dtype.is_float:
            out.append(rng.uniform(lo, hi, s).astype(case.dtype.np))
        else:
            out.append(rng.integers(lo, hi, s).astype(case.dtype.np))
    return out


def compile_with_regions(in_specs, body):
    """Compile through the whole pipeline; also return the kinds of the ms.fused regions
    found at the ms-opt stage."""
    with mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        build_function(module, "f", in_specs, body)
        module.operation.verify()
        pipeline.run_pipeline(module, stop_after="ms-opt")
        kinds = []

        def visit(o):
            if o.operation.name == "ms.fused":
                kinds.append(ir.StringAttr(o.attributes["kind"]).value)
            return ir.WalkResult.ADVANCE
        module.operation.walk(visit)
        return compile_module(module, "f", start_after="ms-opt"), kinds


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_fused_program(case):
    args = inputs_for(case)
    exe, kinds = compile_with_regions([spec(s, case.dtype) for s in case.shapes], case.body)
    assert sorted(kinds) == sorted(case.regions)
    got, = exe(*args)
    want = np.asarray(case.ref(*args))
    out_dtype = got.dtype if case.dtype is not dt.float16 else np.float16
    if case.dtype is dt.float16:  # computed in float16: compare loosely
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-2, atol=2e-2)
    elif case.tol:
        assert got.dtype == case.dtype.np
        np.testing.assert_allclose(got.astype(np.float64), want, **case.tol)
    else:
        assert_matches(got, want.astype(out_dtype) if want.dtype.kind != "f" else want,
                       got.dtype)


def test_cheap_value_also_returned():
    """A cheap producer that is returned is stored once and its consumer reads it; one
    that broadcasts a smaller operand is recomputed inside the consumer's region too."""
    x = np.linspace(-1, 1, 12, dtype=np.float32)
    s = np.array([1.5], np.float32)

    def stored(a, b):
        m = op("ms.mul", a, a)
        return op("ms.exp", m), m

    def recomputed(a, b):
        m = op("ms.mul", a, b)
        return op("ms.exp", m), m
    for body, regions, want_m in ((stored, [], f64(x) ** 2),
                                  (recomputed, ["elementwise"], f64(x) * 1.5)):
        exe, kinds = compile_with_regions([spec(x.shape, F32), spec(s.shape, F32)], body)
        assert kinds == regions
        e, m = exe(x, s)
        assert_matches(m, want_m, np.float32)
        assert_matches(e, np.exp(want_m), np.float32)


def test_long_chain_is_split_by_the_size_bound():
    x = np.linspace(0.1, 1, 16, dtype=np.float32)

    def body(a):
        for i in range(80):
            a = op("ms.add", op("ms.mul", a, scalar(0.5)), scalar(0.25)) if i % 2 else op("ms.tanh", a)
        return a
    exe, kinds = compile_with_regions([spec(x.shape, F32)], body)
    assert len(kinds) == 4  # 120 ops, at most 32 per region
    want = f64(x)
    for i in range(80):
        want = want * 0.5 + 0.25 if i % 2 else np.tanh(want)
    got, = exe(x)
    assert_matches(got, want, np.float32)


# Large enough for ms-cpu-parallelize (>= 32K iterations): with an OpenMP runtime these run
# as OpenMP worksharing loops, without one sequentially; both must match numpy.
LARGE = [
    Case("chain_large", ((300, 512), (512,), ()), chain, chain_ref, ("elementwise",)),
    Case("softmax_large", ((601, 100),), lambda x: op("ms.softmax", x, axis=-1), softmax_ref, ()),
    Case("layernorm_large_odd", ((257, 129), (129,), (129,)), layernorm, layernorm_ref,
         ("reduction", "elementwise")),
    Case("column_sum", ((400, 300),),
         lambda x: op("ms.reduce_sum", op("ms.mul", x, x), axis=(0,), keep_dims=False),
         lambda x: (f64(x) ** 2).sum(0), ("reduction",)),
    Case("dense_large", ((130, 70), (70, 300), (300,)), dense, dense_ref, ("matmul",),
         tol=dict(rtol=1e-4, atol=1e-4)),
]


@pytest.mark.parametrize("case", LARGE, ids=lambda c: c.name)
def test_large_program(case):
    test_fused_program(case)


def test_parallel_loops_use_openmp_when_available():
    from mscc.runtime.openmp import num_threads
    if num_threads() < 2:
        pytest.skip("no OpenMP runtime (pip install intel-openmp) or a single CPU")
    with mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        build_function(module, "f", [spec((512, 300), F32)], lambda x: op("ms.exp", x))
        pipeline.run_pipeline(module, stop_after="llvm")
        assert "ms.openmp" in module.operation.attributes
        assert "omp.parallel" in str(module)


def test_output_buffers_are_reused_only_when_released():
    from mstest import compile_fn
    exe = compile_fn([spec((64,), F32)], lambda a: op("ms.mul", a, a))
    x = np.arange(64, dtype=np.float32)
    first, = exe(x)
    held = first.copy()
    second, = exe(x + 1)                       # `first` is still held: a new array
    assert second is not first
    np.testing.assert_array_equal(first, held)
    view = second[:3]
    third, = exe(x + 2)                        # `second` is held through a view
    assert third is not second
    np.testing.assert_array_equal(view, (x[:3] + 1) ** 2)
    address = third.ctypes.data
    del third
    fourth, = exe(x + 3)                       # released: the same buffer again
    assert fourth.ctypes.data == address
    np.testing.assert_array_equal(fourth, (x + 3) ** 2)


@pytest.mark.parametrize("reduce,value,axes", [
    ("reduce_min", np.ones(3, np.int32), ()),          # cast to bool: a splat of true
    ("reduce_sum", np.full((4, 5), 2.0, np.float32), (1,)),
    ("reduce_max", np.full((2, 3, 4), -1.5, np.float32), (0, 2)),
])
def test_a_reduction_of_a_splat_constant_keeps_its_loop_sizes(reduce, value, axes):
    """Under jit with no arguments the reduced value is a splat constant, which the fused
    region inlines as a scalar: that left the reduction's linalg.generic without an operand
    spanning the reduced loop ("invalid indexing maps are non-invertible": API fuzzing,
    bench/fuzz_api.py, ops.amin(True, initial=<constant>, where=True))."""
    import mscc as ms
    from mscc import ops
    c = ms.Tensor(value)

    def f():
        x = ops.cast(c, ms.bool_) if reduce == "reduce_min" else c * 1.0
        return getattr(ops, reduce)(x, axes)
    got = ms.jit(f)().asnumpy()
    base = value.astype(bool) if reduce == "reduce_min" else value.astype(np.float64)
    want = getattr(np, {"reduce_min": "min", "reduce_sum": "sum", "reduce_max": "max"}[reduce])(
        base, axis=axes or None)
    np.testing.assert_allclose(got, want)
