"""Custom gradients (issue 19): a Cell's bprop, ops.InsertGradientOf, Cell.recompute and
ms.recompute, in GRAPH_MODE (the Cell compiled through jit), under an explicit jit, and in
PYNATIVE_MODE; values against hand-computed gradients and finite differences (float64)."""
import numpy as np
import pytest

import mscc as ms
from mscc import Parameter, Tensor, nn, ops
from mstest import compile_fn, finite_differences, op, op_counts, spec

MODES = ["graph", "jit", "pynative"]
grad_all = ops.GradOperation(get_all=True)


def run(mode, fn, *args):
    """fn(*args) as the mode computes it: a gradient taken in GRAPH_MODE (compiled through
    jit), inside an explicit jit function, or recorded in PYNATIVE_MODE."""
    ms.set_context(mode=ms.PYNATIVE_MODE if mode == "pynative" else ms.GRAPH_MODE)
    try:
        return ms.jit(fn)(*args) if mode == "jit" else fn(*args)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def np_of(x):
    return tuple(np_of(v) for v in x) if isinstance(x, (tuple, list)) else x.asnumpy()


def f64(*shape, seed=0):
    return Tensor(np.random.default_rng(seed).uniform(-1, 1, shape))


# ------------------------------------------------------------------ bprop cells

class StraightThrough(nn.Cell):
    """round() forward, identity backward (a straight-through estimator)."""

    def construct(self, x):
        return ops.round(x)

    def bprop(self, x, out, dout):
        return (dout,)


class ScaledGrad(nn.Cell):
    def construct(self, x):
        return x * 1.0

    def bprop(self, x, out, dout):
        return (dout * 0.25,)


class MulAdd(nn.Cell):
    """MindSpore's test_custom_cell_bprop: a bprop that is wrong on purpose, so that it is
    distinguishable from the automatic gradient."""

    def construct(self, x, y):
        return 2 * x + y

    def bprop(self, x, y, out, dout):
        return 2 * dout, 2 * y


class TwoOutputs(nn.Cell):
    """bprop sees `out` and `dout` as tuples; the second output is used only by the bprop."""

    def construct(self, x):
        return x + 1, x * 3

    def bprop(self, x, out, dout):
        return (dout[0] * out[1],)


class WithParameters(nn.Cell):
    """Reads Parameters in construct and in bprop; they get no gradient through it."""

    def __init__(self):
        super().__init__()
        self.z = Parameter(Tensor(np.array([2.0])), name="z")
        self.k = Parameter(Tensor(np.array([3.0])), name="k")

    def construct(self, x, y):
        return ops.matmul(x * self.z, y)

    def bprop(self, x, y, out, dout):
        return x * self.k, y + y


def test_straight_through_estimator():
    x = Tensor(np.array([0.2, 1.7, -2.6]))
    w = Tensor(np.array([0.5, -1.0, 2.0]))
    ste = StraightThrough()
    for mode in MODES:
        g = run(mode, ms.grad(lambda a, b: (ste(a) * b).sum(), (0, 1)), x, w)
        np.testing.assert_allclose(g[0].asnumpy(), w.asnumpy())  # d/dx is what flows in
        np.testing.assert_allclose(g[1].asnumpy(), np.round(x.asnumpy()))


def test_scaled_gradient_composes_with_the_automatic_one():
    x = f64(3, 4)
    cell = ScaledGrad()
    want = 0.25 * 2 * np.sin(x.asnumpy()) * np.cos(x.asnumpy())
    for mode in MODES:
        g = run(mode, ms.grad(lambda a: (ops.sin(cell(a)) ** 2).sum()), x)
        np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-12)


def test_mindspore_mul_add_case_uses_the_bprop():
    x, y = Tensor(np.float32(1.0)), Tensor(np.float32(2.0))
    for mode in MODES:
        g = run(mode, grad_all(MulAdd()), x, y)
        assert [float(v.asnumpy()) for v in g] == [2.0, 4.0]


def test_tuple_outputs_and_an_output_only_the_bprop_uses():
    x = f64(2, 3)
    cell = TwoOutputs()
    for mode in MODES:
        g = run(mode, ms.grad(lambda a: cell(a)[0].sum()), x)
        np.testing.assert_allclose(g.asnumpy(), 3 * x.asnumpy())


def test_bprop_cell_with_parameters_inside_a_network():
    """The inputs' gradients come from the bprop, its own Parameters get zeros, and the
    network's other Parameters get their true gradient (checked by finite differences)."""
    inner = WithParameters()
    w = Parameter(Tensor(np.random.default_rng(1).uniform(-1, 1, (3, 3))), name="w")
    x, y = f64(2, 3, seed=2), f64(3, 3, seed=3)

    def loss(a, b):
        return (ops.tanh(inner(a, ops.matmul(b, w))) ).sum()
    weights = [w, inner.z, inner.k]
    for mode in MODES:
        (gx, gy), (gw, gz, gk) = run(mode, ms.grad(loss, (0, 1), weights), x, y)
        np.testing.assert_allclose(gx.asnumpy(), 3 * x.asnumpy())
        np.testing.assert_allclose(gz.asnumpy(), 0)
        np.testing.assert_allclose(gk.asnumpy(), 0)
        # d loss / d w through b @ w, with the bprop's cotangent 2 * (b @ w) for that input
        bw = y.asnumpy() @ w.asnumpy()
        np.testing.assert_allclose(gw.asnumpy(), y.asnumpy().T @ (2 * bw))
        np.testing.assert_allclose(gy.asnumpy(), (2 * bw) @ w.asnumpy().T)


def test_gradients_taken_inside_a_bprop():
    """MindSpore's test_grad_in_bprop_2: construct and bprop both take gradients of a
    sub-cell that has its own bprop."""
    class Inner(nn.Cell):
        def construct(self, x, y):
            return ops.relu(x)

        def bprop(self, x, y, out, dout):
            return x * y, y + x

    class Middle(nn.Cell):
        def __init__(self):
            super().__init__()
            self.f = Inner()

        def construct(self, x, y):
            return self.f(x, y), grad_all(self.f)(x, y)

        def bprop(self, x, y, out, dout):
            return out[1][0], grad_all(self.f)(x, y)[1]
    middle = Middle()
    ones = Tensor(np.ones((2, 2), np.float32))
    for mode in MODES:
        gx, gy = run(mode, grad_all(lambda x, y: middle(x, y)), ones, ones)
        np.testing.assert_array_equal(gx.asnumpy(), np.ones((2, 2)))
        np.testing.assert_array_equal(gy.asnumpy(), 2 * np.ones((2, 2)))


def test_second_order_through_a_bprop():
    class Cube(nn.Cell):
        def construct(self, x):
            return x * x * x

        def bprop(self, x, out, dout):
            return (3 * x * x * dout,)
    cube = Cube()
    x = Tensor(np.array([1.0, -2.0, 0.5]))
    for mode in ("graph", "jit"):
        gg = run(mode, ms.grad(lambda a: ms.grad(cube)(a).sum()), x)
        np.testing.assert_allclose(gg.asnumpy(), 6 * x.asnumpy())


def test_a_bprop_cell_compiled_alone_runs_its_forward():
    for mode in ("graph", "pynative"):
        out = run(mode, WithParameters(), f64(2, 3), f64(3, 3, seed=1))
        assert out.shape == (2, 3)


# ------------------------------------------------------------------ bprop mistakes

class WrongCount(nn.Cell):
    def construct(self, x, y):
        return x + y

    def bprop(self, x, y, out, dout):
        return (dout,)


class WrongShape(nn.Cell):
    def construct(self, x, y):
        return x + y

    def bprop(self, x, y, out, dout):
        return dout, Tensor(np.ones(2))


class NotATensor(nn.Cell):
    def construct(self, x):
        return x * 2

    def bprop(self, x, out, dout):
        return ("two",)


class WritesParameter(nn.Cell):
    def __init__(self):
        super().__init__()
        self.count = Parameter(Tensor(np.zeros(())), name="count")

    def construct(self, x):
        ops.assign(self.count, self.count + 1)
        return x

    def bprop(self, x, out, dout):
        return (dout,)


@pytest.mark.parametrize("cell,n_args,kind,message", [
    (WrongCount, 2, ValueError, "For 'nn.WrongCount', bprop returned 1 gradient, but the Cell "
                                "has 2 inputs"),
    (WrongShape, 2, ValueError, "For 'nn.WrongShape', bprop's gradient #1 is a float64 Tensor "
                                "of shape (2,), but input #1 is float64 of shape (2, 2)"),
    (NotATensor, 1, TypeError, "For 'nn.NotATensor', bprop's gradient #0 is a str"),
    (WritesParameter, 1, TypeError, "For 'nn.WritesParameter', the forward assigns the "
                                    "Parameter count"),
])
@pytest.mark.parametrize("mode", MODES)
def test_bprop_mistakes_name_the_cell_and_the_line(cell, n_args, kind, message, mode):
    args = [Tensor(np.ones((2, 2)))] * n_args
    with pytest.raises(kind, match=r"\(at .*test_custom_grad.py:\d+\)") as info:
        run(mode, grad_all(cell()), *args)
    assert message in str(info.value)


# ------------------------------------------------------------------ InsertGradientOf

def test_insert_gradient_of_clips_the_gradient_that_flows_through():
    clip = ops.InsertGradientOf(lambda d: ops.clip_by_value(d, -0.1, 0.1))
    x = Tensor(np.array([0.01, 1.0, -2.0]))
    want = 3 * np.clip(2 * 3 * x.asnumpy(), -0.1, 0.1)
    for mode in MODES:
        g = run(mode, ms.grad(lambda a: (clip(a * 3.0) ** 2).sum()), x)
        np.testing.assert_allclose(g.asnumpy(), want)
    assert ms.ops.operations.InsertGradientOf is ops.InsertGradientOf


def test_insert_gradient_of_forward_is_the_identity():
    x = f64(4)
    y = ops.InsertGradientOf(lambda d: d * 0)(x)
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())
    with pytest.raises(TypeError, match="f must be callable"):
        ops.InsertGradientOf(3)


# ------------------------------------------------------------------ recompute

class Block(nn.Cell):
    def __init__(self, seed):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.w1 = Parameter(Tensor(rng.uniform(-0.5, 0.5, (6, 12))), name="w1")
        self.w2 = Parameter(Tensor(rng.uniform(-0.5, 0.5, (12, 6))), name="w2")

    def construct(self, x):
        return ops.tanh(ops.matmul(ops.relu(ops.matmul(x, self.w1)), self.w2)) + x


class Deep(nn.Cell):
    def __init__(self, recompute):
        super().__init__()
        self.blocks = nn.CellList([Block(i) for i in range(3)])
        if recompute:
            for b in self.blocks:
                b.recompute()

    def construct(self, x):
        for b in self.blocks:
            x = b(x)
        return (x * x).sum()


@pytest.mark.parametrize("mode", MODES)
def test_recompute_gives_the_gradients_of_the_stored_forward(mode):
    plain, remat = Deep(False), Deep(True)
    x = f64(4, 6, seed=7)
    g0 = run(mode, ms.grad(plain, 0, plain.trainable_params()), x)
    g1 = run(mode, ms.grad(remat, 0, remat.trainable_params()), x)
    for a, b in zip([g0[0], *g0[1]], [g1[0], *g1[1]]):
        np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), rtol=1e-12, atol=1e-14)
    fd = finite_differences(lambda v: float(remat(Tensor(v)).asnumpy()), x.asnumpy())
    np.testing.assert_allclose(g1[0].asnumpy(), fd, rtol=1e-6, atol=1e-8)


_op_counts = op_counts


def test_recompute_repeats_the_forward_in_the_backward():
    x = f64(4, 6)
    texts = {}
    for rc in (False, True):
        net = Deep(rc)
        step = ms.jit(lambda a, n=net: ms.grad(n, 0, n.trainable_params())(a))
        texts[rc] = _op_counts(step.lower(x).as_text("ms-opt"))
    assert texts[False].get("ms.barrier", 0) == 0
    assert texts[True]["ms.barrier"] == 3 * 3  # each block's input and its two weights
    assert texts[True]["ms.tanh"] == 2 * texts[False]["ms.tanh"]  # forward + recomputed
    assert texts[True]["ms.relu"] == 2 * texts[False]["ms.relu"]


def test_ms_recompute_of_a_function_with_keyword_arguments():
    x = f64(3, 4)
    for mode in MODES:
        g = run(mode, ms.grad(lambda a: ms.recompute(lambda b, k=1.0: ops.sin(b) * k, a,
                                                      k=2.0).sum()), x)
        np.testing.assert_allclose(g.asnumpy(), 2 * np.cos(x.asnumpy()), rtol=1e-12)


def test_recompute_of_a_block_with_a_loop():
    """A recomputed LSTM: its scf.for is recomputed (and its backward built) in the
    backward; gradients equal those of the stored forward."""
    ms.set_seed(3)
    lstm = nn.LSTM(3, 5, batch_first=True)
    x = Tensor(np.random.default_rng(0).uniform(-1, 1, (2, 4, 3)).astype(np.float32))
    loss = lambda a: (lstm(a)[0] ** 2).sum()  # noqa: E731
    want = run("graph", ms.grad(loss, 0, lstm.trainable_params()), x)
    got = run("graph", ms.grad(lambda a: ms.recompute(loss, a), 0, lstm.trainable_params()), x)
    for a, b in zip([want[0], *want[1]], [got[0], *got[1]]):
        np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), rtol=1e-5, atol=1e-6)


def test_recompute_mistakes():
    with pytest.raises(TypeError, match="block must be a Cell or a function"):
        ms.recompute(3, Tensor(np.ones(2)))
    with pytest.raises(TypeError, match="unexpected keyword argument 'depth'"):
        Block(0).recompute(depth=2)
    with pytest.raises(TypeError, match="mp_comm_recompute must be a bool"):
        Block(0).recompute(mp_comm_recompute="yes")


# ------------------------------------------------------------------ ms.barrier itself

@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
def test_barrier_is_the_identity(dtype):
    exe = compile_fn([spec((3, 5), dtype)], lambda x: op("ms.barrier", x))
    data = (np.random.default_rng(0).uniform(-3, 3, (3, 5)) > 0 if dtype == "bool" else
            np.random.default_rng(0).uniform(-3, 3, (3, 5)).astype(dtype))
    got, = exe(data)
    np.testing.assert_array_equal(got, data)


def test_pynative_differentiates_a_tensor_passed_twice_at_each_position():
    """The PyNative tape knows inputs by identity: f(x, x) used to give the first position
    a zero gradient (the case MindSpore's test_grad_in_bprop passes, ones for x and y)."""
    ones = Tensor(np.ones(3))
    for mode in MODES:
        gx, gy = run(mode, grad_all(lambda a, b: a * b * 2), ones, ones)
        np.testing.assert_array_equal(gx.asnumpy(), 2 * np.ones(3))
        np.testing.assert_array_equal(gy.asnumpy(), 2 * np.ones(3))
