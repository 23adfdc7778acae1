"""Data parallel on MPI (issue 20): the time of one training step with 1 and 2 processes,
and what the collective costs.

    python bench/data_parallel.py [--steps N] [--json PATH]

Rows (each run as `mpiexec -n P python bench/data_parallel.py --worker ...`, the mpich
wheel's launcher; P=1 is one process under the launcher, so the same code runs):
- "digits": examples/train_digits.py's MLP (64-128-10, Adam), batch 64 per process;
- "mlp784": a 784-512-10 MLP (Adam), batch 64 per process.
Each step is one jit function: forward, loss, gradients, nn.DistributedGradReducer (one
all-reduce of every gradient, mean), Adam. Reported: the median step time over --steps
steps after warm-up (rank 0's clock; every rank waits in the all-reduce, so the ranks
agree), the bytes each process hands to the all-reduce per step (the gradients, plus its
32-byte agreement header; none with 1 process, where MPI copies locally), and, on 2
processes, the time of the all-reduce alone:
the compiled collective (ops.AllReduce in a jit function on a buffer of the gradients'
size) beside mpi4py's Comm.Allreduce of the same buffer, and the agreement header (an
all-reduce of 4 int64). Each process compiles for cores / processes threads
(MSCC_NUM_THREADS), so that 2 processes do not oversubscribe the 2 cores. With 2 processes
on this 2-core machine expect no speed-up: the figure is what the collective adds. Nothing
is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

MODELS = {"digits": (64, 128, 10), "mlp784": (784, 512, 10)}
BATCH = 64


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def _step(widths):
    """A jit training step of an MLP with `widths`, gradients all-reduced; (step, params)."""
    import mscc as ms
    from mscc import nn
    ms.set_seed(0)
    layers = [nn.Dense(a, b, activation="relu") for a, b in zip(widths[:-2], widths[1:-1])]
    net = nn.SequentialCell(layers + [nn.Dense(widths[-2], widths[-1])])
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Adam(net.trainable_params(), learning_rate=1e-3)
    reducer = nn.DistributedGradReducer(optimizer.parameters)
    grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, optimizer.parameters)

    @ms.jit
    def step(x, y):
        loss, grads = grad_fn(x, y)
        optimizer(reducer(grads))
        return loss
    return step, optimizer.parameters


def _timed(fn, steps, world):
    """Median seconds of fn() over `steps` calls, after 3 warm-up calls; the ranks start
    together."""
    for _ in range(3):
        fn()
    world.Barrier()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return _median(times)


def _collective_times(n_floats, steps, world):
    """(compiled all-reduce, mpi4py Allreduce, agreement-sized all-reduce) in seconds."""
    import numpy as np

    import mscc as ms
    from mscc import ops
    buf = np.ones(n_floats, np.float32)
    out = np.empty_like(buf)
    compiled = ms.jit(lambda t: ops.AllReduce()(t))
    x = ms.Tensor(buf)
    header = np.zeros(4, np.int64)
    header_out = np.empty_like(header)
    from mpi4py import MPI
    return (_timed(lambda: compiled(x), steps, world),
            _timed(lambda: world.Allreduce(buf, out), steps, world),
            _timed(lambda: world.Allreduce(header, header_out, op=MPI.MAX), steps, world))


def worker(model, steps):
    import numpy as np

    import mscc as ms
    from mscc.communication import get_group_size, get_rank, init
    init()
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL,
                                 gradients_mean=True)
    widths = MODELS[model]
    step, params = _step(widths)
    rng = np.random.default_rng(get_rank())
    x = ms.Tensor(rng.normal(size=(BATCH, widths[0])).astype(np.float32))
    y = ms.Tensor(rng.integers(0, widths[-1], BATCH).astype(np.int32))
    n_floats = sum(int(np.prod(p.shape)) for p in params)
    row = {"model": model, "processes": get_group_size(), "params": n_floats,
           "step_ms": _timed(lambda: step(x, y).asnumpy(), steps, world) * 1e3,
           "bytes_per_step": 4 * n_floats + 32 if get_group_size() > 1 else 0,
           "threads": int(os.environ.get("MSCC_NUM_THREADS", "0"))}
    if get_group_size() > 1:
        compiled, mpi4py, header = _collective_times(n_floats, steps, world)
        row.update(allreduce_ms=compiled * 1e3, mpi4py_ms=mpi4py * 1e3, header_us=header * 1e6)
    if get_rank() == 0:
        print(json.dumps(row))


def run_row(model, processes, steps):
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep
                           + os.environ.get("PATH", ""))
    if mpiexec is None:
        return {"model": model, "processes": processes,
                "error": "no mpiexec: pip install 'mscc[distributed]'"}
    cmd = [mpiexec, "-n", str(processes), sys.executable, os.path.abspath(__file__),
           "--worker", model, "--steps", str(steps)]
    cores = len(os.sched_getaffinity(0))
    threads = str(max(1, cores // processes))
    env = {**os.environ, "MSCC_CACHE_DIR": "", "MSCC_NUM_THREADS": threads}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines:
        return {"model": model, "processes": processes,
                "error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(lines[-1])


def table(rows):
    head = ("| model | params | processes | threads each | step (ms) | bytes sent per process "
            "per step | all-reduce compiled (ms) | mpi4py Allreduce (ms) | agreement header (µs) |")
    out = [head, "|" + "---|" * 9]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['model']} | | {r['processes']} | | {r['error']} | | | | |")
            continue
        extra = [f"{r[k]:.3f}" if k in r else "" for k in ("allreduce_ms", "mpi4py_ms")]
        extra.append(f"{r['header_us']:.1f}" if "header_us" in r else "")
        out.append(f"| {r['model']} | {r['params']} | {r['processes']} | {r['threads']} | "
                   f"{r['step_ms']:.3f} | "
                   f"{r['bytes_per_step']} | " + " | ".join(extra) + " |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", nargs=1)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.steps)
        return
    from harness import cpu_description
    rows = [run_row(m, p, args.steps) for m in MODELS for p in (1, 2)]
    print(f"Data parallel training step on {cpu_description()}, batch {BATCH} per process\n")
    print(table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
