"""Float sums and means over large extents (1e6-1e7 elements) against float64 numpy: graph
mode (ms.jit) and PyNative, full reductions, a large axis with a few kept rows, keep_dims,
the fused MSE form reduce_mean((a - b) ** 2), a fused prologue with broadcast operands,
float16/bfloat16/float64, extents without a divisor near the block (float64 accumulation),
and the CUDA kernels (emulated on the CPU).

A running float32 sum of n elements errs by up to ~n ulps: over 6.4M elements the mean was
1e-5..1e-3 off (3.4e-4 for exponentially distributed values, 6.5e-4 for the fused MSE).
Summed in blocks (dialects/ops/reduction.py, SUM_BLOCK) the error stays near float32's
rounding of the result; 1e-5 is what blocked summation meets with a wide margin.
"""
import numpy as np
import pytest
from mlir import ir

import mscc as ms
from mscc import ops
from mscc.dialects import dtypes as dt
from mscc.dialects.builders import build_function, mlir_context
from mscc.passes import pipeline
from mscc.passes.compiler import compile_module
from mstest import module_of, op, spec

RTOL = 1e-5
MODES = ["graph", "pynative"]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _check(got, want, rtol=RTOL):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    err = np.max(np.abs(got - want) / np.abs(want))
    assert err <= rtol, f"relative error {err:.3g} > {rtol:g}"


def _run(mode, fn, *arrays):
    f = fn if mode == "pynative" else ms.jit(fn)
    return f(*[ms.Tensor(a) for a in arrays]).asnumpy()


# (shape, axis, keep_dims): full reductions of 1-D and 4-D tensors, a large last axis with
# four kept rows, a large first axis with kept columns, NCHW statistics over (0, 2, 3).
CASES = [
    ((10_000_000,), None, False),
    ((1 << 20,), 0, True),
    ((32, 64, 56, 56), None, False),
    ((4, 2_000_000), 1, False),
    ((4, 2_000_000), -1, True),
    ((250_000, 8), 0, False),
    ((16, 64, 56, 56), (0, 2, 3), True),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape,axis,keep", CASES, ids=str)
@pytest.mark.parametrize("name", ["sum", "mean"])
def test_float32_sum_and_mean(name, shape, axis, keep, mode):
    x = _rng().uniform(0, 4, shape).astype(np.float32)
    fn = ops.reduce_sum if name == "sum" else ops.reduce_mean
    ref = np.sum if name == "sum" else np.mean
    got = _run(mode, lambda t: fn(t, axis, keep), x)
    assert got.dtype == np.float32
    _check(got, ref(x.astype(np.float64), axis=axis, keepdims=keep))


@pytest.mark.parametrize("mode", MODES)
def test_small_values_are_not_lost(mode):
    """Exponentially distributed values (many small ones, which a running float32 total
    rounds away): the case that erred by 3.4e-4 over 6.4M elements."""
    x = _rng(1).exponential(2.0, (32, 64, 56, 56)).astype(np.float32)
    _check(_run(mode, lambda t: ops.reduce_mean(t), x), x.astype(np.float64).mean())


def _square(d):
    return op("ms.mul", d, d)


def _regions(in_specs, body):
    """Compile through the whole pipeline; the executable and the kinds of the ms.fused
    regions at the ms-opt stage."""
    with mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        build_function(module, "f", in_specs, body)
        pipeline.run_pipeline(module, stop_after="ms-opt")
        kinds = []

        def visit(o):
            if o.operation.name == "ms.fused":
                kinds.append(ir.StringAttr(o.attributes["kind"]).value)
            return ir.WalkResult.ADVANCE
        module.operation.walk(visit)
        return compile_module(module, "f", start_after="ms-opt"), kinds


def test_fused_mse_is_one_accurate_reduction():
    """reduce_mean((a - b) ** 2): the square of the difference is computed inside the
    blocked reduction's loops (one reduction region, nothing materialized) and accurate."""
    rng = _rng(2)
    a, b = (rng.uniform(0, 4, (32, 64, 56, 56)).astype(np.float32) for _ in range(2))
    s = spec(a.shape, dt.float32)
    exe, kinds = _regions([s, s], lambda p, q: op("ms.reduce_mean", _square(op("ms.sub", p, q)),
                                                  axis=(), keep_dims=False))
    assert kinds == ["reduction"]
    got, = exe(a, b)
    _check(got, np.mean((a.astype(np.float64) - b) ** 2))


@pytest.mark.parametrize("mode", MODES)
def test_mse_loss(mode):
    rng = _rng(3)
    a, b = (rng.uniform(0, 4, (4, 1_600_000)).astype(np.float32) for _ in range(2))
    want = np.mean((a.astype(np.float64) - b) ** 2)
    _check(_run(mode, lambda p, q: ops.reduce_mean((p - q) ** 2), a, b), want)
    _check(_run(mode, lambda p, q: ms.nn.MSELoss()(p, q), a, b), want)


def test_fused_prologue_with_broadcast_operands():
    """Operands broadcast along the reduced dims (a row's mean, a weight over the columns):
    split with the blocks, or left unmerged where only part of a merged run broadcasts."""
    rng = _rng(4)
    x = rng.uniform(0, 4, (4, 1_000_000)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, (1_000_000,)).astype(np.float32)
    m = x.mean(axis=1, keepdims=True).astype(np.float32)
    xs, ws, ms_ = spec(x.shape, dt.float32), spec(w.shape, dt.float32), spec(m.shape, dt.float32)

    def body(x, w, m):
        centered = _square(op("ms.sub", x, m))
        return (op("ms.reduce_mean", centered, axis=(1,), keep_dims=True),
                op("ms.reduce_sum", op("ms.mul", x, w), axis=(), keep_dims=False))
    exe, kinds = _regions([xs, ws, ms_], body)
    assert kinds == ["reduction", "reduction"]
    var, dot = exe(x, w, m)
    x64 = x.astype(np.float64)
    _check(var, ((x64 - m) ** 2).mean(axis=1, keepdims=True))
    _check(dot, (x64 * w).sum())


@pytest.mark.parametrize("width", [16_384, 1 << 20])
def test_layernorm_statistics_of_long_rows(width):
    """mean and variance of long rows under ms.jit (the CPU's row tiling of the loops)."""
    x = _rng(5).uniform(0, 4, (8, width)).astype(np.float32)

    def stats(t):
        mean = ops.reduce_mean(t, -1, True)
        return ops.reduce_mean((t - mean) ** 2, -1, True)
    x64 = x.astype(np.float64)
    _check(_run("graph", stats, x), x64.var(axis=-1, keepdims=True), rtol=1e-4)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape,axis", [((1_000_003,), None), ((3, 1_000_003), 1),
                                        ((1_000_003, 4), None)], ids=str)
def test_extent_without_a_block_divisor(shape, axis, mode):
    """A prime extent: no block of consecutive elements divides it; float64 accumulation."""
    x = _rng(6).uniform(0, 4, shape).astype(np.float32)
    _check(_run(mode, lambda t: ops.reduce_sum(t, axis), x),
           x.astype(np.float64).sum(axis=axis))


@pytest.mark.parametrize("dtype,rtol", [(ms.float16, 1e-3), (ms.bfloat16, 8e-3),
                                        (ms.float64, 1e-12)], ids=str)
def test_other_float_dtypes(dtype, rtol):
    """float16/bfloat16 accumulate in float32 (in blocks) and round once: within their own
    rounding of the mean; float64 to 1e-12."""
    x = _rng(7).uniform(0, 4, (4, 1_000_000)).astype(np.float32)
    t = ms.Tensor(x).astype(dtype)
    exact = t.astype(ms.float64).asnumpy()  # the rounded inputs, exactly
    got = ms.jit(lambda v: ops.reduce_mean(v, 1))(t)
    assert got.dtype == dtype
    _check(got.astype(ms.float64).asnumpy(), exact.mean(axis=1), rtol)
    _check(ms.jit(lambda v: ops.reduce_mean(v))(t).astype(ms.float64).asnumpy(), exact.mean(),
           rtol)


@pytest.mark.parametrize("shape,axis", [((1 << 22,), ()), ((4, 2_000_000), (1,)),
                                        ((250_000, 8), (0,)), ((1_000_003,), ())], ids=str)
def test_cuda_kernels(shape, axis):
    """The CUDA pipeline's kernels (block reductions over the blocks, then over the
    partials), emulated serially on the CPU."""
    from gpu_emulation import emulated_executable
    rng = _rng(8)
    x = rng.exponential(2.0, shape).astype(np.float32)
    y = rng.uniform(0, 4, shape).astype(np.float32)
    s = spec(shape, dt.float32)
    module = module_of([s, s], lambda a, b: (
        op("ms.reduce_sum", a, axis=axis, keep_dims=False),
        op("ms.reduce_mean", _square(op("ms.sub", a, b)), axis=axis, keep_dims=False)))
    total, mse = emulated_executable(module, "f")(x, y)
    x64 = x.astype(np.float64)
    _check(total, x64.sum(axis=axis or None))
    _check(mse, ((x64 - y) ** 2).mean(axis=axis or None))


@pytest.mark.parametrize("mode", MODES)
def test_integer_mean(mode):
    """Integer means average in float32: their sums are blocked as well (the total, 1e8 here,
    is past float32's exact integers)."""
    x = _rng(9).integers(0, 101, (4, 2_000_000)).astype(np.int32)
    got = _run(mode, lambda t: ops.reduce_mean(t, 1), x)
    assert got.dtype == np.float32
    _check(got, x.astype(np.float64).mean(axis=1))


def test_cuda_grids_and_ptx():
    """On CUDA the blocks are a parallel dimension: a 64M-element sum is 16384 blocks of one
    block reduction, then the partials (it was one block of 256 threads for everything);
    ptxas accepts the kernels (float32, float16, the float64 accumulation of a prime extent,
    a fused MSE)."""
    from mscc.passes.artifact import build_artifact, find_ptxas
    big, odd = spec((1 << 26,), dt.float32), spec((3, 1_000_003), dt.float16)
    module = module_of([big, odd, big], lambda x, h, y: [
        op("ms.reduce_sum", x, axis=(), keep_dims=False),
        op("ms.reduce_mean", h, axis=(1,), keep_dims=True),
        op("ms.reduce_mean", _square(op("ms.sub", x, y)), axis=(), keep_dims=False)])
    art = build_artifact(module, "f", "cuda")
    grids = [s.grid[0] for s in art.plan().steps if type(s).__name__ == "Launch"]
    assert 16384 in grids, grids
    if find_ptxas() is not None:
        assert art.manifest["cuda"]["cubin"], "ptxas produced no cubin"
