"""One prepared run for a machine with a GPU: correctness of every op family against numpy,
then timings, written to a JSON file. Needs only numpy, cuda-bindings and this repository
(no MLIR: the artifacts were built beforehand with bench/build_gpu_artifacts.py).

    python bench/build_gpu_artifacts.py ARTIFACTS      # on a machine with the compiler
    python bench/gpu_check.py ARTIFACTS [-o results.json] [--repeat N] [--skip-perf]

Timed: a 64M-element fused elementwise chain (GB/s, next to a device-to-device copy of the
same size), softmax 8192x8192 (GB/s), matmul 4096 (TFLOP/s). Each timing is CUDA events
around --repeat back-to-back calls on the executable's stream (best of three rounds). The whole
run takes well under five minutes on an H100/H200. Exit code: 0 all checks passed, 1 some
failed, 2 no GPU or unusable artifacts (the results file says why).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
INDEX_VERSION = 1


def import_mscc():
    """`mscc` is this repository; make it importable without installing it (installing
    would pull the MLIR wheels, which GPU machines do not have)."""
    try:
        import mscc  # noqa: F401
    except ImportError:
        import tempfile
        link_dir = tempfile.mkdtemp(prefix="mscc-path-")
        os.symlink(os.path.dirname(HERE), os.path.join(link_dir, "mscc"))
        sys.path.insert(0, link_dir)
    import mscc.runtime  # noqa: F401


class SetupError(Exception):
    pass


def read_index(folder: str) -> dict:
    """The folder's index.json, checked: version, and every file it names present."""
    path = os.path.join(folder, "index.json")
    try:
        with open(path) as f:
            index = json.load(f)
    except FileNotFoundError:
        raise SetupError(f"{path} not found: build the folder with "
                         f"'python bench/build_gpu_artifacts.py {folder}'") from None
    except ValueError as e:
        raise SetupError(f"{path} is not valid JSON: {e}") from None
    if index.get("version") != INDEX_VERSION:
        raise SetupError(f"{path} has version {index.get('version')}, this script reads "
                         f"{INDEX_VERSION}: rebuild the folder")
    for entry in index.get("checks", []) + index.get("perf", []):
        for key in ("artifact", "data"):
            if key in entry and not os.path.exists(os.path.join(folder, entry[key])):
                raise SetupError(f"{entry['name']}: {entry[key]} is missing from {folder}")
    return index


def compare(got: np.ndarray, want: np.ndarray, tolerance: dict) -> dict:
    """{"ok", "max_abs_err", "why"}: exact for integers and bools, allclose for floats with
    the tolerance of the result dtype."""
    res = {"ok": False, "max_abs_err": None, "why": ""}
    if got.shape != want.shape or got.dtype != want.dtype:
        res["why"] = f"got {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}"
        return res
    if want.dtype.kind == "f":
        rtol, atol = tolerance.get(want.dtype.name, (1e-5, 1e-6))
        g, w = got.astype(np.float64), want.astype(np.float64)
        err = np.abs(g - w)
        res["max_abs_err"] = float(np.nanmax(err)) if err.size else 0.0
        bad = ~np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    else:
        bad = got != want
        res["max_abs_err"] = float(np.abs(got.astype(np.float64) - want).max()) if got.size else 0.0
    n_bad = int(bad.sum())
    res["ok"] = n_bad == 0
    if n_bad:
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        res["why"] = f"{n_bad} of {got.size} elements differ; first at {first}: " \
                     f"got {got[first]!r}, expected {want[first]!r}"
    return res


def run_checks(folder, index, dev, log=print) -> list:
    from mscc.runtime import load
    # Synchronize after every launch, so that a faulting kernel is named.
    blocking = os.environ.get("MSCC_CUDA_LAUNCH_BLOCKING")
    os.environ["MSCC_CUDA_LAUNCH_BLOCKING"] = "1"
    try:
        return _run_checks(folder, index, dev, load, log)
    finally:
        if blocking is None:
            del os.environ["MSCC_CUDA_LAUNCH_BLOCKING"]
        else:
            os.environ["MSCC_CUDA_LAUNCH_BLOCKING"] = blocking


def _run_checks(folder, index, dev, load, log) -> list:
    results = []
    for entry in index["checks"]:
        r = {"name": entry["name"], "ok": False}
        t = time.perf_counter()
        try:
            exe = load(os.path.join(folder, entry["artifact"]), dev=dev)
            data = np.load(os.path.join(folder, entry["data"]))
            n_in = sum(k.startswith("in") for k in data.files)
            n_out = sum(k.startswith("out") for k in data.files)
            outs = exe(*[data[f"in{i}"] for i in range(n_in)])
            if len(outs) != n_out:
                raise ValueError(f"{len(outs)} results, expected {n_out}")
            r["outputs"] = [compare(o.asnumpy(), data[f"out{i}"], entry["tolerance"])
                            for i, o in enumerate(outs)]
            r["ok"] = all(o["ok"] for o in r["outputs"])
        except Exception as e:  # noqa: BLE001  (one broken case must not hide the others)
            r["error"] = f"{type(e).__name__}: {e}"
        r["seconds"] = round(time.perf_counter() - t, 3)
        log(f"{'PASS' if r['ok'] else 'FAIL'} {r['name']}"
            + ("" if r["ok"] else f": {r.get('error') or [o['why'] for o in r['outputs'] if not o['ok']]}"))
        results.append(r)
    return results


# ------------------------------------------------------------------ timed workloads

def _chain_ref(x, y):
    x, y = x.astype(np.float64), y.astype(np.float64)
    return (np.maximum(x * y + x, 0) * 0.5).astype(np.float32)


def _softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def _check_perf_output(name, inputs, out: np.ndarray) -> dict:
    """Float64 numpy reference of a timed workload (matmul: 64 sampled rows). Tolerances
    allow for fused or separate multiply-add and for the summation order."""
    if name.startswith("chain"):
        return compare(out, _chain_ref(*inputs), {"float32": (1e-6, 2e-6)})
    if name.startswith("softmax"):
        return compare(out, _softmax_ref(inputs[0]), {"float32": (1e-5, 1e-7)})
    if name.startswith("matmul"):
        rows = np.random.default_rng(1).choice(out.shape[0], 64, replace=False)
        want = (inputs[0][rows].astype(np.float64) @ inputs[1]).astype(np.float32)
        return compare(out[rows], want, {"float32": (1e-3, 1e-2)})
    return {"ok": True, "why": "no reference"}


def time_calls(dev, stream, fn, repeat: int, rounds: int = 3) -> float:
    """Seconds per call of `fn()` (work queued on `stream`), by CUDA events around `repeat`
    back-to-back calls (the host queues ahead, so its overhead hides behind the GPU's work);
    the best of `rounds`."""
    drv = dev.driver
    start, end = drv.event_create(timing=True), drv.event_create(timing=True)
    best = float("inf")
    for _ in range(rounds):
        drv.event_record(start, stream)
        for _ in range(repeat):
            fn()
        drv.event_record(end, stream)
        drv.event_synchronize(end)
        best = min(best, drv.event_elapsed_ms(start, end) / 1e3 / repeat)
    drv.event_destroy(start)
    drv.event_destroy(end)
    return best


def run_perf(folder, index, dev, repeat=10, log=print) -> list:
    from mscc.runtime import load
    results = []
    for entry in index["perf"]:
        r = {"name": entry["name"]}
        try:
            exe = load(os.path.join(folder, entry["artifact"]), dev=dev)
            rng = np.random.default_rng(0)
            inputs = [rng.standard_normal(s.shape, dtype=np.float32).astype(s.dtype.np)
                      for s in exe.in_specs]
            dev_inputs = [dev.to_device(a, exe.stream) for a in inputs]
            r["image"] = exe.image
            out, = exe(*dev_inputs)                      # warm up
            r["check"] = _check_perf_output(entry["name"], inputs, out.asnumpy())
            del out
            seconds = time_calls(dev, exe.stream, lambda: exe(*dev_inputs), repeat)
            r["ms"] = round(seconds * 1e3, 4)
            r["GB/s"] = round(entry["bytes"] / seconds / 1e9, 1)
            if entry["flops"]:
                r["TFLOP/s"] = round(entry["flops"] / seconds / 1e12, 2)
            if entry["name"].startswith("chain"):
                r["copy GB/s"] = copy_bandwidth(dev, entry["bytes"] // 3, repeat)
        except Exception as e:  # noqa: BLE001
            r["error"] = f"{type(e).__name__}: {e}"
        log(f"TIME {r['name']}: " + ", ".join(f"{k} {v}" for k, v in r.items()
                                              if k not in ("name", "check")))
        results.append(r)
    return results


def copy_bandwidth(dev, nbytes: int, repeat: int) -> float:
    """GB/s of a device-to-device copy of nbytes (read + write counted, like the chain)."""
    src, dst = dev.empty((nbytes,), np.uint8), dev.empty((nbytes,), np.uint8)
    stream = dev.stream
    seconds = time_calls(dev, stream,
                         lambda: dev.driver.memcpy_dtod(dst.ptr, src.ptr, nbytes, stream), repeat)
    return round(2 * nbytes / seconds / 1e9, 1)


# ------------------------------------------------------------------ driver

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", help="made by bench/build_gpu_artifacts.py")
    p.add_argument("-o", "--output", default="gpu_check_results.json")
    p.add_argument("--repeat", type=int, default=10, help="timed calls per workload")
    p.add_argument("--skip-perf", action="store_true")
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    return args


def main(argv=None, dev=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    report = {"folder": os.path.abspath(args.folder), "host": platform.node(),
              "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    status = 2
    t0 = time.perf_counter()
    try:
        index = read_index(args.folder)
        report["commit"] = index.get("commit")
        import_mscc()
        from mscc.runtime import cuda
        dev = dev or cuda.device()
        report["device"] = dev.name
        report["compute_capability"] = list(getattr(dev.driver, "compute_capability", []))
        report["checks"] = run_checks(args.folder, index, dev)
        if not args.skip_perf:
            report["perf"] = run_perf(args.folder, index, dev, args.repeat)
        report["memory"] = dev.memory_stats()
        ok = all(c["ok"] for c in report["checks"]) and all(
            p.get("check", {}).get("ok") and "error" not in p for p in report.get("perf", []))
        status = 0 if ok else 1
    except SetupError as e:
        report["error"] = str(e)
    except Exception as e:  # noqa: BLE001  (no GPU, no cuda-bindings, ...: say so in the file)
        report["error"] = f"{type(e).__name__}: {e}"
    report["seconds"] = round(time.perf_counter() - t0, 1)
    report["status"] = {0: "passed", 1: "failed", 2: "error"}[status]
    with open(args.output, "w") as f:
        json.dump(report, f, indent=1)
    print(f"{report['status']}; results in {args.output}"
          + (f" ({report['error']})" if "error" in report else ""))
    return status


if __name__ == "__main__":
    sys.exit(main())
