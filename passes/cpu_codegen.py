"""CPU machine code of a large module on every core: its LLVM IR split into parts
(llvm-split), each part optimized and compiled by an `opt | llc` process of its own, the
objects linked into one shared library (artifact.link_shared).

The ExecutionEngine optimizes and compiles a module on one thread, and LLVM's time grows
with the code: for a ViT encoder layer's training step (148 functions after
ms-cpu-outline-loops, 1.4 MB of LLVM IR) it took 1.8-2.2 s on a 2-core AMD EPYC; two
processes took 1.0 s for the same work, translating in process (58 ms) and splitting
(0.1 s) included. Below `MIN_PART_OPS` operations per process, starting processes and
linking cost more than they save, and the ExecutionEngine compiles the module.

MSCC_CODEGEN_PROCESSES caps the number of processes (`1`: always the ExecutionEngine).
The library is what the disk cache stores, so nothing is linked again in the background.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile

from mlir import ir

from .diagnostics import CompileError, Diagnostic

ENV = "MSCC_CODEGEN_PROCESSES"
MIN_PART_OPS = 3000  # LLVM-dialect operations per process, at least (the MLP step, 6,250
# operations: 0.61 s first compile in one process, 0.53 s in two on the 2-core Intel Xeon)
# What LLVM IR translation has an implementation for: the C function that translates in
# process crashes on anything else (the pipeline leaves nothing else; this is the check).
_TRANSLATED = ("llvm.", "omp.", "builtin.")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def processes_for(module) -> int:
    """How many processes should compile `module` (an LLVM-dialect module): 0 for the
    ExecutionEngine (small module, one core, no C compiler or LLVM tools)."""
    limit = os.environ.get(ENV, "").strip()
    cap = int(limit) if limit.isdigit() else _cores()
    if cap < 2 or shutil.which("cc") is None or not _have_llvm_tools():
        return 0
    ops = _translatable_ops(module)
    if ops is None or ops < 2 * MIN_PART_OPS:
        return 0
    return min(cap, ops // MIN_PART_OPS)


def _have_llvm_tools() -> bool:
    from .artifact import llvm_tool
    try:
        return all(os.path.exists(llvm_tool(t)) for t in ("opt", "llc", "llvm-split"))
    except CompileError:
        return False


def _translatable_ops(module) -> int | None:
    """The number of operations in `module`, or None if one has no LLVM IR translation."""
    count = [0]

    def visit(op):
        count[0] += 1
        if not op.name.startswith(_TRANSLATED):
            count[0] = None
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    return count[0]


def llvm_ir_in_process(module) -> str:
    """The LLVM IR text of an LLVM-dialect module, translated by the MLIR C API in this
    process (mlir-translate in a process of its own took 0.7 s for the ViT step's 1.4 MB).
    Only for modules processes_for() has checked."""
    import mlir
    lib = ctypes.CDLL(os.path.join(list(mlir.__path__)[0], "_mlir_libs",
                                   "libMLIRPythonCAPI.so"))
    translate = lib.mlirTranslateModuleToLLVMIRToString
    translate.restype = ctypes.c_void_p
    translate.argtypes = [ctypes.c_void_p]  # MlirOperation: a struct of one pointer
    capsule = ctypes.pythonapi.PyCapsule_GetPointer
    capsule.restype = ctypes.c_void_p
    capsule.argtypes = [ctypes.py_object, ctypes.c_char_p]
    op = capsule(module.operation._CAPIPtr, b"mlir.ir.Operation._CAPIPtr")
    text = translate(op)
    if not text:
        raise CompileError([Diagnostic("error", "", 0, 0, "LLVM IR translation failed")],
                           "llvm-ir")
    try:
        return ctypes.string_at(text).decode()
    finally:
        ctypes.CDLL(None).free(ctypes.c_void_p(text))  # (LLVMPrintModuleToString: strdup)


def compile_parts(llvm_ir: str, parts: int, folder: str, target: list[str]) -> list[str]:
    """Object files of `llvm_ir` split into `parts` modules, compiled concurrently by
    `opt -O3 | llc -O3` processes (position independent); their paths in `folder`."""
    from .artifact import _run, _tool_error, llvm_tool
    source = os.path.join(folder, "entry.ll")
    with open(source, "w") as f:
        f.write(llvm_ir)
    prefix = os.path.join(folder, "part")
    # --round-robin: consecutive functions (the loop nests of one step, of like sizes) go
    # to different parts; the default hashes names, which left one part 30% larger.
    _run([llvm_tool("llvm-split"), f"-j{parts}", "--round-robin", "-o", prefix, source],
         "obj", "llvm-split")
    running = []
    for i in range(parts):
        obj = f"{prefix}{i}.o"
        opt = subprocess.Popen([llvm_tool("opt"), "-O3", *target, f"{prefix}{i}", "-o", "-"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        llc = subprocess.Popen([llvm_tool("llc"), "-O3", "-filetype=obj",
                                "-relocation-model=pic", *target, "-", "-o", obj],
                               stdin=opt.stdout, stderr=subprocess.PIPE)
        opt.stdout.close()  # (llc owns the pipe now: opt sees it close if llc dies)
        running.append((opt, llc, obj))
    objects, failures = [], []
    for opt, llc, obj in running:
        for proc, name in ((llc, "llc"), (opt, "opt")):
            err = proc.communicate()[1].decode(errors="replace").strip()
            if proc.returncode != 0:
                failures.append(f"{name} failed: {err}")
        objects.append(obj)
    if failures:
        raise _tool_error("obj", failures[0])
    return objects
