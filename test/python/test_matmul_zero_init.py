"""Products whose output the kernel zeroes itself (ms-cpu-kernel-zero-init) and whose first
register tiles start from zeros (passes/cpu_register_tiles.py): results against float64 numpy
for every path that decides where a tile's k starts — one K panel, several, a ragged last
panel, packed B with an epilogue, ragged rows and columns, a convolution's product per image,
a dynamic depth including K = 0 (no tile runs: the kept fill gives the zeros) — and the
lowered IR has no fill left where every tile starts from zeros."""
import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mlir import ir

from mscc.dialects.builders import mlir_context
from mscc.passes import pipeline

RNG = np.random.default_rng(7)

# (m, k, n, transpose_b, bias_relu): K of one panel (<= 256), two, a ragged last panel (784),
# B packed (m >= 128, rows of B 4 KiB apart), ragged edges of rows and columns.
PRODUCTS = [
    (16, 24, 64, False, False),
    (64, 512, 64, False, False),
    (256, 784, 512, True, True),
    (128, 128, 1024, False, True),
    (37, 300, 70, False, False),
    (512, 256, 784, False, False),
]


@pytest.mark.parametrize("m,k,n,transpose_b,bias_relu", PRODUCTS)
def test_products_start_from_zeros(m, k, n, transpose_b, bias_relu):
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((n, k) if transpose_b else (k, n)).astype(np.float32)
    bias = RNG.standard_normal(n).astype(np.float32)

    def f(a, b, bias):
        y = ops.matmul(a, b, transpose_b=transpose_b)
        return ops.relu(y + bias) if bias_relu else y
    got = ms.jit(f)(ms.Tensor(a), ms.Tensor(b), ms.Tensor(bias)).asnumpy()
    want = a.astype(np.float64) @ (b.T if transpose_b else b).astype(np.float64)
    if bias_relu:
        want = np.maximum(want + bias, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * np.sqrt(k))


def test_weight_gradient_of_a_dynamic_batch_of_zero_rows_is_zero():
    """x.T @ d over a dynamic batch: the depth K is the batch; with K = 0 no register tile
    runs and C must still be the zeros the kept fill writes."""
    sig = (ms.Tensor(shape=[None, 300], dtype=ms.float32),
           ms.Tensor(shape=[None, 96], dtype=ms.float32))
    dw = ms.jit(lambda x, d: ops.matmul(x.T, d), input_signature=sig)
    for rows in (0, 5, 600):
        x = RNG.standard_normal((rows, 300)).astype(np.float32)
        d = RNG.standard_normal((rows, 96)).astype(np.float32)
        got = dw(ms.Tensor(x), ms.Tensor(d)).asnumpy()
        np.testing.assert_allclose(got, x.T.astype(np.float64) @ d, rtol=1e-4, atol=1e-3)


def test_convolution_per_image_products_start_from_zeros():
    x = RNG.standard_normal((3, 4, 9, 9)).astype(np.float32)
    w = RNG.standard_normal((5, 4, 3, 3)).astype(np.float32)
    got = ms.jit(lambda x, w: ops.conv2d(x, w, pad_mode="pad", padding=1))(
        ms.Tensor(x), ms.Tensor(w)).asnumpy()
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = sum(np.einsum("nchw,oc->nohw", xp[:, :, i:i + 9, j:j + 9], w[:, :, i, j])
               for i in range(3) for j in range(3))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_no_fill_of_the_product_is_left():
    """A 512x256 @ 256x784 product (an MLP's weight gradient): the caller's 1.6 MB fill is in
    the bufferized IR, and after the matmul schedule no fill is left anywhere, the tiles
    starting from zero vectors."""
    f = ms.jit(lambda a, b: ops.matmul(a, b))
    a = ms.Tensor(np.ones((512, 256), np.float32))
    b = ms.Tensor(np.ones((256, 784), np.float32))
    text = f.lower(a, b).as_text("bufferized")
    assert "linalg.fill" in text
    seen = {}

    def after(step, module):
        if step.text == "ms-cpu-matmul-schedule":
            seen["ir"] = str(module)
    with mlir_context():
        module = ir.Module.parse(text)
        pipeline.run_pipeline(module, "cpu", start_after="bufferized", stop_after="llvm",
                              after_each=after)
    assert "linalg.fill" not in seen["ir"]
    assert "dense<0.000000e+00> : vector<32xf32>" in seen["ir"]
    np.testing.assert_array_equal(f(a, b).asnumpy(), np.full((512, 784), 256, np.float32))
