"""The last ops of MindSpore's top 150 (pyfront/ops_last.py, dialects/ops/debug.py): Print,
ctc_loss / CTCLoss, RandomChoiceWithMask, DynamicRNN, the NPU float-status Primitives."""
import numpy as np
import pytest

import mscc as ms
from mscc import nn, ops
from mscc.ops import operations as P
from mstest import finite_differences


class _Net(nn.Cell):
    """fn as a Cell: compiled in GRAPH_MODE, run op by op in PYNATIVE_MODE."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def construct(self, *args):
        return self.fn(*args)


# ------------------------------------------------------------------ Print

X = np.ones([2, 1], np.int32)
Y = np.ones([2, 2], np.int32)
WANT = ("Print Tensor x and Tensor y:\n"
        "Tensor(shape=[2, 1], dtype=Int32, value=\n[[1],\n [1]])\n"
        "Tensor(shape=[2, 2], dtype=Int32, value=\n[[1, 1],\n [1, 1]])\n")


def test_print_as_mindspores_docs(mode, capfd):
    def f(x, y):
        ops.Print()('Print Tensor x and Tensor y:', x, y)
        return x + 0
    _Net(f)(ms.Tensor(X), ms.Tensor(Y))
    assert capfd.readouterr().out == WANT
    ops.print_('Print Tensor x and Tensor y:', ms.Tensor(X), ms.Tensor(Y))
    assert capfd.readouterr().out == WANT


def test_print_in_jit_runs_each_call_in_order(capfd):
    @ms.jit
    def f(a):
        ops.print_("first", a)
        b = a * 2.0
        ops.print_("second", b, "done")
        return b + 1
    capfd.readouterr()
    for k in range(3):
        out = f(ms.Tensor(np.array([k], np.float32)))
        np.testing.assert_array_equal(out.asnumpy(), [2 * k + 1])
        assert capfd.readouterr().out == (
            f"first\nTensor(shape=[1], dtype=Float32, value=\n[{k}.])\n"
            f"second\nTensor(shape=[1], dtype=Float32, value=\n[{2 * k}.])\ndone\n")
    text = f.lower(ms.Tensor(np.zeros(1, np.float32))).as_text("ms-opt")
    assert text.count('"ms.print"') == 3  # not erased, though their results are unused


PRINTING_PROGRAM = r"""
import numpy as np, mscc as ms
from mscc import ops
@ms.jit
def f(a):
    ops.print_("value", a)
    return a * 2.0 + 1
for k in range(2):
    print("result", f(ms.Tensor(np.array([k], np.float32))).asnumpy(), flush=True)
"""


@pytest.mark.parametrize("how", ["threads", "tiered", "disk-cache"])
def test_print_in_a_library(how, tmp_path):
    """Code compiled into a shared library prints as the ExecutionEngine's does: by threads
    (a module split in parts), tiered (-O0, then -O3) and loaded from the disk cache by a
    second process. (The library exported only its entry: the hook Print calls through was
    never set, and these printed nothing.)"""
    import os
    import subprocess
    import sys
    env = dict(os.environ, MSCC_CACHE_DIR="", MSCC_TIERED="0")
    program = PRINTING_PROGRAM
    if how == "threads":
        program = ("from mscc.passes import cpu_codegen\n"
                   "cpu_codegen.MIN_PART_COST, cpu_codegen._cores = 100, lambda: 2\n" + program)
    elif how == "tiered":
        env["MSCC_TIERED"] = "all"
    else:
        env["MSCC_CACHE_DIR"] = str(tmp_path)

    def run():
        out = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                             text=True, check=True)
        assert "no printer" not in out.stderr
        return out.stdout
    if how == "disk-cache":
        run()
        assert list(tmp_path.glob("*.msx"))
    assert run() == "".join(
        f"value\nTensor(shape=[1], dtype=Float32, value=\n[{k}.])\nresult [{2 * k + 1}.]\n"
        for k in range(2))


def test_print_scalars_texts_and_dtypes(capfd):
    @ms.jit
    def f(a, m):
        ops.print_("n =", 3, 2.5, True, (1, "x"))
        ops.print_(m)
        return a
    f(ms.Tensor(np.zeros((), np.float64)), ms.Tensor(np.array([True, False])))
    assert capfd.readouterr().out == ("n =\n3\n2.5\nTrue\n(1, x)\n"
                                      "Tensor(shape=[2], dtype=Bool, value=\n[ True, False])\n")


def test_print_inside_a_differentiated_function(capfd):
    def f(x):
        ops.print_("x", x)
        return (x * x).sum()
    g = ms.jit(ms.grad(f))
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(g(ms.Tensor(x)).asnumpy(), 2 * x)
    assert "x\nTensor(shape=[2], dtype=Float64" in capfd.readouterr().out


def test_print_errors_and_cuda_refusal():
    with pytest.raises(ValueError, match="at least one input"):
        ops.print_()
    with pytest.raises(TypeError, match="Tensors, bools"):
        ops.print_(object())
    f = ms.jit(lambda x: (ops.print_("x", x), x + 1)[1], target="cuda")
    with pytest.raises(Exception, match=r"'ms.print' \(Print\).*CUDA target") as e:
        f.lower(ms.Tensor(np.ones(3, np.float32))).as_text("ptx")
    assert "test_ops_last.py" in str(e.value)


# ------------------------------------------------------------------ ctc_loss

def _ctc_ref(lp, targets, in_len, tg_len, blank=0):
    """-log p(target | lp) by the textbook recursion in float64 (numpy)."""
    out = []
    for n in range(lp.shape[1]):
        ext = [blank]
        for c in targets[n, :tg_len[n]]:
            ext += [int(c), blank]
        alpha = np.full(len(ext), -np.inf)
        alpha[0] = lp[0, n, blank]
        if len(ext) > 1:
            alpha[1] = lp[0, n, ext[1]]
        for t in range(1, in_len[n]):
            new = np.full_like(alpha, -np.inf)
            for s in range(len(ext)):
                terms = [alpha[s]] + ([alpha[s - 1]] if s else [])
                if s > 1 and ext[s] != blank and ext[s] != ext[s - 2]:
                    terms.append(alpha[s - 2])
                new[s] = np.logaddexp.reduce(terms) + lp[t, n, ext[s]]
            alpha = new
        out.append(-np.logaddexp.reduce(alpha[-2:]) if len(ext) > 1 else -alpha[-1])
    return np.array(out)


RNG = np.random.default_rng(3)
T, N, C, S = 6, 3, 5, 3
LOGITS = RNG.standard_normal((T, N, C))
LP = LOGITS - np.log(np.exp(LOGITS).sum(2, keepdims=True))
TG = np.array([[1, 2, 2], [3, 1, 4], [2, 0, 0]], np.int64)
IL, TL = np.array([6, 5, 4], np.int64), np.array([3, 2, 1], np.int64)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_ctc_loss_values(mode, reduction):
    ref = _ctc_ref(LP, TG, IL, TL)
    want = {"none": ref, "sum": ref.sum(), "mean": (ref / TL).mean()}[reduction]
    net = _Net(lambda *a: ops.ctc_loss(*a, reduction=reduction))
    loss, log_alpha = net(*(ms.Tensor(v) for v in (LP, TG, IL, TL)))
    np.testing.assert_allclose(loss.asnumpy(), want, rtol=1e-10)
    assert log_alpha.shape == (N, T, 2 * S + 1) and loss.dtype == ms.float64
    torch = pytest.importorskip("torch")
    got = torch.nn.functional.ctc_loss(torch.tensor(LP), torch.tensor(TG), torch.tensor(IL),
                                       torch.tensor(TL), reduction=reduction)
    np.testing.assert_allclose(loss.asnumpy(), got.numpy(), rtol=1e-10)


def test_ctc_loss_gradient_and_nn_layer(mode):
    loss_fn = nn.CTCLoss(blank=0, reduction="sum")
    args = [ms.Tensor(v) for v in (TG, IL, TL)]
    g = ms.grad(lambda lp: loss_fn(lp, *args))(ms.Tensor(LP)).asnumpy()
    fd = finite_differences(lambda lp: _ctc_ref(lp, TG, IL, TL).sum(), LP.copy())
    np.testing.assert_allclose(g, fd, atol=1e-6)


def test_ctc_loss_impossible_and_errors():
    lp = ms.Tensor(LP[:2])  # 2 steps cannot emit 3 labels
    tg = ms.Tensor(TG[:1].repeat(3, 0))
    il, tl = ms.Tensor(np.array([2, 2, 2])), ms.Tensor(np.array([3, 3, 3]))
    assert np.isinf(ops.ctc_loss(lp, tg, il, tl, reduction="none")[0].asnumpy()).all()
    assert (ops.ctc_loss(lp, tg, il, tl, reduction="none", zero_infinity=True)[0]
            .asnumpy() == 0).all()
    with pytest.raises(ValueError, match="reduction"):
        ops.ctc_loss(lp, tg, il, tl, reduction="avg")


def test_ctc_loss_primitive_sparse_labels_and_gradient(mode):
    # TensorFlow's convention: blank = num_classes - 1, labels as [b, t] -> value
    tg = np.array([[0, 1, 1], [2, 0, 3], [1, 3, 3]])
    tl = np.array([3, 2, 1])
    idx = np.array([[b, t] for b in range(N) for t in range(tl[b])], np.int64)
    vals = np.array([tg[b, t] for b in range(N) for t in range(tl[b])], np.int32)
    seq = IL.astype(np.int32)
    prim = P.CTCLoss()
    loss, grad = _Net(prim)(ms.Tensor(LOGITS), ms.Tensor(idx), ms.Tensor(vals), ms.Tensor(seq))
    ref = _ctc_ref(LP, tg, IL, tl, blank=C - 1)
    np.testing.assert_allclose(loss.asnumpy(), ref, rtol=1e-10)

    def f(z):
        zz = z - np.log(np.exp(z).sum(2, keepdims=True))
        return _ctc_ref(zz, tg, IL, tl, blank=C - 1).sum()
    np.testing.assert_allclose(grad.asnumpy(), finite_differences(f, LOGITS.copy()), atol=1e-6)
    collapsed = P.CTCLoss(preprocess_collapse_repeated=True)(
        ms.Tensor(LOGITS), ms.Tensor(idx), ms.Tensor(vals), ms.Tensor(seq))[0]
    ref = _ctc_ref(LP, np.array([[0, 1, 0], [2, 0, 0], [1, 0, 0]]), IL, np.array([2, 2, 1]),
                   blank=C - 1)
    np.testing.assert_allclose(collapsed.asnumpy(), ref, rtol=1e-10)


# ------------------------------------------------------------------ RandomChoiceWithMask

@pytest.mark.parametrize("count", [4, 20])
def test_random_choice_with_mask(mode, count):
    m = np.random.default_rng(1).random((6, 2)) < 0.5
    idx, mask = _Net(P.RandomChoiceWithMask(count=count, seed=1))(ms.Tensor(m))
    idx, mask = idx.asnumpy(), mask.asnumpy()
    assert idx.shape == (count, 2) and idx.dtype == np.int32 and mask.dtype == np.bool_
    k = min(count, m.sum())
    assert mask.sum() == k and mask[:k].all()
    chosen = {tuple(r) for r in idx[:k]}
    assert len(chosen) == k and all(m[r] for r in chosen)
    assert (idx[k:] == 0).all()


def test_choice_with_mask_is_random_and_checked():
    m = ms.Tensor(np.ones(1000, bool))
    a, _ = ops.choice_with_mask(m, 10, seed=1)
    b, _ = ops.choice_with_mask(m, 10, seed=2)
    assert set(a.asnumpy().ravel()) != set(b.asnumpy().ravel())
    idx, mask = P.RandomChoiceWithMask()(ms.Tensor(np.ones((240, 4), bool)))
    assert idx.shape == (256, 2) and mask.shape == (256,)  # MindSpore's example's shapes
    with pytest.raises(TypeError, match="bool"):
        ops.choice_with_mask(ms.Tensor(np.ones(3, np.float32)))
    with pytest.raises(ValueError, match="count"):
        ops.choice_with_mask(m, 0)


# ------------------------------------------------------------------ DynamicRNN

def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _lstm_ref(x, w, b, h, c, forget_bias):
    outs = []
    for xt in x:
        g = np.concatenate([xt, h], 1) @ w + b
        i, j, f, o = np.split(g, 4, 1)
        i, j, f, o = _sigmoid(i), np.tanh(j), _sigmoid(f + forget_bias), _sigmoid(o)
        c = f * c + i * j
        h = o * np.tanh(c)
        outs.append((h, h, c, i, j, f, o, np.tanh(c)))
    return [np.stack(v) for v in zip(*outs)]


def test_dynamic_rnn_outputs(mode):
    rng = np.random.default_rng(5)
    steps, batch, size, hidden = 4, 2, 3, 5
    x = rng.standard_normal((steps, batch, size))
    w = rng.standard_normal((size + hidden, 4 * hidden)) * 0.5
    b = rng.standard_normal(4 * hidden) * 0.5
    h0, c0 = rng.standard_normal((2, 1, batch, hidden))
    rnn = P.DynamicRNN(forget_bias=0.5)
    got = _Net(lambda *a: rnn(a[0], a[1], a[2], None, a[3], a[4]))(
        *(ms.Tensor(v) for v in (x, w, b, h0, c0)))
    want = _lstm_ref(x, w, b, h0[0], c0[0], 0.5)
    assert len(got) == 8
    for g, r in zip(got, want):
        np.testing.assert_allclose(g.asnumpy(), r, rtol=1e-10)


def test_dynamic_rnn_gradient_and_errors():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 2, 2))
    w = rng.standard_normal((5, 12)) * 0.5
    b, h0 = np.zeros(12), np.zeros((1, 2, 3))
    rnn = P.DynamicRNN()

    def f(w_):
        return rnn(ms.Tensor(x), w_, ms.Tensor(b), None, ms.Tensor(h0), ms.Tensor(h0))[0].sum()
    g = ms.grad(f)(ms.Tensor(w)).asnumpy()
    fd = finite_differences(lambda w_: _lstm_ref(x, w_, b, h0[0], h0[0], 0.0)[0].sum(), w)
    np.testing.assert_allclose(g, fd, atol=1e-7)
    with pytest.raises(ValueError, match="cell_type"):
        P.DynamicRNN(cell_type="GRU")(ms.Tensor(x), ms.Tensor(w), ms.Tensor(b), None,
                                       ms.Tensor(h0), ms.Tensor(h0))
    with pytest.raises(ValueError, match="w must be"):
        rnn(ms.Tensor(x), ms.Tensor(w[:4]), ms.Tensor(b), None, ms.Tensor(h0), ms.Tensor(h0))


# ------------------------------------------------------------------ float status

def test_npu_float_status_as_loss_scaling_uses_it(mode):
    alloc, clear, get = P.NPUAllocFloatStatus(), P.NPUClearFloatStatus(), P.NPUGetFloatStatus()

    def step(x):
        init = alloc()
        init = ops.depend(init, x)
        clear(init)
        grads = (x * 2.0, x * x)
        init = ops.depend(init, grads)
        get(init)
        return init.sum()
    big = np.array([1.0, 60000.0], np.float16)
    assert _Net(step)(ms.Tensor(big)).asnumpy() == 8.0  # x * x overflows float16
    assert _Net(step)(ms.Tensor(np.array([1.0, 2.0], np.float16))).asnumpy() == 0.0
    status = alloc()
    assert status.shape == (8,) and status.dtype == ms.float32
    with pytest.raises(TypeError, match="shape \\(8,\\)"):
        get(ms.Tensor(np.zeros(3, np.float32)))
