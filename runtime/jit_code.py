"""Object code linked into this process by LLVM's ORC JIT (an LLJIT through LLVM's C API,
passes/llvm_capi.py): the in-process form of a module's code (runtime/cpu.CpuExecutable).

One LLJIT per module (its objects): creating one costs ~0.7 ms, and each keeps its symbols (every
module defines `_mlir_ciface_<entry>`, and eager ops compile one module per shape under the
same name) apart from every other's. Undefined symbols resolve to what the process has loaded
globally (libc, libm, the OpenMP runtime and libmlir_c_runner_utils where the code needs
them). The code is freed with the JitCode.
"""
from __future__ import annotations

import ctypes
import weakref


class JitCode:
    """Object files (the bytes of position-independent ELF objects) linked into this process
    together; `address(name)` of their symbols."""

    def __init__(self, objects: list[bytes]):
        from ..passes import llvm_capi
        lib = llvm_capi.library()
        jit = ctypes.c_void_p()
        llvm_capi.check(lib, lib.LLVMOrcCreateLLJIT(ctypes.byref(jit), None))
        # What the session reports (a symbol nowhere to be found) is kept for the error of
        # the lookup that failed, instead of going to stderr as "JIT session error".
        self._reported: list[str] = []
        reporter = _reporter(lib, self._reported)  # (holds no reference to self)
        lib.LLVMOrcExecutionSessionSetErrorReporter(
            lib.LLVMOrcLLJITGetExecutionSession(jit), reporter, None)
        weakref.finalize(self, _dispose, lib, jit.value, reporter)
        main = lib.LLVMOrcLLJITGetMainJITDylib(jit)
        process = ctypes.c_void_p()
        llvm_capi.check(lib, lib.LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
            ctypes.byref(process), lib.LLVMOrcLLJITGetGlobalPrefix(jit), None, None))
        lib.LLVMOrcJITDylibAddGenerator(main, process)  # (takes the generator over)
        for obj in objects:  # (each buffer is taken over too)
            buffer = lib.LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, len(obj), b"mscc")
            llvm_capi.check(lib, lib.LLVMOrcLLJITAddObjectFile(jit, main, buffer))
        self._lib, self._jit = lib, jit

    def address(self, name: str) -> int:
        """The address of the symbol `name`. The first lookup links the object: LLVMError
        if a symbol it needs is nowhere (or `name` is not in it)."""
        from ..passes import llvm_capi
        found = ctypes.c_uint64()
        self._reported.clear()
        try:
            llvm_capi.check(self._lib, self._lib.LLVMOrcLLJITLookup(
                self._jit, ctypes.byref(found), name.encode()))
        except llvm_capi.LLVMError as e:
            raise llvm_capi.LLVMError("; ".join(self._reported + [str(e)])) from None
        return found.value


def _reporter(lib, reported: list):
    """An ORC error reporter that appends each message to `reported`."""
    from ..passes import llvm_capi

    def report(_context, error):
        reported.append(llvm_capi.error_text(lib, error))
    return llvm_capi.ERROR_REPORTER(report)


def _dispose(lib, jit, _kept):  # (_kept: the reporter, alive until the session ends)
    from ..passes import llvm_capi
    error = lib.LLVMOrcDisposeLLJIT(jit)
    if error:  # (nothing to report at collection time, but the error must be consumed)
        llvm_capi.error_text(lib, error)
