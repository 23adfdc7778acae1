"""Benchmark harness: mscc against numpy (and torch when installed), one process per
benchmark and implementation, medians and ratios to numpy.

    python bench/run.py                       # everything available
    python bench/run.py softmax_4096x1024 --impl mscc,numpy --repeat 30
    python bench/run.py --list

numpy runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (this machine's environment sets
them, which keeps OpenBLAS off its fastest kernel); so does every other process, alike.
Results go to bench/results/<time>.json as well as to the terminal. Goals (issue 6) are
reported, never asserted: timings on a shared 2-core machine are noisy.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from programs import BENCHMARKS, BY_NAME  # noqa: E402

SCRUBBED_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
IMPLS = ("numpy", "mscc", "torch")


# ------------------------------------------------------------------ one measurement

def timed_calls(fn, repeat, min_seconds=0.3):
    """Per-call seconds after two warm-up calls: at least `repeat` calls and min_seconds."""
    fn()
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < repeat or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if len(times) >= 20 * repeat:
            break
    return times


def build_mscc(bench, inputs):
    """Compile the benchmark's ms IR; returns (executable, compile seconds)."""
    import numpy as np
    from mlir import ir

    from mscc.dialects import dtypes as dt
    from mscc.dialects.builders import build_function, build_op, constant, mlir_context
    from mscc.passes.compiler import compile_module

    def op(name, *operands, **attrs):
        return build_op(name, list(operands), attrs).result

    def scalar(v):  # a Python scalar, as the frontend emits it
        return constant(np.array(v, np.float64), scalar=True)

    specs = [dt.TensorSpec(a.shape, dt.from_numpy(a.dtype)) for a in inputs]
    t0 = time.perf_counter()
    with mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        build_function(module, "main", specs, lambda *args: bench.ms(op, scalar, *args))
        exe = compile_module(module, "main")
    return exe, time.perf_counter() - t0, exe.compile_times


def worker(name, impl, repeat):
    import numpy as np
    bench = BY_NAME[name]
    inputs = bench.inputs()
    result = {"name": name, "impl": impl}
    if impl == "numpy":
        fn = lambda: bench.numpy(*inputs)  # noqa: E731
    elif impl == "mscc" and bench.frontend is not None:
        import mscc as ms
        tensors = [ms.Tensor(a) for a in inputs]
        jitted = bench.frontend(*inputs)
        t0 = time.perf_counter()
        out = jitted(*tensors)  # traces and compiles
        result["compile_s"] = time.perf_counter() - t0
        got = [t.asnumpy() for t in (out if isinstance(out, tuple) else (out,))]
        want = bench.numpy(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in inputs])
        want = want if isinstance(want, tuple) else (want,)
        result["max_abs_err"] = max(float(np.max(np.abs(g - w))) for g, w in zip(got, want))
        result["correct"] = all(np.allclose(g, w, rtol=bench.rtol, atol=bench.atol)
                                for g, w in zip(got, want))
        fn = lambda: jitted(*tensors)  # noqa: E731
    elif impl == "mscc":
        exe, result["compile_s"], result["compile_stages"] = build_mscc(bench, inputs)
        got = exe(*inputs)[0]
        want = bench.numpy(*[a.astype(np.float64) for a in inputs])
        result["max_abs_err"] = float(np.max(np.abs(got - want)))
        result["correct"] = bool(np.allclose(got, want, rtol=bench.rtol, atol=bench.atol))
        fn = lambda: exe(*inputs)  # noqa: E731
    elif impl == "torch":
        import torch
        tensors = [torch.from_numpy(a) for a in inputs]
        fn = lambda: bench.torch(torch, *tensors)  # noqa: E731
        out = fn()
        got = [t.detach().numpy() for t in (out if isinstance(out, tuple) else (out,))]
        want = bench.numpy(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in inputs])
        want = want if isinstance(want, tuple) else (want,)
        result["correct"] = all(np.allclose(g, w, rtol=bench.rtol, atol=bench.atol)
                                for g, w in zip(got, want))
    else:
        raise SystemExit(f"unknown implementation {impl}")
    times = timed_calls(fn, repeat)
    result.update(median_s=statistics.median(times), min_s=min(times), calls=len(times))
    print(json.dumps(result))


# ------------------------------------------------------------------ driver

def available(bench, impl):
    """None if `impl` can run `bench`, else why not."""
    if bench.needs:
        return f"needs the {bench.needs}"
    if impl == "torch":
        if bench.torch is None:
            return "no torch version"
        try:
            import importlib.util
            if importlib.util.find_spec("torch") is None:
                return "torch not installed"
        except ImportError:
            return "torch not installed"
    if impl == "mscc" and bench.ms is None and bench.frontend is None:
        return "no ms version"
    return None


def run_one(name, impl, repeat, timeout):
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    env["MSCC_CACHE_DIR"] = ""  # time real compiles, without a background library build
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", name, impl,
                           "--repeat", str(repeat)], capture_output=True, text=True, env=env,
                          timeout=timeout)
    if proc.returncode != 0:
        return {"name": name, "impl": impl, "error": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def report(rows, benches, impls):
    by = {(r["name"], r["impl"]): r for r in rows}
    head = f"{'benchmark':34} {'numpy':>10} {'mscc':>10} {'x numpy':>8} {'goal':>6}"
    if "torch" in impls:
        head += f" {'torch':>10}"
    lines = [head, "-" * len(head)]
    for b in benches:
        np_r, ms_r = by.get((b.name, "numpy"), {}), by.get((b.name, "mscc"), {})

        def cell(r):
            if "median_s" in r:
                return f"{r['median_s'] * 1e3:9.3f}m"
            return f"{'error' if 'error' in r else '-':>10}"
        ratio = ""
        if "median_s" in np_r and "median_s" in ms_r:
            ratio = (f"{ms_r['median_s'] * 1e6:6.2f}us" if b.goal_kind == "max_us"
                     else f"{np_r['median_s'] / ms_r['median_s']:7.2f}x")
        goal = (f"{b.goal:5.1f}x" if b.goal_kind == "speedup" else f"{b.goal:4.0f}us") if b.goal else ""
        line = f"{b.name:34} {cell(np_r)} {cell(ms_r)} {ratio:>8} {goal:>6}"
        if "torch" in impls:
            line += f" {cell(by.get((b.name, 'torch'), {}))}"
        notes = []
        if b.needs:
            notes.append(f"slot: needs the {b.needs}")
        if "min_s" in ms_r:
            notes.append(f"best {ms_r['min_s'] * 1e3:.3f} ms" +
                         (f" (numpy {np_r['min_s'] * 1e3:.3f})" if "min_s" in np_r else ""))
        if "compile_s" in ms_r:
            stages = ms_r.get("compile_stages", {})
            notes.append(f"compile {ms_r['compile_s'] * 1e3:.0f} ms" + (
                f" (codegen {stages['codegen'] * 1e3:.0f})" if "codegen" in stages else ""))
        if b.flops and "median_s" in ms_r:
            notes.append(f"{b.flops / ms_r['median_s'] / 1e9:.0f} GFLOP/s")
        if ms_r.get("correct") is False:
            notes.append(f"WRONG (max abs err {ms_r['max_abs_err']:.2e})")
        if by.get((b.name, "torch"), {}).get("correct") is False:
            notes.append("torch result differs from numpy")
        for r in (np_r, ms_r):
            if "error" in r:
                notes.append(f"{r['impl']} failed: {' '.join(r['error'])}")
        lines.append(line + ("   " + "; ".join(notes) if notes else ""))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    ap.add_argument("--impl", default=",".join(IMPLS))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--worker", nargs=2, metavar=("NAME", "IMPL"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(*args.worker, args.repeat)
    if args.list:
        for b in BENCHMARKS:
            print(b.name + (f"  (slot: needs the {b.needs})" if b.needs else ""))
        return
    unknown = [n for n in args.names if n not in BY_NAME]
    if unknown:
        raise SystemExit(f"unknown benchmark(s): {', '.join(unknown)}")
    benches = [BY_NAME[n] for n in args.names] or BENCHMARKS
    impls = [i for i in args.impl.split(",") if i]
    rows = []
    for b in benches:
        for impl in impls:
            why = available(b, impl)
            if why is None:
                rows.append(run_one(b.name, impl, args.repeat, args.timeout))
    text = report(rows, benches, impls)
    print(text)
    out_dir = os.path.join(HERE, "results")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, time.strftime("%Y%m%d-%H%M%S") + ".json")
    with open(path, "w") as f:
        json.dump({"rows": rows, "report": text}, f, indent=1)
    print(f"\nresults: {path}")


if __name__ == "__main__":
    main()
