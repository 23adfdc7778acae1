"""Executable artifacts: CPU save/load round trips against numpy, manifest validation, and
running an artifact where MLIR cannot be imported."""
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import mscc.runtime
from mscc.passes.artifact import build_artifact
from mscc.runtime.artifact import FORMAT_VERSION, ArtifactError, read
from mscc.runtime.calls import CallError
from mstest import assert_matches, module_of, op, spec

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def mlp(x, w, b):
    h = op("ms.relu", op("ms.add", op("ms.matmul", x, w, transpose_a=False,
                                      transpose_b=False), b))
    return op("ms.softmax", h, axis=-1), op("ms.reduce_sum", h, axis=(0,), keep_dims=False)


MLP_SPECS = [spec((8, 16), "float32"), spec((16, 32), "float32"), spec((32,), "float32")]


def mlp_ref(x, w, b):
    h = np.maximum(x.astype(np.float64) @ w + b, 0)
    e = np.exp(h - h.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True), h.sum(0)


@pytest.fixture(scope="module")
def cpu_msx(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("msx") / "mlp.msx")
    build_artifact(module_of(MLP_SPECS, mlp), "f", "cpu").save(path)
    return path


@pytest.fixture(scope="module")
def cuda_msx(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("msx") / "mlp_cuda.msx")
    build_artifact(module_of(MLP_SPECS, mlp), "f", "cuda").save(path)
    return path


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s.shape).astype(np.float32) for s in MLP_SPECS]


def test_cpu_round_trip_matches_numpy(cpu_msx):
    exe = mscc.runtime.load(cpu_msx)
    for seed in (0, 1):
        args = inputs(seed)
        got = exe(*args)
        for g, w in zip(got, mlp_ref(*args)):
            assert_matches(g, w.astype(np.float32))


def test_cpu_artifact_with_parallel_loops(tmp_path):
    """Large loops run on OpenMP threads; the library names the runtime by soname and the
    loader preloads it."""
    from mscc.runtime.openmp import openmp_library
    if openmp_library() is None:
        pytest.skip("no OpenMP runtime (intel-openmp) installed: code is sequential")
    specs = [spec((1024, 1024), "float32")]
    path = str(tmp_path / "big.msx")
    build_artifact(module_of(specs, lambda x: op("ms.add", op("ms.tanh", x), x)), "f",
                   "cpu").save(path)
    art = read(path)
    assert art.manifest["cpu"]["openmp"] is True
    x = np.random.default_rng(3).standard_normal((1024, 1024)).astype(np.float32)
    got, = art.load()(x)
    np.testing.assert_allclose(got, np.tanh(x) + x, rtol=1e-5, atol=1e-6)


def test_manifest_describes_the_entry(cpu_msx):
    art = read(cpu_msx)
    m = art.manifest
    assert (m["format"], m["version"], m["target"], m["entry"]) == (
        "mscc-executable", FORMAT_VERSION, "cpu", "f")
    assert m["inputs"] == [{"shape": [8, 16], "dtype": "float32"},
                           {"shape": [16, 32], "dtype": "float32"},
                           {"shape": [32], "dtype": "float32"}]
    assert m["outputs"] == [{"shape": [8, 32], "dtype": "float32"},
                            {"shape": [32], "dtype": "float32"}]
    assert m["cpu"]["symbol"] == "_mlir_ciface_f" and m["cpu"]["library"] in art.blobs


@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool", "float16"])
def test_cpu_round_trip_other_dtypes(tmp_path, dtype):
    path = str(tmp_path / "t.msx")
    body = (lambda x: op("ms.logical_not", x)) if dtype == "bool" else (
        lambda x: op("ms.maximum", op("ms.transpose", x, perm=(1, 0)),
                     op("ms.transpose", x, perm=(1, 0))))
    build_artifact(module_of([spec((3, 4), dtype)], body), "f", "cpu").save(path)
    x = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    got, = mscc.runtime.load(path)(x)
    assert_matches(got, np.logical_not(x) if dtype == "bool" else x.T)


def test_cpu_strided_copies_need_no_mlir_runtime(tmp_path):
    """concat writes through strided views: memref.copy lowers to memrefCopy, which the
    library carries itself (cpu_support.c)."""
    path = str(tmp_path / "c.msx")
    build_artifact(module_of([spec((2, 3), "float32"), spec((2, 5), "float32")],
                             lambda a, b: op("ms.concat", a, b, axis=1)), "f", "cpu").save(path)
    a, b = np.ones((2, 3), np.float32), np.arange(10, dtype=np.float32).reshape(2, 5)
    got, = mscc.runtime.load(path)(a, b)
    np.testing.assert_array_equal(got, np.concatenate([a, b], 1))


def test_wrong_input_shapes_are_rejected(cpu_msx):
    exe = mscc.runtime.load(cpu_msx)
    args = inputs()
    args[1] = np.ones((16, 31), np.float32)
    with pytest.raises(CallError, match=r"input #1 of 'f' has shape \(16, 31\), expected "
                                        r"\(16, 32\)"):
        exe(*args)
    with pytest.raises(CallError, match="takes 3 inputs, got 2"):
        exe(*args[:2])


def rewrite(path, out, edit_manifest=None, drop=()):
    with zipfile.ZipFile(path) as z:
        files = {n: z.read(n) for n in z.namelist()}
    manifest = json.loads(files["manifest.json"])
    if edit_manifest:
        edit_manifest(manifest)
    files["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(out, "w") as z:
        for n, data in files.items():
            if n not in drop:
                z.writestr(n, data)
    return str(out)


def test_wrong_format_version_is_rejected(cpu_msx, tmp_path):
    bad = rewrite(cpu_msx, tmp_path / "v.msx", lambda m: m.update(version=FORMAT_VERSION + 1))
    with pytest.raises(ArtifactError, match=f"format version {FORMAT_VERSION + 1} is not "
                                            f"supported by this runtime"):
        mscc.runtime.load(bad)


def test_missing_kernel_is_rejected(cuda_msx, tmp_path):
    def drop_kernel(m):
        m["cuda"]["kernels"] = m["cuda"]["kernels"][1:]
    bad = rewrite(cuda_msx, tmp_path / "k.msx", drop_kernel)
    kernel = read(cuda_msx).plan().kernels()[0]
    with pytest.raises(ArtifactError, match=f"kernel '{kernel}' used by the launch plan is "
                                            "missing"):
        read(bad)


def test_kernel_missing_from_the_ptx_is_rejected(cuda_msx, tmp_path):
    art = read(cuda_msx)
    kernel = art.plan().kernels()[-1]
    ptx = art.blobs["kernels.ptx"].replace(f".entry {kernel}(".encode(), b".entry other(")
    bad = rewrite(cuda_msx, tmp_path / "p.msx", drop=("kernels.ptx",))
    with zipfile.ZipFile(bad, "a") as z:
        z.writestr("kernels.ptx", ptx)
    with pytest.raises(ArtifactError, match=f"kernel '{kernel}'"):
        read(bad)


def test_missing_library_and_garbage_files_are_rejected(cpu_msx, tmp_path):
    lib = read(cpu_msx).manifest["cpu"]["library"]
    bad = rewrite(cpu_msx, tmp_path / "l.msx", drop=(lib,))
    with pytest.raises(ArtifactError, match="shared library .* is missing"):
        read(bad)
    junk = tmp_path / "junk.msx"
    junk.write_bytes(b"not a zip")
    with pytest.raises(ArtifactError, match="not a zip file"):
        read(str(junk))
    with pytest.raises(ArtifactError, match="no such file"):
        read(str(tmp_path / "absent.msx"))


def test_library_for_another_architecture_is_rejected(cpu_msx, tmp_path):
    bad = rewrite(cpu_msx, tmp_path / "a.msx", lambda m: m["cpu"].update(machine="riscv64"))
    with pytest.raises(ArtifactError, match="built for riscv64"):
        mscc.runtime.load(bad)


def test_plan_inconsistent_with_the_manifest_is_rejected(cuda_msx, tmp_path):
    bad = rewrite(cuda_msx, tmp_path / "s.msx",
                  lambda m: m["inputs"][0].update(shape=[8, 17]))
    with pytest.raises(ArtifactError, match=r"input #0: plan buffer float32\[8, 16\] does "
                                            "not match"):
        read(bad)


def test_cuda_artifact_keeps_ptx_and_plan(cuda_msx):
    art = read(cuda_msx)
    cuda = art.manifest["cuda"]
    assert cuda["arch"] == "sm_90" and art.blobs["kernels.ptx"].startswith(b"//")
    assert b".target sm_90" in art.blobs["kernels.ptx"]
    assert set(cuda["kernels"]) == set(art.plan().kernels())


BLOCK_MLIR = """
import sys
class _NoMlir:
    def find_spec(self, name, path=None, target=None):
        if name == "mlir" or name.startswith("mlir."):
            raise ImportError("mlir is blocked in this test")
sys.meta_path.insert(0, _NoMlir())
"""


def run_without_mlir(code):
    """Run `code` in a fresh interpreter (same environment) where `import mlir` fails."""
    return subprocess.run([sys.executable, "-c", BLOCK_MLIR + textwrap.dedent(code)],
                          capture_output=True, text=True, cwd=REPO)


def test_runtime_runs_cpu_artifacts_without_mlir(cpu_msx):
    args = inputs(3)
    np.savez(cpu_msx + ".npz", *args)
    proc = run_without_mlir(f"""
        import numpy as np
        try:
            import mlir
        except ImportError:
            pass
        else:
            raise SystemExit("the mlir block did not work")
        import mscc, mscc.runtime
        exe = mscc.runtime.load({cpu_msx!r})
        data = np.load({cpu_msx + '.npz'!r})
        outs = exe(*[data[k] for k in sorted(data.files, key=lambda k: int(k.split('_')[1]))])
        np.save({cpu_msx + '.out.npy'!r}, outs[0])
        assert not any(m == "mlir" or m.startswith("mlir.") for m in sys.modules)
        print("ok")
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert_matches(np.load(cpu_msx + ".out.npy"), mlp_ref(*args)[0].astype(np.float32))


def test_importing_mscc_and_the_cuda_runtime_imports_no_mlir(cuda_msx):
    proc = run_without_mlir(f"""
        import mscc, mscc.runtime, mscc.runtime.cuda, mscc.runtime.artifact
        art = mscc.runtime.artifact.read({cuda_msx!r})
        assert art.plan().launches
        print("ok")
    """)
    assert proc.returncode == 0, proc.stderr
