"""Output arrays re-used across calls (runtime/outputs.py, on by default): an output that
anything still refers to is never written again; calls from several threads stay apart."""
import sys
import threading

import numpy as np

import mscc as ms
from mscc import ops
from mscc.runtime.outputs import OutputArrays
from mstest import compile_fn, op, spec

F32 = "float32"


def test_taken_arrays_come_back_only_when_released():
    outs = OutputArrays([((4,), np.float32), ((2, 3), np.int32)])
    a, b = outs.take()
    addresses = (a.ctypes.data, b.ctypes.data)
    del a, b
    c, d = outs.take()
    assert (c.ctypes.data, d.ctypes.data) == addresses
    kept = c                                   # held: a new array in its place only
    del c, d
    e, f = outs.take()
    assert e is not kept and f.ctypes.data == addresses[1]
    assert (e.shape, e.dtype, f.shape, f.dtype) == ((4,), np.float32, (2, 3), np.int32)
    outs.reuse = False
    cached = list(outs._cache)
    del e, f
    assert not any(x is y for x, y in zip(outs.take(), cached))


def test_executables_reuse_outputs_by_default():
    exe = compile_fn([spec((8,), F32)], lambda a: op("ms.add", a, a))
    assert exe.reuse_outputs


def test_output_fed_back_as_input():
    """y = f(y): the input is the previous call's output, the new output another array."""
    exe = compile_fn([spec((256,), F32)], lambda a: op("ms.add", op("ms.mul", a, a), a))
    y = np.linspace(-0.5, 0.5, 256).astype(np.float32)
    want = y.astype(np.float64)
    for _ in range(6):
        y, = exe(y)
        want = want * want + want
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    z, = exe(exe(y)[0])                        # a temporary output straight back in
    np.testing.assert_allclose(z, (y * y + y) ** 2 + (y * y + y), rtol=1e-5, atol=1e-6)


def test_outputs_held_through_views_and_lists_are_not_overwritten():
    exe = compile_fn([spec((64,), F32)], lambda a: op("ms.mul", a, a))
    x = np.arange(64, dtype=np.float32)
    keep = [exe(x + i)[0][i:] for i in range(4)]       # views only; the outputs are gone
    boxed = [exe(x + 10)]                              # the list of outputs itself
    for i, v in enumerate(keep):
        np.testing.assert_array_equal(v, ((x + i) ** 2)[i:])
    np.testing.assert_array_equal(boxed[0][0], (x + 10) ** 2)


def test_concurrent_calls_of_one_executable_get_their_own_results():
    """Threads share the executable (an eager op's is process-wide): without the call lock,
    two calls wrote into the same output arrays and read each other's descriptors."""
    exe = compile_fn([spec((512, 512), F32)], lambda a: op("ms.tanh", op("ms.add", a, a)))
    inputs = [np.full((512, 512), 0.01 * k, np.float32) for k in range(4)]
    wants = [np.tanh(2 * x) for x in inputs]
    errors = []

    def work(k):
        for _ in range(40):
            got, = exe(inputs[k])
            if not np.allclose(got, wants[k], rtol=1e-5, atol=1e-6):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads between almost any two bytecodes
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors


def test_jit_results_stay_valid_while_held(mode):
    f = ms.jit(lambda x: ops.exp(x) * 2.0)
    xs = [np.full((64, 64), 0.1 * k, np.float32) for k in range(5)]
    results = [f(ms.Tensor(x)) for x in xs]           # all held at once
    arrays = [f(ms.Tensor(x)).asnumpy() for x in xs]  # Tensors dropped, arrays held
    for x, r, a in zip(xs, results, arrays):
        np.testing.assert_allclose(r.asnumpy(), np.exp(x) * 2, rtol=1e-5)
        np.testing.assert_allclose(a, np.exp(x) * 2, rtol=1e-5)


def test_parameter_updates_through_reused_outputs():
    """Parameters take the executable's outputs as their new values (writeback); a step
    reads the Parameter's current array while writing the next one."""
    w = ms.Parameter(np.ones((32, 32), np.float32), name="w")

    @ms.jit
    def step(g):
        return ops.assign(w, w * 0.5 + g)

    g = np.full((32, 32), 0.25, np.float32)
    want = np.ones((32, 32), np.float64)
    history = []
    for _ in range(5):
        out = step(ms.Tensor(g))
        want = want * 0.5 + 0.25
        history.append((out, want.copy()))
        np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-6)
    for out, value in history:
        np.testing.assert_allclose(out.asnumpy(), value, rtol=1e-6)


def test_malloc_keeps_freed_memory_unless_disabled():
    """Intermediate buffers are malloc'ed on every call (here a grouped convolution's im2col
    matrix of each image, 36 MiB, beyond glibc's largest default mmap threshold):
    with glibc told to keep freed pages (runtime/malloc.py) later calls take almost no page
    faults; MSCC_MALLOC_TUNING=0 leaves the allocator alone and every call faults them in."""
    import os
    import subprocess
    import sys
    code = """
import resource, numpy as np, mscc as ms
from mscc import nn
conv = nn.Conv2d(64, 64, 3, group=2)
f = ms.jit(lambda t: conv(t))
x = ms.Tensor(np.ones((2, 64, 128, 128), np.float32))
f(x); f(x)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    f(x)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
    faults = {}
    for value in ("1", "0"):
        env = dict(os.environ, MSCC_MALLOC_TUNING=value, MSCC_CACHE_DIR="")
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                             capture_output=True, text=True).stdout
        faults[value] = int(out.split()[-1])
    # 5 calls x 2 images x 36 MiB faulted in anew: ~90000 pages of 4 KiB, ~90 of 2 MiB
    # (ms-cpu-huge-pages), and the smaller buffers' pages (~5000 in all)
    assert faults["0"] > 2000 and faults["1"] < faults["0"] / 10, faults
