"""The RNN layers and cells with a dynamic batch (issue 16): one jit function whose
input_signature leaves the batch open (None) compiles ONCE and serves batches of 1, 2, 7, 64
and 0, forward and gradients, equal to the static compile and to test_rnn's float64 numpy
recurrence (gates in MindSpore's order); the gradients also match central differences; an
LSTM classifier's training step (TrainOneStepCell + Momentum in GRAPH_MODE with set_inputs,
value_and_grad + Adam under ms.jit) compiles once over batches 3, 8, 5; dynamic=1 compiles at
most twice over a sweep; a dynamic sequence length compiles the forward once (its gradient
per shape); ops.Scan(reverse=True).

Batch 0 runs only through the dynamic compile: the static compile of an empty batch is
refused by MLIR's verifier (a slice at offset 0 of a 0-sized dimension), a limit of the
static path this file does not test."""
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import pytest

import mscc as ms
from mscc import nn, ops
from mstest import finite_differences
from test_rnn import np_rnn, np_step

F32, F64, I32 = ms.float32, ms.float64, ms.int32
SIZES = (1, 2, 7, 64, 0)
IN, HID, STEPS = 4, 5, 6


def T(*shape, dtype=F32):
    """A placeholder of the input_signature (None: any size)."""
    return ms.Tensor(shape=list(shape), dtype=dtype)


@pytest.fixture(autouse=True)
def pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


# ---------------------------------------------------------------- the layers
@dataclass
class Layer:
    """One configuration: nn.RNN/GRU/LSTM `cls` with keyword arguments `kw`, called with a
    given initial state (`hx`) and per-sequence lengths (`lengths`) or without."""
    name: str
    cls: type
    mode: str  # test_rnn's names: RNN_TANH, RNN_RELU, GRU, LSTM
    kw: dict = field(default_factory=dict)
    hx: bool = False
    lengths: bool = False

    def make(self, dtype=F32):
        ms.set_seed(1)
        extra = {"nonlinearity": "relu"} if self.mode == "RNN_RELU" else {}
        return self.cls(IN, HID, dtype=dtype, **extra, **self.kw)

    def signature(self, net, dtype=F32):
        x = T(None, STEPS, IN, dtype=dtype) if net.batch_first else T(STEPS, None, IN,
                                                                       dtype=dtype)
        layers = net.num_layers * (2 if net.bidirectional else 1)
        states = (2 if self.mode == "LSTM" else 1) * self.hx
        return ((x,) + (T(layers, None, HID, dtype=dtype),) * states
                + ((T(None, dtype=I32),) if self.lengths else ()))

    def arrays(self, net, n, seed, dtype=np.float32):
        """x, the initial states (zeros when not given) and the lengths (or None)."""
        rng = np.random.default_rng(seed)
        x = rng.uniform(-1, 1, (n, STEPS, IN) if net.batch_first else (STEPS, n, IN))
        layers = net.num_layers * (2 if net.bidirectional else 1)
        states = [rng.uniform(-1, 1, (layers, n, HID)) if self.hx else np.zeros((layers, n, HID))
                  for _ in range(2 if self.mode == "LSTM" else 1)]
        lengths = rng.integers(1, STEPS + 1, n).astype(np.int32) if self.lengths else None
        return x.astype(dtype), [s.astype(dtype) for s in states], lengths

    def inputs(self, x, states, lengths):
        """The jit function's arguments for these arrays."""
        return ([ms.Tensor(x)] + [ms.Tensor(s) for s in states] * self.hx
                + ([ms.Tensor(lengths)] if self.lengths else []))

    def forward(self, net):
        """(x, *states, lengths) -> (output, h_n[, c_n]): the layer called as configured."""
        def fn(x, *rest):
            states = rest[:len(rest) - self.lengths]
            hx = None if not states else tuple(states) if self.mode == "LSTM" else states[0]
            out, final = net(x, hx, rest[-1] if self.lengths else None)
            return (out,) + (tuple(final) if self.mode == "LSTM" else (final,))
        return fn

    def reference(self, net, x, states, lengths):
        """test_rnn's float64 numpy recurrence, flattened as forward's results."""
        hx = [s.astype(np.float64) for s in states]
        out, final = np_rnn(net, self.mode, x.astype(np.float64),
                            hx if self.mode == "LSTM" else hx[0], lengths)
        return (out,) + (tuple(final) if self.mode == "LSTM" else (final,))


LAYERS = [
    Layer("rnn-tanh", nn.RNN, "RNN_TANH"),
    Layer("rnn-relu-2-layers-hx", nn.RNN, "RNN_RELU", {"num_layers": 2}, hx=True),
    Layer("rnn-bidirectional-batch-first-hx-lengths", nn.RNN, "RNN_TANH",
          {"bidirectional": True, "batch_first": True}, hx=True, lengths=True),
    Layer("gru-bidirectional-batch-first", nn.GRU, "GRU",
          {"bidirectional": True, "batch_first": True}),
    Layer("gru-hx-lengths", nn.GRU, "GRU", hx=True, lengths=True),
    Layer("lstm", nn.LSTM, "LSTM"),
    Layer("lstm-2-layers-bidirectional-lengths", nn.LSTM, "LSTM",
          {"num_layers": 2, "bidirectional": True}, lengths=True),
    Layer("lstm-no-bias-batch-first-hx", nn.LSTM, "LSTM",
          {"has_bias": False, "batch_first": True}, hx=True),
]
BY_NAME = {case.name: case for case in LAYERS}


def assert_all_close(got, want, rtol, atol):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = g.asnumpy() if hasattr(g, "asnumpy") else g
        w = w.asnumpy() if hasattr(w, "asnumpy") else w
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", LAYERS, ids=lambda c: c.name)
def test_one_compile_serves_every_batch(case):
    net = case.make()
    dynamic = ms.jit(case.forward(net), input_signature=case.signature(net))
    static = ms.jit(case.forward(net))
    for n in SIZES:
        arrays = case.arrays(net, n, seed=n)
        got = dynamic(*case.inputs(*arrays))
        assert_all_close(got, case.reference(net, *arrays), rtol=2e-5, atol=2e-5)
        if n:
            assert_all_close(got, static(*case.inputs(*arrays)), rtol=1e-5, atol=1e-6)
    assert dynamic.cache_info()["compiles"] == 1
    assert static.cache_info()["compiles"] == len(SIZES) - 1


# ---------------------------------------------------------------- gradients
def loss_of(case, net):
    """A scalar of every result (the sum of squares of the outputs, the final states'
    sum), so every gradient is exercised."""
    forward = case.forward(net)

    def loss(*args):
        out, *finals = forward(*args)
        return (out * out).sum() + sum(f.sum() for f in finals)
    return loss


def differentiated(case, net):
    """value_and_grad w.r.t. x, the given initial states and the weights."""
    positions = tuple(range(1 + (2 if case.mode == "LSTM" else 1) * case.hx))
    return ms.value_and_grad(loss_of(case, net), positions, net.trainable_params())


GRADIENT_CASES = [BY_NAME[n] for n in ("rnn-bidirectional-batch-first-hx-lengths",
                                       "gru-hx-lengths", "lstm-2-layers-bidirectional-lengths",
                                       "lstm-no-bias-batch-first-hx")]


@pytest.mark.parametrize("case", GRADIENT_CASES, ids=lambda c: c.name)
def test_gradients_of_the_dynamic_compile_equal_the_static_ones(case):
    net = case.make()
    dynamic = ms.jit(differentiated(case, net), input_signature=case.signature(net))
    static = ms.jit(differentiated(case, net))
    for n in (1, 8):
        inputs = case.inputs(*case.arrays(net, n, seed=30 + n))
        (loss_d, (inputs_d, weights_d)), (loss_s, (inputs_s, weights_s)) = (
            dynamic(*inputs), static(*inputs))
        np.testing.assert_allclose(loss_d.asnumpy(), loss_s.asnumpy(), rtol=1e-5)
        inputs_d = inputs_d if isinstance(inputs_d, tuple) else (inputs_d,)
        inputs_s = inputs_s if isinstance(inputs_s, tuple) else (inputs_s,)
        assert_all_close(inputs_d, inputs_s, rtol=1e-4, atol=1e-5)
        assert_all_close(weights_d, weights_s, rtol=1e-4, atol=1e-5)
        assert any(np.abs(g.asnumpy()).max() > 1e-3 for g in weights_d)
    assert dynamic.cache_info()["compiles"] == 1 and static.cache_info()["compiles"] == 2


def np_loss(case, net, x, states, lengths):
    out, *finals = case.reference(net, x, states, lengths)
    return (out * out).sum() + sum(f.sum() for f in finals)


def with_weight(net, name, value):
    """`net` as np_rnn reads it (options and named parameters), parameter `name` = value."""
    params = [SimpleNamespace(name=p.name, asnumpy=(lambda v=value: v) if p.name == name
                              else p.asnumpy) for p in net.trainable_params()]
    return SimpleNamespace(trainable_params=lambda: params, num_layers=net.num_layers,
                           bidirectional=net.bidirectional, batch_first=net.batch_first)


@pytest.mark.parametrize("case", [BY_NAME["lstm-2-layers-bidirectional-lengths"],
                                  BY_NAME["gru-hx-lengths"]], ids=lambda c: c.name)
def test_gradients_match_central_differences_in_float64(case):
    net = case.make(F64)
    grads = ms.jit(differentiated(case, net), input_signature=case.signature(net, F64))
    names = [p.name for p in net.trainable_params()]
    for n in (2, 3):
        x, states, lengths = case.arrays(net, n, seed=50 + n, dtype=np.float64)
        _, (d_inputs, d_weights) = grads(*case.inputs(x, states, lengths))
        d_x = (d_inputs[0] if isinstance(d_inputs, tuple) else d_inputs).asnumpy()
        want = finite_differences(lambda v: np_loss(case, net, v, states, lengths), x)
        np.testing.assert_allclose(d_x, want, rtol=1e-6, atol=1e-8)
        w_hh = names.index("weight_hh_l0")
        value = net.trainable_params()[w_hh].asnumpy()
        want = finite_differences(
            lambda w: np_loss(case, with_weight(net, "weight_hh_l0", w), x, states, lengths),
            value)
        np.testing.assert_allclose(d_weights[w_hh].asnumpy(), want, rtol=1e-6, atol=1e-8)
    assert grads.cache_info()["compiles"] == 1


# ---------------------------------------------------------------- the cells
@dataclass
class CellCase:
    name: str
    cls: type
    mode: str
    kw: dict = field(default_factory=dict)
    hx: bool = True

    def make(self):
        ms.set_seed(2)
        extra = {"nonlinearity": "relu"} if self.mode == "RNN_RELU" else {}
        return self.cls(IN, HID, **extra, **self.kw)

    @property
    def n_states(self):
        return (2 if self.mode == "LSTM" else 1) * self.hx

    def forward(self, cell):
        def fn(x, *states):
            hx = None if not states else tuple(states) if self.mode == "LSTM" else states[0]
            new = cell(x, hx)
            return tuple(new) if self.mode == "LSTM" else (new,)
        return fn

    def reference(self, cell, x, states):
        p = {q.name: q.asnumpy().astype(np.float64) for q in cell.trainable_params()}
        weights = [p.get(k, 0.0) for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        states = states or [np.zeros((len(x), HID))] * (2 if self.mode == "LSTM" else 1)
        state = tuple(states) if self.mode == "LSTM" else states[0]
        new, _ = np_step(self.mode, x.astype(np.float64), state, *weights)
        return tuple(new) if self.mode == "LSTM" else (new,)


CELLS = [
    CellCase("rnn-cell-tanh", nn.RNNCell, "RNN_TANH"),
    CellCase("rnn-cell-relu-no-hx", nn.RNNCell, "RNN_RELU", hx=False),
    CellCase("gru-cell", nn.GRUCell, "GRU"),
    CellCase("gru-cell-no-bias-no-hx", nn.GRUCell, "GRU", {"has_bias": False}, hx=False),
    CellCase("lstm-cell", nn.LSTMCell, "LSTM"),
    CellCase("lstm-cell-no-hx", nn.LSTMCell, "LSTM", hx=False),
]


@pytest.mark.parametrize("case", CELLS, ids=lambda c: c.name)
def test_cells_compile_once_for_every_batch_forward_and_backward(case):
    cell = case.make()
    sig = (T(None, IN),) + (T(None, HID),) * case.n_states
    forward = case.forward(cell)

    def loss(*args):
        return sum((s * s).sum() for s in forward(*args))
    positions = tuple(range(1 + case.n_states))
    grad = ms.value_and_grad(loss, positions, cell.trainable_params())
    dynamic, dynamic_grad = ms.jit(forward, input_signature=sig), ms.jit(grad,
                                                                          input_signature=sig)
    static, static_grad = ms.jit(forward), ms.jit(grad)
    for n in SIZES:
        rng = np.random.default_rng(70 + n)
        x = rng.uniform(-1, 1, (n, IN)).astype(np.float32)
        states = [rng.uniform(-1, 1, (n, HID)).astype(np.float32)
                  for _ in range(case.n_states)]
        args = [ms.Tensor(a) for a in [x] + states]
        got = dynamic(*args)
        assert_all_close(got, case.reference(cell, x, states), rtol=2e-5, atol=2e-5)
        loss_d, (inputs_d, weights_d) = dynamic_grad(*args)
        if n:
            assert_all_close(got, static(*args), rtol=1e-5, atol=1e-6)
            loss_s, (inputs_s, weights_s) = static_grad(*args)
            np.testing.assert_allclose(loss_d.asnumpy(), loss_s.asnumpy(), rtol=1e-5)
            assert_all_close(weights_d, weights_s, rtol=1e-4, atol=1e-5)
            assert_all_close(inputs_d if isinstance(inputs_d, tuple) else (inputs_d,),
                             inputs_s if isinstance(inputs_s, tuple) else (inputs_s,),
                             rtol=1e-4, atol=1e-5)
    assert dynamic.cache_info()["compiles"] == 1 and dynamic_grad.cache_info()["compiles"] == 1


# ---------------------------------------------------------------- training an LSTM classifier
class SequenceClassifier(nn.Cell):
    """An LSTM over the sequence, a Dense layer on its last layer's final state."""

    def __init__(self):
        super().__init__()
        ms.set_seed(4)
        self.lstm = nn.LSTM(IN, 8, num_layers=2, batch_first=True)
        self.head = nn.Dense(8, 3)

    def construct(self, x):
        _, (h, _) = self.lstm(x)
        return self.head(h[-1])


LOSS = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
TRAIN_SIG = (T(None, STEPS, IN), T(None, dtype=I32))
TRAIN_BATCHES = (3, 8, 5)


def sequences(n, seed):
    rng = np.random.default_rng(seed)
    return (ms.Tensor(rng.uniform(-1, 1, (n, STEPS, IN)).astype(np.float32)),
            ms.Tensor(rng.integers(0, 3, n).astype(np.int32)))


def assert_same_weights(a, b):
    for p, q in zip(a.trainable_params(), b.trainable_params()):
        np.testing.assert_allclose(p.asnumpy(), q.asnumpy(), rtol=1e-5, atol=1e-6)


def test_train_one_step_cell_in_graph_mode_with_set_inputs_compiles_once():
    ms.set_context(mode=ms.GRAPH_MODE)

    def train_step(declared):
        net = SequenceClassifier()
        step = nn.TrainOneStepCell(nn.WithLossCell(net, LOSS),
                                   nn.Momentum(net.trainable_params(), 0.1, 0.9))
        return net, (step.set_inputs(*TRAIN_SIG) if declared else step)
    net, step = train_step(True)
    ref_net, ref_step = train_step(False)
    start = [p.asnumpy().copy() for p in net.trainable_params()]
    for n in TRAIN_BATCHES:
        x, y = sequences(n, seed=n)
        np.testing.assert_allclose(step(x, y).asnumpy(), ref_step(x, y).asnumpy(), rtol=1e-5)
        assert_same_weights(net, ref_net)
    assert all(np.abs(p.asnumpy() - s).max() > 1e-5
               for p, s in zip(net.trainable_params(), start))
    assert step._graph_fn.cache_info()["compiles"] == 1


def test_value_and_grad_with_adam_under_jit_compiles_once():
    def train_step(signature):
        net = SequenceClassifier()
        opt = nn.Adam(net.trainable_params(), learning_rate=0.01)
        grad_fn = ms.value_and_grad(lambda x, y: LOSS(net(x), y), None, opt.parameters)

        def step(x, y):
            loss, grads = grad_fn(x, y)
            opt(grads)
            return loss
        return net, ms.jit(step, input_signature=signature)
    net, step = train_step(TRAIN_SIG)
    ref_net, ref_step = train_step(None)
    for n in TRAIN_BATCHES:
        x, y = sequences(n, seed=10 + n)
        np.testing.assert_allclose(step(x, y).asnumpy(), ref_step(x, y).asnumpy(), rtol=1e-5)
        assert_same_weights(net, ref_net)
    assert step.cache_info()["compiles"] == 1 and ref_step.cache_info()["compiles"] == 3


# ---------------------------------------------------------------- dynamic=1 and GRAPH_MODE
def test_dynamic_1_compiles_at_most_twice_over_a_sweep_of_batches():
    case = BY_NAME["gru-bidirectional-batch-first"]
    net = case.make()
    jitted = ms.jit(case.forward(net), dynamic=1)
    for n in (3, 5, 1, 8, 2, 13, 6):
        arrays = case.arrays(net, n, seed=n)
        assert_all_close(jitted(*case.inputs(*arrays)), case.reference(net, *arrays),
                         rtol=2e-5, atol=2e-5)
    assert jitted.cache_info()["compiles"] <= 2


@pytest.mark.parametrize("case", [BY_NAME["gru-bidirectional-batch-first"],
                                  BY_NAME["rnn-bidirectional-batch-first-hx-lengths"]],
                         ids=lambda c: c.name)
def test_graph_mode_layer_with_set_inputs_compiles_once(case):
    ms.set_context(mode=ms.GRAPH_MODE)
    net = case.make()
    net.set_inputs(*case.signature(net))
    call = case.forward(net)
    for n in (4, 1, 9):
        arrays = case.arrays(net, n, seed=n)
        assert_all_close(call(*case.inputs(*arrays)), case.reference(net, *arrays),
                         rtol=2e-5, atol=2e-5)
    assert net._graph_fn.cache_info()["compiles"] == 1


# ---------------------------------------------------------------- sequence lengths, mistakes
def test_a_dynamic_sequence_length_compiles_the_forward_once_and_the_gradient_per_shape(
        caplog):
    """Batch and sequence length both open: the forward compiles once (the Scans' trip
    counts read at run time); the gradient, which needs static trip counts, falls back to
    one compile per shape with the jit's warning, and its values are still right."""
    case = BY_NAME["lstm-2-layers-bidirectional-lengths"]
    net = case.make()
    sig = (T(None, None, IN), T(None, dtype=I32))
    forward = ms.jit(case.forward(net), input_signature=sig)
    static = ms.jit(case.forward(net))
    for steps, n in ((3, 2), (6, 5), (1, 1), (9, 3)):
        rng = np.random.default_rng(steps)
        x = rng.uniform(-1, 1, (steps, n, IN)).astype(np.float32)
        lengths = rng.integers(1, steps + 1, n).astype(np.int32)
        states = [np.zeros((4, n, HID), np.float32)] * 2
        got = forward(ms.Tensor(x), ms.Tensor(lengths))
        assert_all_close(got, case.reference(net, x, states, lengths), rtol=2e-5, atol=2e-5)
        assert_all_close(got, static(ms.Tensor(x), ms.Tensor(lengths)), rtol=1e-5, atol=1e-6)
    assert forward.cache_info()["compiles"] == 1
    grads = ms.jit(differentiated(case, net), input_signature=sig)
    reference = ms.jit(differentiated(case, net))
    with caplog.at_level("WARNING", logger="mscc"):
        for steps in (3, 4):
            args = (ms.Tensor(np.ones((steps, 2, IN), np.float32)),
                    ms.Tensor(np.array([steps, 1], np.int32)))
            assert_all_close(grads(*args)[1][1], reference(*args)[1][1], rtol=1e-5, atol=1e-6)
    assert grads.cache_info()["compiles"] == 2
    assert any("compiled for each input shape" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("case", [BY_NAME["gru-hx-lengths"],
                                  BY_NAME["lstm-no-bias-batch-first-hx"]], ids=lambda c: c.name)
def test_initial_states_or_lengths_of_another_batch_size_are_refused(case):
    net = case.make()
    jitted = ms.jit(case.forward(net), input_signature=case.signature(net))
    x, states, lengths = case.arrays(net, 4, seed=0)
    jitted(*case.inputs(x, states, lengths))
    short = [s[:, :3] for s in states]
    with pytest.raises(ValueError, match="must be equal|must agree"):
        jitted(*case.inputs(x, short, lengths))
    assert jitted.cache_info()["compiles"] == 1


# ---------------------------------------------------------------- Scan's reverse
@pytest.mark.parametrize("unroll", [False, True], ids=["loop", "unrolled"])
def test_reverse_scan_runs_from_the_last_step_keeping_each_y_in_place(unroll):
    """ops.Scan(..., reverse=True), JAX's: the carry goes from the last x to the first, each
    y stays at its x's position; a dynamic batch compiles once."""
    def running_sums(xs):
        return ops.Scan()(lambda c, x: (c + x, c + x), ops.zeros_like(xs[0]), xs,
                          unroll=unroll, reverse=True)
    jitted = ms.jit(running_sums, input_signature=(T(5, None),))
    for n in (1, 3, 0):
        xs = np.random.default_rng(n).standard_normal((5, n)).astype(np.float32)
        final, ys = jitted(ms.Tensor(xs))
        want = np.cumsum(xs[::-1], 0)[::-1]
        np.testing.assert_allclose(ys.asnumpy(), want, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(final.asnumpy(), want[0], rtol=1e-6, atol=1e-6)
        eager_final, eager_ys = running_sums(ms.Tensor(xs))
        np.testing.assert_allclose(eager_ys.asnumpy(), want, rtol=1e-6, atol=1e-6)
    assert jitted.cache_info()["compiles"] == 1
