"""MSCC_TIME_REPORT=1: the compiler reports every pass's time, in pipeline order, and the
per-pass run (each upstream pass in a PassManager of its own) compiles the same program."""
import numpy as np

from mscc.passes import pipeline
from mscc.passes.compiler import compile_module, pass_report
from mstest import module_of, op, spec

SPECS = [spec((4, 8), "float32")]


def _tanh_module():
    return module_of(SPECS, lambda x: op("ms.tanh", x))


def test_on_pass_sees_every_step_of_the_stages_in_order():
    seen = []
    pipeline.run_pipeline(_tanh_module(), "cpu", stop_after="llvm",
                          on_pass=lambda step, seconds: seen.append((step.name, seconds)))
    want = [s.name for _, steps in pipeline.stage_steps("cpu")[:5] for s in steps]
    assert [name for name, _ in seen] == want
    assert all(seconds >= 0 for _, seconds in seen)


def test_time_report_lists_the_passes_and_the_program_still_runs(monkeypatch, capsys):
    monkeypatch.setenv("MSCC_TIME_REPORT", "1")
    exe = compile_module(_tanh_module(), "f")
    names = [name for name, _ in exe.pass_times]
    assert names[0] == "ms-verify" and "ms-cpu-parallelize" in names
    err = capsys.readouterr().err
    assert "mscc: compiled 'f' in " in err and pass_report("f", exe.pass_times) in err
    assert "one-shot-bufferize " in err and "{" not in pass_report("f", exe.pass_times)
    x = np.linspace(-2, 2, 32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_allclose(exe(x)[0], np.tanh(x), rtol=1e-5)


def test_a_traced_program_starts_after_the_ms_stage(monkeypatch, capsys):
    """jit hands the compiler its traced module at the `ms` stage: the tracer built every op
    with the shape and dtype rules ms-verify checks, so the first pass is the folding, and
    ms-verify runs once, after it. The program still computes what numpy does."""
    import mscc as ms
    from mscc import ops
    from mscc.pyfront.trace import TRACED_STAGE
    monkeypatch.setenv("MSCC_TIME_REPORT", "1")
    monkeypatch.setenv("MSCC_CACHE_DIR", "")
    assert pipeline.stages_between("cpu", TRACED_STAGE, "ms-opt") == ["ms-opt"]
    f = ms.jit(lambda x: ops.tanh(x) * 2)
    x = np.linspace(-2, 2, 32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_allclose(f(ms.Tensor(x)).asnumpy(), np.tanh(x) * 2, rtol=1e-5)
    report = [line for line in capsys.readouterr().err.splitlines()
              if line.startswith("mscc: passes of")]
    passes = [step.split()[0] for step in report[-1].split("(", 1)[1].split(", ")]
    assert passes[0] == "ms-const-input-to-attr"
    assert passes.count("ms-verify") == 1
