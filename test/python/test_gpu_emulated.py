"""The CUDA kernels' numerics, checked on the CPU: every bench/gpu_check.py correctness case
through the cuda pipeline's kernels, emulated serially (test/python/gpu_emulation.py),
against its numpy reference with the GPU check's tolerances."""
import os
import sys

import numpy as np
import pytest

from gpu_emulation import emulated_executable
from mscc.dialects.ir import build_function, get_context
from mlir import ir

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "bench")
sys.path.insert(0, BENCH)
import gpu_cases  # noqa: E402
from gpu_check import compare  # noqa: E402


def module_of(case):
    with get_context(), ir.Location.unknown():
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
