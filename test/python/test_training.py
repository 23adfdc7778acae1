"""Training: the digits example in both modes (and with AMP O2) reaches the accuracy bar, one
compiled training step equals the same step in numpy, and PyNative re-uses its gradient."""
import os
import sys

import numpy as np
import pytest

import mscc as ms
from mscc import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import train_digits  # noqa: E402

pytest.importorskip("sklearn")


@pytest.mark.parametrize("mode,amp", [("graph", "O0"), ("pynative", "O0"), ("graph", "O2")])
def test_digits_reaches_95_percent(mode, amp):
    acc, losses, _, _, optimizer = train_digits.train(mode, amp, epochs=15, seed=0, verbose=False)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    assert acc >= 0.95, acc
    assert losses[-1] < 0.5 * losses[0] and losses[-1] < losses[len(losses) // 2]
    if amp != "O0":  # float32 master weights
        assert all(p.dtype is ms.float32 for p in optimizer.parameters)


@pytest.mark.parametrize("mode", ["graph", "pynative"])
def test_digits_cnn_reaches_95_percent(mode):
    """Conv2d, BatchNorm2d (moving statistics for the test), MaxPool2d and Dropout, trained
    with the same loop; accuracy measured in inference mode."""
    acc, losses, _, net, _ = train_digits.train(mode, "O0", epochs=6, seed=0, verbose=False,
                                                model="cnn")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    assert acc >= 0.95, acc
    assert losses[-1] < 0.5 * losses[0]
    assert net.norm.moving_mean.asnumpy().any()  # the statistics were tracked


def test_graph_and_pynative_training_agree():
    runs = [train_digits.train(mode, "O0", epochs=2, seed=1, verbose=False) for mode in ("graph", "pynative")]
    ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-5)  # per-epoch losses
    for p, q in zip(runs[0][4].parameters, runs[1][4].parameters):
        np.testing.assert_allclose(p.asnumpy(), q.asnumpy(), rtol=1e-4, atol=1e-6)


def _numpy_step(x, labels, params, lr, momentum, accum):
    """One SGD-with-momentum step of Dense-ReLU-Dense + mean softmax cross-entropy."""
    w1, b1, w2, b2 = params
    h = x @ w1.T + b1
    a = np.maximum(h, 0)
    logits = a @ w2.T + b2
    z = logits - logits.max(1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    onehot = np.eye(logits.shape[1])[labels]
    loss = -np.sum(onehot * np.log(p)) / len(x)
    d = (p - onehot) / len(x)
    dh = (d @ w2) * (h > 0)
    grads = [dh.T @ x, dh.sum(0), d.T @ a, d.sum(0)]
    new_accum = [momentum * acc + g for acc, g in zip(accum, grads)]
    return loss, [w - lr * acc for w, acc in zip(params, new_accum)], new_accum


def test_one_jit_training_step_equals_numpy():
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        ms.set_seed(2)
        net = nn.SequentialCell([nn.Dense(5, 7, activation="relu", dtype=ms.float64),
                                 nn.Dense(7, 3, dtype=ms.float64)])
        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        opt = nn.SGD(net.trainable_params(), learning_rate=0.3, momentum=0.9)
        grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, opt.parameters)

        @ms.jit
        def step(x, y):
            loss, grads = grad_fn(x, y)
            opt(grads)
            return loss

        rng = np.random.default_rng(0)
        params = [p.asnumpy().copy() for p in opt.parameters]
        accum = [np.zeros_like(p) for p in params]
        for _ in range(3):
            x, y = rng.standard_normal((6, 5)), rng.integers(0, 3, 6).astype(np.int32)
            loss = step(ms.Tensor(x), ms.Tensor(y))
            want_loss, params, accum = _numpy_step(x, y, params, 0.3, 0.9, accum)
            np.testing.assert_allclose(loss.asnumpy(), want_loss, rtol=1e-12)
            for p, want in zip(opt.parameters, params):
                np.testing.assert_allclose(p.asnumpy(), want, rtol=1e-11, atol=1e-13)
        assert step.cache_info()["compiles"] == 1
        text = step.lower(ms.Tensor(x), ms.Tensor(y)).as_text("ms-opt")
        # 4 parameters and 4 momentum accumulators, and the optimizer's global step
        assert text.count("func.func") == 1 and text.count('"ms.assign"') == 9
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_pynative_training_reuses_its_gradient():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    net = nn.Dense(4, 2)
    loss_fn = nn.MSELoss()
    grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, net.trainable_params())
    x, y = ms.Tensor(np.ones((3, 4), np.float32)), ms.Tensor(np.zeros((3, 2), np.float32))
    for _ in range(4):
        grad_fn(x, y)
    assert (grad_fn._pynative.records, grad_fn._pynative.reuses) == (1, 3)
