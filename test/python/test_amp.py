"""Mixed precision: auto_mixed_precision levels, loss scalers and all_finite."""
import numpy as np
import pytest

import mscc as ms
from mscc import nn


def _net():
    ms.set_seed(0)
    return nn.SequentialCell([nn.Dense(4, 8, activation="relu"), nn.LayerNorm((8,)),
                              nn.Dense(8, 3)])


@pytest.mark.parametrize("level,f16_casts", [("O0", 0), ("O2", 1), ("O3", 1)])
def test_levels(level, f16_casts):
    net = ms.amp.auto_mixed_precision(_net(), level)
    x = ms.Tensor(np.ones((2, 4), np.float32))
    out = net(x)
    assert out.dtype is ms.float32  # O2/O3 cast the output back: the loss is float32
    text = ms.jit(lambda v: net(v)).lower(x).as_text("ms")
    assert ("{dtype = f16}" in text) == bool(f16_casts)
    if level == "O2":  # LayerNorm's input back to float32 (it computes in float32), and the output
        assert text.count("{dtype = f32}") == 2
    assert all(p.dtype is ms.float32 for p in net.trainable_params())  # master weights


def test_o1_is_refused():
    with pytest.raises(ValueError, match="O1 is not supported"):
        ms.amp.auto_mixed_precision(_net(), "O1")


def test_all_finite():
    good = (ms.Tensor(np.ones(3, np.float32)), ms.Tensor(np.zeros((2, 2), np.float16)))
    assert bool(ms.amp.all_finite(good).asnumpy())
    for bad in (np.inf, -np.inf, np.nan):
        t = ms.Tensor(np.array([1.0, bad], np.float32))
        assert not bool(ms.amp.all_finite((good[0], t)).asnumpy())


def test_static_scaler_scales_and_unscales():
    s = ms.amp.StaticLossScaler(128.0)
    x = ms.Tensor(np.array([1.0, 2.0], np.float32))
    np.testing.assert_allclose(s.scale(x).asnumpy(), [128.0, 256.0])
    a, b = s.unscale((ms.Tensor(np.array([256.0], np.float32)), x))
    np.testing.assert_allclose(a.asnumpy(), [2.0])


def test_dynamic_scaler_adjusts():
    s = ms.amp.DynamicLossScaler(1024.0, scale_factor=2, scale_window=3)
    assert s.adjust(ms.Tensor(False)) is False
    assert float(s.scale_value.asnumpy()) == 512.0  # halved after an overflow
    for _ in range(3):
        s.adjust(ms.Tensor(True))
    assert float(s.scale_value.asnumpy()) == 1024.0  # doubled after a window of finite steps


def test_batchnorm_stays_float32_under_o2_and_writes_float32_statistics(mode):
    """As MindSpore's O2 keeps normalizations in float32; a BatchNorm cast to float16 by hand
    still updates its float32 moving statistics (the Parameters, not the cast copies)."""
    net = ms.amp.auto_mixed_precision(nn.SequentialCell([nn.Dense(4, 3), nn.BatchNorm1d(3)]),
                                      "O2")
    bn = net.network._cells["1"]
    assert bn._compute_dtype is ms.float32
    half = nn.BatchNorm1d(3).to_float(ms.float16).set_train()
    x = np.random.default_rng(0).random((8, 3)).astype(np.float32)
    out = half(ms.Tensor(x))
    assert out.dtype is ms.float16 and half.moving_mean.dtype is ms.float32
    np.testing.assert_allclose(half.moving_mean.asnumpy(), 0.1 * x.mean(0), rtol=2e-3)
