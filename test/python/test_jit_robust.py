"""The jit cache's promises: safe first calls from threads, keys that tell apart what
compiles differently (-0.0, NaN, Parameters), a bounded cache that returns its memory, and
numpy arrays wherever a Tensor is accepted."""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import mscc as ms
from mscc import ops

X = np.linspace(-1.5, 1.5, 12).reshape(3, 4).astype(np.float32)


def _run_threads(n, work):
    """Run work(k) for k < n in threads that start together; the exceptions they raised."""
    barrier = threading.Barrier(n)
    errors = []

    def body(k):
        try:
            barrier.wait()
            work(k)
        except Exception as e:  # noqa: BLE001  (every failure is reported by the test)
            errors.append(e)
    threads = [threading.Thread(target=body, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_first_calls_of_distinct_functions_from_eight_threads():
    fns = [ms.jit(lambda x, k=k: ops.exp(x) * float(k) + ops.tanh(x)) for k in range(8)]
    results = {}
    errors = _run_threads(8, lambda k: results.__setitem__(k, fns[k](ms.Tensor(X)).asnumpy()))
    assert errors == []
    for k in range(8):
        np.testing.assert_allclose(results[k], np.exp(X) * k + np.tanh(X), rtol=1e-5)


def test_first_calls_of_one_function_from_eight_threads_compile_once():
    f = ms.jit(lambda x, b: ops.sigmoid(x) * 3.0 - b)
    results = {}
    errors = _run_threads(8, lambda k: results.__setitem__(
        k, f(ms.Tensor(X), ms.Tensor(np.float32(k))).asnumpy()))
    assert errors == []
    assert f.cache_info()["compiles"] == 1
    for k in range(8):
        np.testing.assert_allclose(results[k], 3 / (1 + np.exp(-X)) - k, rtol=1e-5)


def test_eager_ops_and_cache_hits_in_other_threads_while_one_traces():
    """A thread tracing a slow function must not capture the others' ops: their eager ops
    and jit cache hits return concrete Tensors."""
    g = ms.jit(lambda x: x * 2.0)
    g(ms.Tensor(X))  # compiled: later calls are cache hits
    started, release = threading.Event(), threading.Event()

    def slow(x):
        started.set()
        release.wait(10)
        return ops.exp(x)
    slow_jit = ms.jit(slow)
    out = {}
    tracer = threading.Thread(target=lambda: out.__setitem__("slow", slow_jit(ms.Tensor(X))))
    tracer.start()
    started.wait(10)
    hit = g(ms.Tensor(X)).asnumpy()  # while `slow` is being traced in the other thread
    release.set()
    tracer.join()
    np.testing.assert_allclose(hit, X * 2, rtol=1e-6)
    np.testing.assert_allclose(out["slow"].asnumpy(), np.exp(X), rtol=1e-5)


def test_a_failed_compile_does_not_poison_later_ones():
    bad = ms.jit(lambda x: ops.matmul(x, x))  # (3, 4) @ (3, 4): a user mistake
    with pytest.raises(ValueError, match="ms.matmul"):
        bad(ms.Tensor(X))
    good = [ms.jit(lambda x, k=k: x + float(k)) for k in range(4)]
    for k, f in enumerate(good):
        np.testing.assert_array_equal(f(ms.Tensor(X)).asnumpy(), X + k)


# ------------------------------------------------------------------ cache keys

def test_negative_zero_is_its_own_static_value():
    f = ms.jit(lambda x, s: x / s)
    x = ms.Tensor(np.ones(3, np.float32))
    assert np.all(f(x, 0.0).asnumpy() == np.inf)
    assert np.all(f(x, -0.0).asnumpy() == -np.inf)
    assert f.cache_info()["compiles"] == 2


def test_nan_static_value_compiles_once():
    f = ms.jit(lambda x, s: x + s)
    x = ms.Tensor(np.ones(3, np.float32))
    for _ in range(3):
        assert np.all(np.isnan(f(x, float("nan")).asnumpy()))
    assert f.cache_info()["compiles"] == 1


def test_eager_ops_key_scalars_by_their_bits():
    x = ms.Tensor(np.ones(2, np.float32))
    assert np.all(ops.div(x, 0.0).asnumpy() == np.inf)
    assert np.all(ops.div(x, -0.0).asnumpy() == -np.inf)


def test_pynative_gradient_keys_scalars_by_their_bits():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    x = ms.Tensor(np.array([1.0, 2.0], np.float32))
    # d/dx (x / s) = 1 / s: the gradient recorded for s = 0.0 must not answer s = -0.0
    g = ms.grad(lambda x, s: ops.div(x, s))
    assert np.all(g(x, 0.0).asnumpy() == np.inf)
    assert np.all(g(x, -0.0).asnumpy() == -np.inf)


def test_a_parameter_entry_does_not_serve_a_plain_tensor():
    def write(p):
        ops.assign(p, p + 1.0)
        return p * 1.0
    f = ms.jit(write)
    p = ms.Parameter(np.zeros(3, np.float32), name="p_written")
    f(p)
    np.testing.assert_array_equal(p.asnumpy(), np.ones(3))
    t = ms.Tensor(np.zeros(3, np.float32))
    with pytest.raises((TypeError, ValueError)):
        f(t)  # a fresh trace refuses to assign a plain Tensor: the Parameter's entry is not used
    np.testing.assert_array_equal(t.asnumpy(), np.zeros(3))


def test_a_cpu_write_invalidates_the_parameters_gpu_copy():
    from test_cuda_jit import FakeDriver, cuda
    saved = dict(cuda._DEVICES)
    cuda._DEVICES.clear()
    cuda._DEVICES[0] = cuda.Device(FakeDriver())
    try:
        w = ms.Parameter(np.arange(6, dtype=np.float32).reshape(2, 3), name="w_mixed")
        read_on_gpu = ms.jit(lambda: ops.reshape(w, (3, 2)), target="cuda")
        bump_on_cpu = ms.jit(lambda: ops.assign(w, w + 1.0), target="cpu")
        read_on_gpu()  # copies w to the device
        bump_on_cpu()  # writes the host value
        np.testing.assert_array_equal(read_on_gpu().asnumpy(),
                                      (np.arange(6) + 1.0).reshape(3, 2))
    finally:
        cuda._DEVICES.clear()
        cuda._DEVICES.update(saved)


def test_repr_of_a_tensor_that_lives_on_the_gpu():
    class DeviceArray:
        def asnumpy(self):
            return np.array([1.5, 2.5], np.float32)
    from mscc.dialects import dtypes as dt
    t = ms.Tensor._wrap_device(DeviceArray(), dt.TensorSpec((2,), dt.float32))
    assert "1.5" in repr(t) and "2.5" in repr(t)


# ------------------------------------------------------------------ numpy arrays

@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def test_gradients_accept_numpy_arrays(mode):
    ms.set_context(mode=mode)
    try:
        x = np.array([0.5, -1.0, 2.0], np.float32)
        g = ms.grad(lambda x: ops.reduce_sum(x * x * x))(x)
        np.testing.assert_allclose(g.asnumpy(), 3 * x * x, rtol=1e-6)
        value, g2 = ms.value_and_grad(lambda x: ops.reduce_sum(ops.exp(x)))(x)
        np.testing.assert_allclose(value.asnumpy(), np.exp(x).sum(), rtol=1e-6)
        np.testing.assert_allclose(g2.asnumpy(), np.exp(x), rtol=1e-6)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


# ------------------------------------------------------------------ a bounded cache

def test_the_cache_evicts_the_least_recently_used_entry():
    f = ms.jit(lambda x: x * 2.0, cache_size=3)
    arrays = [np.ones((n, 2), np.float32) for n in range(1, 6)]
    for a in arrays[:3]:
        f(ms.Tensor(a))
    f(ms.Tensor(arrays[0]))          # shape 1 used again: shape 2 is now the oldest
    f(ms.Tensor(arrays[3]))          # evicts shape 2
    info = f.cache_info()
    assert (info["entries"], info["evictions"], info["compiles"]) == (3, 1, 4)
    f(ms.Tensor(arrays[0]))          # still cached
    assert f.cache_info()["compiles"] == 4
    np.testing.assert_array_equal(f(ms.Tensor(arrays[1])).asnumpy(), arrays[1] * 2)
    assert f.cache_info()["compiles"] == 5 and f.cache_info()["evictions"] == 2


def test_cache_size_must_be_positive():
    with pytest.raises(ValueError, match="cache_size"):
        ms.jit(lambda x: x, cache_size=0)


_RSS_PROGRAM = textwrap.dedent("""
    import gc
    import numpy as np
    import mscc as ms
    from mscc import ops

    def rss_mib():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2**20

    warm = ms.jit(lambda x: ops.exp(x) * 2.0 + 1.0)  # one-time setup is not the cache's
    warm(ms.Tensor(np.ones((1, 3), np.float32)))
    ms.wait_optimized()  # (MSCC_TIERED=all: the background compile's own setup too)
    del warm
    gc.collect()
    before = rss_mib()
    f = ms.jit(lambda x: ops.exp(x) * 2.0 + 1.0, cache_size=1000)
    for n in range(2, 202):
        f(ms.Tensor(np.ones((n, 3), np.float32)))
    ms.wait_optimized()
    peak = rss_mib()
    del f
    gc.collect()
    print(before, peak, rss_mib())
""")


def test_deleting_a_function_that_compiled_200_shapes_returns_its_memory():
    env = dict(os.environ, MSCC_CACHE_DIR="")
    out = subprocess.run([sys.executable, "-c", _RSS_PROGRAM], capture_output=True,
                         text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    before, peak, after = map(float, out.stdout.split())
    assert peak > before + 15  # the 200 executables really took memory (~150 KiB each)
    assert after <= before * 1.10, (before, peak, after)


def test_an_eager_assign_on_either_target_replaces_both_copies():
    from test_cuda_jit import FakeDriver, cuda
    saved = dict(cuda._DEVICES)
    cuda._DEVICES.clear()
    cuda._DEVICES[0] = cuda.Device(FakeDriver())
    w = ms.Parameter(np.zeros((2, 3), np.float32), name="w_eager")
    read_on_gpu = ms.jit(lambda: ops.reshape(w, (3, 2)), target="cuda")
    try:
        read_on_gpu()  # w now has a device copy
        ops.assign(w, np.ones((2, 3), np.float32))  # eager, on the CPU
        np.testing.assert_array_equal(read_on_gpu().asnumpy(), np.ones((3, 2)))
        ms.set_context(device_target="GPU")
        ops.assign(w, np.full((2, 3), 2.0, np.float32))  # eager, on the GPU: a copy
        ms.set_context(device_target="CPU")
        np.testing.assert_array_equal(w.asnumpy(), np.full((2, 3), 2.0))
    finally:
        ms.set_context(device_target="CPU")
        cuda._DEVICES.clear()
        cuda._DEVICES.update(saved)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def test_gradients_and_cells_from_several_threads(mode):
    ms.set_context(mode=mode)
    results = {}

    def work(k):
        g = ms.value_and_grad(lambda x: ops.reduce_sum(ops.tanh(x) * float(k + 1)))
        value, grad = g(ms.Tensor(X))
        net = ms.nn.Dense(4, 2)
        results[k] = (value.asnumpy(), grad.asnumpy(), net(ms.Tensor(X)).asnumpy(),
                      net.weight.asnumpy(), net.bias.asnumpy())
    try:
        errors = _run_threads(6, work)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert errors == []
    for k, (value, grad, y, w, b) in results.items():
        np.testing.assert_allclose(value, np.tanh(X).sum() * (k + 1), atol=1e-5)
        np.testing.assert_allclose(grad, (1 - np.tanh(X) ** 2) * (k + 1), rtol=1e-5)
        np.testing.assert_allclose(y, X @ w.T + b, rtol=1e-5, atol=1e-6)


def test_functions_named_like_the_math_library_they_call():
    """float64 exp is a call of libm's `exp` and erf of libm's `erf`: a function of the
    same name called itself for ever, or was declared twice."""
    import math

    def exp(x):
        return ops.exp(x) + 1.0

    def erf(x):
        return ops.erf(x) * 2.0
    x = np.linspace(-1, 1, 7)
    np.testing.assert_allclose(ms.jit(exp)(ms.Tensor(x)).asnumpy(), np.exp(x) + 1, rtol=1e-12)
    np.testing.assert_allclose(ms.jit(erf)(ms.Tensor(x)).asnumpy(),
                               [2 * math.erf(v) for v in x], rtol=1e-12)


_UNLOAD_PROGRAM = textwrap.dedent("""
    import gc, sys
    import numpy as np
    import mscc as ms
    from mscc import ops
    from mscc.passes import exe_cache

    def mapped_libraries():
        with open("/proc/self/maps") as f:
            return {line.split()[-2] if line.endswith("(deleted)\\n") else line.split()[-1]
                    for line in f if "/mscc-" in line and ".so" in line}

    f = ms.jit(lambda x: ops.exp(x) * 2.0 + 1.0)
    for n in range(2, 6):
        f(ms.Tensor(np.ones((n, 3), np.float32)))
    exe_cache.wait()
    print(exe_cache.stats["hits"], len(mapped_libraries()), end=" ")
    del f
    gc.collect()
    print(len(mapped_libraries()))
""")


def test_libraries_loaded_from_the_disk_cache_are_unloaded_with_their_function(tmp_path):
    env = dict(os.environ, MSCC_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", _UNLOAD_PROGRAM], capture_output=True,
                           text=True, env=env, timeout=300) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    hits, loaded, after = map(int, runs[1].stdout.split())
    assert (hits, loaded, after) == (4, 4, 0)


def test_mindspore_jit_keywords():
    f = ms.jit(function=lambda x: x * 2.0, capture_mode="bytecode", jit_level="O1",
               fullgraph=True, backend="ms_backend")
    np.testing.assert_array_equal(f(ms.Tensor(X)).asnumpy(), X * 2)
    decorated = ms.jit(capture_mode="trace")(lambda x: x + 1.0)
    np.testing.assert_array_equal(decorated(ms.Tensor(X)).asnumpy(), X + 1)
    for bad, error in [(dict(capture_mode="graph"), ValueError), (dict(jit_level="O3"), ValueError),
                       (dict(dynamic=2), ValueError), (dict(fullgraph=1), TypeError),
                       (dict(backend="GE"), ValueError), (dict(infer_boost="on"), ValueError)]:
        with pytest.raises(error, match="jit"):
            ms.jit(lambda x: x, **bad)


def test_jit_dynamic_1_compiles_a_second_size_once_for_all(caplog):
    """dynamic=1: the first size compiles statically, the second once with that dimension
    dynamic, which serves every later size (test_dynamic_shapes.py has the op table)."""
    import logging
    with caplog.at_level(logging.WARNING, logger="mscc"):
        f = ms.jit(lambda x: x * 3.0, dynamic=1)
        for n in (2, 3, 5, 0, 2):
            np.testing.assert_array_equal(f(ms.Tensor(np.ones((n, 2), np.float32))).asnumpy(),
                                          np.full((n, 2), 3.0))
    assert f.cache_info()["compiles"] == 2
    assert not caplog.records  # (the dynamic compile did not fall back to static ones)


def test_lowering_a_training_step_after_calling_it():
    """ms-autodiff erased the call of a replaced ms.grad while it still walked a list of the
    function's ops: a use after free that crashed (SIGSEGV) lowering this step."""
    net = ms.nn.Dense(4, 3)
    opt = ms.nn.SGD(net.trainable_params(), 0.1)
    loss_fn = ms.nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, opt.parameters)

    def step(x, y):
        loss, grads = grad_fn(x, y)
        opt(grads)
        return loss
    f = ms.jit(step)
    x, y = ms.Tensor(np.ones((10, 4), np.float32)), ms.Tensor(np.zeros(10, np.int32))
    f(x, y)
    for _ in range(3):
        text = f.lower(x, y).as_text("ms-opt")
        assert text.count("func.func") == 1 and '"ms.assign"' in text


def test_compiles_run_without_the_cyclic_collector(monkeypatch):
    """A trace and compile pauses the garbage collector (its collections were ~5% of a
    first call) and restores whatever state the program had set."""
    import gc
    from mscc.passes import compiler
    from mscc.pyfront.state import gc_paused
    seen, real = [], compiler.compile_module

    def recording(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)
    monkeypatch.setattr(compiler, "compile_module", recording)
    assert gc.isenabled()
    ms.jit(lambda x: x * 4.0)(ms.Tensor(np.ones(3, np.float32)))
    assert seen == [False] and gc.isenabled()
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # (the outer pause still holds)
    assert gc.isenabled()
    gc.disable()  # a program that manages the collector itself keeps it off
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
