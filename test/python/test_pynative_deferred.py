"""PyNative gradients with the recording's ops deferred (pyfront/deferred.py): no eager kernel
runs unless Python reads a value; a read runs the ops before it; the values are those eager
execution gives, snapshots included; side effects and mistakes happen at once. Against
float64 numpy."""
import inspect

import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mscc.pyfront import deferred, dispatch

rng = np.random.default_rng(11)
X = rng.standard_normal((6, 5))
W = rng.standard_normal((5, 3))


@pytest.fixture(autouse=True)
def pynative(monkeypatch):
    monkeypatch.setenv(deferred.ENV, "1")
    ms.set_context(mode=ms.PYNATIVE_MODE)


def loss(x, w):
    return ops.reduce_sum(ops.tanh(x @ w) ** 2)


def loss_and_grad_np(x, w):
    h = np.tanh(x @ w)
    return (h ** 2).sum(), x.T @ (2 * h * (1 - h * h))


def test_the_recording_runs_no_eager_kernel():
    kept = []

    def recorded(x, w):
        kept.append(x @ w)
        return loss(x, w)
    before = dispatch.eager_compiles
    value, grad = ms.value_and_grad(recorded, grad_position=1)(ms.Tensor(X), ms.Tensor(W))
    assert dispatch.eager_compiles == before
    assert kept[0]._pending is not None  # never read: never run
    want_value, want_grad = loss_and_grad_np(X, W)
    np.testing.assert_allclose(value.asnumpy(), want_value, rtol=1e-12)
    np.testing.assert_allclose(grad.asnumpy(), want_grad, rtol=1e-12)


def test_the_same_as_running_each_op_at_once(monkeypatch):
    deferred_grad = ms.grad(loss, grad_position=1)(ms.Tensor(X), ms.Tensor(W)).asnumpy()
    monkeypatch.setenv(deferred.ENV, "0")
    eager_grad = ms.grad(loss, grad_position=1)(ms.Tensor(X), ms.Tensor(W)).asnumpy()
    np.testing.assert_array_equal(deferred_grad, eager_grad)


def branching(x, w):
    """Python control flow on a value: the read runs the ops recorded before it."""
    h = x @ w
    if float(ops.reduce_sum(h).asnumpy()) > 0:
        return ops.reduce_sum(h * h)
    return ops.reduce_sum(ops.exp(h))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_value_read_while_recording_picks_the_branch(sign):
    w = W * sign * np.sign((X @ W).sum())
    grad = ms.grad(branching, grad_position=1)(ms.Tensor(X), ms.Tensor(w)).asnumpy()
    h = X @ w
    want = X.T @ (2 * h) if h.sum() > 0 else X.T @ np.exp(h)
    np.testing.assert_allclose(grad, want, rtol=1e-12)


def test_a_kept_intermediate_has_its_value_from_before_the_update():
    w = ms.Parameter(ms.Tensor(W), name="w")
    kept = []

    def recorded(x):
        h = x @ w
        kept.append(h)
        return ops.reduce_sum(h * h)
    ms.grad(recorded, grad_position=None, weights=[w])(ms.Tensor(X))
    assert isinstance(kept[0], deferred.DeferredTensor)
    w.set_data(ms.Tensor(np.zeros_like(W)))  # what an optimizer step does
    np.testing.assert_allclose(kept[0].asnumpy(), X @ W, rtol=1e-12)
    assert "value=" in repr(kept[0])


def test_a_parameter_write_happens_once_at_its_op():
    counter = ms.Parameter(ms.Tensor(np.zeros(1)), name="counter")

    def recorded(x):
        ops.assign(counter, counter + 1.0)
        return ops.reduce_sum(x * x)
    assert deferred.result_specs("ms.assign", [counter, ms.Tensor(np.ones(1))], {}, {}) is None
    grad = ms.grad(recorded)(ms.Tensor(X)).asnumpy()
    np.testing.assert_allclose(grad, 2 * X, rtol=1e-12)
    assert counter.asnumpy().tolist() == [1.0]


def test_a_mistake_raises_at_the_users_line():
    def recorded(x, w):
        return ops.reduce_sum(x @ w.T)  # MISTAKE-LINE: (6, 5) @ (3, 5)
    line = next(i for i, text in enumerate(inspect.getsource(recorded).splitlines())
                if "MISTAKE-LINE" in text) + recorded.__code__.co_firstlineno
    with pytest.raises(ValueError) as info:
        ms.grad(recorded)(ms.Tensor(X), ms.Tensor(W))
    assert "ms.matmul" in str(info.value) and f"test_pynative_deferred.py:{line}" in str(info.value)


def test_a_failed_run_leaves_the_ops_pending(monkeypatch):
    """An op that fails when a read runs it raises there, and again at the next read (its
    result never reads as an empty value)."""
    kept = []

    def recorded(x, w):
        kept.append(ops.tanh(x @ w))
        return ops.reduce_sum(x * x)
    ms.grad(recorded)(ms.Tensor(X), ms.Tensor(W))
    real = dispatch.execute

    def failing(op_name, *args):
        if op_name == "ms.tanh":
            raise RuntimeError("the tanh kernel failed on purpose")
        return real(op_name, *args)
    monkeypatch.setattr(dispatch, "execute", failing)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="on purpose"):
            kept[0].asnumpy()
    monkeypatch.setattr(dispatch, "execute", real)
    np.testing.assert_allclose(kept[0].asnumpy(), np.tanh(X @ W), rtol=1e-12)
