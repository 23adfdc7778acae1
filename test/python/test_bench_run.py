"""bench/run.py and bench/programs.py without timing anything: the report's columns and ratios
from made-up rows, the implementations' availability, and the peers' programs (each torch
version has a jax twin; the jax training step matches numpy's)."""
import importlib.util
import os
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import programs  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_run", os.path.join(REPO, "bench", "run.py"))
run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run)


def _row(name, impl, seconds, **extra):
    return {"name": name, "impl": impl, "median_s": seconds, "min_s": seconds, "calls": 3,
            **extra}


def test_report_has_every_peer_and_the_ratio_to_the_best():
    b, c = programs.BY_NAME["softmax_4096x1024"], programs.BY_NAME["call_add4_kwargs"]
    rows = [_row(b.name, "numpy", 8e-3), _row(b.name, "torch", 2e-3, correct=True),
            _row(b.name, "torch_compile", 1.5e-3, correct=True, compile_s=12.0),
            _row(b.name, "jax", 3e-3, correct=True, compile_s=0.1),
            _row(b.name, "mscc", 1e-3, correct=True, compile_s=0.2),
            _row(c.name, "numpy", 0.3e-6), _row(c.name, "torch", 2e-6, correct=True),
            {"name": c.name, "impl": "jax", "error": ["boom"]},
            _row(c.name, "mscc", 2e-6, correct=False, max_abs_err=1.0)]
    text = run.report(rows, [b, c], run.IMPLS, cpu="Test CPU 9000 (2 cores)")
    lines = text.splitlines()
    assert lines[0] == "CPU: Test CPU 9000 (2 cores)"
    head = lines[1].split()
    for col in ("numpy", "torch", "torch.compile", "jax", "mscc", "best", "peer", "numpy"):
        assert col in head
    assert head.index("numpy") < head.index("torch") < head.index("torch.compile") \
        < head.index("jax") < head.index("mscc")
    soft = next(ln for ln in lines if ln.startswith(b.name))
    assert "1.50x" in soft and "torch.compile" in soft  # best peer 1.5 ms over mscc's 1 ms
    assert "8.00x" in soft  # x numpy
    assert "8.000ms" in soft and "2.000ms" in soft and "3.000ms" in soft
    call = next(ln for ln in lines if ln.startswith(c.name))
    assert "2.00us" in call and "0.30us" in call and "<=2.5us" in call
    assert "numpy" in call.split("<=")[0]  # the best peer
    assert "jax failed: boom" in call and "mscc WRONG" in call
    assert "error" in call and call.split()[3] == "-"  # jax errored; torch.compile not run


def test_a_wrong_peer_is_not_the_best():
    b = programs.BY_NAME["matmul_512"]
    rows = [_row(b.name, "numpy", 2e-3), _row(b.name, "jax", 1e-4, correct=False,
                                               max_abs_err=3.0), _row(b.name, "mscc", 1e-3)]
    by = {(r["name"], r["impl"]): r for r in rows}
    assert run.best_peer(by, b.name) == ("numpy", 2e-3)
    assert "jax WRONG" in run.report(rows, [b], cpu="x")


def test_implementations_and_their_availability(monkeypatch):
    assert set(run.IMPLS) == {"numpy", "torch", "torch_compile", "jax", "mscc"}
    b = programs.BY_NAME["softmax_4096x1024"]
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("torch", "jax") else real(name, *a))
    assert run.available(b, "torch") == "torch not installed"
    assert run.available(b, "torch_compile") == "torch not installed"
    assert run.available(b, "jax") == "jax not installed"
    assert run.available(b, "numpy") is None and run.available(b, "mscc") is None
    assert "unknown" in run.available(b, "tensorflow")


def test_every_torch_benchmark_has_a_jax_version():
    for b in programs.BENCHMARKS:
        if b.torch is not None:
            assert b.jax is not None, b.name


def test_the_call_overhead_rows():
    rows = {b.name: b for b in programs.BENCHMARKS if b.goal_kind == "max_us"}
    assert set(rows) == {"call_add4_tensors", "call_add4_numpy", "call_add4_kwargs"}
    assert rows["call_add4_tensors"].goal == 1.5 and rows["call_add4_tensors"].call == "tensors"
    assert rows["call_add4_numpy"].goal == 2.5 and rows["call_add4_numpy"].call == "numpy"
    assert rows["call_add4_kwargs"].goal == 2.5 and rows["call_add4_kwargs"].keywords
    b = rows["call_add4_kwargs"]
    args, kwargs = run.arguments(b, b.inputs())
    assert args == () and set(kwargs) == set(b.keywords)
    np.testing.assert_array_equal(b.numpy(**kwargs), b.numpy(*b.inputs()))


def test_the_cpu_model_is_named():
    assert run.cpu_model().strip()


def test_jax_training_step_matches_numpy():
    pytest.importorskip("jax")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax.numpy as jnp
    b = programs.BY_NAME["mlp_train_step_784_512_10_b256"]
    inputs = b.inputs()
    got = b.jax(jnp, *[jnp.asarray(a) for a in inputs])
    want = b.numpy(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in inputs])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=b.rtol, atol=b.atol)


def test_each_implementation_keeps_its_best_round(monkeypatch):
    """Rounds alternate the implementations' order; each keeps its fastest correct round."""
    import argparse
    calls = []
    times = {("numpy", 0): 3.0, ("mscc", 0): 1.0, ("numpy", 1): 2.0, ("mscc", 1): 4.0,
             ("torch", 0): 1.0, ("torch", 1): 0.5}

    def fake_run_one(name, impl, repeat, timeout):
        r = sum(1 for i, _ in calls if i == impl)
        calls.append((impl, r))
        if impl == "torch" and r == 1:  # faster, but wrong: the correct round stays
            return _row(name, impl, times[impl, r], correct=False)
        return _row(name, impl, times[impl, r], correct=True)
    monkeypatch.setattr(run, "run_one", fake_run_one)
    args = argparse.Namespace(rounds=2, repeat=3, timeout=10)
    got = run.best_rounds("row", ["numpy", "torch", "mscc"], args)
    assert [i for i, _ in calls] == ["numpy", "torch", "mscc", "mscc", "torch", "numpy"]
    assert [(g["impl"], g["median_s"]) for g in got] == [("numpy", 2.0), ("torch", 1.0),
                                                         ("mscc", 1.0)]
