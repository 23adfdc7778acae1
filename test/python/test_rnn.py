"""nn.RNN, nn.GRU and nn.LSTM against a numpy implementation of the same equations (layers,
directions, batch_first, initial states, per-sequence lengths), in graph and PyNative mode;
gradients of the inputs, initial states and weights against central differences in float64;
each layer and direction compiles to one loop, whatever the sequence length."""
import numpy as np
import pytest

import mscc as ms
from mscc import nn, ops

RNG = np.random.default_rng(3)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_step(mode, x, state, w_ih, w_hh, b_ih, b_hh):
    gi, h = x @ w_ih.T + b_ih, state[0] if mode == "LSTM" else state
    gh = h @ w_hh.T + b_hh
    if mode in ("RNN_TANH", "RNN_RELU"):
        h = np.tanh(gi + gh) if mode == "RNN_TANH" else np.maximum(gi + gh, 0)
        return h, h
    if mode == "GRU":
        (ir, iz, i_n), (hr, hz, hn) = np.split(gi, 3, -1), np.split(gh, 3, -1)
        r, z = sigmoid(ir + hr), sigmoid(iz + hz)
        n = np.tanh(i_n + r * hn)
        h = (1 - z) * n + z * h
        return h, h
    i, f, g, o = np.split(gi + gh, 4, -1)
    c = sigmoid(f) * state[1] + sigmoid(i) * np.tanh(g)
    h = sigmoid(o) * np.tanh(c)
    return (h, c), h


def np_direction(mode, x, state, weights, lengths, reverse):
    steps = x.shape[0]
    outs = np.zeros(x.shape[:2] + (weights[1].shape[1],))
    for b in range(x.shape[1]):
        n = steps if lengths is None else lengths[b]
        s = tuple(v[b:b + 1] for v in state) if mode == "LSTM" else state[b:b + 1]
        order = range(n - 1, -1, -1) if reverse else range(n)
        for t in order:
            s, out = np_step(mode, x[t, b:b + 1], s, *weights)
            outs[t, b] = out[0]
        if mode == "LSTM":
            state = tuple(v.copy() for v in state)
            state[0][b], state[1][b] = s[0][0], s[1][0]
        else:
            state = state.copy()
            state[b] = s[0]
    return state, outs


def np_rnn(net, mode, x, hx, lengths):
    p = {q.name: q.asnumpy().astype(np.float64) for q in net.trainable_params()}
    dirs = 2 if net.bidirectional else 1
    if net.batch_first:
        x = x.transpose(1, 0, 2)
    finals = []
    for layer in range(net.num_layers):
        outs = []
        for d in range(dirs):
            sfx = "_reverse" if d else ""
            weights = [p.get(f"{k}_l{layer}{sfx}", 0.0)
                       for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            k = layer * dirs + d
            state = (hx[0][k], hx[1][k]) if mode == "LSTM" else hx[k]
            state, out = np_direction(mode, x, state, weights, lengths, d == 1)
            finals.append(state)
            outs.append(out)
        x = np.concatenate(outs, -1)
    if net.batch_first:
        x = x.transpose(1, 0, 2)
    if mode == "LSTM":
        return x, (np.stack([h for h, _ in finals]), np.stack([c for _, c in finals]))
    return x, np.stack(finals)


def make(cls, mode, **kw):
    ms.set_seed(1)
    if cls is nn.RNN:
        return cls(4, 5, nonlinearity="relu" if mode == "RNN_RELU" else "tanh", **kw)
    return cls(4, 5, **kw)


CASES = [
    (nn.RNN, "RNN_TANH", {}),
    (nn.RNN, "RNN_RELU", {"num_layers": 2}),
    (nn.GRU, "GRU", {}),
    (nn.GRU, "GRU", {"bidirectional": True, "batch_first": True}),
    (nn.LSTM, "LSTM", {}),
    (nn.LSTM, "LSTM", {"num_layers": 2, "bidirectional": True}),
    (nn.LSTM, "LSTM", {"has_bias": False, "batch_first": True}),
]
IDS = [f"{m}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'default'}" for _, m, kw in CASES]


def _inputs(net, mode, batch=3, steps=6, with_hx=False):
    shape = (batch, steps, 4) if net.batch_first else (steps, batch, 4)
    x = RNG.uniform(-1, 1, shape).astype(np.float32)
    n = net.num_layers * (2 if net.bidirectional else 1)
    hx = [RNG.uniform(-1, 1, (n, batch, 5)).astype(np.float32) if with_hx
          else np.zeros((n, batch, 5), np.float32) for _ in range(2)]
    return x, (hx if mode == "LSTM" else hx[0])


def _compare(got, want, tol):
    got_out, got_state = got
    np.testing.assert_allclose(got_out.asnumpy(), want[0], rtol=tol, atol=tol)
    pairs = zip(got_state, want[1]) if isinstance(want[1], tuple) else [(got_state, want[1])]
    for g, w in pairs:
        np.testing.assert_allclose(g.asnumpy(), w, rtol=tol, atol=tol)


@pytest.mark.parametrize("cls,mode,kw", CASES, ids=IDS)
@pytest.mark.parametrize("with_hx", [False, True], ids=["zero-state", "hx"])
def test_against_numpy(cls, mode, kw, with_hx, mode_fixture):
    net = make(cls, mode, **kw)
    x, hx = _inputs(net, mode, with_hx=with_hx)
    hx_t = tuple(ms.Tensor(h) for h in hx) if mode == "LSTM" else ms.Tensor(hx)
    got = net(ms.Tensor(x), hx_t if with_hx else None)
    hx64 = [h.astype(np.float64) for h in hx] if mode == "LSTM" else hx.astype(np.float64)
    _compare(got, np_rnn(net, mode, x.astype(np.float64), hx64, None), 2e-5)


@pytest.fixture(params=[pytest.param(ms.GRAPH_MODE, id="graph"),
                        pytest.param(ms.PYNATIVE_MODE, id="pynative")])
def mode_fixture(request):
    ms.set_context(mode=request.param)
    yield request.param
    ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("cls,mode,kw", [CASES[2], CASES[5]], ids=[IDS[2], IDS[5]])
def test_sequence_lengths(cls, mode, kw, mode_fixture):
    """A sequence stops at its length: its state is the one of its last step, its outputs
    after it are zeros, and the reverse direction starts at its last step."""
    net = make(cls, mode, **kw)
    x, hx = _inputs(net, mode, batch=4)
    lengths = np.array([6, 2, 4, 1], np.int32)
    got = net(ms.Tensor(x), None, ms.Tensor(lengths))
    hx64 = [h.astype(np.float64) for h in hx] if mode == "LSTM" else hx.astype(np.float64)
    want = np_rnn(net, mode, x.astype(np.float64), hx64, lengths)
    _compare(got, want, 2e-5)
    assert not got[0].asnumpy()[2:, 1].any()


@pytest.mark.parametrize("cls,mode", [(nn.GRU, "GRU"), (nn.LSTM, "LSTM")])
def test_gradients_against_central_differences(cls, mode, mode_fixture):
    ms.set_seed(2)
    net = cls(3, 4, num_layers=2, bidirectional=mode == "GRU", dtype=ms.float64)
    x = RNG.uniform(-1, 1, (5, 2, 3))
    weights = net.trainable_params()

    def loss(x):
        out, state = net(x)
        h = state[0] if mode == "LSTM" else state
        return (out * out).sum() + h.sum()
    gx, gw = ms.grad(loss, 0, weights)(ms.Tensor(x))

    def value():
        return float(loss(ms.Tensor(x)).asnumpy())
    eps = 1e-6
    for k in [(0, 0, 0), (4, 1, 2), (2, 0, 1)]:
        saved = x[k]
        x[k] = saved + eps
        hi = value()
        x[k] = saved - eps
        lo = value()
        x[k] = saved
        np.testing.assert_allclose(gx.asnumpy()[k], (hi - lo) / (2 * eps), rtol=1e-6, atol=1e-8)
    for w, g in list(zip(weights, gw))[::3]:
        data = w.asnumpy().copy()
        idx = tuple(RNG.integers(0, s) for s in data.shape)
        for sign, store in ((1, "hi"), (-1, "lo")):
            d = data.copy()
            d[idx] += sign * eps
            w.set_data(ms.Tensor(d))
            if store == "hi":
                hi = value()
            else:
                lo = value()
        w.set_data(ms.Tensor(data))
        np.testing.assert_allclose(g.asnumpy()[idx], (hi - lo) / (2 * eps), rtol=1e-6,
                                   atol=1e-8, err_msg=w.name)


def test_one_loop_per_layer_and_direction_whatever_the_length():
    net = nn.LSTM(4, 5, num_layers=2, bidirectional=True)
    texts = [ms.jit(lambda x: net(x)).lower(ms.Tensor(np.zeros((n, 2, 4), np.float32)))
             .as_text("ms") for n in (3, 50)]
    for text in texts:
        assert text.count("scf.for") == 4 and text.count('"ms.tanh"') == 8


def test_mistakes():
    with pytest.raises(ValueError, match=r"For 'nn.LSTM', x must have shape \(seq_len, batch, "
                                         r"4\)"):
        nn.LSTM(4, 5)(ms.Tensor(np.zeros((3, 2, 6), np.float32)))
    with pytest.raises(ValueError, match=r"For 'nn.RNN', nonlinearity must be 'tanh' or "
                                         r"'relu', got 'gelu'"):
        nn.RNN(4, 5, nonlinearity="gelu")
    with pytest.raises(ValueError, match=r"hx must have shape \(1, 2, 5\), got \(1, 3, 5\)"):
        nn.GRU(4, 5)(ms.Tensor(np.zeros((3, 2, 4), np.float32)),
                     ms.Tensor(np.zeros((1, 3, 5), np.float32)))
    with pytest.raises(TypeError, match=r"For LSTM, hx must be a tuple \(h_0, c_0\)"):
        nn.LSTM(4, 5)(ms.Tensor(np.zeros((3, 2, 4), np.float32)),
                      ms.Tensor(np.zeros((1, 2, 5), np.float32)))


def test_parameter_names_and_shapes():
    net = nn.GRU(4, 5, num_layers=2, bidirectional=True)
    shapes = {p.name: p.shape for p in net.trainable_params()}
    assert shapes["weight_ih_l0"] == (15, 4) and shapes["weight_ih_l1_reverse"] == (15, 10)
    assert shapes["weight_hh_l1"] == (15, 5) and shapes["bias_hh_l0_reverse"] == (15,)
    assert len(shapes) == 16
    bound = 1 / np.sqrt(5)
    assert all(np.abs(p.asnumpy()).max() <= bound for p in net.trainable_params())


def test_example_train_sequence_both_modes():
    """examples/train_sequence.py: the LSTM classifier learns the digits read row by row, and
    both modes train the same network (the same losses, up to rounding)."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    import train_sequence
    graph_acc, graph_losses, _ = train_sequence.train("graph", epochs=8, verbose=False)
    eager_acc, eager_losses, _ = train_sequence.train("pynative", epochs=8, verbose=False)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    assert graph_acc >= 0.9 and eager_acc >= 0.9, (graph_acc, eager_acc)
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-4)
