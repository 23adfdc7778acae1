"""Build the folder bench/gpu_check.py runs on a GPU machine (which has no MLIR wheels).

    python bench/build_gpu_artifacts.py OUT_DIR [--only NAME ...]

Needs the compiler (the MLIR wheels; ptxas too, to ship cubins). Writes
    OUT_DIR/index.json             the cases, tolerances, timed workloads
    OUT_DIR/checks/NAME.msx        one CUDA executable per op family
    OUT_DIR/checks/NAME.npz        its inputs (in0, ...) and numpy results (out0, ...)
    OUT_DIR/perf/NAME.msx          the timed workloads (inputs are generated on the GPU host)
Then copy OUT_DIR and this repository to the GPU machine and run bench/gpu_check.py OUT_DIR.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
INDEX_VERSION = 1


def _import_mscc():
    """`mscc` is this repository; make it importable when it is not installed."""
    try:
        import mscc  # noqa: F401
    except ImportError:
        import tempfile
        link_dir = tempfile.mkdtemp(prefix="mscc-path-")
        os.symlink(os.path.dirname(HERE), os.path.join(link_dir, "mscc"))
        sys.path.insert(0, link_dir)


def _module(case):
    from mlir import ir
    from mscc.dialects.builders import build_function, mlir_context
    with mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        build_function(module, case.name, case.in_specs, case.body)
        module.operation.verify()
    return module


def _git_commit():
    try:
        return subprocess.run(["git", "-C", os.path.dirname(HERE), "rev-parse", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def build(out_dir: str, only=None, log=print) -> dict:
    _import_mscc()
    from mscc.passes.artifact import build_artifact
    sys.path.insert(0, HERE)
    import gpu_cases as G

    os.makedirs(os.path.join(out_dir, "checks"), exist_ok=True)
    os.makedirs(os.path.join(out_dir, "perf"), exist_ok=True)
    index = {"version": INDEX_VERSION, "commit": _git_commit(), "checks": [], "perf": []}
    for case in G.CHECKS:
        if only and case.name not in only:
            continue
        t = time.perf_counter()
        art = build_artifact(_module(case), case.name, "cuda")
        art.save(os.path.join(out_dir, "checks", case.name + ".msx"))
        inputs = case.inputs(seed=0)
        outputs = case.ref(*inputs)
        outputs = outputs if isinstance(outputs, list) else [outputs]
        for i, (o, s) in enumerate(zip(outputs, art.outputs)):
            if o.shape != s.shape or o.dtype != s.dtype.np:
                raise SystemExit(f"{case.name}: reference #{i} is {o.dtype}{list(o.shape)}, "
                                 f"the entry returns {s}")
        np.savez(os.path.join(out_dir, "checks", case.name + ".npz"),
                 **{f"in{i}": a for i, a in enumerate(inputs)},
                 **{f"out{i}": np.ascontiguousarray(a) for i, a in enumerate(outputs)})
        tol = {**{k: list(v) for k, v in G.TOL.items()}, **{k: list(v) for k, v in case.tol.items()}}
        index["checks"].append({"name": case.name, "artifact": f"checks/{case.name}.msx",
                                "data": f"checks/{case.name}.npz", "tolerance": tol,
                                "launches": len(art.plan().launches)})
        log(f"built {case.name}: {len(art.plan().launches)} launches, "
            f"{time.perf_counter() - t:.2f} s")
    for case, nbytes, flops in G.PERF:
        if only and case.name not in only:
            continue
        art = build_artifact(_module(case), case.name, "cuda")
        art.save(os.path.join(out_dir, "perf", case.name + ".msx"))
        index["perf"].append({"name": case.name, "artifact": f"perf/{case.name}.msx",
                              "bytes": nbytes, "flops": flops,
                              "launches": len(art.plan().launches)})
        log(f"built {case.name} (timed)")
    with open(os.path.join(out_dir, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
    return index


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--only", nargs="+", help="build only these cases")
    args = p.parse_args(argv)
    build(args.out_dir, set(args.only) if args.only else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
