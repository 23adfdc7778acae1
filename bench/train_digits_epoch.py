"""Seconds per epoch of the digits MLP (64-128-10, Adam, batch 64): mscc graph mode, mscc
PyNative mode, a hand-written numpy implementation, and torch eager when it is installed.

    python bench/train_digits_epoch.py [--epochs N]

Medians over epochs after the first (the first one compiles). Each framework trains the same
network on the same batches; the final test accuracy is printed next to the time.
"""
import argparse
import os
import statistics
import sys
import time

_BLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if any(v in os.environ for v in _BLAS_VARS):
    env = {k: v for k, v in os.environ.items() if k not in _BLAS_VARS}
    os.execve(sys.executable, [sys.executable] + sys.argv, env)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import train_digits  # noqa: E402


def numpy_epochs(epochs, batch=64, lr=3e-3, seed=0):
    (x, y), (xt, yt) = train_digits.load_digits(seed)
    rng = np.random.default_rng(seed)
    w1 = rng.uniform(-1, 1, (128, 64)).astype(np.float32) / 8
    b1 = np.zeros(128, np.float32)
    w2 = rng.uniform(-1, 1, (10, 128)).astype(np.float32) / 11
    b2 = np.zeros(10, np.float32)
    params = [w1, b1, w2, b2]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    t, times = 0, []
    for _ in range(epochs):
        start = time.perf_counter()
        order = rng.permutation(len(x))
        for s in range(len(x) // batch):
            idx = order[s * batch:(s + 1) * batch]
            xb, yb = x[idx], y[idx]
            h = xb @ w1.T + b1
            a = np.maximum(h, 0)
            logits = a @ w2.T + b2
            z = logits - logits.max(1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(1, keepdims=True)
            d = p
            d[np.arange(len(yb)), yb] -= 1
            d /= len(yb)
            dh = (d @ w2) * (h > 0)
            grads = [dh.T @ xb, dh.sum(0), d.T @ a, d.sum(0)]
            t += 1
            step = lr * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
            for i, g in enumerate(grads):
                m[i] = 0.9 * m[i] + 0.1 * g
                v[i] = 0.999 * v[i] + 0.001 * g * g
                params[i] -= step * m[i] / (np.sqrt(v[i]) + 1e-8)
        times.append(time.perf_counter() - start)
    acc = float(((np.maximum(xt @ w1.T + b1, 0) @ w2.T + b2).argmax(1) == yt).mean())
    return acc, times


def torch_epochs(epochs, batch=64, seed=0):
    import torch
    torch.manual_seed(seed)
    (x, y), (xt, yt) = train_digits.load_digits(seed)
    net = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    rng = np.random.default_rng(seed)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))
    times = []
    for _ in range(epochs):
        start = time.perf_counter()
        order = rng.permutation(len(x))
        for s in range(len(x) // batch):
            idx = torch.from_numpy(order[s * batch:(s + 1) * batch])
            opt.zero_grad()
            loss = loss_fn(net(xs[idx]), ys[idx])
            loss.backward()
            opt.step()
        times.append(time.perf_counter() - start)
    with torch.no_grad():
        acc = float((net(torch.from_numpy(xt)).argmax(1).numpy() == yt).mean())
    return acc, times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=10)
    args = ap.parse_args()
    rows = []
    for mode in ("graph", "pynative"):
        acc, _, times, _, _ = train_digits.train(mode, "O0", args.epochs, verbose=False)
        rows.append((f"mscc {mode}", acc, times))
    rows.append(("numpy (hand-written)",) + numpy_epochs(args.epochs))
    try:
        rows.append(("torch eager",) + torch_epochs(args.epochs))
    except ImportError:
        print("torch is not installed: skipping torch eager")
    base = statistics.median(rows[2][2][1:])
    print(f"{'':24s} {'s/epoch':>9s} {'vs numpy':>9s} {'first epoch':>12s} {'test acc':>9s}")
    for name, acc, times in rows:
        med = statistics.median(times[1:])
        print(f"{name:24s} {med:9.4f} {base / med:8.2f}x {times[0]:12.3f} {acc:9.3f}")


if __name__ == "__main__":
    main()
