"""Peak memory and time of a training step with and without recompute (issue 19):

    python bench/recompute.py [--repeat N] [--json PATH]

Two steps, each as the framework writes it, with every block of the network stored (plain)
or recomputed in the backward (mscc: Cell.recompute(); torch:
torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False); jax: jax.checkpoint):
- "mlp": 16 residual blocks tanh(x @ W1) @ W2 + x of width 512 (hidden 512), batch 4096,
  float32, loss sum(out^2), the gradients of every weight;
- "lstm": 4 stacked LSTM layers (sequence 64, batch 32, hidden 256), each layer one block.

Peak memory is the most heap bytes live at once during one step, above those live before
it, after two warm-up steps: bench/peak_alloc.c, built here with the system's C compiler,
is preloaded into each row's process and counts every malloc/free/posix_memalign (all three
frameworks allocate their CPU buffers so; the resident-set high-water mark misses these
short peaks). The gradients are outputs, so they count for every row alike. All
frameworks start from the same weights; the table says whether each recomputed step's
gradients agree with its plain step's. Times are the best of --repeat steps; nothing is
asserted (a shared 2-core machine is noisy).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import harness  # noqa: E402

MLP = dict(blocks=16, width=512, batch=4096)
LSTM = dict(layers=4, seq=64, batch=32, hidden=256)
PEERS = ("torch", "jax")


def mlp_weights(rng):
    w = MLP["width"]
    s = 1.0 / np.sqrt(w)
    return [(rng.uniform(-s, s, (w, w)).astype(np.float32),
             rng.uniform(-s, s, (w, w)).astype(np.float32)) for _ in range(MLP["blocks"])]


def mlp_input(rng):
    return rng.uniform(-1, 1, (MLP["batch"], MLP["width"])).astype(np.float32)


def lstm_input(rng):
    return rng.uniform(-1, 1, (LSTM["batch"], LSTM["seq"], LSTM["hidden"])).astype(np.float32)


# ------------------------------------------------------------------ the steps

def mscc_step(net_kind, recompute):
    import mscc as ms
    from mscc import Parameter, Tensor, nn, ops
    ms.set_context(mode=ms.GRAPH_MODE)
    rng = np.random.default_rng(0)

    class Block(nn.Cell):
        def __init__(self, w1, w2):
            super().__init__()
            self.w1, self.w2 = Parameter(Tensor(w1), name="w1"), Parameter(Tensor(w2), name="w2")

        def construct(self, x):
            return ops.matmul(ops.tanh(ops.matmul(x, self.w1)), self.w2) + x
    if net_kind == "mlp":
        blocks = [Block(*w) for w in mlp_weights(rng)]
        x = Tensor(mlp_input(rng))
    else:
        ms.set_seed(0)
        blocks = [nn.LSTM(LSTM["hidden"], LSTM["hidden"], batch_first=True)
                  for _ in range(LSTM["layers"])]
        x = Tensor(lstm_input(rng))
    if recompute:
        for b in blocks:
            b.recompute()
    net = nn.SequentialCell(blocks) if net_kind == "mlp" else _Stacked(nn, blocks)
    params = net.trainable_params()
    grad = ms.jit(ms.grad(lambda a: (net(a) ** 2).sum(), None, params))
    return lambda: [g.asnumpy() for g in grad(x)]


def _Stacked(nn, layers):
    class Stacked(nn.Cell):
        def __init__(self):
            super().__init__()
            self.layers = nn.CellList(layers)

        def construct(self, x):
            for layer in self.layers:
                x = layer(x)[0]
            return x
    return Stacked()


def torch_step(net_kind, recompute):
    import torch
    from torch.utils.checkpoint import checkpoint
    rng = np.random.default_rng(0)
    if net_kind == "mlp":
        ws = [[torch.tensor(w, requires_grad=True) for w in pair] for pair in mlp_weights(rng)]
        x = torch.tensor(mlp_input(rng))
        blocks = [lambda a, w=w: torch.tanh(a @ w[0]) @ w[1] + a for w in ws]
        params = [w for pair in ws for w in pair]
    else:
        torch.manual_seed(0)
        lstms = [torch.nn.LSTM(LSTM["hidden"], LSTM["hidden"], batch_first=True)
                 for _ in range(LSTM["layers"])]
        x = torch.tensor(lstm_input(rng))
        blocks = [lambda a, m=m: m(a)[0] for m in lstms]
        params = [p for m in lstms for p in m.parameters()]

    def step():
        a = x
        for b in blocks:
            a = checkpoint(b, a, use_reentrant=False) if recompute else b(a)
        grads = torch.autograd.grad((a * a).sum(), params)
        return [g.numpy() for g in grads]
    return step


def jax_step(net_kind, recompute):
    if net_kind != "mlp":
        return None  # (jax has no LSTM layer: the MLP only)
    import jax
    import jax.numpy as jnp
    rng = np.random.default_rng(0)
    ws = [tuple(jnp.asarray(w) for w in pair) for pair in mlp_weights(rng)]
    x = jnp.asarray(mlp_input(rng))

    def block(a, w):
        return jnp.tanh(a @ w[0]) @ w[1] + a
    blk = jax.checkpoint(block) if recompute else block

    def loss(weights):
        a = x
        for w in weights:
            a = blk(a, w)
        return (a * a).sum()
    grad = jax.jit(jax.grad(loss))
    return lambda: [np.asarray(g) for pair in grad(ws) for g in pair]


STEPS = {"mscc": mscc_step, "torch": torch_step, "jax": jax_step}


# ------------------------------------------------------------------ measuring

def peak_mib(step):
    """The step's peak of heap bytes above those live before it, in MiB (bench/peak_alloc.c,
    preloaded into this worker)."""
    import ctypes
    lib = ctypes.CDLL(os.environ["PEAK_ALLOC_LIB"])
    lib.peak_alloc_bytes.restype = lib.peak_alloc_live.restype = ctypes.c_long
    before = lib.peak_alloc_live()
    lib.peak_alloc_reset()
    step()
    return (lib.peak_alloc_bytes() - before) / 2**20


def build_peak_alloc(out_dir) -> str | None:
    """bench/peak_alloc.c compiled with the system's C compiler, or None without one."""
    import shutil
    import subprocess
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    lib = os.path.join(out_dir, "peak_alloc.so")
    done = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", lib,
                           os.path.join(HERE, "peak_alloc.c")], capture_output=True)
    return lib if done.returncode == 0 else None


def worker(impl, net_kind, recompute, repeat, out):
    step = STEPS[impl](net_kind, recompute)
    if step is None:
        return {"skipped": True}
    first, best, results = harness.timings(step, repeat)
    peak = min(peak_mib(step) for _ in range(3))
    np.savez(out, *results[0])
    return {"first_s": first, "best_s": best, "peak_mib": peak}


# ------------------------------------------------------------------ driver

def rows(args):
    import tempfile
    impls = ["mscc"] + [p for p in PEERS if harness.installed(p)]
    out_dir = tempfile.mkdtemp(prefix="recompute-bench-")
    lib = build_peak_alloc(out_dir)
    if lib is None:
        raise SystemExit("recompute.py needs a C compiler (cc) for bench/peak_alloc.c")
    table = []
    for net_kind in ("mlp", "lstm"):
        for impl in impls:
            got = {}
            for rc in (False, True):
                out = os.path.join(out_dir, f"{impl}-{net_kind}-{rc}.npz")
                row, _ = harness.run_worker(__file__, [impl, net_kind, str(int(rc)),
                                                       str(args.repeat), out], args.timeout,
                                            {"LD_PRELOAD": lib, "PEAK_ALLOC_LIB": lib})
                got[rc] = (row, out)
            table.append(_row(net_kind, impl, got))
    return table


def _row(net_kind, impl, got):
    (plain, p_out), (remat, r_out) = got[False], got[True]
    if plain.get("skipped"):
        return None
    for r in (plain, remat):
        if "error" in r:
            return [net_kind, impl, r["error"], "", "", "", "", ""]
    a, b = np.load(p_out), np.load(r_out)
    err = max(float(np.max(np.abs(a[k] - b[k])) / max(np.max(np.abs(a[k])), 1e-30))
              for k in a.files)
    return [net_kind, impl, f"{plain['peak_mib']:.0f}", f"{remat['peak_mib']:.0f}",
            f"{plain['peak_mib'] / max(remat['peak_mib'], 1e-9):.2f}x",
            f"{plain['best_s'] * 1e3:.1f}", f"{remat['best_s'] * 1e3:.1f}",
            f"{'agree' if err < 1e-4 else 'DIFFER'} ({err:.1e})"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json")
    ap.add_argument("--worker", nargs=5, metavar=("IMPL", "NET", "RECOMPUTE", "REPEAT", "OUT"))
    args = ap.parse_args()
    if args.worker:
        impl, net_kind, rc, repeat, out = args.worker
        print(json.dumps(worker(impl, net_kind, rc == "1", int(repeat), out)))
        return
    table = [r for r in rows(args) if r is not None]
    print(f"CPU: {harness.cpu_description()}")
    print(harness.markdown_table(
        ["net", "framework", "peak MiB plain", "peak MiB recompute", "saving",
         "step ms plain", "step ms recompute", "gradients"], table))
    if args.json:
        harness.save_json(args.json, {"cpu": harness.cpu_description(), "rows": table})


if __name__ == "__main__":
    main()
