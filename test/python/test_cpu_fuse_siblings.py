"""ms-cpu-fuse-sibling-loops: loops over the same iteration space that read a common input
and do not depend on each other become one loop writing all their outputs. Results against
numpy in float64, BatchNorm's gradients against finite differences and to the bit against
the program with the pass skipped, and the pass's effect on the program's loops."""
import numpy as np
import pytest

import mscc as ms
from mscc import nn
from mscc.dialects.builders import mlir_context
from mscc.dialects.ir_helpers import ops_of_kind
from mscc.passes import pipeline
from mscc.passes.cpu_fuse_siblings import FuseSiblingLoops
from mlir import ir


def _bn_sums(dy, x):  # BatchNorm's backward: two sums of the same data over (N, H, W)
    return dy.sum(axis=(0, 2, 3)), (dy * x).sum(axis=(0, 2, 3))


def _moments(x):  # three reductions of x over its rows
    return x.sum(axis=1), (x * x).sum(axis=1), x.max(axis=1)


def _elementwise(x, y):  # two loops reading x, their outputs returned
    return x * 2.0 + y, ms.ops.exp(x) - 1.0


CASES = [
    ("bn_sums", _bn_sums, [(4, 3, 5, 6), (4, 3, 5, 6)],
     lambda dy, x: (dy.sum(axis=(0, 2, 3)), (dy * x).sum(axis=(0, 2, 3)))),
    ("moments", _moments, [(7, 33)],
     lambda x: (x.sum(axis=1), (x * x).sum(axis=1), x.max(axis=1))),
    ("elementwise", _elementwise, [(5, 9), (5, 9)],
     lambda x, y: (x * 2.0 + y, np.exp(x) - 1.0)),
]


@pytest.mark.parametrize("name,fn,shapes,reference", CASES, ids=[c[0] for c in CASES])
def test_fused_siblings_match_numpy(name, fn, shapes, reference):
    rng = np.random.default_rng(4)
    args = [rng.standard_normal(s) for s in shapes]  # float64
    got = ms.jit(fn)(*[ms.Tensor(a) for a in args])
    for g, want in zip(got, reference(*args)):
        np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-12, atol=1e-12)


def _loops(fn, shapes, fused: bool):
    """The linalg.generics of the program's buffers, with or without the pass: the count,
    and the outputs of each."""
    args = [ms.Tensor(np.ones(s, np.float32)) for s in shapes]
    module = ir.Module.parse(ms.jit(fn).lower(*args).as_text("bufferized"), mlir_context())
    if fused:
        pipeline.run_steps(module, pipeline.parse_pipeline("ms-cpu-fuse-sibling-loops"))
    return sorted(ir.DenseI32ArrayAttr(g.attributes["operandSegmentSizes"])[1]
                  for g in ops_of_kind(module, "linalg.generic"))


@pytest.mark.parametrize("fn,shapes,fused_outputs", [
    (_bn_sums, [(4, 3, 5, 6)] * 2, 2),
    (_moments, [(7, 33)], 3),
    (_elementwise, [(5, 9)] * 2, 2),
], ids=["bn_sums", "moments", "elementwise"])
def test_siblings_become_one_loop(fn, shapes, fused_outputs):
    before, after = _loops(fn, shapes, False), _loops(fn, shapes, True)
    assert max(before) == 1 and max(after) == fused_outputs
    assert len(after) == len(before) - fused_outputs + 1


def _bn_step_function():
    """The gradients of a BatchNorm2d in training mode (its backward sums dy and dy * x_hat
    over the batch and positions) through a ReLU and a weighted sum."""
    rng = np.random.default_rng(5)
    weights = ms.Tensor(rng.standard_normal((3, 4, 5, 5)))
    bn = nn.BatchNorm2d(4)
    bn.gamma.set_data(ms.Tensor(rng.uniform(0.5, 1.5, 4)))
    bn.beta.set_data(ms.Tensor(rng.standard_normal(4)))
    bn.set_train(True)

    def loss(x):
        return (ms.ops.relu(bn(x)) * weights).sum()
    return loss, rng.standard_normal((3, 4, 5, 5))


def test_batchnorm_gradient_against_finite_differences():
    loss, x = _bn_step_function()
    grad = ms.jit(ms.grad(loss))(ms.Tensor(x)).asnumpy()
    f = ms.jit(loss)
    eps, rng = 1e-6, np.random.default_rng(6)
    for _ in range(6):
        index = tuple(rng.integers(0, n) for n in x.shape)
        up, down = x.copy(), x.copy()
        up[index] += eps
        down[index] -= eps
        numeric = (float(f(ms.Tensor(up)).asnumpy()) - float(f(ms.Tensor(down)).asnumpy())) / (2 * eps)
        np.testing.assert_allclose(grad[index], numeric, rtol=1e-5, atol=1e-7)


def test_batchnorm_gradient_same_bits_as_unfused(monkeypatch):
    """float32: each sum keeps its own loop body and order, so fusing changes no bit (and
    the backward's two sums are fused: one loop writes two outputs)."""
    loss, x = _bn_step_function()
    assert max(_loops(ms.grad(loss), [x.shape], True)) > 1
    x = ms.Tensor(x.astype(np.float32))
    fused = ms.jit(ms.grad(loss))(x).asnumpy()
    with monkeypatch.context() as patch:
        patch.setattr(FuseSiblingLoops, "run", lambda self, module: None)
        unfused = ms.jit(ms.grad(loss))(x).asnumpy()
    np.testing.assert_array_equal(fused, unfused)
