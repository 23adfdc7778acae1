"""The CUDA kernels' numerics, checked on the CPU: every bench/gpu_check.py correctness case
through the cuda pipeline's kernels, emulated serially (test/python/gpu_emulation.py),
against its numpy reference with the GPU check's tolerances."""
import os
import sys

import numpy as np
import pytest

from gpu_emulation import emulated_executable
from mscc.dialects.builders import build_function, mlir_context
from mlir import ir

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "bench")
sys.path.insert(0, BENCH)
import gpu_cases  # noqa: E402
from gpu_check import compare  # noqa: E402


def module_of(case):
    with mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        build_function(module, case.name, case.in_specs, case.body)
    return module


@pytest.mark.parametrize("case", gpu_cases.CHECKS, ids=lambda c: c.name)
def test_kernels_compute_the_numpy_results(case):
    exe = emulated_executable(module_of(case), case.name)
    inputs = case.inputs(seed=0)
    want = case.ref(*inputs)
    got = exe(*inputs)
    tol = {**gpu_cases.TOL, **case.tol}
    for i, (g, w) in enumerate(zip(got, want)):
        res = compare(g, np.asarray(w), tol)
        assert res["ok"], f"output #{i}: {res['why']}"


def test_training_step_gradients_match_the_cpu_pipeline():
    """The backward pass (transposed matmuls, broadcast and reduction gradients) through the
    CUDA kernels, against the CPU pipeline on the same traced module."""
    import mscc as ms
    from mscc.passes.compiler import clone_module, compile_module
    rng = np.random.default_rng(0)
    w1 = ms.Parameter(rng.standard_normal((64, 32)).astype(np.float32), name="w1")
    w2 = ms.Parameter(rng.standard_normal((32, 10)).astype(np.float32), name="w2")

    def loss(x, y):
        h = ms.ops.tanh(ms.ops.matmul(x, w1))
        o = ms.ops.softmax(ms.ops.matmul(h, w2), axis=-1)
        return ms.ops.reduce_mean((o - y) * (o - y))
    step = ms.jit(lambda x, y: ms.grad(loss, grad_position=None, weights=[w1, w2])(x, y))
    x = rng.standard_normal((128, 64)).astype(np.float32)
    y = rng.standard_normal((128, 10)).astype(np.float32)
    trace = step.lower(ms.Tensor(x), ms.Tensor(y))._trace
    cpu = compile_module(clone_module(trace.module), trace.name)
    gpu = emulated_executable(clone_module(trace.module), trace.name)
    args = [x, y, w1.asnumpy(), w2.asnumpy()][:len(cpu.in_specs)]
    for want, got in zip(cpu(*args), gpu(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
