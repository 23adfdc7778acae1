"""The MLIR C API of the loaded Python bindings (their libMLIRPythonCAPI.so), for what the
bindings do not offer: translating a module to LLVM IR in process (passes/cpu_codegen.py)
and the op searches' walk in C (dialects/_walk.c through ir_helpers)."""
from __future__ import annotations

import ctypes
import functools
import os


@functools.lru_cache(maxsize=None)
def library() -> ctypes.CDLL:
    """The bindings' C API library (already loaded by `mlir.ir`: no second copy)."""
    import mlir
    return ctypes.CDLL(os.path.join(list(mlir.__path__)[0], "_mlir_libs",
                                    "libMLIRPythonCAPI.so"))


def address(name: str) -> int:
    """Where the C API function `name` is."""
    return ctypes.cast(getattr(library(), name), ctypes.c_void_p).value


@functools.lru_cache(maxsize=None)
def native_search():
    """`find` of dialects/_walk.c bound to this C API, or None where the extension was not
    built (setup.py builds it when it can; the searches then walk in Python)."""
    try:
        from . import _walk
    except ImportError:
        return None
    _walk.configure(address("mlirOperationWalk"), address("mlirOperationGetName"),
                    address("mlirIdentifierStr"))
    return _walk.find
