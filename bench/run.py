"""Benchmark harness: mscc against its peers (numpy, torch eager, torch.compile and jax.jit,
each when installed) on the same workloads, one process per benchmark and implementation;
medians, and mscc's ratio to the best peer of each row.

    python bench/run.py                       # everything available
    python bench/run.py softmax_4096x1024 --impl mscc,numpy --repeat 30
    python bench/run.py --list

numpy runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (this machine's environment sets
them, which keeps OpenBLAS off its fastest kernel); so does every other process, alike. torch
keeps its default thread count; jax runs on the CPU (JAX_PLATFORMS=cpu) in float32. The first
call of mscc, torch.compile and jax.jit (the compile) is timed apart, each from an empty cache.
Each row runs every implementation `--rounds` times (default 2), the order reversed in every
other round, and reports each one's best round (slow phases of a shared machine last seconds).
"vs best" is the fastest peer's median over mscc's (>= 1.0x: mscc wins); the call-overhead
rows are per-call microseconds, against their limits. Results go to bench/results/<time>.json
as well as to the terminal. Goals (issue 6) are reported, never asserted: timings on a shared
2-core machine are noisy.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness import SCRUBBED_ENV, cpu_description as cpu_model  # noqa: E402
from programs import BENCHMARKS, BY_NAME  # noqa: E402

IMPLS = ("numpy", "torch", "torch_compile", "jax", "mscc")
PEERS = ("numpy", "torch", "torch_compile", "jax")
LABELS = {"torch_compile": "torch.compile"}  # the report's names, where not the impl's
PACKAGE = {"torch": "torch", "torch_compile": "torch", "jax": "jax"}
CALL_INNER = 200  # calls per sample in the call-overhead rows (one call is ~1 us)


def label(impl):
    return LABELS.get(impl, impl)


def versions() -> dict:
    """The installed versions of mscc's peers, without importing them (torch takes seconds)."""
    from importlib import metadata
    out = {}
    for module in ("numpy", "torch", "jax", "jaxlib"):
        try:
            out[module] = metadata.version(module)
        except metadata.PackageNotFoundError:
            out[module] = None
    return out


# ------------------------------------------------------------------ one measurement

def timed_calls(fn, args, kwargs, repeat, min_seconds=0.3, inner=1):
    """Per-call seconds of fn(*args, **kwargs) after two warm-up calls: at least `repeat`
    samples and min_seconds; each sample times `inner` calls back to back."""
    fn(*args, **kwargs)
    fn(*args, **kwargs)
    loop = range(inner)
    times = []
    out = None  # the previous result lives until the next call returns, as in `y = f(x)`
    start = time.perf_counter()
    while len(times) < repeat or time.perf_counter() - start < min_seconds:
        if kwargs:
            t0 = time.perf_counter()
            for _ in loop:
                out = fn(**kwargs)
        else:
            t0 = time.perf_counter()
            for _ in loop:
                out = fn(*args)
        times.append((time.perf_counter() - t0) / inner)
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


def check(result, bench, inputs, out, to_numpy):
    """Record max_abs_err and correct: `out` (one result or a tuple) against numpy in float64."""
    import numpy as np
    got = [np.asarray(to_numpy(t)) for t in (out if isinstance(out, (tuple, list)) else (out,))]
    want = bench.numpy(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in inputs])
    want = want if isinstance(want, tuple) else (want,)
    result["max_abs_err"] = max(float(np.max(np.abs(g - w))) for g, w in zip(got, want))
    result["correct"] = len(got) == len(want) and all(
        g.shape == np.shape(w) and np.allclose(g, w, rtol=bench.rtol, atol=bench.atol)
        for g, w in zip(got, want))


def arguments(bench, values):
    """(args, kwargs) of a call: by keyword where the benchmark names its inputs."""
    if bench.keywords:
        return (), dict(zip(bench.keywords, values))
    return tuple(values), {}


def first_call(result, fn, args, kwargs):
    """The first call, timed as the compile (trace, compile and run once)."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    result["compile_s"] = time.perf_counter() - t0
    return out


def worker(name, impl, repeat):
    bench = BY_NAME[name]
    inputs = bench.inputs()
    result = {"name": name, "impl": impl}
    if impl == "numpy":
        fn = bench.numpy
        args, kwargs = arguments(bench, inputs)
    elif impl == "mscc" and bench.frontend is not None:
        import mscc as ms
        values = inputs if bench.call == "numpy" else [ms.Tensor(a) for a in inputs]
        fn = bench.frontend(*inputs)
        args, kwargs = arguments(bench, values)
        out = first_call(result, fn, args, kwargs)  # traces and compiles
        ms.wait_optimized()  # (a tiered compile's optimized code, before timing)
        check(result, bench, inputs, out, lambda t: t.asnumpy())
    elif impl == "mscc":
        exe, result["compile_s"], result["compile_stages"] = build_mscc(bench, inputs)
        check(result, bench, inputs, exe(*inputs)[0], lambda t: t)
        fn, args, kwargs = exe, tuple(inputs), {}
    elif impl in ("torch", "torch_compile"):
        import torch

        def fn(*a, **k):
            return bench.torch(torch, *a, **k)
        if impl == "torch_compile":
            fn = torch.compile(fn)
        args, kwargs = arguments(bench, [torch.from_numpy(a) for a in inputs])
        out = first_call(result, fn, args, kwargs)
        if impl == "torch":
            del result["compile_s"]  # eager: the first call is only a warm-up
        check(result, bench, inputs, out, lambda t: t.detach().numpy())
    elif impl == "jax":
        os.environ["JAX_PLATFORMS"] = "cpu"
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", False)  # float32, whatever the environment says
        jitted = jax.jit(lambda *a, **k: bench.jax(jnp, *a, **k))

        def fn(*a, **k):
            return jax.block_until_ready(jitted(*a, **k))  # jax dispatches asynchronously
        args, kwargs = arguments(bench, [jnp.asarray(a) for a in inputs])
        out = first_call(result, fn, args, kwargs)
        check(result, bench, inputs, out, lambda t: t)
    else:
        raise SystemExit(f"unknown implementation {impl}")
    inner = CALL_INNER if bench.goal_kind == "max_us" else 1
    times = timed_calls(fn, args, kwargs, repeat, inner=inner)
    result.update(median_s=statistics.median(times), min_s=min(times), calls=len(times) * inner)
    print(json.dumps(result))


# ------------------------------------------------------------------ driver

def available(bench, impl):
    """None if `impl` can run `bench`, else why not."""
    if bench.needs:
        return f"needs the {bench.needs}"
    if impl not in IMPLS:
        return f"unknown implementation {impl}"
    if impl in ("torch", "torch_compile") and bench.torch is None:
        return "no torch version"
    if impl == "jax" and bench.jax is None:
        return "no jax version"
    if impl == "mscc" and bench.ms is None and bench.frontend is None:
        return "no ms version"
    package = PACKAGE.get(impl)
    if package is not None:
        try:
            if importlib.util.find_spec(package) is None:
                return f"{package} not installed"
        except (ImportError, ValueError):
            return f"{package} not installed"
    return None


def brief_error(stderr, returncode):
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    return [lines[-1][:300] if lines else f"exit status {returncode}"]


def run_one(name, impl, repeat, timeout):
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    env["MSCC_CACHE_DIR"] = ""  # time real compiles, without a background library build
    env["JAX_PLATFORMS"] = "cpu"
    cache = None
    if impl == "torch_compile":  # inductor's compile, timed from an empty cache as well
        cache = tempfile.mkdtemp(prefix="mscc-bench-inductor-")
        env["TORCHINDUCTOR_CACHE_DIR"] = cache
    try:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", name, impl,
                               "--repeat", str(repeat)], capture_output=True, text=True,
                              env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"name": name, "impl": impl, "error": [f"timed out after {timeout:.0f} s"]}
    finally:
        if cache:
            shutil.rmtree(cache, ignore_errors=True)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"name": name, "impl": impl, "error": brief_error(proc.stderr, proc.returncode)}
    return json.loads(lines[-1])


def best_rounds(name, impls, args) -> list[dict]:
    """Each implementation's best of `args.rounds` runs of a row, the order of the
    implementations reversed every other round: this shared machine has slow phases lasting
    seconds, and one of them would otherwise decide whichever implementation ran in it."""
    best: dict[str, dict] = {}
    for r in range(args.rounds):
        for impl in (impls if r % 2 == 0 else impls[::-1]):
            result = run_one(name, impl, args.repeat, args.timeout)
            if impl not in best or _rank(result) < _rank(best[impl]):
                best[impl] = result
    return [best[i] for i in impls]


def _rank(result) -> tuple:
    """A timed, correct result before an incorrect one before an error; then the faster."""
    if "median_s" not in result:
        return (2, 0.0)
    return (0 if result.get("correct", True) else 1, result["median_s"])


def best_peer(by, name):
    """(impl, median seconds) of the fastest peer with a correct result on this row, or None."""
    timed = [(by[(name, p)]["median_s"], p) for p in PEERS
             if "median_s" in by.get((name, p), {}) and by[(name, p)].get("correct", True)]
    if not timed:
        return None
    t, p = min(timed)
    return p, t


def _notes(b, by, us):
    """What a row adds after the table's columns: limits, best times, compile times, GFLOP/s,
    wrong results and failures."""
    np_r, ms_r = by.get((b.name, "numpy"), {}), by.get((b.name, "mscc"), {})
    notes = []
    if b.needs:
        notes.append(f"slot: needs the {b.needs}")
    if us and b.goal and "median_s" in ms_r:
        notes.append("within the limit" if ms_r["median_s"] * 1e6 <= b.goal
                     else "over the limit")
    if "min_s" in ms_r and not us:
        notes.append(f"best {ms_r['min_s'] * 1e3:.3f} ms" +
                     (f" (numpy {np_r['min_s'] * 1e3:.3f})" if "min_s" in np_r else ""))
    if "compile_s" in ms_r and not us:
        stages = ms_r.get("compile_stages", {})
        notes.append(f"compile {ms_r['compile_s'] * 1e3:.0f} ms" + (
            f" (codegen {stages['codegen'] * 1e3:.0f})" if "codegen" in stages else ""))
    peers_compile = [f"{label(i)} {by[(b.name, i)]['compile_s']:.2f} s"
                     for i in ("torch_compile", "jax")
                     if "compile_s" in by.get((b.name, i), {})]
    if peers_compile and not us:
        notes.append("first call " + ", ".join(peers_compile))
    if b.flops and "median_s" in ms_r:
        notes.append(f"{b.flops / ms_r['median_s'] / 1e9:.0f} GFLOP/s")
    for impl in IMPLS:
        r = by.get((b.name, impl), {})
        if r.get("correct") is False:
            err = r.get("max_abs_err", float("nan"))
            notes.append(f"{label(impl)} WRONG (max abs err {err:.2e})")
        if "error" in r:
            notes.append(f"{label(impl)} failed: {' '.join(r['error'])}")
    return notes


def report(rows, benches, impls=IMPLS, cpu=None):
    """The table: each implementation's median (ms; us for the call-overhead rows), mscc's
    ratio to the best peer (best peer / mscc, >= 1.0x: mscc wins) and to numpy, the goal."""
    by = {(r["name"], r["impl"]): r for r in rows}
    cols = [("numpy", 10), ("torch", 10), ("torch_compile", 13), ("jax", 10), ("mscc", 10)]
    head = (f"{'benchmark':32}" + "".join(f" {label(i):>{w}}" for i, w in cols) +
            f" {'vs best':>8} {'best peer':>13} {'x numpy':>8} {'goal':>8}")
    lines = [f"CPU: {cpu or cpu_model()}", head, "-" * len(head)]
    for b in benches:
        us = b.goal_kind == "max_us"
        np_r, ms_r = by.get((b.name, "numpy"), {}), by.get((b.name, "mscc"), {})

        def cell(r, width):
            if "median_s" in r:
                return (f"{r['median_s'] * 1e6:{width - 2}.2f}us" if us
                        else f"{r['median_s'] * 1e3:{width - 2}.3f}ms")
            return f"{'error' if 'error' in r else '-':>{width}}"
        best = best_peer(by, b.name)
        vs_best = peer = x_numpy = ""
        if best:
            peer = label(best[0])
        if "median_s" in ms_r:
            if us:
                vs_best = f"{ms_r['median_s'] * 1e6:.2f}us"
            else:
                if best:
                    vs_best = f"{best[1] / ms_r['median_s']:.2f}x"
                if "median_s" in np_r:
                    x_numpy = f"{np_r['median_s'] / ms_r['median_s']:.2f}x"
        goal = ""
        if b.goal:
            goal = f"<={b.goal:g}us" if us else f"{b.goal:.1f}x"
        line = (f"{b.name:32}" + "".join(f" {cell(by.get((b.name, i), {}), w)}" for i, w in cols)
                + f" {vs_best:>8} {peer:>13} {x_numpy:>8} {goal:>8}")
        notes = _notes(b, by, us)
        lines.append(line + ("   " + "; ".join(notes) if notes else ""))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    ap.add_argument("--impl", default=",".join(IMPLS))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--rounds", type=int, default=2,
                    help="runs per row and implementation, in alternating order; the best "
                         "is reported")
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
    unknown = [i for i in impls if i not in IMPLS]
    if unknown:
        raise SystemExit(f"unknown implementation(s): {', '.join(unknown)} "
                         f"(known: {', '.join(IMPLS)})")
    cpu = cpu_model()
    rows, skipped = [], {}
    for b in benches:
        runnable = []
        for impl in impls:
            why = available(b, impl)
            if why is None:
                runnable.append(impl)
            elif why.endswith("not installed"):
                skipped[label(impl)] = why
        rows += best_rounds(b.name, runnable, args)
    text = report(rows, benches, impls, cpu=cpu)
    if skipped:
        text += "\n\nskipped: " + ", ".join(f"{i} ({why})" for i, why in skipped.items())
    print(text)
    out_dir = os.path.join(HERE, "results")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, time.strftime("%Y%m%d-%H%M%S") + ".json")
    with open(path, "w") as f:
        json.dump({"cpu": cpu, "versions": versions(), "rows": rows, "report": text}, f,
                  indent=1)
    print(f"\nresults: {path}")


if __name__ == "__main__":
    main()
