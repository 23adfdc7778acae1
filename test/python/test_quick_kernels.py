"""The quick tier's compiled matrix products (runtime/_quick_kernels.c), which the calls of
ms-cpu-matmul-calls reach: C += A @ B for float32 and float64, rows at any stride, against
numpy in float64, over shapes that leave the four-row blocks ragged."""
import ctypes

import numpy as np
import pytest

from mscc.runtime import quick_kernels

pytestmark = pytest.mark.skipif(not quick_kernels.load(),
                                reason="the _quick_kernels extension was not built")

# (m, n, k, extra elements at the end of each row of A, B and C: a view of wider rows)
SHAPES = [(1, 1, 1, 0), (4, 8, 3, 0), (5, 7, 3, 0), (6, 784, 25, 0), (13, 10, 84, 3),
          (3, 17, 1, 5), (9, 33, 16, 1)]
TOLERANCE = {np.float32: 2e-5, np.float64: 1e-12}


def _function(dtype):
    name = quick_kernels.MATMUL["f32" if dtype == np.float32 else "f64"]
    f = getattr(ctypes.CDLL(None), name)  # (loaded globally: what the JIT finds)
    f.restype = None
    f.argtypes = [ctypes.c_int64] * 3 + [ctypes.c_void_p, ctypes.c_int64] * 3
    return f


def _view(rng, rows, cols, pad, dtype):
    """A rows x cols view of a buffer with `pad` more elements per row."""
    return rng.standard_normal((rows, cols + pad)).astype(dtype)[:, :cols]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,n,k,pad", SHAPES)
def test_the_product_is_added_to_c(dtype, m, n, k, pad):
    rng = np.random.default_rng(m * 100 + n + k)
    a, b, c = (_view(rng, r, col, pad, dtype) for r, col in ((m, k), (k, n), (m, n)))
    c_padding = c.base[:, n:].copy()
    want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    size = np.dtype(dtype).itemsize
    _function(dtype)(m, n, k, a.ctypes.data, a.strides[0] // size, b.ctypes.data,
                     b.strides[0] // size, c.ctypes.data, c.strides[0] // size)
    np.testing.assert_allclose(c, want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype] * k)
    np.testing.assert_array_equal(c.base[:, n:], c_padding)  # (beyond the rows: untouched)


def test_the_functions_are_found_by_name():
    for name in quick_kernels.MATMUL.values():
        assert hasattr(ctypes.CDLL(None), name)
