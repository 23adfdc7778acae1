"""The ops of pyfront/ops_more.py (the ones among the 150 ops MindSpore's models use most that
mscc lacked), their Primitive rows (pyfront/primitives.py RANKED_ROWS) and Tensor methods,
against numpy: values (float64 references), dtypes, shapes, eagerly (PyNative) and under
ms.jit (graph mode); MindSpore's documented errors; gradients of the differentiable ones
against central differences in float64; Primitive and functional forms compiling to the same
ms ops (parsed op lists). Also the ranking itself: bench/rank_mindspore_ops.py's counting on
source text, usage_rank.txt and the top-150 table of the coverage generator.
"""
import importlib.util
import math
import os
from dataclasses import dataclass, field

import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mscc.ops import operations as P
from mscc.pyfront import ops_more, primitives
from mscc.pyfront.mindspore_modules import coverage
from mstest import check_weighted_gradient  # noqa: E402

F32, F64, I32, I64 = np.float32, np.float64, np.int32, np.int64
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def f32(*shape, low=-2.0, high=2.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(F32)


def boxes(n, seed=0):
    """(n, 4) float32 boxes x0 < x1, y0 < y1 inside a 20 x 16 image."""
    rng = np.random.default_rng(seed)
    x0, y0 = rng.uniform(0, 10, n), rng.uniform(0, 8, n)
    w, h = rng.uniform(1, 9, n), rng.uniform(1, 7, n)
    return np.stack([x0, y0, x0 + w, y0 + h], 1).astype(F32)


@dataclass
class Case:
    id: str
    fn: object                   # (*Tensors) -> Tensor or tuple (mscc)
    ref: object                  # (*float64/int arrays) -> array or tuple (numpy)
    inputs: list                 # arrays (float32 ones become float64 for the references)
    dtypes: tuple = ()           # expected numpy dtype per output (default: input 0's)
    grad: bool = False           # differentiable in input 0
    tol: dict = field(default_factory=lambda: dict(rtol=2e-5, atol=2e-6))


# ------------------------------------------------------------------ numpy references

def _gather_nd(x, idx):
    return x[tuple(np.moveaxis(idx, -1, 0))]


def _gather_elements(x, dim, index):
    """MindSpore's gather_elements: index may be smaller than x on the other axes."""
    part = x[tuple(slice(0, n) if a != dim else slice(None) for a, n in enumerate(index.shape))]
    return np.take_along_axis(part, index, dim)


def _scatter_nd(idx, upd, shape):
    out = np.zeros(shape, upd.dtype)
    np.add.at(out, tuple(np.moveaxis(idx, -1, 0)), upd)
    return out


def _scatter_along(x, dim, index, src):
    out = x.copy()
    where = list(np.indices(index.shape))
    where[dim] = index
    np.add.at(out, tuple(where), src[tuple(slice(0, n) for n in index.shape)])
    return out


def _reverse_sequence(x, lengths, seq_dim, batch_dim):
    out = x.copy()
    for b, n in enumerate(lengths):
        src = [slice(None)] * x.ndim
        src[batch_dim], src[seq_dim] = b, slice(0, n)
        out[tuple(src)] = np.flip(x[tuple(src)], seq_dim - (seq_dim > batch_dim))
    return out


def _iou(anchors, gts, mode="iou"):
    out = np.zeros((len(gts), len(anchors)))
    for m, g in enumerate(gts):
        for n, a in enumerate(anchors):
            w = max(0.0, min(a[2], g[2]) - max(a[0], g[0]) + 1)
            h = max(0.0, min(a[3], g[3]) - max(a[1], g[1]) + 1)
            area_a = (a[2] - a[0] + 1) * (a[3] - a[1] + 1)
            area_g = (g[2] - g[0] + 1) * (g[3] - g[1] + 1)
            den = area_g if mode == "iof" else area_a + area_g - w * h
            out[m, n] = w * h / (den + 1e-10)
    return out


def _centers(b):
    return ((b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2, b[:, 2] - b[:, 0] + 1,
            b[:, 3] - b[:, 1] + 1)


def _encode(a, g, means=(0, 0, 0, 0), stds=(1, 1, 1, 1)):
    px, py, pw, ph = _centers(a)
    gx, gy, gw, gh = _centers(g)
    d = np.stack([(gx - px) / pw, (gy - py) / ph, np.log(gw / pw), np.log(gh / ph)], 1)
    return (d - np.array(means)) / np.array(stds)


def _decode(a, d, max_shape, means=(0, 0, 0, 0), stds=(1, 1, 1, 1), clip=0.016):
    d = d * np.array(stds) + np.array(means)
    lim = abs(math.log(clip))
    dw, dh = np.clip(d[:, 2], -lim, lim), np.clip(d[:, 3], -lim, lim)
    px, py, pw, ph = _centers(a)
    gx, gy, gw, gh = px + pw * d[:, 0], py + ph * d[:, 1], pw * np.exp(dw), ph * np.exp(dh)
    h, w = max_shape
    return np.stack([np.clip(gx - gw / 2 + 0.5, 0, w), np.clip(gy - gh / 2 + 0.5, 0, h),
                     np.clip(gx + gw / 2 - 0.5, 0, w), np.clip(gy + gh / 2 - 0.5, 0, h)], 1)


def _resize_nearest_tf(x, size, align_corners=False):
    """MindSpore's ResizeNearestNeighbor kernel, pixel by pixel."""
    n, c, h, w = x.shape
    out = np.zeros((n, c) + tuple(size), x.dtype)
    sh = (h - 1) / (size[0] - 1) if align_corners and size[0] > 1 else h / size[0]
    sw = (w - 1) / (size[1] - 1) if align_corners and size[1] > 1 else w / size[1]
    pick = (lambda v: math.floor(v + 0.5)) if align_corners else math.floor
    for i in range(size[0]):
        for j in range(size[1]):
            out[:, :, i, j] = x[:, :, min(pick(i * sh), h - 1), min(pick(j * sw), w - 1)]
    return out


def _lerp_positions(n_in, n_out, scale, half_pixel):
    out = []
    for d in range(n_out):
        s = (d + 0.5) * scale - 0.5 if half_pixel else d * scale
        s = min(max(s, 0.0), n_in - 1)
        lo = math.floor(s)
        out.append((lo, min(math.ceil(s), n_in - 1), s - lo))
    return out


def _bilinear(x, size, scale_h, scale_w, half_pixel):
    """Bilinear sampling pixel by pixel (TensorFlow's and torch's, by the positions)."""
    n, c, h, w = x.shape
    out = np.zeros((n, c) + tuple(size))
    rows = _lerp_positions(h, size[0], scale_h, half_pixel)
    cols = _lerp_positions(w, size[1], scale_w, half_pixel)
    for i, (r0, r1, fr) in enumerate(rows):
        for j, (c0, c1, fc) in enumerate(cols):
            top = x[:, :, r0, c0] * (1 - fc) + x[:, :, r0, c1] * fc
            bottom = x[:, :, r1, c0] * (1 - fc) + x[:, :, r1, c1] * fc
            out[:, :, i, j] = top * (1 - fr) + bottom * fr
    return out


def _resize_bilinear_tf(x, size, align_corners=False, half_pixel_centers=False):
    n, c, h, w = x.shape
    sh = (h - 1) / (size[0] - 1) if align_corners and size[0] > 1 else h / size[0]
    sw = (w - 1) / (size[1] - 1) if align_corners and size[1] > 1 else w / size[1]
    return _bilinear(x, size, sh, sw, half_pixel_centers)


def _depth_to_space(x, b):
    n, c, h, w = x.shape
    out = np.zeros((n, c // (b * b), h * b, w * b), x.dtype)
    for i in range(b):
        for j in range(b):
            for k in range(c // (b * b)):
                out[:, k, i::b, j::b] = x[:, (i * b + j) * (c // (b * b)) + k]
    return out


def _nms(b, threshold):
    """MindSpore's NMSWithMask CPU kernel, box by box."""
    s = b[np.argsort(-b[:, 4], kind="stable")]
    keep = np.ones(len(s), bool)
    area = (s[:, 2] - s[:, 0]) * (s[:, 3] - s[:, 1])
    for i in range(len(s) - 1):
        if not keep[i]:
            continue
        for j in range(i + 1, len(s)):
            w = max(min(s[i, 2], s[j, 2]) - max(s[i, 0], s[j, 0]), 0)
            h = max(min(s[i, 3], s[j, 3]) - max(s[i, 1], s[j, 1]), 0)
            if w * h / (area[i] + area[j] - w * h) > threshold:
                keep[j] = False
    return s, np.arange(len(s), dtype=I32), keep


def _roi_align(x, rois, ph, pw, scale, samples=2, end_mode=1):
    """MindSpore's ROIAlign CPU kernel, output element by output element."""
    n, c, height, width = x.shape
    out = np.zeros((len(rois), c, ph, pw))

    def tap(pos, size):
        if pos < -1 or pos > size:
            return None
        pos = max(pos, 0.0)
        low = 0 if pos <= 0.00007 else math.floor(pos)
        if low >= size - 1:
            return size - 1, size - 1, 1.0, 0.0
        return low, low + 1, 1 - (pos - low), pos - low

    for r, roi in enumerate(rois):
        if abs(roi[1]) < 0.001 and abs(roi[3]) < 0.001:
            continue
        b = int(np.rint(roi[0] + 0.00007))
        sw, sh = roi[1] * scale, roi[2] * scale
        rw, rh = (roi[3] + end_mode) * scale - sw, (roi[4] + end_mode) * scale - sh
        if end_mode == 0:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        for i in range(ph):
            for j in range(pw):
                acc = np.zeros(c)
                for iy in range(samples):
                    y = sh + i * bh + (iy + 0.5) * bh / samples
                    for ix in range(samples):
                        xx = sw + j * bw + (ix + 0.5) * bw / samples
                        ty, tx = tap(y, height), tap(xx, width)
                        if ty is None or tx is None:
                            continue
                        for yi, wy in ((ty[0], ty[2]), (ty[1], ty[3])):
                            for xi, wx in ((tx[0], tx[2]), (tx[1], tx[3])):
                                acc += wy * wx * x[b, :, yi, xi]
                out[r, :, i, j] = acc / (samples * samples)
    return out


ROIS = np.array([[0, 1.2, 0.5, 4.3, 3.9], [1, 0.4, 2.2, 6.8, 5.5], [1, -3.5, -2.0, 1.5, 2.5],
                 [0, 0.0, 1.0, 0.0, 3.0], [1, 5.6, 4.1, 9.0, 8.0]], F32)
NMS_BOXES = np.array([[0, 0, 10, 10, 0.6], [1, 1, 11, 11, 0.8], [20, 20, 30, 30, 0.7],
                      [0, 0, 10, 10, 0.95], [21, 19, 29, 31, 0.5], [5, 5, 15, 15, 0.3]], F32)


def _softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def _rms_norm(x, g, eps=1e-6):
    r = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return (x * r * g).astype(F32), r.astype(F32)


IDX2 = np.array([[0, 1], [2, 3], [1, 0]], I32)
X34, X234 = f32(3, 4), f32(2, 3, 4)
GATHER_E = np.array([[0, 2, 1, 0], [2, 2, 0, 1]], I64)
BOXES_A, BOXES_G = boxes(4), boxes(3, seed=1)
DELTAS = f32(4, 4, low=-0.5, high=0.5, seed=2)
IMG = np.arange(2 * 8 * 3 * 4, dtype=F32).reshape(2, 8, 3, 4) / 10
SEQ = np.array([3, 1], I64)

CASES = [
    Case("tensor_add-mul-pow", lambda x, y: (ops.tensor_add(x, y), ops.tensor_mul(x, y),
                                             ops.tensor_pow(ops.abs(x), y)),
         lambda x, y: (x + y, x * y, np.abs(x) ** y), [X34, f32(3, 4, seed=1)],
         dtypes=(F32,) * 3),
    Case("absolute", ops.absolute, np.abs, [X34]),
    Case("bmm", ops.bmm, np.matmul, [f32(2, 3, 4), f32(2, 4, 5, seed=1)], grad=True),
    Case("bmm-broadcast", ops.bmm, np.matmul, [f32(2, 1, 3, 4), f32(5, 4, 2, seed=1)],
         grad=True),
    Case("amax", lambda x: ops.amax(x, 1), lambda x: np.max(x, 1), [X34], grad=True),
    Case("amax-all-keep", lambda x: ops.amax(x, keepdims=True),
         lambda x: np.max(x, keepdims=True), [X234]),
    Case("amax-initial-where", lambda x, m: ops.amax(x, (0, 2), initial=1.5, where=m),
         lambda x, m: np.max(x, (0, 2), initial=1.5, where=m),
         [X234, np.random.default_rng(3).random((3, 4)) < 0.5]),
    Case("amin", lambda x: ops.amin(x, -1, True), lambda x: np.min(x, -1, keepdims=True),
         [X34], grad=True),
    Case("max", lambda x: ops.max(x, 1), lambda x: (x.max(1), x.argmax(1).astype(I32)),
         [X34], dtypes=(F32, I32), grad=True),
    Case("max-keepdims", lambda x: ops.max(x, 0, keepdims=True),
         lambda x: (x.max(0, keepdims=True), x.argmax(0)[None].astype(I32)), [X34],
         dtypes=(F32, I32)),
    Case("max-all", ops.max, lambda x: (x.max(), np.int32(0)), [X34], dtypes=(F32, I32)),
    Case("min", lambda x: ops.min(x, -1), lambda x: (x.min(-1), x.argmin(-1).astype(I32)),
         [X234], dtypes=(F32, I32), grad=True),
    Case("max-ties-int", lambda x: ops.max(x, 1), lambda x: (x.max(1), x.argmax(1)
                                                              .astype(I32)),
         [np.array([[1, 3, 3], [2, 2, 0]], I32)], dtypes=(I32, I32)),
    Case("expand_as", ops.expand_as, lambda x, y: np.broadcast_to(x, y.shape),
         [f32(3, 1), f32(2, 3, 4)], grad=True),
    Case("addn", lambda x, y: ops.addn([x, y, x]), lambda x, y: 2 * x + y,
         [X34, f32(3, 4, seed=1)], grad=True),
    Case("range-int", lambda: ops.range(1, 10, 3), lambda: np.arange(1, 10, 3), [],
         dtypes=(I64,)),
    Case("range-float", lambda: ops.range(0, 1.0, 0.25), lambda: np.arange(0, 1, 0.25), [],
         dtypes=(F32,)),
    Case("range-tensors", lambda: ops.range(ms.Tensor(5, ms.int32), ms.Tensor(0, ms.int32),
                                            ms.Tensor(-2, ms.int32)),
         lambda: np.arange(5, 0, -2), [], dtypes=(I32,)),
    Case("flip", lambda x: ops.flip(x, (0, 2)), lambda x: np.flip(x, (0, 2)), [X234],
         grad=True),
    Case("flip-int", lambda x: ops.flip(x, -1), lambda x: np.flip(x, -1),
         [np.arange(6, dtype=I32).reshape(2, 3)]),
    Case("floor_divide-float", ops.floor_divide, np.floor_divide,
         [X34, f32(3, 4, low=0.5, high=2, seed=1)]),
    Case("floor_divide-int", ops.floor_divide, np.floor_divide,
         [np.array([7, -7, 5, -5, 2**30 + 1], I32), np.array([2, 2, -3, -3, 3], I32)]),
    Case("floor_divide-int-scalar", lambda x: ops.floor_divide(x, 4),
         lambda x: np.floor_divide(x, 4), [np.arange(-9, 9, dtype=I64)]),
    # by zero: numpy's 0 (a constant zero under jit was LLVM poison); a uint8 quotient wraps
    Case("floor_divide-int-by-zero", lambda x: ops.floor_divide(x, 0),
         lambda x: np.zeros_like(x), [np.array([7, -7, 0, 2**31 - 1, -2**31], I32)]),
    Case("floor_divide-operator", lambda x, y: (x // y, 7 // y, x // 2.5),
         lambda x, y: (x // y, 7 // y, x // 2.5),
         [np.array([7, -7, 5, -5], I32), np.array([2, 2, -3, -3], I32)],
         dtypes=(I32, I32, F32)),
    Case("floor_mod-float", ops.floor_mod, np.mod,
         [np.array([7.5, -7.5, 5.25, -5.25, 0.3], F32), np.array([2.0, 2.0, -3.0, -3.0, 0.7], F32)],
         grad=True),
    Case("floor_mod-int", ops.floor_mod, lambda x, y: np.where(y == 0, 0, np.mod(x, np.where(y == 0, 1, y))),
         [np.array([7, -7, 5, -5, 3, -2**31], I32), np.array([3, 3, -3, -3, 0, -1], I32)]),
    Case("remainder", lambda x: ops.remainder(x, -2.5), lambda x: np.mod(x, -2.5), [X34],
         grad=True),
    Case("mod-operator", lambda x, y: (x % y, 7 % y, x % 3), lambda x, y: (x % y, 7 % y, x % 3),
         [np.array([7, -7, 5, -5], I32), np.array([2, 2, -3, -3], I32)]),
    Case("floor_divide-uint8-negative", lambda x: ops.floor_divide(x, -1),
         lambda x: (-x.astype(np.int64)).astype(np.uint8), [np.array([0, 255, 1], np.uint8)]),
    Case("meshgrid-xy", lambda a, b, c: ops.meshgrid(a, b, c),
         lambda a, b, c: tuple(np.meshgrid(a, b, c)), [f32(2), f32(3, seed=1), f32(4, seed=2)],
         dtypes=(F32,) * 3, grad=True),
    Case("meshgrid-ij", lambda a, b: ops.meshgrid(a, b, indexing="ij"),
         lambda a, b: tuple(np.meshgrid(a, b, indexing="ij")), [f32(2), f32(3, seed=1)],
         dtypes=(F32,) * 2),
    Case("gather_nd", ops.gather_nd, _gather_nd, [X34, IDX2], grad=True),
    Case("gather_nd-rows", ops.gather_nd, _gather_nd,
         [X234, np.array([[[1], [0]], [[0], [1]]], I64)], grad=True),
    Case("gather_elements", lambda x, i: ops.gather_elements(x, 1, i),
         lambda x, i: _gather_elements(x, 1, i), [f32(2, 3), GATHER_E[:, :3]], grad=True),
    Case("gather_elements-dim0", lambda x, i: ops.gather_elements(x, 0, i),
         lambda x, i: _gather_elements(x, 0, i), [X34, GATHER_E[:, :4] % 3], grad=True),
    Case("scatter_nd", lambda u, i: ops.scatter_nd(i, u, (3, 4)),
         lambda u, i: _scatter_nd(i, u, (3, 4)),
         [f32(4), np.array([[0, 1], [2, 3], [0, 1], [1, 0]], I32)], grad=True),
    Case("scatter_nd-slices", lambda u, i: ops.scatter_nd(i, u, (4, 2, 3)),
         lambda u, i: _scatter_nd(i, u, (4, 2, 3)),
         [f32(2, 2, 3), np.array([[3], [1]], I64)], grad=True),
    Case("tensor_scatter_add", lambda x, i, u: ops.tensor_scatter_add(x, i, u),
         lambda x, i, u: x + _scatter_nd(i, u, x.shape),
         [X34, np.array([[0, 1], [0, 1]], I32), f32(2, seed=1)], grad=True),
    Case("reverse_sequence", lambda x, n: ops.reverse_sequence(x, n, 1),
         lambda x, n: _reverse_sequence(x, n, 1, 0), [X234[:, :3, :], SEQ], grad=True),
    Case("reverse_sequence-batch1", lambda x, n: ops.reverse_sequence(x, n, 0, 1),
         lambda x, n: _reverse_sequence(x, n, 0, 1), [f32(3, 2), SEQ]),
    Case("repeat_elements", lambda x: ops.repeat_elements(x, 2, 1),
         lambda x: np.repeat(x, 2, 1), [X34], grad=True),
    Case("bias_add", ops.bias_add, lambda x, b: x + b.reshape(1, -1, 1, 1),
         [f32(2, 3, 2, 2), f32(3, seed=1)], grad=True),
    Case("smooth_l1_loss", ops.smooth_l1_loss,
         lambda x, y: np.where(np.abs(x - y) < 1, 0.5 * (x - y) ** 2, np.abs(x - y) - 0.5),
         [X34, f32(3, 4, seed=1)], grad=True),
    Case("smooth_l1_loss-beta-sum", lambda x, y: ops.smooth_l1_loss(x, y, 0.5, "sum"),
         lambda x, y: np.sum(np.where(np.abs(x - y) < 0.5, (x - y) ** 2, np.abs(x - y) - 0.25)),
         [X34, f32(3, 4, seed=1)], grad=True),
    Case("binary_cross_entropy", ops.binary_cross_entropy,
         lambda p, y: np.mean(-(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))),
         [f32(3, 4, low=0.05, high=0.95), f32(3, 4, low=0, high=1, seed=1)], grad=True),
    Case("binary_cross_entropy-weight-none",
         lambda p, y, w: ops.binary_cross_entropy(p, y, w, reduction="none"),
         lambda p, y, w: -w * (y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12)),
         [f32(3, 4, low=0.05, high=0.95), f32(3, 4, low=0, high=1, seed=1),
          f32(4, low=0, high=2, seed=2)], grad=True),
    Case("rms_norm", ops.rms_norm, _rms_norm, [f32(2, 3, 8), f32(8, seed=1)],
         dtypes=(F32, F32), tol=dict(rtol=1e-5, atol=1e-6)),
    Case("iou", ops.iou, _iou, [BOXES_A, BOXES_G], grad=True),
    Case("iof", lambda a, g: ops.iou(a, g, "iof"), lambda a, g: _iou(a, g, "iof"),
         [BOXES_A, BOXES_G], grad=True),
    Case("check_valid", ops.check_valid,
         lambda b, m: (b[:, 0] >= 0) & (b[:, 1] >= 0) & (b[:, 2] <= m[1] * m[2] - 1)
         & (b[:, 3] <= m[0] * m[2] - 1),
         [np.array([[0, 0, 9, 7], [-1, 0, 3, 3], [2, 2, 10, 7], [1, 1, 9, 8]], F32),
          np.array([8, 10, 1], F32)], dtypes=(np.bool_,)),
    Case("bounding_box_encode", ops.bounding_box_encode, _encode, [BOXES_A, boxes(4, 3)],
         grad=True),
    Case("bounding_box_encode-means-stds",
         lambda a, g: ops.bounding_box_encode(a, g, (0.1, 0, 0, -0.1), (0.1, 0.1, 0.2, 0.2)),
         lambda a, g: _encode(a, g, (0.1, 0, 0, -0.1), (0.1, 0.1, 0.2, 0.2)),
         [BOXES_A, boxes(4, 3)], tol=dict(rtol=1e-5, atol=1e-5)),
    Case("bounding_box_decode", lambda a, d: ops.bounding_box_decode(a, d, (16, 20)),
         lambda a, d: _decode(a, d, (16, 20)), [BOXES_A, DELTAS], grad=True),
    Case("bounding_box_decode-clip",
         lambda a, d: ops.bounding_box_decode(a, d * 20, (12, 14), (0, 0.1, 0, 0),
                                              (1, 1, 0.5, 0.5), 0.1),
         lambda a, d: _decode(a, d * 20, (12, 14), (0, 0.1, 0, 0), (1, 1, 0.5, 0.5), 0.1),
         [BOXES_A, DELTAS], tol=dict(rtol=1e-5, atol=1e-5)),
    Case("interpolate-bilinear", lambda x: ops.interpolate(x, (5, 3), mode="bilinear"),
         lambda x: _bilinear(x, (5, 3), 3 / 5, 4 / 3, True), [IMG[:, :2]], grad=True),
    Case("interpolate-bilinear-corners",
         lambda x: ops.interpolate(x, (2, 7), mode="bilinear", align_corners=True),
         lambda x: _bilinear(x, (2, 7), 2 / 1, 3 / 6, False), [IMG[:, :2]], grad=True),
    Case("interpolate-bilinear-scale",
         lambda x: ops.interpolate(x, scale_factor=2.0, mode="bilinear"),
         lambda x: _bilinear(x, (6, 8), 0.5, 0.5, True), [IMG[:1, :2]]),
    Case("interpolate-nearest", lambda x: ops.interpolate(x, (5, 7)),
         lambda x: _resize_nearest_tf(x, (5, 7)), [IMG[:, :2]], grad=True),
    Case("interpolate-linear", lambda x: ops.interpolate(x, 5, mode="linear"),
         lambda x: _bilinear(x[:, :, None], (1, 5), 1.0, 4 / 5, True)[:, :, 0],
         [f32(2, 3, 4)], grad=True),
    Case("interpolate-area", lambda x: ops.interpolate(x, (1, 2), mode="area"),
         lambda x: x.reshape(2, 2, 1, 3, 2, 2).mean((3, 5)), [IMG[:, :2]]),
    Case("ROIAlign", lambda x, r: P.ROIAlign(2, 3, 0.5)(x, r),
         lambda x, r: _roi_align(x, r, 2, 3, 0.5), [f32(2, 3, 6, 7), ROIS * np.array([1, 2, 2, 2, 2], F32)],
         grad=True),
    Case("ROIAlign-end-mode-0", lambda x, r: P.ROIAlign(3, 2, 1.0, 1, 0)(x, r),
         lambda x, r: _roi_align(x, r, 3, 2, 1.0, 1, 0), [f32(2, 3, 6, 7), ROIS], grad=True),
    Case("NMSWithMask", lambda b: P.NMSWithMask(0.3)(b), lambda b: _nms(b, 0.3), [NMS_BOXES],
         dtypes=(F32, I32, np.bool_)),
    Case("tuple_to_array", lambda: (ops.tuple_to_array((1, 2, 3)),
                                    ops.tuple_to_array((1.5, 2))),
         lambda: (np.array([1, 2, 3]), np.array([1.5, 2])), [], dtypes=(I64, F32)),
    Case("scalar_to_tensor", lambda: (ops.scalar_to_tensor(3), ops.scalar_to_tensor(
        2, ms.int32)), lambda: (np.float32(3), np.int32(2)), [], dtypes=(F32, I32)),
]

METHODS = [
    Case("Tensor.eq-ne-gt-ge-lt-le", lambda x, y: (x.eq(y), x.ne(y), x.gt(y), x.ge(y),
                                                   x.lt(y), x.le(y)),
         lambda x, y: (x == y, x != y, x > y, x >= y, x < y, x <= y),
         [np.array([1, 2, 3], I32), np.array([3, 2, 1], I32)], dtypes=(np.bool_,) * 6),
    Case("Tensor.reciprocal-softmax", lambda x: (x.reciprocal(), x.softmax(), x.softmax(0)),
         lambda x: (1 / x, np.exp(_log_softmax(x)), np.exp(_log_softmax(x.T)).T),
         [f32(3, 4, low=0.5)], dtypes=(F32,) * 3),
    Case("Tensor.tile", lambda x: (x.tile((2, 1)), x.tile(1, 3)),
         lambda x: (np.tile(x, (2, 1)), np.tile(x, (1, 3))), [X34], dtypes=(F32, F32)),
    Case("Tensor.fill", lambda x: (x.fill(2.5), x.astype(ms.int32).fill(7)),
         lambda x: (np.full_like(x, 2.5), np.full(x.shape, 7, I32)), [X34],
         dtypes=(F32, I32)),
    Case("Tensor.select", lambda x, c: x.select(c, 0.5), lambda x, c: np.where(c, x, 0.5),
         [X34, np.random.default_rng(1).random((3, 4)) < 0.5], grad=True),
    Case("Tensor.bmm", lambda x, y: x.bmm(y), np.matmul, [f32(2, 3, 4), f32(2, 4, 2, seed=1)],
         grad=True),
    Case("Tensor.amax-amin", lambda x: (x.amax(), x.amin(1, keepdims=True)),
         lambda x: (x.max(), x.min(1, keepdims=True)), [X34], dtypes=(F32, F32)),
    Case("Tensor.flip", lambda x: x.flip((1,)), lambda x: np.flip(x, 1), [X34], grad=True),
    Case("Tensor.gather_nd-gather_elements",
         lambda x, i, j: (x.gather_nd(i), x.gather_elements(1, j)),
         lambda x, i, j: (_gather_nd(x, i), _gather_elements(x, 1, j)),
         [X34, IDX2, GATHER_E[:, :4] % 4], dtypes=(F32, F32)),
    Case("Tensor.floor_divide", lambda x: x.floor_divide(3), lambda x: x // 3,
         [np.arange(-5, 6, dtype=I32)]),
    Case("Tensor.reverse_sequence", lambda x, n: x.reverse_sequence(n, 1),
         lambda x, n: _reverse_sequence(x, n, 1, 0), [f32(2, 3), SEQ]),
    Case("Tensor.scatter_add-dim", lambda x, i, s: x.scatter_add(1, i, s),
         lambda x, i, s: _scatter_along(x, 1, i, s),
         [f32(2, 5), np.array([[2, 4, 2], [0, 0, 1]], I64), f32(2, 4, seed=1)], grad=True),
    Case("Tensor.scatter_add-nd", lambda x, i, u: x.scatter_add(i, u),
         lambda x, i, u: x + _scatter_nd(i, u, x.shape),
         [X34, np.array([[1, 1], [1, 1], [2, 0]], I32), f32(3, seed=1)]),
    Case("Tensor.contiguous-copy-value", lambda x: (x.contiguous(), x.copy(), x.value()),
         lambda x: (x, x, x), [X34], dtypes=(F32,) * 3),
]


def _outputs(out):
    return [o.asnumpy() for o in (out if isinstance(out, (tuple, list)) else (out,))]


def _f64(a):
    return a.astype(F64) if a.dtype.kind == "f" else a


def _check(case, got, inputs):
    want = case.ref(*[_f64(a) for a in inputs])
    want = list(want) if isinstance(want, tuple) else [want]
    assert len(got) == len(want)
    default = inputs[0].dtype if inputs else None
    for i, (g, w) in enumerate(zip(got, want)):
        dtype = np.dtype(case.dtypes[i] if case.dtypes else default)
        assert g.dtype == dtype, f"output #{i}: dtype {g.dtype}, expected {dtype}"
        assert g.shape == np.shape(w), f"output #{i}: shape {g.shape}, expected {np.shape(w)}"
        if dtype.kind == "f":
            np.testing.assert_allclose(g.astype(F64), np.asarray(w, F64), **case.tol,
                                       err_msg=f"output #{i}")
        else:
            np.testing.assert_array_equal(g, np.asarray(w).astype(dtype))


ALL_CASES = CASES + METHODS


@pytest.mark.parametrize("mode", ["pynative", "jit"])
@pytest.mark.parametrize("case", ALL_CASES, ids=[c.id for c in ALL_CASES])
def test_values(case, mode):
    fn = case.fn if mode == "pynative" else ms.jit(case.fn)
    got = _outputs(fn(*[ms.Tensor(a) for a in case.inputs]))
    _check(case, got, case.inputs)


def test_graph_mode_context_compiles_the_compositions(mode):
    """Under set_context(mode=GRAPH_MODE) and PYNATIVE_MODE the same results; in a jit
    function a composition compiles once."""
    f = ms.jit(lambda x, i: ops.gather_nd(ops.flip(x, 0), i) + ops.amax(x))
    x, i = ms.Tensor(X34), ms.Tensor(IDX2)
    want = _gather_nd(np.flip(X34, 0), IDX2) + X34.max()
    np.testing.assert_allclose(f(x, i).asnumpy(), want, rtol=1e-6)
    assert f.cache_info()["compiles"] == 1


GRAD_CASES = [c for c in ALL_CASES if c.grad]


@pytest.mark.parametrize("mode", ["pynative", "jit"])
@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.id for c in GRAD_CASES])
def test_gradients(case, mode):
    """d/dx0 of sum(w_i * float output_i), in float64, against central differences of the
    numpy reference (the other inputs held fixed)."""
    check_weighted_gradient(case, [_f64(a) for a in case.inputs], mode)


def test_interpolate_matches_torch():
    torch = pytest.importorskip("torch")
    x = f32(2, 3, 5, 6)
    for kwargs in [dict(size=(7, 4), mode="bilinear"), dict(size=(3, 9), mode="nearest"),
                   dict(size=(4, 4), mode="bilinear", align_corners=True),
                   dict(scale_factor=1.5, mode="bilinear"),
                   dict(size=(6, 5), mode="nearest-exact"), dict(size=(2, 3), mode="area")]:
        want = torch.nn.functional.interpolate(torch.tensor(x), **kwargs).numpy()
        got = ops.interpolate(ms.Tensor(x), **kwargs).asnumpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=str(kwargs))
    v = f32(2, 3, 2, 3, 4)
    want = torch.nn.functional.interpolate(torch.tensor(v), size=(3, 2, 5),
                                           mode="trilinear").numpy()
    got = ops.interpolate(ms.Tensor(v), (3, 2, 5), mode="trilinear").asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ Primitive rows

@dataclass
class PrimCase:
    name: str
    prim: object          # (*Tensors) -> the Primitive's outputs
    functional: object    # (*Tensors) -> the same through the functional form
    inputs: list
    ref: object = None    # numpy reference (float64 inputs) or None: prim == functional only


PRIM_CASES = [
    PrimCase("ArgMaxWithValue", lambda x: P.ArgMaxWithValue(axis=1, keep_dims=True)(x),
             lambda x: tuple(reversed(ops.max(x, 1, True))), [X34],
             lambda x: (x.argmax(1)[:, None].astype(I32), x.max(1, keepdims=True))),
    PrimCase("ArgMinWithValue", lambda x: P.ArgMinWithValue()(x),
             lambda x: tuple(reversed(ops.min(x, 0))), [X34],
             lambda x: (x.argmin(0).astype(I32), x.min(0))),
    PrimCase("GatherV2", lambda x, i: P.GatherV2()(x, i, 1), lambda x, i: ops.gather(x, i, 1),
             [X34, np.array([3, 0], I32)], lambda x, i: np.take(x, i, 1)),
    PrimCase("GatherNd", lambda x, i: P.GatherNd()(x, i), ops.gather_nd, [X34, IDX2],
             _gather_nd),
    PrimCase("GatherD", lambda x, i: P.GatherD()(x, 1, i),
             lambda x, i: ops.gather_elements(x, 1, i), [X34, GATHER_E % 4],
             lambda x, i: _gather_elements(x, 1, i)),
    PrimCase("ScatterNd", lambda i, u: P.ScatterNd()(i, u, (3, 4)),
             lambda i, u: ops.scatter_nd(i, u, (3, 4)), [IDX2, f32(3)],
             lambda i, u: _scatter_nd(i, u, (3, 4))),
    PrimCase("ReverseV2", lambda x: P.ReverseV2(axis=(0, 1))(x), lambda x: ops.flip(x, (0, 1)),
             [X34], lambda x: np.flip(x, (0, 1))),
    PrimCase("ReverseSequence", lambda x, n: P.ReverseSequence(seq_dim=1)(x, n),
             lambda x, n: ops.reverse_sequence(x, n, 1), [f32(2, 4), SEQ],
             lambda x, n: _reverse_sequence(x, n, 1, 0)),
    PrimCase("Pad", lambda x: P.Pad(((1, 0), (2, 1)))(x), lambda x: ops.pad(x, (2, 1, 1, 0)),
             [X34], lambda x: np.pad(x, ((1, 0), (2, 1)))),
    PrimCase("DepthToSpace", lambda x: P.DepthToSpace(2)(x),
             lambda x: ops_more._depth_to_space(x, 2), [IMG],
             lambda x: _depth_to_space(x, 2)),
    PrimCase("Meshgrid", lambda a, b: P.Meshgrid(indexing="ij")((a, b)),
             lambda a, b: ops.meshgrid(a, b, indexing="ij"), [f32(2), f32(3, seed=1)],
             lambda a, b: tuple(np.meshgrid(a, b, indexing="ij"))),
    PrimCase("FloorDiv", lambda x, y: P.FloorDiv()(x, y), ops.floor_divide,
             [np.array([7, -7, 9], I32), np.array([2, 3, -4], I32)], np.floor_divide),
    PrimCase("FloorMod", lambda x, y: P.FloorMod()(x, y), ops.floor_mod,
             [np.array([7, -7, 9], I32), np.array([2, 3, -4], I32)], np.mod),
    PrimCase("Identity", lambda x: P.Identity()(x), lambda x: ops.reshape(x, x.shape), [X34],
             lambda x: x),
    PrimCase("Range", lambda: P.Range()(ms.Tensor(0.5), ms.Tensor(3.0), ms.Tensor(0.5)),
             lambda: ops.range(ms.Tensor(0.5), ms.Tensor(3.0), ms.Tensor(0.5)), [],
             lambda: np.arange(0.5, 3.0, 0.5).astype(F32)),
    PrimCase("LinSpace", lambda: P.LinSpace()(ms.Tensor(1.0), ms.Tensor(2.0), 5),
             lambda: ops.linspace(ms.Tensor(1.0), ms.Tensor(2.0), 5), [],
             lambda: np.linspace(1, 2, 5).astype(F32)),
    PrimCase("TupleToArray", lambda: P.TupleToArray()((1, 2)),
             lambda: ops.tuple_to_array((1, 2)), [], lambda: np.array([1, 2], I64)),
    PrimCase("ScalarToTensor", lambda: P.ScalarToTensor()(3, ms.float64),
             lambda: ops.scalar_to_tensor(3, ms.float64), [], lambda: np.float64(3)),
    PrimCase("ResizeNearestNeighbor", lambda x: P.ResizeNearestNeighbor((5, 7))(x),
             lambda x: ops_more._resize_nearest_neighbor(x, (5, 7), False), [IMG],
             lambda x: _resize_nearest_tf(x, (5, 7))),
    PrimCase("ResizeBilinear", lambda x: P.ResizeBilinear((5, 7))(x),
             lambda x: ops_more._resize_bilinear(x, (5, 7), False, False), [IMG],
             lambda x: _resize_bilinear_tf(x, (5, 7))),
    PrimCase("L2Normalize", lambda x: P.L2Normalize(axis=1, epsilon=1e-4)(x),
             lambda x: x / ops.sqrt(ops.maximum(ops.reduce_sum(x * x, 1, True), 1e-4)), [X34],
             lambda x: x / np.sqrt(np.maximum((x * x).sum(1, keepdims=True), 1e-4))),
    PrimCase("L2Loss", lambda x: P.L2Loss()(x), lambda x: ops.reduce_sum(x * x) * 0.5, [X34],
             lambda x: (x * x).sum() / 2),
    PrimCase("RmsNorm", lambda x, g: P.RmsNorm(1e-6)(x, g), ops.rms_norm,
             [f32(3, 8), f32(8, seed=1)], _rms_norm),
    PrimCase("Gelu", lambda x: P.Gelu()(x), lambda x: ops.gelu(x, "tanh"), [X34],
             lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    PrimCase("SigmoidCrossEntropyWithLogits",
             lambda x, y: P.SigmoidCrossEntropyWithLogits()(x, y),
             lambda x, y: ops.relu(x) - x * y + ops.log1p(ops.exp(-ops.abs(x))),
             [X34, f32(3, 4, low=0, high=1, seed=1)],
             lambda x, y: _softplus(x) - x * y),
    PrimCase("SoftmaxCrossEntropyWithLogits",
             lambda x, y: P.SoftmaxCrossEntropyWithLogits()(x, y),
             lambda x, y: (-ops.reduce_sum(y * ops.log_softmax(x, -1), -1),
                           ops.softmax(x, -1) - y),
             [X34, np.eye(4, dtype=F32)[[0, 3, 1]]],
             lambda x, y: (-(y * _log_softmax(x)).sum(-1), np.exp(_log_softmax(x)) - y)),
    PrimCase("SmoothL1Loss", lambda x, y: P.SmoothL1Loss(beta=0.5)(x, y),
             lambda x, y: ops.smooth_l1_loss(x, y, 0.5), [X34, f32(3, 4, seed=1)],
             lambda x, y: np.where(np.abs(x - y) < 0.5, (x - y) ** 2, np.abs(x - y) - 0.25)),
    PrimCase("BinaryCrossEntropy", lambda p, y: P.BinaryCrossEntropy("sum")(p, y),
             lambda p, y: ops.binary_cross_entropy(p, y, reduction="sum"),
             [f32(3, 4, low=0.1, high=0.9), f32(3, 4, low=0, high=1, seed=1)],
             lambda p, y: -np.sum(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))),
    PrimCase("FloatStatus", lambda x: P.FloatStatus()(x),
             lambda x: ops.reshape(ops.cast(ops.any(ops.logical_not(ops.isfinite(x))),
                                            x.dtype), (1,)),
             [np.array([1.0, np.inf, 2.0], F32)], lambda x: np.array([1.0], F32)),
    PrimCase("IOU", lambda a, g: P.IOU()(a, g), ops.iou, [BOXES_A, BOXES_G], _iou),
    PrimCase("CheckValid", lambda b, m: P.CheckValid()(b, m), ops.check_valid,
             [BOXES_A, np.array([16, 20, 1], F32)],
             lambda b, m: (b[:, 0] >= 0) & (b[:, 1] >= 0) & (b[:, 2] <= 19) & (b[:, 3] <= 15)),
    PrimCase("BoundingBoxEncode", lambda a, g: P.BoundingBoxEncode()(a, g),
             ops.bounding_box_encode, [BOXES_A, boxes(4, 3)], _encode),
    PrimCase("BoundingBoxDecode", lambda a, d: P.BoundingBoxDecode((16, 20))(a, d),
             lambda a, d: ops.bounding_box_decode(a, d, (16, 20)), [BOXES_A, DELTAS],
             lambda a, d: _decode(a, d, (16, 20))),
    PrimCase("NMSWithMask", lambda b: P.NMSWithMask(0.5)(b),
             lambda b: ops_more._nms_with_mask(b, 0.5), [NMS_BOXES], lambda b: _nms(b, 0.5)),
    PrimCase("ROIAlign", lambda x, r: P.ROIAlign(2, 2, 1.0, 2, 1)(x, r),
             lambda x, r: ops_more._roi_align(x, r, 2, 2, 1.0), [f32(2, 3, 6, 7), ROIS],
             lambda x, r: _roi_align(x, r, 2, 2, 1.0)),
    PrimCase("ScalarSummary", lambda x: (P.ScalarSummary()("loss", ops.reduce_sum(x)), x)[1],
             lambda x: x, [X34], lambda x: x),
]

# Rows with side effects or random numbers: tested by the functions below.
SEPARATE = {"ScatterNdUpdate", "ScatterAdd", "AssignAdd", "UniformReal", "StandardNormal",
            "Dropout"}


def test_every_ranked_primitive_is_tested_here():
    names = {row.name for row in primitives.RANKED_ROWS}
    assert {c.name for c in PRIM_CASES} | SEPARATE == names
    assert names <= set(primitives.PRIMITIVES)
    assert all(hasattr(P, n) and hasattr(ops, n) for n in names)


def _op_list(text):
    """The module's ops in order, parsed: (name, attributes, result types), SSA names and
    the function's name dropped (so that two spellings of one computation compare equal)."""
    from mlir import ir

    from mscc.dialects.builders import mlir_context
    out = []
    with mlir_context():
        module = ir.Module.parse(text)

        def walk(op):
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.operations:
                        attrs = tuple(sorted((a, str(inner.attributes[a]))
                                             for a in inner.attributes if a != "sym_name"))
                        out.append((inner.operation.name, attrs,
                                    tuple(str(r.type) for r in inner.results)))
                        walk(inner)
        walk(module.operation)
    return out


@pytest.mark.parametrize("case", PRIM_CASES, ids=[c.name for c in PRIM_CASES])
def test_primitive_values_both_modes(case):
    args = [ms.Tensor(a) for a in case.inputs]
    for fn in (case.prim, ms.jit(case.prim)):
        got = _outputs(fn(*args))
        want = _outputs(case.functional(*args))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)  # (jit fuses: rounding)
        if case.ref is not None:
            ref = case.ref(*[_f64(a) for a in case.inputs])
            ref = list(ref) if isinstance(ref, tuple) else [ref]
            for g, r in zip(got, ref):
                assert g.shape == np.shape(r)
                np.testing.assert_allclose(g.astype(F64) if g.dtype.kind != "b" else g,
                                           np.asarray(r), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("case", [c for c in PRIM_CASES if c.inputs],
                         ids=[c.name for c in PRIM_CASES if c.inputs])
def test_primitive_and_functional_forms_compile_to_the_same_ops(case):
    args = [ms.Tensor(a) for a in case.inputs]
    prim = _op_list(ms.jit(case.prim).lower(*args).as_text("ms-opt"))
    functional = _op_list(ms.jit(case.functional).lower(*args).as_text("ms-opt"))
    assert prim == functional
    assert any(name.startswith("ms.") for name, _, _ in prim) or case.name in (
        "ScalarSummary", "Identity")


def test_primitive_attributes_are_read_at_call_time():
    x = ms.Tensor(X34)
    prim = P.ReverseV2(axis=(0,))
    prim.add_prim_attr("axis", (1,))
    np.testing.assert_array_equal(prim(x).asnumpy(), np.flip(X34, 1))
    assert "ArgMaxWithValue" in repr(P.ArgMaxWithValue()) and P.IOU().mode == "iou"
    with pytest.raises(TypeError):
        P.ResizeBilinear()                       # size is required, as in MindSpore


# ------------------------------------------------------------------ Parameters written

@pytest.mark.parametrize("compiled", [False, True], ids=["pynative", "jit"])
def test_assign_add_and_scatter_ops_write_the_parameter(compiled):
    w = ms.Parameter(ms.Tensor(X34.copy()), name="w")
    idx = ms.Tensor(np.array([2, 0, 2], I32))
    upd = ms.Tensor(f32(3, 4, seed=1))
    nd_idx = ms.Tensor(np.array([[0, 1], [2, 2]], I32))
    nd_upd = ms.Tensor(np.array([9.0, -9.0], F32))

    def step(i, u, ni, nu):
        a = ops.assign_add(w, ops.ones_like(w))
        b = P.ScatterAdd()(w, i, u)
        c = P.ScatterNdUpdate()(w, ni, nu)
        d = P.AssignAdd()(w, 0.5)
        return a, b, c, d

    fn = ms.jit(step) if compiled else step
    a, b, c, d = fn(idx, upd, nd_idx, nd_upd)
    want = X34 + 1
    np.testing.assert_allclose(a.asnumpy(), want, rtol=1e-6)
    np.add.at(want, [2, 0, 2], f32(3, 4, seed=1))
    np.testing.assert_allclose(b.asnumpy(), want, rtol=1e-6)
    want[0, 1], want[2, 2] = 9.0, -9.0
    np.testing.assert_allclose(c.asnumpy(), want, rtol=1e-6)
    np.testing.assert_allclose(d.asnumpy(), want + 0.5, rtol=1e-6)
    np.testing.assert_allclose(w.asnumpy(), want + 0.5, rtol=1e-6)
    e = ops.scatter_add(w, ms.Tensor(np.array([1], I64)), ms.Tensor(np.ones((1, 4), F32)))
    want[1] += 1
    np.testing.assert_allclose(e.asnumpy(), want + 0.5, rtol=1e-6)


def test_parameter_ops_refuse_plain_tensors():
    x = ms.Tensor(X34)
    with pytest.raises(TypeError, match="Parameter"):
        ops.assign_add(x, 1.0)
    with pytest.raises(TypeError, match="Parameter"):
        ops.scatter_add(x, ms.Tensor(np.array([0], I32)), ms.Tensor(np.ones((1, 4), F32)))


# ------------------------------------------------------------------ random numbers

@pytest.mark.parametrize("compiled", [False, True], ids=["pynative", "jit"])
def test_random_ops_shapes_dtypes_and_moments(compiled):
    ms.set_seed(5)

    def draw(x):
        return (ops.standard_normal((4000,)), P.StandardNormal(seed=2)((4000,)),
                P.UniformReal(seed=1, seed2=3)((2000,)), *P.Dropout(keep_prob=0.75)(x),
                x.uniform(-2.0, 3.0))

    fn = ms.jit(draw) if compiled else draw
    x = ms.Tensor(np.ones((50, 40), F32))
    normal, normal2, uniform, dropped, mask, u = fn(x)
    for z in (normal.asnumpy(), normal2.asnumpy()):
        assert z.dtype == F32 and z.shape == (4000,)
        assert abs(z.mean()) < 0.1 and abs(z.std() - 1) < 0.1
    uniform = uniform.asnumpy()
    assert uniform.dtype == F32 and uniform.min() >= 0 and uniform.max() < 1
    assert abs(uniform.mean() - 0.5) < 0.05
    dropped, mask = dropped.asnumpy(), mask.asnumpy()
    assert mask.dtype == F32 and set(np.unique(mask)) <= {0.0, 1.0}
    assert abs(mask.mean() - 0.75) < 0.05
    np.testing.assert_allclose(dropped, mask / 0.75, rtol=1e-6)
    u = u.asnumpy()
    assert u.dtype == F32 and u.shape == (50, 40) and u.min() >= -2 and u.max() < 3
    keep_all, ones = P.Dropout(keep_prob=1.0)(x)
    np.testing.assert_array_equal(keep_all.asnumpy(), x.asnumpy())


# ------------------------------------------------------------------ graph-mode helpers

def test_graph_mode_helpers():
    assert ops.make_range(4) == (0, 1, 2, 3) and ops.make_range(1, 7, 2) == (1, 3, 5)
    assert ops.tuple_len((1, 2, 3)) == 3

    def f(a, b):
        return a - b
    assert ops.add_flags(f, defer_inline=True) is f and f._mindspore_flags["defer_inline"]
    g = ops.partial(f, 5)
    assert g(2) == 3
    x = ms.Tensor(X34)
    h = ms.jit(lambda x: ops.partial(ops.mul, 2.0)(x) + ops.tuple_to_array((1, 2, 3, 4)))
    np.testing.assert_allclose(h(x).asnumpy(), X34 * 2 + np.arange(1, 5), rtol=1e-6)
    assert ops.scalar_to_tensor(True, ms.bool_).asnumpy().dtype == np.bool_


# ------------------------------------------------------------------ MindSpore's errors

X = ms.Tensor(X34)
IDX = ms.Tensor(IDX2)

ERRORS = [
    ("bmm-rank", lambda x: ops.bmm(x, x), ValueError, "rank >= 3"),
    ("amax-where-initial", lambda x: ops.amax(x, where=x > 0), ValueError, "initial"),
    ("amax-dup-axes", lambda x: ops.amax(x, (1, -1)), ValueError, "duplicate"),
    ("max-axis-type", lambda x: ops.max(x, (0, 1)), TypeError, "axis must be an int"),
    ("max-keepdims-type", lambda x: ops.max(x, 0, 1), TypeError, "keepdims"),
    ("addn-shapes", lambda x: ops.addn([x, ops.reshape(x, (4, 3))]), ValueError, "one shape"),
    ("addn-empty", lambda x: ops.addn([]), TypeError, "non-empty"),
    ("range-step", lambda x: ops.range(0, 5, 0), ValueError, "step must not be 0"),
    ("range-direction", lambda x: ops.range(5, 0, 1), ValueError, "points away"),
    ("flip-range", lambda x: ops.flip(x, (2,)), ValueError, "out of range"),
    ("flip-dup", lambda x: ops.flip(x, (0, -2)), ValueError, "duplicate"),
    ("floor_divide-bool", lambda x: ops.floor_divide(x > 0, x > 1), TypeError, "bool"),
    ("meshgrid-indexing", lambda x: ops.meshgrid(x[0], x[1], indexing="xyz"), ValueError,
     "'xy' or 'ij'"),
    ("meshgrid-rank", lambda x: ops.meshgrid(x, x), ValueError, "1-D"),
    ("meshgrid-one", lambda x: ops.meshgrid(x[0]), ValueError, "at least 2"),
    ("gather_nd-dtype", lambda x: ops.gather_nd(x, x), TypeError, "int32 or int64"),
    ("gather_nd-depth", lambda x: ops.gather_nd(x, ms.Tensor(np.zeros((1, 3), I32))),
     ValueError, "longer than the rank"),
    ("gather_elements-rank", lambda x: ops.gather_elements(x, 0, ms.Tensor(np.zeros(3, I32))),
     ValueError, "rank"),
    ("gather_elements-size", lambda x: ops.gather_elements(
        x, 0, ms.Tensor(np.zeros((1, 5), I32))), ValueError, "exceeds"),
    ("scatter_nd-shape-type", lambda x: ops.scatter_nd(IDX, ms.Tensor(np.ones(3, F32)), [3, 4]),
     TypeError, "tuple"),
    ("scatter_nd-shape-zero", lambda x: ops.scatter_nd(IDX, ms.Tensor(np.ones(3, F32)), (3, 0)),
     ValueError, ">= 1"),
    ("scatter_nd-updates", lambda x: ops.scatter_nd(IDX, ms.Tensor(np.ones(2, F32)), (3, 4)),
     ValueError, "updates must have shape"),
    ("reverse_sequence-dims", lambda x: ops.reverse_sequence(
        x, ms.Tensor(np.ones(3, I32)), 0, 0), ValueError, "must differ"),
    ("reverse_sequence-lengths", lambda x: ops.reverse_sequence(
        x, ms.Tensor(np.ones(2, I32)), 1), ValueError, "seq_lengths must have shape"),
    ("repeat_elements-rep", lambda x: ops.repeat_elements(x, 0), ValueError, "positive"),
    ("bias_add-shape", lambda x: ops.bias_add(x, ms.Tensor(np.ones(3, F32))), ValueError,
     "channels"),
    ("smooth_l1-beta", lambda x: ops.smooth_l1_loss(x, x, 0.0), ValueError, "greater than 0"),
    ("smooth_l1-shape", lambda x: ops.smooth_l1_loss(x, x[0]), ValueError, "one shape"),
    ("smooth_l1-reduction", lambda x: ops.smooth_l1_loss(x, x, reduction="max"), ValueError,
     "reduction"),
    ("bce-int", lambda x: ops.binary_cross_entropy(ops.cast(x, ms.int32),
                                                   ops.cast(x, ms.int32)), TypeError, "float"),
    ("rms_norm-dtype", lambda x: ops.rms_norm(ops.cast(x, ms.float64),
                                              ops.cast(x[0], ms.float64)), TypeError, "dtype"),
    ("rms_norm-epsilon", lambda x: ops.rms_norm(x, x[0], 0.0), ValueError, "epsilon"),
    ("iou-mode", lambda x: ops.iou(x[:, :4], x[:, :4], "giou"), ValueError, "mode"),
    ("iou-shape", lambda x: ops.iou(x[:, :3], x[:, :3]), ValueError, r"\(N, 4\)"),
    ("check_valid-metas", lambda x: ops.check_valid(x, x[0]), ValueError, r"\(3,\)"),
    ("encode-means", lambda x: ops.bounding_box_encode(x, x, means=[0, 0]), ValueError,
     "4 entries"),
    ("encode-means-type", lambda x: ops.bounding_box_encode(x, x, means=0.0), TypeError,
     "tuple"),
    ("decode-clip", lambda x: ops.bounding_box_decode(x, x, (3, 4), wh_ratio_clip=1),
     TypeError, "wh_ratio_clip"),
    ("interpolate-mode", lambda x: ops.interpolate(ops.reshape(x, (1, 1, 3, 4)), (2, 2),
                                                   mode="bicubic"), ValueError, "bicubic"),
    ("interpolate-both", lambda x: ops.interpolate(ops.reshape(x, (1, 1, 3, 4)), (2, 2),
                                                   scale_factor=2.0), ValueError, "exactly one"),
    ("interpolate-rank", lambda x: ops.interpolate(ops.reshape(x, (1, 3, 4)), (2, 2),
                                                   mode="bilinear"), ValueError, "4-D"),
    ("interpolate-corners", lambda x: ops.interpolate(ops.reshape(x, (1, 1, 3, 4)), (2, 2),
                                                      align_corners=True), ValueError,
     "align_corners"),
    ("resize-bilinear-flags", lambda x: P.ResizeBilinear((2, 2), True, True)(
        ops.reshape(x, (1, 1, 3, 4))), ValueError, "cannot"),
    ("resize-nearest-rank", lambda x: P.ResizeNearestNeighbor((2, 2))(x), ValueError, "4-D"),
    ("depth_to_space-channels", lambda x: P.DepthToSpace(2)(ops.reshape(x, (1, 3, 2, 2))),
     ValueError, "multiple"),
    ("pad-pairs", lambda x: P.Pad((1, 1))(x), ValueError, "pairs"),
    ("range-prim-maxlen", lambda x: P.Range(maxlen=3)(ms.Tensor(0), ms.Tensor(5),
                                                      ms.Tensor(1)), ValueError, "maxlen"),
    ("softmax_ce-rank", lambda x: P.SoftmaxCrossEntropyWithLogits()(x[0], x[0]), ValueError,
     "2-D"),
    ("float_status-int", lambda x: P.FloatStatus()(ops.cast(x, ms.int32)), TypeError, "float"),
    ("dropout-keep", lambda x: P.Dropout(keep_prob=0.0)(x), ValueError, "keep_prob"),
    ("tuple_to_array-str", lambda x: ops.tuple_to_array(("a",)), TypeError, "ints or floats"),
    ("scalar_to_tensor-tensor", lambda x: ops.scalar_to_tensor(x), TypeError, "input_x"),
    ("make_range-delta", lambda x: ops.make_range(0, 3, 0), ValueError, "delta"),
    ("tuple_len-type", lambda x: ops.tuple_len(x), TypeError, "tuple or list"),
    ("partial-callable", lambda x: ops.partial(3), TypeError, "callable"),
    ("summary-name", lambda x: P.ScalarSummary()("", x[0, 0]), TypeError, "name"),
    ("summary-scalar", lambda x: P.ScalarSummary()("x", x), ValueError, "scalar"),
    ("scatter_add-dim-src", lambda x: x.scatter_add(1, ms.Tensor(np.zeros((3, 4), I32)),
                                                    x[:2]), ValueError, "src"),
    ("uniform-generator", lambda x: x.uniform(generator=object()), ValueError, "generator"),
    ("nms-shape", lambda x: P.NMSWithMask()(x), ValueError, r"\(N, 5\)"),
    ("roi_align-rank", lambda x: P.ROIAlign(2, 2, 1.0)(x, x), ValueError, "4-D"),
    ("roi_align-samples", lambda x: P.ROIAlign(2, 2, 1.0, 0)(
        ops.reshape(x, (1, 1, 3, 4)), ms.Tensor(ROIS)), ValueError, "sample_num"),
    ("roi_align-pooled", lambda x: P.ROIAlign(0, 2, 1.0)(
        ops.reshape(x, (1, 1, 3, 4)), ms.Tensor(ROIS)), ValueError, "positive"),
]


@pytest.mark.parametrize("mode", ["pynative", "jit"])
@pytest.mark.parametrize("name,fn,error,match", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, fn, error, match, mode):
    f = fn if mode == "pynative" else ms.jit(fn)
    with pytest.raises(error, match=match):
        f(X)


def test_errors_name_the_op_and_the_users_line():
    with pytest.raises(ValueError) as info:
        ops.flip(X, (5,))  # the user's line
    text = str(info.value)
    assert "ms.flip" in text and "test_ops_more.py" in text


def test_mscc_ops_keeps_pythons_max_min_range_in_its_own_code():
    """ops.max/min/range are MindSpore's (tuples of values and indices, a Tensor), while the
    functions of pyfront/ops.py that call Python's max(), min() and range() still work."""
    from mscc.pyfront import ops as ops_module
    assert "max" not in vars(ops_module) and ops.max is not max
    assert {"max", "min", "range"} <= set(dir(ops))
    import mscc.ops.functional as F
    assert F.max is ops.max and F.range is ops.range
    np.testing.assert_allclose(ops.pad(X, (1, 1)).asnumpy(), np.pad(X34, ((0, 0), (1, 1))))
    assert len(ops.unstack(X, 1)) == 4


# ------------------------------------------------------------------ the ranking

def _rank_module():
    path = os.path.join(ROOT, "bench", "rank_mindspore_ops.py")
    spec = importlib.util.spec_from_file_location("rank_mindspore_ops", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SOURCE = '''
import mindspore.nn as nn
import mindspore.ops as ops
from mindspore.ops import operations as P
from mindspore.ops import functional as F
from mindspore.ops import composite as C
from mindspore.ops.operations import Concat

reduce_sum = P.ReduceSum(keep_dims=True)

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.cast = P.Cast()
        self.unused = P.Transpose()
        self.grad = C.GradOperation()
        self.concat = Concat(axis=1)

    def construct(self, x, y):
        a = self.cast(x, 1) + self.cast(y, 1)
        b = self.concat((a, F.cast(x, 2)))
        c = ops.matmul(b, ops.cat((x, y))).view(4, -1)
        d = P.Shape()(c)
        e = reduce_sum(c, 0) + reduce_sum(c, 1)
        f = ops.clip_by_value(c, 0, 1).astype(None)
        s = "-".join(["a"])
        return np.reshape(x, (2,)), x.shape, self.dense(x), C.clip_by_value(f, 0, 1)

def helper(x):
    return x.reshape(1)
'''


def test_the_counter_reads_aliases_instances_and_construct_methods():
    rank = _rank_module()
    methods = {"view", "astype", "reshape", "split", "join"}
    uses = rank.count_source(SOURCE, methods)
    got = {f"{k}.{n}": c for (k, n), c in uses.items()}
    assert got == {"primitive.Cast": 2, "primitive.Transpose": 1, "composite.GradOperation": 1,
                   "primitive.Concat": 1, "functional.cast": 1, "functional.matmul": 1,
                   "functional.cat": 1, "tensor.view": 1, "primitive.Shape": 1,
                   "primitive.ReduceSum": 2, "functional.clip_by_value": 2,
                   "tensor.astype": 1}
    assert rank.count_source("def f(:\n", methods) is None
    snapshot = rank.read_snapshot()
    assert rank.op_of("primitive", "ReduceSum", snapshot) == "sum"
    assert rank.op_of("primitive", "ExpandDims", snapshot) == "expand_dims"
    assert rank.op_of("primitive", "ResizeBilinear", snapshot) == "ResizeBilinear"
    assert rank.op_of("functional", "cat", snapshot) == "concat"
    assert rank.op_of("tensor", "view", snapshot) == "reshape"
    assert rank.op_of("tensor", "copy", snapshot) == "Tensor.copy"
    assert rank.models_of("models", "research/cv/resnet/src/net.py") == "research/cv/resnet"
    assert rank.models_of("models", "research/cv/resnet/tests/t.py") is None
    assert rank.models_of("mindformers", "mindformers/models/llama/llama.py") == \
        "mindformers/models/llama"


def test_the_counter_ranks_a_saved_sample_offline(tmp_path):
    """The script counts a local git clone (here: a two-model one made on the spot) without
    the network, writes the ranking file, and --recount reproduces it."""
    import subprocess
    rank = _rank_module()
    repo = tmp_path / "models"
    for model, text in [("official/cv/a", SOURCE), ("research/nlp/b", "import mindspore.ops "
                        "as ops\nops.matmul(1, 2)\nops.matmul(3, 4)\n")]:
        (repo / model / "src").mkdir(parents=True)
        (repo / model / "src" / "net.py").write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "sample"], check=True)
    out = tmp_path / "rank.txt"
    assert rank.main(["--models", str(repo), "-o", str(out), "--top", "0"]) == 0
    rows, clones, sample = rank.read_rank(str(out))
    assert sample == ["models:official/cv/a", "models:research/nlp/b"]
    top = {name: (models, calls) for _, name, models, calls, _, _ in rows}
    assert top["matmul"] == (2, 3) and top["cast"] == (1, 4) and top["sum"] == (1, 2)
    again = tmp_path / "again.txt"
    rank.main(["--models", str(repo), "--recount", str(out), "-o", str(again), "--top", "0"])
    assert again.read_text() == out.read_text()


def test_usage_rank_file_and_the_top_150_table():
    rows = coverage.read_rank()
    assert len(rows) >= 150 and [r[0] for r in rows] == list(range(1, len(rows) + 1))
    assert [r[2] for r in rows] == sorted((r[2] for r in rows), reverse=True)
    header = open(coverage.RANK_PATH).read().split("[ranking]")[0]
    assert "# sampled:" in header and "github.com/mindspore-ai/models" in header
    top = {r[1] for r in rows[:20]}
    assert {"reshape", "concat", "cast", "sum", "transpose", "matmul"} <= top
    snapshot, _ = coverage.read_snapshot()
    table = coverage.ranking_rows(snapshot)
    assert len(table) == 150
    ok, n = coverage.ranking_summary(table)
    assert n == 150 and ok >= 135
    by_op = {r[1]: r for r in table}
    assert by_op["reshape"][6] and dict(by_op["reshape"][4])["Tensor.view"]
    assert "P.Sum" in by_op["sum"][5]        # dead code in models, no MindSpore API
    for rank, op, _, _, marks, _, covered, note in table:
        assert covered or note, f"{op} (rank {rank}) is missing and has no reason"
        assert covered == all(has for _, has in marks)
    page = open(coverage.PAGE_PATH).read()
    assert f"## The 150 ops MindSpore's models use most: {ok} of 150" in page


def test_required_forms_include_mindsporses_function_and_tensor_method():
    snapshot, _ = coverage.read_snapshot()
    forms = coverage.required_forms("flip", {"P.ReverseV2": 5}, snapshot)
    assert set(forms) == {"P.ReverseV2", "ops.flip", "Tensor.flip"}
    assert coverage.required_forms("ResizeBilinear", {"P.ResizeBilinear": 3}, snapshot) == \
        ["P.ResizeBilinear"]
    assert set(coverage.required_forms("sum", {"P.Sum": 1}, snapshot)) == {"ops.sum",
                                                                         "Tensor.sum"}
