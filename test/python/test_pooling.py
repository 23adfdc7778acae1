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
