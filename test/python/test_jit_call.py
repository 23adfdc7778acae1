"""JitFunction's cache-hit call in C (runtime/jit_call.h): it serves exactly the hits of the
Python call's fast paths, leaves traces, tapes, keywords and misses to `_call_python`, keeps
the LRU stamps, and the package works without it."""
import gc
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mscc.runtime import fastcall

needs_c = pytest.mark.skipif(fastcall.JitBase is object or fastcall.call is None,
                             reason="runtime/_fastcall.c is not built")


def _add_mul(x, y):
    return x * y + x


def _arrays(shape=(4, 3)):
    rng = np.random.default_rng(5)
    return (rng.normal(size=shape).astype(np.float32),
            rng.normal(size=shape[-1:]).astype(np.float32))


class _PythonCalled(Exception):
    pass


def _refuse_python(*args, **kwargs):
    raise _PythonCalled


@needs_c
def test_hits_with_tensors_or_arrays_do_not_enter_python():
    x, y = _arrays()
    f = ms.jit(_add_mul)
    f(ms.Tensor(x), ms.Tensor(y))
    f(x, y)
    f._call_python = _refuse_python  # (an instance attribute: what jit_call looks up)
    x2 = x + 1
    np.testing.assert_allclose(f(ms.Tensor(x2), ms.Tensor(y)).asnumpy(), x2 * y + x2, rtol=1e-5)
    np.testing.assert_allclose(f(x2, y).asnumpy(), x2 * y + x2, rtol=1e-5)
    for kwargs in ({"x": ms.Tensor(x2), "y": ms.Tensor(y)}, {"y": ms.Tensor(y)}):
        args = () if "x" in kwargs else (ms.Tensor(x2),)
        np.testing.assert_allclose(f(*args, **kwargs).asnumpy(), x2 * y + x2, rtol=1e-5)
    with pytest.raises(_PythonCalled):  # a keyword that is not the next parameter's
        f(ms.Tensor(x), x=ms.Tensor(y))
    with pytest.raises(_PythonCalled):  # another shape: a miss
        f(ms.Tensor(x[:2]), ms.Tensor(y))
    with pytest.raises(_PythonCalled):  # a Tensor and an array: no flat key
        f(ms.Tensor(x), y)


def test_keywords_bind_as_the_python_call_binds_them():
    x, y = _arrays()
    f = ms.jit(_add_mul)
    want = x * y + x
    for _ in range(2):  # the first call compiles, the second hits
        np.testing.assert_allclose(f(y=ms.Tensor(y), x=ms.Tensor(x)).asnumpy(), want, rtol=1e-5)
        np.testing.assert_allclose(f(x, y=y).asnumpy(), want, rtol=1e-5)
    with pytest.raises(TypeError):  # x twice
        f(ms.Tensor(x), x=ms.Tensor(y))
    with pytest.raises(TypeError):  # no such parameter
        f(ms.Tensor(x), z=ms.Tensor(y))
    g = ms.jit(lambda x, *, y: x * y + x)  # keyword-only: not a plain parameter
    with pytest.raises(TypeError, match="keyword-only"):
        g(ms.Tensor(x), y=ms.Tensor(y))


@needs_c
def test_hits_stamp_their_entry_for_the_lru():
    x, y = _arrays()
    f = ms.jit(_add_mul)
    f(ms.Tensor(x), ms.Tensor(y))
    entry = next(iter(f._flat_cache.values()))
    before = f._calls
    for _ in range(5):
        f(ms.Tensor(x), ms.Tensor(y))
    assert f._calls == before + 5
    assert entry.last_used == f._calls


def test_least_recently_used_entry_is_evicted_after_c_hits():
    f = ms.jit(lambda x: x * 2, cache_size=2)
    a, b, c = (np.ones(n, np.float32) for n in (2, 3, 4))
    f(ms.Tensor(a))
    f(ms.Tensor(b))
    for _ in range(3):  # a is the most recently used: b goes when c comes
        f(ms.Tensor(a))
    f(ms.Tensor(c))
    assert f.cache_info()["evictions"] == 1
    compiles = f.cache_info()["compiles"]
    f(ms.Tensor(a))  # kept
    assert f.cache_info()["compiles"] == compiles
    f(ms.Tensor(b))  # evicted: compiled again
    assert f.cache_info()["compiles"] == compiles + 1


def test_a_compiled_function_called_while_tracing_is_inlined():
    """A hit served from the executable while another function is traced would make its
    result a constant of that trace: the second call with new values would be wrong."""
    x, y = _arrays()
    f = ms.jit(_add_mul)
    f(ms.Tensor(x), ms.Tensor(y))  # a cache entry for these shapes
    g = ms.jit(lambda a, b: f(a, b) * 2)
    for scale in (1.0, 3.0):
        xs = x * scale
        np.testing.assert_allclose(g(ms.Tensor(xs), ms.Tensor(y)).asnumpy(),
                                   (xs * y + xs) * 2, rtol=1e-5)


def test_a_compiled_function_called_under_a_pynative_gradient_is_recorded():
    x, y = _arrays()
    f = ms.jit(_add_mul)
    f(ms.Tensor(x), ms.Tensor(y))  # a cache entry for these shapes
    grad = ms.grad(lambda a: ops.reduce_sum(f(a, ms.Tensor(y))))
    np.testing.assert_allclose(grad(ms.Tensor(x)).asnumpy(), np.broadcast_to(y + 1, x.shape),
                               rtol=1e-5)


def test_the_python_call_gives_the_same_result(monkeypatch):
    monkeypatch.setenv("MSCC_TIERED", "0")  # (bitwise: both calls run the same code)
    x, y = _arrays()
    f = ms.jit(_add_mul)
    c = f(ms.Tensor(x), ms.Tensor(y)).asnumpy()
    p = f._call_python(ms.Tensor(x), ms.Tensor(y)).asnumpy()
    np.testing.assert_array_equal(c, p)
    assert f.cache_info()["compiles"] == 1


def test_methods_and_placeholders_still_work():
    class Scale:
        factor = 3.0

        @ms.jit
        def apply(self, x):
            return x * self.factor

    x, _ = _arrays()
    s = Scale()
    for _ in range(2):
        np.testing.assert_allclose(s.apply(ms.Tensor(x)).asnumpy(), x * 3, rtol=1e-5)
    f = ms.jit(_add_mul)
    f(ms.Tensor(x), ms.Tensor(x))
    with pytest.raises(TypeError, match="placeholder"):
        f(ms.Tensor(shape=x.shape, dtype=ms.float32), ms.Tensor(x))


def test_a_dropped_function_is_collected():
    f = ms.jit(_add_mul)
    x, y = _arrays()
    f(ms.Tensor(x), ms.Tensor(y))
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is None


def test_without_the_extension_the_call_is_python():
    script = textwrap.dedent("""
        import sys
        sys.modules["mscc.runtime._fastcall"] = None  # as if it was never built
        import numpy as np
        import mscc as ms
        from mscc.pyfront.jit import JitFunction
        assert JitFunction.__call__ is JitFunction._call_python
        f = ms.jit(lambda x, y: x * y + x)
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        for _ in range(2):
            out = f(ms.Tensor(x), ms.Tensor(x)).asnumpy()
            out2 = f(x=ms.Tensor(x), y=ms.Tensor(x)).asnumpy()
        assert np.allclose(out, x * x + x) and np.allclose(out2, out)
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
