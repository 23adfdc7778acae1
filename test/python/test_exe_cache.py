"""The on-disk executable cache: a second process loads the compiled code instead of
compiling it, and the results are the same."""
import json
import os
import subprocess
import sys

import numpy as np

PROGRAM = r'''
import json, sys, numpy as np, mscc as ms
from mscc import ops
from mscc.passes import exe_cache
f = ms.jit(lambda a, b: ops.relu(a @ b) * 0.5 + ops.reduce_sum(a, 1, keep_dims=True))
x = ms.Tensor(np.arange(48, dtype=np.float32).reshape(6, 8) / 10)
w = ms.Tensor(np.ones((8, 8), np.float32))
y = f(x, w).asnumpy()
exe = next(iter(f._flat_cache.values())).exe
exe_cache.wait()
print(json.dumps({"kind": type(exe).__name__, "stages": sorted(exe.compile_times),
                  "y": y.tolist()}))
'''

# Large enough for parallel loops: the entry calls the OpenMP runtime.
PARALLEL = r'''
import json, numpy as np, mscc as ms
from mscc import ops
from mscc.passes import exe_cache
f = ms.jit(lambda a: ops.tanh(a) * 2.0 + a)
x = np.linspace(-3, 3, 1 << 20, dtype=np.float32).reshape(1024, 1024)
y = f(ms.Tensor(x)).asnumpy()
exe = next(iter(f._flat_cache.values())).exe
exe_cache.wait()
print(json.dumps({"kind": type(exe).__name__, "openmp": exe.openmp,
                  "err": float(np.abs(y - (np.tanh(x.astype(np.float64)) * 2 + x)).max())}))
'''


def _run(cache_dir, program=PROGRAM, **environment):
    env = dict(os.environ, MSCC_CACHE_DIR=str(cache_dir), **environment)
    out = subprocess.run([sys.executable, "-c", program], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])


def test_second_process_loads_instead_of_compiling(tmp_path):
    first = _run(tmp_path)
    assert first["kind"] == "CpuExecutable" and "codegen" in first["stages"]
    assert len(list(tmp_path.glob("*.msx"))) == 1
    second = _run(tmp_path)
    assert second["kind"] == "CpuLibraryExecutable" and second["stages"] == ["disk-cache"]
    x = np.arange(48, dtype=np.float64).reshape(6, 8) / 10
    want = np.maximum(x @ np.ones((8, 8)), 0) * 0.5 + x.sum(1, keepdims=True)
    np.testing.assert_allclose(second["y"], want, rtol=1e-5)
    np.testing.assert_allclose(second["y"], first["y"], rtol=1e-6)
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in
                                                         tmp_path.glob("*.msx")]


def test_parallel_code_is_cached_with_its_openmp_runtime(tmp_path):
    # (untiered: the first process's code is the optimized, parallel one; a quick tier's
    # loops are serial)
    first = _run(tmp_path, PARALLEL, MSCC_TIERED="0")
    assert first["kind"] == "CpuExecutable" and first["openmp"]
    second = _run(tmp_path, PARALLEL)
    assert second["kind"] == "CpuLibraryExecutable" and second["openmp"]
    assert first["err"] < 1e-5 and second["err"] < 1e-5


def test_a_damaged_entry_is_rebuilt(tmp_path):
    _run(tmp_path)
    entry, = tmp_path.glob("*.msx")
    entry.write_bytes(b"not a zip file")
    again = _run(tmp_path)
    assert again["kind"] == "CpuExecutable"  # compiled, and the entry written anew
    assert _run(tmp_path)["kind"] == "CpuLibraryExecutable"


# Two jit functions of one program compiled before the first one's entry is written: the
# second queued the same object file name, the first link's clean-up removed it, and the
# second link failed with a warning (the entry was written once all the same).
TWICE = r'''
import json, logging, numpy as np, mscc as ms
from mscc.passes import exe_cache
warnings = []
handler = logging.Handler()
handler.emit = lambda record: warnings.append(record.getMessage())
logging.getLogger("mscc").addHandler(handler)
x = ms.Tensor(np.arange(6, dtype=np.float32))
ys = [ms.jit(lambda a: a * 3.0 + 1.0)(x).asnumpy().tolist() for _ in range(2)]
exe_cache.wait()
print(json.dumps({"ys": ys, "warnings": warnings, "stored": exe_cache.stats["stored"]}))
'''


def test_one_program_compiled_twice_is_stored_once_without_warnings(tmp_path):
    out = _run(tmp_path, TWICE)
    assert out["warnings"] == [] and out["stored"] == 1
    assert out["ys"] == [[3.0 * i + 1.0 for i in range(6)]] * 2
    assert len(list(tmp_path.glob("*.msx"))) == 1
    second = _run(tmp_path, TWICE)
    assert second["warnings"] == [] and second["stored"] == 0  # both loaded from the entry
