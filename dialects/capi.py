"""The MLIR C API of the loaded Python bindings (their libMLIRPythonCAPI.so), for what the
bindings do not offer: translating a module to LLVM IR in process (passes/cpu_codegen.py)
the op searches' walk in C (dialects/_walk.c through ir_helpers), functions' structure
(dialects/_structure.c, for passes/cpu_merge_constants.py) and what loop nests read
(passes/cpu_outline.py)."""
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


@functools.lru_cache(maxsize=None)
def native_captured_uses():
    """`captured_uses` of dialects/_structure.c bound to this C API, or None where the
    extension was not built."""
    if native_signature() is None:  # (which configures the extension)
        return None
    from . import _structure
    return _structure.captured_uses


_TYPE_CAPSULE = b"mlir.ir.Type._CAPIPtr"


@functools.lru_cache(maxsize=None)
def _capsules():
    """(PyCapsule_GetPointer, PyCapsule_New), bound once."""
    get, new = ctypes.pythonapi.PyCapsule_GetPointer, ctypes.pythonapi.PyCapsule_New
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return get, new


def capsule_pointer(capsule, name: bytes) -> int:
    """The C API handle (one pointer) in a bindings object's `_CAPIPtr` capsule."""
    return _capsules()[0](capsule, name)


def _type_at(pointer: int):
    from mlir import ir
    return ir.Type._CAPICreate(_capsules()[1](pointer, _TYPE_CAPSULE, None))


@functools.lru_cache(maxsize=None)
def _llvm_function_type_functions():
    """(mlirLLVMFunctionTypeGet, mlirLLVMFunctionTypeGetReturnType), bound once."""
    get, result = (library().mlirLLVMFunctionTypeGet,
                   library().mlirLLVMFunctionTypeGetReturnType)
    get.restype, result.restype = ctypes.c_void_p, ctypes.c_void_p
    get.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.POINTER(ctypes.c_void_p),
                    ctypes.c_bool]
    result.argtypes = [ctypes.c_void_p]
    return get, result


def llvm_function_type(result, inputs, vararg: bool = False):
    """!llvm.func<result (inputs...)> (the bindings have no builder for it)."""
    get = _llvm_function_type_functions()[0]
    pointers = (ctypes.c_void_p * max(len(inputs), 1))(
        *[capsule_pointer(t._CAPIPtr, _TYPE_CAPSULE) for t in inputs])
    return _type_at(get(capsule_pointer(result._CAPIPtr, _TYPE_CAPSULE), len(inputs),
                        pointers, vararg))


def llvm_function_result(function_type):
    """The result type of an !llvm.func type."""
    result = _llvm_function_type_functions()[1]
    return _type_at(result(capsule_pointer(function_type._CAPIPtr, _TYPE_CAPSULE)))
