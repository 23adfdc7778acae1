"""The matmul schedule's register tiles: kernels that zero their own output
(ms-cpu-kernel-zero-init), whose first tiles start from zeros (passes/cpu_register_tiles.py),
and epilogues computed on the tiles' rows before they are stored
(passes/cpu_fused_epilogues.py). Results against float64 numpy for every path that decides
where a tile's k starts and ends (the epilogue is computed by the last panel's tiles): one K
panel, several, a ragged last panel, packed B with an epilogue, ragged rows and columns, a
convolution's product per image, a dynamic depth including K = 0 (no tile runs: the kept
fill gives the zeros), epilogues reading a bias, a row of another matrix, one value per
row; and the lowered IR has no fill left where every tile starts from zeros, no epilogue
loop where the tiles compute it."""
import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mlir import ir

from mscc.dialects.builders import mlir_context
from mscc.passes import pipeline

RNG = np.random.default_rng(7)

# (m, k, n, transpose_b, bias_relu): K of one panel (<= 256), two, a ragged last panel (784),
# B packed (m >= 128, rows of B 4 KiB apart), ragged edges of rows and columns (edges of
# columns wider than a vector as masked whole vectors: LeNet5's 120 and 84 features; rows as
# tiles of fewer rows where those divide them: 84 as 7s and 150 as 6s with AVX-512, 10 split
# into 8 and 2), the bias and ReLU computed on the tiles of the last K panel.
PRODUCTS = [
    (16, 24, 64, False, False),
    (16, 24, 64, False, True),
    (64, 512, 64, False, False),
    (64, 512, 64, False, True),
    (256, 784, 512, True, True),
    (128, 128, 1024, False, True),
    (37, 300, 70, False, False),
    (37, 200, 70, False, True),
    (32, 400, 120, False, True),
    (32, 120, 84, True, False),
    (84, 32, 120, False, True),
    (10, 32, 84, False, False),
    (150, 100, 20, False, True),
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


@pytest.mark.parametrize("m,k,n", [(84, 40, 20), (12, 300, 44), (8, 16, 8)])
def test_float64_products_with_masked_column_edges(m, k, n):
    """float64 rows are vectors of 8 per 512-bit register (4 per 256-bit), tiles 16 columns
    wide: 44 columns are two tiles and a masked edge of 12 (a vector of 16 lanes), 20 a tile
    and 4 columns in one short vector; bias and ReLU applied on the tiles."""
    a, b = RNG.standard_normal((m, k)), RNG.standard_normal((k, n))
    bias = RNG.standard_normal(n)
    got = ms.jit(lambda a, b, bias: ops.relu(ops.matmul(a, b) + bias))(
        ms.Tensor(a), ms.Tensor(b), ms.Tensor(bias)).asnumpy()
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.maximum(a @ b + bias, 0), rtol=1e-12, atol=1e-12)


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
    assert "linalg.fill" in f.lower(a, b).as_text("bufferized")
    scheduled = _after_schedule(f, a, b)
    assert "linalg.fill" not in scheduled
    assert "dense<0.000000e+00> : vector<32xf32>" in scheduled
    np.testing.assert_array_equal(f(a, b).asnumpy(), np.full((512, 784), 256, np.float32))


# Epilogues on the tiles: (name, function of (a, b, u, s), numpy of the same). u is m x n (a
# row of another matrix, as an SGD update's weights), s is m x 1 (one value per row).
EPILOGUES = [
    ("sgd update", lambda a, b, u, s: u - 0.01 * ops.matmul(a, b),
     lambda a, b, u, s: u - 0.01 * (a @ b)),
    ("relu mask", lambda a, b, u, s: ops.matmul(a, b) * (u > 0).astype(ms.float32),
     lambda a, b, u, s: (a @ b) * (u > 0)),
    ("row scale", lambda a, b, u, s: ops.tanh(ops.matmul(a, b) * s),
     lambda a, b, u, s: np.tanh((a @ b) * s)),
]


@pytest.mark.parametrize("name,fn,reference", EPILOGUES, ids=[e[0] for e in EPILOGUES])
@pytest.mark.parametrize("m,k,n", [(512, 256, 784), (40, 72, 96), (256, 300, 64),
                                   (84, 72, 120)])
def test_epilogues_on_the_tiles(name, fn, reference, m, k, n):
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    u = RNG.standard_normal((m, n)).astype(np.float32)
    s = RNG.standard_normal((m, 1)).astype(np.float32) / 8
    got = ms.jit(fn)(*map(ms.Tensor, (a, b, u, s))).asnumpy()
    want = reference(*(v.astype(np.float64) for v in (a, b, u, s)))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * np.sqrt(k))


def _after_schedule(f, *args) -> str:
    """The IR of f's module right after ms-cpu-matmul-schedule."""
    seen = {}

    def after(step, module):
        if step.text == "ms-cpu-matmul-schedule":
            seen["ir"] = str(module)
    with mlir_context():
        module = ir.Module.parse(f.lower(*args).as_text("bufferized"))
        pipeline.run_pipeline(module, "cpu", start_after="bufferized", stop_after="llvm",
                              after_each=after)
    return seen["ir"]


def _kernel_after_schedule(f, *args) -> str:
    """The IR of f's first matmul kernel right after ms-cpu-matmul-schedule."""
    text = _after_schedule(f, *args)
    return text[text.index("__matmul0("):]


def test_the_weight_gradients_update_is_computed_on_the_tiles():
    """An SGD step's w - lr * (a.T @ d), K one panel: after the matmul schedule each
    parallel loop of the kernel is a product's (the 768 columns of full register tiles and
    the 16 of the ragged edge), each holding its tiles' loop over k; no loop of the update."""
    f = ms.jit(lambda w, a, d: w - 0.01 * ops.matmul(a, d, transpose_a=True))
    w, a, d = (ms.Tensor(RNG.standard_normal(s).astype(np.float32))
               for s in ((512, 784), (256, 512), (256, 784)))
    kernel = _kernel_after_schedule(f, w, a, d)
    assert kernel.count("scf.forall") == kernel.count("iter_args") == 2
    assert "linalg." not in kernel and kernel.count("arith.subf") == 16  # (8 rows per tile)
    want = w.asnumpy() - 0.01 * (a.asnumpy().astype(np.float64).T @ d.asnumpy())
    np.testing.assert_allclose(f(w, a, d).asnumpy(), want, rtol=1e-4, atol=1e-4)


def test_a_dense_layers_bias_and_relu_are_computed_by_the_last_panels_tiles():
    """relu(x @ W.T + b) with K = 784 (four panels of 256, the last of 16): one parallel loop
    (the product's, B packed from W), the epilogue chosen per tile by the panel's end."""
    f = ms.jit(lambda x, w, b: ops.relu(ops.matmul(x, w, transpose_b=True) + b))
    x, w, b = (ms.Tensor(RNG.standard_normal(s).astype(np.float32))
               for s in ((256, 784), (512, 784), (512,)))
    kernel = _kernel_after_schedule(f, x, w, b)
    assert kernel.count("scf.forall") == 1 and "linalg." not in kernel
    assert kernel.count("arith.maximumf") == 8 and "scf.if" in kernel
    want = np.maximum(x.asnumpy().astype(np.float64) @ w.asnumpy().T + b.asnumpy(), 0)
    np.testing.assert_allclose(f(x, w, b).asnumpy(), want, rtol=1e-4, atol=1e-3)


def test_a_products_fill_among_row_loops_moves_into_its_kernel():
    """dh = (softmax(h @ w2.T) @ w2) * (h > 0), an MLP's hidden gradient: the 256x512
    product's fill sat among the softmax's row loops, which ms-cpu-tile-rows runs per tile of
    rows; the kernel takes it first, so no fill of that size is left anywhere."""
    f = ms.jit(lambda h, w2: ops.matmul(ops.softmax(ops.matmul(h, w2, transpose_b=True)), w2)
               * (h > 0).astype(ms.float32))
    h = RNG.standard_normal((256, 512)).astype(np.float32)
    w2 = RNG.standard_normal((10, 512)).astype(np.float32) / 8
    text = _after_schedule(f, ms.Tensor(h), ms.Tensor(w2))
    assert not [line for line in text.splitlines()
                if "linalg.fill" in line and "512xf32" in line]
    z = h.astype(np.float64) @ w2.T
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(f(ms.Tensor(h), ms.Tensor(w2)).asnumpy(), (p @ w2) * (h > 0),
                               rtol=1e-4, atol=1e-5)
