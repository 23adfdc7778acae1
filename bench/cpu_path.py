"""The CPU path against numpy, in one process: the elementwise chain
tanh(x*a+b)*sigmoid(x)+0.5*x on 4M float32, a 1024x1024 float32 matmul, and the jit
cache-hit overhead of a 4-element add.

    python bench/cpu_path.py [--repeat N]

numpy runs with OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset (the script re-executes itself
without them) so OpenBLAS uses its fastest kernel and both cores. Reports medians and the
ratio numpy_time / mscc_time (> 1: mscc is faster).
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

import numpy as np  # noqa: E402  (after the re-exec)

import mscc as ms  # noqa: E402
from mscc import ops  # noqa: E402


def median_time(fn, repeat, inner=1):
    fn()  # warm up (and compile)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t0) / inner)
    return statistics.median(times)


def report(name, t_mscc, t_numpy, unit):
    print(f"{name:34s} mscc {unit(t_mscc):>12s}   numpy {unit(t_numpy):>12s}   "
          f"ratio {t_numpy / t_mscc:6.2f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    rng = np.random.default_rng(0)

    n = 4 * 1024 * 1024
    x, a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    chain = ms.jit(lambda x, a, b: ops.tanh(x * a + b) * ops.sigmoid(x) + 0.5 * x)
    tx, ta, tb = ms.Tensor(x), ms.Tensor(a), ms.Tensor(b)
    got = chain(tx, ta, tb).asnumpy()
    want = np.tanh(x * a + b) / (1 + np.exp(-x)) + 0.5 * x
    assert np.allclose(got, want, rtol=1e-4, atol=1e-5)
    t_ms = median_time(lambda: chain(tx, ta, tb), args.repeat)
    t_np = median_time(lambda: np.tanh(x * a + b) * (1 / (1 + np.exp(-x))) + 0.5 * x, args.repeat)
    gbs = lambda t: f"{4 * 4 * n / t / 1e9:.1f} GB/s"  # noqa: E731  (3 reads + 1 write)
    report("elementwise chain 4M f32", t_ms, t_np, gbs)

    m = 1024
    A, B = (rng.standard_normal((m, m)).astype(np.float32) for _ in range(2))
    mm = ms.jit(lambda p, q: p @ q)
    tA, tB = ms.Tensor(A), ms.Tensor(B)
    # mscc first: OpenBLAS's threads keep spinning for a while after numpy's matmul, and would
    # take the cores from mscc's OpenMP threads in this one process.
    t_ms = median_time(lambda: mm(tA, tB), args.repeat)
    t_np = median_time(lambda: A @ B, args.repeat)
    assert np.allclose(mm(tA, tB).asnumpy(), A @ B, rtol=1e-3, atol=1e-2)
    gflops = lambda t: f"{2 * m ** 3 / t / 1e9:.0f} GFLOP/s"  # noqa: E731
    report("matmul 1024 f32", t_ms, t_np, gflops)

    add = ms.jit(lambda p, q: p + q)
    s1, s2 = ms.Tensor(np.ones(4, np.float32)), ms.Tensor(np.ones(4, np.float32))
    n1, n2 = np.ones(4, np.float32), np.ones(4, np.float32)
    t_ms = median_time(lambda: add(s1, s2), args.repeat, inner=20000)
    t_np = median_time(lambda: np.add(n1, n2), args.repeat, inner=20000)
    report("jit cache-hit call, add of 4 f32", t_ms, t_np, lambda t: f"{t * 1e6:.2f} us")


if __name__ == "__main__":
    main()
