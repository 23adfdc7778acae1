"""Pooling: the ms ops (dialects/ops/pooling.py) and MindSpore's pooling layers and functions
over them, against a direct float64 numpy definition (each window's elements listed one by
one, no padded copy, no stride tricks); gradients against central differences, the
first-maximum rule of max pooling's gradient on ties, the CUDA kernels (emulated) against the
CPU pipeline, and mistakes."""
import numpy as np
import pytest

from gpu_emulation import emulated_executable
from mscc.dialects import dtypes as dt
from mscc.passes.compiler import clone_module, compile_module
from mstest import TOLERANCE, compile_fn, module_of, op, spec

F64 = dt.float64


# ------------------------------------------------------------------ the numpy definition

def out_size(n, k, s, d, lo, hi, ceil_mode):
    """Windows along one dim (PyTorch's and MindSpore's formula)."""
    span = n + lo + hi - (d * (k - 1) + 1)
    if not ceil_mode:
        return span // s + 1
    out = -(-span // s) + 1
    return out - 1 if (out - 1) * s >= n + lo else out


def windows(shape, kernel, stride, dilation, lo, hi, ceil_mode):
    """(output index, per dim: the window's positions, those inside the input)."""
    outs = [out_size(*a, ceil_mode) for a in zip(shape[2:], kernel, stride, dilation, lo, hi)]
    for o in np.ndindex(*outs):
        pos = [[oi * s - l + j * d for j in range(k)]
               for oi, k, s, d, l in zip(o, kernel, stride, dilation, lo)]
        yield o, pos, [[p for p in ps if 0 <= p < n] for ps, n in zip(pos, shape[2:])]


def divisor(pos, inside, shape, lo, hi, count_include_pad, divisor_override):
    if divisor_override:
        return divisor_override
    if count_include_pad:  # positions inside the padded input
        return np.prod([sum(-l <= p < n + h for p in ps)
                        for ps, n, l, h in zip(pos, shape[2:], lo, hi)])
    return np.prod([len(v) for v in inside])


def pool_ref(x, kind, g, count_include_pad=True, divisor_override=0):
    """max or avg pooling of x (N, C, *spatial) with geometry g."""
    outs = [out_size(*a, g.ceil_mode) for a in zip(x.shape[2:], *g.per_dim())]
    y = np.zeros(x.shape[:2] + tuple(outs))
    axes = tuple(range(2, x.ndim))
    for o, pos, inside in windows(x.shape, *g.per_dim(), g.ceil_mode):
        part = x[(slice(None), slice(None)) + np.ix_(*inside)]
        y[(...,) + o] = (part.max(axes) if kind == "max" else part.sum(axes) / divisor(
            pos, inside, x.shape, g.lo, g.hi, count_include_pad, divisor_override))
    return y


def pool_grad_ref(x, dy, kind, g, count_include_pad=True, divisor_override=0):
    """dx: each window's dy to its first maximal element (max) or spread over it (avg)."""
    dx = np.zeros(x.shape)
    for o, pos, inside in windows(x.shape, *g.per_dim(), g.ceil_mode):
        where = (slice(None), slice(None)) + np.ix_(*inside)
        part, d = x[where], dy[(...,) + o]
        if kind == "avg":
            dx[where] += (d / divisor(pos, inside, x.shape, g.lo, g.hi, count_include_pad,
                                      divisor_override))[(...,) + (None,) * (x.ndim - 2)]
            continue
        first = np.argmax(part.reshape(part.shape[:2] + (-1,)), -1)  # the first maximum
        for n, c in np.ndindex(*x.shape[:2]):
            at = np.unravel_index(first[n, c], part.shape[2:])
            dx[(n, c) + tuple(v[i] for v, i in zip(inside, at))] += d[n, c]
    return dx


class Geometry:
    def __init__(self, kernel, stride, lo=None, hi=None, dilation=None, ceil_mode=False):
        r = len(kernel)
        self.kernel, self.stride = tuple(kernel), tuple(stride)
        self.lo, self.hi = tuple(lo or (0,) * r), tuple(hi or (0,) * r)
        self.dilation, self.ceil_mode = tuple(dilation or (1,) * r), ceil_mode

    def per_dim(self):
        return self.kernel, self.stride, self.dilation, self.lo, self.hi

    def attrs(self, kind):
        a = dict(kernel=self.kernel, stride=self.stride, pad_lo=self.lo, pad_hi=self.hi,
                 ceil_mode=self.ceil_mode)
        return {**a, "dilation": self.dilation} if kind == "max" else a

    def __repr__(self):
        return (f"k{self.kernel}s{self.stride}d{self.dilation}p{self.lo}{self.hi}"
                f"{'ceil' if self.ceil_mode else ''}")


# ------------------------------------------------------------------ the ops

OP_CASES = [  # input shape, geometry
    ((2, 3, 7, 6), Geometry((3, 3), (2, 2), (1, 1), (1, 1))),
    ((2, 3, 7, 6), Geometry((3, 2), (2, 1), (1, 0), (0, 1), ceil_mode=True)),
    ((2, 2, 8, 8), Geometry((2, 2), (2, 2))),
    ((2, 2, 8, 7), Geometry((3, 3), (1, 2), (1, 1), (1, 1), ceil_mode=True)),
    ((2, 2, 5, 5), Geometry((1, 1), (3, 2))),                    # stride beyond the kernel
    ((1, 2, 9), Geometry((4,), (3,), (2,), (2,), dilation=(2,), ceil_mode=True)),
    ((2, 1, 10), Geometry((3,), (1,), (0,), (2,), dilation=(3,))),
    ((1, 2, 5, 4, 6), Geometry((2, 3, 2), (2, 1, 3), (1, 1, 0), (0, 1, 1), ceil_mode=True)),
    ((1, 1, 6, 7), Geometry((2, 3), (2, 2), (1, 1), (1, 0), dilation=(2, 1))),
]


def _avg_attrs(g, include, override):
    return {**g.attrs("avg"), "count_include_pad": include, "divisor_override": override}


@pytest.mark.parametrize("shape,g", OP_CASES, ids=[f"{s}-{g}" for s, g in OP_CASES])
def test_ops_match_the_numpy_definition(shape, g):
    """Forward and gradient ops, max and avg (every count_include_pad/divisor choice)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    ym = pool_ref(x, "max", g)
    dym = rng.standard_normal(ym.shape)
    exe = compile_fn([spec(shape, F64), spec(ym.shape, F64)], lambda a, d: [
        op("ms.max_pool", a, **g.attrs("max")),
        op("ms.max_pool_grad", a, op("ms.max_pool", a, **g.attrs("max")), d, **g.attrs("max"))])
    y, dx = exe(x, dym)
    np.testing.assert_array_equal(y, ym)
    np.testing.assert_allclose(dx, pool_grad_ref(x, dym, "max", g), rtol=1e-13)
    if g.dilation != (1,) * len(g.kernel):
        return  # (avg pooling has no dilation)
    for include, override in ((True, 0), (False, 0), (True, 5)):
        ya = pool_ref(x, "avg", g, include, override)
        dya = rng.standard_normal(ya.shape)
        attrs = _avg_attrs(g, include, override)
        exe = compile_fn([spec(shape, F64), spec(ya.shape, F64)], lambda a, d: [
            op("ms.avg_pool", a, **attrs), op("ms.avg_pool_grad", d, input_shape=shape, **attrs)])
        y, dx = exe(x, dya)
        np.testing.assert_allclose(y, ya, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(dx, pool_grad_ref(x, dya, "avg", g, include, override),
                                   rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("dtype", [dt.float32, dt.float16, dt.bfloat16, dt.int32, dt.int8,
                                   dt.uint8, dt.uint64], ids=lambda d: d.name)
def test_max_pool_dtypes(dtype):
    """Padding is below every element: -inf, or the integer type's minimum."""
    g = Geometry((3, 2), (2, 2), (1, 1), (1, 1), ceil_mode=True)
    x = np.random.default_rng(1).integers(-50, 50, (2, 2, 5, 6))
    if dtype.kind == "uint":
        x = x + 50
    x = x.astype(dtype.np)
    exe = compile_fn([spec(x.shape, dtype)], lambda a: op("ms.max_pool", a, **g.attrs("max")))
    got, = exe(x)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got.astype(np.float64), pool_ref(x.astype(np.float64), "max", g))


@pytest.mark.parametrize("dtype", dt.FLOATS, ids=lambda d: d.name)
def test_avg_pool_float_dtypes(dtype):
    """Half floats accumulate in float32: the result within the dtype's rounding."""
    g = Geometry((3, 3), (2, 2), (1, 1), (1, 1))
    x = np.random.default_rng(2).standard_normal((2, 3, 7, 7)).astype(dtype.np)
    attrs = _avg_attrs(g, False, 0)
    exe = compile_fn([spec(x.shape, dtype)], lambda a: op("ms.avg_pool", a, **attrs))
    got, = exe(x)
    np.testing.assert_allclose(got.astype(np.float64),
                               pool_ref(x.astype(np.float64), "avg", g, False),
                               **TOLERANCE[dtype.name])


TIES = [((2, 2, 6, 5), Geometry((3, 3), (1, 1), (1, 1), (1, 1))),        # overlapping windows
        ((1, 1, 7, 7), Geometry((2, 3), (2, 2), (1, 0), (0, 1), ceil_mode=True)),
        ((1, 1, 4, 4, 4), Geometry((2, 2, 2), (1, 2, 1), (0, 1, 0), (1, 0, 1)))]


@pytest.mark.parametrize("shape,g", TIES, ids=[str(s) for s, _ in TIES])
def test_max_pool_gradient_goes_to_the_first_maximum(shape, g):
    """Inputs of a few values (ties in most windows) and a NaN: each window's dy goes to its
    first maximal element only (numpy's argmax: the first NaN where there is one), and
    max_pool_gather reads there (it is the adjoint of max_pool_grad)."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, shape).astype(np.float64)
    x.flat[3] = np.nan
    a = g.attrs("max")
    ym = pool_ref(x, "max", g)
    dy, v = rng.standard_normal(ym.shape), rng.standard_normal(shape)
    exe = compile_fn([spec(shape, F64), spec(ym.shape, F64), spec(shape, F64)],
                     lambda t, d, w: [op("ms.max_pool_grad", t, op("ms.max_pool", t, **a), d, **a),
                                      op("ms.max_pool_gather", t, op("ms.max_pool", t, **a), w,
                                         **a)])
    dx, picked = exe(x, dy, v)
    want = pool_grad_ref(x, dy, "max", g)
    np.testing.assert_allclose(dx, want, rtol=1e-13)
    np.testing.assert_allclose(dx.sum(), dy.sum(), rtol=1e-12)  # one element per window
    np.testing.assert_allclose(np.sum(picked * dy), np.sum(v * dx), rtol=1e-12)


def test_gradient_then_elementwise_on_row_tiles():
    """A gather-form gradient followed by an elementwise op, wide enough for the CPU's
    row-tiling pass: the gradient reads dy at absolute rows, so it stays untiled."""
    g = Geometry((2, 2), (2, 2))
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 4, 16, 16))
    dy = rng.standard_normal((4, 4, 8, 8))
    a = g.attrs("max")
    exe = compile_fn([spec(x.shape, F64), spec(dy.shape, F64)], lambda t, d: op(
        "ms.mul", op("ms.max_pool_grad", t, op("ms.max_pool", t, **a), d, **a), t))
    got, = exe(x, dy)
    np.testing.assert_allclose(got, pool_grad_ref(x, dy, "max", g) * x, rtol=1e-13)


def _training_like(shape, gm, ga):
    """Forward and backward of both poolings, as a training step has them."""
    am, aa = gm.attrs("max"), _avg_attrs(ga, False, 0)
    ym, ya = pool_ref(np.zeros(shape), "max", gm), pool_ref(np.zeros(shape), "avg", ga, False)

    def body(x, dym, dya, v):
        y = op("ms.max_pool", x, **am)
        return [y, op("ms.avg_pool", x, **aa), op("ms.max_pool_grad", x, y, dym, **am),
                op("ms.avg_pool_grad", dya, input_shape=shape, **aa),
                op("ms.max_pool_gather", x, y, v, **am)]
    return [spec(shape, "float32"), spec(ym.shape, "float32"), spec(ya.shape, "float32"),
            spec(shape, "float32")], body


def test_cuda_kernels_match_the_cpu_pipeline():
    """The CUDA pipeline's kernels (emulated on the CPU: test/python/gpu_emulation.py) give
    the CPU pipeline's results for the forward and gradient ops."""
    specs, body = _training_like((2, 3, 9, 8), Geometry((3, 3), (2, 2), (1, 1), (1, 1),
                                                        ceil_mode=True),
                                 Geometry((3, 2), (2, 2), (1, 0), (1, 1)))
    module = module_of(specs, body)
    rng = np.random.default_rng(5)
    args = [rng.standard_normal(s.shape).astype(np.float32) for s in specs]
    cpu = compile_module(clone_module(module), "f")
    gpu = emulated_executable(clone_module(module), "f")
    for i, (want, got) in enumerate(zip(cpu(*args), gpu(*args))):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"output #{i}")


# ------------------------------------------------------------------ the layers and functions

import mscc as ms  # noqa: E402
from mscc import nn, ops  # noqa: E402


def same_pads(sizes, kernel, stride):
    """TensorFlow's SAME: output ceil(n / s), the odd padding element at the end."""
    lo, hi = [], []
    for n, k, s in zip(sizes, kernel, stride):
        total = max((-(-n // s) - 1) * s + k - n, 0)
        lo.append(total // 2)
        hi.append(total - total // 2)
    return tuple(lo), tuple(hi)


class Case:
    """A layer or function `make()`, its input shape and what it computes: pooling `kind`
    with Geometry g (None: computed from "same" padding, `same` = (kernel, stride))."""

    def __init__(self, id, make, shape, kind, g=None, same=None, include=True, override=0,
                 nhwc=False, functional=False):
        self.id, self.make, self.shape, self.kind = id, make, shape, kind
        self.g, self.same, self.include, self.override = g, same, include, override
        self.nhwc, self.functional = nhwc, functional

    def ref(self, x):
        batched = x if len(x.shape) == len(self.shape) and not self.unbatched else x[None]
        if self.nhwc:
            batched = np.moveaxis(batched, -1, 1)
        g = self.g
        if g is None:
            k, s = self.same
            g = Geometry(k, s, *same_pads(batched.shape[2:], k, s))
        y = pool_ref(batched, self.kind, g, self.include and self.same is None, self.override)
        if self.nhwc:
            y = np.moveaxis(y, 1, -1)
        return y[0] if self.unbatched else y

    @property
    def unbatched(self):
        return self.id.endswith("unbatched")


G = Geometry
LAYERS = [
    Case("MaxPool1d-valid", lambda: nn.MaxPool1d(3, 2), (2, 3, 11), "max", G((3,), (2,))),
    Case("MaxPool1d-same", lambda: nn.MaxPool1d(4, 3, "same"), (2, 3, 10), "max",
         same=((4,), (3,))),
    Case("MaxPool1d-pad-dilated-ceil", lambda: nn.MaxPool1d(3, 2, "pad", 1, 2, ceil_mode=True),
         (2, 2, 12), "max", G((3,), (2,), (1,), (1,), (2,), True)),
    Case("MaxPool2d-defaults", lambda: nn.MaxPool2d(), (2, 3, 5, 4), "max", G((1, 1), (1, 1))),
    Case("MaxPool2d-same", lambda: nn.MaxPool2d(3, 2, "same"), (2, 3, 9, 8), "max",
         same=((3, 3), (2, 2))),
    Case("MaxPool2d-PAD-ceil", lambda: nn.MaxPool2d((3, 2), (2, 1), "PAD", (1, 0),
                                                    ceil_mode=True),
         (2, 3, 7, 6), "max", G((3, 2), (2, 1), (1, 0), (1, 0), ceil_mode=True)),
    Case("MaxPool2d-pad-dilated", lambda: nn.MaxPool2d(3, 1, "pad", 1, (1, 2)), (1, 2, 6, 9),
         "max", G((3, 3), (1, 1), (1, 1), (1, 1), (1, 2))),
    Case("MaxPool2d-NHWC", lambda: nn.MaxPool2d(2, 2, data_format="NHWC"), (2, 6, 8, 3),
         "max", G((2, 2), (2, 2)), nhwc=True),
    Case("MaxPool2d-unbatched", lambda: nn.MaxPool2d(2), (3, 6, 5), "max", G((2, 2), (1, 1))),
    Case("MaxPool3d-valid", lambda: nn.MaxPool3d(2, 2), (1, 2, 5, 6, 4), "max",
         G((2, 2, 2), (2, 2, 2))),
    Case("MaxPool3d-pad-ceil", lambda: nn.MaxPool3d((2, 3, 2), 1, "pad", (1, 1, 0),
                                                    ceil_mode=True),
         (1, 2, 4, 5, 3), "max", G((2, 3, 2), (1, 1, 1), (1, 1, 0), (1, 1, 0), ceil_mode=True)),
    Case("MaxPool3d-same", lambda: nn.MaxPool3d(3, 2, "same"), (1, 1, 5, 4, 6), "max",
         same=((3, 3, 3), (2, 2, 2))),
    Case("AvgPool1d-valid", lambda: nn.AvgPool1d(3, 2), (2, 3, 11), "avg", G((3,), (2,))),
    Case("AvgPool1d-pad-exclude-ceil", lambda: nn.AvgPool1d(4, 3, "pad", 2, True, False),
         (2, 3, 10), "avg", G((4,), (3,), (2,), (2,), ceil_mode=True), include=False),
    Case("AvgPool1d-same", lambda: nn.AvgPool1d(3, 2, "same"), (2, 2, 8), "avg",
         same=((3,), (2,))),
    Case("AvgPool1d-unbatched", lambda: nn.AvgPool1d(2, 2), (3, 8), "avg", G((2,), (2,))),
    Case("AvgPool2d-valid", lambda: nn.AvgPool2d(3, 3), (2, 3, 9, 8), "avg",
         G((3, 3), (3, 3))),
    Case("AvgPool2d-same", lambda: nn.AvgPool2d(3, 2, "same"), (2, 3, 9, 8), "avg",
         same=((3, 3), (2, 2))),
    Case("AvgPool2d-pad-ceil", lambda: nn.AvgPool2d(3, 2, "pad", 1, ceil_mode=True),
         (2, 3, 8, 7), "avg", G((3, 3), (2, 2), (1, 1), (1, 1), ceil_mode=True)),
    Case("AvgPool2d-pad-exclude", lambda: nn.AvgPool2d((3, 2), (2, 1), "pad", (1, 1),
                                                       count_include_pad=False),
         (2, 2, 7, 6), "avg", G((3, 2), (2, 1), (1, 1), (1, 1)), include=False),
    Case("AvgPool2d-divisor", lambda: nn.AvgPool2d(4, 1, "pad", 2, divisor_override=5),
         (1, 2, 6, 6), "avg", G((4, 4), (1, 1), (2, 2), (2, 2)), override=5),
    Case("AvgPool2d-NHWC", lambda: nn.AvgPool2d(2, 2, data_format="NHWC"), (2, 6, 8, 3), "avg",
         G((2, 2), (2, 2)), nhwc=True),
    Case("AvgPool3d-valid", lambda: nn.AvgPool3d(2, 2), (1, 2, 5, 6, 4), "avg",
         G((2, 2, 2), (2, 2, 2))),
    Case("AvgPool3d-pad-exclude-ceil", lambda: nn.AvgPool3d(3, 2, "pad", (1, 1, 0), True,
                                                            False),
         (1, 2, 5, 6, 4), "avg", G((3, 3, 3), (2, 2, 2), (1, 1, 0), (1, 1, 0), ceil_mode=True),
         include=False),
    Case("AvgPool3d-divisor", lambda: nn.AvgPool3d(2, 1, divisor_override=3), (1, 1, 3, 4, 3),
         "avg", G((2, 2, 2), (1, 1, 1)), override=3),
    # the functions (ops.avg_pool2d's padding is (top, bottom, left, right))
    Case("ops.max_pool2d", lambda: lambda x: ops.max_pool2d(x, 3, 2, 1, ceil_mode=True),
         (2, 2, 8, 7), "max", G((3, 3), (2, 2), (1, 1), (1, 1), ceil_mode=True)),
    Case("ops.max_pool3d", lambda: lambda x: ops.max_pool3d(x, (2, 2, 3), padding=(0, 1, 1)),
         (1, 2, 4, 5, 6), "max", G((2, 2, 3), (2, 2, 3), (0, 1, 1), (0, 1, 1))),
    Case("ops.avg_pool1d", lambda: lambda x: ops.avg_pool1d(x, 3, 2, (1, 2), True, False),
         (2, 3, 9), "avg", G((3,), (2,), (1,), (2,), ceil_mode=True), include=False),
    Case("ops.avg_pool2d", lambda: lambda x: ops.avg_pool2d(x, 3, 2, (1, 0, 1, 1), True),
         (2, 2, 7, 8), "avg", G((3, 3), (2, 2), (1, 1), (0, 1), ceil_mode=True)),
    Case("ops.avg_pool2d-divisor", lambda: lambda x: ops.avg_pool2d(x, 2, 1, 1,
                                                                    divisor_override=4),
         (1, 2, 5, 5), "avg", G((2, 2), (1, 1), (1, 1), (1, 1)), override=4),
    Case("ops.avg_pool3d", lambda: lambda x: ops.avg_pool3d(x, 2, 2, count_include_pad=False),
         (1, 2, 4, 5, 6), "avg", G((2, 2, 2), (2, 2, 2)), include=False),
]


def _run(case, x, mode):
    """The layer or function on x: a Cell in the given mode; a function eagerly (PyNative)
    or under ms.jit (graph)."""
    fn = case.make()
    if isinstance(fn, nn.Cell) or mode == ms.PYNATIVE_MODE:
        return fn(ms.Tensor(x))
    return ms.jit(fn)(ms.Tensor(x))


@pytest.mark.parametrize("case", LAYERS, ids=lambda c: c.id)
def test_layers_and_functions_match_numpy(mode, case):
    x = np.random.default_rng(6).standard_normal(case.shape)
    got = _run(case, x, mode).asnumpy()
    want = case.ref(x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


def adaptive_ref(x, kind, output_size):
    """Output cell i pools [floor(i * n / out), ceil((i + 1) * n / out)) along each dim."""
    sizes = x.shape[2:]
    out = [n if o is None else o for o, n in zip(output_size, sizes)]
    y = np.zeros(x.shape[:2] + tuple(out))
    for idx in np.ndindex(*out):
        box = tuple(slice(i * n // o, -(-(i + 1) * n // o)) for i, n, o in zip(idx, sizes, out))
        part = x[(slice(None), slice(None)) + box]
        axes = tuple(range(2, x.ndim))
        y[(...,) + idx] = part.max(axes) if kind == "max" else part.mean(axes)
    return y


ADAPTIVE = [  # (id, make, input shape, kind, output size per dim)
    ("AdaptiveAvgPool1d-divides", lambda: nn.AdaptiveAvgPool1d(3), (2, 3, 9), "avg", (3,)),
    ("AdaptiveAvgPool1d", lambda: nn.AdaptiveAvgPool1d(4), (2, 3, 10), "avg", (4,)),
    ("AdaptiveAvgPool2d-None", lambda: nn.AdaptiveAvgPool2d((3, None)), (2, 3, 7, 6), "avg",
     (3, None)),
    ("AdaptiveAvgPool2d-divides", lambda: nn.AdaptiveAvgPool2d(2), (2, 3, 8, 6), "avg",
     (2, 2)),
    ("AdaptiveAvgPool2d-mixed", lambda: nn.AdaptiveAvgPool2d((3, 5)), (1, 2, 7, 10), "avg",
     (3, 5)),
    ("AdaptiveAvgPool2d-larger", lambda: nn.AdaptiveAvgPool2d((4, 3)), (1, 2, 3, 3), "avg",
     (4, 3)),
    # (larger than the input: windows of one or two elements, two gathers)
    ("AdaptiveMaxPool2d-larger", lambda: nn.AdaptiveMaxPool2d((7, 8)), (1, 2, 3, 5), "max",
     (7, 8)),
    ("ops.adaptive_avg_pool1d-larger", lambda: lambda x: ops.adaptive_avg_pool1d(x, 11),
     (2, 2, 4), "avg", (11,)),
    ("AdaptiveAvgPool3d", lambda: nn.AdaptiveAvgPool3d((2, 4, None)), (1, 2, 5, 6, 4), "avg",
     (2, 4, None)),
    ("AdaptiveMaxPool1d", lambda: nn.AdaptiveMaxPool1d(4), (2, 3, 10), "max", (4,)),
    ("AdaptiveMaxPool2d", lambda: nn.AdaptiveMaxPool2d((2, 3)), (2, 3, 7, 6), "max", (2, 3)),
    ("AdaptiveMaxPool3d", lambda: nn.AdaptiveMaxPool3d(2), (1, 1, 4, 5, 6), "max", (2, 2, 2)),
    ("ops.adaptive_avg_pool1d", lambda: lambda x: ops.adaptive_avg_pool1d(x, 3), (2, 2, 7),
     "avg", (3,)),
    ("ops.adaptive_avg_pool2d", lambda: lambda x: ops.adaptive_avg_pool2d(x, (2, 3)),
     (2, 2, 5, 7), "avg", (2, 3)),
    ("ops.adaptive_avg_pool3d", lambda: lambda x: ops.adaptive_avg_pool3d(x, (1, 2, 3)),
     (1, 2, 3, 4, 5), "avg", (1, 2, 3)),
    ("ops.adaptive_max_pool1d", lambda: lambda x: ops.adaptive_max_pool1d(x, 3), (2, 2, 8),
     "max", (3,)),
    ("ops.adaptive_max_pool2d", lambda: lambda x: ops.adaptive_max_pool2d(x, (None, 2)),
     (2, 3, 3, 3), "max", (None, 2)),
    ("ops.adaptive_max_pool3d", lambda: lambda x: ops.adaptive_max_pool3d(x, 2),
     (1, 2, 4, 3, 5), "max", (2, 2, 2)),
]


@pytest.mark.parametrize("id,make,shape,kind,out", ADAPTIVE, ids=[a[0] for a in ADAPTIVE])
def test_adaptive_pooling_matches_numpy(mode, id, make, shape, kind, out):
    x = np.random.default_rng(7).standard_normal(shape)
    case = Case(id, make, shape, kind)
    got = _run(case, x, mode).asnumpy()
    np.testing.assert_allclose(got, adaptive_ref(x, kind, out), rtol=1e-13, atol=1e-15)


def test_an_adaptive_output_far_larger_than_the_input_is_refused_at_once():
    """2**40 outputs from 4 inputs: the memory for its indices is refused (it built a slice
    per output index, a loop of 2**40: the API fuzzer's call hung)."""
    x = ms.Tensor(np.ones((2, 3, 4), np.float32))
    with pytest.raises(MemoryError):
        ops.adaptive_max_pool1d(x, 2**40)


def test_adaptive_pooling_of_an_unbatched_input(mode):
    """MindSpore's AdaptiveMaxPool2d example: (C, H, W) to (None, 2)."""
    x = np.tile(np.arange(1.0, 10.0).reshape(1, 3, 3), (3, 1, 1))
    got = nn.AdaptiveMaxPool2d((None, 2))(ms.Tensor(x)).asnumpy()
    np.testing.assert_array_equal(got, np.tile([[2.0, 3.0], [5.0, 6.0], [8.0, 9.0]], (3, 1, 1)))


def _argmax_ref(x, g):
    """Each window's first maximum as a position in its (n, c) plane."""
    outs = [out_size(*a, g.ceil_mode) for a in zip(x.shape[2:], *g.per_dim())]
    idx = np.zeros(x.shape[:2] + tuple(outs), np.int64)
    for o, _, inside in windows(x.shape, *g.per_dim(), g.ceil_mode):
        part = x[(slice(None), slice(None)) + np.ix_(*inside)]
        first = np.argmax(part.reshape(part.shape[:2] + (-1,)), -1)
        for n, c in np.ndindex(*x.shape[:2]):
            at = np.unravel_index(first[n, c], part.shape[2:])
            idx[(n, c) + o] = np.ravel_multi_index(
                tuple(v[i] for v, i in zip(inside, at)), x.shape[2:])
    return idx


INDICES = [  # make, input shape, geometry, dtype
    (lambda: nn.MaxPool2d(3, 2, "pad", 1, return_indices=True), (2, 2, 7, 6),
     G((3, 3), (2, 2), (1, 1), (1, 1)), np.float32),
    (lambda: nn.MaxPool1d(2, 2, "pad", 1, return_indices=True, ceil_mode=True), (1, 3, 7),
     G((2,), (2,), (1,), (1,), ceil_mode=True), np.float64),
    (lambda: nn.MaxPool3d(2, 1, "pad", 0, 2, return_indices=True), (1, 1, 5, 5, 5),
     G((2, 2, 2), (1, 1, 1), dilation=(2, 2, 2)), np.float16),
    (lambda: lambda x: ops.max_pool2d(x, 2, return_indices=True), (1, 2, 6, 4),
     G((2, 2), (2, 2)), np.int32),
    (lambda: nn.AdaptiveMaxPool2d(3, return_indices=True), (1, 2, 6, 9),
     G((2, 3), (2, 3)), np.float32),
]


@pytest.mark.parametrize("make,shape,g,dtype", INDICES, ids=range(len(INDICES)))
def test_return_indices_are_the_first_maxima(mode, make, shape, g, dtype):
    """(output, argmax int64): positions in each (n, c) plane, ties to the first."""
    x = np.random.default_rng(8).integers(-4, 5, shape).astype(dtype)  # (ties)
    y, idx = _run(Case("indices", make, shape, "max"), x, mode)
    assert idx.dtype is ms.int64
    np.testing.assert_array_equal(y.asnumpy().astype(np.float64),
                                  pool_ref(x.astype(np.float64), "max", g))
    np.testing.assert_array_equal(idx.asnumpy(), _argmax_ref(x.astype(np.float64), g))


def _central_difference(f, x, eps=1e-6):
    fd = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        fd[idx] = (f(up) - f(down)) / (2 * eps)
    return fd


GRADIENT_CASES = [c for c in LAYERS if c.id in {
    "MaxPool1d-pad-dilated-ceil", "MaxPool2d-same", "MaxPool2d-PAD-ceil", "MaxPool2d-NHWC",
    "MaxPool3d-pad-ceil", "AvgPool1d-pad-exclude-ceil", "AvgPool2d-pad-ceil",
    "AvgPool2d-divisor", "AvgPool3d-pad-exclude-ceil", "ops.avg_pool2d", "MaxPool2d-unbatched"}]
GRADIENT_CASES += [Case(a[0], a[1], a[2], a[3]) for a in ADAPTIVE if a[0] in {
    "AdaptiveAvgPool2d-mixed", "AdaptiveMaxPool2d", "AdaptiveAvgPool1d",
    "AdaptiveMaxPool2d-larger", "ops.adaptive_avg_pool1d-larger"}]


@pytest.mark.parametrize("case", GRADIENT_CASES, ids=lambda c: c.id)
def test_gradients_match_central_differences(mode, case):
    """Random inputs have no ties: max pooling's gradient is exact there."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal(case.shape)
    fn = case.make()
    w = ms.Tensor(rng.standard_normal(_run(case, x, mode).shape))

    def loss(v):
        return ops.reduce_sum(fn(v) * w)
    compiled = loss if mode == ms.PYNATIVE_MODE else ms.jit(loss)
    grad = ms.grad(loss)(ms.Tensor(x)).asnumpy()
    fd = _central_difference(lambda v: float(compiled(ms.Tensor(v)).asnumpy()), x)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)


def test_a_pooling_layer_is_one_op_each_way():
    """Forward and backward of a 3x3 max and avg pooling: one ms op each way (the old
    composition took one strided slice per kernel offset, nine here). Without the value the
    avg pooling's forward goes: its gradient does not read it, and nothing else does."""
    x = ms.Tensor(np.random.default_rng(10).standard_normal((2, 3, 9, 8)).astype(np.float32))
    mx, avg = nn.MaxPool2d(3, 2, "same"), nn.AvgPool2d(3, 2, "pad", 1)

    def loss(v):
        return ops.reduce_sum(mx(v)) + ops.reduce_sum(avg(v))
    for grad, avg_forward in ((ms.value_and_grad, 1), (ms.grad, 0)):
        text = ms.jit(grad(loss)).lower(x).as_text("ms-opt")
        for name, count in (("ms.max_pool", 1), ("ms.max_pool_grad", 1),
                            ("ms.avg_pool", avg_forward), ("ms.avg_pool_grad", 1),
                            ("ms.strided_slice", 0)):
            assert text.count(f'"{name}"') == count, (grad.__name__, name)


def test_max_pool_of_ties_in_a_network_sends_each_window_once(mode):
    """A constant image: every window's maximum is tied; the gradient of the sum is each
    element's count of windows starting there (the first element of every window)."""
    x = ms.Tensor(np.ones((1, 1, 4, 4)))
    pool = nn.MaxPool2d(2, 1)
    grad = ms.grad(lambda v: ops.reduce_sum(pool(v)))(x).asnumpy()[0, 0]
    want = np.zeros((4, 4))
    want[:3, :3] = 1.0
    np.testing.assert_array_equal(grad, want)


# ------------------------------------------------------------------ mistakes

MISTAKES = [  # (make, input shape, exception, words the message must hold)
    (lambda: nn.MaxPool2d(2, pad_mode="full"), None, ValueError, ("MaxPool2d", "pad_mode")),
    (lambda: nn.AvgPool1d(2, pad_mode=3), None, ValueError, ("AvgPool1d", "pad_mode")),
    (lambda: nn.MaxPool2d(2, padding=1), None, ValueError, ("MaxPool2d", "pad_mode is 'pad'")),
    (lambda: nn.MaxPool2d(2, ceil_mode=True), None, ValueError, ("MaxPool2d", "ceil_mode")),
    (lambda: nn.AvgPool2d(2, padding=1), None, ValueError, ("AvgPool2d", "padding")),
    (lambda: nn.AvgPool2d(2, divisor_override=0), None, ValueError,
     ("AvgPool2d", "divisor_override")),
    (lambda: nn.MaxPool2d(0), None, ValueError, ("MaxPool2d", "kernel_size")),
    (lambda: nn.MaxPool3d((2, 2)), None, ValueError, ("MaxPool3d", "kernel_size")),
    (lambda: nn.AvgPool2d(2, pad_mode="pad", padding=(1, 2, 3)), None, ValueError,
     ("AvgPool2d", "padding")),
    (lambda: nn.MaxPool2d(2, 1, "pad", -1), None, ValueError, ("MaxPool2d", "padding")),
    (lambda: nn.AvgPool2d(2, data_format="NCDHW"), None, ValueError,
     ("AvgPool2d", "data_format")),
    (lambda: nn.AdaptiveAvgPool2d((2, 0)), None, ValueError,
     ("AdaptiveAvgPool2d", "output_size")),
    (lambda: nn.AdaptiveMaxPool2d((2, 3, 4)), None, ValueError,
     ("AdaptiveMaxPool2d", "output_size")),
    # at the call: the kernel too large, the wrong rank, indices of uneven windows
    (lambda: nn.MaxPool2d(5), (1, 1, 4, 4), ValueError, ("MaxPool2d", "larger than the padded")),
    (lambda: nn.AvgPool2d(4, 1, "pad", 1), (1, 1, 1, 1), ValueError,
     ("AvgPool2d", "larger than the padded")),
    (lambda: nn.MaxPool2d(2), (4, 4), ValueError, ("MaxPool2d", "rank 4")),
    (lambda: nn.AvgPool1d(2), (1, 2, 3, 4), ValueError, ("AvgPool1d", "rank 3")),
    (lambda: nn.AvgPool2d(2), (1, 1, 4, 4), TypeError, ("AvgPool2d", "int32")),
    (lambda: nn.AdaptiveMaxPool2d(3, return_indices=True), (1, 1, 7, 7), NotImplementedError,
     ("AdaptiveMaxPool2d", "return_indices")),
    (lambda: lambda x: ops.max_pool2d(x, 3, 1, 3), (1, 1, 5, 5), ValueError,
     ("max_pool2d", "padding")),
    (lambda: lambda x: ops.avg_pool2d(x, 2, ceil_mode=1), (1, 1, 5, 5), TypeError,
     ("avg_pool2d", "ceil_mode")),
]


@pytest.mark.parametrize("make,shape,exc,words", MISTAKES, ids=range(len(MISTAKES)))
def test_mistakes_are_exceptions_naming_the_layer(mode, make, shape, exc, words):
    with pytest.raises(exc) as info:
        layer = make()
        if shape is not None:
            dtype = np.int32 if words[-1] == "int32" else np.float32
            _run(Case("mistake", lambda: layer, shape, "max"), np.ones(shape, dtype), mode)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
