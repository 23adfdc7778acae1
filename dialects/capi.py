"""The MLIR C API of the loaded Python bindings (their libMLIRPythonCAPI.so), for what the
bindings do not offer: translating a module to LLVM IR in process (passes/cpu_codegen.py)
the op searches' walk in C (dialects/_walk.c through ir_helpers) and functions' structure
(dialects/_structure.c, for passes/cpu_merge_constants.py)."""
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


@functools.lru_cache(maxsize=None)
def native_signature():
    """`signature` of dialects/_structure.c bound to this C API, or None where the extension
    was not built."""
    try:
        from . import _structure
    except ImportError:
        return None
    _structure.configure(address)
    return _structure.signature


_TYPE_CAPSULE = b"mlir.ir.Type._CAPIPtr"


def _type_pointer(t) -> int:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get(t._CAPIPtr, _TYPE_CAPSULE)


def _type_at(pointer: int):
    from mlir import ir
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p,
                                                   ctypes.c_void_p]
    return ir.Type._CAPICreate(new(pointer, _TYPE_CAPSULE, None))


def llvm_function_type(result, inputs, vararg: bool = False):
    """!llvm.func<result (inputs...)> (the bindings have no builder for it)."""
    get = library().mlirLLVMFunctionTypeGet
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.POINTER(ctypes.c_void_p),
                    ctypes.c_bool]
    pointers = (ctypes.c_void_p * max(len(inputs), 1))(*[_type_pointer(t) for t in inputs])
    return _type_at(get(_type_pointer(result), len(inputs), pointers, vararg))


def llvm_function_result(function_type):
    """The result type of an !llvm.func type."""
    get = library().mlirLLVMFunctionTypeGetReturnType
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    return _type_at(get(_type_pointer(function_type)))
