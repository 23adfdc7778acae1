"""ms-cpu-fuse-elementwise-pairs: an elementwise loop and a later one reading its output
become one loop writing both; results against numpy in float64, and the pass's effect on
the program's buffers (one generic with two outputs where there were two)."""
import numpy as np
import pytest

import mscc as ms
from mscc import nn
from mscc.dialects.builders import mlir_context
from mscc.dialects.ir_helpers import ops_of_kind
from mscc.passes import pipeline
from mlir import ir


def _momentum(p, v, g):
    v2 = v * 0.9 + g
    return p - 0.01 * v2, v2


def _scaled(p, v, g, rate):  # the second also reads a row broadcast over the rows
    v2 = v * 0.9 + g
    return p - rate * v2, v2


def _chain(p, v, g):  # the first's output also returned and read by a third op
    a = v - g
    return a, a * p, (a * p).sum()


CASES = [
    ("momentum", _momentum, [(8, 16), (8, 16), (8, 16)]),
    ("broadcast", _scaled, [(4, 6), (4, 6), (4, 6), (6,)]),
    ("chain", _chain, [(5, 7), (5, 7), (5, 7)]),
]


def _numpy(fn, args):
    out = fn(*args)
    return out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
def test_fused_pairs_match_numpy(name, fn, shapes):
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(s) for s in shapes]  # float64
    got = ms.jit(fn)(*[ms.Tensor(a) for a in args])
    got = got if isinstance(got, tuple) else (got,)
    for g, want in zip(got, _numpy(fn, args)):
        np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-12, atol=1e-12)


def _generics_after_pass(fn, args):
    text = ms.jit(fn).lower(*[ms.Tensor(a) for a in args]).as_text("bufferized")
    module = ir.Module.parse(text, mlir_context())
    before = len(ops_of_kind(module, "linalg.generic"))
    pipeline.run_steps(module, pipeline.parse_pipeline("ms-cpu-fuse-elementwise-pairs"))
    generics = ops_of_kind(module, "linalg.generic")
    return before, [ir.DenseI32ArrayAttr(g.attributes["operandSegmentSizes"])[1]
                    for g in generics]


@pytest.mark.parametrize("fn,shapes,want", [
    (_momentum, [(8, 16)] * 3, (2, [2])),
    (_scaled, [(4, 6), (4, 6), (4, 6), (6,)], (2, [2])),
    (_chain, [(5, 7)] * 3, (3, [2, 1])),  # (the sum stays a reduction of its own)
], ids=["momentum", "broadcast", "chain"])
def test_pairs_become_one_loop_writing_both_buffers(fn, shapes, want):
    assert _generics_after_pass(fn, [np.ones(s, np.float32) for s in shapes]) == want


def test_momentum_training_steps_match_numpy():
    """nn.Momentum in a jitted step (the pair per parameter) against its update in float64."""
    rng = np.random.default_rng(2)
    w0, x = rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    w = ms.Parameter(w0.copy(), name="w")
    opt = nn.Momentum([w], learning_rate=0.05, momentum=0.8)
    grad = ms.value_and_grad(lambda t: ((t @ w.T) ** 2).sum(), None, opt.parameters)

    @ms.jit
    def step(t):
        loss, grads = grad(t)
        opt(grads)
        return loss
    p, a = w0.copy(), 0
    for _ in range(3):
        step(ms.Tensor(x))
        g = 2 * (x @ p.T).T @ x
        a = 0.8 * a + g
        p = p - 0.05 * a
    np.testing.assert_allclose(w.asnumpy(), p, rtol=1e-10)
