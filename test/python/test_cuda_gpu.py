"""On a machine with a CUDA GPU (and cuda-bindings): every bench/gpu_check.py case compiled
here and run on the device against numpy, device arrays handed between executables, memory
statistics. Skipped, with the reason, everywhere else."""
import os
import sys

import numpy as np
import pytest

from mscc.passes.artifact import build_artifact
from mscc.runtime import cuda
from mstest import module_of, op, spec

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "bench")
sys.path.insert(0, BENCH)
import gpu_cases  # noqa: E402
from gpu_check import compare  # noqa: E402


def _unavailable_reason():
    try:
        cuda.device()
        return None
    except cuda.CudaError as e:
        return f"no usable CUDA device: {e}"


_REASON = _unavailable_reason()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=_REASON or "")


@pytest.mark.parametrize("case", gpu_cases.CHECKS, ids=lambda c: c.name)
def test_case_matches_numpy_on_the_gpu(case):
    exe = build_artifact(module_of(case.in_specs, case.body, case.name), case.name, "cuda").load()
    inputs = case.inputs(seed=0)
    tol = {**gpu_cases.TOL, **case.tol}
    for i, (got, want) in enumerate(zip(exe(*inputs), case.ref(*inputs))):
        res = compare(got.asnumpy(), np.asarray(want), tol)
        assert res["ok"], f"output #{i}: {res['why']}"


def test_outputs_stay_on_the_device_between_executables():
    double = build_artifact(module_of([spec((1000, 64), "float32")],
                                      lambda x: op("ms.add", x, x)), "f", "cuda").load()
    total = build_artifact(module_of([spec((1000, 64), "float32")],
                                     lambda x: op("ms.reduce_sum", x, axis=(1,), keep_dims=False)),
                           "f", "cuda").load()
    x = np.random.default_rng(0).standard_normal((1000, 64)).astype(np.float32)
    y, = double(x)
    assert isinstance(y, cuda.DeviceArray)
    s, = total(y)
    np.testing.assert_allclose(s.asnumpy(), (2 * x).sum(1), rtol=1e-5, atol=1e-5)
    stats = cuda.device().memory_stats()
    assert stats["allocated"] > 0 and stats["peak"] >= stats["allocated"]
