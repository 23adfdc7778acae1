"""jit and eager ops on the CUDA target, in-process, against the fake driver (no GPU here):
Tensors stay in GPU memory between calls, are handed from one executable to the next without
a round trip, Parameters are copied once, and asnumpy() copies back. Programs made only of
copies really run on the fake driver, so their values are checked; kernels are only
launched (their numerics are checked on a GPU by test_cuda_gpu.py and bench/gpu_check.py)."""
import numpy as np
import pytest

import mscc as ms
from fake_cuda import FakeDriver
from mscc import ops
from mscc.runtime import cuda


@pytest.fixture
def fake_gpu():
    saved = dict(cuda._DEVICES)
    drv = FakeDriver()
    cuda._DEVICES.clear()
    cuda._DEVICES[0] = cuda.Device(drv)
    ms.set_context(device_target="GPU")
    yield drv
    ms.set_context(device_target="CPU")
    cuda._DEVICES.clear()
    cuda._DEVICES.update(saved)


def _count(drv, name):
    return sum(1 for call in drv.calls if call[0] == name)


def test_results_stay_on_the_device_and_chain_without_round_trips(fake_gpu):
    to_rows = ms.jit(lambda x: ops.reshape(x, (4, 3)))
    to_cols = ms.jit(lambda x: ops.reshape(x, (3, 4)))
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    y = to_rows(ms.Tensor(x))
    assert y.device == "GPU:0" and y.shape == (4, 3)
    z = to_cols(y)  # y is passed as it is: no copy back in between
    assert _count(fake_gpu, "dtoh") == 0
    np.testing.assert_array_equal(z.asnumpy(), x.reshape(3, 4))
    assert _count(fake_gpu, "dtoh") == 1
    z.asnumpy()  # the host copy is kept
    assert _count(fake_gpu, "dtoh") == 1


def test_kernels_are_launched_from_the_cache(fake_gpu):
    f = ms.jit(lambda x, b: ops.tanh(x) * 2 + b)
    x, b = ms.Tensor(np.ones((64, 32), np.float32)), ms.Tensor(np.ones(32, np.float32))
    for _ in range(3):
        out = f(x, b)
    assert f.cache_info()["compiles"] == 1
    assert len(fake_gpu.launches) == 3 and out.device == "GPU:0"


def test_parameters_are_copied_once_and_written_on_the_device(fake_gpu):
    w = ms.Parameter(np.arange(6, dtype=np.float32).reshape(2, 3), name="w_dev")
    step = ms.jit(lambda: ops.assign(w, ops.reshape(ops.reshape(w, (3, 2)), (2, 3))))
    step()
    step()
    uploads = [c for c in fake_gpu.calls if c[0] == "htod"]
    assert len(uploads) == 1  # the Parameter, once; it stays resident
    assert w._device is not None and w._data is None
    np.testing.assert_array_equal(w.asnumpy(), np.arange(6, dtype=np.float32).reshape(2, 3))


def test_eager_ops_run_on_the_device_target(fake_gpu):
    x = ms.Tensor(np.arange(6, dtype=np.int32))
    y = ops.reshape(x, (2, 3))
    assert y.device == "GPU:0"
    np.testing.assert_array_equal(y.asnumpy(), np.arange(6).reshape(2, 3))


def test_device_tensors_feed_cpu_executables():
    """A Tensor computed on the GPU is copied back when a CPU function reads it."""
    drv = FakeDriver()
    saved = dict(cuda._DEVICES)
    cuda._DEVICES.clear()
    cuda._DEVICES[0] = cuda.Device(drv)
    try:
        on_gpu = ms.jit(lambda x: ops.reshape(x, (6,)), target="cuda")(
            ms.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)))
        doubled = ms.jit(lambda x: x * 2, target="cpu")(on_gpu)
        np.testing.assert_array_equal(doubled.asnumpy(), np.arange(6) * 2)
    finally:
        cuda._DEVICES.clear()
        cuda._DEVICES.update(saved)


def test_compile_save_and_load_a_cuda_artifact(tmp_path):
    f = ms.jit(lambda x: ops.sigmoid(x) + 1, target="cuda")
    path = f.lower(ms.Tensor(np.ones((8, 8), np.float32))).compile().save(str(tmp_path / "f.msx"))
    art = ms.runtime.artifact.read(path)
    assert art.target == "cuda" and art.inputs[0].shape == (8, 8)
    assert "kernels.ptx" in art.blobs
