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
