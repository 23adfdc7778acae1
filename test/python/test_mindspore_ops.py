"""MindSpore's functional ops and Tensor methods (pyfront/ops.py, pyfront/tensor.py) against
numpy: values (float64 references), result dtypes and shapes, eagerly (PyNative) and under
ms.jit (graph mode), MindSpore's documented errors, and gradients of the differentiable ones
against central differences of the float64 reference.

One table: each case names the op, builds it from Tensors, and gives the numpy reference.
"""
import math
from dataclasses import dataclass, field

import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mstest import check_weighted_gradient  # noqa: E402

F32 = np.float32


def _inputs(kinds, rng):
    """Arrays by kind: "f" uniform(-2, 2) float32, "unit" (-0.9, 0.9), "pos" (0.5, 2),
    "bool", "int" (int32 in [-3, 3]), or an array as it is."""
    out = []
    for shape, kind in kinds:
        if isinstance(kind, np.ndarray):
            out.append(kind)
        elif kind == "bool":
            out.append(rng.random(shape) < 0.5)
        elif kind == "int":
            out.append(rng.integers(-3, 4, shape).astype(np.int32))
        else:
            lo, hi = {"f": (-2, 2), "unit": (-0.9, 0.9), "pos": (0.5, 2)}[kind]
            out.append(rng.uniform(lo, hi, shape).astype(F32))
    return out


@dataclass
class Case:
    id: str
    fn: object                     # (*Tensors) -> Tensor or tuple of Tensors (ms ops)
    ref: object                    # (*float64/int/bool arrays) -> array or tuple (numpy)
    kinds: list                    # [(shape, kind)] per input (see _inputs)
    dtypes: tuple = ()             # expected numpy dtype per output (default: input 0's)
    grad: bool = False             # differentiable in input 0
    tol: dict = field(default_factory=lambda: dict(rtol=2e-5, atol=2e-6))


def _f64(a):
    return a.astype(np.float64) if a.dtype.kind == "f" else a


def _x(shape=(3, 4), kind="f"):
    return [(shape, kind)]


SPECIAL = np.array([[0.0, -1.5, np.nan, np.inf], [-np.inf, 2.5, -0.0, 1e30]], F32)
UNARY = [  # name, numpy, domain
    ("tan", np.tan, "unit"), ("asin", np.arcsin, "unit"), ("acos", np.arccos, "unit"),
    ("atan", np.arctan, "f"), ("exp2", np.exp2, "f"), ("log2", np.log2, "pos"),
    ("log1p", np.log1p, "pos"), ("expm1", np.expm1, "f"), ("reciprocal", np.reciprocal, "pos"),
    ("square", np.square, "f"), ("sin", np.sin, "f"), ("cos", np.cos, "f"),
]


def _softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _erf(x):
    return np.vectorize(math.erf)(x)


ACTIVATIONS = [
    ("silu", ops.silu, lambda x: x / (1 + np.exp(-x))),
    ("gelu", ops.gelu, lambda x: x / 2 * (1 + _erf(x / np.sqrt(2)))),
    ("gelu-tanh", lambda x: ops.gelu(x, approximate="tanh"),
     lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    ("softplus", ops.softplus, _softplus),
    ("softplus-beta", lambda x: ops.softplus(x, beta=2, threshold=3),
     lambda x: _softplus(x, 2.0, 3.0)),
    ("elu", lambda x: ops.elu(x, alpha=0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    ("leaky_relu", ops.leaky_relu, lambda x: np.where(x >= 0, x, 0.2 * x)),
    ("hardswish", ops.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("relu6", ops.relu6, lambda x: np.clip(x, 0, 6)),
    ("mish", ops.mish, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    ("softsign", ops.softsign, lambda x: x / (1 + np.abs(x))),
]


def _topk(x, k, axis=-1, largest=True):
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis), idx.astype(np.int32)


def _split(x, sizes, axis):
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis))


TIES = np.array([[1.0, 3.0, 3.0, -1.0, 3.0], [np.nan, 0.5, 2.0, 0.5, -np.inf]], F32)

CASES = [
    *(Case(n, getattr(ops, n), f, _x(kind=k), grad=True) for n, f, k in UNARY),
    *(Case(n, getattr(ops, n), f, _x(), grad=n not in ("floor", "ceil", "round", "sign"))
      for n, f in [("floor", np.floor), ("ceil", np.ceil), ("round", np.round),
                   ("sign", np.sign)]),
    Case("round-halves", ops.round, np.round,
         [((6,), np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3.49], F32))]),
    *(Case(f"{n}-special", getattr(ops, n), f, [((2, 4), SPECIAL)], dtypes=(np.bool_,))
      for n, f in [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)]),
    Case("isnan-int", ops.isnan, np.isnan, _x(kind="int"), dtypes=(np.bool_,)),
    *(Case(n, f, r, _x(), grad=True) for n, f, r in ACTIVATIONS),
    Case("softplus-large", ops.softplus, _softplus,
         [((4,), np.array([-100.0, 19.0, 25.0, 500.0], F32))], grad=True),
    Case("where", ops.where, np.where, [((3, 4), "bool"), ((3, 4), "f"), ((4,), "f")],
         dtypes=(F32,)),
    Case("where-scalar", lambda c, x: ops.where(c, x, 0.0), lambda c, x: np.where(c, x, 0),
         [((3, 4), "bool"), ((3, 4), "f")], dtypes=(F32,)),
    Case("clip_by_value", lambda x: ops.clip_by_value(x, -0.5, 0.7),
         lambda x: np.clip(x, -0.5, 0.7), _x(), grad=True),
    Case("clamp-min", lambda x: ops.clamp(x, min=0.3), lambda x: np.maximum(x, 0.3), _x()),
    Case("clip-tensors", lambda x, lo, hi: ops.clip(x, lo, hi), np.clip,
         [((3, 4), "f"), ((4,), "unit"), ((), np.array(1.0, F32))]),
    Case("split-size", lambda x: ops.split(x, 2, axis=1), lambda x: _split(x, [2, 2, 1], 1),
         _x((3, 5))),
    Case("split-sections", lambda x: ops.split(x, [1, 3], axis=-1),
         lambda x: _split(x, [1, 3], 1), _x()),
    Case("chunk", lambda x: ops.chunk(x, 3, axis=1), lambda x: _split(x, [2, 2, 1], 1),
         _x((3, 5))),
    Case("unstack", lambda x: ops.unstack(x, axis=1), lambda x: tuple(np.moveaxis(x, 1, 0)),
         _x((2, 3, 2))),
    Case("flatten", ops.flatten, lambda x: x.reshape(2, 12), _x((2, 3, 4)), grad=True),
    Case("flatten-dims", lambda x: ops.flatten(x, start_dim=0, end_dim=1),
         lambda x: x.reshape(6, 4), _x((2, 3, 4))),
    Case("flatten-F", lambda x: ops.flatten(x, order="F", start_dim=0),
         lambda x: x.ravel(order="F"), _x((2, 3, 4))),
    Case("flatten-1d", ops.flatten, lambda x: x, _x((5,))),
    Case("cumsum", lambda x: ops.cumsum(x, 1), lambda x: np.cumsum(x, 1), _x(), grad=True),
    Case("cumsum-dtype", lambda x: ops.cumsum(x, -1, dtype=ms.float64),
         lambda x: np.cumsum(x, -1), _x(kind="int"), dtypes=(np.float64,)),
    Case("cumsum-int", lambda x: ops.cumsum(x, 0), lambda x: np.cumsum(x, 0),
         _x(kind="int")),
    Case("topk", lambda x: ops.topk(x, 3), lambda x: _topk(x, 3), _x((3, 6)),
         dtypes=(F32, np.int32), grad=True),
    Case("topk-smallest-dim0", lambda x: ops.topk(x, 2, dim=0, largest=False),
         lambda x: _topk(x, 2, 0, False), _x((4, 3)), dtypes=(F32, np.int32)),
    Case("topk-ties-nan", lambda x: ops.topk(x, 4), lambda x: (
        np.array([[3, 3, 3, 1], [np.nan, 2, 0.5, 0.5]], F32),
        np.array([[1, 2, 4, 0], [0, 2, 1, 3]], np.int32)), [((2, 5), TIES)],
         dtypes=(F32, np.int32)),
    Case("topk-int", lambda x: ops.topk(x, 2), lambda x: _topk(x, 2), _x((3, 5), "int"),
         dtypes=(np.int32, np.int32)),
    Case("sort", ops.sort, lambda x: (np.sort(x, -1), np.argsort(x, -1, kind="stable")
                                      .astype(np.int32)), _x((3, 6)),
         dtypes=(F32, np.int32), grad=True),
    Case("sort-axis0-descending", lambda x: ops.sort(x, 0, descending=True),
         lambda x: (-np.sort(-x, 0), np.argsort(-x, 0, kind="stable").astype(np.int32)),
         _x((5, 3)), dtypes=(F32, np.int32)),
    Case("sort-ties-nan", ops.sort, lambda x: (
        np.array([[-1, 1, 3, 3, 3], [-np.inf, 0.5, 0.5, 2, np.nan]], F32),
        np.array([[3, 0, 1, 2, 4], [4, 1, 3, 2, 0]], np.int32)), [((2, 5), TIES)],
         dtypes=(F32, np.int32)),
    Case("sort-int", ops.sort, lambda x: (np.sort(x, -1), np.argsort(x, -1, kind="stable")
                                          .astype(np.int32)), _x((3, 5), "int"),
         dtypes=(np.int32, np.int32)),
    Case("argsort", lambda x: ops.argsort(x, descending=True),
         lambda x: np.argsort(-x, -1, kind="stable").astype(np.int32), _x((4, 5)),
         dtypes=(np.int32,)),
    Case("Tensor.sort-argsort", lambda x: (*x.sort(0), x.argsort()),
         lambda x: (np.sort(x, 0), np.argsort(x, 0, kind="stable").astype(np.int32),
                    np.argsort(x, -1, kind="stable").astype(np.int32)), _x((3, 4)),
         dtypes=(F32, np.int32, np.int32)),
    Case("masked_fill", lambda x, m: ops.masked_fill(x, m, 5),
         lambda x, m: np.where(m, 5, x), [((3, 4), "f"), ((4,), "bool")], grad=True),
    Case("masked_fill-int", lambda x, m: ops.masked_fill(x, m, 2.7),
         lambda x, m: np.where(m, 2, x), [((3, 4), "int"), ((3, 4), "bool")]),
    Case("pad", lambda x: ops.pad(x, (1, 2, 0, 1), value=-1.0),
         lambda x: np.pad(x, ((0, 1), (1, 2)), constant_values=-1), _x(), grad=True),
    Case("pad-crop", lambda x: ops.pad(x, (-1, 1)), lambda x: np.pad(x[:, 1:], ((0, 0), (0, 1))),
         _x()),
    Case("tril", ops.tril, np.tril, _x((2, 3, 4)), grad=True),
    Case("triu-1", lambda x: ops.triu(x, 1), lambda x: np.triu(x, 1), _x((3, 4))),
    Case("tril--1", lambda x: ops.tril(x, diagonal=-1), lambda x: np.tril(x, -1), _x((4, 3))),
    Case("matmul-vec-vec", ops.matmul, np.matmul, [((4,), "f"), ((4,), "f")], grad=True),
    Case("matmul-mat-vec", ops.matmul, np.matmul, [((3, 4), "f"), ((4,), "f")], grad=True),
    Case("matmul-vec-batch", ops.matmul, np.matmul, [((4,), "f"), ((2, 4, 3), "f")],
         grad=True),
    Case("matmul-batch-broadcast", ops.matmul, np.matmul, [((2, 1, 3, 4), "f"),
                                                           ((5, 4, 2), "f")]),
    Case("matmul-operator-vec", lambda x, y: x @ y, np.matmul, [((3,), "f"), ((3, 2), "f")]),
    Case("norm", ops.norm, np.linalg.norm, _x(), grad=True),
    Case("norm-dim", lambda x: ops.norm(x, dim=1, keepdim=True),
         lambda x: np.linalg.norm(x, axis=1, keepdims=True), _x(), grad=True),
    Case("norm-p3", lambda x: ops.norm(x, 3, dim=0), lambda x: np.linalg.norm(x, 3, axis=0),
         _x(), grad=True),
    Case("norm-inf", lambda x: ops.norm(x, float("inf"), dim=-1),
         lambda x: np.linalg.norm(x, np.inf, axis=-1), _x()),
    Case("norm-0", lambda x: ops.norm(x, 0, dim=1), lambda x: np.linalg.norm(x, 0, axis=1),
         [((2, 3), np.array([[0, 1.5, 0], [2, -1, 3]], F32))]),
    Case("norm-fro", lambda x: ops.norm(x, "fro", dim=(0, 1)),
         lambda x: np.linalg.norm(x, "fro"), _x(), grad=True),
    Case("norm-matrix-1", lambda x: ops.norm(x, 1), lambda x: np.linalg.norm(x, 1), _x()),
    Case("norm-matrix-inf", lambda x: ops.norm(x, float("-inf"), dim=(1, 2)),
         lambda x: np.linalg.norm(x, -np.inf, axis=(1, 2)), _x((2, 3, 4))),
    Case("logsumexp", lambda x: ops.logsumexp(x, 1), lambda x: np.log(np.exp(x).sum(1)),
         _x(), grad=True),
    Case("logsumexp-keep-all", lambda x: ops.logsumexp(x * 40, (0, 1), keep_dims=True),
         lambda x: np.log(np.exp(x * 40).sum(keepdims=True)), _x(), grad=True),
    Case("logsumexp-inf", lambda x: ops.logsumexp(x, -1), lambda x: np.array(
        [-np.inf, np.inf], F32), [((2, 2), np.array([[-np.inf] * 2, [np.inf, 1]], F32))]),
    Case("prod", ops.prod, np.prod, _x(), grad=True),
    Case("prod-axis-zeros", lambda x: ops.prod(x, 1, keep_dims=True),
         lambda x: np.prod(x, 1, keepdims=True),
         [((3, 3), np.array([[0, 1.5, 2], [0, 0, 3], [1, 2, -1]], F32))], grad=True),
    Case("reduce_prod-int", lambda x: ops.reduce_prod(x, (0,)), lambda x: np.prod(x, 0),
         _x(kind="int")),
    Case("all", lambda x: ops.all(x, 1), lambda x: np.all(x, 1), _x(kind="bool"),
         dtypes=(np.bool_,)),
    Case("any-int", lambda x: ops.any(x, (0,), keep_dims=True),
         lambda x: np.any(x, 0, keepdims=True), [((2, 3), np.array([[0, 2, 0], [0, 0, 0]],
                                                                   np.int32))],
         dtypes=(np.bool_,)),
    Case("reduce_all-every-axis", ops.reduce_all, np.all, _x(kind="bool"), dtypes=(np.bool_,)),
    Case("repeat_interleave", lambda x: ops.repeat_interleave(x, 2, axis=1),
         lambda x: np.repeat(x, 2, 1), _x(), grad=True),
    Case("repeat_interleave-list", lambda x: ops.repeat_interleave(x, [1, 0, 3]),
         lambda x: np.repeat(x, [1, 0, 3]), _x((3,)), grad=True),
    Case("repeat_interleave-flat", lambda x: ops.repeat_interleave(x, 2),
         lambda x: np.repeat(x, 2), _x((2, 2))),
    Case("unsqueeze", lambda x: ops.unsqueeze(x, -1), lambda x: x[..., None], _x()),
    Case("squeeze-none", lambda x: ops.squeeze(x), np.squeeze, _x((1, 3, 1))),
    Case("permute", lambda x: ops.permute(x, (2, 0, 1)), lambda x: x.transpose(2, 0, 1),
         _x((2, 3, 4)), grad=True),
    Case("swapaxes", lambda x: ops.swapaxes(x, 0, -1), lambda x: np.swapaxes(x, 0, -1),
         _x((2, 3, 4))),
    Case("narrow", lambda x: ops.narrow(x, 1, 1, 2), lambda x: x[:, 1:3], _x(), grad=True),
    Case("arange", lambda: ops.arange(5), lambda: np.arange(5), [], dtypes=(np.int64,)),
    Case("arange-float", lambda: ops.arange(1, 2, 0.25), lambda: np.arange(1, 2, 0.25), [],
         dtypes=(F32,)),
    Case("arange-dtype", lambda: ops.arange(6, 0, -2, dtype=ms.int32),
         lambda: np.arange(6, 0, -2), [], dtypes=(np.int32,)),
    Case("linspace", lambda: ops.linspace(-1, 1, 5), lambda: np.linspace(-1, 1, 5), [],
         dtypes=(F32,)),
    Case("eye", lambda: ops.eye(2, 3), lambda: np.eye(2, 3), [], dtypes=(F32,)),
    Case("eye-dtype", lambda: ops.eye(3, dtype=ms.int32), lambda: np.eye(3), [],
         dtypes=(np.int32,)),
]

METHODS = [
    Case("Tensor.gather", lambda x, i: x.gather(i, 1), lambda x, i: np.take(x, i, 1),
         [((3, 4), "f"), ((2,), np.array([3, 0], np.int32))], grad=True),
    Case("Tensor.pow", lambda x: x.pow(3), lambda x: x ** 3, _x(), grad=True),
    Case("Tensor.any", lambda x: x.any(1), lambda x: np.any(x, 1), _x(kind="bool"),
         dtypes=(np.bool_,)),
    Case("Tensor.all", lambda x: x.all(), lambda x: np.all(x), _x(kind="bool"),
         dtypes=(np.bool_,)),
    Case("Tensor.sum", lambda x: x.sum(1, keepdims=True), lambda x: x.sum(1, keepdims=True),
         _x(), grad=True),
    Case("Tensor.sum-dtype-initial", lambda x: x.sum(None, ms.float64, initial=1.5),
         lambda x: x.sum() + 1.5, _x(kind="int"), dtypes=(np.float64,)),
    Case("Tensor.mean", lambda x: x.mean((0, 1)), lambda x: x.mean((0, 1)), _x(), grad=True),
    Case("Tensor.reshape-view", lambda x: (x.reshape(4, 3), x.view((2, -1))),
         lambda x: (x.reshape(4, 3), x.reshape(2, -1)), _x(), dtypes=(F32, F32)),
    Case("Tensor.astype-float-int", lambda x: (x.astype(ms.int32), x.float(), x.int(),
                                               x.half(), x.double(), x.long()),
         lambda x: (x.astype(np.int32), x, x.astype(np.int32), x.astype(np.float16),
                    x.astype(np.float64), x.astype(np.int64)), _x(),
         dtypes=(np.int32, F32, np.int32, np.float16, np.float64, np.int64),
         tol=dict(rtol=1e-3, atol=1e-3)),
    Case("Tensor.clip", lambda x: x.clip(-0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5), _x()),
    Case("Tensor.flatten", lambda x: x.flatten(), lambda x: x.ravel(), _x((2, 3, 2))),
    Case("Tensor.squeeze-unsqueeze", lambda x: x.squeeze(0).unsqueeze(1),
         lambda x: x[0][:, None], _x((1, 3, 2))),
    Case("Tensor.permute", lambda x: x.permute(1, 2, 0), lambda x: x.transpose(1, 2, 0),
         _x((2, 3, 4))),
    Case("Tensor.max-min", lambda x: (x.max(), x.min(1, keepdims=True)),
         lambda x: (x.max(), x.min(1, keepdims=True)), _x(), dtypes=(F32, F32)),
    Case("Tensor.max-indices", lambda x: x.max(1, return_indices=True),
         lambda x: (x.max(1), x.argmax(1).astype(np.int32)), _x(), dtypes=(F32, np.int32)),
    Case("Tensor.argmax", lambda x: x.argmax(0, keepdims=True),
         lambda x: x.argmax(0)[None].astype(np.int32), _x(), dtypes=(np.int32,)),
    Case("Tensor.math", lambda x: (x.abs(), x.exp(), x.log(), x.sqrt(), x.square()),
         lambda x: (np.abs(x), np.exp(x), np.log(x), np.sqrt(x), x * x), _x(kind="pos"),
         dtypes=(F32,) * 5),
    Case("Tensor.norm", lambda x: x.norm(dim=0), lambda x: np.linalg.norm(x, axis=0), _x(),
         grad=True),
    Case("Tensor.cumsum", lambda x: (x.cumsum(), x.cumsum(1)),
         lambda x: (np.cumsum(x), np.cumsum(x, 1)), _x(), dtypes=(F32, F32)),
    Case("Tensor.tril-triu", lambda x: (x.tril(), x.triu(-1)),
         lambda x: (np.tril(x), np.triu(x, -1)), _x(), dtypes=(F32, F32)),
    Case("Tensor.masked_fill", lambda x, m: x.masked_fill(m, -1.0),
         lambda x, m: np.where(m, -1, x), [((3, 4), "f"), ((3, 4), "bool")]),
    Case("Tensor.expand-expand_as", lambda x, y: (x.expand(2, 3, 4), x.expand_as(y)),
         lambda x, y: (np.broadcast_to(x, (2, 3, 4)), np.broadcast_to(x, y.shape)),
         [((3, 1), "f"), ((5, 3, 4), "f")], dtypes=(F32, F32)),
    Case("Tensor.repeat", lambda x: x.repeat(2, axis=0), lambda x: np.repeat(x, 2, 0), _x()),
    Case("Tensor.transpose-swapaxes", lambda x: (x.transpose(), x.transpose(1, 0, 2),
                                                 x.swapaxes(0, 2)),
         lambda x: (x.transpose(), x.transpose(1, 0, 2), np.swapaxes(x, 0, 2)),
         _x((2, 3, 4)), dtypes=(F32,) * 3),
    Case("Tensor.prod-topk", lambda x: (x.prod(1), *x.topk(2)),
         lambda x: (x.prod(1), *_topk(x, 2)), _x(), dtypes=(F32, F32, np.int32)),
]


def _outputs(out):
    return [o.asnumpy() for o in (out if isinstance(out, (tuple, list)) else (out,))]


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
            np.testing.assert_allclose(g.astype(np.float64), np.asarray(w, np.float64),
                                       **case.tol, err_msg=f"output #{i}")
        else:
            np.testing.assert_array_equal(g, np.asarray(w).astype(dtype))


ALL_CASES = CASES + METHODS


@pytest.mark.parametrize("mode", ["pynative", "jit"])
@pytest.mark.parametrize("case", ALL_CASES, ids=[c.id for c in ALL_CASES])
def test_values(case, mode):
    inputs = _inputs(case.kinds, np.random.default_rng(0))
    fn = case.fn if mode == "pynative" else ms.jit(case.fn)
    got = _outputs(fn(*[ms.Tensor(a) for a in inputs]))
    _check(case, got, inputs)


GRAD_CASES = [c for c in ALL_CASES if c.grad]


@pytest.mark.parametrize("mode", ["pynative", "jit"])
@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.id for c in GRAD_CASES])
def test_gradients(case, mode):
    """d/dx0 of sum(w_i * float output_i), in float64, against central differences of the
    numpy reference (the other inputs held fixed)."""
    inputs = [_f64(a) for a in _inputs(case.kinds, np.random.default_rng(0))]
    check_weighted_gradient(case, inputs, mode)


# ------------------------------------------------------------------ MindSpore's errors

X = np.arange(12, dtype=F32).reshape(3, 4)

ERRORS = [
    ("split-sum", lambda x: ops.split(x, [1, 2], 1), ValueError, "add up to 4"),
    ("split-size", lambda x: ops.split(x, 0), ValueError, "positive"),
    ("split-float", lambda x: ops.split(x, 1.5), TypeError, "must be an int"),
    ("flatten-order", lambda x: ops.flatten(x, order="A"), ValueError, "'C' or 'F'"),
    ("flatten-order-type", lambda x: ops.flatten(x, order=1), TypeError, "string"),
    ("flatten-dims", lambda x: ops.flatten(x, start_dim=1, end_dim=0), ValueError,
     "comes after"),
    ("flatten-range", lambda x: ops.flatten(x, start_dim=2), ValueError, "out of range"),
    ("clip-none", lambda x: ops.clip_by_value(x), ValueError, "at least one"),
    ("pad-mode", lambda x: ops.pad(x, (1, 1), mode="reflect"), ValueError, "'reflect'"),
    ("pad-odd", lambda x: ops.pad(x, (1, 1, 1)), ValueError, "even number"),
    ("pad-crop", lambda x: ops.pad(x, (-5, 0)), ValueError, "crops more"),
    ("gelu-approximate", lambda x: ops.gelu(x, approximate="fast"), ValueError, "'fast'"),
    ("leaky_relu-alpha", lambda x: ops.leaky_relu(x, alpha="0.1"), TypeError, "alpha"),
    ("topk-k", lambda x: ops.topk(x, 5), ValueError, "k 5 is out of range"),
    ("topk-sorted", lambda x: ops.topk(x, 2, sorted=1), TypeError, "bools"),
    ("norm-spectral", lambda x: ops.norm(x, 2), ValueError, "singular values"),
    ("norm-nuc", lambda x: ops.norm(x, "nuc", dim=(0, 1)), ValueError, "singular values"),
    ("norm-ord-rank", lambda x: ops.norm(ops.reshape(x, (1, 3, 4)), 1), ValueError,
     "1-D or 2-D"),
    ("norm-dim-dup", lambda x: ops.norm(x, dim=(1, -3)), ValueError, "out of range"),
    ("reduce-duplicate-axes", lambda x: ops.reduce_sum(x, (1, -1)), ValueError, "duplicate"),
    ("prod-duplicate-axes", lambda x: ops.prod(x, (0, 0)), ValueError, "duplicate"),
    ("all-duplicate-axes", lambda x: ops.all(x, (1, 1)), ValueError, "duplicate"),
    ("cumsum-bool", lambda x: ops.cumsum(x > 0, 0), TypeError, "ms.cumsum"),
    ("cumsum-axis", lambda x: ops.cumsum(x, 2), ValueError, "out of range"),
    ("arange-step", lambda x: ops.arange(0, 5, 0), ValueError, "step must not be 0"),
    ("arange-direction", lambda x: ops.arange(5, 0, 1), ValueError, "points away"),
    ("linspace-steps", lambda x: ops.linspace(0, 1, 0), ValueError, "positive"),
    ("narrow-range", lambda x: ops.narrow(x, 1, 3, 2), ValueError, "out of range"),
    ("unstack-scalar", lambda x: ops.unstack(ops.reduce_sum(x)), ValueError, "rank 1"),
    ("tril-rank", lambda x: ops.tril(ops.reshape(x, (12,))), ValueError, "rank 2"),
    ("matmul-transpose", lambda x: ops.matmul(ops.reshape(x, (12,)), ops.reshape(x, (12,)),
                                              transpose_a=True), ValueError, "2-D operands"),
    ("matmul-scalar", lambda x: ops.matmul(x, ops.reduce_sum(x)), ValueError, "rank >= 1"),
    ("matmul-shapes", lambda x: ops.matmul(x, x), ValueError, "ms.matmul"),
    ("repeat-count", lambda x: ops.repeat_interleave(x, [1, 2], 0), ValueError, "one count"),
    ("max-initial", lambda x: x.max(initial=1.0), ValueError, "initial"),
    ("where-cond", lambda x: ops.where(x, x, x), TypeError, "ms.select"),
]


@pytest.mark.parametrize("mode", ["pynative", "jit"])
@pytest.mark.parametrize("name,fn,error,match", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, fn, error, match, mode):
    f = fn if mode == "pynative" else ms.jit(fn)
    with pytest.raises(error, match=match):
        f(ms.Tensor(X))


def test_errors_name_the_user_line():
    with pytest.raises(ValueError) as info:
        ops.split(ms.Tensor(X), [1, 2], 1)  # the user's line
    assert "test_mindspore_ops.py" in str(info.value)


def test_graph_mode_compiles_one_function():
    """Under jit a composition is one compiled function: the ops fuse, nothing runs eagerly."""
    from mscc.pyfront import dispatch
    f = ms.jit(lambda x: ops.hardswish(ops.clamp(x, -1.0, 1.0)) + ops.softsign(x))
    x = ms.Tensor(X)
    before = dispatch.eager_compiles
    f(x)
    assert dispatch.eager_compiles == before
    assert f.cache_info()["compiles"] == 1
    text = f.lower(x).as_text("ms-opt")
    assert text.count("ms.fused") >= 1


# ------------------------------------------------------------------ vmap

def _vmap_program(v, m, bias):
    return ops.tanh(ops.matmul(ops.expand_dims(v, 0), m)[0] + bias), ops.reduce_sum(v)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_vmap_matches_a_loop(compiled):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6)).astype(F32)        # mapped over axis 1 (size 6)
    m = rng.standard_normal((4, 3)).astype(F32)        # not mapped
    f = ops.vmap(_vmap_program, in_axes=(1, None, None), out_axes=(1, 0))
    f = ms.jit(f) if compiled else f
    hidden, sums = f(ms.Tensor(x), ms.Tensor(m), 0.5)
    want_hidden = np.stack([np.tanh(x[:, i] @ m + 0.5) for i in range(6)], axis=1)
    np.testing.assert_allclose(hidden.asnumpy(), want_hidden, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sums.asnumpy(), x.sum(0), rtol=1e-5)
    assert hidden.shape == (3, 6) and sums.shape == (6,)


def test_vmap_unmapped_output_and_gradient(mode):
    x = np.linspace(-1, 1, 12).reshape(3, 4).astype(F32)
    per_row = ops.vmap(lambda r: (ops.reduce_sum(r * r), ops.ones((2,), ms.float32)),
                       out_axes=(0, None))
    squares, ones = per_row(ms.Tensor(x))
    np.testing.assert_allclose(squares.asnumpy(), (x * x).sum(1), rtol=1e-6)
    assert ones.shape == (2,)
    grad = ms.grad(lambda t: ops.reduce_sum(per_row(t)[0]))(ms.Tensor(x))
    np.testing.assert_allclose(grad.asnumpy(), 2 * x, rtol=1e-6)


@pytest.mark.parametrize("call, message", [
    (lambda: ops.vmap(lambda a, b: a + b)(np.ones((2, 3), F32), np.ones((3, 3), F32)),
     "one size"),
    (lambda: ops.vmap(lambda a: a, in_axes=(0, 1))(np.ones((2, 3), F32)), "in_axes"),
    (lambda: ops.vmap(lambda a: a, in_axes=2)(np.ones((2, 3), F32)), "out of range"),
    (lambda: ops.vmap(lambda a: a, in_axes=None)(np.ones((2, 3), F32)), "no mapped"),
])
def test_vmap_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()
