"""The parts of bench/gpu_check.py that need no GPU: the artifact folder, result comparison,
arguments, the report when there is no GPU, and a run against a fake driver (kernels do not
execute there, so numerical checks fail, but every step up to them runs)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from fake_cuda import FakeDriver
from nomlir import BLOCK_MLIR
from mscc.runtime.cuda import Device, is_available

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import build_gpu_artifacts  # noqa: E402
import gpu_check  # noqa: E402

CASES = {"constant_add", "data_movement"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("gpu_artifacts"))
    build_gpu_artifacts.build(out, only=CASES, log=lambda *a: None)
    return out


def test_folder_has_an_index_artifacts_and_data(folder):
    index = gpu_check.read_index(folder)
    assert {c["name"] for c in index["checks"]} == CASES
    for c in index["checks"]:
        data = np.load(os.path.join(folder, c["data"]))
        assert "in0" in data.files and "out0" in data.files
        assert os.path.exists(os.path.join(folder, c["artifact"]))


def test_incomplete_or_foreign_folders_are_refused(folder, tmp_path):
    with pytest.raises(gpu_check.SetupError, match="build the folder with"):
        gpu_check.read_index(str(tmp_path))
    index = json.load(open(os.path.join(folder, "index.json")))
    index["version"] = 99
    (tmp_path / "index.json").write_text(json.dumps(index))
    with pytest.raises(gpu_check.SetupError, match="has version 99"):
        gpu_check.read_index(str(tmp_path))
    index["version"] = gpu_check.INDEX_VERSION
    (tmp_path / "index.json").write_text(json.dumps(index))
    with pytest.raises(gpu_check.SetupError, match="is missing"):
        gpu_check.read_index(str(tmp_path))


def test_compare_is_exact_for_integers_and_toleranced_for_floats():
    ints = np.arange(6, dtype=np.int32)
    assert gpu_check.compare(ints, ints.copy(), {})["ok"]
    off = ints.copy()
    off[4] += 1
    res = gpu_check.compare(off, ints, {})
    assert not res["ok"] and "first at (4,)" in res["why"]
    x = np.linspace(-1, 1, 9, dtype=np.float32)
    assert gpu_check.compare(x * (1 + 1e-6), x, {"float32": (1e-5, 0)})["ok"]
    assert not gpu_check.compare(x * 1.01, x, {"float32": (1e-5, 0)})["ok"]
    assert "expected float32[9]" in gpu_check.compare(x.astype(np.float64), x, {})["why"]


def test_arguments():
    args = gpu_check.parse_args(["dir", "-o", "r.json", "--repeat", "3", "--skip-perf"])
    assert (args.folder, args.output, args.repeat, args.skip_perf) == ("dir", "r.json", 3, True)
    with pytest.raises(SystemExit):
        gpu_check.parse_args(["dir", "--repeat", "0"])


def test_run_against_a_fake_device_reports_every_case(folder, tmp_path):
    out = str(tmp_path / "results.json")
    status = gpu_check.main([folder, "-o", out, "--skip-perf"], dev=Device(FakeDriver()))
    report = json.load(open(out))
    assert status == 1 and report["status"] == "failed"  # kernels do not run on the fake
    assert report["device"] == "FakeGPU"
    assert {c["name"] for c in report["checks"]} == CASES
    for c in report["checks"]:
        assert "error" not in c, c.get("error")
        assert len(c["outputs"]) >= 1


@pytest.mark.skipif(is_available(), reason="a GPU is present: gpu_check would use it")
def test_without_a_gpu_the_report_says_why(folder, tmp_path):
    out = str(tmp_path / "results.json")
    # A fresh interpreter that cannot import mlir: the script needs numpy and this repo only.
    code = (BLOCK_MLIR +
            f"sys.argv = ['gpu_check.py', {folder!r}, '-o', {out!r}]\n"
            "import runpy\n"
            f"runpy.run_path({os.path.join(REPO, 'bench', 'gpu_check.py')!r}, "
            "run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    report = json.load(open(out))
    assert report["status"] == "error" and "cuda" in report["error"].lower()


def test_timed_workloads_run_their_steps_against_a_fake_device(tmp_path):
    """A small chain in place of the 64M one: loading, device inputs, event timing, the copy
    reference and the numpy check all run (the check fails: the fake runs no kernels)."""
    import gpu_cases
    from mscc.passes.artifact import build_artifact
    from mstest import module_of
    case = gpu_cases.CHECKS[0]  # chain_f32
    build_artifact(module_of(case.in_specs, case.body, "chain"), "chain", "cuda").save(
        str(tmp_path / "chain.msx"))
    index = {"perf": [{"name": "chain_small", "artifact": "chain.msx", "bytes": 3 * 4 * 37000,
                       "flops": 0}]}
    result, = gpu_check.run_perf(str(tmp_path), index, Device(FakeDriver()), repeat=2,
                                 log=lambda *a: None)
    assert "error" not in result, result.get("error")
    assert result["ms"] > 0 and result["GB/s"] > 0 and result["copy GB/s"] > 0
    assert result["check"]["ok"] is False and "differ" in result["check"]["why"]
