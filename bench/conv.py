"""Convolution networks, mscc against torch eager (oneDNN), in one run (issue 18):

    python bench/conv.py [--small] [--repeat N] [--json PATH]

- conv 3x3 forward: input 64x16x28x28, 32 output channels, pad_mode "same", with bias;
- a ResNet basic block (conv 3x3 - BatchNorm2d - ReLU - conv 3x3 - BatchNorm2d, + x, ReLU;
  batch 32, 64 channels, 56x56; `--small`: batch 8, 28x28): the forward in inference mode
  (BatchNorm's moving statistics) and one training step (MSE loss to a random target);
- the model zoo's LeNet5 (32x32 inputs, batch 32): one training step (softmax cross-entropy).
A training step is forward, loss, gradients and the Momentum update (lr 0.01, momentum 0.9),
mscc's under ms.jit, written with the public layer API only (nn.Conv2d, nn.BatchNorm2d,
nn.MaxPool2d, nn.Dense, ms.value_and_grad, nn.Momentum): it measures whichever convolution is
in the tree.

Each program runs in its own worker process per framework (an mscc compile that crashes only
loses its row; mscc's and torch's OpenMP threads do not compete) with an empty MSCC_CACHE_DIR.
Times are the best of --repeat calls after two warm-up calls; mscc's compile time is its first
call minus that. The two frameworks start from the same weights and inputs, and the table says
whether their results agree. The ratio is torch time / mscc time: > 1 means mscc is faster.
Nothing is asserted: on a shared 2-core machine the figures are noisy.
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
import nets  # noqa: E402

# How far the second loss of a step may be from torch's, relative, where 1e-3 is too close:
# MobileNetV2's chains of BatchNorm amplify float32 rounding (torch's own float32 second
# loss is 1.1e-3 from its float64 one; mscc's 1.8e-3).
LOSS_RTOL = {"mobilenet_v2_train_step": 5e-3}

PROGRAMS = ("conv3x3_forward", "resnet_block_forward", "resnet_block_train_step",
            "lenet5_train_step", "depthwise3x3_forward", "grouped3x3_forward",
            "mobilenet_block_train_step", "mobilenet_v2_train_step")


def spec(name, small):
    """(title, kind, params, x, y, mscc model builder, torch model builder, loss kind)."""
    rng = np.random.default_rng(0)
    if name == "conv3x3_forward":
        p = nets.conv_params(rng)
        x = rng.standard_normal((64, 16, 28, 28)).astype(np.float32)
        return ("conv 3x3 forward, 64x16x28x28 -> 32 ch, same", "forward", p, x, None,
                nets.ms_conv, nets.torch_conv, None)
    if name.startswith("resnet_block"):
        batch, size = (8, 28) if small else (32, 56)
        p = nets.block_params(rng, 64)
        x, y = nets.regression_data(rng, (batch, 64, size, size))
        kind = "forward" if name.endswith("forward") else "step"
        return (f"ResNet basic block {kind}, {batch}x64x{size}x{size}", kind, p, x, y,
                lambda p: nets.ms_block(p, 64), lambda p: nets.torch_block(p, 64), "mse")
    if name == "depthwise3x3_forward":
        c = 32 if small else 128
        p = nets.conv_params(rng, 1, c)
        x = rng.standard_normal((32, c, 28, 28)).astype(np.float32)
        return (f"depthwise 3x3 forward, 32x{c}x28x28, same, bias", "forward", p, x, None,
                nets.ms_grouped, nets.torch_grouped, None)
    if name == "grouped3x3_forward":  # ResNeXt's kind: 32 groups of 4 channels
        c = 32 if small else 128
        p = nets.conv_params(rng, 4, c)
        x = rng.standard_normal((32, c, 28, 28)).astype(np.float32)
        return (f"grouped 3x3 forward, 32x{c}x28x28, {c // 4} groups, same, bias", "forward",
                p, x, None, nets.ms_grouped, nets.torch_grouped, None)
    if name == "mobilenet_block_train_step":
        batch, size = (8, 28) if small else (32, 28)
        p = nets.inverted_residual_params(rng, 32)
        x, y = nets.regression_data(rng, (batch, 32, size, size))
        return (f"MobileNetV2 block step, {batch}x32x{size}x{size} (x6 expand)", "step", p,
                x, y, nets.ms_inverted_residual, nets.torch_inverted_residual, "mse")
    if name == "mobilenet_v2_train_step":
        batch, size = (8, 32) if small else (32, 64)
        p = nets.mobilenet_v2_params(rng)
        x, y = nets.classifier_data(rng, (batch, 3, size, size))
        return (f"MobileNetV2 train step, {batch}x3x{size}x{size}", "step", p, x, y,
                nets.ms_mobilenet_v2, nets.torch_mobilenet_v2, "ce")
    if name == "lenet5_train_step":
        p = nets.lenet_params(rng)
        x, y = nets.classifier_data(rng, (32, 1, 32, 32))
        return ("LeNet5 train step, 32x1x32x32", "step", p, x, y, nets.ms_lenet,
                nets.torch_lenet, "ce")
    raise SystemExit(f"unknown program {name}")


# ------------------------------------------------------------------ workers

def mscc_call(kind, net, x, y, loss):
    """A no-argument callable for one call, and the function reading its result."""
    import mscc as ms
    tx = ms.Tensor(x)
    if kind == "forward":
        net.set_train(False)
        forward = ms.jit(lambda t: net(t))
        return lambda: forward(tx), lambda out: out.asnumpy()
    step = ms.jit(nets.ms_train_step(net, nets.ms_loss(loss)))
    ty = ms.Tensor(y)
    return lambda: step(tx, ty), lambda out: float(out.asnumpy())


def torch_call(kind, net, x, y, loss):
    import torch
    tx = torch.from_numpy(x)
    if kind == "forward":
        net.eval()

        def forward():
            with torch.inference_mode():
                return net(tx)
        return forward, lambda out: out.numpy()
    step = nets.torch_train_step(net, nets.torch_loss(loss))
    ty = torch.from_numpy(y)
    return lambda: step(tx, ty), lambda out: float(out.detach())


def worker(name, impl, small, repeat, out_dir):
    title, kind, p, x, y, ms_model, torch_model, loss = spec(name, small)
    result = {"name": name, "impl": impl}
    if impl == "mscc":
        import mscc as ms
        from mscc.passes import exe_cache
        ms.set_context(mode=ms.GRAPH_MODE)
        call, read = mscc_call(kind, ms_model(p), x, y, loss)
        # The cache entry is linked in the background: not while the steady state is timed.
        first, best, results = harness.timings(call, repeat, after_first=exe_cache.wait)
        result["compile_s"] = first - best
    else:
        import torch
        call, read = torch_call(kind, torch_model(p), x, y, loss)
        first, best, results = harness.timings(call, repeat)
        result["threads"] = torch.get_num_threads()
    result.update(first_s=first, best_s=best)
    values = [read(r) for r in results]
    if kind == "forward":
        np.save(os.path.join(out_dir, f"{name}.{impl}.npy"), values[0])
    else:
        result["losses"] = values
    print(json.dumps(result))


# ------------------------------------------------------------------ driver

def agreement(kind, name, rows, out_dir):
    """How far mscc's result is from torch's, as text for the table."""
    ms_r, torch_r = rows.get("mscc", {}), rows.get("torch", {})
    if "error" in ms_r or "error" in torch_r or not ms_r or not torch_r:
        return ""
    if kind == "forward":
        got, want = (np.load(os.path.join(out_dir, f"{name}.{i}.npy")) for i in ("mscc", "torch"))
        err = float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))
        return f"{'agree' if err < 1e-4 else 'DIFFER'} (max err {err:.1e} of max)"
    # the first two losses: the second one checks the gradients and the update too
    err = max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(ms_r["losses"], torch_r["losses"]))
    return f"{'agree' if err < LOSS_RTOL.get(name, 1e-3) else 'DIFFER'} (losses within {err:.1e})"


def row_cells(title, rows, check):
    ms_r, torch_r = rows["mscc"], rows.get("torch")

    def ms_time(r):  # errors are listed under the table
        return "error" if "error" in r else f"{r['best_s'] * 1e3:.2f}"
    ratio = ""
    if torch_r and "best_s" in torch_r and "best_s" in ms_r:
        ratio = f"{torch_r['best_s'] / ms_r['best_s']:.2f}x"
    torch_cell = "not installed" if torch_r is None else ms_time(torch_r)
    compile_cell = f"{ms_r['compile_s']:.2f}" if "compile_s" in ms_r else ""
    return [title, ms_time(ms_r), torch_cell, ratio, compile_cell, check]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("programs", nargs="*", help=f"default: all of {', '.join(PROGRAMS)}")
    ap.add_argument("--small", action="store_true",
                    help="ResNet block at batch 8, 28x28 instead of batch 32, 56x56")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--json", metavar="PATH", help="save the figures there")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        name, impl, out_dir = args.worker
        return worker(name, impl, args.small, args.repeat, out_dir)
    import shutil
    import tempfile
    impls = ["mscc"] + (["torch"] if harness.installed("torch") else [])
    if "torch" not in impls:
        print("torch: not installed")
    out_dir = tempfile.mkdtemp(prefix="mscc-bench-conv-")
    table, record = [], []
    for name in args.programs or PROGRAMS:
        title, kind = spec(name, args.small)[:2]
        rows = {}
        for impl in impls:
            extra = ["--small"] if args.small else []
            rows[impl], _ = harness.run_worker(__file__, [name, impl, out_dir, "--repeat",
                                                         str(args.repeat)] + extra, args.timeout)
            if "error" in rows[impl]:
                print(f"{name} ({impl}) failed: {rows[impl]['error']}", flush=True)
        check = agreement(kind, name, rows, out_dir)
        table.append(row_cells(title, rows, check))
        record.append({"name": name, "title": title, "check": check, **rows})
    shutil.rmtree(out_dir, ignore_errors=True)  # the forward outputs, compared above
    report(table, record, args)


def report(table, record, args):
    cpu = harness.cpu_description()
    torch_version = harness.peer_version("torch")
    print(f"\nCPU: {cpu}; torch {torch_version or 'not installed'} (eager, oneDNN); "
          f"best of {args.repeat} calls; {'--small' if args.small else 'full'} sizes. "
          "Shared machine: figures are noisy.\n")
    print(harness.markdown_table(["program", "mscc ms", "torch ms", "torch/mscc",
                                 "mscc compile s", "mscc vs torch"], table))
    errors = [f"- {r['name']} ({impl}): {r[impl]['error']}" for r in record
              for impl in ("mscc", "torch") if "error" in r.get(impl, {})]
    if errors:
        print("\nerrors:\n" + "\n".join(errors))
    if args.json:
        harness.save_json(args.json, {"cpu": cpu, "torch": torch_version, "small": args.small,
                                     "repeat": args.repeat, "rows": record})


if __name__ == "__main__":
    main()
