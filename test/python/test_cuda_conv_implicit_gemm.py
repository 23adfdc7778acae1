"""The CUDA implicit-GEMM convolution kernel (passes/gpu_conv.py), forward and input
gradient, run by the emulator (gpu_emulation.py: phases between barriers, workgroup and
private memory) against float64 numpy direct convolutions."""
import numpy as np
import pytest
from mlir import ir

from gpu_emulation import emulated_executable
from mscc.dialects.ir_helpers import ops_of_kind
from mscc.passes import pipeline
from mscc.passes.gpu_conv import CONV_TILES, conv_tiles
from mstest import module_of, op, spec

PASS = "ms-gpu-conv-implicit-gemm"


def pads(mode, kernel, dilation, stride, sizes):
    """MindSpore's pad modes as (pad_lo, pad_hi) per spatial dim; explicit pads as given."""
    if mode == "valid":
        return (0,) * len(kernel), (0,) * len(kernel)
    if mode == "same":
        lo, hi = [], []
        for n, k, d, s in zip(sizes, kernel, dilation, stride):
            total = max(0, (-(-n // s) - 1) * s + (k - 1) * d + 1 - n)
            lo.append(total // 2)
            hi.append(total - total // 2)
        return tuple(lo), tuple(hi)
    return mode


def conv_ref(x, w, stride, dilation, lo, hi):
    """y[n, f, p] = sum over c, k of xpad[n, c, p*s + k*d] * w[f, c, k], in float64."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    r = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(lo, hi)))
    kernel = w.shape[2:]
    out = [(xp.shape[2 + i] - (kernel[i] - 1) * dilation[i] - 1) // stride[i] + 1
           for i in range(r)]
    y = np.zeros((x.shape[0], w.shape[0], *out))
    for k in np.ndindex(*kernel):
        win = xp[(slice(None), slice(None)) + tuple(
            slice(k[i] * dilation[i], k[i] * dilation[i] + (out[i] - 1) * stride[i] + 1,
                  stride[i]) for i in range(r))]
        y += np.einsum("fc,nc...->nf...", w[(slice(None), slice(None)) + k], win)
    return y


def input_grad_ref(dy, w, x_shape, stride, dilation, lo, hi):
    """dx = the adjoint of conv_ref in x: each dy[n, f, p] * w[f, c, k] added at the padded
    position p*s + k*d, the pads cropped, in float64."""
    dy, w = dy.astype(np.float64), w.astype(np.float64)
    r = dy.ndim - 2
    dxp = np.zeros(x_shape[:2] + tuple(n + a + b for n, a, b in zip(x_shape[2:], lo, hi)))
    out = dy.shape[2:]
    for k in np.ndindex(*w.shape[2:]):
        at = (slice(None), slice(None)) + tuple(
            slice(k[i] * dilation[i], k[i] * dilation[i] + (out[i] - 1) * stride[i] + 1,
                  stride[i]) for i in range(r))
        dxp[at] += np.einsum("fc,nf...->nc...", w[(slice(None), slice(None)) + k], dy)
    return dxp[(slice(None), slice(None)) + tuple(slice(a, a + n) for a, n in
                                                  zip(lo, x_shape[2:]))]


# (x shape, weight shape, stride, dilation, pad mode or (pad_lo, pad_hi)). M = N*P, F and
# K = C*KS: most cases are ragged against every tiling (bounds checks); `exact` divides the
# 32x32x16 tiles (no guards at all).
CASES = {
    "same-3x3": ((2, 3, 8, 8), (8, 3, 3, 3), (1, 1), (1, 1), "same"),
    "valid-stride2": ((3, 4, 9, 9), (16, 4, 3, 3), (2, 2), (1, 1), "valid"),
    "explicit-dilated": ((2, 5, 9, 8), (7, 5, 3, 2), (2, 1), (1, 2), ((1, 0), (0, 2))),
    "same-stride2-dilated": ((1, 6, 11, 10), (33, 6, 3, 3), (2, 2), (2, 1), "same"),
    "exact": ((2, 16, 4, 4), (32, 16, 1, 1), (1, 1), (1, 1), "valid"),
    "conv1d": ((2, 3, 17), (5, 3, 4), (3,), (2,), ((2,), (1,))),
    "conv3d": ((1, 2, 5, 6, 4), (3, 2, 2, 3, 2), (1, 2, 1), (2, 1, 1), "same"),
}
TOL = {"float32": dict(rtol=1e-4, atol=1e-4), "float16": dict(rtol=5e-3, atol=2e-2)}


def conv_module(xs, ws, geom, dtype):
    """ms.conv and ms.conv_input_grad of one geometry in one function (x, w, dy)."""
    probe = conv_ref(np.zeros(xs), np.zeros(ws), geom["stride"], geom["dilation"],
                     geom["pad_lo"], geom["pad_hi"])
    return module_of([spec(xs, dtype), spec(ws, dtype), spec(probe.shape, dtype)],
                     lambda x, w, dy: [op("ms.conv", x, w, **geom),
                                       op("ms.conv_input_grad", dy, w, input_shape=xs, **geom)])


def geometry(xs, ws, stride, dilation, mode):
    lo, hi = pads(mode, ws[2:], dilation, stride, xs[2:])
    return dict(stride=stride, dilation=dilation, pad_lo=lo, pad_hi=hi, groups=1)


def check(case, dtype="float32", tiles="auto"):
    xs, ws, stride, dilation, mode = CASES[case]
    geom = geometry(xs, ws, stride, dilation, mode)
    module = conv_module(xs, ws, geom, dtype)
    exe = emulated_executable(module, "f", {PASS: [f"{PASS}{{tiles={tiles}}}"]})
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    args = (geom["stride"], geom["dilation"], geom["pad_lo"], geom["pad_hi"])
    y_want = conv_ref(x, w, *args)
    dy = rng.standard_normal(y_want.shape).astype(dtype)
    y, dx = exe(x, w, dy)
    np.testing.assert_allclose(y.astype(np.float64), y_want, **TOL[dtype])
    np.testing.assert_allclose(dx.astype(np.float64), input_grad_ref(dy, w, xs, *args),
                               **TOL[dtype])


@pytest.mark.parametrize("case", list(CASES))
def test_forward_and_input_gradient_match_numpy(case):
    check(case)


@pytest.mark.parametrize("tiles", [t.name for t in CONV_TILES])
def test_every_tiling_matches_numpy(tiles):
    check("same-stride2-dilated", tiles=tiles)


def test_float16_accumulates_in_float32():
    check("explicit-dilated", "float16")


def test_tiles_shrink_until_the_grid_fills_the_gpu():
    assert conv_tiles(64 * 56 * 56, 256).name == "128x128x8"
    assert conv_tiles(64 * 56 * 56, 64).name == "64x64x16"  # (a 128-wide tile: half padding)
    assert conv_tiles(16 * 28 * 28, 64).name == "64x64x16"
    assert conv_tiles(8 * 28 * 28, 64).name == "32x32x16"  # (98 blocks of 64x64)
    assert conv_tiles(2 * 8 * 8, 8).name == "32x32x16"


def test_the_emulated_module_ran_the_kernel_with_barriers():
    """The cases above are the kernel's numerics only if the pass built it: at the gpu
    stage's ms-gpu-map-linalg, each convolution is one launch with barriers and workgroup
    memory, and no linalg.generic is left tagged."""
    xs, ws, stride, dilation, mode = CASES["same-3x3"]
    module = conv_module(xs, ws, geometry(xs, ws, stride, dilation, mode), "float32")
    for name, steps in pipeline.stage_steps("cuda"):
        if name == "gpu":
            upto = [s.name for s in steps].index(PASS)
            pipeline.run_steps(module, steps[:upto + 1], stage=name)
            break
        pipeline.run_steps(module, steps, stage=name)
    launches = [op for op in ops_of_kind(module.operation, "gpu.launch")
                if ops_of_kind(op, "gpu.barrier")]
    assert len(launches) == 2  # the forward and the input gradient
    for launch in launches:
        assert ir.IntegerAttr(launch.attributes["workgroup_attributions"]).value == 2
    assert not [g for g in ops_of_kind(module.operation, "linalg.generic")
                if "ms.implicit_gemm" in g.attributes]
