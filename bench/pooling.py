"""Pooling layers, mscc against torch eager, in one run:

    python bench/pooling.py [--repeat N] [--rounds R] [--json PATH]

nn.MaxPool2d(3, 2, pad 1) (a ResNet stem's), nn.MaxPool2d(2, 2) and nn.AvgPool2d(3, 2, pad 1)
on 32x64x56x56 and on LeNet's 32x6x28x28 float32 inputs, each as a forward call and as a
training-style step, the gradient of sum(pool(x) * w) (mscc:
`ms.jit(ms.grad(lambda x: ops.reduce_sum(pool(x) * w)))`; torch: the forward and
`torch.autograd.grad`). mscc runs in graph mode.

Each framework runs in its own worker process (mscc's and torch's OpenMP threads do not
compete) with an empty MSCC_CACHE_DIR; the workers alternate for --rounds rounds, and a
figure is the best over the rounds of the best of --repeat calls after two warm-up calls.
The ratio is torch time / mscc time: > 1 means mscc is faster. The two frameworks pool the
same inputs, and the table says whether their results agree. Nothing is asserted: on a
shared 2-core machine the figures are noisy (the load average is printed with them).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import harness  # noqa: E402

SHAPES = ((32, 64, 56, 56), (32, 6, 28, 28))
# (name, layer, kernel, stride, padding)
POOLS = (("MaxPool2d(3, 2, pad 1)", "max", 3, 2, 1), ("MaxPool2d(2, 2)", "max", 2, 2, 0),
         ("AvgPool2d(3, 2, pad 1)", "avg", 3, 2, 1))
KINDS = ("forward", "forward+backward")


def cases():
    """(key, title, shape, pool) of every measurement, in table order."""
    out = []
    for shape in SHAPES:
        for pool in POOLS:
            for kind in KINDS:
                key = f"{pool[1]}{pool[2]}s{pool[3]}p{pool[4]}_{'x'.join(map(str, shape))}_{kind}"
                out.append((key, f"{pool[0]} {'x'.join(map(str, shape))} {kind}", shape, pool,
                            kind))
    return out


def inputs(shape, pool):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    k, s, p = pool[2:]
    out = [(n + 2 * p - k) // s + 1 for n in shape[2:]]
    w = rng.standard_normal(tuple(shape[:2]) + tuple(out)).astype(np.float32)
    return x, w


# ------------------------------------------------------------------ workers

def mscc_call(shape, pool, kind):
    import mscc as ms
    from mscc import nn, ops
    _, layer, k, s, p = pool
    if layer == "max":
        net = nn.MaxPool2d(k, s, pad_mode="pad", padding=p) if p else nn.MaxPool2d(k, s)
    else:
        net = nn.AvgPool2d(k, s, pad_mode="pad", padding=p) if p else nn.AvgPool2d(k, s)
    x, w = inputs(shape, pool)
    tx, tw = ms.Tensor(x), ms.Tensor(w)
    if kind == "forward":
        fn = ms.jit(lambda t: net(t))
    else:
        fn = ms.jit(ms.grad(lambda t: ops.reduce_sum(net(t) * tw)))
    return lambda: fn(tx), lambda out: out.asnumpy()


def torch_call(shape, pool, kind):
    import torch
    _, layer, k, s, p = pool
    net = torch.nn.MaxPool2d(k, s, p) if layer == "max" else torch.nn.AvgPool2d(k, s, p)
    x, w = (torch.from_numpy(a) for a in inputs(shape, pool))
    if kind == "forward":
        def forward():
            with torch.inference_mode():
                return net(x)
        return forward, lambda out: out.numpy()

    def step():
        leaf = x.detach().requires_grad_(True)
        return torch.autograd.grad((net(leaf) * w).sum(), leaf)[0]
    return step, lambda out: out.numpy()


def best_of(call, repeat):
    """(first call's seconds, best of `repeat` calls after a second warm-up call, result)."""
    t0 = time.perf_counter()
    result = call()
    first = time.perf_counter() - t0
    call()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return first, min(times), result


def worker(impl, repeat, out_dir):
    if impl == "mscc":
        import mscc as ms
        from mscc.passes import exe_cache
        ms.set_context(mode=ms.GRAPH_MODE)
    else:
        import torch
    rows = {}
    for key, _, shape, pool, kind in cases():
        make = mscc_call if impl == "mscc" else torch_call
        try:
            call, read = make(shape, pool, kind)
            first, best, result = best_of(call, repeat)
        except Exception as e:  # noqa: BLE001 (a failing case loses its row only)
            rows[key] = {"error": f"{type(e).__name__}: {e}"}
            continue
        row = {"best_s": best, "first_s": first}
        if impl == "mscc":
            exe_cache.wait()  # (the cache entry is linked in the background)
            row["compile_s"] = first - best
        np.save(os.path.join(out_dir, f"{key}.{impl}.npy"), read(result))
        rows[key] = row
    info = {"threads": torch.get_num_threads()} if impl == "torch" else {}
    print(json.dumps({"impl": impl, "rows": rows, **info}))


# ------------------------------------------------------------------ driver

def agreement(key, out_dir):
    try:
        got, want = (np.load(os.path.join(out_dir, f"{key}.{i}.npy")) for i in ("mscc", "torch"))
    except OSError:
        return ""
    if got.shape != want.shape:
        return f"DIFFER (shapes {got.shape} and {want.shape})"
    err = float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))
    return f"{'agree' if err < 1e-5 else 'DIFFER'} (max err {err:.1e} of max)"


def load_average():
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


def _best_rows(impls, out_dir, args):
    """Each implementation's workers, args.rounds times; the best row per case, and the
    thread count torch reported."""
    best = {impl: {} for impl in impls}
    threads = None
    for _ in range(args.rounds):
        for impl in impls:
            result, _ = harness.run_worker(__file__, [impl, out_dir, "--repeat",
                                                      str(args.repeat)], args.timeout)
            if "error" in result:
                print(f"{impl} worker failed: {result['error']}", flush=True)
                continue
            threads = result.get("threads", threads)
            for key, row in result["rows"].items():
                old = best[impl].get(key)
                if old is None or "error" in old or ("best_s" in row
                                                     and row["best_s"] < old["best_s"]):
                    best[impl][key] = row
    return best, threads


def _cell(r):
    return "error" if "error" in r else f"{r['best_s'] * 1e3:.2f}"


def _rows(best, impls, out_dir):
    """The markdown rows and the JSON records, one per case."""
    table, record = [], []
    for key, title, *_ in cases():
        ms_r, torch_r = best["mscc"].get(key, {"error": "no result"}), best.get("torch", {})
        torch_r = torch_r.get(key, {"error": "no result"}) if "torch" in impls else None
        ratio = ""
        if torch_r and "best_s" in torch_r and "best_s" in ms_r:
            ratio = f"{torch_r['best_s'] / ms_r['best_s']:.1f}x"
        check = agreement(key, out_dir) if torch_r is not None else ""
        table.append([title, _cell(ms_r), "not installed" if torch_r is None else _cell(torch_r),
                      ratio, f"{ms_r['compile_s']:.2f}" if "compile_s" in ms_r else "", check])
        record.append({"key": key, "title": title, "mscc": ms_r, "torch": torch_r,
                       "check": check})
    return table, record


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--json", metavar="PATH", help="save the figures there")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker[0], args.repeat, args.worker[1])
    import shutil
    import tempfile
    impls = ["mscc"] + (["torch"] if harness.installed("torch") else [])
    if "torch" not in impls:
        print("torch: not installed, mscc alone")
    out_dir = tempfile.mkdtemp(prefix="mscc-bench-pooling-")
    loads = [load_average()]
    best, threads = _best_rows(impls, out_dir, args)
    loads.append(load_average())
    table, record = _rows(best, impls, out_dir)
    shutil.rmtree(out_dir, ignore_errors=True)
    cpu = harness.cpu_description()
    torch_version = harness.peer_version("torch")
    print(f"\nCPU: {cpu}; torch {torch_version or 'not installed'} (eager"
          f"{f', {threads} threads' if threads else ''}); best of {args.repeat} calls over "
          f"{args.rounds} rounds; load average {loads[0]} before, {loads[1]} after. Shared "
          "machine: figures are noisy.\n")
    print(harness.markdown_table(["case", "mscc ms", "torch ms", "torch/mscc",
                                 "mscc compile s", "mscc vs torch"], table))
    errors = [f"- {r['title']} ({impl}): {r[impl]['error']}" for r in record
              for impl in ("mscc", "torch") if r.get(impl) and "error" in r[impl]]
    if errors:
        print("\nerrors:\n" + "\n".join(errors))
    if args.json:
        harness.save_json(args.json, {"cpu": cpu, "torch": torch_version,
                                     "repeat": args.repeat, "rounds": args.rounds,
                                     "load_average": loads, "rows": record})


if __name__ == "__main__":
    main()
