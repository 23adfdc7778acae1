"""`import mscc` stays cheap (issue 21: a fresh process ready quickly): it imports neither the
MLIR bindings nor ml_dtypes (~0.5 s to import here, once most of `import mscc`); both load when
first needed, and bfloat16 still works both ways (made by mscc, or given as an ml_dtypes
array)."""
import subprocess
import sys

PROBE = """
import sys
import numpy as np
import mscc as ms
print('mlir' in sys.modules, 'ml_dtypes' in sys.modules)
x = ms.Tensor(np.arange(3, dtype=np.float32)).astype(ms.bfloat16)
print(x.dtype, x.asnumpy().dtype.name, 'ml_dtypes' in sys.modules)
import ml_dtypes
y = ms.Tensor(np.ones(2, ml_dtypes.bfloat16))
print(y.dtype, (y + y).asnumpy().astype(np.float32).tolist())
"""


def test_import_loads_neither_mlir_nor_ml_dtypes_and_bfloat16_still_works():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "False False"
    assert out[1] == "mscc.bfloat16 bfloat16 True"
    assert out[2] == "mscc.bfloat16 [2.0, 2.0]"


FIRST_COMPILE = """
import sys
import numpy as np
import mscc as ms
f = ms.jit(lambda t: t * 2 + 1)
print(f(ms.Tensor(np.arange(4, dtype=np.float32))).asnumpy().tolist())
print(sorted(m for m in ('subprocess', 'ctypes.util', 'mscc.runtime.plan', 'zipfile',
                         'mscc.passes.source_checks') if m in sys.modules))
"""


def test_a_first_cpu_compile_imports_no_subprocess_module_and_no_launch_plan():
    # (each ~3-5 ms of a process's first compile: subprocess serves tools the in-process
    # compile does not run, the launch plan CUDA artifacts only; the disk cache, off here,
    # links its entries with `cc` in the background. zipfile (.msx files) and the source
    # checks (MLIR text) ~2 ms each)
    import os
    env = dict(os.environ, MSCC_CACHE_DIR="")
    out = subprocess.run([sys.executable, "-c", FIRST_COMPILE], capture_output=True,
                         text=True, check=True, env=env).stdout.split("\n")
    assert out[0] == "[1.0, 3.0, 5.0, 7.0]"
    assert out[1] == "[]"
