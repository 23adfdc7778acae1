"""ms.grad / value_and_grad / GradOperation through the Python API, in GRAPH_MODE (traced into
one function) and PYNATIVE_MODE (recorded op by op), against numpy and finite differences."""
import numpy as np
import pytest

import mscc as ms
from mscc import nn, ops

rng = np.random.default_rng(3)


def t64(*shape):
    return ms.Tensor(rng.standard_normal(shape))


def numeric_grad(f, args, i, eps=1e-6):
    """Central differences of the scalar f(*args) w.r.t. args[i] (float64 numpy arrays)."""
    args = [a.copy() for a in args]
    g = np.zeros_like(args[i])
    for idx in np.ndindex(args[i].shape):
        old = args[i][idx]
        args[i][idx] = old + eps
        hi = f(*args)
        args[i][idx] = old - eps
        lo = f(*args)
        args[i][idx] = old
        g[idx] = (hi - lo) / (2 * eps)
    return g


def f_ms(x, w, b):
    return ops.reduce_sum(ops.tanh(x @ w + b) * x[:, :2])


def f_np(x, w, b):
    return float(np.sum(np.tanh(x @ w + b) * x[:, :2]))


def test_grad_positions_against_finite_differences(mode):
    x, w, b = t64(3, 4), t64(4, 2), t64(2)
    arrays = [a.asnumpy() for a in (x, w, b)]
    gx = ms.grad(f_ms)(x, w, b)  # an int position gives one gradient
    np.testing.assert_allclose(gx.asnumpy(), numeric_grad(f_np, arrays, 0), rtol=1e-6, atol=1e-8)
    gw, gb = ms.grad(f_ms, grad_position=(1, 2))(x, w, b)  # a tuple gives a tuple
    np.testing.assert_allclose(gw.asnumpy(), numeric_grad(f_np, arrays, 1), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb.asnumpy(), numeric_grad(f_np, arrays, 2), rtol=1e-6, atol=1e-8)


def test_value_and_grad(mode):
    x, w, b = t64(3, 4), t64(4, 2), t64(2)
    value, (gx, gb) = ms.value_and_grad(f_ms, (0, 2))(x, w, b)
    arrays = [a.asnumpy() for a in (x, w, b)]
    np.testing.assert_allclose(value.asnumpy(), f_np(*arrays), rtol=1e-12)
    np.testing.assert_allclose(gb.asnumpy(), numeric_grad(f_np, arrays, 2), rtol=1e-6, atol=1e-8)


def test_weights_with_parameters(mode):
    w = ms.Parameter(rng.standard_normal((4, 2)), name="w")
    unused = ms.Parameter(np.ones(3), name="unused")

    def loss(x):
        return ops.reduce_sum(ops.sigmoid(x @ w))

    x = t64(5, 4)
    gx, (gw, gu) = ms.grad(loss, 0, weights=[w, unused])(x)
    s = 1 / (1 + np.exp(-(x.asnumpy() @ w.asnumpy())))
    np.testing.assert_allclose(gw.asnumpy(), x.asnumpy().T @ (s * (1 - s)), rtol=1e-10)
    np.testing.assert_allclose(gu.asnumpy(), np.zeros(3))  # not read: zero gradient
    only_w = ms.grad(loss, None, weights=[w])(x)  # grad_position=None: the weights alone
    assert isinstance(only_w, tuple) and len(only_w) == 1


def test_has_aux(mode):
    def fn(x):
        return ops.reduce_sum(x * x), x + 1.0, ops.reduce_max(x)

    x = t64(4)
    g, aux = ms.grad(fn, has_aux=True)(x)
    np.testing.assert_allclose(g.asnumpy(), 2 * x.asnumpy())  # aux outputs contribute nothing
    assert len(aux) == 2
    np.testing.assert_allclose(aux[0].asnumpy(), x.asnumpy() + 1)
    (value, aux1, aux2), g2 = ms.value_and_grad(fn, has_aux=True)(x)
    np.testing.assert_allclose(value.asnumpy(), np.sum(x.asnumpy() ** 2))
    np.testing.assert_allclose(g2.asnumpy(), 2 * x.asnumpy())


def test_grad_operation_get_all_get_by_list_sens_param(mode):
    w = ms.Parameter(rng.standard_normal((3, 3)), name="wg")

    def fn(x, y):
        return x @ w * y  # non-scalar output

    x, y, sens = t64(2, 3), t64(2, 3), t64(2, 3)
    gx, gy = ops.GradOperation(get_all=True)(fn)(x, y)
    # without sens_param the sensitivity is ones_like(output)
    np.testing.assert_allclose(gx.asnumpy(), (y.asnumpy()) @ w.asnumpy().T, rtol=1e-10)
    np.testing.assert_allclose(gy.asnumpy(), x.asnumpy() @ w.asnumpy(), rtol=1e-10)
    (gx2, gy2), (gw,) = ops.GradOperation(get_all=True, get_by_list=True, sens_param=True)(
        fn, [w])(x, y, sens)
    np.testing.assert_allclose(gx2.asnumpy(), (sens.asnumpy() * y.asnumpy()) @ w.asnumpy().T,
                               rtol=1e-10)
    np.testing.assert_allclose(gw.asnumpy(), x.asnumpy().T @ (sens.asnumpy() * y.asnumpy()),
                               rtol=1e-10)
    gx3 = ops.GradOperation()(fn)(x, y)  # default: the first input only
    np.testing.assert_allclose(gx3.asnumpy(), gx.asnumpy())


def test_stop_gradient_and_integer_inputs(mode):
    def fn(x, n):
        return ops.reduce_sum(x * ops.stop_gradient(x) + ops.cast(n, ms.float64) * x)

    x, n = t64(3), ms.Tensor(np.array([1, 2, 3], np.int32))
    gx, gn = ms.grad(fn, (0, 1))(x, n)
    np.testing.assert_allclose(gx.asnumpy(), x.asnumpy() + np.array([1, 2, 3]))
    assert gn.dtype is ms.int32 and not gn.asnumpy().any()  # integer inputs get zeros


def test_grad_of_grad(mode):
    def f(x):
        return ops.reduce_sum(x * x * x)

    x = t64(4)
    d1 = ms.grad(f)
    d2 = ms.grad(lambda x: ops.reduce_sum(d1(x)))
    np.testing.assert_allclose(d1(x).asnumpy(), 3 * x.asnumpy() ** 2, rtol=1e-12)
    np.testing.assert_allclose(d2(x).asnumpy(), 6 * x.asnumpy(), rtol=1e-12)


def test_grad_inside_jit_compiles_one_function():
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        grad_fn = ms.value_and_grad(f_ms, 1)

        @ms.jit
        def step(x, w, b):
            loss, g = grad_fn(x, w, b)
            return loss, g

        x, w, b = t64(3, 4), t64(4, 2), t64(2)
        text = step.lower(x, w, b).as_text("ms-opt")
        assert "ms.grad" not in text and "call" not in text  # generated and inlined
        assert text.count("func.func") == 1
        loss, g = step(x, w, b)
        np.testing.assert_allclose(g.asnumpy(), numeric_grad(f_np, [a.asnumpy() for a in (x, w, b)], 1),
                                   rtol=1e-6, atol=1e-8)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def _mlp_numpy(x, labels, w1, b1, w2, b2):
    """Loss and gradients of Dense-ReLU-Dense + softmax cross-entropy (mean), by hand."""
    h = x @ w1.T + b1
    a = np.maximum(h, 0)
    logits = a @ w2.T + b2
    z = logits - logits.max(1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    n = x.shape[0]
    onehot = np.eye(logits.shape[1])[labels]
    loss = -np.sum(onehot * np.log(p)) / n
    dlogits = (p - onehot) / n
    dw2, db2 = dlogits.T @ a, dlogits.sum(0)
    dh = (dlogits @ w2) * (h > 0)
    dw1, db1 = dh.T @ x, dh.sum(0)
    return loss, (dw1, db1, dw2, db2)


def test_mlp_softmax_cross_entropy_matches_numpy_backward(mode):
    ms.set_seed(5)
    net = nn.SequentialCell([nn.Dense(6, 8, activation="relu", dtype=ms.float64),
                             nn.Dense(8, 3, dtype=ms.float64)])
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    params = net.trainable_params()

    def forward(x, y):
        return loss_fn(net(x), y)

    x = t64(7, 6)
    y = ms.Tensor(rng.integers(0, 3, 7).astype(np.int32))
    loss, grads = ms.value_and_grad(forward, None, params)(x, y)
    want_loss, want = _mlp_numpy(x.asnumpy(), y.asnumpy(), *[p.asnumpy() for p in params])
    np.testing.assert_allclose(loss.asnumpy(), want_loss, rtol=1e-12)
    for g, w in zip(grads, want):
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-10, atol=1e-12)


def test_pynative_gradients_equal_graph_gradients():
    w = ms.Parameter(rng.standard_normal((4, 3)).astype(np.float32), name="wpg")

    def fn(x):
        h = ops.relu(x @ w)
        return ops.reduce_mean(ops.log_softmax(h) * 2)

    x = ms.Tensor(rng.standard_normal((5, 4)).astype(np.float32))
    results = []
    for mode in (ms.GRAPH_MODE, ms.PYNATIVE_MODE):
        ms.set_context(mode=mode)
        results.append(ms.grad(fn, 0, weights=[w])(x))
    ms.set_context(mode=ms.PYNATIVE_MODE)
    (gx_g, (gw_g,)), (gx_p, (gw_p,)) = results
    np.testing.assert_allclose(gx_p.asnumpy(), gx_g.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(gw_p.asnumpy(), gw_g.asnumpy(), rtol=1e-6)


def test_pynative_gradient_cache_is_reused_and_invalidated():
    ms.set_context(mode=ms.PYNATIVE_MODE)

    def fn(x, y):
        z = x * y
        if float(ops.reduce_sum(z)) > 0:  # data-dependent Python control flow
            return ops.reduce_sum(z * z)
        return ops.reduce_sum(ops.exp(z))

    g = ms.grad(fn)
    pos, neg = ms.Tensor(np.ones(3)), ms.Tensor(-np.ones(3))
    y = ms.Tensor(np.full(3, 2.0))
    for _ in range(3):
        np.testing.assert_allclose(g(pos, y).asnumpy(), 2 * (pos.asnumpy() * 4))
    state = g._pynative
    assert (state.records, state.reuses) == (1, 2)
    # the other branch: a different op sequence, recorded and compiled again, not stale
    np.testing.assert_allclose(g(neg, y).asnumpy(), 2 * np.exp(-2.0) * np.ones(3))
    assert state.records == 2
    g(pos, y)
    assert (state.records, state.reuses) == (2, 3)


def test_pynative_gradient_through_a_writing_jit_function_writes_once():
    """A jit function called inside a PyNative-differentiated function writes a Parameter:
    the eager run and the compiled replay must not both apply the write."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    count = ms.Parameter(np.zeros(()), name="count", requires_grad=False)

    @ms.jit
    def tick(x):
        ops.assign(count, count + 1.0)
        return x * count

    grad = ms.grad(lambda t: ops.reduce_sum(tick(t) * t))
    x = ms.Tensor(np.ones(3))
    for step in (1, 2):
        # d/dt sum(t * count * t) = 2 * count * t, with the count this call wrote
        np.testing.assert_allclose(grad(x).asnumpy(), [2.0 * step] * 3)
        assert float(count.asnumpy()) == step
