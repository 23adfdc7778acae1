"""First-compile times (issue 21): each program compiled in a fresh process with an empty
compile cache, as a user's first run meets it, next to jax.jit on the same model:

    python bench/compile_time.py [ROW ...] [--json PATH]

Rows: a trivial function (x * 2 + 1 on 4 floats), the MLP 784-512-10 training step (batch 256),
the model zoo's LeNet5 training step (batch 32, 32x32), a ResNet basic block training step
(batch 8, 16 channels, 16x16), a pre-norm ViT encoder layer training step (batch 8, 16
tokens, width 64, 4 heads, MLP 128) and LeNet5's first PyNative training step (eager ops,
the gradient recorded). A training step is forward, loss, gradients and the Momentum update,
under ms.jit (graph mode) except in the PyNative row; jax's is jax.jit of the same
computation written as plain jax (jax eager for the PyNative row).

Per row: `import mscc` (`import jax`) in seconds, then the seconds from after the import to the
first result (building the model and the inputs, tracing, compiling, running once), the first
call alone and the second call. mscc's jit compiles tier (passes/tiering.py: the first result
comes from quick code, lowered without the speed-only passes and compiled at -O0, while the
optimized code is lowered and compiled at -O3 in the background); where they did, the cell also says
when the optimized code was ready (measured from the same start; MSCC_TIERED=0 in the
environment measures untiered compiles). MSCC_TIME_REPORT=1 in the worker gives mscc's breakdown,
summed over every compile of the process: tracing, the pass stages (ms ... llvm), LLVM's code
generation, and the slowest passes; jax's log_compiles gives tracing, lowering to MLIR and XLA
compilation. Nothing is asserted: on a shared 2-core machine the figures are noisy.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import harness  # noqa: E402
import nets  # noqa: E402

ROWS = {
    "trivial": "trivial function (x * 2 + 1, 4 f32)",
    "mlp_train_step": "MLP 784-512-10 train step, batch 256",
    "lenet5_train_step": "LeNet5 train step, batch 32",
    "resnet_block_train_step": "ResNet basic block train step, 8x16x16x16",
    "vit_layer_train_step": "ViT encoder layer train step, 8x16 tokens x64, 4 heads",
    "mobilenet_v2_train_step": "MobileNetV2 train step, 8x3x32x32 (52 convolutions)",
    "lenet5_pynative_first_step": "LeNet5 first PyNative train step, batch 32",
}
HEADS = 4


def row_model(name):
    """(params, x, y, mscc model builder, jax apply(params, x), loss kind)."""
    rng = np.random.default_rng(0)
    if name == "mlp_train_step":
        x, y = nets.classifier_data(rng, (256, 784))
        return nets.mlp_params(rng), x, y, nets.ms_mlp, nets.jax_mlp, "ce"
    if name.startswith("lenet5"):
        x, y = nets.classifier_data(rng, (32, 1, 32, 32))
        return nets.lenet_params(rng), x, y, nets.ms_lenet, nets.jax_lenet, "ce"
    if name == "resnet_block_train_step":
        x, y = nets.regression_data(rng, (8, 16, 16, 16))
        return (nets.block_params(rng, 16), x, y, lambda p: nets.ms_block(p, 16),
                nets.jax_block, "mse")
    if name == "vit_layer_train_step":
        x, y = nets.regression_data(rng, (8, 16, 64))
        return (nets.vit_params(rng), x, y, lambda p: nets.ms_vit(p, HEADS),
                lambda p, t: nets.jax_vit(p, t, HEADS), "mse")
    if name == "mobilenet_v2_train_step":
        x, y = nets.classifier_data(rng, (8, 3, 32, 32))
        return (nets.mobilenet_v2_params(rng), x, y, nets.ms_mobilenet_v2,
                nets.jax_mobilenet_v2, "ce")
    raise SystemExit(f"unknown row {name}")


# ------------------------------------------------------------------ workers

def first_calls(build):
    """Seconds from now to the first result (build() included), of the first call alone and
    of the second call; build() returns (call, wait) and `wait` runs between the calls."""
    t0 = time.perf_counter()
    call, wait = build()
    t1 = time.perf_counter()
    call()
    t2 = time.perf_counter()
    wait()
    t3 = time.perf_counter()
    call()
    return {"to_first_s": t2 - t0, "first_call_s": t2 - t1,
            "second_call_s": time.perf_counter() - t3, "to_optimized_s": t3 - t0}


def mscc_worker(name):
    t0 = time.perf_counter()
    import mscc as ms
    import_s = time.perf_counter() - t0

    def wait():
        # imported here, after the first call: importing it loads the compiler (mlir, the
        # pipeline), which the first call must pay for in the figures
        from mscc.passes import exe_cache
        exe_cache.wait()

    def build():
        if name == "trivial":
            f, x = ms.jit(lambda t: t * 2 + 1), ms.Tensor(np.ones(4, np.float32))
            return (lambda: f(x).asnumpy()), wait
        p, x, y, ms_model, _, loss = row_model(name)
        pynative = name.endswith("pynative_first_step")
        ms.set_context(mode=ms.PYNATIVE_MODE if pynative else ms.GRAPH_MODE)
        step = nets.ms_train_step(ms_model(p), nets.ms_loss(loss))
        step = step if pynative else ms.jit(step)
        tx, ty = ms.Tensor(x), ms.Tensor(y)
        # the background link of the cache entries waits: it would slow the second call
        return (lambda: float(step(tx, ty).asnumpy())), wait

    print(json.dumps({"import_s": import_s, **first_calls(build)}))


def jax_worker(name):
    t0 = time.perf_counter()
    import jax
    import jax.numpy as jnp
    import_s = time.perf_counter() - t0
    jax.config.update("jax_log_compiles", True)  # the breakdown, parsed from stderr

    def build():
        if name == "trivial":
            f, x = jax.jit(lambda t: t * 2 + 1), jnp.asarray(np.ones(4, np.float32))
            return (lambda: np.asarray(f(x))), lambda: None
        p, x, y, _, apply, loss = row_model(name)
        step = nets.jax_train_step(apply, nets.jax_loss(loss))
        step = step if name.endswith("pynative_first_step") else jax.jit(step)
        # device_put, not jnp.zeros_like: that would compile an op of its own
        params = {k: jnp.asarray(v) for k, v in p.items()}
        moments = {k: jnp.asarray(np.zeros_like(v)) for k, v in p.items()}
        tx, ty = jnp.asarray(x), jnp.asarray(y)
        return (lambda: float(step(params, moments, tx, ty)[0])), lambda: None

    print(json.dumps({"import_s": import_s, **first_calls(build)}))


# ------------------------------------------------------------------ breakdowns

_TRACED = re.compile(r"^mscc: traced '[^']*' in ([\d.]+) ms")
_COMPILED = re.compile(r"^mscc: compiled '[^']*' in [\d.]+ ms \((.*)\)$")
_PASSES = re.compile(r"^mscc: passes of '[^']*' \((.*)\)$")
_JAX = re.compile(r"Finished (tracing|jaxpr to MLIR module conversion|XLA compilation)"
                  r".* in ([\d.e+-]+) sec")
_JAX_NAMES = {"tracing": "trace", "jaxpr to MLIR module conversion": "lower",
              "XLA compilation": "compile"}


def _pairs(text):
    """'name 1.5, other 0.2' -> [(name, seconds), ...] (names may hold commas: func.func(a,b))."""
    out = []
    for part in text.split(", "):
        name, _, ms = part.rpartition(" ")
        out.append((name, float(ms) / 1e3))
    return out


def mscc_breakdown(stderr):
    """Seconds summed over the process's compiles: by stage (trace first), and by pass."""
    stages, passes, compiles = {"trace": 0.0}, {}, 0
    for line in stderr.splitlines():
        if m := _TRACED.match(line):
            stages["trace"] += float(m.group(1)) / 1e3
        elif m := _COMPILED.match(line):
            compiles += 1
            for name, t in _pairs(m.group(1)):
                stages[name] = stages.get(name, 0.0) + t
        elif m := _PASSES.match(line):
            for name, t in _pairs(m.group(1)):
                passes[name] = passes.get(name, 0.0) + t
    return {"compiles": compiles, "stages": stages, "passes": passes}


def jax_breakdown(stderr):
    stages, compiles = {"trace": 0.0, "lower": 0.0, "compile": 0.0}, 0
    for m in _JAX.finditer(stderr):
        stages[_JAX_NAMES[m.group(1)]] += float(m.group(2))
        compiles += m.group(1) == "XLA compilation"
    return {"compiles": compiles, "stages": stages}


# ------------------------------------------------------------------ driver

def measure(name, impl, timeout):
    # MSCC_TIME_REPORT only for mscc: its per-pass timing runs each pass on its own
    env = {"MSCC_TIME_REPORT": "1"} if impl == "mscc" else {}
    result, stderr = harness.run_worker(__file__, [name, impl], timeout, env)
    if "error" not in result:
        result.update(mscc_breakdown(stderr) if impl == "mscc" else jax_breakdown(stderr))
    return result


def _stage_text(stages, names):
    return ", ".join(f"{n} {stages[n]:.3f}" for n in names if n in stages)


def mscc_cells(r):
    if "error" in r:
        return ["error"] + [""] * 4
    st = r["stages"]
    passes = sum(t for n, t in st.items() if n not in ("trace", "codegen"))
    top = sorted(r["passes"].items(), key=lambda kv: -kv[1])[:3]
    optimized = r.get("to_optimized_s", 0)
    tiered = f"optimized code {optimized:.2f}, " if optimized > r["to_first_s"] + 0.05 else ""
    return [f"{r['import_s']:.2f}",
            f"{r['to_first_s']:.2f} ({tiered}2nd call {r['second_call_s']:.3f})",
            f"trace {st['trace']:.2f}, passes {passes:.2f}, codegen {st.get('codegen', 0):.2f}"
            f" ({r['compiles']} compile{'s' if r['compiles'] != 1 else ''})",
            _stage_text(st, ("ms", "ms-opt", "linalg", "bufferized", "llvm")),
            ", ".join(f"{n} {t:.3f}" for n, t in top)]


def jax_cells(r):
    if r is None:
        return ["not installed", "", ""]
    if "error" in r:
        return ["error", "", ""]
    return [f"{r['import_s']:.2f}", f"{r['to_first_s']:.2f} (2nd call {r['second_call_s']:.3f})",
            _stage_text(r["stages"], ("trace", "lower", "compile")) + f" ({r['compiles']} XLA)"]


HEAD = ["program", "import mscc s", "mscc: after import to first result s", "mscc breakdown s",
        "mscc pass stages s", "mscc slowest passes s", "import jax s",
        "jax: after import to first result s", "jax breakdown s"]


def compile_bytecode() -> str:
    """Compile mscc's modules to bytecode (__pycache__) before measuring, as `pip install`
    does for a regular install and had done for jax: an editable install under
    PYTHONDONTWRITEBYTECODE=1 (this machine's environment) compiled every module from
    source in every process, ~70 ms of the first compile. Returns what was done, for the
    table's caption."""
    import compileall
    import mscc
    root = os.path.dirname(os.path.abspath(mscc.__file__))
    ok = compileall.compile_dir(root, quiet=2, rx=re.compile(r"[/\\](\.venv|build|bench)[/\\]"))
    return "compiled beforehand (as pip install does)" if ok else "partly compiled"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="*", help=f"default: all of {', '.join(ROWS)}")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", metavar="PATH", help="save the figures there")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        name, impl = args.worker
        return (mscc_worker if impl == "mscc" else jax_worker)(name)
    has_jax = harness.installed("jax")
    if not has_jax:
        print("jax: not installed")
    bytecode = compile_bytecode()
    table, record = [], []
    for name in args.rows or ROWS:
        if name not in ROWS:
            raise SystemExit(f"unknown row {name}; rows: {', '.join(ROWS)}")
        rows = {"mscc": measure(name, "mscc", args.timeout)}
        if has_jax:
            rows["jax"] = measure(name, "jax", args.timeout)
        for impl, r in rows.items():
            if "error" in r:
                print(f"{name} ({impl}) failed: {r['error']}", flush=True)
        table.append([ROWS[name]] + mscc_cells(rows["mscc"]) + jax_cells(rows.get("jax")))
        record.append({"name": name, "title": ROWS[name], **rows})
    cpu = harness.cpu_description()
    jax_version = harness.peer_version("jax")
    print(f"\nCPU: {cpu}; jax {jax_version or 'not installed'}; one fresh process per cell, "
          f"empty MSCC_CACHE_DIR; mscc's bytecode {bytecode}. Shared machine: figures are "
          "noisy.\n")
    print(harness.markdown_table(HEAD, table))
    errors = [f"- {r['name']} ({impl}): {r[impl]['error']}" for r in record
              for impl in ("mscc", "jax") if "error" in r.get(impl, {})]
    if errors:
        print("\nerrors:\n" + "\n".join(errors))
    if args.json:
        harness.save_json(args.json, {"cpu": cpu, "jax": jax_version, "rows": record})


if __name__ == "__main__":
    main()
