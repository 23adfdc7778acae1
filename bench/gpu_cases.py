"""What bench/gpu_check.py runs on a GPU: one correctness case per op family (inputs and numpy
results computed here) and the timed workloads. Needs the compiler (MLIR wheels); imported by
bench/build_gpu_artifacts.py only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mscc.dialects import dtypes as dt
from mscc.dialects.builders import constant
from mscc.dialects.builders import build_op


def op(name, *operands, **attrs):
    return build_op(name, list(operands), attrs).result


def spec(shape, dtype):
    return dt.TensorSpec(tuple(shape), dt.as_dtype(dtype))


def f64(x):
    return np.asarray(x, np.float64)


# Tolerances against float64 numpy references, by result dtype.
TOL = {"float16": (3e-3, 3e-3), "float32": (2e-5, 1e-5), "float64": (1e-12, 1e-12)}


@dataclass
class Case:
    """A module (in_specs, body), input generators and a numpy reference."""
    name: str
    in_specs: list
    body: object
    ref: object                 # (*inputs) -> list of arrays
    domains: tuple = ()         # per input: "any" | "positive" | "index:<n>"
    tol: dict = field(default_factory=dict)  # dtype name -> (rtol, atol) overrides

    def inputs(self, seed=0):
        rng = np.random.default_rng(seed)
        out = []
        for i, s in enumerate(self.in_specs):
            dom = self.domains[i] if i < len(self.domains) else "any"
            out.append(random_values(rng, s.shape, s.dtype, dom))
        return out


def random_values(rng, shape, d: dt.DType, domain="any"):
    if domain == "counter":
        return np.array(rng.integers(0, 2**40), d.np)
    if domain.startswith("index:"):
        return rng.integers(0, int(domain[6:]), shape).astype(d.np)
    if d.is_bool:
        return rng.random(shape) < 0.5
    lo, hi = (0.5, 3.0) if domain == "positive" else (-3.0, 3.0)
    if d.is_float:
        return rng.uniform(lo, hi, shape).astype(d.np)
    if d.kind == "uint":
        lo = 0
    return rng.integers(int(lo), int(hi) + 1, shape).astype(d.np)


def _chain(x, y):
    return op("ms.mul", op("ms.relu", op("ms.add", op("ms.mul", x, y), x)),
              constant(np.array(0.5), dt.float64, scalar=True))


def _chain_ref(x, y):
    return [(np.maximum(f64(x) * y + x, 0) * 0.5).astype(x.dtype)]


def _softmax_ref(x, axis, log=False):
    x = f64(x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    p = e / e.sum(axis=axis, keepdims=True)
    return np.log(p) if log else p


def _mm(ta, tb):
    return lambda a, b: op("ms.matmul", a, b, transpose_a=ta, transpose_b=tb)


def _mm_ref(ta, tb, out_dtype):
    def ref(a, b):
        am, bm = (a.T if ta else a), (b.T if tb else b)
        return [(f64(am) @ f64(bm)).astype(out_dtype)]
    return ref


_AXES = ((2,), (0,), (0, 2), (0, 1, 2))   # row (tree), column, both, everything (0-d)


def _reductions(x):
    return [op(n, x, axis=axis, keep_dims=False)
            for n in ("ms.reduce_sum", "ms.reduce_max", "ms.reduce_mean") for axis in _AXES] + [
        op("ms.argmax", x, axis=2, keep_dims=False), op("ms.argmin", x, axis=0, keep_dims=False)]


def _reductions_ref(x):
    return [np.asarray(fn(f64(x), axis=axis)).astype(x.dtype)
            for fn in (np.sum, np.max, np.mean) for axis in _AXES] + [
        np.argmax(x, axis=2).astype(np.int32), np.argmin(x, axis=0).astype(np.int32)]


def _data_movement(x, idx):
    return [op("ms.transpose", x, perm=(2, 0, 1)), op("ms.concat", x, x, axis=1),
            op("ms.tile", x, multiples=(1, 2, 1)),
            op("ms.slice", x, begin=(0, 1, 0), size=(2, 2, -1)),
            op("ms.strided_slice", x, begin=(0, 0, 1), end=(2, 3, 40), strides=(1, 2, 3)),
            op("ms.gather", x, idx, axis=2), op("ms.broadcast_to", x, shape=(5, 2, 3, 40)),
            op("ms.reshape", x, shape=(6, -1)),
            op("ms.strided_slice_grad", op("ms.slice", x, begin=(0, 1, 0), size=(2, 2, -1)),
               shape=(2, 3, 40), begin=(0, 1, 0), end=(2, 3, 40), strides=(1, 1, 1)),
            # ids in [0, 40), 32 segments: the ids from 32 up are dropped
            op("ms.unsorted_segment_sum", op("ms.transpose", op("ms.gather", x, idx, axis=2),
                                             perm=(2, 0, 1)), idx, num_segments=32)]


def _data_movement_ref(x, idx):
    return [x.transpose(2, 0, 1), np.concatenate([x, x], 1), np.tile(x, (1, 2, 1)),
            x[0:2, 1:3, :], x[0:2, 0:3:2, 1:40:3], np.take(x, idx, axis=2),
            np.broadcast_to(x, (5, 2, 3, 40)), x.reshape(6, -1), _scatter_rows(x),
            segment_sum_ref(np.take(x, idx, axis=2).transpose(2, 0, 1), idx, 32)]


def random_uniform_ref(shape, counter, seed):
    """ms.random_uniform's generator in numpy (dialects/ops/random.py): lowbias32 of
    index + counter * 0x9E3779B9 + seed, top 24 bits scaled to [0, 1)."""
    with np.errstate(over="ignore"):
        x = (np.arange(int(np.prod(shape)), dtype=np.uint32)
             + np.uint32(counter * 0x9E3779B9 % 2**32) + np.uint32(seed % 2**32))
        for shift, mul in ((16, 0x7FEB352D), (15, 0x846CA68B), (16, None)):
            x ^= x >> np.uint32(shift)
            if mul is not None:
                x *= np.uint32(mul)
    return ((x >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)).reshape(shape)


def segment_sum_ref(data, ids, segments):
    """ms.unsorted_segment_sum in numpy: rows of data added into the segment their id names,
    ids outside [0, segments) dropped."""
    out = np.zeros((segments,) + data.shape[ids.ndim:], data.dtype)
    keep = (ids >= 0) & (ids < segments)
    np.add.at(out, ids[keep], data[keep])
    return out


def _scatter_rows(x):
    out = np.zeros_like(x)
    out[0:2, 1:3, :] = x[0:2, 1:3, :]
    return out


def _math(x):
    return [op("ms.exp", x), op("ms.log", x), op("ms.tanh", x), op("ms.sigmoid", x),
            op("ms.sqrt", x), op("ms.rsqrt", x), op("ms.pow", x, x), op("ms.erf", x)]


def _math_ref(x):
    xd = f64(x)
    return [a.astype(x.dtype) for a in (np.exp(xd), np.log(xd), np.tanh(xd), 1 / (1 + np.exp(-xd)),
                                        np.sqrt(xd), 1 / np.sqrt(xd), xd ** xd,
                                        np.vectorize(math.erf)(xd))]


def _ints(x, y):
    return [op("ms.add", x, y), op("ms.mul", x, y), op("ms.maximum", x, y), op("ms.neg", x),
            op("ms.abs", x), op("ms.less", x, y), op("ms.reduce_sum", x, axis=(1,), keep_dims=False)]


def _ints_ref(x, y):
    return [x + y, x * y, np.maximum(x, y), -x, np.abs(x), x < y, x.sum(axis=1, dtype=x.dtype)]


# Convolutions: one geometry per case (stride, dilation, pad_lo, pad_hi, groups).
def _geom(stride, dilation, lo, hi, groups):
    return dict(stride=stride, dilation=dilation, pad_lo=lo, pad_hi=hi, groups=groups)


def conv_ref(x, w, g):
    """Direct float64 convolution (NC + spatial), summing over the kernel offsets."""
    x, w = f64(x), f64(w)
    r = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(g["pad_lo"], g["pad_hi"])))
    kernel, groups = w.shape[2:], g["groups"]
    s, d = g["stride"], g["dilation"]
    out = [(xp.shape[2 + i] - (kernel[i] - 1) * d[i] - 1) // s[i] + 1 for i in range(r)]
    cg, og = x.shape[1] // groups, w.shape[0] // groups
    y = np.zeros((x.shape[0], w.shape[0], *out))
    for k in np.ndindex(*kernel):
        win = xp[(slice(None), slice(None)) + tuple(
            slice(k[i] * d[i], k[i] * d[i] + (out[i] - 1) * s[i] + 1, s[i]) for i in range(r))]
        for j in range(groups):
            y[:, j * og:(j + 1) * og] += np.einsum(
                "oc,nc...->no...", w[(slice(j * og, (j + 1) * og), slice(None)) + k],
                win[:, j * cg:(j + 1) * cg])
    return y


def _conv_case(name, xs, ws, geom):
    """Forward and both gradients (with a fixed cotangent dy = the forward's result)."""
    def body(x, w, dy):
        return [op("ms.conv", x, w, **geom),
                op("ms.conv_input_grad", dy, w, input_shape=xs, **geom),
                op("ms.conv_filter_grad", x, dy, kernel_shape=ws, **geom)]

    def ref(x, w, dy):
        y = conv_ref(x, w, geom)
        # the gradients as derivatives of <conv(x, w), dy>: linear maps, exact by unit basis
        dx = np.zeros(xs)
        for i in np.ndindex(*xs):
            e = np.zeros(xs)
            e[i] = 1
            dx[i] = (conv_ref(e, w, geom) * dy).sum()
        dw = np.zeros(ws)
        for i in np.ndindex(*ws):
            e = np.zeros(ws)
            e[i] = 1
            dw[i] = (conv_ref(x, e, geom) * dy).sum()
        return [y.astype(np.float32), dx.astype(np.float32), dw.astype(np.float32)]
    ys = conv_ref(np.zeros(xs), np.zeros(ws), geom).shape
    return Case(name, [spec(xs, "float32"), spec(ws, "float32"), spec(ys, "float32")], body,
                ref, tol={"float32": (1e-4, 1e-4)})


CONV_CHECKS = [
    _conv_case("conv2d_f32", (2, 3, 7, 6), (4, 3, 3, 2), _geom((2, 1), (1, 2), (1, 0), (1, 2), 1)),
    _conv_case("conv2d_grouped_f32", (1, 4, 5, 5), (6, 2, 3, 3),
               _geom((1, 1), (1, 1), (1, 1), (1, 1), 2)),
    _conv_case("conv1d_f32", (2, 2, 9), (3, 2, 3), _geom((2,), (1,), (2,), (0,), 1)),
]

CHECKS = [
    Case("chain_f32", [spec((1000, 37), "float32"), spec((37,), "float32")], _chain, _chain_ref),
    Case("chain_f16", [spec((513, 64), "float16"), spec((64,), "float16")], _chain, _chain_ref),
    Case("math_f32", [spec((300, 77), "float32")], _math, _math_ref, ("positive",)),
    Case("math_f64", [spec((300, 77), "float64")], _math, _math_ref, ("positive",)),
    Case("ints_i32", [spec((40, 300), "int32"), spec((300,), "int32")], _ints, _ints_ref),
    Case("ints_i8", [spec((40, 300), "int8"), spec((300,), "int8")], _ints, _ints_ref),
    Case("bool_logic", [spec((37, 41), "bool"), spec((41,), "bool")],
         lambda a, b: [op("ms.logical_and", a, b), op("ms.logical_or", a, b),
                       op("ms.logical_not", a), op("ms.equal", a, b)],
         lambda a, b: [a & b, a | b, ~a, a == b]),
    Case("cast_select", [spec((50, 60), "float32"), spec((50, 60), "bool")],
         lambda x, c: [op("ms.cast", x, dtype=dt.int32), op("ms.cast", x, dtype=dt.float16),
                       op("ms.cast", x, dtype=dt.bool_), op("ms.select", c, x, op("ms.neg", x))],
         lambda x, c: [x.astype(np.int32), x.astype(np.float16), x != 0, np.where(c, x, -x)]),
    Case("reductions_f32", [spec((6, 300, 1000), "float32")], _reductions, _reductions_ref,
         tol={"float32": (1e-4, 1e-4)}),
    Case("reductions_f64", [spec((6, 30, 700), "float64")], _reductions, _reductions_ref),
    Case("softmax_f32", [spec((64, 3000), "float32")],
         lambda x: [op("ms.softmax", x, axis=-1), op("ms.log_softmax", x, axis=-1),
                    op("ms.softmax", x, axis=0)],
         lambda x: [_softmax_ref(x, -1).astype(np.float32),
                    _softmax_ref(x, -1, log=True).astype(np.float32),
                    _softmax_ref(x, 0).astype(np.float32)], tol={"float32": (1e-4, 1e-6)}),
    Case("softmax_f16", [spec((64, 1000), "float16")],
         lambda x: op("ms.softmax", x, axis=-1),
         lambda x: [_softmax_ref(x, -1).astype(np.float16)]),
    Case("matmul_f32", [spec((256, 128), "float32"), spec((128, 512), "float32")], _mm(False, False),
         _mm_ref(False, False, np.float32), tol={"float32": (1e-4, 1e-4)}),
    # 128 blocks of 128x128 (8x8 per thread): the tiling the timed 4096 matmul uses.
    Case("matmul_f32_128tiles", [spec((2048, 32), "float32"), spec((32, 1024), "float32")],
         _mm(False, False), _mm_ref(False, False, np.float32), tol={"float32": (1e-4, 1e-4)}),
    Case("matmul_f32_tt", [spec((128, 256), "float32"), spec((512, 128), "float32")], _mm(True, True),
         _mm_ref(True, True, np.float32), tol={"float32": (1e-4, 1e-4)}),
    Case("matmul_f32_untiled", [spec((50, 70), "float32"), spec((70, 30), "float32")],
         _mm(False, False), _mm_ref(False, False, np.float32), tol={"float32": (1e-4, 1e-4)}),
    Case("matmul_f16", [spec((128, 64), "float16"), spec((256, 64), "float16")], _mm(False, True),
         _mm_ref(False, True, np.float16), tol={"float16": (1e-2, 1e-2)}),
    Case("matmul_f64", [spec((64, 96), "float64"), spec((96, 128), "float64")], _mm(False, False),
         _mm_ref(False, False, np.float64)),
    Case("matmul_i32", [spec((64, 32), "int32"), spec((32, 64), "int32")], _mm(False, False),
         lambda a, b: [a @ b]),
    Case("batch_matmul", [spec((3, 40, 16), "float32"), spec((1, 16, 24), "float32")],
         lambda a, b: op("ms.batch_matmul", a, b, transpose_a=False, transpose_b=False),
         lambda a, b: [np.matmul(f64(a), f64(b)).astype(np.float32)],
         tol={"float32": (1e-4, 1e-4)}),
    Case("data_movement", [spec((2, 3, 40), "float32"), spec((7,), "int32")], _data_movement,
         _data_movement_ref, ("any", "index:40")),
    Case("random_uniform", [spec((), "int64")],
         lambda k: op("ms.random_uniform", k, shape=(300, 77), seed=11),
         lambda k: [random_uniform_ref((300, 77), int(k), 11)], ("counter",)),
    Case("constant_add", [spec((2, 3), "float32")],
         lambda x: op("ms.add", x, constant(np.arange(6, dtype=np.float32).reshape(2, 3))),
         lambda x: [x + np.arange(6, dtype=np.float32).reshape(2, 3)]),
] + CONV_CHECKS

# Timed workloads (references in gpu_check.py, which runs without the compiler):
# (module, minimum bytes moved per call, floating-point operations per call).
CHAIN_N = 64 * 1024 * 1024
PERF = [
    (Case("chain_64M_f32", [spec((CHAIN_N,), "float32"), spec((CHAIN_N,), "float32")], _chain,
          None), 3 * 4 * CHAIN_N, 0),
    (Case("softmax_8192_f32", [spec((8192, 8192), "float32")],
          lambda x: op("ms.softmax", x, axis=-1), None), 2 * 4 * 8192 * 8192, 0),
    (Case("matmul_4096_f32", [spec((4096, 4096), "float32"), spec((4096, 4096), "float32")],
          _mm(False, False), None), 3 * 4 * 4096 * 4096, 2 * 4096 ** 3),
]
