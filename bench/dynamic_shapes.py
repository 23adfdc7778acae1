"""Dynamic against static dimensions: the time of one executable serving every batch size
(`input_signature` with None) next to the executable compiled for the one size, in the same
process, and the compiles each needs over a sweep of sizes.

    python bench/dynamic_shapes.py [--seconds S] [--json PATH]

Rows: the MLP 784-512-10 forward and training step (forward, gradients, SGD) at batch 256,
softmax over 4096x1024 with a dynamic row count, and the digits example's training epoch
(batches of 64 and a partial last one) in GRAPH_MODE. Ratios are static time over dynamic
time (>= 0.9 is issue 16's goal); timings on a shared 2-core machine are noisy: compare rows
of one run.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

_BLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if any(v in os.environ for v in _BLAS_VARS):
    env = {k: v for k, v in os.environ.items() if k not in _BLAS_VARS}
    os.execve(sys.executable, [sys.executable] + sys.argv, env)

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import mscc as ms  # noqa: E402
from mscc import nn, ops  # noqa: E402
from harness import cpu_description  # noqa: E402


def per_call(fn, seconds):
    """Median seconds per call over batches of calls filling `seconds`, after as long a
    warm-up (the first hundred calls of an executable are slower: page faults, the OpenMP
    team starting)."""
    def batch(n):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) / n
    n = max(1, int(0.05 / max(batch(3), 1e-7)))  # calls per ~50 ms batch
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        batch(n)
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        times.append(batch(n))
    return statistics.median(times)


def alternating(first, second, seconds, rounds=4):
    """Median seconds per call of each of two functions over `rounds` rounds that time one
    and then the other: timed once each, one after the other, two jits of the same softmax
    read 0.93-0.99x of each other on the 2-core Intel Xeon (its speed drifts over seconds)."""
    times = [[], []]
    for _ in range(rounds):
        for fn, out in zip((first, second), times):
            out.append(per_call(fn, seconds / rounds))
    return statistics.median(times[0]), statistics.median(times[1])


def mlp():
    ms.set_seed(0)
    return nn.SequentialCell(nn.Dense(784, 512), nn.ReLU(), nn.Dense(512, 10))


def forward_programs():
    net = mlp()
    return (lambda x: net(x)), [(784,)]


def step_programs():
    net = mlp()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.SGD(net.trainable_params(), 0.01)
    grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, opt.parameters)

    def step(x, y):
        loss, grads = grad_fn(x, y)
        opt(grads)
        return loss
    return step, [(784,), ()]


def softmax_programs():
    return (lambda x: ops.softmax(x, axis=-1)), [(1024,)]


def inputs_for(rows, tails, rng):
    out = []
    for tail in tails:
        if tail == ():
            out.append(ms.Tensor(rng.integers(0, 10, rows).astype(np.int32)))
        else:
            out.append(ms.Tensor(rng.standard_normal((rows,) + tail).astype(np.float32)))
    return out


def compare(name, make, rows, seconds):
    """(static seconds, dynamic seconds, dynamic compiles over a sweep of sizes)."""
    rng = np.random.default_rng(0)
    fn, tails = make()
    args = inputs_for(rows, tails, rng)
    static = ms.jit(fn)
    dtypes = [a.dtype for a in args]
    signature = tuple(ms.Tensor(shape=(None,) + t, dtype=d) for t, d in zip(tails, dtypes))
    dynamic = ms.jit(fn, input_signature=signature)
    t_static, t_dynamic = alternating(lambda: static(*args), lambda: dynamic(*args), seconds)
    for n in (1, 7, 100, rows + 3):  # the same executable serves the other sizes
        dynamic(*inputs_for(n, tails, rng))
    return {"name": name, "static_ms": t_static * 1e3, "dynamic_ms": t_dynamic * 1e3,
            "ratio": t_static / t_dynamic, "dynamic_compiles": dynamic.cache_info()["compiles"]}


def digits_epoch(epochs=5):
    """The digits example in GRAPH_MODE (examples/train_digits.py: batches of 64 and the
    partial last one, jit(dynamic=1)): (median seconds per epoch after the first, compiles,
    test accuracy). Compiles are counted at the compiler's entry."""
    import train_digits
    from mscc.passes import compiler
    compiles = [0]
    original = compiler.compile_module

    def counting(*a, **k):
        compiles[0] += 1
        return original(*a, **k)
    compiler.compile_module = counting
    try:
        acc, _, times, _, _ = train_digits.train("graph", epochs=epochs, verbose=False)
    finally:
        compiler.compile_module = original
        ms.set_context(mode=ms.PYNATIVE_MODE)
    return statistics.median(times[1:]), compiles[0], acc


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=2.0,
                   help="measuring time per program and form (after as long a warm-up)")
    p.add_argument("--json", help="also write the figures here")
    args = p.parse_args()
    rows = [compare("MLP 784-512-10 forward, batch 256", forward_programs, 256, args.seconds),
            compare("MLP training step (SGD), batch 256", step_programs, 256, args.seconds),
            compare("softmax 4096x1024 (dynamic rows)", softmax_programs, 4096, args.seconds)]
    print(f"# dynamic vs static dimensions on {cpu_description()}\n")
    print("| program | static | dynamic | static/dynamic | compiles (5 sizes) |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['name']} | {r['static_ms']:.3f} ms | {r['dynamic_ms']:.3f} ms | "
              f"{r['ratio']:.2f}x | {r['dynamic_compiles']} |")
    epoch, compiles, acc = digits_epoch()
    print(f"\ndigits example, GRAPH_MODE (batches of 64 and a partial last one): "
          f"{epoch * 1e3:.1f} ms per epoch, {compiles} compiles in all, test accuracy "
          f"{acc:.3f}")
    digits = {"epoch_ms": epoch * 1e3, "compiles": compiles, "accuracy": acc}
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu_description(), "rows": rows, "digits": digits}, f,
                      indent=1)


if __name__ == "__main__":
    main()
