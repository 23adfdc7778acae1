"""Fuzz mscc's functional ops (`mscc.ops`) with the arguments a user gets wrong.

    python bench/fuzz_api.py --calls 2000 --seed 0 [--mode pynative|graph|both] [--show 5]

Every call draws an op of `mscc.ops` and, for each of its parameters, a value from a pool of
what users pass: Tensors of several shapes and dtypes (empty and 0-d ones too), Python
numbers and booleans, tuples and lists of axes or sizes, None, a string, a dtype. The call
runs eagerly (PyNative) and inside `ms.jit` (its Tensor arguments traced). The contract
(DESIGN.md): a result, or a TypeError, ValueError or IndexError (a user mistake) whose
message names the user's line; never another exception (an internal error), a crash of the
process or a hang; and where both modes give a result, the same one (shapes, dtypes and
values; `modes-differ` otherwise). Prints the counts of each outcome and the first few offenders of each bad
kind, with the call that made them.

Calls run in worker subprocesses, many per worker: a signal kills only its worker, which the
parent notices, records against the call it was running, and restarts after it.
test/python/test_fuzz_api.py runs a small, seeded share of the same calls.
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import select
import subprocess
import sys
import time
from collections import Counter

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_ERRORS = ("TypeError", "ValueError", "IndexError")
OUTCOMES = ("ok", "user-error", "unlocated-user-error", "unsupported", "too-large", "internal",
            "modes-differ", "signal", "timeout")
BAD = ("internal", "modes-differ", "signal", "timeout")
CALL_TIMEOUT_S = 60.0
# Ops whose calls are not about their arguments (they take functions, print, or draw random
# numbers whose results differ between the modes) or that the API documents as wrappers.
SKIPPED = frozenset(("GradOperation", "grad", "value_and_grad", "vmap", "partial", "cond",
                     "add_flags", "print_", "depend", "make_range", "dtype", "shape", "rank",
                     "size", "tuple_len"))
# Ops that draw random numbers: their two modes' results are not compared.
RANDOM = frozenset(("uniform", "standard_normal", "dropout", "choice_with_mask", "nn.Dropout",
                    "nn.Dropout2d"))

# ------------------------------------------------------------------ calls

# Argument values, by name: the worker builds the Tensors from these descriptions, so a call
# is a JSON-able list of names.
_TENSORS = {
    "f32[]": ((), "float32"), "f32[3]": ((3,), "float32"), "f32[2,3]": ((2, 3), "float32"),
    "f32[1,3]": ((1, 3), "float32"), "f32[3,2]": ((3, 2), "float32"),
    "f32[2,3,4]": ((2, 3, 4), "float32"), "f32[1,2,5,5]": ((1, 2, 5, 5), "float32"),
    "f32[2,2,3,3,3]": ((2, 2, 3, 3, 3), "float32"), "f32[0,3]": ((0, 3), "float32"),
    "f16[2,3]": ((2, 3), "float16"), "f64[2,3]": ((2, 3), "float64"),
    "i32[2,3]": ((2, 3), "int32"), "i32[3]": ((3,), "int32"), "i64[2]": ((2,), "int64"),
    "i32[]": ((), "int32"), "bool[2,3]": ((2, 3), "bool"), "u8[3]": ((3,), "uint8"),
}
# Tensors of special values: float ones hold nan, infinities, zeros of both signs and huge
# and tiny numbers; integer ones zeros, -1 and the extremes of their type.
_SPECIAL = {
    "f32s[2,4]": np.array([[np.nan, np.inf, -np.inf, 0.0], [-0.0, 1e30, -1e-30, 3.0]],
                          np.float32),
    "i32s[2,3]": np.array([[0, -1, 2**31 - 1], [-2**31, 7, 0]], np.int32),
    "i64s[3]": np.array([0, -(2**63), 2**63 - 1], np.int64),
    "u8s[3]": np.array([0, 255, 1], np.uint8),
}
_PYTHON = {
    "0": 0, "1": 1, "2": 2, "3": 3, "-1": -1, "-5": -5, "100": 100, "2**40": 2 ** 40,
    "2**70": 2 ** 70, "1.5": 1.5, "-0.5": -0.5, "nan": float("nan"), "True": True,
    "False": False, "None": None, "'x'": "x", "''": "", "()": (), "(1,)": (1,),
    "(2,3)": (2, 3), "(3,2)": (3, 2), "(0,)": (0,), "(-1,)": (-1,), "(1,1)": (1, 1),
    "(6,)": (6,), "(2,-1)": (2, -1), "[0,1]": [0, 1], "(0,1)": (0, 1), "(1,0)": (1, 0),
    "(5,5,5)": (5, 5, 5), "[[1]]": [[1]], "{}": {},
}
_DTYPES = ("ms.float32", "ms.int32", "ms.bool_", "ms.float16")
_SIZES = ("1", "2", "3", "(2,3)", "(1,1)", "0", "-1", "True", "False", "'same'", "'valid'",
          "'pad'", "None", "1.5")
_PYTHON.update({"'same'": "same", "'valid'": "valid", "'pad'": "pad"})
INPUTS = "__inputs__"  # (the key of a layer call's inputs)
# Cells that are not layers: containers and wrappers of other cells, bases.
NOT_LAYERS = frozenset(("Cell", "CellDict", "CellList", "SequentialCell", "TrainOneStepCell",
                        "WithEvalCell", "WithLossCell", "DistributedGradReducer", "LossBase"))
VALUES = tuple(_TENSORS) + tuple(_SPECIAL) + tuple(_PYTHON) + _DTYPES
_ALL_TENSORS = tuple(_TENSORS) + tuple(_SPECIAL)


def calls(n: int, seed: int, kind: str = "ops") -> list[tuple[str, list[str], dict]]:
    """`n` calls (op name, positional value names, keyword value names), the same for the same
    seed: each required parameter gets a value (a Tensor first more often than not), and
    each optional one a value one time in four. `kind` "layers": constructions of nn layers
    instead (`nn.<Name>`), the Tensors each is called with under the key INPUTS."""
    rng = random.Random(seed)
    ops = op_table() if kind == "ops" else layer_table()
    names = sorted(ops)
    out = []
    for _ in range(n):
        name = rng.choice(names)
        args, kwargs = [], {}
        params, inputs = ops[name] if kind == "layers" else (ops[name], 0)
        for i, (param, required) in enumerate(params):
            if not required and rng.random() >= 0.25:
                continue
            tensor_first = i == 0 and kind == "ops" and rng.random() < 0.7
            value = rng.choice(_ALL_TENSORS if tensor_first else
                               _SIZES if kind == "layers" and rng.random() < 0.6 else VALUES)
            if required:
                args.append(value)
            else:
                kwargs[param] = value
        if kind == "layers":
            kwargs[INPUTS] = [rng.choice(_ALL_TENSORS) for _ in range(inputs)]
        out.append((name, args, kwargs))
    return out


def layer_table() -> dict[str, tuple[list[tuple[str, bool]], int]]:
    """nn.<Name> -> ([(constructor parameter, required)], the Tensors its call takes) for the
    layers of mscc.nn (not the optimizers, schedules and wrappers of other cells)."""
    from mscc import nn
    table = {}
    for name in dir(nn):
        cls = getattr(nn, name)
        if not (inspect.isclass(cls) and issubclass(cls, nn.Cell)) or name in NOT_LAYERS \
                or issubclass(cls, (nn.Optimizer, nn.LearningRateSchedule)):
            continue
        init = [p for p in inspect.signature(cls.__init__).parameters.values()][1:]
        call = [p for p in inspect.signature(cls.construct).parameters.values()][1:]
        table[f"nn.{name}"] = (
            [(p.name, p.default is inspect.Parameter.empty) for p in init
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)],
            sum(p.default is inspect.Parameter.empty and p.kind == p.POSITIONAL_OR_KEYWORD
                for p in call))
    return table


def op_table() -> dict[str, list[tuple[str, bool]]]:
    """op name -> [(parameter, required)] for the functional ops of mscc.ops."""
    from mscc import ops
    table = {}
    for name in dir(ops):
        fn = getattr(ops, name)
        if name.startswith("_") or name in SKIPPED or inspect.isclass(fn) or not callable(fn):
            continue
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            continue
        table[name] = [(p.name, p.default is inspect.Parameter.empty) for p in params
                       if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD,
                                     p.KEYWORD_ONLY)]
    return table


def describe(call) -> str:
    name, args, kwargs = call
    inputs = kwargs.get(INPUTS)
    text = ", ".join(args + [f"{k}={v}" for k, v in kwargs.items() if k != INPUTS])
    if inputs is None:
        return f"ops.{name}({text})"
    return f"{name}({text})({', '.join(inputs)})"


# ------------------------------------------------------------------ running one call

def _value(name: str):
    import numpy as np

    import mscc as ms
    if name in _TENSORS:
        shape, dtype = _TENSORS[name]
        rng = np.random.default_rng(len(name))
        data = rng.uniform(-2, 2, shape) if dtype.startswith("f") else rng.integers(0, 3, shape)
        return ms.Tensor(data.astype(dtype))
    if name in _SPECIAL:
        return ms.Tensor(_SPECIAL[name].copy())
    if name in _PYTHON:
        value = _PYTHON[name]
        return list(value) if isinstance(value, list) else value
    return getattr(ms, name.split(".")[1])


def run_call(call, mode: str) -> tuple[str, str, list | None]:
    """(outcome, message, results as numpy arrays) of one call in `mode` ("pynative" or
    "graph": under ms.jit)."""
    import mscc as ms
    from mscc import ops
    name, args, kwargs = call
    values = [_value(a) for a in args]
    kw = {k: _value(v) for k, v in kwargs.items() if k != INPUTS}
    try:
        if INPUTS in kwargs:  # a layer: made eagerly, called with its inputs
            fn, values, kw = _layer(name, values, kw), [_value(a) for a in kwargs[INPUTS]], {}
        else:
            fn = getattr(ops, name)
        if mode == "graph":
            tensors = [i for i, v in enumerate(values) if isinstance(v, ms.Tensor)]

            def traced(*ts):
                full = list(values)
                for i, t in zip(tensors, ts):
                    full[i] = t
                return fn(*full, **kw)
            out = ms.jit(traced)(*[values[i] for i in tensors])
        else:
            out = fn(*values, **kw)
    except NotImplementedError as e:
        return "unsupported", _first_line(e), None
    except MemoryError as e:  # (a result too large for the machine: Python's own error)
        return "too-large", _first_line(e), None
    except Exception as e:  # noqa: BLE001  (what escapes is what we look for)
        kind = type(e).__name__
        text = f"{kind}: {_first_line(e)}"
        if isinstance(e, (TypeError, ValueError, IndexError)) and not _internal(e):
            return ("user-error" if "(at " in str(e) else "unlocated-user-error"), text, None
        return "internal", text, None
    return "ok", "", _arrays(out)


def _extreme(call) -> bool:
    """Whether the call takes a Tensor of special values (_SPECIAL)."""
    _, args, kwargs = call
    named = list(args) + [v for k, v in kwargs.items() if k != INPUTS] + kwargs.get(INPUTS, [])
    return any(a in _SPECIAL for a in named)


def _layer(name, values, kw):
    """The layer, its weights the same for the same call (both modes compare their results)."""
    import mscc as ms
    from mscc import nn
    ms.set_seed(1234)
    return getattr(nn, name.split(".", 1)[1])(*values, **kw)


def _arrays(out) -> list:
    """The results as numpy arrays (nested tuples flattened; Python values as 0-d arrays)."""
    import numpy as np
    if isinstance(out, (tuple, list)):
        return [a for o in out for a in _arrays(o)]
    try:
        return [np.asarray(out)]
    except Exception:  # noqa: BLE001  (a result numpy cannot hold: compared by type only)
        return [np.asarray(type(out).__name__)]


def modes_differ(a: list, b: list, values: bool = True) -> str:
    """Why the results of the two modes differ ("" where they agree). Without `values`, float
    results are compared by where they are nan and infinite only (the inputs held extreme
    values, whose sums and products round differently in fused and unfused code)."""
    import numpy as np
    if len(a) != len(b):
        return f"{len(a)} results eagerly, {len(b)} under jit"
    for k, (x, y) in enumerate(zip(a, b)):
        if x.shape != y.shape or x.dtype != y.dtype:
            return f"result {k}: {x.dtype}{list(x.shape)} eagerly, {y.dtype}{list(y.shape)} under jit"
        if x.dtype.kind in "fc":
            # (nan and infinities where the other has them; finite values close, except
            # beyond 1e10, where extreme inputs leave rounding noise of fused and unfused code)
            finite = np.isfinite(x) & np.isfinite(y) & (np.abs(x) < 1e10) & (np.abs(y) < 1e10)
            same = (np.array_equal(np.isnan(x), np.isnan(y))
                    and np.array_equal(np.isposinf(x), np.isposinf(y))
                    and np.array_equal(np.isneginf(x), np.isneginf(y))
                    and (not values or np.allclose(x[finite], y[finite], rtol=1e-5, atol=1e-6)))
        else:
            same = np.array_equal(x, y)
        if not same:
            return f"result {k}: values differ (eagerly {x.ravel()[:4]}, under jit {y.ravel()[:4]})"
    return ""


def _internal(e) -> bool:
    from mscc.passes.diagnostics import CompileError
    return isinstance(e, CompileError) or "internal compiler error" in str(e)


def _first_line(e) -> str:
    text = str(e).strip()
    return (text.splitlines() or [""])[0][:300]


# ------------------------------------------------------------------ workers

def worker(n: int, seed: int, mode: str, start: int, kind: str = "ops"):
    """Run calls [start:] of calls(n, seed, kind) in this process, one JSON line per finished
    call."""
    import warnings
    warnings.simplefilter("ignore")
    import mscc as ms
    todo = calls(n, seed, kind)
    for i in range(start, len(todo)):
        results = {}
        for m in (("pynative", "graph") if mode == "both" else (mode,)):
            ms.set_context(mode=ms.PYNATIVE_MODE)
            outcome, message, results[m] = run_call(todo[i], m)
            if m == "graph" and outcome == "ok" and results.get("pynative") is not None \
                    and todo[i][0] not in RANDOM:
                message = modes_differ(results["pynative"], results["graph"],
                                       not _extreme(todo[i]))
                outcome = "modes-differ" if message else outcome
            print(json.dumps([i, m, outcome, message]), flush=True)


def run(n: int, seed: int, mode: str = "both", timeout=CALL_TIMEOUT_S,
        kind: str = "ops") -> list[tuple]:
    """(call index, mode, outcome, message) for every call of calls(n, seed, kind),
    restarting the worker after a call that killed it or ran past `timeout`."""
    results, start = [], 0
    modes = ("pynative", "graph") if mode == "both" else (mode,)
    while start < n:
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", str(n),
                                 str(seed), mode, str(start), kind], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, cwd=REPO)
        done, last = set(), time.monotonic()
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                line = proc.stdout.readline()
                if not line:
                    break
                try:
                    i, m, outcome, message = json.loads(line)
                except ValueError:  # (something the call printed itself)
                    continue
                results.append((i, m, outcome, message))
                done.add((i, m))
                last = time.monotonic()
            elif time.monotonic() - last > timeout:
                proc.kill()
                proc.wait()
                break
        rc = proc.wait()
        finished = {i for i in range(start, n) if all((i, m) in done for m in modes)}
        start = max(finished, default=start - 1) + 1
        if start < n and rc != 0:  # the call at `start` killed the worker (or hung)
            lost = "timeout" if rc == -9 else "signal"
            results += [(start, m, lost, f"exit {rc}") for m in modes if (start, m) not in done]
            start += 1
        elif start < n:
            break
    return results


def report(results, todo, show=3) -> str:
    counts = Counter(r[2] for r in results)
    lines = [f"{len(results)} runs: " + ", ".join(f"{k} {counts.get(k, 0)}" for k in OUTCOMES)]
    seen = set()
    for kind in BAD + ("unlocated-user-error",):
        shown = 0
        for i, m, outcome, message in results:
            key = (kind, message.split(":")[0], message[:60])
            if outcome != kind or key in seen or shown >= show:
                continue
            seen.add(key)
            shown += 1
            lines.append(f"  {kind} [{m}] {describe(todo[i])}: {message[:240]}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mode", choices=("pynative", "graph", "both"), default="both")
    p.add_argument("--show", type=int, default=3, help="offenders shown per bad outcome")
    p.add_argument("--layers", action="store_true",
                   help="construct and call nn layers instead of functional ops")
    p.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        n, seed, mode, start, kind = args.worker
        worker(int(n), int(seed), mode, int(start), kind)
        return 0
    t0 = time.perf_counter()
    kind = "layers" if args.layers else "ops"
    results = run(args.calls, args.seed, args.mode, kind=kind)
    print(report(results, calls(args.calls, args.seed, kind), args.show))
    print(f"{args.calls} calls (seed {args.seed}) in {time.perf_counter() - t0:.1f} s")
    return 1 if any(r[2] in BAD for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
