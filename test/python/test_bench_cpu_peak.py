"""bench/cpu_peak.py, the FMA roofline of bench/run.py's matmul rows: its program compiles
and reports a rate on 1 thread and on every core (a short run; skipped without a C compiler
or an FMA-capable x86-64 CPU)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import cpu_peak  # noqa: E402


def test_the_peak_program_reports_a_rate_per_thread_count(tmp_path):
    if cpu_peak.vector_isa() is None or not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("needs an x86-64 CPU with FMA and a C compiler")
    out = tmp_path / "peak.json"
    subprocess.run([sys.executable, os.path.join(REPO, "bench", "cpu_peak.py"),
                    "--iterations", "200000", "--json", str(out)], check=True,
                   capture_output=True)
    figures = json.loads(out.read_text())
    cores = figures["cores"]
    assert figures["registers"] in ("zmm", "ymm")
    assert figures["gflops_1_thread"] > 0 and figures[f"gflops_{cores}_threads"] > 0


def test_the_program_has_one_fma_per_accumulator_in_its_loop():
    text = cpu_peak.source("ymm")
    loop = text[text.index('"1:'):text.index('"dec')]
    assert loop.count("vfmadd231ps") == cpu_peak.ACCUMULATORS
    assert "%%ymm0" in loop and "zmm" not in text
