"""ms-simplify-broadcasts: programs whose explicit broadcasts feed elementwise ops, against
numpy in float64 (the rewritten ops compute the same values), the gradient of a mean squared
error (its seed is such a broadcast) against finite differences, and the program after the
front-end stage: the seed is no longer spread over the activation."""
import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mstest import finite_differences


def _seeded(row, y, s):  # broadcast, scaled (computed before broadcasting), then combined
    b = ops.broadcast_to(row, y.shape)
    return (b * 2.0 + s) * y - b


def _cast_and_select(row, y, s):
    b = ops.broadcast_to(row, y.shape)
    return ops.select(y > 0, ops.cast(b, ms.float32), ops.cast(y, ms.float32)), ops.exp(b) + s


def _np_seeded(row, y, s):
    b = np.broadcast_to(row, y.shape)
    return (b * 2.0 + s) * y - b


def _np_cast_and_select(row, y, s):
    b = np.broadcast_to(row, y.shape)
    return np.where(y > 0, b, y).astype(np.float32), np.exp(b) + s


@pytest.mark.parametrize("fn,ref", [(_seeded, _np_seeded),
                                    (_cast_and_select, _np_cast_and_select)])
def test_programs_with_broadcasts_match_numpy(fn, ref):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s) for s in ((1, 5), (4, 3, 5), (3, 1))]
    got = ms.jit(fn)(*[ms.Tensor(a) for a in args])
    want = ref(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert g.asnumpy().dtype == w.dtype
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-6 if w.dtype == np.float32 else 1e-12)


def _mse(w, x, y):
    return ((x * w - y) ** 2).mean()


def test_mean_squared_error_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    w, x, y = rng.standard_normal(6), rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    got = ms.jit(ms.grad(_mse))(ms.Tensor(w), ms.Tensor(x), ms.Tensor(y)).asnumpy()
    want = finite_differences(lambda v: ((x * v - y) ** 2).mean(), w)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


def test_the_loss_seed_is_not_spread_over_the_activation():
    x = ms.Tensor(np.ones((8, 16, 5, 5)))
    text = ms.jit(ms.grad(lambda a: ((a * a - 1.0) ** 2).mean())).lower(x).as_text("ms-opt")
    assert '"ms.broadcast_to"' not in text
