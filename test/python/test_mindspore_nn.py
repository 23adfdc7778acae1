"""MindSpore's nn layers, losses, optimizers, initializers and lr schedules against numpy
float64 references, in both modes; gradients against central differences."""
import math

import numpy as np
import pytest

import mscc as ms
from mscc import nn, ops

rng = np.random.default_rng(7)


def x64(*shape):
    return rng.standard_normal(shape)


def softplus(v):
    return np.logaddexp(0, v)


def log_softmax(v, axis):
    v = v - v.max(axis, keepdims=True)
    return v - np.log(np.exp(v).sum(axis, keepdims=True))


# ------------------------------------------------------------------ activations
ACTIVATIONS = [
    (lambda: nn.LeakyReLU(), lambda v: np.where(v > 0, v, 0.2 * v)),
    (lambda: nn.LeakyReLU(0.05), lambda v: np.where(v > 0, v, 0.05 * v)),
    (lambda: nn.ELU(), lambda v: np.where(v > 0, v, np.expm1(np.minimum(v, 0)))),
    (lambda: nn.SiLU(), lambda v: v / (1 + np.exp(-v))),
    (lambda: nn.Mish(), lambda v: v * np.tanh(softplus(v))),
    (lambda: nn.HSwish(), lambda v: v * np.clip(v + 3, 0, 6) / 6),
    (lambda: nn.HSigmoid(), lambda v: np.clip(v + 3, 0, 6) / 6),
    (lambda: nn.ReLU6(), lambda v: np.clip(v, 0, 6)),
    (lambda: nn.LogSoftmax(), lambda v: log_softmax(v, -1)),
    (lambda: nn.LogSoftmax(axis=1), lambda v: log_softmax(v, 1)),
    (lambda: nn.Identity(), lambda v: v),
    (lambda: nn.PReLU(), lambda v: np.where(v > 0, v, 0.25 * v)),
]


@pytest.mark.parametrize("make,ref", ACTIVATIONS, ids=lambda v: "")
def test_activations_match_numpy(mode, make, ref):
    x = x64(3, 4, 5) * 4
    cell = make()
    if isinstance(cell, nn.PReLU):  # its Parameter is float32
        got = cell(ms.Tensor(x.astype(np.float32)))
        np.testing.assert_allclose(got.asnumpy(), ref(x.astype(np.float32)), rtol=1e-6)
        return
    got = cell(ms.Tensor(x))
    assert got.dtype is ms.float64 and got.shape == x.shape
    np.testing.assert_allclose(got.asnumpy(), ref(x), rtol=1e-12, atol=1e-14)


def test_activation_names_and_prelu_channels(mode):
    dense = nn.Dense(3, 2, activation="leakyrelu", dtype=ms.float64)
    assert isinstance(dense.activation, nn.LeakyReLU)
    for name in ("elu", "silu", "mish", "hswish", "logsoftmax", "prelu", "relu6"):
        nn.Dense(3, 2, activation=name)
    prelu = nn.PReLU(channel=3, w=[0.1, 0.2, 0.3])
    assert prelu.w.name == "a" and prelu.trainable_params() == [prelu.w]
    x = x64(2, 3, 4).astype(np.float32)
    want = np.where(x > 0, x, x * np.array([0.1, 0.2, 0.3], np.float32)[None, :, None])
    np.testing.assert_allclose(prelu(ms.Tensor(x)).asnumpy(), want, rtol=1e-6)
    with pytest.raises(ValueError, match="3 channels on axis 1"):
        prelu(ms.Tensor(np.ones((2, 4), np.float32)))
    with pytest.raises(ValueError, match="'w' must have shape"):
        nn.PReLU(channel=2, w=[0.1])


def test_dropout2d_drops_whole_channels(mode):
    x = ms.Tensor(np.ones((40, 50, 3, 3), np.float32))
    drop = nn.Dropout2d(p=0.4).set_train()
    ms.set_seed(3)
    out = drop(x).asnumpy()
    per_channel = out.reshape(40, 50, 9)
    assert (per_channel.min(-1) == per_channel.max(-1)).all()  # one value per channel
    assert set(np.unique(out)) == {0.0, np.float32(1 / 0.6)}
    assert abs((per_channel[..., 0] == 0).mean() - 0.4) < 0.05  # 2000 channels
    np.testing.assert_array_equal(drop.set_train(False)(x).asnumpy(), x.asnumpy())
    with pytest.raises(ValueError, match="must be 4-D"):
        nn.Dropout2d().set_train()(ms.Tensor(np.ones((2, 3), np.float32)))
    with pytest.raises(ValueError, match="range \\[0, 1\\]"):
        nn.Dropout2d(p=1.5)


def test_embedding(mode):
    ms.set_seed(0)
    emb = nn.Embedding(10, 4, padding_idx=2)
    table = emb.embedding_table.asnumpy()
    assert table.shape == (10, 4) and (table[2] == 0).all()
    assert abs(table[[0, 1, 3]].std() - 0.01) < 0.005  # 'normal': Normal(sigma=0.01)
    ids = np.array([[1, 2, 9], [0, 0, 5]], np.int32)
    out = emb(ms.Tensor(ids))
    assert out.shape == (2, 3, 4) and out.dtype is ms.float32
    np.testing.assert_array_equal(out.asnumpy(), table[ids])
    hot = nn.Embedding(10, 4, use_one_hot=True, embedding_table=table)
    np.testing.assert_allclose(hot(ms.Tensor(ids)).asnumpy(), table[ids], rtol=1e-6)
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(10, 4, padding_idx=10)
    with pytest.raises(TypeError, match="ids must be integers"):
        emb(ms.Tensor(np.ones(3, np.float32)))


def test_embedding_gradient_sums_rows(mode):
    emb = nn.Embedding(5, 3, embedding_table="ones")
    ids = ms.Tensor(np.array([1, 3, 1], np.int32))
    w = x64(3, 3).astype(np.float32)
    grad = ms.grad(lambda i: ops.reduce_sum(emb(i) * ms.Tensor(w)), None,
                   [emb.embedding_table])(ids)[0].asnumpy()
    want = np.zeros((5, 3), np.float32)
    np.add.at(want, [1, 3, 1], w)
    np.testing.assert_allclose(grad, want, rtol=1e-6)


# ------------------------------------------------------------------ losses
def _nll_ref(logp, y, weight=None, ignore_index=-100, reduction="mean", smoothing=0.0):
    """MindSpore's _nll_loss in numpy (class axis 1)."""
    classes = logp.shape[1]
    keep = y != ignore_index
    safe = np.where(keep, y, 0)
    picked = -np.take_along_axis(logp, safe[:, None], 1)[:, 0]
    w = np.ones(classes) if weight is None else weight
    weights = w[safe] * keep
    loss, smooth = picked * weights, -logp.sum(1) * keep
    if reduction == "sum":
        loss, smooth = loss.sum(), smooth.sum()
    elif reduction == "mean":
        loss, smooth = loss.sum() / weights.sum(), smooth.mean()
    return (1 - smoothing) * loss + smoothing / classes * smooth


LOGITS, LABELS = x64(6, 4), np.array([0, 3, 1, 1, 2, 3], np.int32)
PROBS = rng.uniform(0.05, 0.95, (6, 4))
TARGETS = rng.uniform(0, 1, (6, 4))
WEIGHT = np.array([0.5, 1.0, 2.0, 1.5])
W32 = ms.Tensor(WEIGHT.astype(np.float32))


def _reduce(v, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction](v)


LOSSES = [  # (id, loss cell, logits, labels, numpy reference)
    ("l1", lambda r: nn.L1Loss(r), LOGITS, TARGETS, lambda a, b, r: _reduce(np.abs(a - b), r)),
    ("smoothl1", lambda r: nn.SmoothL1Loss(0.5, r), LOGITS, TARGETS,
     lambda a, b, r: _reduce(np.where(np.abs(a - b) < 0.5, (a - b) ** 2, np.abs(a - b) - 0.25), r)),
    ("huber", lambda r: nn.HuberLoss(r, delta=0.7), LOGITS, TARGETS,
     lambda a, b, r: _reduce(np.where(np.abs(a - b) < 0.7, 0.5 * (a - b) ** 2,
                                      0.7 * (np.abs(a - b) - 0.35)), r)),
    ("bce", lambda r: nn.BCELoss(reduction=r), PROBS, TARGETS,
     lambda a, b, r: _reduce(-(b * np.log(a + 1e-12) + (1 - b) * np.log(1 - a + 1e-12)), r)),
    ("bcelogits", lambda r: nn.BCEWithLogitsLoss(r), LOGITS, TARGETS,
     lambda a, b, r: _reduce(b * softplus(-a) + (1 - b) * softplus(a), r)),
    ("kldiv", lambda r: nn.KLDivLoss(r), LOGITS, np.where(TARGETS > 0.3, TARGETS, 0.0),
     lambda a, b, r: _reduce(np.where(b > 0, b * (np.log(np.where(b > 0, b, 1)) - a), 0), r)),
    ("nll", lambda r: nn.NLLLoss(reduction=r), log_softmax(LOGITS, 1), LABELS,
     lambda a, b, r: _nll_ref(a, b, reduction=r)),
    ("ce", lambda r: nn.CrossEntropyLoss(reduction=r), LOGITS, LABELS,
     lambda a, b, r: _nll_ref(log_softmax(a, 1), b, reduction=r)),
    ("ce-probs", lambda r: nn.CrossEntropyLoss(reduction=r), LOGITS, TARGETS,
     lambda a, b, r: {"mean": lambda v: v.sum() / 6, "sum": np.sum, "none": lambda v: v.sum(1)}[r](
         -(log_softmax(a, 1) * b))),
]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", LOSSES, ids=[c[0] for c in LOSSES])
def test_losses_match_numpy(mode, case, reduction):
    _, make, logits, labels, ref = case
    got = make(reduction)(ms.Tensor(logits), ms.Tensor(labels))
    want = ref(logits, labels, reduction)
    assert got.dtype is ms.float64 and got.shape == np.shape(want)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10, atol=1e-14)


def test_loss_defaults_and_documented_examples(mode):
    a, b = ms.Tensor(np.array([1, 2, 3], np.float32)), ms.Tensor(np.array([1, 2, 2], np.float32))
    np.testing.assert_allclose(nn.L1Loss()(a, b).asnumpy(), 0.33333334, rtol=1e-6)
    np.testing.assert_allclose(nn.SmoothL1Loss()(a, b).asnumpy(), [0, 0, 0.5])  # 'none'
    np.testing.assert_allclose(nn.HuberLoss()(a, b).asnumpy(), 0.16666667, rtol=1e-6)
    kl = nn.KLDivLoss(reduction="mean")(ms.Tensor(np.array([0.2, 0.7, 0.1], np.float32)),
                                        ms.Tensor(np.array([0.0, 1.0, 0.0], np.float32)))
    np.testing.assert_allclose(kl.asnumpy(), -0.23333333, rtol=1e-6)
    logits = ms.Tensor(np.array([[-0.8, 1.2, 0.7], [-0.1, -0.4, 0.7]], np.float32))
    labels = ms.Tensor(np.array([[0.3, 0.8, 1.2], [-0.6, 0.1, 2.2]], np.float32))
    np.testing.assert_allclose(nn.BCEWithLogitsLoss()(logits, labels).asnumpy(), 0.3463612,
                               rtol=1e-6)
    batchmean = nn.KLDivLoss("batchmean")(ms.Tensor(LOGITS), ms.Tensor(TARGETS)).asnumpy()
    np.testing.assert_allclose(batchmean, (TARGETS * (np.log(TARGETS) - LOGITS)).sum() / 6,
                               rtol=1e-10)


def test_cross_entropy_weight_ignore_index_and_smoothing(mode):
    y = LABELS.copy()
    y[2] = -100
    for kwargs in (dict(weight=W32), dict(label_smoothing=0.2), dict(weight=W32, label_smoothing=0.1)):
        for reduction in ("mean", "sum", "none"):
            loss = nn.CrossEntropyLoss(reduction=reduction, **kwargs)
            got = loss(ms.Tensor(LOGITS.astype(np.float32)), ms.Tensor(y)).asnumpy()
            want = _nll_ref(log_softmax(LOGITS, 1), y, WEIGHT if "weight" in kwargs else None,
                            reduction=reduction, smoothing=kwargs.get("label_smoothing", 0.0))
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=str(kwargs))
    nll = nn.NLLLoss(weight=W32, ignore_index=3)(ms.Tensor(log_softmax(LOGITS, 1).astype(np.float32)),
                                                 ms.Tensor(LABELS))
    np.testing.assert_allclose(nll.asnumpy(), _nll_ref(log_softmax(LOGITS, 1), LABELS, WEIGHT, 3),
                               rtol=2e-5)
    # (N, C, d): the class axis is 1
    x3, y3 = x64(2, 4, 3), rng.integers(0, 4, (2, 3)).astype(np.int32)
    got = nn.CrossEntropyLoss(reduction="none")(ms.Tensor(x3), ms.Tensor(y3)).asnumpy()
    want = -np.take_along_axis(log_softmax(x3, 1), y3[:, None], 1)[:, 0]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    probs = nn.CrossEntropyLoss(label_smoothing=0.3)(ms.Tensor(LOGITS), ms.Tensor(TARGETS))
    np.testing.assert_allclose(probs.asnumpy(), -(log_softmax(LOGITS, 1) * (TARGETS * 0.7 + 0.3 / 4)).sum() / 6,
                               rtol=1e-12)


def test_loss_errors():
    with pytest.raises(ValueError, match="'reduction' must be in"):
        nn.L1Loss("avg")
    with pytest.raises(ValueError, match="'reduction' must be in"):
        nn.KLDivLoss("avg")
    with pytest.raises(TypeError, match="label_smoothing"):
        nn.CrossEntropyLoss(label_smoothing=1)
    with pytest.raises(ValueError, match="label_smoothing"):
        nn.CrossEntropyLoss(label_smoothing=1.5)
    with pytest.raises(TypeError, match="ignore_index"):
        nn.NLLLoss(ignore_index=1.0)
    with pytest.raises(TypeError, match="can not be a Parameter"):
        nn.BCEWithLogitsLoss(weight=ms.Parameter(np.ones(4, np.float32), name="w"))
    with pytest.raises(ValueError, match="'beta' must be greater than 0"):
        nn.SmoothL1Loss(beta=0)
    with pytest.raises(ValueError, match="'delta' must be greater than 0"):
        nn.HuberLoss(delta=-1.0)
    with pytest.raises(ValueError, match="rank of 'logits' and 'labels'"):
        nn.CrossEntropyLoss()(ms.Tensor(LOGITS), ms.Tensor(np.zeros((6, 4, 1))))
    with pytest.raises(ValueError, match="shape of 'logits' must be the same"):
        nn.SmoothL1Loss()(ms.Tensor(LOGITS), ms.Tensor(LOGITS[:3]))


def _central_difference(f, x, eps=1e-6):
    fd = np.zeros(x.shape)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        fd[idx] = (f(up) - f(down)) / (2 * eps)
    return fd


GRAD_LOSSES = [(c[0], c[1], c[2], c[3]) for c in LOSSES] + [
    ("ce-weight-smooth", lambda r: nn.CrossEntropyLoss(weight=ms.Tensor(WEIGHT), reduction=r,
                                                       label_smoothing=0.1), LOGITS, LABELS),
    ("bce-posweight", lambda r: nn.BCEWithLogitsLoss(r, pos_weight=ms.Tensor(WEIGHT)), LOGITS,
     TARGETS)]


@pytest.mark.parametrize("case", GRAD_LOSSES, ids=[c[0] for c in GRAD_LOSSES])
def test_loss_gradients_match_finite_differences(mode, case):
    _, make, logits, labels = case
    loss = make("mean")
    y = ms.Tensor(labels)
    value = lambda v: float(loss(ms.Tensor(v), y).asnumpy())  # noqa: E731
    grad = ms.grad(lambda v: loss(v, y))(ms.Tensor(logits)).asnumpy()
    np.testing.assert_allclose(grad, _central_difference(value, logits), rtol=1e-6, atol=1e-8)


def _param_grad_check(cell, x, params):
    out_w = ms.Tensor(x64(*cell(x).shape))
    loss = lambda: float(ops.reduce_sum(cell(x) * out_w).asnumpy())  # noqa: E731
    grads = ms.grad(lambda v: ops.reduce_sum(cell(v) * out_w), None, params)(x)
    for p, g in zip(params, grads):
        base = p.asnumpy().copy()

        def at(v):
            p.set_data(v)
            return loss()
        fd = _central_difference(at, base)
        p.set_data(base)
        np.testing.assert_allclose(g.asnumpy(), fd, rtol=1e-6, atol=1e-8, err_msg=p.name)


def test_parameterized_layer_gradients(mode):
    prelu = nn.PReLU(channel=3, w=np.array([0.1, 0.2, 0.3]))
    _param_grad_check(prelu, ms.Tensor(x64(4, 3, 2)), [prelu.w])
    norm = nn.LayerNorm((3,), gamma_init=x64(3), beta_init=x64(3), dtype=ms.float64)
    _param_grad_check(norm, ms.Tensor(x64(4, 3)), [norm.gamma, norm.beta])
    dense = nn.Dense(3, 2, activation="mish", dtype=ms.float64)
    _param_grad_check(dense, ms.Tensor(x64(4, 3)), [dense.weight, dense.bias])


# ------------------------------------------------------------------ initializers
INIT = ms.nn.init


@pytest.mark.parametrize("init,mean,std", [
    (INIT.Normal(0.5, 1.0), 1.0, 0.5),
    (INIT.Uniform(0.3), 0.0, 0.3 / math.sqrt(3)),
    (INIT.HeUniform(), 0.0, math.sqrt(2 / 400)),                 # fan_in = 20 * 4 * 5
    (INIT.HeUniform(math.sqrt(5)), 0.0, math.sqrt(1 / 3 / 400)),
    (INIT.HeNormal(mode="fan_out"), 0.0, math.sqrt(2 / 600)),    # fan_out = 30 * 4 * 5
    (INIT.HeNormal(nonlinearity="relu"), 0.0, math.sqrt(2 / 400)),
    (INIT.XavierUniform(gain=2), 0.0, 2 * math.sqrt(2 / 1000)),
    (INIT.XavierNormal(), 0.0, math.sqrt(2 / 1000)),
    ("normal", 0.0, 0.01), ("uniform", 0.0, 0.07 / math.sqrt(3)),
    ("he_uniform", 0.0, math.sqrt(2 / 400)), ("xavier_normal", 0.0, math.sqrt(2 / 1000)),
], ids=lambda v: repr(v) if isinstance(v, str) else "")
def test_initializer_statistics(init, mean, std):
    t = nn.initializer(init, (30, 20, 4, 5), ms.float64)
    assert isinstance(t, ms.Tensor) and t.dtype is ms.float64 and t.shape == (30, 20, 4, 5)
    v = t.asnumpy()
    assert abs(v.mean() - mean) < 4 * std / math.sqrt(v.size) + 1e-12
    assert abs(v.std() / std - 1) < 0.03


def test_initializer_fans_constants_and_seed():
    assert INIT._fans((30, 20, 4, 5)) == (400, 600) and INIT._fans((7, 3)) == (3, 7)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.initializer("he_uniform", (5,))
    assert INIT.calculate_gain("leaky_relu", 0) == math.sqrt(2)
    assert INIT.calculate_gain("tanh") == 5 / 3
    t = nn.initializer(INIT.TruncatedNormal(1.0, a=-1.5, b=1.2), (20000,), ms.float32).asnumpy()
    assert t.min() >= -1.5 and t.max() <= 1.2 and t.dtype == np.float32
    np.testing.assert_array_equal(nn.initializer(INIT.Constant(3), (2, 2)).asnumpy(), 3)
    np.testing.assert_array_equal(nn.initializer("ones", 3, ms.int32).asnumpy(), [1, 1, 1])
    np.testing.assert_array_equal(nn.initializer(INIT.Zero(), (2,)).asnumpy(), [0, 0])
    ms.set_seed(9)
    first = nn.initializer("Normal", (50,)).asnumpy()
    ms.set_seed(9)
    np.testing.assert_array_equal(nn.initializer("normal", (50,)).asnumpy(), first)
    with pytest.raises(ValueError, match="unknown initializer"):
        nn.initializer("gaussian", (2, 2))


def test_layers_take_initializers():
    d = nn.Dense(4, 3, weight_init="zeros", bias_init=INIT.Constant(0.5))
    np.testing.assert_array_equal(d.weight.asnumpy(), 0)
    np.testing.assert_array_equal(d.bias.asnumpy(), 0.5)
    c = nn.Conv2d(2, 3, 3, weight_init=INIT.Normal(0.2), has_bias=True, bias_init="ones")
    assert abs(c.weight.asnumpy().std() - 0.2) < 0.08
    np.testing.assert_array_equal(c.bias.asnumpy(), 1)
    ln = nn.LayerNorm((4,), gamma_init="zeros", beta_init=INIT.One())
    np.testing.assert_array_equal(ln(ms.Tensor(x64(2, 4))).asnumpy(), 1)
    # MindSpore 2.x defaults: HeUniform(sqrt(5)) weights, U(-1/sqrt(fan_in), ..) biases
    big = nn.Dense(400, 300)
    bound = math.sqrt(3) * math.sqrt(2 / 6) / math.sqrt(400)
    assert bound * 0.98 < np.abs(big.weight.asnumpy()).max() <= bound
    assert 0.049 < np.abs(big.bias.asnumpy()).max() <= 0.05


# ------------------------------------------------------------------ cells
def test_cell_list_and_dict(mode):
    layers = nn.CellList([nn.Dense(3, 3, dtype=ms.float64), nn.ReLU()])
    layers.append(nn.Dense(3, 2, dtype=ms.float64))
    layers.insert(1, nn.Tanh())
    assert [type(c).__name__ for c in layers] == ["Dense", "Tanh", "ReLU", "Dense"]
    assert len(layers) == 4 and isinstance(layers[1:], nn.CellList)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.layers = layers
            self.heads = nn.CellDict({"a": nn.Dense(2, 1, dtype=ms.float64)})

        def construct(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.heads["a"](x)

    net = Net()
    assert [n for n, _ in net.parameters_and_names()] == [
        "layers.0.weight", "layers.0.bias", "layers.3.weight", "layers.3.bias",
        "heads.a.weight", "heads.a.bias"]
    x = x64(5, 3)
    h = np.tanh(x @ layers[0].weight.asnumpy().T + layers[0].bias.asnumpy())
    h = np.maximum(h, 0) @ layers[3].weight.asnumpy().T + layers[3].bias.asnumpy()
    want = h @ net.heads["a"].weight.asnumpy().T + net.heads["a"].bias.asnumpy()
    np.testing.assert_allclose(net(ms.Tensor(x)).asnumpy(), want, rtol=1e-12)
    assert "a" in net.heads and list(net.heads.keys()) == ["a"]
    net.heads.pop("a")
    assert len(net.heads) == 0 and len(net.trainable_params()) == 4
    with pytest.raises(TypeError, match="must be a Cell"):
        layers.append(3)
    with pytest.raises(ValueError, match="without '.'"):  # (the boundary reports KeyErrors so)
        nn.CellDict({"a.b": nn.ReLU()})


def test_parameter_attribute_writes_update_the_parameter(mode):
    class Counter(nn.Cell):
        def __init__(self):
            super().__init__()
            self.step = ms.Parameter(np.zeros((), np.float32), name="step", requires_grad=False)
            self.w = ms.Parameter(np.ones(2, np.float32), name="w")

        def construct(self, x):
            self.step += 1         # an ms.assign in graph mode
            self.w = self.w * 2.0
            return x * self.w

    net = Counter()
    w = net.w
    out = net(ms.Tensor(np.ones(2, np.float32)))
    np.testing.assert_array_equal(out.asnumpy(), [2, 2])
    net(ms.Tensor(np.ones(2, np.float32)))
    assert net.w is w and float(net.step.asnumpy()) == 2
    np.testing.assert_array_equal(w.asnumpy(), [4, 4])
    assert net.trainable_params() == [w]
    net.w = ms.Tensor(np.array([5.0, 6.0], np.float32))  # outside construct: set_data
    assert net.w is w and w.asnumpy().tolist() == [5, 6]
    with pytest.raises(TypeError, match="must be Parameter or Tensor"):
        net.w = [1.0, 2.0]


def test_insert_param_to_cell_and_set_grad():
    cell = nn.Cell()
    p = ms.Parameter(np.ones(3, np.float32))
    cell.insert_param_to_cell("bias", p)
    assert cell.bias is p and cell.trainable_params() == [p] and p.name == "bias"
    with pytest.raises(KeyError, match="should not contain '.'"):
        cell.insert_param_to_cell("a.b", p)
    with pytest.raises(TypeError, match="Parameter or None"):
        cell.insert_param_to_cell("c", ms.Tensor([1.0]))
    assert cell.set_grad() is cell and cell.requires_grad
    assert [n for n, _ in nn.SequentialCell([nn.ReLU()]).cells_and_names()] == ["", "0"]


# ------------------------------------------------------------------ optimizers
def _adamw(p, g, s, lr, beta1=0.9, beta2=0.999, eps=1e-6, weight_decay=0.0):
    s["m"] = beta1 * s.get("m", 0) + (1 - beta1) * g
    s["v"] = beta2 * s.get("v", 0) + (1 - beta2) * g * g
    return p - lr * (s["m"] / (np.sqrt(s["v"]) + eps) + weight_decay * p)


def _lamb(p, g, s, lr, beta1=0.9, beta2=0.999, eps=1e-6, weight_decay=0.0):
    t = s["t"] = s.get("t", 0) + 1
    s["m"] = beta1 * s.get("m", 0) + (1 - beta1) * g
    s["v"] = beta2 * s.get("v", 0) + (1 - beta2) * g * g
    r = (s["m"] / (1 - beta1 ** t)) / (np.sqrt(s["v"] / (1 - beta2 ** t)) + eps) + weight_decay * p
    ratio = np.linalg.norm(p) / np.linalg.norm(r)
    return p - lr * ratio * r


def _adagrad(p, g, s, lr, accum=0.1):
    s["a"] = s.get("a", accum) + g * g
    return p - lr * g / np.sqrt(s["a"])


def _rmsprop(p, g, s, lr, decay=0.9, momentum=0.0, epsilon=1e-10, centered=False):
    s["ms"] = decay * s.get("ms", 1.0) + (1 - decay) * g * g
    denom = s["ms"] + epsilon
    if centered:
        s["mg"] = decay * s.get("mg", 0) + (1 - decay) * g
        denom = denom - s["mg"] ** 2
    s["mom"] = momentum * s.get("mom", 0) + lr * g / np.sqrt(denom)
    return p - s["mom"]


def _sgd_wd(p, g, s, lr, weight_decay):
    return p - lr * (g + weight_decay * p)


def _renamed(kwargs):
    out = dict(kwargs)
    out["lr"] = out.pop("learning_rate")
    return out


@pytest.mark.parametrize("cls,kwargs,ref", [
    (nn.AdamWeightDecay, dict(learning_rate=0.01), _adamw),
    (nn.AdamWeightDecay, dict(learning_rate=0.01, weight_decay=0.1, eps=1e-8), _adamw),
    (nn.Lamb, dict(learning_rate=0.02), _lamb),
    (nn.Lamb, dict(learning_rate=0.02, weight_decay=0.05, beta1=0.8), _lamb),
    (nn.Adagrad, dict(learning_rate=0.05), _adagrad),
    (nn.Adagrad, dict(learning_rate=0.05, accum=0.5), _adagrad),
    (nn.RMSProp, dict(learning_rate=0.01), _rmsprop),
    (nn.RMSProp, dict(learning_rate=0.01, momentum=0.9, centered=True, decay=0.8), _rmsprop),
    (nn.SGD, dict(learning_rate=0.1, weight_decay=0.01), _sgd_wd),
], ids=["adamw", "adamw-wd", "lamb", "lamb-wd", "adagrad", "adagrad-accum", "rmsprop",
        "rmsprop-centered", "sgd-wd"])
def test_optimizers_match_numpy(mode, cls, kwargs, ref):
    p0 = x64(4, 3)
    w = ms.Parameter(p0.copy(), name="w")
    opt = cls([w], **kwargs)
    state, p = {}, p0.copy()
    for _ in range(4):
        g = x64(4, 3)
        opt((ms.Tensor(g),))
        p = ref(p, g, state, **_renamed(kwargs))
    np.testing.assert_allclose(w.asnumpy(), p, rtol=1e-10, atol=1e-13)
    assert int(opt.global_step.asnumpy()) == 4


def test_weight_decay_skips_beta_and_gamma(mode):
    w = ms.Parameter(np.ones(2), name="fc.weight")
    gamma = ms.Parameter(np.ones(2), name="norm.gamma")
    opt = nn.Momentum([w, gamma], learning_rate=0.1, momentum=0.0, weight_decay=0.5)
    assert opt.decay_flags == (True, False)
    opt((ms.Tensor(np.zeros(2)), ms.Tensor(np.zeros(2))))
    np.testing.assert_allclose(w.asnumpy(), 1 - 0.1 * 0.5)
    np.testing.assert_allclose(gamma.asnumpy(), 1.0)


def test_dynamic_learning_rate(mode):
    lrs = nn.piecewise_constant_lr([2, 3], [0.1, 0.01])
    w = ms.Parameter(np.zeros(1), name="w")
    opt = nn.SGD([w], learning_rate=lrs)
    g = ms.Tensor(np.ones(1))
    for _ in range(5):  # past the list's end the last value is kept
        opt((g,))
    np.testing.assert_allclose(w.asnumpy(), -(0.1 + 0.1 + 0.01 + 0.01 + 0.01), rtol=1e-6)
    assert opt._graph_fn.cache_info()["compiles"] == 1  # the rate is data, not a constant
    w2 = ms.Parameter(np.zeros(1), name="w2")
    opt2 = nn.SGD([w2], learning_rate=ms.Tensor(np.array([0.5, 0.25], np.float32)))
    opt2((g,))
    opt2((g,))
    np.testing.assert_allclose(w2.asnumpy(), -0.75)
    with pytest.raises(TypeError, match="learning_rate"):
        nn.SGD([w], learning_rate="0.1")
    with pytest.raises(ValueError, match="cannot be recognized in group params"):
        nn.SGD([{"params": [w], "momentum": 0.9}], learning_rate=0.1)  # groups: test_optimizer_groups.py
    with pytest.raises(ValueError, match="loss_scale"):
        nn.Momentum([w], 0.1, 0.9, loss_scale=8.0)


# ------------------------------------------------------------------ lr schedules
def test_lr_schedules_match_mindspore_examples():
    assert nn.piecewise_constant_lr([2, 5, 10], [0.1, 0.05, 0.01]) == \
        [0.1, 0.1, 0.05, 0.05, 0.05, 0.01, 0.01, 0.01, 0.01, 0.01]
    np.testing.assert_allclose(nn.exponential_decay_lr(0.1, 0.9, 6, 2, 1),
                               [0.1, 0.1, 0.09, 0.09, 0.081, 0.081])
    np.testing.assert_allclose(nn.natural_exp_decay_lr(0.1, 0.9, 6, 2, 2, True),
                               [0.1, 0.1, 0.1, 0.1, 0.016529888822158657, 0.016529888822158657])
    np.testing.assert_allclose(nn.inverse_decay_lr(0.1, 0.5, 6, 2, 1),
                               [0.1, 0.1, 0.06666666666666667, 0.06666666666666667, 0.05, 0.05])
    np.testing.assert_allclose(nn.cosine_decay_lr(0.01, 0.1, 6, 2, 2),
                               [0.1, 0.1, 0.055, 0.055, 0.01, 0.01])
    np.testing.assert_allclose(nn.polynomial_decay_lr(0.1, 0.01, 6, 2, 2, 0.5),
                               [0.1, 0.1, 0.07363961030678928, 0.07363961030678928, 0.01, 0.01])
    np.testing.assert_allclose(nn.warmup_lr(0.1, 6, 2, 2), [0.0, 0.0, 0.05, 0.05, 0.1, 0.1])
    grown = nn.polynomial_decay_lr(0.1, 0.0, 8, 1, 2, 1.0, update_decay_epoch=True)
    np.testing.assert_allclose(grown, [0.1, 0.05, 0.0, 0.1 / 4, 0.0, 0.1 * 3 / 8, 0.1 / 4, 0.1 / 8])
    with pytest.raises(ValueError, match="strictly increasing"):
        nn.piecewise_constant_lr([2, 2], [0.1, 0.2])
    with pytest.raises(TypeError, match="'learning_rate' must be a float"):
        nn.exponential_decay_lr(1, 0.9, 6, 2, 1)
    with pytest.raises(ValueError, match="'total_step' must be a positive int"):
        nn.warmup_lr(0.1, 0, 2, 2)
    with pytest.raises(ValueError, match="greater than 'min_lr'"):
        nn.cosine_decay_lr(0.1, 0.01, 6, 2, 2)


# ------------------------------------------------------------------ clipping
def test_clip_by_norm_and_global_norm(mode):
    x = x64(3, 4)
    clip = nn.ClipByNorm()
    got = clip(ms.Tensor(x), ms.Tensor(np.array(1.0))).asnumpy()
    np.testing.assert_allclose(got, x / max(np.linalg.norm(x), 1.0), rtol=1e-12)
    rows = nn.ClipByNorm(axis=1)(ms.Tensor(x), ms.Tensor(np.array(0.5))).asnumpy()
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(rows, x * 0.5 / np.maximum(norms, 0.5), rtol=1e-12)
    small = nn.ClipByNorm()(ms.Tensor(x * 1e-3), ms.Tensor(np.array(1.0))).asnumpy()
    np.testing.assert_allclose(small, x * 1e-3, rtol=1e-12)  # within the norm: unchanged
    a, b = x64(2, 2), x64(3)
    out = nn.clip_by_global_norm((ms.Tensor(a), ms.Tensor(b)), 0.7)
    total = math.sqrt((a ** 2).sum() + (b ** 2).sum())
    for got, want in zip(out, (a, b)):
        np.testing.assert_allclose(got.asnumpy(), want * 0.7 / max(total, 0.7), rtol=1e-12)
    zero = ms.grad(lambda v: ops.reduce_sum(clip(v, ms.Tensor(np.array(1.0)))))(
        ms.Tensor(np.zeros((2, 2))))
    assert np.isfinite(zero.asnumpy()).all()
    with pytest.raises(ValueError, match="use_norm"):
        nn.clip_by_global_norm((ms.Tensor(a),), 1.0, use_norm=1.0)
