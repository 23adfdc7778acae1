"""MindSpore's parameter groups and LearningRateSchedule cells on mscc's optimizers.

Every optimizer takes `params` as a list of dicts (per-group 'lr', 'weight_decay',
'grad_centralization', plus 'order_params'); each is checked against a numpy transcription of
MindSpore's update over several steps, in both modes, with a fixed, a per-step list and a
schedule rate in one optimizer. The schedule cells are checked against MindSpore's documented
example values and against the list-returning functions of nn.dynamic_lr; a schedule is data
inside the compiled update (one compile for every step).
"""
import math

import numpy as np
import pytest

import mscc as ms
from mscc import nn

rng = np.random.default_rng(7)


# ------------------------------------------------------------------ numpy references
def _centralize(g, on):
    """MindSpore's Centralization, where it applies (2+ dims, shape[1] % 16 == 0)."""
    if on and g.ndim >= 2 and g.shape[1] % 16 == 0:
        return g - g.mean(axis=tuple(range(1, g.ndim)), keepdims=True)
    return g


def _sgd(p, g, s, lr, wd, t):
    s["a"] = 0.9 * s.get("a", 0) + g
    return p - lr * s["a"]


def _momentum(p, g, s, lr, wd, t):
    s["a"] = 0.9 * s.get("a", 0) + g
    return p - lr * s["a"]


def _adam(p, g, s, lr, wd, t):
    # The beta powers are float32 products and the bias correction float32, as MindSpore's
    # (1 - 0.999^t loses digits in float32: the reference must round the same way).
    b1p = s["b1p"] = np.float32(s.get("b1p", np.float32(1)) * np.float32(0.9))
    b2p = s["b2p"] = np.float32(s.get("b2p", np.float32(1)) * np.float32(0.999))
    correction = np.sqrt(np.float32(1) - b2p) / (np.float32(1) - b1p)
    s["m"] = 0.9 * s.get("m", 0) + 0.1 * g
    s["v"] = 0.999 * s.get("v", 0) + 0.001 * g * g
    return p - lr * float(correction) * s["m"] / (np.sqrt(s["v"]) + 1e-8)


def _adamw(p, g, s, lr, wd, t):
    s["m"] = 0.9 * s.get("m", 0) + 0.1 * g
    s["v"] = 0.999 * s.get("v", 0) + 0.001 * g * g
    return p - lr * (s["m"] / (np.sqrt(s["v"]) + 1e-6) + wd * p)


def _lamb(p, g, s, lr, wd, t):
    s["m"] = 0.9 * s.get("m", 0) + 0.1 * g
    s["v"] = 0.999 * s.get("v", 0) + 0.001 * g * g
    r = (s["m"] / (1 - 0.9 ** t)) / (np.sqrt(s["v"] / (1 - 0.999 ** t)) + 1e-6) + wd * p
    return p - lr * np.linalg.norm(p) / np.linalg.norm(r) * r


def _adagrad(p, g, s, lr, wd, t):
    s["a"] = s.get("a", 0.1) + g * g
    return p - lr * g / np.sqrt(s["a"])


def _rmsprop(p, g, s, lr, wd, t):
    s["ms"] = 0.9 * s.get("ms", 1.0) + 0.1 * g * g
    s["mom"] = 0.5 * s.get("mom", 0) + lr * g / np.sqrt(s["ms"] + 1e-10)
    return p - s["mom"]


# (constructor, numpy step, where the weight decay goes: "after" the centralization (SGD's
# op), "before" it (on the gradient), or "update" (decoupled, inside the step)), rtol
OPTIMIZERS = {
    "SGD": (lambda ps, lr: nn.SGD(ps, lr, momentum=0.9, weight_decay=0.003), _sgd, "after"),
    "Momentum": (lambda ps, lr: nn.Momentum(ps, lr, 0.9, weight_decay=0.003), _momentum,
                 "before"),
    "Adam": (lambda ps, lr: nn.Adam(ps, lr, weight_decay=0.003), _adam, "before"),
    "AdamWeightDecay": (lambda ps, lr: nn.AdamWeightDecay(ps, lr, weight_decay=0.003), _adamw,
                        "update"),
    "Lamb": (lambda ps, lr: nn.Lamb(ps, lr, weight_decay=0.003), _lamb, "update"),
    "Adagrad": (lambda ps, lr: nn.Adagrad(ps, learning_rate=lr, weight_decay=0.003), _adagrad,
                "before"),
    "RMSProp": (lambda ps, lr: nn.RMSProp(ps, lr, momentum=0.5, weight_decay=0.003), _rmsprop,
                "before"),
}

LIST_LR = [0.05, 0.04, 0.03, 0.02]


def _schedule_lr(t):  # ExponentialDecayLR(0.2, 0.5, 2) at step t, computed in float32
    return np.float32(0.2) * np.float32(0.5) ** (np.float32(t) / np.float32(2))


def _network_params():
    shapes = {"conv.weight": (4, 16, 3), "fc.weight": (3, 5), "fc.bias": (5,),
              "norm.gamma": (5,)}
    return {n: ms.Parameter(rng.standard_normal(s), name=n) for n, s in shapes.items()}


def _groups(ps, sgd):
    """Three groups: conv (default lr, own weight decay, centralized), fc (a per-step list),
    norm (a schedule, own weight decay: with groups 'gamma' is decayed too); then the
    network's order."""
    conv = {"params": [ps["conv.weight"]], "grad_centralization": True}
    fc = {"params": [ps["fc.weight"], ps["fc.bias"]], "lr": LIST_LR}
    norm = {"params": [ps["norm.gamma"]], "lr": nn.ExponentialDecayLR(0.2, 0.5, 2)}
    if not sgd:  # SGD has one weight_decay for every parameter, as MindSpore's
        conv["weight_decay"], norm["weight_decay"] = 0.01, 0.02
    order = [ps["fc.weight"], ps["conv.weight"], ps["norm.gamma"], ps["fc.bias"]]
    return [conv, fc, norm, {"order_params": order}], order


def _numpy_hyper(name, sgd):
    """Per parameter: (rate at step t, weight decay, centralize)."""
    wd = {"conv.weight": 0.003 if sgd else 0.01, "fc.weight": 0.003, "fc.bias": 0.003,
          "norm.gamma": 0.003 if sgd else 0.02}[name]
    rate = {"conv.weight": lambda t: 0.1,
            "fc.weight": lambda t: float(np.float32(LIST_LR[min(t, 3)])),
            "fc.bias": lambda t: float(np.float32(LIST_LR[min(t, 3)])),
            "norm.gamma": lambda t: float(_schedule_lr(t))}[name]
    return rate, wd, name == "conv.weight"


@pytest.mark.parametrize("which", list(OPTIMIZERS))
def test_groups_match_numpy(mode, which):
    make, step, decay_at = OPTIMIZERS[which]
    ps = _network_params()
    groups, order = _groups(ps, which == "SGD")
    opt = make(groups, 0.1)
    assert opt.parameters == order
    want = {n: p.asnumpy().copy() for n, p in ps.items()}
    states = {n: {} for n in ps}
    for t in range(5):  # past the list's end its last value is kept
        grads = {n: rng.standard_normal(p.shape) for n, p in ps.items()}
        opt(tuple(ms.Tensor(grads[p.name]) for p in order))
        for n in ps:
            rate, wd, gc = _numpy_hyper(n, which == "SGD")
            g, p = grads[n], want[n]
            if decay_at == "before":
                g = _centralize(g + wd * p, gc)
            elif decay_at == "after":
                g = _centralize(g, gc) + wd * p
            else:
                g = _centralize(g, gc)
            want[n] = step(p, g, states[n], rate(t), wd, t + 1)
    rtol = 1e-5 if which == "Adam" else 1e-6  # float32 rates (and Adam's beta powers)
    for n, p in ps.items():
        np.testing.assert_allclose(p.asnumpy(), want[n], rtol=rtol, atol=1e-9, err_msg=n)
    assert int(opt.global_step.asnumpy()) == 5
    assert opt._graph_fn.cache_info()["compiles"] == 1  # every rate is data or a constant


def test_centralization_changes_the_update(mode):
    """Without grad_centralization the conv kernel's gradient is used as it is."""
    w = ms.Parameter(np.zeros((2, 16)), name="conv.weight")
    g = rng.standard_normal((2, 16))
    nn.SGD([{"params": [w], "grad_centralization": True}], 1.0)((ms.Tensor(g),))
    np.testing.assert_allclose(w.asnumpy(), -(g - g.mean(axis=1, keepdims=True)), rtol=1e-12)
    np.testing.assert_allclose(w.asnumpy().sum(axis=1), 0.0, atol=1e-12)
    odd = ms.Parameter(np.zeros((2, 5)), name="dense.weight")  # shape[1] % 16 != 0: as it is
    g = rng.standard_normal((2, 5))
    nn.SGD([{"params": [odd], "grad_centralization": True}], 1.0)((ms.Tensor(g),))
    np.testing.assert_allclose(odd.asnumpy(), -g, rtol=1e-12)


def test_groups_without_lr_keep_one_rate_and_default_keys(mode):
    """Groups that set no 'lr' share the optimizer's; a group without 'weight_decay' takes
    the optimizer's, and the 'beta'/'gamma' name filter no longer applies (MindSpore)."""
    a = ms.Parameter(np.ones(2), name="a.weight")
    gamma = ms.Parameter(np.ones(2), name="norm.gamma")
    opt = nn.Momentum([{"params": [a], "weight_decay": 0.0}, {"params": [gamma]}], 0.1, 0.0,
                      weight_decay=0.5)
    assert not opt.is_group_lr and opt.learning_rate == 0.1
    assert opt.weight_decay == (0.0, 0.5) and opt.decay_flags == (False, True)
    opt((ms.Tensor(np.zeros(2)), ms.Tensor(np.zeros(2))))
    np.testing.assert_allclose(a.asnumpy(), 1.0)
    np.testing.assert_allclose(gamma.asnumpy(), 1 - 0.1 * 0.5)


def test_order_params(mode):
    ps = [ms.Parameter(np.full(2, float(i)), name=f"p{i}") for i in range(4)]
    no_order = nn.Adam([{"params": [ps[2], ps[0]]}, {"params": [ps[3], ps[1]], "lr": 0.5}])
    assert no_order.parameters == [ps[2], ps[0], ps[3], ps[1]]  # the groups' order
    opt = nn.Adam([{"params": [ps[2], ps[0]]}, {"params": [ps[3], ps[1]], "lr": 0.5},
                   {"order_params": ps}], learning_rate=0.25)
    assert opt.parameters == ps
    assert [m.name for m in opt.moment1] == [f"moment1.p{i}" for i in range(4)]
    assert [float(r.asnumpy()) for r in opt.get_lr_parameter(ps)] == [0.25, 0.5, 0.25, 0.5]
    opt((ms.Tensor(np.ones(2)),) * 4)  # gradients follow opt.parameters
    np.testing.assert_allclose(opt.moment1[1].asnumpy(), 0.1)


def test_get_lr_and_get_lr_parameter_mindspore_example(mode):
    ps = _network_params()
    conv = [p for n, p in ps.items() if "conv" in n]
    no_conv = [p for n, p in ps.items() if "conv" not in n]
    optim = nn.Momentum([{"params": conv, "lr": 0.05}, {"params": no_conv, "lr": 0.01}],
                        learning_rate=0.1, momentum=0.9, weight_decay=0.0)
    conv_lr = optim.get_lr_parameter(conv)
    assert isinstance(conv_lr, list) and np.isclose(conv_lr[0].asnumpy(), 0.05)
    assert np.isclose(optim.get_lr_parameter(no_conv[0]).asnumpy(), 0.01)
    assert optim.get_lr() == (0.05, 0.01, 0.01, 0.01)
    assert int(optim.global_step.asnumpy()) == 0  # fixed rates: get_lr leaves the step
    sched = nn.CosineDecayLR(0.01, 0.1, 4)
    w = ms.Parameter(np.zeros(1), name="w")
    opt = nn.SGD([w], learning_rate=sched)
    assert opt.get_lr_parameter(w) is sched and opt.learning_rate is sched
    for _ in range(2):
        opt((ms.Tensor(np.ones(1)),))
    np.testing.assert_allclose(opt.get_lr().asnumpy(), 0.055, rtol=1e-6)  # step 2's rate
    assert int(opt.global_step.asnumpy()) == 3  # as MindSpore's: a dynamic get_lr advances it
    with pytest.raises(ValueError, match="is not in optimizer"):
        opt.get_lr_parameter(ms.Parameter(np.zeros(1), name="other"))
    with pytest.raises(TypeError, match="'Parameter' or 'list'"):
        opt.get_lr_parameter((w,))


def test_changing_a_group_rate_or_decay_recompiles(mode):
    w = ms.Parameter(np.zeros(1), name="w")
    opt = nn.Momentum([{"params": [w], "lr": 0.5, "weight_decay": 0.5}], 0.1, 0.0)
    g = ms.Tensor(np.ones(1))
    opt((g,))                                   # p = -0.5
    opt.learning_rate[0].learning_rate = 0.25   # a plain attribute: part of the key
    opt((g,))                                   # p = -0.5 - 0.25 * (1 + 0.5 * -0.5)
    assert opt._graph_fn.cache_info()["compiles"] == 2
    np.testing.assert_allclose(w.asnumpy(), -0.6875)
    opt.weight_decay = (1.0,)                   # a tuple: the optimizer adds it to the key
    opt((g,))
    assert opt._graph_fn.cache_info()["compiles"] == 3
    np.testing.assert_allclose(w.asnumpy(), -0.6875 - 0.25 * (1 - 0.6875))


# ------------------------------------------------------------------ schedules
def test_schedules_match_mindspore_examples(mode):
    """The values MindSpore's documentation prints for global_step = 2."""
    step = ms.Tensor(2, ms.int32)
    cases = [(nn.ExponentialDecayLR(0.1, 0.9, 4), 0.09486833),
             (nn.NaturalExpDecayLR(0.1, 0.9, 4, True), 0.1),
             (nn.InverseDecayLR(0.1, 0.9, 4, True), 0.1),
             (nn.CosineDecayLR(0.01, 0.1, 4), 0.055),
             (nn.PolynomialDecayLR(0.1, 0.01, 4, 0.5), 0.07363961),
             (nn.WarmUpLR(0.1, 2), 0.1)]
    for cell, want in cases:
        got = cell(step)
        assert isinstance(cell, nn.LearningRateSchedule) and got.dtype is ms.float32
        assert got.shape == () and np.isclose(got.asnumpy(), want, rtol=1e-6), type(cell)


def _cell_values(cell, steps):
    return [float(cell(ms.Tensor(s, ms.int32)).asnumpy()) for s in range(steps)]


@pytest.mark.parametrize("cell,fn", [
    (lambda: nn.ExponentialDecayLR(0.1, 0.9, 3), lambda: nn.exponential_decay_lr(0.1, 0.9, 9, 1, 3)),
    (lambda: nn.ExponentialDecayLR(0.1, 0.9, 3, True),
     lambda: nn.exponential_decay_lr(0.1, 0.9, 9, 1, 3, True)),
    (lambda: nn.NaturalExpDecayLR(0.1, 0.3, 3), lambda: nn.natural_exp_decay_lr(0.1, 0.3, 9, 1, 3)),
    (lambda: nn.NaturalExpDecayLR(0.1, 0.3, 3, True),
     lambda: nn.natural_exp_decay_lr(0.1, 0.3, 9, 1, 3, True)),
    (lambda: nn.InverseDecayLR(0.1, 0.5, 2), lambda: nn.inverse_decay_lr(0.1, 0.5, 9, 1, 2)),
    (lambda: nn.InverseDecayLR(0.1, 0.5, 2, True),
     lambda: nn.inverse_decay_lr(0.1, 0.5, 9, 1, 2, True)),
    (lambda: nn.CosineDecayLR(0.01, 0.1, 5), lambda: nn.cosine_decay_lr(0.01, 0.1, 9, 1, 5)),
    (lambda: nn.PolynomialDecayLR(0.1, 0.01, 5, 0.5),
     lambda: nn.polynomial_decay_lr(0.1, 0.01, 9, 1, 5, 0.5)),
    (lambda: nn.WarmUpLR(0.1, 4), lambda: nn.warmup_lr(0.1, 9, 1, 4)),
], ids=["exp", "exp-stair", "natural", "natural-stair", "inverse", "inverse-stair", "cosine",
        "polynomial", "warmup"])
def test_schedules_match_the_list_functions(cell, fn):
    """One step per epoch: the cell at step s is the list's s-th value."""
    np.testing.assert_allclose(_cell_values(cell(), 9), fn(), rtol=2e-6, atol=1e-9)


def test_polynomial_update_decay_steps():
    """T = decay_steps * max(ceil(step / decay_steps), 1), from each step alone."""
    got = _cell_values(nn.PolynomialDecayLR(0.1, 0.0, 2, 1.0, update_decay_steps=True), 7)
    want = [0.1 * (1 - s / (2 * max(math.ceil(s / 2), 1))) for s in range(7)]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_schedule_in_a_training_step_compiles_once(mode):
    """A Dense net trained by a jit step whose SGD reads a WarmUpLR: one executable for every
    step, the rate following global_step."""
    net = nn.Dense(3, 1, weight_init="zeros", bias_init="zeros")
    opt = nn.SGD(net.trainable_params(), learning_rate=nn.WarmUpLR(0.4, 4))
    grad_fn = ms.value_and_grad(lambda x: ms.ops.reduce_sum(net(x)), None, opt.parameters)

    @ms.jit
    def train_step(x):
        loss, grads = grad_fn(x)
        opt(grads)
        return loss

    x = ms.Tensor(np.ones((2, 3), np.float32))
    for _ in range(6):
        train_step(x)
    assert train_step.cache_info()["compiles"] == 1
    rates = [0.4 * min(s, 4) / 4 for s in range(6)]
    np.testing.assert_allclose(net.bias.asnumpy(), [-2 * sum(rates)], rtol=1e-6)
    np.testing.assert_allclose(net.weight.asnumpy(), np.full((1, 3), -2 * sum(rates)), rtol=1e-6)
    assert int(opt.global_step.asnumpy()) == 6


def test_schedule_errors():
    with pytest.raises(TypeError, match="'learning_rate' must be type of float"):
        nn.ExponentialDecayLR(1, 0.9, 4)
    with pytest.raises(ValueError, match="'decay_rate' must be a positive float"):
        nn.InverseDecayLR(0.1, 0.0, 4)
    with pytest.raises(ValueError, match="'decay_steps' must be a positive int"):
        nn.NaturalExpDecayLR(0.1, 0.9, 0)
    with pytest.raises(TypeError, match="'is_stair' must be a bool"):
        nn.ExponentialDecayLR(0.1, 0.9, 4, is_stair=1)
    with pytest.raises(ValueError, match="must be greater than the 'min_lr'"):
        nn.CosineDecayLR(0.1, 0.01, 4)
    with pytest.raises(TypeError, match="'end_learning_rate' must be type of float"):
        nn.PolynomialDecayLR(0.1, 0, 4, 0.5)
    with pytest.raises(ValueError, match="'power' must be a positive float"):
        nn.PolynomialDecayLR(0.1, 0.0, 4, -1.0)
    with pytest.raises(TypeError, match="'warmup_steps' must be an int"):
        nn.WarmUpLR(0.1, 2.0)
    with pytest.raises(NotImplementedError):
        nn.LearningRateSchedule()(ms.Tensor(1, ms.int32))


# ------------------------------------------------------------------ bad groups
def _w(name="w"):
    return ms.Parameter(np.ones(2), name=name)


@pytest.mark.parametrize("params,error,match", [
    ([{"params": [_w()], "momentum": 0.9}], ValueError, "cannot be recognized in group params"),
    ([{"params": [_w()]}, {"order_params": [_w()], "lr": 0.1}], ValueError,
     "should only include the 'order_params' key"),
    ([{"params": [_w()]}, {"order_params": 3}], TypeError, "should be an Iterable"),
    ([{"params": [_w(), _w("v")]}, {"order_params": [_w()]}], ValueError,
     "'order_params' should be same with all group parameters"),
    ([{"params": []}], ValueError, "empty group `params` list"),
    ([{"params": None}], ValueError, "group `params` can not be None"),
    ([{"params": [ms.Tensor(np.ones(2))]}], TypeError, "iterator of Parameter type"),
    ([{"lr": 0.1}], ValueError, "needs the key 'params'"),
    ([{"params": [_w()], "grad_centralization": 1}], TypeError, "should be bool type"),
    ([{"params": [_w()], "weight_decay": -1.0}], ValueError, "'weight_decay' must be >= 0"),
    ([{"params": [_w()], "weight_decay": "0.1"}], TypeError, "'weight_decay' must be a float"),
    ([{"params": [_w()], "lr": [0.1, 0.2]}, {"params": [_w("v")], "lr": [0.1, 0.2, 0.3]}],
     ValueError, "should be the same size"),
    ([{"params": [_w()], "lr": "fast"}], TypeError, "'learning_rate' should be int, float"),
    ([_w(), {"params": [_w("v")]}], TypeError, "must be 'Parameter' or 'dict'"),
    ([], ValueError, "empty parameters list"),
    (None, ValueError, "parameters can not be None"),
], ids=["unknown-key", "order-with-keys", "order-not-iterable", "order-mismatch", "empty",
        "none", "not-parameter", "no-params", "gc-not-bool", "negative-decay", "decay-type",
        "list-sizes", "lr-type", "mixed", "no-parameters", "parameters-none"])
def test_bad_groups_raise_mindsporess_errors(params, error, match):
    with pytest.raises(error, match=match):
        nn.Momentum(params, 0.1, 0.9)


def test_repeated_parameter_and_sgd_group_decay():
    w = _w()
    with pytest.raises(RuntimeError, match="parameter already exists"):
        nn.Adam([{"params": [w]}, {"params": [w], "lr": 0.1}])
    with pytest.raises(ValueError, match="'weight_decay' of a parameter group is not supported"):
        nn.SGD([{"params": [w], "weight_decay": 0.1}])
    with pytest.raises(ValueError, match="not in it"):  # right length, wrong parameters
        nn.Adam([{"params": [w]}, {"order_params": [_w("v")]}])
