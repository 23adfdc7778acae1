"""Convolutions (ms.conv, ms.conv_input_grad, ms.conv_filter_grad through nn.Conv1d/2d/3d,
nn.Conv1d/2d/3dTranspose and ops.conv1d/2d/3d/conv_transpose2d) against DIRECT float64 numpy
definitions written here, one table of cases like JAX's lax_autodiff_test.py:

- a convolution is a sum over kernel offsets of the (zero-)padded input's strided window
  times the weight's slice at that offset (`conv_ref`);
- a transposed convolution is a scatter: each input position p adds weight[c, o, k] * x[c, p]
  into output position p*stride + k*dilation - pad_lo (`conv_transpose_ref`), never derived
  from the forward as the implementation does (a dilated, flipped stride-1 convolution);
- the pads and output sizes are MindSpore's pad modes, computed here from their definitions.

Each case runs in graph mode (ms.jit of a function calling it) and in PyNative mode (eagerly);
a subset checks the gradients with respect to the input, the weight and the bias against
central finite differences in float64, one case grad of grad; float16/float32 forwards
within their precision; the mistakes are exceptions naming the layer or op. Last, what
MindSpore's convolution Primitives add (NHWC, full-rank strides, Conv2DBackpropInput as the
gradient of Conv2D, their mistakes); their table rows are in test_primitives.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest

import mscc as ms
from mscc import nn, ops

F64 = ms.float64


# ------------------------------------------------------------------ float64 references

def ref_pads(pad_mode, padding, sizes, kernel, stride, dilation):
    """(lo, hi) per spatial dim, from MindSpore's definitions: "valid" none; "same" the
    output is ceil(n / stride), the odd extra at the end; "pad" an int (every side), one int
    per dim (both its sides) or (head, tail) pairs."""
    r = len(sizes)
    if pad_mode == "valid":
        return [0] * r, [0] * r
    if pad_mode == "same":
        lo, hi = [], []
        for n, k, s, d in zip(sizes, kernel, stride, dilation):
            need = (math.ceil(n / s) - 1) * s + (k - 1) * d + 1   # input rows the output reads
            total = max(need - n, 0)
            lo.append(total // 2)
            hi.append(total - total // 2)
        return lo, hi
    p = [padding] * r if isinstance(padding, int) else list(padding)
    if len(p) == r:
        return p, p
    return p[0::2], p[1::2]


def conv_ref(x, w, b, stride, dilation, lo, hi, groups):
    """y[n, g*Og + o, q] = b[g*Og + o] + sum over c, k of
    w[g*Og + o, c, k] * xpad[n, g*Cg + c, q*stride + k*dilation]."""
    r = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(lo, hi)))
    kernel = w.shape[2:]
    out = [(xp.shape[2 + i] - (kernel[i] - 1) * dilation[i] - 1) // stride[i] + 1
           for i in range(r)]
    cg, og = x.shape[1] // groups, w.shape[0] // groups
    y = np.zeros((x.shape[0], w.shape[0], *out))
    for g in range(groups):
        xg, wg = xp[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og]
        for k in np.ndindex(*kernel):
            window = tuple(slice(k[i] * dilation[i], k[i] * dilation[i] +
                                 (out[i] - 1) * stride[i] + 1, stride[i]) for i in range(r))
            y[:, g * og:(g + 1) * og] += np.einsum(
                "nc...,oc->no...", xg[(slice(None), slice(None)) + window],
                wg[(slice(None), slice(None)) + k])
    if b is not None:
        y += b.reshape((1, -1) + (1,) * r)
    return y


def conv_transpose_ref(x, w, b, stride, dilation, lo, out, groups):
    """The scatter: input position p of channel g*Cg + c adds w[g*Cg + c, o, k] * x[n, ., p]
    into output position p*stride + k*dilation - lo of channel g*Og + o; positions outside
    [0, out) are dropped. w is (C_in, C_out / groups, *kernel)."""
    r = x.ndim - 2
    sizes, kernel = x.shape[2:], w.shape[2:]
    cg, og = x.shape[1] // groups, w.shape[1]
    reach = [max((sizes[i] - 1) * stride[i] + (kernel[i] - 1) * dilation[i] + 1, lo[i] + out[i])
             for i in range(r)]
    buf = np.zeros((x.shape[0], og * groups, *reach))
    for g in range(groups):
        xg, wg = x[:, g * cg:(g + 1) * cg], w[g * cg:(g + 1) * cg]
        for k in np.ndindex(*kernel):
            at = tuple(slice(k[i] * dilation[i], k[i] * dilation[i] +
                             (sizes[i] - 1) * stride[i] + 1, stride[i]) for i in range(r))
            buf[(slice(None), slice(g * og, (g + 1) * og)) + at] += np.einsum(
                "nc...,co->no...", xg, wg[(slice(None), slice(None)) + k])
    y = buf[(slice(None), slice(None)) + tuple(slice(a, a + n) for a, n in zip(lo, out))]
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * r)
    return y


def tup(v, r):
    return (v,) * r if isinstance(v, int) else tuple(v)


# ------------------------------------------------------------------ the table

LAYERS = {"Conv1d": (nn.Conv1d, 1, False), "Conv2d": (nn.Conv2d, 2, False),
          "Conv3d": (nn.Conv3d, 3, False), "Conv1dTranspose": (nn.Conv1dTranspose, 1, True),
          "Conv2dTranspose": (nn.Conv2dTranspose, 2, True),
          "Conv3dTranspose": (nn.Conv3dTranspose, 3, True)}
FUNCTIONAL = {"conv1d": (1, False), "conv2d": (2, False), "conv3d": (3, False),
              "conv_transpose2d": (2, True)}


class Functional(nn.Cell):
    """ops.<name>(x, weight, bias, **kwargs) with weight and bias as Parameters, so that the
    gradient checks treat layers and functional ops alike."""

    def __init__(self, name, weight, bias, kwargs):
        super().__init__()
        self.fn, self.kwargs = getattr(ops, name), kwargs
        self.weight = ms.Parameter(weight, name="weight")
        self.has_bias = bias is not None
        if self.has_bias:
            self.bias = ms.Parameter(bias, name="bias")

    def construct(self, x):
        return self.fn(x, self.weight, self.bias if self.has_bias else None, **self.kwargs)


@dataclass
class Case:
    id: str
    op: str                  # a LAYERS or a FUNCTIONAL name
    cin: int
    cout: int
    kernel: object
    spatial: tuple
    kw: dict = field(default_factory=dict)
    batch: int = 2
    grad: bool = False       # in the gradient subset

    @property
    def rank(self):
        return (LAYERS[self.op][1] if self.op in LAYERS else FUNCTIONAL[self.op][0])

    @property
    def transposed(self):
        return LAYERS[self.op][2] if self.op in LAYERS else FUNCTIONAL[self.op][1]

    @property
    def channels_last(self):
        return self.kw.get("data_format") == "NHWC"

    def input(self, rng, dtype=np.float64):
        shape = ((self.batch, *self.spatial, self.cin) if self.channels_last else
                 (self.batch, self.cin, *self.spatial))
        return rng.uniform(-1, 1, shape).astype(dtype)

    def build(self, dtype=F64, seed=0):
        """The Cell under test (its weight and bias Parameters in the layer's layout)."""
        if self.op in LAYERS:
            ms.set_seed(seed)
            return LAYERS[self.op][0](self.cin, self.cout, self.kernel, dtype=dtype, **self.kw)
        rng = np.random.default_rng(seed)
        kw = dict(self.kw)
        groups = kw.get("groups", 1)
        kernel = tup(self.kernel, self.rank)
        lead = (self.cin, self.cout // groups) if self.transposed else \
            (self.cout, self.cin // groups)
        w = rng.uniform(-0.5, 0.5, lead + kernel).astype(dtype.np)
        b = rng.uniform(-0.5, 0.5, self.cout).astype(dtype.np) if kw.pop("bias", False) \
            else None
        return Functional(self.op, w, b, kw)

    def reference(self, net, x):
        """The expected output for input x (numpy, float64) from net's weight and bias."""
        r, kw = self.rank, self.kw
        w = net.weight.asnumpy().astype(np.float64)
        b = net.bias.asnumpy().astype(np.float64) if net.has_bias else None
        if self.channels_last:   # NHWC data, weight (out, kh, kw, in / group)
            x, w = x.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2)
        functional = self.op in FUNCTIONAL
        groups = kw.get("groups" if functional else "group", 1)
        kernel = w.shape[2:]
        stride, dilation = tup(kw.get("stride", 1), r), tup(kw.get("dilation", 1), r)
        pad_mode = kw.get("pad_mode", "valid" if functional else "same")
        padding = kw.get("padding", 0)
        if isinstance(padding, str):        # ops.conv2d(padding="same")
            pad_mode, padding = padding, 0
        if self.op == "conv_transpose2d":   # PyTorch's arguments: padding both sides
            pad_mode = "pad"
        sizes = x.shape[2:]
        if not self.transposed:
            lo, hi = ref_pads(pad_mode, padding, sizes, kernel, stride, dilation)
            y = conv_ref(x, w, b, stride, dilation, lo, hi, groups)
        else:
            extra = tup(kw.get("output_padding", 0), r)
            span = [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]
            if pad_mode == "same":       # MindSpore: out = in * stride
                out = [n * s for n, s in zip(sizes, stride)]
                lo, _ = ref_pads("same", 0, out, kernel, stride, dilation)
            elif pad_mode == "valid":    # MindSpore's 1-D/2-D: in * stride + max(span - stride, 0)
                out = [n * s + max(e - s, 0) if r < 3 else (n - 1) * s + e
                       for n, s, e in zip(sizes, stride, span)]
                lo = [0] * r
            else:
                # output_padding extends the output at the end, and the scatter fills it: the
                # gradient of the convolution of the larger input, as PyTorch's and
                # ops.conv_transpose2d's. (MindSpore's nn.Conv2dTranspose appends zeros after
                # its bias there instead; mscc's layers follow the scatter.)
                lo, hi = ref_pads("pad", padding, sizes, kernel, stride, dilation)
                out = [(n - 1) * s + e - a - c + p for n, s, e, a, c, p in
                       zip(sizes, stride, span, lo, hi, extra)]
            y = conv_transpose_ref(x, w, b, stride, dilation, lo, out, groups)
        return y.transpose(0, 2, 3, 1) if self.channels_last else y


CASES = [
    # 1-D
    Case("conv1d-same", "Conv1d", 4, 6, 3, (9,)),
    Case("conv1d-same-s3-extra-at-end", "Conv1d", 2, 3, 4, (10,), dict(stride=3)),
    Case("conv1d-valid-s2-d2-bias", "Conv1d", 4, 6, 3, (11,),
         dict(stride=2, pad_mode="valid", dilation=2, has_bias=True), grad=True),
    Case("conv1d-pad-int-g2", "Conv1d", 4, 6, 3, (7,),
         dict(pad_mode="pad", padding=2, group=2), grad=True),
    Case("conv1d-pad-lohi-depthwise", "Conv1d", 4, 4, 5, (8,),
         dict(pad_mode="pad", padding=(1, 3), group=4, has_bias=True)),
    # 2-D
    Case("conv2d-same", "Conv2d", 3, 4, 3, (7, 6)),
    Case("conv2d-same-s2-rect", "Conv2d", 3, 4, (2, 3), (7, 8), dict(stride=2), grad=True),
    Case("conv2d-valid-dilated-bias", "Conv2d", 3, 5, 3, (9, 8),
         dict(pad_mode="valid", dilation=(2, 1), stride=(1, 2), has_bias=True)),
    Case("conv2d-pad-int-bias", "Conv2d", 2, 3, 3, (5, 5),
         dict(pad_mode="pad", padding=1, has_bias=True)),
    Case("conv2d-pad-per-dim", "Conv2d", 2, 3, 3, (5, 6), dict(pad_mode="pad", padding=(2, 1))),
    Case("conv2d-pad-4-bias", "Conv2d", 2, 3, (3, 2), (5, 5),
         dict(pad_mode="pad", padding=(0, 2, 1, 3), stride=(2, 1), has_bias=True), grad=True),
    Case("conv2d-g2-bias", "Conv2d", 4, 6, 3, (6, 5), dict(group=2, has_bias=True), grad=True),
    Case("conv2d-depthwise-s2", "Conv2d", 3, 3, 3, (7, 7), dict(stride=2, group=3)),
    Case("conv2d-depthwise-x2", "Conv2d", 3, 6, 3, (5, 6), dict(group=3, pad_mode="valid")),
    Case("conv2d-pointwise-s2", "Conv2d", 3, 4, 1, (5, 6), dict(stride=2, pad_mode="valid")),
    Case("conv2d-nhwc-bias", "Conv2d", 3, 4, 3, (6, 5),
         dict(data_format="NHWC", has_bias=True), grad=True),
    Case("conv2d-nhwc-g2-s2-pad", "Conv2d", 4, 6, 3, (7, 6),
         dict(data_format="NHWC", group=2, stride=2, pad_mode="pad", padding=1)),
    # 3-D
    Case("conv3d-same", "Conv3d", 2, 3, 3, (4, 5, 4)),
    Case("conv3d-valid-s2-bias", "Conv3d", 2, 4, (2, 3, 2), (5, 5, 4),
         dict(stride=(2, 1, 2), pad_mode="valid", has_bias=True), grad=True),
    Case("conv3d-pad6-g2-dilated", "Conv3d", 4, 4, 2, (4, 5, 3),
         dict(pad_mode="pad", padding=(1, 0, 0, 1, 1, 1), group=2, dilation=(1, 2, 1))),
    # transposed
    Case("conv1dT-same-s2", "Conv1dTranspose", 4, 3, 3, (5,), dict(stride=2)),
    Case("conv1dT-valid-stride-beyond-kernel", "Conv1dTranspose", 2, 3, 2, (4,),
         dict(stride=3, pad_mode="valid")),
    Case("conv1dT-pad-g2-d2-bias", "Conv1dTranspose", 4, 6, 3, (5,),
         dict(pad_mode="pad", padding=1, group=2, dilation=2, has_bias=True), grad=True),
    Case("conv2dT-same", "Conv2dTranspose", 3, 4, 3, (5, 4)),
    Case("conv2dT-same-s2", "Conv2dTranspose", 3, 2, (3, 2), (4, 5), dict(stride=2)),
    Case("conv2dT-valid-s2-bias", "Conv2dTranspose", 3, 2, (3, 2), (3, 4),
         dict(stride=2, pad_mode="valid", has_bias=True)),
    Case("conv2dT-valid-s3-k2", "Conv2dTranspose", 2, 2, 2, (3, 3),
         dict(stride=(3, 1), pad_mode="valid")),
    Case("conv2dT-pad-outpad-bias", "Conv2dTranspose", 2, 3, 3, (4, 3),
         dict(stride=2, pad_mode="pad", padding=1, output_padding=1, has_bias=True), grad=True),
    Case("conv2dT-pad4-g2-dilated-outpad", "Conv2dTranspose", 4, 2, 3, (3, 4),
         dict(stride=(2, 3), pad_mode="pad", padding=(0, 1, 2, 1), group=2, dilation=(2, 1),
              output_padding=(1, 2))),
    Case("conv2dT-depthwise-s2", "Conv2dTranspose", 3, 3, 3, (4, 4), dict(stride=2, group=3)),
    Case("conv3dT-same-s2", "Conv3dTranspose", 2, 3, 2, (3, 2, 3), dict(stride=2), grad=True),
    Case("conv3dT-valid-k1-s2", "Conv3dTranspose", 2, 2, (1, 2, 1), (2, 3, 2),
         dict(stride=2, pad_mode="valid")),
    Case("conv3dT-pad-outpad-g2-bias", "Conv3dTranspose", 2, 4, 3, (3, 2, 3),
         dict(stride=(2, 1, 2), pad_mode="pad", padding=1, output_padding=(1, 0, 1), group=2,
              has_bias=True)),
    # functional
    Case("ops.conv1d-pad-s2-bias", "conv1d", 3, 4, 3, (8,),
         dict(stride=2, pad_mode="pad", padding=1, bias=True)),
    Case("ops.conv2d-valid", "conv2d", 3, 4, 3, (6, 7)),
    Case("ops.conv2d-padding-same-str", "conv2d", 2, 3, (3, 4), (5, 7),
         dict(padding="same", stride=(1, 2), bias=True)),
    Case("ops.conv2d-g2-pad4-s21", "conv2d", 4, 2, 3, (5, 6),
         dict(groups=2, pad_mode="pad", padding=(1, 0, 2, 1), stride=(2, 1), bias=True),
         grad=True),
    Case("ops.conv3d-pad-dilated", "conv3d", 2, 3, 2, (4, 4, 3),
         dict(stride=(1, 2, 1), pad_mode="pad", padding=(1, 1, 0), dilation=(2, 1, 1),
              bias=True)),
    Case("ops.conv_transpose2d-s2-outpad", "conv_transpose2d", 3, 2, 3, (3, 4),
         dict(stride=2, padding=1, output_padding=1, bias=True), grad=True),
    Case("ops.conv_transpose2d-g2-d2", "conv_transpose2d", 4, 4, 2, (3, 3),
         dict(groups=2, dilation=2, padding=(1, 0), stride=(1, 2), output_padding=(0, 1))),
]
BY_ID = {c.id: c for c in CASES}
GRAD_CASES = [c for c in CASES if c.grad]


def test_the_table_covers_every_layer_and_functional_op():
    assert {c.op for c in CASES} == set(LAYERS) | set(FUNCTIONAL)
    assert {c.op for c in GRAD_CASES} >= {"Conv1d", "Conv2d", "Conv3d", "Conv1dTranspose",
                                          "Conv2dTranspose", "Conv3dTranspose", "conv2d",
                                          "conv_transpose2d"}
    assert len(BY_ID) == len(CASES)


def _runner(mode, net):
    """Graph mode: ms.jit of a function calling the Cell; PyNative: the eager call."""
    return ms.jit(lambda t: net(t)) if mode == ms.GRAPH_MODE else net


@pytest.mark.parametrize("case_id", list(BY_ID))
def test_forward_matches_the_direct_definition(case_id, mode):
    case = BY_ID[case_id]
    net = case.build()
    x = case.input(np.random.default_rng(1))
    got = _runner(mode, net)(ms.Tensor(x)).asnumpy()
    want = case.reference(net, x)
    assert got.dtype == np.float64
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ gradients

def _central(f, base, eps=1e-6):
    """Central differences of the scalar f(array) at base, element by element."""
    fd = np.zeros(base.shape)
    for idx in np.ndindex(*base.shape):
        plus, minus = base.copy(), base.copy()
        plus[idx] += eps
        minus[idx] -= eps
        fd[idx] = (f(plus) - f(minus)) / (2 * eps)
    return fd


@pytest.mark.parametrize("case_id", [c.id for c in GRAD_CASES])
def test_gradients_match_central_differences(case_id):
    """d<net(x), v>/d(x, weight, bias) from ms.grad (graph mode for every other case,
    PyNative for the rest) against central differences of the compiled forward."""
    case = BY_ID[case_id]
    mode = (ms.GRAPH_MODE, ms.PYNATIVE_MODE)[GRAD_CASES.index(case) % 2]
    ms.set_context(mode=mode)
    try:
        net = case.build()
        rng = np.random.default_rng(2)
        x = case.input(rng)
        v = ms.Tensor(rng.uniform(-1, 1, case.reference(net, x).shape))
        params = [net.weight] + ([net.bias] if net.has_bias else [])

        def loss(t):
            return ops.reduce_sum(net(t) * v)

        grad_fn = ms.grad(loss, 0, params)
        if mode == ms.GRAPH_MODE:
            grad_fn = ms.jit(grad_fn)
        dx, dparams = grad_fn(ms.Tensor(x))
        forward = ms.jit(loss)   # the finite differences' function, compiled once

        def at(p):
            def f(value):
                p.set_data(value)
                return float(forward(ms.Tensor(x)).asnumpy())
            return f

        np.testing.assert_allclose(dx.asnumpy(), _central(
            lambda t: float(forward(ms.Tensor(t)).asnumpy()), x), rtol=1e-6, atol=1e-8,
            err_msg="d/dx")
        for p, g in zip(params, dparams):
            base = p.asnumpy().copy()
            fd = _central(at(p), base)
            p.set_data(base)
            assert g.shape == p.shape
            np.testing.assert_allclose(g.asnumpy(), fd, rtol=1e-6, atol=1e-8,
                                       err_msg=f"d/d{p.name}")
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_grad_of_grad_matches_central_differences():
    """h(x, w) = |d<conv(x, w), v>/dx|^2 + |d<conv(x, w), v>/dw|^2 (stride 2, padding,
    groups 2): its gradients with respect to w and x take the gradient rules of
    conv_input_grad and conv_filter_grad, checked against central differences of h."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (2, 4, 5, 6))
    w = rng.uniform(-1, 1, (4, 2, 3, 2))
    kw = dict(stride=2, pad_mode="pad", padding=(1, 0, 0, 1), groups=2)
    v = ms.Tensor(rng.uniform(-1, 1, conv_ref(x, w, None, (2, 2), (1, 1), (1, 0), (0, 1),
                                              2).shape))

    def inner(x, w):
        return ops.reduce_sum(ops.conv2d(x, w, **kw) * v)

    first = ms.grad(inner, (0, 1))

    def h(x, w):
        gx, gw = first(x, w)
        return ops.reduce_sum(gx * gx) + ops.reduce_sum(gw * gw)

    dx, dw = ms.jit(ms.grad(h, (0, 1)))(ms.Tensor(x), ms.Tensor(w))
    h_c = ms.jit(h)
    np.testing.assert_allclose(
        dw.asnumpy(), _central(lambda t: float(h_c(ms.Tensor(x), ms.Tensor(t)).asnumpy()), w),
        rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        dx.asnumpy(), _central(lambda t: float(h_c(ms.Tensor(t), ms.Tensor(w)).asnumpy()), x),
        rtol=1e-6, atol=1e-7)
    # ... and h itself: |conv_input_grad(v, w)|^2 + |conv_filter_grad(x, v)|^2, the first
    # by the scatter, the second directly: dw[o, c, k] = sum of v[n, o, q] * xpad[n, c', q*s + k]
    vv = v.asnumpy()
    gx = conv_transpose_ref(vv, w, None, (2, 2), (1, 1), (1, 0), x.shape[2:], 2)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 0), (0, 1)))
    gw = np.zeros(w.shape)
    for o, c, i, j in np.ndindex(*w.shape):
        window = xp[:, (o // 2) * 2 + c, i:i + 2 * vv.shape[2] - 1:2, j:j + 2 * vv.shape[3] - 1:2]
        gw[o, c, i, j] = np.sum(vv[:, o] * window)
    np.testing.assert_allclose(float(h_c(ms.Tensor(x), ms.Tensor(w)).asnumpy()),
                               np.sum(gx * gx) + np.sum(gw * gw), rtol=1e-12)


# ------------------------------------------------------------------ half and single precision

@pytest.mark.parametrize("dtype,tol", [(ms.float32, 1e-5), (ms.float16, 2e-3)],
                         ids=["float32", "float16"])
@pytest.mark.parametrize("case_id", ["conv1d-valid-s2-d2-bias", "conv2d-g2-bias",
                                     "conv2d-nhwc-bias", "conv3d-same", "conv2dT-pad-outpad-bias",
                                     "ops.conv_transpose2d-s2-outpad"])
def test_float16_and_float32_forward_within_their_precision(case_id, dtype, tol,
                                                           monkeypatch):
    """The same program in dtype (float16 accumulates in float32 and rounds once) against the
    float64 definition of its own rounded inputs: within tol of the output's scale; and
    bitwise what PyNative computes (untiered: a tiered first call runs -O0 code, which rounds
    in its own way)."""
    monkeypatch.setenv("MSCC_TIERED", "0")
    case = BY_ID[case_id]
    net = case.build(dtype)
    x = case.input(np.random.default_rng(4), dtype.np)
    got = ms.jit(lambda t: net(t))(ms.Tensor(x)).asnumpy()
    assert got.dtype == dtype.np
    want = case.reference(net, x.astype(np.float64))
    assert got.shape == want.shape
    err = np.abs(got.astype(np.float64) - want).max()
    assert err <= tol * np.abs(want).max(), (err, np.abs(want).max())
    eager = net(ms.Tensor(x)).asnumpy()
    np.testing.assert_array_equal(eager, got)


# ------------------------------------------------------------------ mistakes

def _f32(*shape):
    return ms.Tensor(np.ones(shape, np.float32))


MISTAKES = [
    # (id, the mistake, exception, message regex)
    ("layer-wrong-channels", lambda: nn.Conv2d(3, 4, 3)(_f32(1, 5, 6, 6)), ValueError,
     r"For 'nn.Conv2d', expects \(N, 3, H, W\) input \(in_channels=3\), got shape \(1, 5, 6, 6\)"),
    ("layer-nhwc-wrong-channels",
     lambda: nn.Conv2d(3, 4, 3, data_format="NHWC")(_f32(1, 6, 6, 4)), ValueError,
     r"For 'nn.Conv2d', expects \(N, H, W, 3\) input"),
    ("layer-wrong-rank", lambda: nn.Conv3d(2, 4, 3)(_f32(1, 2, 6, 6)), ValueError,
     r"For 'nn.Conv3d', expects \(N, 2, D, H, W\) input"),
    ("transposed-wrong-channels", lambda: nn.Conv1dTranspose(2, 4, 3)(_f32(1, 3, 6)),
     ValueError, r"For 'nn.Conv1dTranspose', expects \(N, 2, L\) input"),
    ("op-wrong-channels", lambda: ops.conv2d(_f32(1, 5, 6, 6), _f32(4, 3, 3, 3)), ValueError,
     r"For 'ms.conv', input has 5 channels, the weight \(4, 3, 3, 3\) with groups=1 expects 3"),
    ("op-groups-channels", lambda: ops.conv2d(_f32(1, 5, 6, 6), _f32(4, 5, 3, 3), groups=2),
     ValueError, r"For 'ms.conv', input has 5 channels, .* groups=2 expects 10"),
    ("layer-kernel-larger-than-input",
     lambda: nn.Conv2d(2, 4, 7, pad_mode="valid")(_f32(1, 2, 6, 8)), ValueError,
     r"For 'ms.conv', the padded input \(6, 8\) .* is smaller than the kernel \(7, 7\)"),
    ("op-kernel-larger-than-padded-input",
     lambda: ops.conv1d(_f32(1, 2, 4), _f32(3, 2, 8), pad_mode="pad", padding=1), ValueError,
     r"For 'ms.conv', the padded input \(4,\) \(pads \(1,\), \(1,\)\) is smaller than the "
     r"kernel \(8,\)"),
    ("dilated-kernel-larger-than-input",
     lambda: nn.Conv1d(2, 2, 3, dilation=3, pad_mode="valid")(_f32(1, 2, 6)), ValueError,
     r"For 'ms.conv', .* smaller than the kernel \(3,\) with dilation \(3,\)"),
    ("layer-padding-with-same", lambda: nn.Conv2d(2, 4, 3, pad_mode="same", padding=1),
     ValueError, r"For 'nn.Conv2d', padding must be 0 when pad_mode is 'same', got 1"),
    ("op-padding-with-same",
     lambda: ops.conv2d(_f32(1, 2, 6, 6), _f32(4, 2, 3, 3), pad_mode="same", padding=1),
     ValueError, r"For 'conv2d', padding must be 0 when pad_mode is 'same', got 1"),
    ("layer-padding-with-valid", lambda: nn.Conv1d(2, 4, 3, pad_mode="valid", padding=2),
     ValueError, r"For 'nn.Conv1d', padding must be 0 when pad_mode is 'valid', got 2"),
    ("layer-bad-pad-mode", lambda: nn.Conv2d(2, 4, 3, pad_mode="full"), ValueError,
     r"For 'nn.Conv2d', pad_mode must be one of same, valid, pad, got 'full'"),
    ("layer-negative-padding", lambda: nn.Conv2d(2, 4, 3, pad_mode="pad", padding=-1),
     ValueError, r"For 'nn.Conv2d', padding must be a non-negative int"),
    ("layer-in-channels-not-divisible-by-group", lambda: nn.Conv2d(5, 4, 3, group=2),
     ValueError, r"For 'Conv2d', 'in_channels' \(5\) and 'out_channels' \(4\) must be "
                 r"divisible by 'group' \(2\)"),
    ("transposed-in-channels-not-divisible-by-group",
     lambda: nn.Conv3dTranspose(3, 4, 3, group=2), ValueError,
     r"For 'Conv3dTranspose', 'in_channels' \(3\) .* divisible by 'group' \(2\)"),
    ("layer-kernel-zero", lambda: nn.Conv2d(2, 4, 0), ValueError,
     r"For 'nn.Conv2d', kernel_size must be a positive int or a tuple of 2 of them, got 0"),
    ("layer-kernel-wrong-length", lambda: nn.Conv3d(2, 4, (3, 3)), ValueError,
     r"For 'nn.Conv3d', kernel_size must be a positive int or a tuple of 3 of them, "
     r"got \(3, 3\)"),
    ("layer-kernel-not-int", lambda: nn.Conv1d(2, 4, 2.5), ValueError,
     r"For 'nn.Conv1d', kernel_size must be a positive int .* got 2.5"),
    ("layer-stride-zero", lambda: nn.Conv2d(2, 4, 3, stride=0), ValueError,
     r"For 'nn.Conv2d', stride must be a positive int"),
    ("op-weight-rank", lambda: ops.conv2d(_f32(1, 2, 6, 6), _f32(4, 2, 3)), ValueError,
     r"For 'conv2d', expects an input of rank 4 .* got shapes \(1, 2, 6, 6\) and \(4, 2, 3\)"),
    ("transposed-output-padding-too-large",
     lambda: nn.Conv2dTranspose(2, 2, 3, stride=2, pad_mode="pad", output_padding=2)(
         _f32(1, 2, 4, 4)), ValueError,
     r"output_padding \(2, 2\) must be smaller than the stride or the dilation"),
]


@pytest.mark.parametrize("mistake,error,message", [m[1:] for m in MISTAKES],
                         ids=[m[0] for m in MISTAKES])
def test_mistakes_are_errors_naming_the_layer_or_op(mistake, error, message):
    with pytest.raises(error, match=message):
        mistake()


UNDER_JIT = {"layer-wrong-channels", "op-wrong-channels", "layer-kernel-larger-than-input",
             "op-padding-with-same"}


@pytest.mark.parametrize("mistake,error,message", [m[1:] for m in MISTAKES if m[0] in UNDER_JIT],
                         ids=[m[0] for m in MISTAKES if m[0] in UNDER_JIT])
def test_mistakes_inside_jit_are_the_same_errors(mistake, error, message):
    with pytest.raises(error, match=message):
        ms.jit(lambda: mistake())()


# ------------------------------------------------------------------ MindSpore's Primitives
# (their table rows, against the functional forms' IR, are in test_primitives.py)

def test_conv2d_primitive_nhwc_and_full_rank_stride():
    """Conv2D with data_format NHWC (weight (O, kh, kw, C / group)) and MindSpore's 4-tuple
    stride/dilation (1, 1, sh, sw), in both modes."""
    from mscc.ops import operations as P
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (2, 7, 6, 4))
    w = rng.uniform(-1, 1, (6, 3, 2, 2))
    prim = P.Conv2D(6, (3, 2), pad_mode="SAME", stride=(1, 1, 2, 1), dilation=(1, 1, 1, 2),
                    group=2, data_format="NHWC")
    lo, hi = ref_pads("same", 0, (7, 6), (3, 2), (2, 1), (1, 2))
    want = conv_ref(x.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2), None, (2, 1), (1, 2),
                    lo, hi, 2).transpose(0, 2, 3, 1)
    for run in (lambda a, b: prim(a, b), ms.jit(lambda a, b: prim(a, b))):
        np.testing.assert_allclose(run(ms.Tensor(x), ms.Tensor(w)).asnumpy(), want,
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("pad_mode,pad,pad_list", [("same", 0, None), ("pad", (1, 0, 2, 1), None),
                                                   ("valid", 0, (0, 1, 1, 0))],
                         ids=["same", "pad4", "pad_list"])
def test_conv2d_backprop_input_is_the_gradient_of_conv2d(pad_mode, pad, pad_list):
    """Conv2DBackpropInput(dout, weight, x.shape) = d<Conv2D(x, weight), dout>/dx (stride 2,
    groups 2, an input size that stride 2 does not divide), and the scatter of dout."""
    from mscc.ops import operations as P
    rng = np.random.default_rng(6)
    x = rng.uniform(-1, 1, (2, 4, 7, 6))
    w = rng.uniform(-1, 1, (6, 2, 3, 3))
    if pad_list is None:
        lo, hi = ref_pads(pad_mode, pad, (7, 6), (3, 3), (2, 2), (1, 1))
        conv = P.Conv2D(6, 3, pad_mode=pad_mode, pad=pad, stride=2, group=2)
    else:   # the same pads given explicitly to the forward
        lo, hi = pad_list[0::2], pad_list[1::2]
        conv = P.Conv2D(6, 3, pad_mode="pad", pad=pad_list, stride=2, group=2)
    dout = rng.uniform(-1, 1, conv_ref(x, w, None, (2, 2), (1, 1), lo, hi, 2).shape)
    prim = P.Conv2DBackpropInput(6, 3, pad_mode=pad_mode, pad=pad, pad_list=pad_list, stride=2,
                                 group=2)
    got = ms.jit(lambda d, k: prim(d, k, x.shape))(ms.Tensor(dout), ms.Tensor(w)).asnumpy()
    grad = ms.grad(lambda t: ops.reduce_sum(conv(t, ms.Tensor(w)) * ms.Tensor(dout)))(
        ms.Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, grad, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, conv_transpose_ref(dout, w, None, (2, 2), (1, 1), lo,
                                                       (7, 6), 2), rtol=1e-12, atol=1e-12)


def test_conv2d_transpose_primitive_nhwc():
    from mscc.ops import operations as P
    rng = np.random.default_rng(7)
    dout = rng.uniform(-1, 1, (1, 3, 4, 4))          # NHWC: (N, H, W, C_out)
    w = rng.uniform(-1, 1, (4, 3, 3, 2))             # NHWC weight (C_out, kh, kw, C_in)
    got = P.Conv2DTranspose(4, 3, pad_mode="same", stride=2, data_format="NHWC")(
        ms.Tensor(dout), ms.Tensor(w), (1, 6, 8, 2)).asnumpy()
    lo, _ = ref_pads("same", 0, (6, 8), (3, 3), (2, 2), (1, 1))
    want = conv_transpose_ref(dout.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2), None,
                              (2, 2), (1, 1), lo, (6, 8), 1).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _prim(name, *args, **kwargs):
    from mscc.ops import operations as P
    return getattr(P, name)(*args, **kwargs)


PRIMITIVE_MISTAKES = [
    ("mode", lambda: _prim("Conv2D", 4, 3, mode=2), ValueError,
     r"For 'Conv2D', mode=2 is not supported by mscc \(only mode=1\)"),
    ("out-channel", lambda: _prim("Conv2D", 5, 3)(_f32(1, 3, 6, 6), _f32(4, 3, 3, 3)),
     ValueError, r"For 'Conv2D', out_channel 5 is not the weight's first dim 4"),
    ("kernel-size", lambda: _prim("Conv3D", 4, 2)(_f32(1, 3, 6, 6, 6), _f32(4, 3, 3, 3, 3)),
     ValueError, r"For 'Conv3D', kernel_size \(2, 2, 2\) is not the weight's kernel \(3, 3, 3\)"),
    ("data-format", lambda: _prim("Conv3D", 4, 3, data_format="NDHWC")(
        _f32(1, 3, 6, 6, 6), _f32(4, 3, 3, 3, 3)), ValueError,
     r"For 'Conv3D', data_format must be one of NCDHW, got 'NDHWC'"),
    ("channels", lambda: _prim("Conv2D", 4, 3, group=2)(_f32(1, 3, 6, 6), _f32(4, 3, 3, 3)),
     ValueError, r"For 'ms.conv', input has 3 channels, .* groups=2 expects 6"),
    ("pad-with-valid", lambda: _prim("Conv2D", 4, 3, pad=1)(_f32(1, 3, 6, 6),
                                                           _f32(4, 3, 3, 3)),
     ValueError, r"For 'Conv2D', padding must be 0 when pad_mode is 'valid', got 1"),
    ("stride-length", lambda: _prim("Conv2D", 4, 3, stride=(1, 2, 2))(_f32(1, 3, 6, 6),
                                                                     _f32(4, 3, 3, 3)),
     ValueError, r"For 'Conv2D', stride must be a positive int or a tuple of 2 of them"),
    ("input-size", lambda: _prim("Conv2DBackpropInput", 4, 3)(
        _f32(1, 4, 4, 4), _f32(4, 3, 3, 3), (1, 3, 6)), ValueError,
     r"For 'Conv2DBackpropInput', input_size must have 4 entries, got \(1, 3, 6\)"),
    ("input-size-inconsistent", lambda: _prim("Conv2DTranspose", 4, 3)(
        _f32(1, 4, 4, 4), _f32(4, 3, 3, 3), (1, 3, 9, 9)), ValueError,
     r"For 'ms.conv_input_grad', dy \(1, 4, 4, 4\) is not the shape of a convolution of "
     r"\(1, 3, 9, 9\)"),
    ("transpose3d-in-channel", lambda: _prim("Conv3DTranspose", 3, 4, 2)(
        _f32(1, 2, 3, 3, 3), _f32(2, 4, 2, 2, 2)), ValueError,
     r"For 'Conv3DTranspose', in_channel 3 is not the weight's first dim 2"),
]


@pytest.mark.parametrize("mistake,error,message", [m[1:] for m in PRIMITIVE_MISTAKES],
                         ids=[m[0] for m in PRIMITIVE_MISTAKES])
def test_primitive_mistakes_name_the_primitive(mistake, error, message):
    with pytest.raises(error, match=message):
        mistake()


@pytest.mark.parametrize("groups,dynamic", [(1, False), (1, True), (2, True)])
def test_a_narrow_weight_gradient_is_dot_products_of_rows(groups, dynamic):
    """Weight gradients with fewer than 32 columns per group (here 1x5x5 and 2x3x3) and many
    output positions, per image: dot products of im2col rows (dialects/ops/conv.py
    _dot_rows), against the float64 gradient of sum(conv(x, w) * v)."""
    rng = np.random.default_rng(groups)
    c, kernel = (1, 5) if groups == 1 else (4, 3)
    x = rng.standard_normal((6, c, 12, 12))
    w = rng.standard_normal((4, c // groups, kernel, kernel))
    v = rng.standard_normal(conv_ref(x, w, None, (1, 1), (1, 1), (0, 0), (0, 0), groups).shape)

    def f(x, w, v):
        return ops.reduce_sum(ops.conv2d(x, w, groups=groups) * v)
    signature = (ms.Tensor(shape=(None, c, 12, 12), dtype=ms.float64),
                 ms.Tensor(shape=w.shape, dtype=ms.float64),
                 ms.Tensor(shape=(None,) + v.shape[1:], dtype=ms.float64)) if dynamic else None
    grad = ms.jit(ms.grad(f, grad_position=1), input_signature=signature)
    got = grad(ms.Tensor(x), ms.Tensor(w), ms.Tensor(v)).asnumpy()
    cg, og = c // groups, w.shape[0] // groups
    want = np.zeros_like(w)
    for g in range(groups):
        xs, vs = x[:, g * cg:(g + 1) * cg], v[:, g * og:(g + 1) * og]
        for i in range(kernel):
            for j in range(kernel):
                win = xs[:, :, i:i + v.shape[2], j:j + v.shape[3]]
                want[g * og:(g + 1) * og, :, i, j] = np.einsum("nopq,ncpq->oc", vs, win)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_a_dynamic_batch_runs_each_image_in_blocks_of_rows(monkeypatch):
    """An image whose im2col matrix is larger than 3/4 of the L2 (a 64 KiB L2 here: 48 KiB
    against 144 x 256 floats) is multiplied in blocks of output rows, inside the loop over a
    dynamic batch, with the fused bias and ReLU written block by block."""
    import dataclasses
    from mscc.passes import cpu_target
    small = dataclasses.replace(cpu_target.current(), l2_bytes=64 * 1024)
    monkeypatch.setattr(cpu_target, "current", lambda: small)
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((8, 16, 3, 3)) * 0.1).astype(np.float32)
    b = (rng.standard_normal(8) * 0.1).astype(np.float32)
    conv = nn.Conv2d(16, 8, 3, pad_mode="same", has_bias=True, weight_init=ms.Tensor(w),
                     bias_init=ms.Tensor(b))
    f = ms.jit(lambda t: ops.relu(conv(t)), dynamic=1)
    for n in (2, 3):
        x = rng.standard_normal((n, 16, 16, 16)).astype(np.float32)
        want = np.maximum(conv_ref(x.astype(np.float64), w.astype(np.float64),
                                   b.astype(np.float64), (1, 1), (1, 1), (1, 1), (1, 1), 1), 0)
        np.testing.assert_allclose(f(ms.Tensor(x)).asnumpy(), want, rtol=1e-5, atol=1e-5)
    text = ms.jit(lambda t: ops.relu(conv(t))).lower(
        ms.Tensor(np.zeros((2, 16, 16, 16), np.float32))).as_text("linalg")
    # blocks of 4 rows (144 x 64 windows), not the whole image's 144 x 256
    assert "tensor<144x64xf32>" in text and "tensor<144x256xf32>" not in text
