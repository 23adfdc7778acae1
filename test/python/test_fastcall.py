"""The cache-hit call in C (runtime/_fastcall.c) and the ctypes path it replaces: the same
results, the same errors, and calls that are not plain arrays still take the general path."""
import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mscc.pyfront import jit as jit_module
from mscc.runtime import cpu as cpu_runtime
from mscc.runtime import cpu_aot, fastcall

needs_c = pytest.mark.skipif(fastcall.call is None, reason="runtime/_fastcall.c is not built")


def _add_mul(x, y):
    return x * y + x


def _arrays():
    rng = np.random.default_rng(3)
    return rng.normal(size=(5, 7)).astype(np.float32), rng.normal(size=(7,)).astype(np.float32)


@pytest.fixture(params=["c", "ctypes"])
def path(request, monkeypatch):
    if request.param == "c" and fastcall.call is None:
        pytest.skip("runtime/_fastcall.c is not built")
    if request.param == "ctypes":
        monkeypatch.setattr(fastcall, "call", None)
        monkeypatch.setattr(fastcall, "call_sized", None)
        monkeypatch.setattr(jit_module, "_array_key", None)
    return request.param


def test_tensors_arrays_and_keywords_give_numpys_result(path):
    x, y = _arrays()
    f = ms.jit(_add_mul)
    want = x * y + x
    for _ in range(3):  # the first call compiles, the others hit the caches
        np.testing.assert_allclose(f(ms.Tensor(x), ms.Tensor(y)).asnumpy(), want, rtol=1e-6)
        np.testing.assert_allclose(f(x, y).asnumpy(), want, rtol=1e-6)
        np.testing.assert_allclose(f(y=ms.Tensor(y), x=ms.Tensor(x)).asnumpy(), want,
                                   rtol=1e-6)
    assert f.cache_info()["compiles"] == 1
    entry = next(iter(f._flat_cache.values()))
    assert (entry.fast is not None) == (path == "c")


def test_arrays_that_are_not_contiguous_take_the_general_path(path):
    x, y = _arrays()
    f = ms.jit(_add_mul)
    f(x, y)
    xt = np.asfortranarray(x)
    np.testing.assert_allclose(f(xt, y).asnumpy(), x * y + x, rtol=1e-6)
    np.testing.assert_allclose(f(x[:, ::-1].copy()[:, ::-1], y).asnumpy(), x * y + x, rtol=1e-6)
    np.testing.assert_allclose(f(x.astype(np.float64), y).asnumpy(), x * y + x, rtol=1e-6)


def test_a_placeholder_argument_is_still_an_error(path):
    x, y = _arrays()
    f = ms.jit(_add_mul)
    f(ms.Tensor(x), ms.Tensor(y))
    with pytest.raises(TypeError, match="placeholder"):
        f(ms.Tensor(shape=(5, 7), dtype=ms.float32), ms.Tensor(y))


def test_many_inputs_and_outputs(path):
    """More than 16 descriptors: the C interface of a library cannot take them through the
    C function (its cases stop at 16), the packed call can."""
    arrays = [np.full((3,), i, np.float32) for i in range(10)]

    def many(*xs):
        return tuple(x * 2.0 for x in xs)
    f = ms.jit(lambda a0, a1, a2, a3, a4, a5, a6, a7, a8, a9: many(a0, a1, a2, a3, a4, a5,
                                                                   a6, a7, a8, a9))
    for _ in range(2):
        outs = f(*[ms.Tensor(a) for a in arrays])
        for i, o in enumerate(outs):
            np.testing.assert_array_equal(o.asnumpy(), np.full((3,), 2.0 * i, np.float32))


@needs_c
def test_call_rejects_what_is_not_a_contiguous_array():
    x = np.ones((4,), np.float32)
    descriptors = (0, 0)  # (never written: the arrays are checked first)
    with pytest.raises(TypeError, match="argument #1 is a list, not a C-contiguous"):
        fastcall.call(1, 1, descriptors, [x], [[1.0]])
    with pytest.raises(TypeError, match="not a C-contiguous"):
        fastcall.call(1, 1, descriptors, [np.ones((4, 4), np.float32).T], [x])
    with pytest.raises(ValueError, match="one descriptor per array"):
        fastcall.call(1, 1, (0,), [x], [x])
    with pytest.raises(ValueError, match="at most 16"):
        fastcall.call(1, 0, (0,) * 17, [x] * 17, [])
    with pytest.raises(ValueError, match="descriptor #0 is a null address"):
        fastcall.call(1, 1, (0,), [x], [])


@needs_c
def test_array_key_is_the_python_key():
    x = np.ones((2, 3), np.float32)
    y = np.arange(4, dtype=np.int64)
    assert fastcall.array_key("cpu", (x, y)) == ("cpu", (x.shape, x.dtype), (y.shape, y.dtype))
    assert fastcall.array_key("cpu", ()) == ("cpu",)
    for other in (x.T, ms.Tensor(x), [1.0], np.float32(1.0), x[:, ::2]):
        assert fastcall.array_key("cpu", (x, other)) is None


@needs_c
def test_both_executable_kinds_use_the_c_call():
    x, y = _arrays()
    f = ms.jit(_add_mul)
    f(x, y)
    exe = next(iter(f._flat_cache.values())).exe
    assert isinstance(exe, (cpu_runtime.CpuExecutable, cpu_aot.CpuLibraryExecutable))
    assert exe._fast is not None


@needs_c
def test_small_calls_hold_the_gil_and_keep_outputs_that_are_still_referenced():
    """run_small chooses the outputs itself: an output the caller still holds is never
    written again, a released one is re-used."""
    f = ms.jit(lambda x: x * 2.0)
    x = np.arange(6, dtype=np.float32)
    first = f(x)
    exe = next(iter(f._flat_cache.values())).exe
    assert exe._small is not None
    second = f(x + 1)
    np.testing.assert_array_equal(first.asnumpy(), x * 2)  # still its own values
    np.testing.assert_array_equal(second.asnumpy(), (x + 1) * 2)
    held = second.asnumpy()
    del first, second
    third = f(x + 2)
    np.testing.assert_array_equal(third.asnumpy(), (x + 2) * 2)
    np.testing.assert_array_equal(held, (x + 1) * 2)


@needs_c
def test_large_calls_release_the_gil():
    f = ms.jit(lambda x: x * 2.0)
    x = np.ones((256, 256), np.float32)  # 512 KiB in and out
    np.testing.assert_array_equal(f(x).asnumpy(), x * 2)
    exe = next(iter(f._flat_cache.values())).exe
    assert exe._small is None and exe._fast is not None


def test_dynamic_sizes_reach_every_descriptor(path):
    """An entry with a dynamic size (call_sized writes each descriptor's sizes and strides
    from its array in C; the ctypes path field by field): ranks 0 to 3, a size of zero, and
    sizes that shrink and grow between calls."""
    def f(x, s, v):
        y = x * s
        return y.sum(axis=1), y.sum() + v.sum(), v * 2.0
    sig = (ms.Tensor(shape=[None, 3, 2], dtype=ms.float32), ms.Tensor(shape=[], dtype=ms.float32),
           ms.Tensor(shape=[None], dtype=ms.float32))
    g = ms.jit(f, input_signature=sig)
    rng = np.random.default_rng(5)
    for n in (5, 0, 1, 9, 2):
        x = rng.normal(size=(n, 3, 2)).astype(np.float32)
        s, v = np.float32(1.5), rng.normal(size=(n + 1,)).astype(np.float32)
        rows, total, doubled = (t.asnumpy() for t in g(ms.Tensor(x), ms.Tensor(s), ms.Tensor(v)))
        np.testing.assert_allclose(rows, (x * s).sum(axis=1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(total, (x * s).sum() + v.sum(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(doubled, v * 2, rtol=1e-6)
    assert g.cache_info()["compiles"] == 1
