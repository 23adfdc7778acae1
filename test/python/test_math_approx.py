"""The CPU's polynomial exp/log/tanh (passes/math_approx.py) against float64 numpy, over the
whole float32 range and at the special values."""
import numpy as np
import pytest

import mscc as ms
from mscc import ops

SPECIAL = [0.0, -0.0, 1e-5, -1e-5, 1e-38, 1e-40, np.inf, -np.inf, np.nan]


def _run(op, x):
    return ms.jit(op)(ms.Tensor(np.asarray(x, np.float32))).asnumpy()


def _check(got, x, ref, rtol):
    want = ref(np.asarray(x, np.float32).astype(np.float64)).astype(np.float32)
    normal = np.isfinite(want) & (np.abs(want) >= 1.2e-38)
    np.testing.assert_allclose(got[normal], want[normal], rtol=rtol)
    # infinities, NaN and zeros as numpy (float32) has them
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])


@pytest.mark.parametrize("name,op,ref,x", [
    ("exp", ops.exp, np.exp, np.concatenate([np.linspace(-110, 89, 40001), SPECIAL, [88.7, -87.3]])),
    ("tanh", ops.tanh, np.tanh, np.concatenate([np.linspace(-12, 12, 40001), SPECIAL])),
    ("log", ops.log, np.log, np.concatenate([np.logspace(-37.9, 38.5, 40001), SPECIAL, [-1.0, 1.0]])),
    ("sigmoid", ops.sigmoid, lambda v: 1 / (1 + np.exp(-v)), np.linspace(-100, 100, 20001)),
])
def test_float32_accuracy(name, op, ref, x):
    with np.errstate(all="ignore"):
        _check(_run(op, x), x, ref, rtol=4e-7 if name != "sigmoid" else 1e-6)


def test_float16_goes_through_float32():
    x = np.linspace(-8, 8, 1001).astype(np.float16)
    got = ms.jit(ops.exp)(ms.Tensor(x)).asnumpy()
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, np.exp(x.astype(np.float64)).astype(np.float16), rtol=1e-3)


@pytest.mark.parametrize("name", ["exp", "tanh", "log", "erf", "sigmoid", "softplus"])
def test_a_nan_that_llvm_can_see_stays_nan(name):
    """x * nan with the nan a constant of the program: LLVM folds it, and the exp
    polynomial's fptosi of nan became poison that spread into 2^k (garbage like 5.5e-17 under
    jit; API fuzzing, bench/fuzz_api.py: ops.softplus(x, beta=nan))."""
    x = ms.Tensor(np.array([[0.5, -1.0, 2.0, 30.0]], np.float32))
    fn = getattr(ops, name)
    got = ms.jit(lambda a: fn(a * float("nan")))(x).asnumpy()
    assert np.isnan(got).all(), got


def test_tanh_saturates_exactly_where_float32_does():
    """|x| >= 9.02: float32's tanh is +-1, and so is the polynomial's result (it stopped at
    0.99999976, so GELU's tanh form of -2e9 was -238, not 0: API fuzzing, the two modes
    rounding that difference differently)."""
    x = np.array([9.02, 10.0, 100.0, 2e9, np.inf], np.float32)
    x = np.concatenate([x, -x])
    np.testing.assert_array_equal(_run(ops.tanh, x), np.sign(x))
    gelu = ms.jit(lambda a: ops.gelu(a, approximate="tanh"))(ms.Tensor(-x[:4])).asnumpy()
    np.testing.assert_array_equal(gelu, np.zeros(4, np.float32))
