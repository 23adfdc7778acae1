"""An LSTM training step, mscc against torch eager and numpy, and loop compile times (issue 14):

    python bench/lstm.py [--repeat N] [--json PATH]     # the training step
    python bench/lstm.py --compile [--json PATH]        # compile time against the trip count
    python bench/lstm.py --all                          # both

The step: an LSTM (sequence 32, batch 64, input 32, hidden 128, one layer, with biases), a
Dense head (128 -> 10) on the last hidden state, softmax cross-entropy against int labels,
the gradients and the Momentum update (lr 0.01, momentum 0.9). mscc's is nn.LSTM,
ms.value_and_grad, nn.Momentum under ms.jit (the LSTM is one ops.Scan loop, differentiated
by ms-autodiff's loop rule); torch's is eager torch.nn.LSTM (its fused CPU kernel) with
autograd and torch.optim.SGD(momentum=0.9) (the same update); numpy's is the same step by
hand, float32: the forward stores the gates per step, the backward runs through time in
reverse.

All three start from one set of weights. MindSpore's nn.LSTM and torch's nn.LSTM have the
same parameters (weight_ih_l0 (4H, I), weight_hh_l0 (4H, H), bias_ih_l0, bias_hh_l0 (4H,)) and
the same gate order along the 4H axis: input, forget, cell (g), output (MindSpore's CPU/GPU
LSTM and its rnn_cells' `i, f, g, o = gates.chunk(4)`, torch's `W_ii|W_if|W_ig|W_io`; only
MindSpore's Ascend DynamicRNN kernel packs i, j, f, o internally). So the arrays are copied
as they are, no reordering. The table says whether the first two losses agree and whether
the weights after all the timed steps do (mscc's total update against the peer's: this
checks the gradients of every weight).

`--compile` measures mscc's compile time (first call minus the steady state, in a fresh
process with an empty MSCC_CACHE_DIR) of that training step for sequences of 8, 32, 128 and
512 steps, and of a forward ops.ForiLoop(unroll=False) of 10 and 10,000 iterations: the body
is traced once into one loop, so the compile time should stay about flat (reported, not
asserted).

Each measurement runs in its own worker process (bench/harness.py). Times are the best of
--repeat calls after two warm-up calls. Ratios are peer time / mscc time: > 1 means mscc is
faster. Nothing is asserted: on a shared 2-core machine the figures are noisy.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import harness  # noqa: E402

SEQ, BATCH, INPUT, HIDDEN, CLASSES = 32, 64, 32, 128, 10
LR, MOMENTUM = 0.01, 0.9
COMPILE_SEQS = (8, 32, 128, 512)
FORI_TRIPS = (10, 10_000)


def params(rng):
    """MindSpore's (and torch's) nn.LSTM layout, gates i, f, g, o; U(-1/sqrt(H), 1/sqrt(H))
    as both initialize; the head as nn.Dense: weight (out, in)."""
    k = 1.0 / np.sqrt(HIDDEN)
    u = lambda *shape: rng.uniform(-k, k, shape).astype(np.float32)  # noqa: E731
    return {"weight_ih_l0": u(4 * HIDDEN, INPUT), "weight_hh_l0": u(4 * HIDDEN, HIDDEN),
            "bias_ih_l0": u(4 * HIDDEN), "bias_hh_l0": u(4 * HIDDEN),
            "fc.weight": u(CLASSES, HIDDEN), "fc.bias": u(CLASSES)}


def data(seq=SEQ, seed=0):
    rng = np.random.default_rng(seed)
    p = params(rng)
    x = rng.standard_normal((seq, BATCH, INPUT)).astype(np.float32)  # (time, batch, input)
    y = rng.integers(0, CLASSES, BATCH).astype(np.int32)
    return p, x, y


# ------------------------------------------------------------------ the three steps

def mscc_step(p):
    import mscc as ms
    from mscc import nn

    class Classifier(nn.Cell):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(INPUT, HIDDEN)
            self.fc = nn.Dense(HIDDEN, CLASSES, weight_init=p["fc.weight"],
                               bias_init=p["fc.bias"])
            for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
                getattr(self.lstm, name).set_data(ms.Tensor(p[name]))

        def construct(self, x):
            _, (h, _) = self.lstm(x)
            return self.fc(h[0])

    net = Classifier()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=LR, momentum=MOMENTUM)
    grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, optimizer.parameters)

    def train_step(x, y):
        loss, grads = grad_fn(x, y)
        optimizer(grads)
        return loss

    net.set_train()
    step = ms.jit(train_step)

    def prepare(x, y):
        tx, ty = ms.Tensor(x), ms.Tensor(y)
        return lambda: step(tx, ty)

    def weights():
        named = {n: getattr(net.lstm, n) for n in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0",
                                                   "bias_hh_l0")}
        named.update({"fc.weight": net.fc.weight, "fc.bias": net.fc.bias})
        return {k: v.asnumpy() for k, v in named.items()}
    return prepare, lambda out: float(out.asnumpy()), weights


def torch_step(p):
    import torch

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(INPUT, HIDDEN)
            self.fc = torch.nn.Linear(HIDDEN, CLASSES)

        def forward(self, x):
            _, (h, _) = self.lstm(x)
            return self.fc(h[0])

    net = Classifier()
    with torch.no_grad():  # same layout and gate order: copied as they are
        for name, param in net.named_parameters():
            param.copy_(torch.from_numpy(p[name.replace("lstm.", "")]))
    optimizer = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
    net.train()

    def prepare(x, y):
        tx, ty = torch.from_numpy(x), torch.from_numpy(y).long()

        def step():
            optimizer.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(net(tx), ty)
            loss.backward()
            optimizer.step()
            return loss
        return step

    def weights():
        return {k.replace("lstm.", ""): v.detach().numpy().copy()
                for k, v in net.named_parameters()}
    return prepare, lambda out: float(out.detach()), weights


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _lstm_forward(w, x):
    """The LSTM over x (T, B, in), keeping what the backward needs: the gate activations
    (sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)), the states before each step and tanh(c)."""
    T, B, _ = x.shape
    H = HIDDEN
    gi = x.reshape(T * B, -1) @ w["weight_ih_l0"].T + (w["bias_ih_l0"] + w["bias_hh_l0"])
    gi = gi.reshape(T, B, 4 * H)
    acts = np.empty((T, B, 4 * H), np.float32)
    hs = np.zeros((T + 1, B, H), np.float32)    # hs[t] is the state before step t
    cs = np.zeros((T + 1, B, H), np.float32)
    tanh_c = np.empty((T, B, H), np.float32)
    for t in range(T):
        a = gi[t] + hs[t] @ w["weight_hh_l0"].T
        acts[t, :, :2 * H] = _sigmoid(a[:, :2 * H])
        acts[t, :, 2 * H:3 * H] = np.tanh(a[:, 2 * H:3 * H])
        acts[t, :, 3 * H:] = _sigmoid(a[:, 3 * H:])
        i, f, g, o = np.split(acts[t], 4, -1)
        cs[t + 1] = f * cs[t] + i * g
        tanh_c[t] = np.tanh(cs[t + 1])
        hs[t + 1] = o * tanh_c[t]
    return acts, hs, cs, tanh_c


def _lstm_backward(w, x, saved, dh):
    """Backward through time from dh, the gradient of the last state: the LSTM's weight and
    bias gradients."""
    acts, hs, cs, tanh_c = saved
    T, B, _ = x.shape
    H = HIDDEN
    dc = np.zeros((B, H), np.float32)
    dgates = np.empty((T, B, 4 * H), np.float32)
    dw_hh = np.zeros_like(w["weight_hh_l0"])
    for t in range(T - 1, -1, -1):
        i, f, g, o = np.split(acts[t], 4, -1)
        dc = dc + dh * o * (1.0 - tanh_c[t] * tanh_c[t])
        d = dgates[t]
        d[:, :H] = dc * g * i * (1.0 - i)
        d[:, H:2 * H] = dc * cs[t] * f * (1.0 - f)
        d[:, 2 * H:3 * H] = dc * i * (1.0 - g * g)
        d[:, 3 * H:] = dh * tanh_c[t] * o * (1.0 - o)
        dc = dc * f
        dw_hh += d.T @ hs[t]
        dh = d @ w["weight_hh_l0"]
    flat = dgates.reshape(T * B, 4 * H)
    bias = flat.sum(0)
    return {"weight_ih_l0": flat.T @ x.reshape(T * B, -1), "weight_hh_l0": dw_hh,
            "bias_ih_l0": bias, "bias_hh_l0": bias}


def _numpy_loss_and_grads(w, x, y):
    """Softmax cross-entropy of the Dense head on the last state, and every gradient."""
    saved = _lstm_forward(w, x)
    h = saved[1][-1]
    B = x.shape[1]
    logits = h @ w["fc.weight"].T + w["fc.bias"]
    shifted = logits - logits.max(1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    loss = -logp[np.arange(B), y].mean()
    dlogits = np.exp(logp)
    dlogits[np.arange(B), y] -= 1.0
    dlogits /= B
    grads = {"fc.weight": dlogits.T @ h, "fc.bias": dlogits.sum(0)}
    grads.update(_lstm_backward(w, x, saved, dlogits @ w["fc.weight"]))
    return np.float32(loss), grads


def numpy_step(p):
    """The same step by hand in float32: forward storing the gates, backward through time,
    the momentum update v = 0.9 v + g, w -= lr v (MindSpore's Momentum, torch's SGD)."""
    w = {k: v.copy() for k, v in p.items()}
    moments = {k: np.zeros_like(v) for k, v in w.items()}

    def prepare(x, y):
        def step():
            loss, grads = _numpy_loss_and_grads(w, x, y)
            for k, g in grads.items():
                moments[k] *= MOMENTUM
                moments[k] += g
                w[k] -= LR * moments[k]
            return loss
        return step
    return prepare, float, lambda: w


STEPS = {"mscc": mscc_step, "torch": torch_step, "numpy": numpy_step}


# ------------------------------------------------------------------ workers

def _mscc_context():
    import mscc as ms
    from mscc.passes import exe_cache
    ms.set_context(mode=ms.GRAPH_MODE)
    return exe_cache.wait  # the cache entry is linked in the background: not while timing


def step_worker(impl, seq, repeat):
    p, x, y = data(seq)
    after_first = _mscc_context() if impl == "mscc" else (lambda: None)
    prepare, read, weights = STEPS[impl](p)
    first, best, results = harness.timings(prepare(x, y), repeat, after_first)
    if os.environ.get("LSTM_BENCH_OUT"):  # the weights after all 2 + repeat steps, compared
        np.savez(os.path.join(os.environ["LSTM_BENCH_OUT"], f"{impl}.npz"), **weights())
    result = {"impl": impl, "seq": seq, "first_s": first, "best_s": best,
              "losses": [read(r) for r in results]}
    if impl == "mscc":
        result["compile_s"] = first - best
    if impl == "torch":
        import torch
        result["threads"] = torch.get_num_threads()
    return result


def fori_worker(trips, repeat):
    wait = _mscc_context()
    import mscc as ms
    from mscc import ops

    def body(i, v):
        return ops.tanh(v * 0.5 + 0.1) + ops.cast(i, v.dtype) * 1e-6

    run = ms.jit(lambda x: ops.ForiLoop()(0, trips, body, x, unroll=False))
    x = ms.Tensor(np.linspace(-1, 1, 256, dtype=np.float32))
    first, best, results = harness.timings(lambda: run(x), repeat, wait)
    want = x.asnumpy().astype(np.float64)
    for i in range(trips):
        want = np.tanh(want * 0.5 + 0.1) + i * 1e-6
    err = float(np.max(np.abs(results[0].asnumpy() - want)))
    return {"trips": trips, "first_s": first, "best_s": best, "compile_s": first - best,
            "max_err": err}


def worker(args):
    kind, arg, impl = args.worker
    result = (step_worker(impl, int(arg), args.repeat) if kind == "step"
              else fori_worker(int(arg), args.repeat))
    print(json.dumps(result))


# ------------------------------------------------------------------ driver

def run(kind, arg, impl, repeat, timeout, out_dir=None):
    row, _ = harness.run_worker(__file__, [kind, str(arg), impl, "--repeat", str(repeat)],
                                timeout, {"LSTM_BENCH_OUT": out_dir} if out_dir else None)
    if "error" in row:
        print(f"{kind} {arg} ({impl}) failed: {row['error']}", flush=True)
    return row


def agreement(ms_r, peer, impl, out_dir):
    """The first two losses, and the weights after the 2 + repeat steps: how far mscc's total
    update (final - initial weights) is from the peer's, relative to the peer's largest."""
    if "losses" not in ms_r or "losses" not in peer:
        return ""
    err = max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(ms_r["losses"], peer["losses"]))
    init = params(np.random.default_rng(0))
    got, want = (np.load(os.path.join(out_dir, f"{i}.npz")) for i in ("mscc", impl))
    werr = max(float(np.max(np.abs(got[k] - want[k])) / np.max(np.abs(want[k] - init[k])))
               for k in init)
    ok = err < 1e-3 and werr < 1e-2
    return f"{'agree' if ok else 'DIFFER'} (losses {err:.1e}, updates {werr:.1e})"


def ms_cell(r, key="best_s", scale=1e3, fmt="{:.2f}"):
    return "error" if key not in r else fmt.format(r[key] * scale)


def step_table(args):
    peers = ["numpy"] + (["torch"] if harness.installed("torch") else [])
    if "torch" not in peers:
        print("torch: not installed")
    import shutil
    import tempfile
    out_dir = tempfile.mkdtemp(prefix="mscc-bench-lstm-")
    rows = {impl: run("step", SEQ, impl, args.repeat, args.timeout, out_dir)
            for impl in ["mscc"] + peers}
    ms_r = rows["mscc"]
    table = []
    for impl in ["mscc"] + peers:
        r = rows[impl]
        ratio = (f"{r['best_s'] / ms_r['best_s']:.2f}x"
                 if impl != "mscc" and "best_s" in r and "best_s" in ms_r else "")
        loss = f"{r['losses'][0]:.5f}, {r['losses'][1]:.5f}" if "losses" in r else ""
        check = "" if impl == "mscc" else agreement(ms_r, r, impl, out_dir)
        r["check"] = check
        table.append([impl, ms_cell(r), ratio, loss, check])
    shutil.rmtree(out_dir, ignore_errors=True)
    print(f"\nLSTM training step: sequence {SEQ}, batch {BATCH}, input {INPUT}, hidden "
          f"{HIDDEN}, Dense {HIDDEN}->{CLASSES}, cross-entropy, Momentum; best of "
          f"{args.repeat} steps; mscc compile {ms_cell(ms_r, 'compile_s', 1, '{:.2f}')} s"
          f"{'; torch threads ' + str(rows['torch'].get('threads')) if 'torch' in rows else ''}\n")
    print(harness.markdown_table(["implementation", "ms / step", "peer / mscc",
                                  "first two losses", "vs mscc (max rel. diff)"], table))
    return {"step": rows}


def compile_table(args):
    table, record = [], {"compile_lstm": [], "compile_fori": []}
    for seq in COMPILE_SEQS:
        r = run("step", seq, "mscc", 3, args.timeout)
        record["compile_lstm"].append(r)
        table.append([f"LSTM training step, sequence {seq}", ms_cell(r, "compile_s", 1),
                      ms_cell(r, "first_s", 1), ms_cell(r)])
    for trips in FORI_TRIPS:
        r = run("fori", trips, "mscc", 3, args.timeout)
        record["compile_fori"].append(r)
        ok = "" if "max_err" not in r else f" (max err {r['max_err']:.0e})"
        table.append([f"ForiLoop(unroll=False), {trips:,} iterations{ok}",
                      ms_cell(r, "compile_s", 1), ms_cell(r, "first_s", 1), ms_cell(r)])
    print("\nmscc compile time (first call minus steady state; fresh process, empty cache)\n")
    print(harness.markdown_table(["program", "compile s", "first call s", "steady ms"], table))
    return record


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compile", action="store_true", help="compile time vs trip count only")
    ap.add_argument("--all", action="store_true", help="the step table and the compile table")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--json", metavar="PATH", help="save the figures there")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)
    cpu = harness.cpu_description()
    print(f"CPU: {cpu}; torch {harness.peer_version('torch') or 'not installed'} (eager); "
          f"numpy {np.__version__}; load average {os.getloadavg()[0]:.2f} "
          "(shared machine: figures are noisy)")
    record = {"cpu": cpu, "torch": harness.peer_version("torch"), "repeat": args.repeat,
              "load_before": os.getloadavg()}
    if not args.compile or args.all:
        record.update(step_table(args))
    if args.compile or args.all:
        record.update(compile_table(args))
    record["load_after"] = os.getloadavg()
    print(f"\nload average after: {record['load_after'][0]:.2f}")
    if args.json:
        harness.save_json(args.json, record)


if __name__ == "__main__":
    main()
