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
print(sorted(m for m in ('subprocess', 'ctypes.util', 'mscc.runtime.plan') if m in sys.modules))
"""


def test_a_first_cpu_compile_imports_no_subprocess_module_and_no_launch_plan():
    # (each ~3-5 ms of a process's first compile: subprocess serves tools the in-process
    # compile does not run, the launch plan CUDA artifacts only; the disk cache, off here,
    # links its entries with `cc` in the background)
    import os
    env = dict(os.environ, MSCC_CACHE_DIR="")
    out = subprocess.run([sys.executable, "-c", FIRST_COMPILE], capture_output=True,
                         text=True, check=True, env=env).stdout.split("\n")
    assert out[0] == "[1.0, 3.0, 5.0, 7.0]"
    assert out[1] == "[]"


LAZY_BINDING = """
import os, sys
import numpy as np
import mscc as ms
flags = sys.getdlopenflags()
f = ms.jit(lambda t: ms.ops.exp(t) + 1)
print(f(ms.Tensor(np.zeros(3, np.float32))).asnumpy().tolist())
extensions = {name: type(m.__spec__.loader).__name__ for name, m in sys.modules.items()
              if name.startswith('mlir._mlir_libs._') and getattr(m, '__spec__', None)
              and m.__spec__.origin and m.__spec__.origin.endswith('.so')}
print(extensions.get('mlir._mlir_libs._mlir'), sorted(set(extensions.values())))
print(sys.getdlopenflags() == flags, bool(flags & os.RTLD_NOW))
"""


def test_the_mlir_bindings_libraries_load_with_lazy_binding_and_the_flags_come_back():
    # (dialects/lazy_binding.py: ~12 ms of a process's first compile)
    import os
    env = dict(os.environ, MSCC_CACHE_DIR="")
    out = subprocess.run([sys.executable, "-c", LAZY_BINDING], capture_output=True,
                         text=True, check=True, env=env).stdout.split("\n")
    assert out[0] == "[2.0, 2.0, 2.0]"
    assert out[1] == "LazyExtensionLoader ['LazyExtensionLoader']"
    assert out[2] == "True True"
