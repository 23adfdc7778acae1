"""Dynamic dimensions (issue 16): one executable per jit function serves every size of the
dimensions its input_signature leaves open (None), forward and backward, through an optimizer
step, an artifact and dynamic=1; mismatched sizes are reported at the user's line.

Each program runs through ONE jit function for every size; `compiles == 1` after the sweep
checks that the dynamic path served it (an op without a dynamic form falls back to one static
compile per shape, which this assertion catches)."""
import os
from dataclasses import dataclass

import numpy as np
import pytest

import mscc as ms
import mscc.runtime
from mscc import nn, ops
from mscc.runtime.artifact import read
from mstest import finite_differences, line_of

F32, I32 = ms.float32, ms.int32
SIZES = (1, 2, 7, 64, 1000, 0)
HERE = os.path.basename(__file__)


def T(*shape, dtype=F32):
    """A placeholder of the input_signature (None: any size)."""
    return ms.Tensor(shape=list(shape), dtype=dtype)


def arrays(sig, n, seed):
    """Inputs fitting `sig` with every None replaced by n: normal floats, ints in [0, high)."""
    rng = np.random.default_rng(seed)
    out = []
    for shape, dtype, high in sig:
        shape = tuple(n if d is None else d for d in shape)
        out.append(rng.integers(0, high, shape).astype(np.int32) if dtype is I32
                   else rng.standard_normal(shape).astype(np.float32))
    return out


def softmax_np(z, axis=-1):
    e = np.exp(z - z.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def log_softmax_np(z, axis=-1):
    z = z - z.max(axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis, keepdims=True))


def xent_np(logits, labels):
    return -np.mean(log_softmax_np(logits)[np.arange(len(labels)), labels])


def params_np(cell):
    return [p.asnumpy().astype(np.float64) for p in cell.trainable_params()]


ms.set_seed(0)
DENSE = nn.Dense(16, 8)
MLP = nn.SequentialCell([nn.Dense(16, 32, activation="relu"), nn.Dense(32, 4)])
NORM = nn.LayerNorm((16,))
NORM.gamma.set_data(np.linspace(0.5, 1.5, 16).astype(np.float32))  # (not the identity)
NORM.beta.set_data(np.linspace(-1, 1, 16).astype(np.float32))
LOSS = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")


def mlp_np(x):
    w1, b1, w2, b2 = params_np(MLP)
    return np.maximum(x @ w1.T + b1, 0) @ w2.T + b2


def layer_norm_np(x):
    g, b = params_np(NORM)
    c = x - x.mean(-1, keepdims=True)
    return c / np.sqrt((c * c).mean(-1, keepdims=True) + 1e-7) * g + b


@dataclass
class Program:
    name: str
    fn: object
    sig: tuple             # (shape with None for the dynamic dims, dtype, int high) per input
    ref: object            # numpy float64 reference
    zero: bool = True      # whether size 0 is meaningful (not a mean/max over no elements)
    atol: float = 1e-5


def flt(*shape):
    return (shape, F32, None)


def idx(*shape, high):
    return (shape, I32, high)


PROGRAMS = [
    Program("bias_add", lambda x, b: x + b, (flt(None, 8), flt(8)), lambda x, b: x + b),
    Program("outer_broadcast", lambda x, y: x * y - y, (flt(None, 1), flt(1, 8)),
            lambda x, y: x * y - y),
    Program("exp", ops.exp, (flt(None, 8),), np.exp),
    Program("tanh", ops.tanh, (flt(None, 8),), np.tanh),
    Program("sigmoid", ops.sigmoid, (flt(None, 8),), lambda x: 1 / (1 + np.exp(-x))),
    Program("matmul", ops.matmul, (flt(None, 16), flt(16, 8)), lambda x, w: x @ w),
    Program("batch_matmul", ops.batch_matmul, (flt(None, 3, 4), flt(None, 4, 5)), np.matmul),
    # reductions over the dynamic axis: the mean divides by the run-time row count
    Program("sum_dynamic_axis", lambda x: ops.reduce_sum(x, 0), (flt(None, 8),),
            lambda x: x.sum(0), atol=1e-4),
    Program("mean_dynamic_axis", lambda x: ops.reduce_mean(x, 0), (flt(None, 8),),
            lambda x: x.mean(0), zero=False),
    Program("max_dynamic_axis", lambda x: ops.reduce_max(x, 0), (flt(None, 8),),
            lambda x: x.max(0), zero=False),
    Program("sum_static_axis", lambda x: ops.reduce_sum(x, 1), (flt(None, 8),),
            lambda x: x.sum(1)),
    Program("mean_static_axis_keep", lambda x: ops.reduce_mean(x, 1, keep_dims=True),
            (flt(None, 8),), lambda x: x.mean(1, keepdims=True)),
    Program("mean_all_axes", lambda x: ops.reduce_mean(x), (flt(None, 8),), np.mean,
            zero=False),
    Program("softmax", lambda x: ops.softmax(x, -1), (flt(None, 10),), softmax_np),
    Program("log_softmax", lambda x: ops.log_softmax(x, -1), (flt(None, 10),), log_softmax_np),
    Program("layer_norm", lambda x: NORM(x), (flt(None, 16),), layer_norm_np, atol=1e-4),
    Program("reshape_minus_one", lambda x: ops.reshape(x, (-1, 16)) * 2.0, (flt(None, 4, 4),),
            lambda x: x.reshape(-1, 16) * 2),
    # concat of two values of one dynamic size (the same symbol), then of two inputs whose
    # row counts the compiler can only check at run time
    Program("concat_same_rows", lambda x: ops.concat((x, ops.tanh(x)), 1), (flt(None, 3),),
            lambda x: np.concatenate([x, np.tanh(x)], 1)),
    Program("concat_two_inputs", lambda x, y: ops.concat((x, y), 1),
            (flt(None, 3), flt(None, 5)), lambda x, y: np.concatenate([x, y], 1)),
    Program("gather_rows", lambda p, k: ops.gather(p, k, 0), (flt(10, 4), idx(None, high=10)),
            lambda p, k: p[k]),
    Program("one_hot", lambda k: ops.one_hot(k, 6, 1.0, 0.0), (idx(None, high=6),),
            lambda k: np.eye(6)[k]),
    Program("sparse_xent_mean", lambda z, k: LOSS(z, k), (flt(None, 5), idx(None, high=5)),
            xent_np, zero=False),
    Program("dense", lambda x: DENSE(x), (flt(None, 16),),
            lambda x: x @ params_np(DENSE)[0].T + params_np(DENSE)[1]),
    Program("mlp", lambda x: MLP(x), (flt(None, 16),), mlp_np),
]


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.name)
def test_one_compile_serves_every_size(prog):
    sig = tuple(T(*shape, dtype=dtype) for shape, dtype, _ in prog.sig)
    jitted = ms.jit(prog.fn, input_signature=sig)
    for n in (s for s in SIZES if s or prog.zero):
        args = arrays(prog.sig, n, seed=n)
        got = jitted(*[ms.Tensor(a) for a in args]).asnumpy()
        want = np.asarray(prog.ref(*[a.astype(np.float64) if a.dtype.kind == "f" else a
                                     for a in args]))
        assert got.dtype == np.float32 and got.shape == want.shape, (n, got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=prog.atol, err_msg=f"n={n}")
    assert jitted.cache_info()["compiles"] == 1


# ---------------------------------------------------------------- gradients
def make_mlp(dtype=F32, seed=3):
    ms.set_seed(seed)
    return nn.SequentialCell([nn.Dense(16, 32, dtype=dtype), nn.ReLU(),
                              nn.Dense(32, 4, dtype=dtype)])


def train_grad_fn(net):
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, net.trainable_params())

    def step(x, y):
        return grad_fn(x, y)
    return step


def training_step(net, opt):
    """(step, its value_and_grad): the mean sparse cross-entropy of `net`, its gradients over
    the optimizer's parameters, the update; the step returns the loss."""
    grad_fn = ms.value_and_grad(lambda x, y: LOSS(net(x), y), None, opt.parameters)

    def step(x, y):
        loss, grads = grad_fn(x, y)
        opt(grads)
        return loss
    return step, grad_fn


def batch(n, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 16)).astype(dtype), rng.integers(0, 4, n).astype(np.int32)


def test_dynamic_batch_gradients_equal_static_ones():
    net = make_mlp()
    step = train_grad_fn(net)
    dynamic = ms.jit(step, input_signature=(T(None, 16), T(None, dtype=I32)))
    static = ms.jit(step)
    for n in (1, 5, 64):
        x, y = (ms.Tensor(a) for a in batch(n, seed=n))
        (loss_d, grads_d), (loss_s, grads_s) = dynamic(x, y), static(x, y)
        np.testing.assert_allclose(loss_d.asnumpy(), loss_s.asnumpy(), rtol=1e-5)
        assert len(grads_d) == len(grads_s) == 4
        for gd, gs in zip(grads_d, grads_s):
            assert gd.shape == gs.shape
            np.testing.assert_allclose(gd.asnumpy(), gs.asnumpy(), rtol=1e-5, atol=1e-6)
    assert dynamic.cache_info()["compiles"] == 1 and static.cache_info()["compiles"] == 3


def test_dynamic_batch_gradient_matches_finite_differences():
    """d loss / d x of the float64 network, one compile for every batch size, against
    central differences of the numpy loss (a mean over the run-time batch: 1/n in both)."""
    net = make_mlp(ms.float64)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    grad_x = ms.jit(ms.grad(lambda x, y: loss_fn(net(x), y), grad_position=0),
                    input_signature=(T(None, 16, dtype=ms.float64), T(None, dtype=I32)))
    w1, b1, w2, b2 = params_np(net)
    for n in (1, 5, 9):
        x, y = batch(n, seed=10 + n, dtype=np.float64)
        got = grad_x(ms.Tensor(x), ms.Tensor(y)).asnumpy()
        want = finite_differences(
            lambda v: xent_np(np.maximum(v @ w1.T + b1, 0) @ w2.T + b2, y), x)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    assert grad_x.cache_info()["compiles"] == 1


# ---------------------------------------------------------------- dynamic=1
def test_dynamic_1_compiles_at_most_twice_for_twenty_sizes():
    def fn(x, b):
        return ops.reduce_mean(ops.tanh(x) * b, 1) + ops.reduce_sum(x, 1)

    jitted = ms.jit(fn, dynamic=1)
    b = np.linspace(-1, 1, 8).astype(np.float32)
    for n in [3, 5, 1, 40, 2, 17, 100, 4, 8, 9, 31, 6, 64, 11, 250, 7, 12, 13, 1000, 21]:
        x = np.random.default_rng(n).standard_normal((n, 8)).astype(np.float32)
        got = jitted(ms.Tensor(x), ms.Tensor(b)).asnumpy()
        x64 = x.astype(np.float64)
        np.testing.assert_allclose(got, (np.tanh(x64) * b).mean(1) + x64.sum(1), rtol=1e-5,
                                   atol=1e-5)
    assert jitted.cache_info()["compiles"] <= 2


# ---------------------------------------------------------------- errors
def add(x, y):
    return x + y


def matmul(x, w):
    return ops.matmul(x, w)


def concat(x, y):
    return ops.concat((x, y), 1)


MISMATCHES = [  # (function, signature, shapes of calls whose sizes agree (for n) and not, message)
    pytest.param(add, (T(None, 4), T(None, 4)), lambda n: [(n, 4), (n, 4)], [(3, 4), (5, 4)],
                 "dimension 0 of broadcast operands must be equal, got 3 and 5", id="add"),
    pytest.param(matmul, (T(4, None), T(None, 3)), lambda n: [(4, n), (n, 3)],
                 [(4, 5), (6, 3)], "contracting dimensions of a matmul must be equal, got 5 and 6",
                 id="matmul"),
    pytest.param(concat, (T(None, 3), T(None, 5)), lambda n: [(n, 3), (n, 5)], [(4, 3), (6, 5)],
                 "dimension 0 of concatenated tensors must be equal, got 4 and 6",
                 id="concat"),
]


@pytest.mark.parametrize("fn,sig,good,bad,message", MISMATCHES)
def test_mismatched_dynamic_sizes_name_the_users_line(fn, sig, good, bad, message):
    jitted = ms.jit(fn, input_signature=sig)
    for n in (2, 7):  # agreeing sizes run (through the one dynamic executable)
        jitted(*[ms.Tensor(np.ones(s, np.float32)) for s in good(n)])
    with pytest.raises(ValueError, match=message) as info:
        jitted(*[ms.Tensor(np.ones(s, np.float32)) for s in bad])
    assert f"{HERE}:{line_of(__file__, 'for s in bad])')}" in str(info.value)  # the call's line
    assert jitted.cache_info()["compiles"] == 1


SIGNATURE_MISTAKES = [  # (argument index, the bad array) against (x: f32[?,4], y: f32[?,4])
    pytest.param(1, np.ones((3, 5), np.float32), id="static_size"),
    pytest.param(0, np.ones((3, 4, 1), np.float32), id="rank"),
    pytest.param(1, np.ones((3, 4), np.float64), id="dtype_float64"),
    pytest.param(0, np.ones((3, 4), np.int32), id="dtype_int32"),
]


@pytest.mark.parametrize("k,bad", SIGNATURE_MISTAKES)
def test_calls_that_do_not_fit_the_signature_name_the_argument(k, bad):
    jitted = ms.jit(add, input_signature=(T(None, 4), T(None, 4)))
    good = np.ones((3, 4), np.float32)
    jitted(ms.Tensor(good), ms.Tensor(good))
    args = [ms.Tensor(good), ms.Tensor(good)]
    args[k] = ms.Tensor(bad)
    with pytest.raises(ValueError, match=f"argument #{k} of 'add'.*input_signature"):
        jitted(*args)
    assert jitted.cache_info()["compiles"] == 1  # a refused call compiles nothing


# ---------------------------------------------------------------- optimizer step
@pytest.mark.parametrize("make_opt", [
    pytest.param(lambda ps: nn.Momentum(ps, learning_rate=0.1, momentum=0.9), id="momentum"),
    pytest.param(lambda ps: nn.SGD(ps, learning_rate=0.2), id="sgd")])
def test_optimizer_step_with_dynamic_batch_equals_static_steps(make_opt):
    def training(net):
        return training_step(net, make_opt(net.trainable_params()))[0]

    dyn_net, ref_net = make_mlp(seed=5), make_mlp(seed=5)
    start = params_np(dyn_net)
    dynamic = ms.jit(training(dyn_net), input_signature=(T(None, 16), T(None, dtype=I32)))
    static = ms.jit(training(ref_net))
    for n in (8, 3, 200):
        x, y = (ms.Tensor(a) for a in batch(n, seed=20 + n))
        np.testing.assert_allclose(dynamic(x, y).asnumpy(), static(x, y).asnumpy(), rtol=1e-5)
        for p, q in zip(dyn_net.trainable_params(), ref_net.trainable_params()):
            np.testing.assert_allclose(p.asnumpy(), q.asnumpy(), rtol=1e-5, atol=1e-6)
    assert all(np.abs(p - s).max() > 1e-4 for p, s in zip(params_np(dyn_net), start))
    assert dynamic.cache_info()["compiles"] == 1 and static.cache_info()["compiles"] == 3


# ---------------------------------------------------------------- artifacts
def test_artifact_with_a_dynamic_dimension_runs_every_size(tmp_path):
    def head(x, w):
        return ops.softmax(ops.matmul(x, w), -1)

    sig = (T(None, 16), T(16, 8))
    path = str(tmp_path / "head.msx")
    ms.jit(head, input_signature=sig).lower(*sig).compile().save(path)
    assert read(path).manifest["inputs"][0]["shape"] == [None, 16]  # (not one traced size)
    exe = mscc.runtime.load(path)
    w = np.random.default_rng(1).standard_normal((16, 8)).astype(np.float32)
    for n in (0, 3, 50):
        x = np.random.default_rng(n).standard_normal((n, 16)).astype(np.float32)
        got, = exe(x, w)
        assert got.shape == (n, 8)
        np.testing.assert_allclose(got, softmax_np(x.astype(np.float64) @ w), rtol=1e-5,
                                   atol=1e-6)
    with pytest.raises(ValueError, match=r"input #0 .*\(3, 15\)"):
        exe(np.ones((3, 15), np.float32), w)


# ------------------------------------------------------------------ CNN layers
# Each layer through one jit function with a dynamic batch, against the same layer compiled for
# each batch size (the static path, itself tested against numpy in test_conv*.py and
# test_pooling.py): equal results, one dynamic compile.

def cnn_layers():
    ms.set_seed(5)
    return [("conv2d", nn.Conv2d(3, 4, 3, pad_mode="pad", padding=1)),
            ("conv2d_stride", nn.Conv2d(3, 4, 3, stride=2)),
            ("max_pool", nn.MaxPool2d(2, 2)), ("avg_pool", nn.AvgPool2d(2, 2)),
            ("flatten", nn.Flatten()),
            ("batch_norm_train", nn.BatchNorm2d(3).set_train()),
            ("dropout_train", nn.Dropout(p=0.5).set_train())]


@pytest.mark.parametrize("name", [n for n, _ in cnn_layers()])
def test_cnn_layer_with_a_dynamic_batch_equals_static(name):
    layer = dict(cnn_layers())[name]
    dynamic = ms.jit(lambda x: layer(x), input_signature=(T(None, 3, 8, 8),))
    for n in (1, 5, 2):
        x = ms.Tensor(np.random.default_rng(n).standard_normal((n, 3, 8, 8)).astype(np.float32))
        state = [p.asnumpy().copy() for p in layer.get_parameters()]
        ms.set_seed(11)  # (the dropout mask: the same counter for both)
        got = dynamic(x).asnumpy()
        after = [p.asnumpy().copy() for p in layer.get_parameters()]
        for p, v in zip(layer.get_parameters(), state):  # the static call starts alike
            p.set_data(v)
        ms.set_seed(11)
        want = ms.jit(lambda x: layer(x))(x).asnumpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        for p, a in zip(layer.get_parameters(), after):  # BatchNorm's moving statistics
            np.testing.assert_allclose(a, p.asnumpy(), rtol=1e-5, atol=1e-7)
    assert dynamic.cache_info()["compiles"] == 1


def test_lenet_like_training_step_with_a_dynamic_batch_equals_static():
    """Convolutions, pooling, flatten and dense layers, their gradients and an optimizer step
    over a dynamic batch: the losses and parameters of static compiles, one compile."""
    def make():
        ms.set_seed(2)
        net = nn.SequentialCell([nn.Conv2d(1, 4, 3, pad_mode="valid"), nn.ReLU(),
                                 nn.MaxPool2d(2, 2), nn.Flatten(), nn.Dense(4 * 3 * 3, 3)])
        return net, training_step(net, nn.Momentum(net.trainable_params(), 0.1, 0.9))[0]
    net_d, step_d = make()
    net_s, step_s = make()
    dynamic = ms.jit(step_d, input_signature=(T(None, 1, 8, 8), T(None, dtype=I32)))
    for n in (4, 1, 9):
        rng = np.random.default_rng(n)
        x = rng.standard_normal((n, 1, 8, 8)).astype(np.float32)
        y = rng.integers(0, 3, n).astype(np.int32)
        got = dynamic(ms.Tensor(x), ms.Tensor(y)).asnumpy()
        want = ms.jit(step_s)(ms.Tensor(x), ms.Tensor(y)).asnumpy()
        np.testing.assert_allclose(got, want, rtol=1e-5)
        for a, b in zip(net_d.trainable_params(), net_s.trainable_params()):
            np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-4, atol=1e-6)
    assert dynamic.cache_info()["compiles"] == 1


def test_broadcast_to_a_dynamic_size_and_its_gradient():
    """ops.broadcast_to(x, y.shape) with y's dynamic batch (ms.broadcast_like): the values,
    and x's gradient (the sum over the batch) against finite differences."""
    def f(x, y):
        return (ops.broadcast_to(x, y.shape) * y * y).sum()
    grad = ms.jit(ms.grad(f, 0), input_signature=(T(4, dtype=ms.float64),
                                                  T(None, 4, dtype=ms.float64)))
    x = np.random.default_rng(1).standard_normal(4)
    for n in (1, 6, 3):
        y = np.random.default_rng(n).standard_normal((n, 4))
        got = grad(ms.Tensor(x), ms.Tensor(y)).asnumpy()
        np.testing.assert_allclose(got, (y * y).sum(0), rtol=1e-12)
        fd = finite_differences(lambda v: (np.broadcast_to(v, y.shape) * y * y).sum(), x)
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)
    assert grad.cache_info()["compiles"] == 1


@pytest.mark.parametrize("defer", [True, False], ids=["deferred", "eager"])
def test_pynative_training_with_varying_batches_stops_compiling(defer, monkeypatch):
    """PyNative: eager kernels (run at once: MSCC_PYNATIVE_DEFER=0) and the recorded gradient
    compile once more for a second batch size, with that size dynamic, then serve every size;
    the losses equal graph mode's. Deferred (the default), the recording runs no eager
    kernel at all: nothing reads the forward's values before the gradient computes them."""
    from mscc.pyfront import deferred, dispatch
    monkeypatch.setenv(deferred.ENV, "1" if defer else "0")

    def run(mode_jit):
        net = make_mlp()
        step, grad_fn = training_step(net, nn.Momentum(net.trainable_params(), 0.1, 0.9))
        step = ms.jit(step, dynamic=1) if mode_jit else step
        losses, compiles = [], []
        for n in (8, 5, 7, 64, 1, 3):
            x, y = batch(n, seed=n)
            before = dispatch.eager_compiles
            losses.append(float(step(ms.Tensor(x), ms.Tensor(y)).asnumpy()))
            compiles.append(dispatch.eager_compiles - before)
        return losses, compiles, grad_fn
    eager_losses, eager_compiles, grad_fn = run(False)
    graph_losses, _, _ = run(True)
    np.testing.assert_allclose(eager_losses, graph_losses, rtol=1e-5)
    if defer:
        assert eager_compiles == [0] * 6, eager_compiles
    else:
        assert eager_compiles[0] > 0 and eager_compiles[1] > 0  # the first two sizes
        assert eager_compiles[2:] == [0] * 4, eager_compiles
    assert grad_fn._pynative.records == 1  # one replay for every size...
    compiled = next(iter(grad_fn._pynative._by_structure.values()))
    assert compiled.cache_info()["compiles"] == 2  # ...static, then dynamic


def test_a_large_matmul_with_dynamic_rows_takes_every_block_path():
    """ms-cpu-dynamic-matmul's paths: one block of 64 rows split over the threads, blocks of
    64 on the threads, then of 8 and single rows; and a dynamic depth (the weight gradient)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((300, 96)).astype(np.float32)
    f = ms.jit(lambda x: ops.matmul(x, ms.Tensor(w)), input_signature=(T(None, 300),))
    dw = ms.jit(lambda x, d: ops.matmul(x.T, d), input_signature=(T(None, 300), T(None, 96)))
    for n in (64, 1, 130, 1000, 71):
        x = rng.standard_normal((n, 300)).astype(np.float32)
        d = rng.standard_normal((n, 96)).astype(np.float32)
        np.testing.assert_allclose(f(ms.Tensor(x)).asnumpy(), x.astype(np.float64) @ w,
                                   rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(dw(ms.Tensor(x), ms.Tensor(d)).asnumpy(),
                                   x.T.astype(np.float64) @ d, rtol=1e-4, atol=1e-3)
    assert f.cache_info()["compiles"] == 1 and dw.cache_info()["compiles"] == 1


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_product_with_a_transposed_weight_packs_it_from_the_weight(dynamic):
    """x @ W.T with B's rows 2 KiB apart: pack_b copies B's strips from W itself (strips of
    W's rows transposed, W^T never written), for a static batch and for every size of a
    dynamic one (no unpacked small-batch copy then)."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((512, 256)).astype(np.float32)
    sig = (T(None, 256),) if dynamic else None
    f = ms.jit(lambda x, w: ops.matmul(x, w.T), input_signature=sig and sig + (T(512, 256),))
    for n in ((1, 7, 64, 130, 256) if dynamic else (256, 8)):  # (8: packed as W^T is free)
        x = rng.standard_normal((n, 256)).astype(np.float32)
        np.testing.assert_allclose(f(ms.Tensor(x), ms.Tensor(w)).asnumpy(),
                                   x.astype(np.float64) @ w.T.astype(np.float64),
                                   rtol=1e-4, atol=1e-4)
    assert f.cache_info()["compiles"] == (1 if dynamic else 2)


@pytest.mark.parametrize("blocks", ["shuffle-16x16", "avx2-8x8"])
@pytest.mark.parametrize("dtype", [ms.float32, ms.int32])
@pytest.mark.parametrize("dynamic_axis", [0, 1])
def test_transposes_of_a_dynamic_size_copy_every_piece(dynamic_axis, dtype, blocks,
                                                       monkeypatch):
    """ms-cpu-vectorize-transposes' pieces of a dynamic transpose (register blocks of either
    kind and the remaining single elements, in strips of the static size or of the dynamic
    one): every element lands where numpy puts it, for sizes below, at and around a block."""
    from mscc.passes import cpu_transpose
    if blocks == "avx2-8x8" and cpu_transpose.host_blocks() != blocks:
        pytest.skip("the host has no AVX2 (or no LLVM C API to assemble its blends)")
    monkeypatch.setattr(cpu_transpose, "host_blocks", lambda: blocks)
    shape = [None, 48] if dynamic_axis == 0 else [48, None]
    f = ms.jit(lambda x: x.T, input_signature=(T(*shape, dtype=dtype),))
    rng = np.random.default_rng(dynamic_axis)
    for n in (1, 7, 8, 9, 15, 16, 17, 100):
        size = [n, 48] if dynamic_axis == 0 else [48, n]
        x = rng.integers(-1000, 1000, size).astype(ms.dtype_to_nptype(dtype))
        np.testing.assert_array_equal(f(ms.Tensor(x)).asnumpy(), x.T)
    assert f.cache_info()["compiles"] == 1


def test_split_of_a_dynamic_batch_and_its_gradient():
    """ops.split along a static axis of a dynamic batch (slices taking the batch whole) and
    its gradient (the parts padded back with zeros shaped like them)."""
    def f(x):
        a, b, c = ops.split(x, 2, axis=1)
        return (a * a).sum() + (c * 3.0).sum() + 0.0 * b.sum()
    grad = ms.jit(ms.grad(f), input_signature=(T(None, 6, dtype=ms.float64),))
    value = ms.jit(f, input_signature=(T(None, 6, dtype=ms.float64),))
    for n in (2, 5, 1):
        x = np.random.default_rng(n).standard_normal((n, 6))
        np.testing.assert_allclose(value(ms.Tensor(x)).asnumpy(),
                                   (x[:, :2] ** 2).sum() + 3 * x[:, 4:].sum(), rtol=1e-12)
        want = np.concatenate([2 * x[:, :2], np.zeros((n, 2)), np.full((n, 2), 3.0)], 1)
        np.testing.assert_allclose(grad(ms.Tensor(x)).asnumpy(), want, rtol=1e-12)
    assert grad.cache_info()["compiles"] == 1 and value.cache_info()["compiles"] == 1


def test_concat_gradient_with_a_dynamic_batch_matches_finite_differences():
    """Concat along a static axis of operands with a dynamic batch: each operand's gradient
    is its part of the cotangent, sliced with the batch taken whole (-1)."""
    def f(x, y):
        return (ops.concat((x, ops.tanh(y)), 1) ** 2).sum()
    grad = ms.jit(ms.grad(f, (0, 1)), input_signature=(T(None, 3, dtype=ms.float64),
                                                        T(None, 2, dtype=ms.float64)))
    for n in (1, 4, 7):
        rng = np.random.default_rng(n)
        x, y = rng.standard_normal((n, 3)), rng.standard_normal((n, 2))
        gx, gy = grad(ms.Tensor(x), ms.Tensor(y))
        np.testing.assert_allclose(gx.asnumpy(), finite_differences(
            lambda v: (np.concatenate([v, np.tanh(y)], 1) ** 2).sum(), x),
            rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(gy.asnumpy(), finite_differences(
            lambda v: (np.concatenate([x, np.tanh(v)], 1) ** 2).sum(), y), rtol=1e-6, atol=1e-8)
    assert grad.cache_info()["compiles"] == 1


def test_a_rule_without_a_form_for_dynamic_sizes_is_a_located_error(monkeypatch):
    """A lowering rule that hands a run-time size to a builder wanting numbers (a TypeError
    from the bindings) is reported at the op and the user's line, not as an internal error;
    jit then compiles per shape."""
    from mscc.dialects.registry import OPS
    from mscc.passes.compiler import compile_module
    from mscc.passes.diagnostics import CompileError

    def static_only(lc, x):
        raise TypeError("get(): incompatible function arguments")
    monkeypatch.setattr(OPS["ms.exp"], "lower", static_only)
    jitted = ms.jit(lambda x: ops.exp(x), input_signature=(T(None, 4),))
    trace = jitted.lower(T(None, 4))._trace
    with pytest.raises(CompileError, match="'ms.exp' has no form for these dynamic dimensions "
                                           "yet") as e:
        compile_module(trace.module, trace.name)
    assert e.value.diagnostics[0].file.endswith(HERE)
    with pytest.raises(TypeError):  # a static compile still meets the rule's own error
        ms.jit(lambda x: ops.exp(x))(ms.Tensor(np.ones((2, 4), np.float32)))
