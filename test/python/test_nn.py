"""nn layers, losses and optimizers against numpy (float64), in both execution modes."""
import math

import numpy as np
import pytest

import mscc as ms
from mscc import nn, ops

rng = np.random.default_rng(11)


def x64(*shape):
    return rng.standard_normal(shape)


def test_dense_and_activations(mode):
    dense = nn.Dense(5, 3, activation="tanh", dtype=ms.float64)
    x = x64(4, 5)
    want = np.tanh(x @ dense.weight.asnumpy().T + dense.bias.asnumpy())
    np.testing.assert_allclose(dense(ms.Tensor(x)).asnumpy(), want, rtol=1e-12)
    x3 = x64(2, 4, 5)  # Dense flattens leading dims
    np.testing.assert_allclose(dense(ms.Tensor(x3)).asnumpy(),
                               np.tanh(x3 @ dense.weight.asnumpy().T + dense.bias.asnumpy()),
                               rtol=1e-12)
    for cell, ref in [(nn.ReLU(), lambda v: np.maximum(v, 0)),
                      (nn.Sigmoid(), lambda v: 1 / (1 + np.exp(-v))),
                      (nn.GELU(), lambda v: 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))),
                      (nn.GELU(approximate=False),
                       lambda v: 0.5 * v * (1 + np.vectorize(math.erf)(v / math.sqrt(2)))),
                      (nn.Softmax(), lambda v: np.exp(v) / np.exp(v).sum(-1, keepdims=True)),
                      (nn.Flatten(), lambda v: v.reshape(v.shape[0], -1))]:
        np.testing.assert_allclose(cell(ms.Tensor(x3)).asnumpy(), ref(x3), rtol=1e-10, atol=1e-12)


def test_layernorm(mode):
    ln = nn.LayerNorm((6,), epsilon=1e-5, dtype=ms.float64)
    ln.gamma.set_data(x64(6))
    ln.beta.set_data(x64(6))
    x = x64(3, 6)
    m, v = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    want = (x - m) / np.sqrt(v + 1e-5) * ln.gamma.asnumpy() + ln.beta.asnumpy()
    np.testing.assert_allclose(ln(ms.Tensor(x)).asnumpy(), want, rtol=1e-10)


def test_losses(mode):
    logits, labels = x64(5, 4), rng.integers(0, 4, 5).astype(np.int32)
    logp = logits - logits.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    ce = -logp[np.arange(5), labels]
    sparse = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    np.testing.assert_allclose(sparse(ms.Tensor(logits), ms.Tensor(labels)).asnumpy(), ce.mean(), rtol=1e-12)
    dense = nn.SoftmaxCrossEntropyWithLogits(sparse=False, reduction="none")
    onehot = np.eye(4)[labels]
    np.testing.assert_allclose(dense(ms.Tensor(logits), ms.Tensor(onehot)).asnumpy(), ce, rtol=1e-12)
    a, b = x64(3, 2), x64(3, 2)
    np.testing.assert_allclose(nn.MSELoss()(ms.Tensor(a), ms.Tensor(b)).asnumpy(), ((a - b) ** 2).mean())
    np.testing.assert_allclose(nn.MSELoss("sum")(ms.Tensor(a), ms.Tensor(b)).asnumpy(), ((a - b) ** 2).sum())
    with pytest.raises(ValueError, match="the .reduction. must be in"):
        nn.MSELoss("avg")


def test_cell_registration_and_names():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Dense(3, 4)
            self.body = nn.SequentialCell([nn.Dense(4, 4), nn.ReLU()])
            self.scale = ms.Parameter(np.ones(1, np.float32), name="scale", requires_grad=False)

        def construct(self, x):
            return self.body(self.fc1(x)) * self.scale

    net = Net()
    assert list(net.parameters_dict()) == ["scale", "fc1.weight", "fc1.bias", "body.0.weight",
                                           "body.0.bias"]
    assert [p.name for p in net.trainable_params()] == ["fc1.weight", "fc1.bias",
                                                        "body.0.weight", "body.0.bias"]
    net.set_train()
    assert net.training and net.body.training
    assert net(ms.Tensor(np.ones((2, 3), np.float32))).shape == (2, 4)


def _optimizer_case(opt_cls, kwargs, numpy_step, steps=3, rtol=1e-12):
    p0 = x64(4, 3)
    w = ms.Parameter(p0.copy(), name="w")
    opt = opt_cls([w], **kwargs)
    grads = [x64(4, 3) for _ in range(steps)]
    state, p = {}, p0.copy()
    for g in grads:
        opt((ms.Tensor(g),))
        p = numpy_step(p, g, state, **kwargs)
    np.testing.assert_allclose(w.asnumpy(), p, rtol=rtol, atol=1e-14)


def _sgd(p, g, state, learning_rate, momentum=0.0):
    if not momentum:
        return p - learning_rate * g
    state["a"] = momentum * state.get("a", 0) + g
    return p - learning_rate * state["a"]


def _momentum(p, g, state, learning_rate, momentum):
    state["a"] = momentum * state.get("a", 0) + g
    return p - learning_rate * state["a"]


def _adam(p, g, state, learning_rate, beta1=0.9, beta2=0.999, eps=1e-8):
    """The beta powers and the bias correction in float32, as MindSpore's Adam keeps them:
    in float64, 1 - beta2 at the first step differs from float32's by 4.7e-5 relative, which
    made a parameter near 0 miss rtol 1e-5 whenever the shared random draws put one there."""
    one = np.float32(1)
    state["b1"] = np.float32(state.get("b1", one) * np.float32(beta1))
    state["b2"] = np.float32(state.get("b2", one) * np.float32(beta2))
    correction = np.float32(np.sqrt(one - state["b2"]) / (one - state["b1"]))
    state["m"] = beta1 * state.get("m", 0) + (1 - beta1) * g
    state["v"] = beta2 * state.get("v", 0) + (1 - beta2) * g * g
    lr = np.float64(np.float32(learning_rate)) * np.float64(correction)
    return p - lr * state["m"] / (np.sqrt(state["v"]) + eps)


@pytest.mark.parametrize("opt_cls,kwargs,step", [
    (nn.SGD, dict(learning_rate=0.1), _sgd),
    (nn.SGD, dict(learning_rate=0.1, momentum=0.9), _sgd),
    (nn.Momentum, dict(learning_rate=0.05, momentum=0.8), _momentum),
    (nn.Adam, dict(learning_rate=0.01), _adam),
], ids=["sgd", "sgd-momentum", "momentum", "adam"])
def test_optimizers_match_numpy(mode, opt_cls, kwargs, step):
    # Adam keeps its beta powers in float32, as MindSpore does: float32-exact step sizes.
    _optimizer_case(opt_cls, kwargs, step, rtol=1e-5 if opt_cls is nn.Adam else 1e-12)


def test_optimizer_update_is_compiled_once_and_follows_hyperparameters(mode):
    """As MindSpore's `@jit` optimizers: one compiled update in both modes, re-used across
    steps; a changed learning rate (a plain attribute) recompiles instead of going stale."""
    p0, g = x64(4, 3), x64(4, 3)
    w = ms.Parameter(p0.copy(), name="w")
    opt = nn.Momentum([w], learning_rate=0.1, momentum=0.5)
    opt((ms.Tensor(g),))
    opt((ms.Tensor(g),))
    assert opt._graph_fn.cache_info()["compiles"] == 1
    opt.learning_rate = 0.01
    opt((ms.Tensor(g),))
    assert opt._graph_fn.cache_info()["compiles"] == 2
    state, p = {}, p0.copy()
    for lr in (0.1, 0.1, 0.01):
        p = _momentum(p, g, state, lr, 0.5)
    np.testing.assert_allclose(w.asnumpy(), p, rtol=1e-12)


def test_optimizer_checks_gradient_count():
    w = ms.Parameter(np.ones(2), name="w")
    with pytest.raises(ValueError, match="updates 1 parameters but got 2 gradients"):
        nn.SGD([w], 0.1)((ms.Tensor(np.ones(2)), ms.Tensor(np.ones(2))))


def test_to_float_inserts_casts_and_keeps_float32_masters():
    net = nn.Dense(4, 2).to_float(ms.float16)
    x = ms.Tensor(np.ones((3, 4), np.float32))
    text = ms.jit(lambda v: net(v)).lower(x).as_text("ms")
    assert text.count('"ms.cast"') == 3  # the input and both parameters
    assert net.weight.dtype is ms.float32
    assert net(x).dtype is ms.float16
    assert ops.cast(net(x), ms.float32).dtype is ms.float32


def _bn_net(seed=0):
    nn.set_seed(seed)
    net = nn.SequentialCell([nn.Dense(3, 4, dtype=ms.float64), nn.BatchNorm1d(4, dtype=ms.float64),
                             nn.ReLU(), nn.Dense(4, 2, dtype=ms.float64)])
    return net.set_train()


def test_batchnorm_normalizes_and_tracks_moving_statistics(mode):
    x = x64(8, 3) * 2 + 1
    bn = nn.BatchNorm1d(3, momentum=0.8, dtype=ms.float64).set_train()
    got = bn(ms.Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-12)
    # moving = momentum * moving + (1 - momentum) * batch, the variance unbiased
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), 0.2 * x.mean(0), rtol=1e-12)
    np.testing.assert_allclose(bn.moving_variance.asnumpy(), 0.8 + 0.2 * x.var(0, ddof=1),
                               rtol=1e-12)
    bn.set_train(False)
    mean, var = bn.moving_mean.asnumpy(), bn.moving_variance.asnumpy()
    np.testing.assert_allclose(bn(ms.Tensor(x)).asnumpy(), (x - mean) / np.sqrt(var + 1e-5),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="expects input of rank 2 with 3 channels"):
        bn(ms.Tensor(x64(8, 4)))


def test_batchnorm2d_normalizes_each_channel(mode):
    x = x64(2, 3, 4, 5)
    got = nn.BatchNorm2d(3, dtype=ms.float64).set_train()(ms.Tensor(x)).asnumpy()
    mean, var = x.mean((0, 2, 3), keepdims=True), x.var((0, 2, 3), keepdims=True)
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(var + 1e-5), rtol=1e-12)


def test_ops_batch_norm_functional(mode):
    """MindSpore's ops.batch_norm: training normalizes with the batch's statistics and
    writes running = (1 - momentum) * running + momentum * batch (the variance unbiased);
    inference normalizes with the running statistics; its argument errors."""
    x, w, b = x64(6, 3, 2, 2) * 2 + 1, x64(3) + 2, x64(3)
    mean0, var0 = x64(3), x64(3) ** 2 + 0.5
    rm, rv = ms.Parameter(ms.Tensor(mean0), name="rm"), ms.Parameter(ms.Tensor(var0), name="rv")
    args = (ms.Tensor(x), rm, rv, ms.Tensor(w), ms.Tensor(b))
    axes, shape = (0, 2, 3), (1, 3, 1, 1)
    got = ops.batch_norm(*args, training=True, momentum=0.3, eps=1e-3).asnumpy()
    mean, var = x.mean(axes), x.var(axes)
    want = ((x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-3) * w.reshape(shape)
            + b.reshape(shape))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rm.asnumpy(), 0.7 * mean0 + 0.3 * mean, rtol=1e-12)
    np.testing.assert_allclose(rv.asnumpy(), 0.7 * var0 + 0.3 * x.var(axes, ddof=1), rtol=1e-12)
    mean1, var1 = rm.asnumpy(), rv.asnumpy()
    got = ops.batch_norm(*args).asnumpy()
    want = ((x - mean1.reshape(shape)) / np.sqrt(var1.reshape(shape) + 1e-5) * w.reshape(shape)
            + b.reshape(shape))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    with pytest.raises(TypeError, match="For 'batch_norm', training must be a bool"):
        ops.batch_norm(*args, training=1)
    with pytest.raises(TypeError, match="For 'batch_norm', momentum must be a float"):
        ops.batch_norm(*args, momentum=1)
    with pytest.raises(ValueError, match=r"For 'batch_norm', momentum must be in \[0, 1\]"):
        ops.batch_norm(*args, training=True, momentum=1.5)


def test_gradients_through_batchnorm_training_match_finite_differences(mode):
    """The forward writes the moving statistics (ms.assign inside the differentiated
    function): the written values must carry no sensitivity, the gradients stay exact and the
    statistics are still updated, in both modes and under jit."""
    net, x, y = _bn_net(), ms.Tensor(x64(8, 3)), ms.Tensor(x64(8, 2))
    loss_fn = nn.MSELoss()
    params = net.trainable_params()
    grad_fn = ms.value_and_grad(lambda a, b: loss_fn(net(a), b), None, params)
    bn = net._cells[list(net._cells)[1]]
    loss, grads = grad_fn(x, y)
    h = x.asnumpy() @ params[0].asnumpy().T + params[1].asnumpy()
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), 0.1 * h.mean(0), rtol=1e-10)

    def loss_at(p, value):
        old = p.asnumpy().copy()
        p._data = value
        out = float(loss_fn(net(x), y).asnumpy())
        p._data = old
        return out
    eps = 1e-6
    for p, g in zip(params, grads):
        fd = np.zeros(p.shape)
        base = p.asnumpy()
        for idx in np.ndindex(p.shape):
            up, down = base.copy(), base.copy()
            up[idx] += eps
            down[idx] -= eps
            fd[idx] = (loss_at(p, up) - loss_at(p, down)) / (2 * eps)
        np.testing.assert_allclose(g.asnumpy(), fd, rtol=1e-6, atol=1e-8, err_msg=p.name)
    jitted = ms.jit(lambda a, b: grad_fn(a, b))
    mean_before = bn.moving_mean.asnumpy().copy()
    jloss, jgrads = jitted(x, y)
    np.testing.assert_allclose(float(jloss.asnumpy()), float(loss.asnumpy()), rtol=1e-12)
    for g, jg in zip(grads, jgrads):
        np.testing.assert_allclose(jg.asnumpy(), g.asnumpy(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), 0.9 * mean_before + 0.1 * h.mean(0),
                               rtol=1e-10)


def test_batchnorm_and_dropout_training_steps_agree_between_modes():
    """Three SGD steps of a network with BatchNorm and Dropout: PyNative (recorded, then
    re-used gradients) and graph mode (one jit step) draw the same masks and end with the same
    weights, statistics and random counter (each write happens once per step in both)."""
    x, y = ms.Tensor(x64(8, 3)), ms.Tensor(x64(8, 2))
    finals = []
    for mode in (ms.PYNATIVE_MODE, ms.GRAPH_MODE):
        ms.set_context(mode=mode)
        net = _bn_net(seed=3)
        net = nn.SequentialCell([net, nn.Dropout(p=0.25)]).set_train()
        opt = nn.SGD(net.trainable_params(), 0.1)
        grad_fn = ms.value_and_grad(lambda a, b: nn.MSELoss()(net(a), b), None, opt.parameters)

        def step(a, b):
            loss, grads = grad_fn(a, b)
            opt(grads)
            return loss
        step = ms.jit(step) if mode == ms.GRAPH_MODE else step
        for _ in range(3):
            step(x, y)
        finals.append({n: p.asnumpy().copy() for n, p in net.parameters_and_names()})
        finals[-1]["counter"] = ops._RandomState.counter().asnumpy().copy()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    assert finals[0].keys() == finals[1].keys() and "0.1.moving_mean" in finals[0]
    for name in finals[0]:
        np.testing.assert_allclose(finals[0][name], finals[1][name], rtol=1e-10, atol=1e-13,
                                   err_msg=name)


def test_dropout_masks_scale_and_reproduce(mode):
    """MindSpore's nn.Dropout: about a fraction p zeroed, the rest scaled by 1/(1-p), a new
    mask per call, the same sequence after set_seed, the identity in inference."""
    x = ms.Tensor(np.ones((200, 300), np.float32))
    drop = nn.Dropout(p=0.3).set_train()
    ms.set_seed(5)
    first, second = drop(x).asnumpy(), drop(x).asnumpy()
    assert set(np.unique(first)) == {0.0, np.float32(1 / 0.7)}
    assert abs((first == 0).mean() - 0.3) < 0.01  # 60000 draws: sigma 0.002
    assert not np.array_equal(first, second)
    ms.set_seed(5)
    np.testing.assert_array_equal(drop(x).asnumpy(), first)
    np.testing.assert_array_equal(drop.set_train(False)(x).asnumpy(), x.asnumpy())
    assert nn.Dropout(keep_prob=0.8).p == pytest.approx(0.2)
    with pytest.raises(ValueError, match="p must be in"):
        nn.Dropout(p=1.0)


def test_dropout_forward_and_gradient_share_the_mask(mode):
    """value = sum(mask * x * w) / (1-p) and its gradient mask * w / (1-p): the gradient's
    recomputed forward draws the same numbers as the forward."""
    x, w = x64(50, 40), x64(50, 40)
    vg = ms.value_and_grad(lambda t: ops.reduce_sum(ops.dropout(t, 0.4) * ms.Tensor(w)))
    value, grad = vg(ms.Tensor(x))
    g = grad.asnumpy()
    kept = g != 0
    assert 0.5 < kept.mean() < 0.7
    np.testing.assert_allclose(g[kept], w[kept] / 0.6, rtol=1e-12)
    np.testing.assert_allclose(float(value.asnumpy()), (g * x).sum(), rtol=1e-10)


def _conv_ref(x, w, b, stride, pads, dilation):
    """Direct convolution in float64: a sum over kernel offsets of strided input windows."""
    x = np.pad(x, ((0, 0), (0, 0), pads[0], pads[1]))
    _, _, h, wd = x.shape
    kh, kw = w.shape[2:]
    oh = (h - (kh - 1) * dilation[0] - 1) // stride[0] + 1
    ow = (wd - (kw - 1) * dilation[1] - 1) // stride[1] + 1
    y = 0
    for i in range(kh):
        for j in range(kw):
            top, left = i * dilation[0], j * dilation[1]
            window = x[:, :, top:top + (oh - 1) * stride[0] + 1:stride[0],
                       left:left + (ow - 1) * stride[1] + 1:stride[1]]
            y = y + np.einsum("nchw,oc->nohw", window, w[:, :, i, j])
    return y + (0 if b is None else b[None, :, None, None])


@pytest.mark.parametrize("kwargs,pads", [
    (dict(kernel_size=3), ((1, 1), (1, 1))),                        # "same", stride 1
    (dict(kernel_size=3, stride=2), ((1, 1), (0, 1))),              # "same": extra at the end
    (dict(kernel_size=(2, 3), pad_mode="valid"), ((0, 0), (0, 0))),
    (dict(kernel_size=3, pad_mode="pad", padding=(2, 0, 1, 1), has_bias=True),
     ((2, 0), (1, 1))),
    (dict(kernel_size=3, dilation=2, stride=(1, 2), has_bias=True), ((2, 2), (1, 2))),
], ids=["same", "same-stride2", "valid-2x3", "pad-bias", "dilated"])
def test_conv2d_matches_a_direct_convolution(mode, kwargs, pads):
    x = x64(2, 3, 9, 8)
    conv = nn.Conv2d(3, 4, dtype=ms.float64, **kwargs)
    want = _conv_ref(x, conv.weight.asnumpy(), conv.bias.asnumpy() if conv.has_bias else None,
                     conv.stride, pads, conv.dilation)
    np.testing.assert_allclose(conv(ms.Tensor(x)).asnumpy(), want, rtol=1e-12, atol=1e-12)


def test_conv2d_gradients_match_finite_differences(mode):
    conv = nn.Conv2d(2, 3, 3, stride=2, has_bias=True, dtype=ms.float64)
    x = ms.Tensor(x64(2, 2, 5, 5))
    w_out = ms.Tensor(x64(2, 3, 3, 3))  # a weighted sum of the outputs as the loss
    loss = lambda t: ops.reduce_sum(conv(t) * w_out)  # noqa: E731
    dx, (dw, db) = ms.grad(loss, 0, [conv.weight, conv.bias])(x)
    xs, eps = x.asnumpy(), 1e-6
    for target, analytic in ((conv.weight, dw), (conv.bias, db), (None, dx)):
        base = xs if target is None else target.asnumpy()
        fd = np.zeros(base.shape)
        for idx in np.ndindex(base.shape):
            vals = []
            for sign in (1, -1):
                moved = base.copy()
                moved[idx] += sign * eps
                if target is None:
                    vals.append(float(loss(ms.Tensor(moved)).asnumpy()))
                else:
                    target.set_data(moved)
                    vals.append(float(loss(x).asnumpy()))
            fd[idx] = (vals[0] - vals[1]) / (2 * eps)
        if target is not None:
            target.set_data(base)
        np.testing.assert_allclose(analytic.asnumpy(), fd, rtol=1e-6, atol=1e-8)


def test_pooling_matches_numpy(mode):
    x = x64(2, 3, 9, 8)
    np.testing.assert_array_equal(nn.MaxPool2d(2, 2)(ms.Tensor(x)).asnumpy(),
                                  x[:, :, :8, :8].reshape(2, 3, 4, 2, 4, 2).max((3, 5)))
    np.testing.assert_allclose(nn.AvgPool2d(3, 3)(ms.Tensor(x)).asnumpy(),
                               x[:, :, :9, :6].reshape(2, 3, 3, 3, 2, 3).mean((3, 5)),
                               rtol=1e-12)
    # "same": 3x3 windows, stride 2 over 9x8 -> 5x4; the padding (-inf) never wins
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (0, 1)), constant_values=-np.inf)
    want = np.max([padded[:, :, i:i + 9:2, j:j + 7:2] for i in range(3) for j in range(3)], 0)
    np.testing.assert_array_equal(nn.MaxPool2d(3, 2, pad_mode="same")(ms.Tensor(x)).asnumpy(),
                                  want)
    with pytest.raises(ValueError, match="pad_mode must be one of same, valid, pad"):
        nn.AvgPool2d(2, 2, pad_mode="full")
    with pytest.raises(ValueError, match=r"expects \(N, 3, H, W\) input"):
        nn.Conv2d(3, 4, 3)(ms.Tensor(np.ones((2, 4, 5, 5), np.float32)))
