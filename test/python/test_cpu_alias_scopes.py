"""ms-cpu-distinct-buffers and ms-cpu-alias-scopes: the loads and stores of outlined loop
functions through buffers that never overlap carry alias scopes in the final LLVM-dialect
module (the recorded positions are the aligned pointers the accesses use), the results are
numpy's, and the same to the bit as without the scopes."""
import numpy as np

import mscc as ms
from mscc.dialects.builders import mlir_context
from mscc.passes.cpu_alias_scopes import DistinctBuffers
from mlir import ir


def _batchnorm_step(x, w, gamma, beta):
    """BatchNorm's training-mode forward and gradient: enough loop nests that each becomes
    a function (ms-cpu-outline-loops: 8 or more), each reading and writing other buffers."""
    def loss(t, w, g, b):
        mean = t.mean(axis=(0, 2, 3), keep_dims=True)
        var = ((t - mean) ** 2).mean(axis=(0, 2, 3), keep_dims=True)
        y = (t - mean) / ms.ops.sqrt(var + 1e-5) * g.reshape((1, -1, 1, 1)) \
            + b.reshape((1, -1, 1, 1))
        return (ms.ops.relu(y) * w).sum()
    return ms.grad(loss, grad_position=(0, 2, 3))(x, w, gamma, beta)


def _numpy(x, w, gamma, beta):
    """The same gradients in float64, by the closed form of BatchNorm's backward."""
    axes, n = (0, 2, 3), x.shape[0] * x.shape[2] * x.shape[3]
    g, b = gamma.reshape(1, -1, 1, 1), beta.reshape(1, -1, 1, 1)
    mean = x.mean(axis=axes, keepdims=True)
    inv = 1 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + 1e-5)
    xhat = (x - mean) * inv
    dy = w * ((xhat * g + b) > 0)
    dxhat = dy * g
    dx = inv / n * (n * dxhat - dxhat.sum(axis=axes, keepdims=True)
                    - xhat * (dxhat * xhat).sum(axis=axes, keepdims=True))
    return dx, (dy * xhat).sum(axis=axes), dy.sum(axis=axes)


def _scoped_accesses(text: str) -> int:
    with mlir_context():
        module = ir.Module.parse(text)
        count = [0]

        def visit(op):
            if op.name in ("llvm.load", "llvm.store") and "alias_scopes" in op.attributes:
                count[0] += 1
            return ir.WalkResult.ADVANCE
        module.operation.walk(visit)
        return count[0]


def _inputs(dtype):
    rng = np.random.default_rng(7)
    shapes = [(4, 3, 6, 5), (4, 3, 6, 5), (3,), (3,)]
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def test_outlined_loops_get_scopes_and_match_numpy():
    args = _inputs(np.float64)
    fn = ms.jit(_batchnorm_step)
    tensors = [ms.Tensor(a) for a in args]
    assert _scoped_accesses(fn.lower(*tensors).as_text("llvm")) > 0
    for got, want in zip(fn(*tensors), _numpy(*args)):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10, atol=1e-12)


def test_same_bits_without_scopes(monkeypatch):
    tensors = [ms.Tensor(a) for a in _inputs(np.float32)]
    scoped = [o.asnumpy() for o in ms.jit(_batchnorm_step)(*tensors)]
    with monkeypatch.context() as patch:
        patch.setattr(DistinctBuffers, "run", lambda self, module: None)
        fn = ms.jit(_batchnorm_step)
        assert _scoped_accesses(fn.lower(*tensors).as_text("llvm")) == 0
        plain = [o.asnumpy() for o in fn(*tensors)]
    for a, b in zip(scoped, plain):
        np.testing.assert_array_equal(a, b)
