"""The disk cache against real programs run twice, damaged entries and leftovers.

Every program runs in its own process against a fresh MSCC_CACHE_DIR, as users run scripts:
the second run loads what the first stored (exe_cache.stats says so), and must agree with it.
A crash in a child (SIGSEGV, SIGBUS, heap corruption) fails the test, not pytest."""
import hashlib
import io
import json
import logging
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from mscc.runtime.artifact import read

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

REPORT = r'''
from mscc.passes import exe_cache
exe_cache.wait()
print(json.dumps({"results": results, "stats": exe_cache.stats}))
'''

# The step users write (nn.Dense, SoftmaxCrossEntropyWithLogits, value_and_grad, Momentum),
# named `step` like glibc's regexp step(): the second run used to die with SIGSEGV.
TRAIN_STEP = r'''
import json, numpy as np, mscc as ms
from mscc import nn
ms.set_context(mode=ms.GRAPH_MODE)
ms.set_seed(0)
net = nn.SequentialCell([nn.Dense(16, 32), nn.ReLU(), nn.Dense(32, 4)])
loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
opt = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
grad_fn = ms.value_and_grad(lambda x, t: loss_fn(net(x), t), None, opt.parameters)
@ms.jit
def step(x, t):
    loss, grads = grad_fn(x, t)
    opt(grads)
    return loss
rng = np.random.default_rng(0)
x = rng.standard_normal((8, 16)).astype(np.float32)
t = rng.integers(0, 4, 8).astype(np.int32)
losses = [float(step(ms.Tensor(x), ms.Tensor(t)).asnumpy()) for _ in range(4)]
results = {"losses": losses, "weights": [p.asnumpy().tolist() for p in net.trainable_params()]}
''' + REPORT

# Entries named like libc/libm functions, with f32 data.
LIBC_NAMES = r'''
import json, numpy as np, mscc as ms
from mscc import ops
@ms.jit
def exp(x):
    return ops.exp(x) + ops.abs(x)
@ms.jit
def abs(x):
    return ops.abs(x) * 2.0 - x
@ms.jit
def index(x):
    return ops.tanh(x) + ops.log(ops.abs(x) + 1.0)
x = ms.Tensor(np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6))
results = {f.__name__: f(x).asnumpy().tolist() for f in (exp, abs, index)}
''' + REPORT

# examples/train_digits.py in graph mode, one epoch (~2 s): its step and the Cell's
# inference graph, as a user runs it.
TRAIN_DIGITS = r'''
import json, sys
sys.path.insert(0, "examples")
from train_digits import train
acc, losses, _, net, _ = train("graph", epochs=1, verbose=False)
results = {"accuracy": acc, "losses": losses,
           "weights": [p.asnumpy().tolist() for p in net.trainable_params()]}
''' + REPORT

ONE_FUNCTION = r'''
import json, numpy as np, mscc as ms
from mscc import ops
f = ms.jit(lambda a, b: ops.relu(a @ b) * 0.5 + ops.reduce_sum(a, 1, keep_dims=True))
x = np.arange(48, dtype=np.float32).reshape(6, 8) / 10
results = {"y": f(ms.Tensor(x), ms.Tensor(np.ones((8, 8), np.float32))).asnumpy().tolist()}
''' + REPORT


def one_function_ref():
    x = np.arange(48, dtype=np.float64).reshape(6, 8) / 10
    return np.maximum(x @ np.ones((8, 8)), 0) * 0.5 + x.sum(1, keepdims=True)


def run(cache_dir, program, tiered="0"):
    """(results, stats, stderr) of `program` in a new process using `cache_dir`, with
    MSCC_TIERED=`tiered` (0: the first run's numbers are the optimized code's, bitwise)."""
    env = dict(os.environ, MSCC_CACHE_DIR=str(cache_dir), MSCC_TIERED=tiered)
    proc = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                          text=True, cwd=REPO)
    assert proc.returncode == 0, f"the child died ({proc.returncode}): {proc.stderr[-3000:]}"
    out = json.loads(proc.stdout.splitlines()[-1])
    return out["results"], out["stats"], proc.stderr


@pytest.mark.parametrize("program", [TRAIN_STEP, LIBC_NAMES, TRAIN_DIGITS],
                         ids=["step", "libc-names", "train_digits"])
def test_second_run_loads_from_the_cache_and_agrees(tmp_path, program):
    first, stats1, _ = run(tmp_path, program)
    assert stats1["hits"] == 0 and stats1["misses"] >= 1
    assert stats1["stored"] == stats1["misses"]
    entries = sorted(p.name for p in tmp_path.iterdir())
    second, stats2, stderr = run(tmp_path, program)
    assert stats2 == {"hits": stats1["misses"], "misses": 0, "discarded": 0, "stored": 0}, (
        entries, sorted(p.name for p in tmp_path.iterdir()), stderr)
    assert second == first  # the same machine code: bitwise the same numbers


def test_a_tiered_run_stores_the_optimized_code_and_agrees(tmp_path):
    """Tiered, the first run's first steps run unoptimized code (passes/tiering.py): the
    cache gets the optimized code all the same, and the numbers agree to rounding (the
    tiers contract and reassociate floating-point sums differently)."""
    first, stats1, _ = run(tmp_path, TRAIN_STEP, tiered="all")
    assert stats1["hits"] == 0 and stats1["stored"] == stats1["misses"] >= 1
    second, stats2, _ = run(tmp_path, TRAIN_STEP, tiered="all")
    assert stats2 == {"hits": stats1["misses"], "misses": 0, "discarded": 0, "stored": 0}
    for key in first:
        np.testing.assert_allclose(_flat(second[key]), _flat(first[key]), rtol=1e-5,
                                   atol=1e-6)


def _flat(nested) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(a, dtype=float)) for a in nested])


def test_functions_named_like_libc_compute_the_right_thing(tmp_path):
    run(tmp_path, LIBC_NAMES)
    got, stats, _ = run(tmp_path, LIBC_NAMES)
    assert stats["hits"] == 3
    x = np.linspace(-2, 2, 24).reshape(4, 6)
    want = {"exp": np.exp(x) + np.abs(x), "abs": np.abs(x) * 2 - x,
            "index": np.tanh(x) + np.log(np.abs(x) + 1)}
    for name, w in want.items():
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def good_entry(tmp_path_factory):
    """(file name, bytes) of the cache entry of ONE_FUNCTION, made once."""
    folder = tmp_path_factory.mktemp("cache")
    run(folder, ONE_FUNCTION)
    entry, = folder.glob("*.msx")
    return entry.name, entry.read_bytes()


def rezip(data: bytes, edit, redigest=False) -> bytes:
    """The entry with `edit(files)` applied, as a valid zip (its CRCs match the new bytes);
    `redigest` also recomputes mscc's digests, as a deliberate editor would."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        files = {n: z.read(n) for n in z.namelist()}
    edit(files)
    if redigest:
        manifest = json.loads(files["manifest.json"])
        manifest["digests"] = {n: hashlib.sha256(d).hexdigest() for n, d in files.items()
                               if n not in ("manifest.json", "manifest.sha256")}
        files["manifest.json"] = json.dumps(manifest).encode()
        files["manifest.sha256"] = hashlib.sha256(files["manifest.json"]).hexdigest().encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files.items():
            z.writestr(n, d)
    return buf.getvalue()


def _library(files):
    return next(n for n in files if n.endswith(".so"))


def _truncate(files):
    files[_library(files)] = files[_library(files)][:len(files[_library(files)]) // 2]


def _change_code(files):
    lib = bytearray(files[_library(files)])
    lib[0x1100:0x1180] = b"\xcc" * 0x80  # int3 over the start of the code
    files[_library(files)] = bytes(lib)


def _output_shape(files):
    manifest = json.loads(files["manifest.json"])
    manifest["outputs"][0]["shape"] = [600, 800]
    files["manifest.json"] = json.dumps(manifest).encode()


def _random_bytes(data):
    rng = np.random.default_rng(1)
    out = bytearray(data)
    for at in rng.integers(0, len(data) - 8, 6):
        out[at:at + 8] = rng.bytes(8)
    return bytes(out)


DAMAGE = {
    "random bytes": _random_bytes,
    "truncated library": lambda d: rezip(d, _truncate),
    "changed code": lambda d: rezip(d, _change_code),
    "output shape": lambda d: rezip(d, _output_shape),
    "output shape, new digests": lambda d: rezip(d, _output_shape, redigest=True),
    "truncated library, new digests": lambda d: rezip(d, _truncate, redigest=True),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_entry_is_discarded_and_rebuilt(tmp_path, good_entry, damage):
    """Damage is found before the library is loaded (digests; for an editor who recomputed
    them, the library's ELF layout and signature), reported, compiled anew and rewritten.
    (Changed code with recomputed digests cannot be found: the digests are what tells.)"""
    name, data = good_entry
    bad = DAMAGE[damage](data)
    (tmp_path / name).write_bytes(bad)
    got, stats, stderr = run(tmp_path, ONE_FUNCTION)
    np.testing.assert_allclose(got["y"], one_function_ref(), rtol=1e-5)
    assert stats == {"hits": 0, "misses": 0, "discarded": 1, "stored": 1}, stderr
    assert "mscc disk cache: discarding the entry" in stderr and name in stderr
    rewritten = (tmp_path / name).read_bytes()
    assert rewritten != bad
    assert read(str(tmp_path / name)).entry  # verified: a sound entry again


def test_leftovers_of_dead_links_are_removed(tmp_path, good_entry):
    """Object and temporary files of processes that are gone (or very old) are removed when a
    process first uses the folder; those of a live link and other files stay."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead, alive = int(done.stdout), os.getpid()
    name, data = good_entry
    (tmp_path / name).write_bytes(data)
    files = {f"a.msx.{dead}.o": False, f"b.msx.{dead}.tmp": False, f"g.msx.{dead}.1.o": False,
             f"c.msx.{alive}.o": True, f"d.msx.{alive}.tmp": True,
             f"e.msx.{alive}.o": False,  # alive, but older than any link: a reused pid
             "notes.txt": True, f"f.msx.{dead}.txt": True}
    for f in files:
        (tmp_path / f).write_bytes(b"x")
    old = (tmp_path / f"e.msx.{alive}.o").stat().st_mtime - 3600
    os.utime(tmp_path / f"e.msx.{alive}.o", (old, old))
    _, stats, _ = run(tmp_path, ONE_FUNCTION)
    assert stats["hits"] == 1
    assert {f: (tmp_path / f).exists() for f in files} == files


def test_an_unwritable_cache_warns_once_and_still_computes(tmp_path):
    (tmp_path / "file").write_text("")
    program = ONE_FUNCTION.replace("results = {", "g = ms.jit(lambda a: a * 3.0)\n"
                                   "g(ms.Tensor(x))\nresults = {")
    got, stats, stderr = run(tmp_path / "file" / "cache", program)
    np.testing.assert_allclose(got["y"], one_function_ref(), rtol=1e-5)
    assert stats["stored"] == 0 and stats["misses"] == 2
    assert stderr.count("compiled code is not cached") == 1, stderr


def test_a_refused_cubin_warns_once(caplog, monkeypatch):
    """The driver refusing the cubin (older than the toolkit) falls back to the PTX: said."""
    from fake_cuda import FakeDriver
    from mscc.passes.artifact import build_artifact
    from mscc.runtime import cuda
    from mstest import module_of, op, spec
    art = build_artifact(module_of([spec((64, 64), "float32")],
                                   lambda x: op("ms.exp", x)), "f", "cuda")
    if art.manifest["cuda"]["cubin"] is None:
        pytest.skip("ptxas is not installed: the artifact has no cubin")
    monkeypatch.setattr(cuda, "_cubin_refused", set())
    with caplog.at_level(logging.WARNING, logger="mscc"):
        for _ in range(2):
            exe = cuda.CudaExecutable.from_artifact(
                art, cuda.Device(FakeDriver(compute_capability=(9, 0), refuse_cubin=True)))
            assert exe.image == "ptx"
    warnings = [r for r in caplog.records if r.name == "mscc"]
    assert len(warnings) == 1 and "refused the sm_90 cubin of 'f'" in warnings[0].message
